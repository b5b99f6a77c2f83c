/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: the waits of a completion queue.  fi_cq_sread and
 * fi_cq_sreadfrom on a CQ with pmem endpoints alternate its reads (whose
 * hooks serve commit requests) with waits on the core CQ's wait object,
 * made by pmemverbs itself over tcp so that a request's bytes, which
 * complete nothing in the core, end them; fi_cq_signal; and what the
 * agent thread needs of a CQ (its progress, its fds).
 */
#include <poll.h>
#include <time.h>
#include <unistd.h>

#include "pmv_objects.h"

static int pmv_ms_left(const struct timespec *deadline)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (int) ((deadline->tv_sec - now.tv_sec) * 1000 +
		      (deadline->tv_nsec - now.tv_nsec) / 1000000);
}

/* The core's blocking read; some cores (verbs) implement only sread. */
/* Longest core wait of a blocking read with no commit in flight. */
#define PMV_SREAD_IDLE_MS 100

static ssize_t pmv_core_sread(struct pmv_cq *cq, void *buf, size_t count,
			      fi_addr_t *src_addr, const void *cond,
			      int timeout)
{
	ssize_t ret = src_addr ?
		fi_cq_sreadfrom(cq->core, buf, count, src_addr, cond, timeout) :
		fi_cq_sread(cq->core, buf, count, cond, timeout);

	pmv_cq_core_used(cq);
	return ret;
}

/* Most fds an application thread's fi_cq_sread polls itself. */
#define PMV_SREAD_FDS 256

/* Whether any of fds is readable now (a poll that does not wait). */
static bool pmv_fds_readable(struct pollfd *fds, nfds_t n)
{
	return poll(fds, n, 0) > 0;
}

/*
 * Woken by a local signal of the core's alone, not by bytes.  The first fd
 * of a tcp CQ's list is its poll set's own signal ("the fd list changed"),
 * which neither fi_trywait nor the core's progress drains: only a wait in
 * the core's wait object does.  fi_wait on our wait set drains it and
 * returns as soon as any fd of the list fires, bytes included; the core's
 * sread (the fallback without a wait set of ours) returns only for a
 * completion, so a commit request that came meanwhile waited its whole
 * step (up to 1 ms: the p99 of agent commits to a passive target).
 */
static ssize_t pmv_cq_wait_signal(struct pmv_cq *cq, void *buf, size_t count,
				  fi_addr_t *src_addr, int ms)
{
	if (ms > 1)
		ms = 1;
	if (!pmv_cq_wait_in_set(cq, ms))
		return pmv_core_sread(cq, buf, count, src_addr, NULL, ms);
	return -FI_EAGAIN;
}

/* pmv_wait_spins since bytes last woke an sread of cq. */
static bool pmv_cq_spins(struct pmv_cq *cq)
{
	return pmv_wait_spins(__atomic_load_n(&cq->bytes_us, __ATOMIC_RELAXED));
}

/* pmv_cq_sleep's last look for an sread: entries queued in the CQ (arg). */
static bool pmv_cq_look_ready(void *arg, int *ms)
{
	(void) ms;
	return pmv_cq_ready(arg);
}

/* Sleeps on fds (n of them, room for one more) up to ms (pmv_cq_sleep,
 * whose look is at cq's queue); true if bytes (an fd of the core's) woke
 * it. */
static bool pmv_cq_poll_woken(struct pmv_cq *cq, struct pollfd *fds,
			      nfds_t n, int ms)
{
	bool bytes = false;

	if (pmv_cq_sleep(cq, fds, (int) n, &ms, pmv_cq_look_ready, cq) !=
	    PMV_SLEEP_WOKEN)
		return false;
	for (nfds_t i = 0; i < n && !bytes; i++)
		bytes = fds[i].revents != 0;
	return bytes;
}

/*
 * pmv_cq_poll_core for a core CQ whose wait object is one fd (FI_WAIT_FD,
 * or the fd pmemverbs gave a CQ opened with FI_WAIT_NONE): fi_trywait,
 * then poll on the fd FI_GETWAIT gave, as fi_control(3) describes.  In
 * the core's sread the thread took a request's bytes and slept on for up
 * to PMV_SREAD_IDLE_MS, as they complete nothing; here it comes back to
 * pmv_cq_readfrom, whose hooks serve the request at once.
 */
static ssize_t pmv_cq_poll_core_fd(struct pmv_cq *cq, int ms)
{
	struct pollfd pfd[2] = { { .fd = cq->wait_fd, .events = POLLIN } };

	if (pmv_cq_spins(cq) || !pmv_cq_poll_woken(cq, pfd, 1, ms))
		return -FI_EAGAIN;
	(void) fi_cq_read(cq->core, NULL, 0); /* place what came */
	pmv_cq_core_used(cq);
	__atomic_store_n(&cq->bytes_us, pmv_us_now(), __ATOMIC_RELAXED);
	return -FI_EAGAIN;
}

/* Looks in the core's wait object that never sleep before a wait that may
 * (pmv_cq_drain_list). */
#define PMV_DRAIN_LOOKS 2

/*
 * The look a wake of pmv_cq_poll_core left to the next wait (the thread
 * served what came in between): every fd alike, what the core's progress
 * left readable (the rest of a write, or a signal only a wait in the wait
 * object drains) goes to that wait.  First in looks that cannot sleep,
 * each followed by the hooks: the core's wait runs its progress before it
 * sleeps, and that progress placed the bytes of an ack that had made the
 * fds readable, then slept its whole step on nothing (4-12% of
 * back-to-back commits of an initiator in fi_cq_sread on a pollfd or
 * unspec CQ waited 1 ms).  Only fds that stay readable (nothing the core
 * takes) get the wait that may sleep.
 */
static ssize_t pmv_cq_drain_list(struct pmv_cq *cq, void *buf, size_t count,
				 fi_addr_t *src_addr, struct pollfd *fds,
				 nfds_t n, int ms)
{
	ssize_t ret;

	for (int look = 0; look < PMV_DRAIN_LOOKS; look++) {
		if (!pmv_fds_readable(fds, n))
			return -FI_EAGAIN;
		ret = pmv_cq_wait_signal(cq, buf, count, src_addr, 0);
		if (ret != -FI_EAGAIN || pmv_cq_ready(cq))
			return ret;
	}
	if (!pmv_fds_readable(fds, n))
		return -FI_EAGAIN;
	return pmv_cq_wait_signal(cq, buf, count, src_addr, ms);
}

/*
 * One wait of an application thread in a pmem CQ's sread over tcp: on the
 * core CQ's sockets itself, not in the core's sread, so that the bytes of
 * a commit request, which complete nothing in the core, bring the thread
 * back to pmv_cq_readfrom, whose hooks serve it at once (in the core's
 * sread the thread placed the request and slept on: a passive target's
 * commits waited up to PMV_SREAD_IDLE_MS).  The hooks run after
 * fi_trywait, whose progress may place a request, and before the poll.
 * -FI_ENOSYS where the core CQ gives no list of fds.
 */
static ssize_t pmv_cq_poll_core(struct pmv_cq *cq, void *buf, size_t count,
				fi_addr_t *src_addr, int ms)
{
	struct pollfd fds[PMV_SREAD_FDS + 1]; /* + this thread's eventfd */
	struct fi_wait_pollfd list = { .nfds = PMV_SREAD_FDS, .fd = fds };
	struct fid *fid = &cq->core->fid;
	bool drain;

	if (cq->domain->transport != PMV_TRANSPORT_TCP)
		return -FI_ENOSYS;
	if (cq->wait_fd >= 0)
		return pmv_cq_poll_core_fd(cq, ms);
	if (!cq->wait_pollfd)
		return -FI_ENOSYS;
	drain = __atomic_exchange_n(&cq->drain_pending, false,
				    __ATOMIC_ACQ_REL);
	if (!drain && pmv_cq_spins(cq))
		return -FI_EAGAIN;
	if (fi_control(fid, FI_GETWAIT, &list) || !list.nfds)
		return -FI_ENOSYS;
	if (drain)
		return pmv_cq_drain_list(cq, buf, count, src_addr, fds,
					 (nfds_t) list.nfds, ms);
	if (!pmv_cq_poll_woken(cq, fds, (nfds_t) list.nfds, ms))
		return -FI_EAGAIN;
	/* place what came now: the hooks run before the core's read */
	(void) fi_cq_read(cq->core, NULL, 0);
	pmv_cq_core_used(cq);
	__atomic_store_n(&cq->bytes_us, pmv_us_now(), __ATOMIC_RELAXED);
	/* the fds are looked at on the next wait, once pmv_cq_readfrom
	 * served what came: a request is acked before that look */
	__atomic_store_n(&cq->drain_pending, true, __ATOMIC_RELEASE);
	return -FI_EAGAIN;
}

/*
 * True if the waits of an sread of cq with cond end on bytes: made by
 * pmv_cq_poll_core on the fds the core CQ's wait object is made of, as the
 * agent's sleep is.  The thread then serves the endpoints receiving here
 * while it waits, and the agent naps (pmv_hooks_byte_wait_begin).
 */
static bool pmv_cq_waits_on_bytes(const struct pmv_cq *cq, const void *cond)
{
	return !cond && cq->domain->transport == PMV_TRANSPORT_TCP &&
	       (cq->wait_fd >= 0 || cq->wait_pollfd);
}

/* The core's sread where the poll could not be made (no list of fds):
 * not a wait on bytes, so the agent serves meanwhile (on_bytes: it was
 * told this thread waits on bytes; it is told otherwise, then again). */
static ssize_t pmv_cq_sread_fallback(struct pmv_cq *cq, void *buf,
				     size_t count, fi_addr_t *src_addr,
				     const void *cond, int ms, bool on_bytes)
{
	ssize_t ret;

	if (on_bytes)
		pmv_hooks_byte_wait_end(&cq->hooks, cq->domain);
	ret = pmv_core_sread(cq, buf, count, src_addr, cond, ms);
	if (on_bytes)
		pmv_hooks_byte_wait_begin(&cq->hooks);
	return ret;
}

/* One wait of a pmem CQ's sread: on the core's sockets, else in its sread. */
static ssize_t pmv_cq_wait_core(struct pmv_cq *cq, void *buf, size_t count,
				fi_addr_t *src_addr, const void *cond, int ms,
				bool on_bytes)
{
	ssize_t ret = -FI_ENOSYS;

	__atomic_add_fetch(&cq->core_waiters, 1, __ATOMIC_ACQ_REL);
	if (!cond)
		ret = pmv_cq_poll_core(cq, buf, count, src_addr, ms);
	if (ret == -FI_ENOSYS)
		ret = pmv_cq_sread_fallback(cq, buf, count, src_addr, cond, ms,
					    on_bytes);
	__atomic_sub_fetch(&cq->core_waiters, 1, __ATOMIC_ACQ_REL);
	if (ret > 0 && !pmv_cq_filter_internal(cq, buf, src_addr, ret))
		ret = -FI_EAGAIN;
	return ret;
}

/*
 * Blocking read of a CQ with pmem endpoints: it alternates progress (and
 * the hooks that serve commit requests) with waits on the core: 1 ms
 * while commits are in flight (an ack lands in memory and wakes no core
 * wait object), up to PMV_SREAD_IDLE_MS otherwise (the agent signals the
 * core CQ when it queues an FI_IMMED entry here).  fi_cq_signal on this
 * CQ makes it return -FI_EAGAIN.
 */
static ssize_t pmv_cq_sread_loop(struct pmv_cq *cq, void *buf, size_t count,
				 fi_addr_t *src_addr, const void *cond,
				 int timeout, bool on_bytes)
{
	struct timespec deadline;
	ssize_t ret;
	int left;

	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += timeout / 1000;
	deadline.tv_nsec += (long) (timeout % 1000) * 1000000;
	if (deadline.tv_nsec >= 1000000000) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000;
	}
	for (;;) {
		ret = pmv_cq_readfrom(&cq->cq_fid, buf, count, src_addr);
		if (ret != -FI_EAGAIN)
			return ret;
		left = timeout < 0 ? PMV_SREAD_IDLE_MS : pmv_ms_left(&deadline);
		if (left <= 0)
			return -FI_EAGAIN;
		left = pmv_cq_hooks_busy(cq) ? 1 :
		       left < PMV_SREAD_IDLE_MS ? left : PMV_SREAD_IDLE_MS;
		ret = pmv_cq_wait_core(cq, buf, count, src_addr, cond, left,
				       on_bytes);
		if (ret != -FI_EAGAIN ||
		    __atomic_exchange_n(&cq->wakeup, 0, __ATOMIC_ACQ_REL))
			return ret;
	}
}

/* Blocking read: the core's without pmem endpoints, else
 * pmv_cq_sread_loop; a thread whose waits end on bytes tells the agent so
 * for the whole call. */
ssize_t pmv_cq_sreadfrom(struct fid_cq *cq_fid, void *buf, size_t count,
			 fi_addr_t *src_addr, const void *cond, int timeout)
{
	struct pmv_cq *cq = pmv_cq(cq_fid);
	bool on_bytes;
	ssize_t ret;

	if (pmv_cq_plain(cq))
		return pmv_core_sread(cq, buf, count, src_addr, cond, timeout);
	on_bytes = pmv_cq_waits_on_bytes(cq, cond);
	if (on_bytes)
		pmv_hooks_byte_wait_begin(&cq->hooks);
	ret = pmv_cq_sread_loop(cq, buf, count, src_addr, cond, timeout,
				on_bytes);
	if (on_bytes)
		pmv_hooks_byte_wait_end(&cq->hooks, cq->domain);
	return ret;
}

ssize_t pmv_cq_sread(struct fid_cq *cq, void *buf, size_t count,
		     const void *cond, int timeout)
{
	return pmv_cq_sreadfrom(cq, buf, count, NULL, cond, timeout);
}

/* Wakes a thread in fi_cq_sread, which returns -FI_EAGAIN. */
int pmv_cq_signal(struct fid_cq *cq_fid)
{
	struct pmv_cq *cq = pmv_cq(cq_fid);

	__atomic_store_n(&cq->wakeup, 1, __ATOMIC_RELEASE);
	pmv_wake_sleepers_on(cq->domain, cq);
	return fi_cq_signal(cq->core);
}

/*
 * Application threads asleep on cq's core wait object: in fi_cq_sread or
 * fi_cntr_wait (core_waiters) or, libfabric 1.x, in fi_wait on its wait
 * set, to which fi_cq(3) attaches the CQ (a set's sleepers count
 * for each member: a commit that another thread started while one slept
 * there lost its wake to the agent's progress and waited up to the
 * set's 100 ms step, 2-4 of 29).
 */
int pmv_cq_sleepers(const struct pmv_cq *cq)
{
	return __atomic_load_n(&cq->core_waiters, __ATOMIC_SEQ_CST) +
	       (cq->app_set ? __atomic_load_n(&cq->app_set->sleepers,
					      __ATOMIC_SEQ_CST) : 0);
}

/*
 * Wakes the threads that may sleep on cq: through the core's signal
 * (fi_cq_sread, fi_wait on a set) and their eventfds (pmv_wake.c: polled
 * in pmemverbs's own sleeps, which another thread's fi_trywait of the
 * core CQ cannot drain as it drains the signal: the agent's drained it,
 * and 1 to 11 of 29 commits that another thread started waited out a
 * counter wait's 20 ms sleep).
 */
void pmv_cq_wake(struct pmv_cq *cq)
{
	(void) fi_cq_signal(cq->core);
	pmv_wake_sleepers_on(cq->domain, cq);
}

/* A commit started on an endpoint of cq (pmv_ini_wake): a thread asleep
 * on cq chose its sleep while none was in flight; woken if there is one. */
void pmv_cq_wake_sleepers(struct pmv_cq *cq)
{
	if (pmv_cq_sleepers(cq))
		pmv_cq_wake(cq);
}

/*
 * Drives the core's progress on an endpoint's CQs for the agent thread
 * (hence the atomic loads): the tcp core moves data only when its CQs are
 * read, and a read of zero entries progresses a CQ without taking any
 * completion from the application.  Not while an application thread waits
 * in this CQ's fi_cq_sread: the core's wait progresses the CQ's endpoints
 * when bytes arrive, and a second thread in the core's progress on the
 * same core only fights it for the core's locks (agent commits to a
 * passive target: 64 B p50 68 -> 31-50 us over tcp).
 */
void pmv_cq_progress_core(struct pmv_cq *cq)
{
	bool found;

	if (pmv_cq_sleepers(cq))
		return;
	if (__atomic_load_n(&cq->gated_refs, __ATOMIC_ACQUIRE)) {
		pmv_cq_take_core(cq); /* a gated write's completion serves */
		found = __atomic_load_n(&cq->aux_count, __ATOMIC_ACQUIRE) != 0;
	} else {
		/* a read of count 0: 0 if the core CQ holds entries */
		found = fi_cq_read(cq->core, NULL, 0) >= 0;
		pmv_cq_core_used(cq);
	}
	pmv_cq_wake_waiters(cq, found);
}

/*
 * After the agent ran the core's progress of cq (a read, or fi_trywait):
 * an application thread that may sleep on cq's wait object
 * (pmv_cq_sleepers, or on its fd since fi_trywait said yes and it has not
 * read since) is woken through it (fi_cq_signal) if entries may be there
 * (found, or queued by pmemverbs) or commits are in flight (an ack may
 * have landed), as that progress took the bytes whose arrival would have
 * woken it, and fi_trywait reset the signal that went with an entry
 * pmemverbs queued: an initiator's 8-byte read after 2 ms idle waited its
 * fi_cq_sread's whole 100 ms step in 19 of 400 reads, its epoll's 200 ms
 * in 1%.
 */
void pmv_cq_wake_waiters(struct pmv_cq *cq, bool found)
{
	if (!pmv_cq_sleepers(cq) &&
	    !__atomic_load_n(&cq->app_armed, __ATOMIC_SEQ_CST))
		return;
	if (found || pmv_cq_backlog(cq) || pmv_cq_hooks_busy(cq))
		pmv_cq_wake(cq);
}

/*
 * The agent's fi_trywait of cq's core before it sleeps (fabric: the
 * core's): true if the core says cq is busy.  Its progress, or its reset
 * of the core's signal, may have taken an application thread's wake,
 * which pmv_cq_wake_waiters gives back.
 */
bool pmv_cq_agent_trywait(struct pmv_cq *cq, struct fid_fabric *fabric)
{
	bool busy = pmv_cq_core_busy(cq, fabric);

	pmv_cq_wake_waiters(cq, busy);
	return busy;
}
