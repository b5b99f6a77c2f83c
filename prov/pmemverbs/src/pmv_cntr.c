/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: counters, forwarded to the core's counters.  Reading one
 * bound to a pmem endpoint serves that endpoint's commit requests first
 * (pmv_hooks.c), so a target that polls only a counter needs no other
 * thread; before a wait, they are served and left to the agent thread.
 */
#include <poll.h>
#include <stdlib.h>

#include "pmv.h"

/* Longest sleep of a counter wait, in ms: fi_cntr_add from another
 * thread wakes nothing it sleeps on, and closing an endpoint served
 * through it waits for the sleep to end. */
#define PMV_CNTR_SLEEP_MS 20


static inline struct pmv_cntr *pmv_cntr(struct fid_cntr *cntr)
{
	return pmv_container_of(cntr, struct pmv_cntr, cntr_fid);
}

static inline struct fid_cntr *core_cntr(struct fid_cntr *cntr)
{
	return pmv_cntr(cntr)->core;
}

static uint64_t pmv_cntr_read(struct fid_cntr *cntr)
{
	pmv_hooks_run(&pmv_cntr(cntr)->hooks);
	return fi_cntr_read(core_cntr(cntr));
}

static uint64_t pmv_cntr_readerr(struct fid_cntr *cntr)
{
	pmv_hooks_run(&pmv_cntr(cntr)->hooks);
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

/*
 * The CQ a counter wait sleeps on: the receive CQ (else the transmit CQ)
 * of the first endpoint served through cntr, held (serve_holds: its close
 * waits) and marked as waited on by this thread, so that the agent leaves
 * that endpoint's progress to it; NULL if none has a wait object.
 */
static struct pmv_cq *pmv_cntr_watch_begin(struct pmv_cntr *cntr,
					   struct pmv_ep **ep)
{
	struct pmv_cq *cq;

	if (!pmv_hooks_hold_eps(&cntr->hooks, ep, 1))
		return NULL;
	cq = __atomic_load_n(&(*ep)->rx_cq, __ATOMIC_ACQUIRE);
	if (!cq || (cq->wait_fd < 0 && !cq->core_wait))
		cq = __atomic_load_n(&(*ep)->tx_cq, __ATOMIC_ACQUIRE);
	if (!cq || (cq->wait_fd < 0 && !cq->core_wait)) {
		__atomic_sub_fetch(&(*ep)->serve_holds, 1, __ATOMIC_ACQ_REL);
		return NULL;
	}
	__atomic_add_fetch(&cq->core_waiters, 1, __ATOMIC_ACQ_REL);
	return cq;
}

/* Undoes pmv_cntr_watch_begin. */
static void pmv_cntr_watch_end(struct pmv_cq *cq, struct pmv_ep *ep)
{
	__atomic_sub_fetch(&cq->core_waiters, 1, __ATOMIC_ACQ_REL);
	__atomic_sub_fetch(&ep->serve_holds, 1, __ATOMIC_ACQ_REL);
}

/*
 * Sleeps up to ms in cq's core wait object, which the bytes of a request
 * end: its fd (FI_GETWAIT), or the wait set of ours it is on (fi_wait,
 * which also drains the set's own signals); first, what the core CQ
 * holds is taken (fi_cq_read of no entries), else fi_trywait refuses.
 * True if something ended it (or it did not sleep): work may follow.
 */
static bool pmv_cntr_sleep_on(struct pmv_cntr *cntr, struct pmv_cq *cq,
			      uint64_t threshold, int ms)
{
	struct pollfd pfd = { .fd = cq->wait_fd, .events = POLLIN };
	struct fid *fid = &cq->core->fid;

	if (fi_trywait(cntr->domain->fabric->core, &fid, 1) != FI_SUCCESS) {
		(void) fi_cq_read(&cq->cq_fid, NULL, 0);
		return true;
	}
	pmv_hooks_run_before_wait(&cntr->hooks);
	if (fi_cntr_read(cntr->core) >= threshold)
		return true;
	if (cq->wait_fd >= 0)
		return poll(&pfd, 1, ms) > 0;
#if PMV_HAVE_WAIT_SETS /* libfabric 2.x: no core_wait (pmv_cq_open_wait_set) */
	return fi_wait(cq->core_wait, ms) == FI_SUCCESS;
#else
	return true; /* not reached: the caller needs a wait_fd or core_wait */
#endif
}

/*
 * One sleep of a counter wait, at most ms: on a core CQ of its endpoint,
 * which the bytes of a request wake (pmv_cntr_sleep_on).  In the core's
 * fi_cntr_wait this thread took a request's bytes (its progress placed
 * them), completed nothing and slept on, while the agent, which the
 * bytes woke too, found them gone: a commit to a target waiting on a
 * counter waited for the wait's timeout.  -1 if there is no such CQ, 1
 * if woken (or not slept), 0 if it slept the whole time.
 */
static int pmv_cntr_sleep(struct pmv_cntr *cntr, uint64_t threshold, int ms)
{
	struct pmv_ep *ep = NULL;
	struct pmv_cq *cq = pmv_cntr_watch_begin(cntr, &ep);
	bool woken;

	if (!cq)
		return -1;
	woken = pmv_cntr_sleep_on(cntr, cq, threshold, ms);
	pmv_cntr_watch_end(cq, ep);
	return woken;
}

/* True within FI_PMEMVERBS_SREAD_SPIN_US of woke (0: never woken): the
 * wait polls on, as fi_cq_sread does, since back-to-back commits come a
 * round trip apart and a thread that slept wakes later than they do. */
static bool pmv_cntr_spins(uint64_t woke)
{
	return woke && pmv_params.sread_spin_us > 0 &&
	       pmv_us_now() - woke < (uint64_t) pmv_params.sread_spin_us;
}

/* True if pmemverbs counts into cntr itself (pmv_ep_cntr.c): the core's
 * wait would progress no endpoint that moves it. */
static bool pmv_cntr_counted_here(struct pmv_cntr *cntr)
{
	return __atomic_load_n(&cntr->refs, __ATOMIC_ACQUIRE) != 0;
}

/* Milliseconds left before deadline (pmv_ms_now's clock), at least 0. */
static int pmv_cntr_left(uint64_t deadline)
{
	uint64_t now = pmv_ms_now();

	return now >= deadline ? 0 : (int) (deadline - now);
}

/*
 * fi_cntr_wait.  With pmem endpoints bound, the wait is pmemverbs's own:
 * serve (handing the endpoints to the agent), check, sleep
 * (pmv_cntr_sleep; 1 ms while commits are in flight: an ack lands in
 * memory and wakes no fd; not at all for FI_PMEMVERBS_SREAD_SPIN_US
 * after a wake), again; -FI_EAVAIL when the error count moves,
 * -FI_ETIMEDOUT at the timeout, as the core's.  Otherwise (not over tcp,
 * or no CQ with a wait object to sleep on) the core's, unless pmemverbs
 * counts into the counter itself: then 1 ms naps.
 */
static int pmv_cntr_wait(struct fid_cntr *cntr_fid, uint64_t threshold,
			 int timeout)
{
	struct pmv_cntr *cntr = pmv_cntr(cntr_fid);
	uint64_t errs, woke = 0, deadline = pmv_ms_now() + (uint64_t) timeout;
	int left, step, slept;

	/* before any progress: an error that progress counts ends the wait */
	errs = fi_cntr_readerr(cntr->core);
	pmv_hooks_run_before_wait(&cntr->hooks);
	if (!__atomic_load_n(&cntr->hooks.head, __ATOMIC_ACQUIRE) ||
	    (cntr->domain->transport != PMV_TRANSPORT_TCP &&
	     !pmv_cntr_counted_here(cntr)))
		return fi_cntr_wait(cntr->core, threshold, timeout);
	for (;;) {
		if (fi_cntr_read(cntr->core) >= threshold)
			return 0;
		if (fi_cntr_readerr(cntr->core) != errs)
			return -FI_EAVAIL;
		left = timeout < 0 ? -1 : pmv_cntr_left(deadline);
		if (!left)
			return -FI_ETIMEDOUT;
		step = pmv_hooks_busy(&cntr->hooks) ? 1 :
		       left >= 0 && left < PMV_CNTR_SLEEP_MS ? left :
		       PMV_CNTR_SLEEP_MS;
		if (!pmv_cntr_spins(woke)) {
			slept = pmv_cntr_sleep(cntr, threshold, step);
			if (slept < 0 && !pmv_cntr_counted_here(cntr))
				return fi_cntr_wait(cntr->core, threshold, left);
			if (slept < 0) { /* nothing to sleep on: a nap */
				(void) poll(NULL, 0, 1);
				slept = 0;
			}
			woke = slept ? pmv_us_now() : 0;
		}
		pmv_hooks_run_before_wait(&cntr->hooks);
	}
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

	if (__atomic_load_n(&cntr->refs, __ATOMIC_ACQUIRE)) {
		PMV_WARN(FI_LOG_CNTR, "fi_close: the counter is bound to an "
			 "FI_RMA_PMEM endpoint, or its operations are still "
			 "in flight; close the endpoint and read its CQ "
			 "first\n");
		return -FI_EBUSY;
	}
	return pmv_hooks_close_wrapper(&cntr->core->fid, "counter",
				       &cntr->hooks, cntr);
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
	pmv_hooks_init(&cntr->hooks);
	cntr->cntr_fid.fid.fclass = FI_CLASS_CNTR;
	cntr->cntr_fid.fid.context = context;
	cntr->cntr_fid.fid.ops = &pmv_cntr_fi_ops;
	cntr->cntr_fid.ops = &pmv_cntr_ops;
	*cntr_fid = &cntr->cntr_fid;
	return 0;
}
