/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: completion queue.
 *
 * Ordinary completions come straight from the core CQ; their contexts are
 * the application's own.  pmemverbs raises some entries itself: commit
 * completions and FI_IMMED target completions.  Those wait in a queue of
 * its own that grows as needed (nothing is ever dropped), read before the
 * core's.  The completions of pmemverbs's internal operations (pmv_iop.h)
 * are recognised by their context and handed to their owners, never shown
 * to the application, errors included.  Reading a CQ first runs the
 * progress hooks of the pmem endpoints bound to it (the commit engine's
 * ack polling), so this file knows nothing of the engine itself.  The
 * queue is pmv_cq_queue.c's.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "pmv_objects.h"
#include "pmv_timeline.h"

/*
 * True if the CQ holds nothing of pmemverbs's: no pmem endpoint ever bound
 * (a closed one's acks may still fail: pmv_cq_internal_inject_error), no
 * entry queued, and no internal operation whose completion may still come
 * (a closed endpoint's late completions must not reach the application).
 * Then reads go straight to the core.
 */
bool pmv_cq_plain(struct pmv_cq *cq)
{
	return !__atomic_load_n(&cq->pmem_once, __ATOMIC_RELAXED) &&
	       !__atomic_load_n(&cq->pmem_refs, __ATOMIC_RELAXED) &&
	       !__atomic_load_n(&cq->aux_count, __ATOMIC_RELAXED) &&
	       !__atomic_load_n(&cq->iops.outstanding, __ATOMIC_RELAXED);
}

/* Runs the progress of every pmem endpoint that completes here. */
static void pmv_cq_run_hooks(struct pmv_cq *cq)
{
	pmv_hooks_run(&cq->hooks);
}

/*
 * True if the application must read before it waits: acks that landed in
 * memory complete commits here, and pmemverbs's own queue wakes no core
 * wait object (fi_trywait asks this).
 */
bool pmv_cq_ready(struct pmv_cq *cq)
{
	pmv_cq_run_hooks(cq);
	return __atomic_load_n(&cq->aux_count, __ATOMIC_ACQUIRE) != 0;
}

/* True if an endpoint completing here has commits whose acks may land. */
bool pmv_cq_hooks_busy(struct pmv_cq *cq)
{
	return pmv_hooks_busy(&cq->hooks);
}

/*
 * fi_trywait on cq, asked after the core's trywait said yes (its progress
 * may have placed an ack or a request): true if the application must read
 * cq before it sleeps on its wait object, as blocking could hang it
 * (fi_trywait(3)).  So while pmemverbs holds entries for it, which wake
 * no core wait object, and while commits are in flight: an ack lands in
 * memory, and its bytes wake the fd only if no other thread took them
 * first (the core's own trywait progress, the agent's), which then wakes
 * nothing: a commit waited for the application's whole epoll timeout.
 */
bool pmv_cq_trywait_busy(struct pmv_cq *cq)
{
	return pmv_cq_ready(cq) || pmv_cq_hooks_busy(cq);
}

/*
 * True if a core entry is a gated write's completion, now recorded and
 * counted: the read that took it serves its request (pmv_cq_readfrom),
 * else the next hooks (a wait's, or the agent's).
 */
static bool pmv_cq_gate_entry(struct pmv_cq *cq, const void *entry)
{
	if (cq->format < FI_CQ_FORMAT_DATA ||
	    !pmv_gate_take_entry(cq->domain, entry))
		return false;
	__atomic_add_fetch(&cq->gate_entries, 1, __ATOMIC_RELAXED);
	return true;
}

/*
 * Hands the internal entries among n core entries to their owners (a gated
 * write's completion to its gate) and keeps the application's, in order.
 * Returns how many are kept.  An internal operation's completion goes
 * into done to run later (the CQ's lock held), or at once if done is NULL.
 */
static ssize_t pmv_cq_filter(struct pmv_cq *cq, void *buf,
			     fi_addr_t *src_addr, ssize_t n,
			     struct pmv_iop_batch *done)
{
	size_t size = pmv_cq_entry_size(cq->format);
	struct pmv_iop *iop;
	ssize_t i, kept = 0;
	char *entry;

	for (i = 0; i < n; i++) {
		entry = (char *) buf + i * size;
		iop = pmv_iop_find(&cq->iops,
				   ((struct fi_cq_entry *) entry)->op_context);
		if (iop && done) {
			pmv_iop_batch_add(done, iop, NULL);
			continue;
		}
		if (iop) {
			pmv_iop_complete(&cq->iops, iop, NULL);
			continue;
		}
		if (pmv_cq_gate_entry(cq, entry))
			continue;
		if (kept != i) {
			memmove((char *) buf + kept * size, entry, size);
			if (src_addr)
				src_addr[kept] = src_addr[i];
		}
		kept++;
	}
	return kept;
}

/* pmv_cq_filter with no lock held: internal completions run at once. */
ssize_t pmv_cq_filter_internal(struct pmv_cq *cq, void *buf,
			       fi_addr_t *src_addr, ssize_t n)
{
	return pmv_cq_filter(cq, buf, src_addr, n, NULL);
}

/*
 * The error of a context-less inject write on a broken connection: on a
 * CQ that had pmem endpoints, a failed commit acknowledgement (the agent's
 * fi_inject_write), even after its endpoint closed (libfabric 2.1's tcp
 * reports it then, while ofi_rxm flushes its MSG CQ in its fi_close, and
 * ofi_rxm reads a context-less error as one of its buffers: SIGSEGV).  It
 * is not the application's to read; the broken connection shows in the
 * commits of both sides and in FI_SHUTDOWN.
 */
static bool pmv_cq_internal_inject_error(struct pmv_cq *cq,
					 const struct fi_cq_err_entry *err)
{
	if (err->op_context || !pmv_err_conn_lost(err->err) ||
	    !__atomic_load_n(&cq->pmem_once, __ATOMIC_RELAXED))
		return false;
	PMV_INFO(FI_LOG_CQ, "a context-less write failed (%s): an "
		 "acknowledgement to a peer whose connection broke; not "
		 "reported\n", fi_strerror(err->err));
	return true;
}

/*
 * The core has an error entry first: an internal one goes to its owner
 * through done (true: read on), the application's is queued so that read
 * reports -FI_EAVAIL and readerr returns it.  Lock held; room in done.
 */
static bool pmv_cq_take_core_error(struct pmv_cq *cq,
				   struct pmv_iop_batch *done)
{
	struct fi_cq_err_entry err = { 0 };
	struct pmv_iop *iop;
	void *copy;

	/* room first: without it the error stays in the core's queue */
	if (pmv_cq_reserve(cq))
		return false;
	if (fi_cq_readerr(cq->core, &err, 0) != 1) { /* after a read: noted */
		pmv_cq_unreserve(cq);
		return false;
	}
	iop = pmv_iop_find(&cq->iops, err.op_context);
	if (iop || pmv_cq_internal_inject_error(cq, &err)) {
		pmv_cq_unreserve(cq);
		if (iop)
			pmv_iop_batch_add(done, iop, &err);
		return true;
	}
	if (err.err_data && err.err_data_size) {
		copy = malloc(err.err_data_size);
		if (copy)
			memcpy(copy, err.err_data, err.err_data_size);
		err.err_data = copy;
		err.err_data_size = copy ? err.err_data_size : 0;
	}
	pmv_cq_push(cq, &err, true);
	return false;
}

/*
 * Reads the core CQ once, keeping only the application's entries; lock
 * held.  The internal ones go into done (never more than its room is
 * read); -FI_EAGAIN with *more set: they were all internal, and once they
 * ran the caller looks at the queue first (a commit they finished is read
 * at once: reading the core again would run its progress once more for
 * nothing; over tcp a poll, and a re-armed signal for the next completion:
 * 3 system calls, a tenth of a read-flush commit), then reads on.
 */
static ssize_t pmv_cq_read_core(struct pmv_cq *cq, void *buf, size_t count,
				fi_addr_t *src_addr, struct pmv_iop_batch *done,
				bool *more)
{
	size_t room = pmv_iop_batch_room(done);
	ssize_t ret;

	count = count < room ? count : room;
	*more = false;
	ret = src_addr ? fi_cq_readfrom(cq->core, buf, count, src_addr) :
			 fi_cq_read(cq->core, buf, count);
	pmv_cq_core_used(cq);
	if (ret == -FI_EAVAIL) {
		*more = pmv_cq_take_core_error(cq, done);
		return *more ? -FI_EAGAIN : -FI_EAVAIL;
	}
	if (ret <= 0)
		return ret;
	ret = pmv_cq_filter(cq, buf, src_addr, ret, done);
	*more = !ret;
	return ret ? ret : -FI_EAGAIN;
}

/*
 * Marks the internal completions in done as taken and not yet run; the
 * CQ's lock held.  Until pmv_cq_run_taken, a reader that finds the CQ
 * empty yields to this thread (pmv_cq_readfrom).
 */
static void pmv_cq_hold_taken(struct pmv_cq *cq,
			      const struct pmv_iop_batch *done)
{
	if (done->n)
		__atomic_add_fetch(&cq->taken_held, 1, __ATOMIC_RELAXED);
}

/* Runs the internal completions taken (no lock held), then unmarks them. */
static void pmv_cq_run_taken(struct pmv_cq *cq, struct pmv_iop_batch *done)
{
	bool held = done->n != 0;

	pmv_iop_batch_run(&cq->iops, done);
	if (held)
		__atomic_sub_fetch(&cq->taken_held, 1, __ATOMIC_RELEASE);
}

/* Core entries one read of pmv_cq_take_batch takes at most. */
#define PMV_TAKE_BATCH 8

/*
 * Takes up to PMV_TAKE_BATCH core entries in one core read: internal ones
 * go into done, the application's are queued.  True if the core may hold
 * more (it filled the batch, or an internal error was taken): a read that
 * came back short needs no second one to learn the core is empty.  False
 * too when there is no room (the entries stay in the core).  Lock held.
 */
static bool pmv_cq_take_batch(struct pmv_cq *cq, struct pmv_iop_batch *done)
{
	char buf[PMV_TAKE_BATCH * sizeof(struct fi_cq_tagged_entry)];
	size_t want = pmv_iop_batch_room(done), room;
	ssize_t n, kept = 0;

	want = want < PMV_TAKE_BATCH ? want : PMV_TAKE_BATCH;
	room = want ? pmv_cq_reserve_upto(cq, want) : 0;
	if (!room) {
		if (want)
			PMV_WARN(FI_LOG_CQ, "out of memory for a completion "
				 "queue entry; the core's entries wait there\n");
		return false;
	}
	n = fi_cq_read(cq->core, buf, room);
	pmv_cq_core_used(cq);
	if (n > 0) {
		kept = pmv_cq_filter(cq, buf, NULL, n, done);
		pmv_cq_queue_core(cq, buf, kept);
	}
	pmv_cq_unreserve_n(cq, room - (size_t) kept);
	if (n == -FI_EAVAIL)
		return pmv_cq_take_core_error(cq, done);
	return n == (ssize_t) room;
}

/* Takes up to 64 core entries under the lock; their internal completions
 * run after it (pmv_iop_batch).  Only if the lock is free when try. */
static void pmv_cq_take_entries(struct pmv_cq *cq, bool try)
{
	struct pmv_iop_batch done;
	int rounds;

	done.n = 0;
	if (try && !pmv_trylock(&cq->lock, PMV_LOCK_CQ))
		return;
	if (!try)
		pmv_lock(&cq->lock, PMV_LOCK_CQ);
	for (rounds = 0; rounds < 64 && pmv_cq_take_batch(cq, &done); rounds++)
		;
	pmv_cq_hold_taken(cq, &done);
	pmv_unlock(&cq->lock, PMV_LOCK_CQ);
	pmv_cq_run_taken(cq, &done);
}

/*
 * The agent's progress of a CQ where gated endpoints receive: the core's
 * entries are taken (the application's queued, in order), as a gated
 * request is served only once its write's completion is read.  Not while
 * another thread reads the core CQ.
 */
void pmv_cq_take_core(struct pmv_cq *cq)
{
	pmv_cq_take_entries(cq, true);
}

/*
 * A read that found nothing (a progress read of count 0 too) while
 * another thread runs internal completions it took from the core (the
 * agent serving a gated request, persist included, or finishing a commit
 * that completes here): the reader gives up its CPU once.  An
 * application that spins on fi_cq_read otherwise competes with that
 * thread when runnable threads outnumber cores (a target's reader, its
 * agent and the core's progress on two): where that tail reached
 * milliseconds (libfabric 2.1), the p99 of gapped commits fell from about
 * 2490 to 1450 us (docs/performance.md).  sched_yield(2); no lock held.
 */
static void pmv_cq_yield_to_taker(struct pmv_cq *cq)
{
	if (__atomic_load_n(&cq->taken_held, __ATOMIC_ACQUIRE))
		sched_yield();
}

/*
 * fi_cq_read with count 0, the progress idiom: the engine still needs the
 * internal operations' completions (a commit waits for its data write),
 * so the core's entries are taken, the application's queued in order.
 */
static ssize_t pmv_cq_progress_only(struct pmv_cq *cq)
{
	pmv_cq_run_hooks(cq);
	pmv_cq_take_entries(cq, false);
	pmv_cq_run_hooks(cq); /* what those completions let progress */
	pmv_domain_nudge_agent(cq->domain);
	if (pmv_cq_backlog(cq))
		return 0;
	pmv_cq_yield_to_taker(cq);
	return -FI_EAGAIN;
}

/*
 * The queue first, then the core, under the lock; internal completions
 * read on the way run after it (they may queue commits: the queue is
 * looked at again), at most 64 rounds of them.
 */
static ssize_t pmv_cq_read_queued(struct pmv_cq *cq, void *buf, size_t count,
				  fi_addr_t *src_addr)
{
	uint64_t gates = __atomic_load_n(&cq->gate_entries, __ATOMIC_RELAXED);
	struct pmv_iop_batch done;
	bool more = false;
	ssize_t ret;
	int rounds;

	done.n = 0;
	for (rounds = 0; rounds < 64; rounds++) {
		pmv_lock(&cq->lock, PMV_LOCK_CQ);
		ret = pmv_cq_pop_aux(cq, buf, count, src_addr);
		if (ret == -FI_EAGAIN)
			ret = pmv_cq_read_core(cq, buf, count, src_addr,
					       &done, &more);
		pmv_cq_hold_taken(cq, &done);
		pmv_unlock(&cq->lock, PMV_LOCK_CQ);
		pmv_cq_run_taken(cq, &done);
		/* gated requests confirmed: the caller serves them first */
		if (ret != -FI_EAGAIN || !more ||
		    __atomic_load_n(&cq->gate_entries, __ATOMIC_RELAXED) != gates)
			break;
	}
	return ret;
}

/*
 * After a read took gated writes' completions and nothing else: serves
 * their requests now, in this read (else the next read would, after one
 * more pass through the core), and returns what that queued (FI_IMMED
 * entries) or -FI_EAGAIN.
 */
static ssize_t pmv_cq_serve_gated(struct pmv_cq *cq, void *buf, size_t count,
				  fi_addr_t *src_addr)
{
	ssize_t ret;

	pmv_cq_run_hooks(cq);
	pmv_lock(&cq->lock, PMV_LOCK_CQ);
	ret = pmv_cq_pop_aux(cq, buf, count, src_addr);
	pmv_unlock(&cq->lock, PMV_LOCK_CQ);
	return ret;
}

ssize_t pmv_cq_readfrom(struct fid_cq *cq_fid, void *buf, size_t count,
			fi_addr_t *src_addr)
{
	struct pmv_cq *cq = pmv_cq(cq_fid);
	uint64_t gates, began;
	ssize_t ret;

	if (!count && !pmv_cq_plain(cq))
		return pmv_cq_progress_only(cq);
	if (pmv_cq_plain(cq))
		return src_addr ? fi_cq_readfrom(cq->core, buf, count, src_addr) :
				  fi_cq_read(cq->core, buf, count);
	/* it reads: it does not sleep on the fd (pmv_cq_wake_waiters) */
	if (__atomic_load_n(&cq->app_armed, __ATOMIC_RELAXED))
		__atomic_store_n(&cq->app_armed, false, __ATOMIC_RELAXED);
	began = pmv_timeline_now();
	pmv_cq_run_hooks(cq);
	gates = __atomic_load_n(&cq->gate_entries, __ATOMIC_RELAXED);
	ret = pmv_cq_read_queued(cq, buf, count, src_addr);
	if (ret > 0)
		pmv_mark(PMV_MARK_ENTRY);
	if (ret == -FI_EAGAIN &&
	    __atomic_load_n(&cq->gate_entries, __ATOMIC_RELAXED) != gates) {
		pmv_mark_at(PMV_MARK_READ, began);
		pmv_mark(PMV_MARK_GATE);
		ret = pmv_cq_serve_gated(cq, buf, count, src_addr);
		pmv_mark(PMV_MARK_READ_DONE);
	}
	pmv_domain_nudge_agent(cq->domain);
	if (ret == -FI_EAGAIN)
		pmv_cq_yield_to_taker(cq);
	return ret;
}

ssize_t pmv_cq_read(struct fid_cq *cq, void *buf, size_t count)
{
	return pmv_cq_readfrom(cq, buf, count, NULL);
}

/* An internal op's error read by readerr goes to its owner through done
 * (run once the lock is released): true. */
static bool pmv_cq_take_internal(struct pmv_cq *cq,
				 const struct fi_cq_err_entry *err,
				 struct pmv_iop_batch *done)
{
	struct pmv_iop *iop = pmv_iop_find(&cq->iops, err->op_context);

	if (!iop)
		return false;
	pmv_iop_batch_add(done, iop, err);
	return true;
}

/* Copies a queued error out, err_data as fi_cq_readerr(3) says. */
static void pmv_cq_give_error(struct pmv_cq *cq, struct fi_cq_err_entry *buf,
			      struct fi_cq_err_entry *e)
{
	void *app_data = buf->err_data;
	size_t app_size = buf->err_data_size, n;

	*buf = *e;
	if (e->err_data && app_size && app_data) {
		n = e->err_data_size < app_size ? e->err_data_size : app_size;
		memcpy(app_data, e->err_data, n);
		buf->err_data = app_data;
		buf->err_data_size = n;
	} else if (e->err_data) {
		n = e->err_data_size < sizeof(cq->errbuf) ?
		    e->err_data_size : sizeof(cq->errbuf);
		memcpy(cq->errbuf, e->err_data, n);
		buf->err_data = cq->errbuf;
		buf->err_data_size = n;
	}
	free(e->err_data);
}

ssize_t pmv_cq_readerr(struct fid_cq *cq_fid, struct fi_cq_err_entry *buf,
			      uint64_t flags)
{
	struct pmv_cq *cq = pmv_cq(cq_fid);
	struct pmv_iop_batch done;
	struct fi_cq_err_entry e;
	ssize_t ret = 0;

	done.n = 0;
	pmv_lock(&cq->lock, PMV_LOCK_CQ);
	pmv_lock(&cq->aux_lock, PMV_LOCK_CQ_AUX);
	if (cq->aux_count && cq->aux[cq->aux_head].is_error) {
		e = cq->aux[cq->aux_head].entry;
		cq->aux_head = (cq->aux_head + 1) % cq->aux_cap;
		__atomic_store_n(&cq->aux_count, cq->aux_count - 1,
				 __ATOMIC_RELAXED);
		ret = 1;
	}
	pmv_unlock(&cq->aux_lock, PMV_LOCK_CQ_AUX);
	if (ret) {
		pmv_cq_give_error(cq, buf, &e);
	} else {
		ret = fi_cq_readerr(cq->core, buf, flags);
		pmv_cq_core_used(cq);
		if (ret > 0 && !pmv_cq_plain(cq) &&
		    (pmv_cq_take_internal(cq, buf, &done) ||
		     pmv_cq_internal_inject_error(cq, buf)))
			ret = -FI_EAGAIN;
	}
	pmv_cq_hold_taken(cq, &done);
	pmv_unlock(&cq->lock, PMV_LOCK_CQ);
	pmv_cq_run_taken(cq, &done);
	return ret;
}
