/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: the waits of a counter.  With pmem endpoints bound,
 * fi_cntr_wait (and fi_wait on a wait set whose only member is a counter)
 * serves them, checks and sleeps on a core CQ of theirs, which the bytes
 * of a request or an ack wake; otherwise the core's wait.
 */
#include <poll.h>
#include <string.h>

#include "pmv_objects.h"

/* Longest sleep of a counter wait, in ms: fi_cntr_add from another
 * thread wakes nothing it sleeps on, and closing an endpoint served
 * through it waits for the sleep to end. */
#define PMV_CNTR_SLEEP_MS 20

/* While a wait spins, its error count is read once in this many passes:
 * each read is a pass of the core's progress. */
#define PMV_CNTR_ERR_EVERY 8

__thread const struct pmv_cq *pmv_cq_waited_here;

/*
 * The CQ a counter wait sleeps on: the receive CQ (else the transmit CQ)
 * of the first endpoint served through cntr, held (pmv_tgt_hold: its close
 * waits) and marked as waited on by this thread, so that the agent leaves
 * that endpoint's progress to it; NULL if none has a wait object.  *alone:
 * that endpoint is the only one served through cntr.
 */
static struct pmv_cq *pmv_cntr_watch_begin(struct pmv_cntr *cntr,
					   struct pmv_ep **ep, bool *alone)
{
	struct pmv_ep *eps[2];
	unsigned n = pmv_hooks_hold_eps(&cntr->hooks, eps, 2);
	struct pmv_cq *cq;

	if (!n)
		return NULL;
	if (n > 1)
		pmv_tgt_release(eps[1]);
	*ep = eps[0];
	*alone = n == 1;
	cq = __atomic_load_n(&(*ep)->rx_cq, __ATOMIC_ACQUIRE);
	if (!cq || (cq->wait_fd < 0 && !cq->core_wait))
		cq = __atomic_load_n(&(*ep)->tx_cq, __ATOMIC_ACQUIRE);
	if (!cq || (cq->wait_fd < 0 && !cq->core_wait)) {
		pmv_tgt_release(*ep);
		return NULL;
	}
	__atomic_add_fetch(&cq->core_waiters, 1, __ATOMIC_ACQ_REL);
	pmv_cq_waited_here = cq;
	return cq;
}

/*
 * Serves the counter's endpoints between two sleeps.  When the wait
 * sleeps on the CQ of the only endpoint served through it (alone), whose
 * bytes wake it, the endpoint stays this thread's, as in fi_cq_sread (the
 * progress hooks: the agent leaves it alone); otherwise (another
 * endpoint's requests would not wake this thread) it is handed to the
 * agent (before_wait).  An agent handed the endpoint on every pass of a
 * wait that also served it served a quarter of the requests and spun on
 * the waiting thread's core for FI_PMEMVERBS_AGENT_SPIN_US after each:
 * the counter wait's p99 was 17-19 read round trips back to back.
 */
static void pmv_cntr_serve(struct pmv_cntr *cntr, bool alone)
{
	pmv_cntr_run(cntr, !alone);
}

/* Most endpoints a spinning counter wait reads the receive CQ of. */
#define PMV_CNTR_GATE_EPS 8

/*
 * A counter read (pmv_cntr.c) and each spinning pass of a counter wait
 * read the receive CQs of the gated endpoints they serve before they
 * serve (pmv_cq_take_core): a request whose bytes that read's progress
 * placed is served with its gate entry at once.  Otherwise it waited for
 * the next read of the core CQ, one more pass of the core's progress
 * (libfabric 1.17's tcp: a poll and a read of the CQ's signal): 0.8-1.7
 * us of a 64 B commit here.  They do so both before and after the core
 * counter's read (pmv_cntr_read, pmv_cntr_wait_from), whose own pass of
 * the core's progress otherwise stood between two reads of the receive
 * CQs: a 4 KiB commit to a busy counter reader took 1.38 read round trips
 * at p50 with one read of them per counter read, before or after the
 * core's, and 1.23 with both; in fi_cntr_wait 1.37 and 1.27, where its
 * 64 B commits took 0.03 more (1.16, 1.19: the extra read costs a pass
 * that a small request does not need).  True if it read a gated receive
 * CQ.
 */
bool pmv_cntr_take_gates(struct pmv_cntr *cntr)
{
	struct pmv_ep *eps[PMV_CNTR_GATE_EPS];
	struct pmv_cq *read[PMV_CNTR_GATE_EPS];
	unsigned n, nread = 0, j;
	struct pmv_cq *rx;

	if (cntr->domain->transport != PMV_TRANSPORT_TCP)
		return false; /* gates are tcp's (pmv_gate_open) */
	n = pmv_hooks_hold_eps(&cntr->hooks, eps, PMV_CNTR_GATE_EPS);
	for (unsigned i = 0; i < n; i++) {
		rx = __atomic_load_n(&eps[i]->rx_cq, __ATOMIC_ACQUIRE);
		/* a CQ the endpoints share is read once: each read is a
		 * pass of the core's progress */
		for (j = 0; j < nread && read[j] != rx; j++)
			;
		if (rx && j == nread &&
		    __atomic_load_n(&rx->gated_refs, __ATOMIC_ACQUIRE)) {
			pmv_cq_take_core(rx);
			read[nread++] = rx;
		}
		pmv_tgt_release(eps[i]);
	}
	return nread != 0;
}

/* Undoes pmv_cntr_watch_begin. */
static void pmv_cntr_watch_end(struct pmv_cq *cq, struct pmv_ep *ep)
{
	pmv_cq_waited_here = NULL;
	__atomic_sub_fetch(&cq->core_waiters, 1, __ATOMIC_ACQ_REL);
	pmv_tgt_release(ep);
}

/* Most fds a counter wait polls itself (else it sleeps in fi_wait). */
#define PMV_CNTR_FDS 64

#if PMV_HAVE_WAIT_SETS /* libfabric 2.x: no core_wait, no list to poll */
/* Whether an fd readable before (was, n of them) is readable in now. */
static bool pmv_cntr_still_readable(const struct pollfd *was,
				    const struct pollfd *now, int n)
{
	for (int i = 0; i < n; i++)
		if (was[i].revents && now[i].revents)
			return true;
	return false;
}

/* Whether an fd of fds (n of them) that woke a poll is readable now. */
static bool pmv_cntr_readable_again(const struct pollfd *fds, int n)
{
	struct pollfd again[PMV_CNTR_FDS];

	memcpy(again, fds, (size_t) n * sizeof(*fds));
	return poll(again, (nfds_t) n, 0) > 0 &&
	       pmv_cntr_still_readable(fds, again, n);
}

/*
 * After a wake on a wait set's list (fds, n) whose bytes were placed and
 * served: whether an fd that woke it stays readable through fi_trywait
 * (which resets the set's signal, its progress taking what came; what it
 * placed is served) too: the list's own signal (the fd list changed),
 * which only a wait in the set drains.
 */
static bool pmv_cntr_list_signalled(struct pmv_cntr *cntr, struct pmv_cq *cq,
				    const struct pollfd *fds, int n, bool alone)
{
	if (!pmv_cntr_readable_again(fds, n) ||
	    pmv_cq_sleeper_trywait(cq, cntr->domain->fabric->core))
		return false;
	pmv_cntr_serve(cntr, alone);
	return pmv_cntr_readable_again(fds, n);
}

/*
 * After a wake on the list of cq's wait set (fds, n of them, then this
 * thread's eventfd): places what came (the core's progress) and serves
 * it; if the list's own signal woke it (pmv_cntr_list_signalled), a wait
 * in the set drains it, once the requests are served (its progress before
 * it sleeps may place one).
 */
static void pmv_cntr_set_woken(struct pmv_cntr *cntr, struct pmv_cq *cq,
			       const struct pollfd *fds, int n, bool alone)
{
	if (fds[n].revents && !pmv_cntr_readable_again(fds, n))
		return; /* the eventfd alone: nothing to place */
	(void) fi_cq_read(cq->core, NULL, 0);
	pmv_cq_core_used(cq);
	pmv_cntr_serve(cntr, alone);
	if (pmv_cntr_list_signalled(cntr, cq, fds, n, alone))
		(void) pmv_cq_wait_in_set(cq, 1);
}
#endif

/* What a counter wait's last look before it sleeps needs (pmv_cntr_look). */
struct pmv_cntr_look {
	struct pmv_cntr *cntr;
	uint64_t threshold;
	bool alone;
};

/*
 * The last look of a counter wait before it sleeps (pmv_cq_sleep, after
 * fi_trywait): true if the counter reached the threshold.  The counter's
 * read progresses the core, which may place a request: served after it,
 * so that none sleeps in an inbox.  A commit that another thread started
 * since *ms was chosen, whose wake (pmv_ini_wake) came before this thread
 * was listed, shortens it to 1 ms: its ack lands in memory, as for
 * commits in flight before.
 */
static bool pmv_cntr_look(void *arg, int *ms)
{
	struct pmv_cntr_look *look = arg;

	if (fi_cntr_read(look->cntr->core) >= look->threshold)
		return true;
	pmv_cntr_serve(look->cntr, look->alone);
	if (*ms > 1 && pmv_hooks_busy(&look->cntr->hooks))
		*ms = 1;
	return false;
}

/*
 * Sleeps up to ms on cq's fds (pmv_cq_sleep: listed, fi_trywait, the last
 * look, a poll of them and this thread's eventfd), which the bytes of a
 * request make readable: its fd, or the list of its wait set
 * (pmv_cntr_set_woken), polled here rather than in fi_wait, whose
 * progress before it sleeps may place a request that then waits in the
 * inbox (the agent leaves the endpoint to this thread).  Where the core
 * says it is busy, what its CQ holds is taken (fi_cq_read of no entries),
 * else the next fi_trywait refuses too.  True if something ended it (or it
 * did not sleep): work may follow.  The eventfd: a commit started on the
 * endpoint meanwhile (pmv_ini_wake) wakes it, even if another thread's
 * fi_trywait of the core CQ (the agent's) drained the core's signal (1 to
 * 11 of 29 commits that another thread started waited out the 20 ms
 * sleep).
 */
static bool pmv_cntr_sleep_on(struct pmv_cntr *cntr, struct pmv_cq *cq,
			      uint64_t threshold, int ms, bool alone)
{
	struct pollfd fds[PMV_CNTR_FDS + 1];
	int n = pmv_cq_wait_fds(cq, fds, PMV_CNTR_FDS);
	struct pmv_cntr_look look = { cntr, threshold, alone };

	switch (pmv_cq_sleep(cq, fds, n, &ms, pmv_cntr_look, &look)) {
	case PMV_SLEEP_TIMEOUT:
		return false;
	case PMV_SLEEP_CORE_BUSY:
		(void) fi_cq_read(&cq->cq_fid, NULL, 0);
		return true;
#if PMV_HAVE_WAIT_SETS /* libfabric 2.x: no core_wait (pmv_cq_open_wait_set) */
	case PMV_SLEEP_NO_FDS:
		return !cq->core_wait || pmv_cq_core_wait(cq, ms) == FI_SUCCESS;
	case PMV_SLEEP_WOKEN:
		if (cq->core_wait)
			pmv_cntr_set_woken(cntr, cq, fds, n, alone);
		return true;
#endif
	default:
		return true;
	}
}

/*
 * One sleep of a counter wait, at most ms: on a core CQ of its endpoint,
 * which the bytes of a request wake (pmv_cntr_sleep_on).  In the core's
 * fi_cntr_wait this thread took a request's bytes (its progress placed
 * them), completed nothing and slept on, while the agent, which the
 * bytes woke too, found them gone: a commit to a target waiting on a
 * counter waited for the wait's timeout.  -1 if there is no such CQ, 1
 * if woken (or not slept), 0 if it slept the whole time; *alone as
 * pmv_cntr_watch_begin's.
 */
static int pmv_cntr_sleep(struct pmv_cntr *cntr, uint64_t threshold, int ms,
			  bool *alone)
{
	struct pmv_ep *ep = NULL;
	struct pmv_cq *cq = pmv_cntr_watch_begin(cntr, &ep, alone);
	bool woken;

	if (!cq)
		return -1;
	woken = pmv_cntr_sleep_on(cntr, cq, threshold, ms, *alone);
	pmv_cntr_watch_end(cq, ep);
	return woken;
}

/* True if pmemverbs counts into cntr itself (pmv_ep_cntr.c): the core's
 * wait would progress no endpoint that moves it. */
static bool pmv_cntr_counted_here(struct pmv_cntr *cntr)
{
	return __atomic_load_n(&cntr->refs, __ATOMIC_ACQUIRE) != 0;
}

/*
 * fi_cntr_wait (pmv_cntr.c) from the error count errs read before any
 * progress.  With pmem endpoints bound, the wait is pmemverbs's own:
 * serve (pmv_cntr_serve: handing the endpoints to the agent unless the
 * wait sleeps on the only one's CQ; spinning, after reading the gated
 * endpoints' receive CQs, pmv_cntr_take_gates), check, sleep
 * (pmv_cntr_sleep; 1 ms while commits are in flight: an ack lands in
 * memory and wakes no fd; not at all for FI_PMEMVERBS_SREAD_SPIN_US
 * after a wake), again; -FI_EAVAIL when the error count moves,
 * -FI_ETIMEDOUT at the timeout, as the core's.  Otherwise (not over tcp,
 * or no CQ with a wait object to sleep on) the core's, unless pmemverbs
 * counts into the counter itself: then 1 ms naps.
 */
int pmv_cntr_wait_from(struct pmv_cntr *cntr, uint64_t threshold,
		       uint64_t errs, int timeout)
{
	uint64_t woke = 0, deadline = pmv_ms_now() + (uint64_t) timeout;
	int left, step, slept;
	unsigned pass = 0;
	bool alone = false, spinning;

	pmv_cntr_run(cntr, true);
	if (!__atomic_load_n(&cntr->hooks.head, __ATOMIC_ACQUIRE) ||
	    (cntr->domain->transport != PMV_TRANSPORT_TCP &&
	     !pmv_cntr_counted_here(cntr)))
		return fi_cntr_wait(cntr->core, threshold, timeout);
	for (;;) {
		spinning = pmv_wait_spins(woke);
		/* spinning, the gated receive CQs are read before the core
		 * counter's read too (pmv_cntr_take_gates) */
		if (spinning && pmv_cntr_take_gates(cntr))
			pmv_cntr_serve(cntr, alone);
		if (fi_cntr_read(cntr->core) >= threshold)
			return 0;
		/* every pass before a sleep; spinning, once in
		 * PMV_CNTR_ERR_EVERY (each read is a progress pass) */
		if ((!spinning || !(++pass % PMV_CNTR_ERR_EVERY)) &&
		    fi_cntr_readerr(cntr->core) != errs)
			return -FI_EAVAIL;
		left = timeout < 0 ? -1 : pmv_ms_until(deadline);
		if (!left)
			return -FI_ETIMEDOUT;
		if (!spinning) { /* the step asked only before a sleep: its
				  * walk of the hooks slowed every spinning
				  * pass (64 B commits 1.34 -> 1.23) */
			step = pmv_hooks_busy(&cntr->hooks) ? 1 :
			       left >= 0 && left < PMV_CNTR_SLEEP_MS ? left :
			       PMV_CNTR_SLEEP_MS;
			slept = pmv_cntr_sleep(cntr, threshold, step, &alone);
			if (slept < 0 && !pmv_cntr_counted_here(cntr))
				return fi_cntr_wait(cntr->core, threshold, left);
			if (slept < 0) { /* nothing to sleep on: a nap */
				(void) poll(NULL, 0, 1);
				slept = 0;
			}
			woke = slept ? pmv_us_now() : 0;
		} else {
			pmv_cntr_take_gates(cntr);
		}
		pmv_cntr_serve(cntr, alone);
	}
}
