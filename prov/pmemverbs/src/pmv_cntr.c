/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: counters, forwarded to the core's counters.  Reading one
 * bound to a pmem endpoint serves that endpoint's commit requests first
 * (pmv_hooks.c), so a target that polls only a counter needs no other
 * thread; before a wait, they are served and left to the agent thread.
 */
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "pmv_objects.h"

static inline struct pmv_cntr *pmv_cntr(struct fid_cntr *cntr)
{
	return pmv_container_of(cntr, struct pmv_cntr, cntr_fid);
}

static inline struct fid_cntr *core_cntr(struct fid_cntr *cntr)
{
	return pmv_cntr(cntr)->core;
}

/*
 * Serves the counter's endpoints before a read of the core's count: the
 * gated receive CQs' core entries confirm the requests that progress
 * placed (pmv_cntr_take_gates; without it a busy counter reader served a
 * request one read later, or its agent did: 64 B commits 1.37 read round
 * trips at p50, 1.20 with it), and what serving counts (FI_IMMED's
 * FI_REMOTE_WRITE) shows in this read.  (Served after the core's read
 * alone, a busy counter reader's commits took 0.02-0.03 read round trips
 * more.)  True if it read a gated receive CQ.
 */
static bool pmv_cntr_serve_first(struct fid_cntr *cntr)
{
	bool gated = pmv_cntr_take_gates(pmv_cntr(cntr));

	pmv_cntr_run(pmv_cntr(cntr), false);
	return gated;
}

/* With gated endpoints, served after the core's read as well (its pass of
 * the core's progress may place a request: pmv_cntr_take_gates). */
static uint64_t pmv_cntr_read(struct fid_cntr *cntr)
{
	bool gated = pmv_cntr_serve_first(cntr);
	uint64_t count = fi_cntr_read(core_cntr(cntr));

	if (gated)
		(void) pmv_cntr_serve_first(cntr);
	return count;
}

static uint64_t pmv_cntr_readerr(struct fid_cntr *cntr)
{
	(void) pmv_cntr_serve_first(cntr);
	return fi_cntr_readerr(core_cntr(cntr));
}

static int pmv_cntr_add(struct fid_cntr *cntr, uint64_t value)
{
	return fi_cntr_add(core_cntr(cntr), value);
}

static int pmv_cntr_set(struct fid_cntr *cntr, uint64_t value)
{
	return fi_cntr_set(core_cntr(cntr), value);
}

/* fi_cntr_wait: an error that progress counts ends it, so the error
 * count is read before any (pmv_cntr_wait.c). */
static int pmv_cntr_wait(struct fid_cntr *cntr_fid, uint64_t threshold,
			 int timeout)
{
	struct pmv_cntr *cntr = pmv_cntr(cntr_fid);

	return pmv_cntr_wait_from(cntr, threshold, fi_cntr_readerr(cntr->core),
				  timeout);
}

static int pmv_cntr_adderr(struct fid_cntr *cntr, uint64_t value)
{
	return fi_cntr_adderr(core_cntr(cntr), value);
}

static int pmv_cntr_seterr(struct fid_cntr *cntr, uint64_t value)
{
	return fi_cntr_seterr(core_cntr(cntr), value);
}

static struct fi_ops_cntr pmv_cntr_ops = {
	.size = sizeof(struct fi_ops_cntr),
	.read = pmv_cntr_read,
	.readerr = pmv_cntr_readerr,
	.add = pmv_cntr_add,
	.set = pmv_cntr_set,
	.wait = pmv_cntr_wait,
	.adderr = pmv_cntr_adderr,
	.seterr = pmv_cntr_seterr,
};

static int pmv_cntr_close(struct fid *fid)
{
	struct pmv_cntr *cntr = pmv_container_of(fid, struct pmv_cntr, cntr_fid.fid);
	int ret;

	if (__atomic_load_n(&cntr->refs, __ATOMIC_ACQUIRE)) {
		PMV_WARN(FI_LOG_CNTR, "fi_close: the counter is bound to an "
			 "FI_RMA_PMEM endpoint, or its operations are still "
			 "in flight; close the endpoint and read its CQ "
			 "first\n");
		return -FI_EBUSY;
	}
	ret = pmv_close_core(&cntr->core->fid, "counter");
	if (ret)
		return ret;
	pmv_wait_leave(cntr->app_set, cntr);
	pmv_hooks_fini(&cntr->hooks);
	pmv_domain_release(cntr->domain, PMV_DOM_CNTR);
	free(cntr);
	return 0;
}

static struct fi_ops pmv_cntr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = pmv_cntr_close,
	.bind = pmv_no_bind,
	.control = pmv_control_core,
	.ops_open = pmv_ops_open_core,
	.ops_set = pmv_no_ops_set,
};

int pmv_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr,
		  struct fid_cntr **cntr_fid, void *context)
{
	struct pmv_domain *dom = pmv_container_of(domain, struct pmv_domain,
						  domain_fid);
	struct fi_cntr_attr core_attr = *attr;
	struct pmv_cntr *cntr;
	int ret;

	ret = pmv_core_wait_set(attr->wait_set, &core_attr.wait_set);
	if (ret)
		return ret;
	cntr = calloc(1, sizeof(*cntr));
	if (!cntr)
		return -FI_ENOMEM;
	ret = fi_cntr_open(dom->core, &core_attr, &cntr->core, cntr);
	if (ret) {
		free(cntr);
		return ret;
	}
	cntr->domain = dom;
	pmv_domain_hold(dom, PMV_DOM_CNTR); /* pmv_cntr_close releases it */
	/* no engines: a counter's reads run them through its endpoints'
	 * transmit CQs (pmv_ep_cntr.c), and a counter no FI_RMA_PMEM endpoint
	 * uses stays a plain one */
	pmv_hooks_init(&cntr->hooks, NULL);
	cntr->cntr_fid.fid.fclass = FI_CLASS_CNTR;
	cntr->cntr_fid.fid.context = context;
	cntr->cntr_fid.fid.ops = &pmv_cntr_fi_ops;
	cntr->cntr_fid.ops = &pmv_cntr_ops;
	/* last: fi_wait on the set may look at it from now on */
	ret = pmv_wait_join(attr->wait_obj == FI_WAIT_SET ? attr->wait_set :
			    NULL, NULL, cntr, &cntr->app_set);
	if (ret) {
		(void) pmv_cntr_close(&cntr->cntr_fid.fid);
		return ret;
	}
	*cntr_fid = &cntr->cntr_fid;
	return 0;
}
