/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: the one sleep of an application thread on a core CQ
 * (pmv_cq_sleep), which fi_cq_sread (pmv_cq_wait.c) and fi_cntr_wait
 * (pmv_cntr_wait.c) take between their passes: listed, fi_trywait, a last
 * look, a poll of the fds FI_GETWAIT gives and of the thread's eventfd.
 */
#include <poll.h>

#include "pmv_objects.h"

/* fi_trywait of cq's core alone (fabric: the core's): true if busy. */
bool pmv_cq_core_busy(struct pmv_cq *cq, struct fid_fabric *fabric)
{
	struct fid *fid = &cq->core->fid;

	return fi_trywait(fabric, &fid, 1) != FI_SUCCESS;
}

/*
 * A sleeping thread's fi_trywait of cq's core before it sleeps on cq's
 * fds (fabric: the core's): true if the core says cq is busy.  Its reset
 * of the core's signal may take the wake of an application thread that
 * polls cq's fd (armed by fi_trywait, app_armed) for an entry pmemverbs
 * queued or the core holds: given back.  Not pmv_cq_wake_waiters: this
 * thread is one of cq's sleepers, and would wake itself on every commit
 * in flight.
 */
bool pmv_cq_sleeper_trywait(struct pmv_cq *cq, struct fid_fabric *fabric)
{
	bool busy = pmv_cq_core_busy(cq, fabric);

	pmv_cq_core_used(cq);
	if (__atomic_load_n(&cq->app_armed, __ATOMIC_SEQ_CST) &&
	    (busy || pmv_cq_backlog(cq)))
		(void) fi_cq_signal(cq->core);
	return busy;
}

#if PMV_HAVE_WAIT_SETS
/* fi_wait, ms at most, on cq's wait set of ours (cq->core_wait), noted as
 * a call into its core CQ (pmv_cq_core_used). */
int pmv_cq_core_wait(struct pmv_cq *cq, int ms)
{
	int ret = fi_wait(cq->core_wait, ms);

	pmv_cq_core_used(cq);
	return ret;
}
#endif

/*
 * A wait of ms at most in cq's wait set of ours, which alone drains the
 * set's signal that its fd list changed (neither fi_trywait nor the
 * core's progress does, and it keeps an fd of the list readable) when ms
 * is 1 or more: with 0, 1.17's wait returns before it polls.  It returns
 * as soon as any fd of the list fires, bytes included.  False if cq has
 * no wait set (libfabric 2.x, or a core without one).
 */
bool pmv_cq_wait_in_set(struct pmv_cq *cq, int ms)
{
#if PMV_HAVE_WAIT_SETS /* libfabric 2.x: no core_wait (pmv_cq_open_wait_set) */
	if (cq->core_wait) {
		(void) pmv_cq_core_wait(cq, ms);
		return true;
	}
#endif
	(void) cq;
	(void) ms;
	return false;
}

/*
 * The fds a CQ's core wait object is made of (FI_GETWAIT), into fds (room
 * for max): its fd, or its list.  Returns how many, 0 if the agent cannot
 * sleep on it, or minus the room it needs if max is too small.
 */
int pmv_cq_wait_fds(struct pmv_cq *cq, struct pollfd *fds, unsigned max)
{
	struct fi_wait_pollfd list = { .nfds = max, .fd = fds };
	int ret;

	if (cq->wait_fd >= 0) {
		if (!max)
			return -1;
		fds[0] = (struct pollfd) { .fd = cq->wait_fd, .events = POLLIN };
		return 1;
	}
	if (!cq->wait_pollfd)
		return 0;
	ret = fi_control(&cq->core->fid, FI_GETWAIT, &list);
	if (ret == -FI_ETOOSMALL && list.nfds > max)
		return -(int) list.nfds;
	return ret || !list.nfds ? 0 : (int) list.nfds;
}

/*
 * One sleep of an application thread on cq (in its fi_cq_sread, or in
 * fi_cntr_wait through the CQ of the counter's endpoint), up to *ms:
 * listed as asleep on cq (pmv_wake.c), then fi_trywait of cq's core
 * (pmv_cq_sleeper_trywait), then the caller's last look (look(arg, ms):
 * true if there is work; it may shorten *ms), then a poll of fds (n of
 * the core's, with room for one more: this thread's eventfd, whose
 * revents fds[n] then holds), then unlisted.  Listed before fi_trywait
 * and the look, a wake written after them (an entry pmemverbs queued, a
 * commit another thread started) ends the poll, even if another thread's
 * fi_trywait drained the core's signal.  With no fds (n <= 0), nothing is
 * listed or polled: PMV_SLEEP_NO_FDS, and the caller sleeps its own way.
 */
enum pmv_sleep_end pmv_cq_sleep(struct pmv_cq *cq, struct pollfd *fds, int n,
				int *ms, pmv_sleep_look_fn *look, void *arg)
{
	struct pmv_sleeper s = { .slot = NULL };
	nfds_t all = 0;
	enum pmv_sleep_end end;

	if (n > 0) {
		fds[n] = (struct pollfd) { .fd = -1 }; /* no eventfd yet */
		all = (nfds_t) n + pmv_sleep_begin(&s, cq->domain, cq, &fds[n]);
	}
	if (pmv_cq_sleeper_trywait(cq, cq->domain->fabric->core))
		end = PMV_SLEEP_CORE_BUSY;
	else if (look(arg, ms))
		end = PMV_SLEEP_WORK;
	else if (n <= 0)
		end = PMV_SLEEP_NO_FDS;
	else
		end = poll(fds, all, *ms) > 0 ? PMV_SLEEP_WOKEN :
						PMV_SLEEP_TIMEOUT;
	(void) pmv_sleep_end(&s);
	return end;
}
