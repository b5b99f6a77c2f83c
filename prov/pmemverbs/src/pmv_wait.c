/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: wait sets and poll sets, forwarded to the core's.  Built
 * against libfabric 2.x, which deprecated both, there are none: opening one
 * is -FI_ENOSYS and naming one in an attribute -FI_EINVAL.
 */
#include <stdlib.h>

#include "pmv_objects.h"

#if PMV_HAVE_WAIT_SETS

static int pmv_wait_wait(struct fid_wait *waitset, int timeout)
{
	struct pmv_wait *wait = pmv_container_of(waitset, struct pmv_wait,
						 wait_fid);

	return fi_wait(wait->core, timeout);
}

static struct fi_ops_wait pmv_wait_ops = {
	.size = sizeof(struct fi_ops_wait),
	.wait = pmv_wait_wait,
};

static int pmv_wait_close(struct fid *fid)
{
	struct pmv_wait *wait = pmv_container_of(fid, struct pmv_wait, wait_fid.fid);

	return pmv_close_wrapper(&wait->core->fid, "wait set", wait);
}

static struct fi_ops pmv_wait_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = pmv_wait_close,
	.bind = pmv_no_bind,
	.control = pmv_control_core,
	.ops_open = pmv_ops_open_core,
	.ops_set = pmv_no_ops_set,
};

int pmv_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr,
		  struct fid_wait **waitset)
{
	struct pmv_fabric *fab = pmv_container_of(fabric, struct pmv_fabric,
						  fabric_fid);
	struct pmv_wait *wait = calloc(1, sizeof(*wait));
	int ret;

	if (!wait)
		return -FI_ENOMEM;
	ret = fi_wait_open(fab->core, attr, &wait->core);
	if (ret) {
		free(wait);
		return ret;
	}
	wait->core->fid.context = wait;
	wait->wait_fid.fid.fclass = FI_CLASS_WAIT;
	wait->wait_fid.fid.ops = &pmv_wait_fi_ops;
	wait->wait_fid.ops = &pmv_wait_ops;
	*waitset = &wait->wait_fid;
	return 0;
}

static inline struct fid_poll *core_poll(struct fid_poll *pollset)
{
	return pmv_container_of(pollset, struct pmv_poll, poll_fid)->core;
}

/*
 * The core returns the contexts of its CQs and counters, which are the
 * pmemverbs wrappers; the application expects its own contexts.
 */
static int pmv_poll_poll(struct fid_poll *pollset, void **context, int count)
{
	int i, ret = fi_poll(core_poll(pollset), context, count);

	for (i = 0; i < ret; i++)
		context[i] = ((struct fid *) context[i])->context;
	return ret;
}

/* Maps a CQ or counter added to or removed from a poll set to the core's. */
static struct fid *pmv_poll_member(struct fid *event_fid)
{
	struct fid *core = pmv_core_fid(event_fid);

	if (!core)
		PMV_WARN(FI_LOG_CORE, "poll set member was not opened through "
			 "pmemverbs\n");
	return core;
}

static int pmv_poll_add(struct fid_poll *pollset, struct fid *event_fid,
			uint64_t flags)
{
	struct fid *core = pmv_poll_member(event_fid);

	return core ? fi_poll_add(core_poll(pollset), core, flags) : -FI_EINVAL;
}

static int pmv_poll_del(struct fid_poll *pollset, struct fid *event_fid,
			uint64_t flags)
{
	struct fid *core = pmv_poll_member(event_fid);

	return core ? fi_poll_del(core_poll(pollset), core, flags) : -FI_EINVAL;
}

static struct fi_ops_poll pmv_poll_ops = {
	.size = sizeof(struct fi_ops_poll),
	.poll = pmv_poll_poll,
	.poll_add = pmv_poll_add,
	.poll_del = pmv_poll_del,
};

static int pmv_poll_close(struct fid *fid)
{
	struct pmv_poll *poll = pmv_container_of(fid, struct pmv_poll, poll_fid.fid);

	return pmv_close_wrapper(&poll->core->fid, "poll set", poll);
}

static struct fi_ops pmv_poll_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = pmv_poll_close,
	.bind = pmv_no_bind,
	.control = pmv_control_core,
	.ops_open = pmv_ops_open_core,
	.ops_set = pmv_no_ops_set,
};

int pmv_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr,
		  struct fid_poll **pollset)
{
	struct pmv_domain *dom = pmv_container_of(domain, struct pmv_domain,
						  domain_fid);
	struct pmv_poll *poll = calloc(1, sizeof(*poll));
	int ret;

	if (!poll)
		return -FI_ENOMEM;
	ret = fi_poll_open(dom->core, attr, &poll->core);
	if (ret) {
		free(poll);
		return ret;
	}
	poll->poll_fid.fid.fclass = FI_CLASS_POLL;
	poll->poll_fid.fid.ops = &pmv_poll_fi_ops;
	poll->poll_fid.ops = &pmv_poll_ops;
	*pollset = &poll->poll_fid;
	return 0;
}

/* Maps a pmemverbs wait set named in an attribute to the core's. */
int pmv_core_wait_set(struct fid_wait *wait_set, struct fid_wait **core_set)
{
	*core_set = NULL;
	if (!wait_set)
		return 0;
	*core_set = (struct fid_wait *) pmv_core_fid(&wait_set->fid);
	if (*core_set)
		return 0;
	PMV_WARN(FI_LOG_CORE, "wait_set was not opened with fi_wait_open on "
		 "the pmemverbs fabric\n");
	return -FI_EINVAL;
}

#else /* !PMV_HAVE_WAIT_SETS */

int pmv_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr,
		  struct fid_wait **waitset)
{
	(void) fabric;
	(void) attr;
	(void) waitset;
	PMV_WARN(FI_LOG_CORE, "fi_wait_open: no wait sets in pmemverbs built "
		 "against libfabric %d.%d (deprecated since 2.0): wait on each "
		 "CQ or counter (fi_cq_sread, fi_cntr_wait) or on its fd "
		 "(FI_WAIT_FD, fi_trywait)\n", FI_MAJOR_VERSION,
		 FI_MINOR_VERSION);
	return -FI_ENOSYS;
}

int pmv_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr,
		  struct fid_poll **pollset)
{
	(void) domain;
	(void) attr;
	(void) pollset;
	PMV_WARN(FI_LOG_CORE, "fi_poll_open: no poll sets in pmemverbs built "
		 "against libfabric %d.%d (deprecated since 2.0): read each "
		 "CQ or counter instead\n", FI_MAJOR_VERSION,
		 FI_MINOR_VERSION);
	return -FI_ENOSYS;
}

/* No wait set can have been opened here: one named in an attribute is wrong. */
int pmv_core_wait_set(struct fid_wait *wait_set, struct fid_wait **core_set)
{
	*core_set = NULL;
	if (!wait_set)
		return 0;
	PMV_WARN(FI_LOG_CORE, "wait_set given, but pmemverbs built against "
		 "libfabric 2.x opens no wait sets: use FI_WAIT_UNSPEC or "
		 "FI_WAIT_FD\n");
	return -FI_EINVAL;
}

#endif /* PMV_HAVE_WAIT_SETS */
