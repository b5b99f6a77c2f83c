/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: the commit ring of an endpoint, and what happens when the
 * operations of its commits complete (the engine's lowest layer).
 *
 * A commit takes the next slot of the ring and keeps it until nothing more
 * can happen to it: every internal operation it posted has completed and,
 * if it sent a request, its ack has come (the request's inbox slot is in
 * use until then).  It is reported to the application once, when it is
 * durable or has failed; slots are reused in ring order.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pmv_initiator.h"
#include "pmv_timeline.h"

struct pmv_commit *pmv_ini_commit(struct pmv_ini *ini, uint64_t cseq)
{
	struct pmv_commit *c = &ini->ring[cseq % PMV_RING];

	return c->state != PMV_C_FREE && c->cseq == cseq ? c : NULL;
}

bool pmv_ini_ring_full(const struct pmv_ini *ini)
{
	return ini->tail - ini->head >= PMV_RING;
}

/*
 * The engine's first commit in an empty ring (lock held): the reads of its
 * domain's CQs run its hook again (an idle engine's hook is parked off the
 * domain's list, pmv_hooks.c, and no read walks it).  A thread asleep on
 * a CQ of the endpoint chose its sleep while no commit was in flight
 * (fi_cntr_wait: 20 ms, on the receive CQ, whose fd the commit's own
 * completions do not make readable, and the agent leaves the endpoint to
 * it): it is woken (pmv_cq_wake_sleepers), so that its next, short, sleep
 * follows the progress the commit needs (a commit that another thread
 * started waited the sleep out, 17 ms, in 1 to 11 of 29).
 */
static void pmv_ini_wake(struct pmv_ini *ini)
{
	struct pmv_cq *cq = ini->ep ?
		__atomic_load_n(&ini->ep->tx_cq, __ATOMIC_ACQUIRE) : NULL;
	struct pmv_cq *rx = ini->ep ?
		__atomic_load_n(&ini->ep->rx_cq, __ATOMIC_ACQUIRE) : NULL;

	if (cq) {
		pmv_hooks_wake(&ini->ep->domain->engines, &ini->ep->hook);
		pmv_cq_wake_sleepers(cq);
	}
	if (rx && rx != cq)
		pmv_cq_wake_sleepers(rx);
}

/* Takes the next ring slot for a commit of msg (lock held, room checked). */
struct pmv_commit *pmv_ini_commit_new(struct pmv_ini *ini,
				      const struct fi_msg_rma *msg,
				      uint64_t flags)
{
	uint64_t cseq = ini->tail;
	struct pmv_commit *c = &ini->ring[cseq % PMV_RING];
	size_t i;

	/* stored atomically: pmv_ini_busy reads head and tail unlocked */
	__atomic_store_n(&ini->tail, cseq + 1, __ATOMIC_RELAXED);
	if (cseq == ini->head)
		pmv_ini_wake(ini); /* the engine was idle, its hook parked */

	memset(c, 0, offsetof(struct pmv_commit, ext));
	c->state = PMV_C_POSTED;
	c->cseq = cseq;
	c->flags = flags;
	c->floor = ini->scope.gen; /* its own data is posted from now */
	if (msg) {
		c->context = msg->context;
		c->key = msg->rma_iov[0].key;
		c->data = msg->data;
		for (i = 0; i < msg->rma_iov_count; i++)
			c->len += msg->rma_iov[i].len;
	}
	return c;
}

/* Frees the ring's oldest slots whose commits are over. */
static void pmv_ini_retire(struct pmv_ini *ini)
{
	struct pmv_commit *c;

	while (ini->head < ini->tail) {
		c = &ini->ring[ini->head % PMV_RING];
		if (c->state != PMV_C_DONE)
			return;
		c->state = PMV_C_FREE;
		__atomic_store_n(&ini->head, ini->head + 1, __ATOMIC_RELAXED);
	}
}

/* Gives back the CQ room a commit reserved and will not use. */
static void pmv_ini_release_room(struct pmv_commit *c)
{
	if (c->room)
		pmv_cq_unreserve(c->room);
	c->room = NULL;
}

/*
 * A commit that could not be posted: its slot goes back if nothing of it
 * reached the core, else it lives on as an internal one until its
 * operations complete.
 */
void pmv_ini_commit_drop(struct pmv_ini *ini, struct pmv_commit *c)
{
	pmv_ini_release_room(c);
	if (!c->iops && !c->req_seq && c->cseq + 1 == ini->tail) {
		c->state = PMV_C_FREE;
		__atomic_store_n(&ini->tail, ini->tail - 1, __ATOMIC_RELAXED);
		return;
	}
	c->internal = true;
	c->reported = true;
	if (!c->iops && (!c->req_seq || c->answered))
		c->state = PMV_C_DONE;
}

/* True if a successful commit raises no completion. */
static bool pmv_ini_silent(const struct pmv_ep *ep, const struct pmv_commit *c)
{
	return c->silent || (ep->tx_selective && !(c->flags & FI_COMPLETION));
}

/* Tells the application a commit's outcome, once; lock held. */
void pmv_ini_report(struct pmv_ini *ini, struct pmv_commit *c)
{
	struct pmv_ep *ep = ini->ep;
	struct fi_cq_err_entry e = {
		.op_context = c->context,
		.flags = FI_RMA | FI_WRITE,
		.len = c->len,
	};

	if (c->reported)
		return;
	c->reported = true;
	if (c->status)
		pmv_fence_note_failure(&ini->fence_failed, c->key);
	if (c->status && c->spill)
		pmv_ini_spill_failed(ini, c);
	if (c->internal || !ep) {
		pmv_ini_release_room(c);
		return;
	}
	if (c->status)
		ep->counters.commit_errors++;
	else
		ep->counters.commits++;
	if (c->room && (c->status || !pmv_ini_silent(ep, c))) {
		if (c->status) {
			e.err = c->core_err ? c->core_err :
				pmv_err_to_fi(c->status);
			e.prov_errno = c->status;
		}
		pmv_cq_push(c->room, &e, c->status != 0);
		c->room = NULL;
	}
	pmv_ini_release_room(c);
	/* where its CQ entry is raised, with or without one */
	pmv_ep_cntr_count(ep, PMV_CNTR_WRITE, c->status != 0);
}

/* Completes c when nothing of it is outstanding; lock held. */
void pmv_ini_try_done(struct pmv_ini *ini, struct pmv_commit *c)
{
	bool waits_ack = c->req_seq && !c->answered;

	if (c->state == PMV_C_DEFERRED)
		return;
	if (c->status && !c->reported)
		pmv_ini_report(ini, c); /* an error need not wait */
	if (c->iops || waits_ack || (!c->answered && !c->status))
		return;
	pmv_ini_report(ini, c);
	c->state = PMV_C_DONE;
	pmv_ini_retire(ini);
}

/* Ends a commit with a status (the first error sticks); lock held. */
void pmv_ini_finish(struct pmv_ini *ini, struct pmv_commit *c, int status)
{
	if (status && !c->status)
		c->status = status;
	/* a send's data is no longer awaited, however it ended (an ack, or
	 * a connection gone: then nothing more is placed) */
	if (c->inl.len && !c->answered)
		__atomic_fetch_sub(&ini->sends_busy, 1, __ATOMIC_RELEASE);
	c->answered = true;
	pmv_ini_try_done(ini, c);
}

/* Drops a reference; the last one frees the engine.  Lock not held. */
void pmv_ini_unref(struct pmv_ini *ini)
{
	if (__atomic_sub_fetch(&ini->refs, 1, __ATOMIC_ACQ_REL))
		return;
	pmv_scope_fini(&ini->scope);
	pmv_fence_fini(&ini->fence_failed);
	pmv_fence_fini(&ini->scope_lost);
	pthread_mutex_destroy(&ini->lock);
	free(ini);
}

/*
 * Fails every unreported commit of the ring with status (core_err, if not
 * 0, as the completion's err); lock held.
 */
void pmv_ini_fail_ring(struct pmv_ini *ini, int status, int core_err)
{
	struct pmv_commit *c;
	uint64_t s;

	for (s = ini->head; s < ini->tail; s++) {
		c = &ini->ring[s % PMV_RING];
		if (c->state == PMV_C_DONE)
			continue;
		if (c->state == PMV_C_DEFERRED) {
			c->state = PMV_C_POSTED;
			ini->deferred--;
		}
		if (!c->status) {
			c->status = status;
			c->core_err = c->core_err ? c->core_err : core_err;
		}
		pmv_ini_report(ini, c);
	}
}

/*
 * A core error completion of one of the engine's operations: its commit
 * fails; if the error says the connection is gone, every commit waiting
 * on the connection fails now too (their acks will never come) and new
 * ones are refused.  Lock held.
 */
static void pmv_ini_op_failed(struct pmv_ini *ini, struct pmv_commit *c,
			      int err)
{
	if (c) {
		c->core_err = c->core_err ? c->core_err : err;
		pmv_ini_finish(ini, c, PMV_ERR_PEER_GONE);
	}
	if (pmv_err_conn_lost(err))
		pmv_ini_conn_failed(ini, err);
}

/* The connection is gone (core error err): every commit fails; lock held. */
void pmv_ini_conn_failed(struct pmv_ini *ini, int err)
{
	if (ini->error)
		return;
	PMV_WARN(FI_LOG_EP_DATA, "the connection to the target is gone (%s); "
		 "every commit in flight on this endpoint fails: close it and "
		 "connect again\n",
		 fi_strerror(err));
	pmv_ini_set_error(ini, -FI_ENOTCONN);
	pmv_ini_fail_ring(ini, PMV_ERR_PEER_GONE, err);
}

/*
 * The completion of an internal operation (pmv_iop.h): the data write,
 * flush op or request of a commit, or a probe of the peer (no commit).
 * A closed endpoint's is dropped.
 */
static void pmv_ini_iop_done(struct pmv_iop *iop,
			     const struct fi_cq_err_entry *err)
{
	struct pmv_ini *ini = iop->owner;
	struct pmv_commit *c;

	pmv_lock(&ini->lock, PMV_LOCK_INI);
	/* a probe's answer shows the connection alive, not the target
	 * serving: only acks and our data's completions end the quiet */
	if (iop->kind != PMV_IOP_PROBE)
		ini->quiet_since = 0;
	if (iop->kind == PMV_IOP_PROBE) {
		ini->probing = false;
		if (err && ini->ep) /* the peer cannot answer: gone */
			pmv_ini_conn_failed(ini, (int) err->err);
		pmv_unlock(&ini->lock, PMV_LOCK_INI);
		pmv_ini_unref(ini);
		return;
	}
	c = pmv_ini_commit(ini, iop->cseq);
	if (c && ini->ep) {
		c->iops--;
		if (err) {
			pmv_ini_op_failed(ini, c, (int) err->err);
		} else if (iop->kind == PMV_IOP_FLUSH) {
			c->m->op_done(ini, c);
		} else {
			pmv_ini_try_done(ini, c);
		}
	}
	pmv_unlock(&ini->lock, PMV_LOCK_INI);
	pmv_ini_unref(ini);
}

/*
 * Posts one internal operation to the core (a write, or a read if read is
 * set) with an iop as its context and a completion requested.  Returns
 * the core's answer (-FI_EAGAIN: nothing sent).
 */
static int pmv_ini_post_iop(struct pmv_ini *ini, uint64_t cseq,
			    enum pmv_iop_kind kind,
			    const struct fi_msg_rma *msg, uint64_t flags,
			    bool read)
{
	struct pmv_ep *ep = ini->ep;
	struct fi_msg_rma core_msg = *msg;
	struct pmv_iop *iop;
	ssize_t ret;

	iop = pmv_iop_get(&ep->tx_cq->iops, pmv_ini_iop_done, ini, kind, cseq);
	if (!iop)
		return -FI_EAGAIN;
	core_msg.context = iop;
	flags |= FI_COMPLETION;
	/* the fault points stand where the core would refuse the call */
	pmv_mark(PMV_MARK_CORE_POST);
	ret = pmv_fault(PMV_FAULT_CORE_OP) ? -FI_EIO :
	      pmv_fault(PMV_FAULT_CORE_FULL) ? -FI_EAGAIN :
	      read ? fi_readmsg(ep->core, &core_msg, flags) :
		     fi_writemsg(ep->core, &core_msg, flags);
	pmv_mark(PMV_MARK_CORE_POSTED);
	if (ret) {
		pmv_iop_put(&ep->tx_cq->iops, iop);
		return (int) ret;
	}
	__atomic_add_fetch(&ini->refs, 1, __ATOMIC_ACQ_REL);
	return 0;
}

/* Posts one internal operation of commit c (see pmv_ini_post_iop). */
int pmv_ini_post_op(struct pmv_ini *ini, struct pmv_commit *c,
		    enum pmv_iop_kind kind, const struct fi_msg_rma *msg,
		    uint64_t flags, bool read)
{
	int ret = pmv_ini_post_iop(ini, c->cseq, kind, msg, flags, read);

	if (!ret)
		c->iops++;
	return ret;
}

/*
 * Posts an 8-byte read of the peer's generation word into landing, as an
 * operation of commit c, or with c NULL as a probe of the peer.
 */
int pmv_ini_read_gen(struct pmv_ini *ini, struct pmv_commit *c,
		     enum pmv_iop_kind kind, uint64_t *landing, uint64_t flags)
{
	struct pmv_ep *ep = ini->ep;
	struct iovec iov = { .iov_base = landing, .iov_len = 8 };
	void *desc = fi_mr_desc(ep->inbox.mr);
	struct fi_rma_iov rma = {
		.addr = pmv_peer_gen_addr(&ep->peer), .len = 8,
		.key = ep->peer.inbox_key,
	};
	struct fi_msg_rma msg = {
		.msg_iov = &iov, .desc = &desc, .iov_count = 1,
		.rma_iov = &rma, .rma_iov_count = 1,
	};

	return c ? pmv_ini_post_op(ini, c, kind, &msg, flags, true) :
		   pmv_ini_post_iop(ini, 0, kind, &msg, flags, true);
}

/*
 * Asks the peer whether the connection still carries anything: a read of
 * its generation word.  A dead connection fails it at once (every commit
 * then fails); its completion proves the peer's transport answers.
 */
int pmv_ini_probe(struct pmv_ini *ini)
{
	int ret = pmv_ini_read_gen(ini, NULL, PMV_IOP_PROBE,
				   ini->ep->inbox.probe_word, 0);

	if (!ret)
		ini->probing = true;
	return ret;
}

/* Moves the key's scope into the commit (max extents at most). */
void pmv_ini_take_scope(struct pmv_ini *ini, struct pmv_commit *c,
			unsigned max)
{
	pmv_ini_cover_floor(ini, c);
	c->next = pmv_scope_take_all(&ini->scope, c->key, c->ext,
				     max < PMV_MAX_EXTENTS ? max :
					     PMV_MAX_EXTENTS);
}

/*
 * True if a commit to key older than upto (NULL: any) is in flight whose
 * method is of the agent family (agent_family) or of the flush family.
 */
bool pmv_ini_key_busy(const struct pmv_ini *ini, uint64_t key,
		      const struct pmv_commit *upto, bool agent_family)
{
	const struct pmv_commit *c;
	bool agent;
	uint64_t s;

	for (s = ini->head; s < ini->tail; s++) {
		c = &ini->ring[s % PMV_RING];
		if (c == upto)
			break;
		if (c->state == PMV_C_DONE || c->key != key || !c->m)
			continue;
		agent = c->m->family == PMV_FAMILY_AGENT;
		if (agent == agent_family)
			return true;
	}
	return false;
}

/*
 * A spill request failed: every commit to its key not answered yet fails
 * with it; with none left, the key's next commit fails (scope_lost).
 */
void pmv_ini_spill_failed(struct pmv_ini *ini, const struct pmv_commit *f)
{
	struct pmv_commit *c;
	bool told = false;
	uint64_t s;

	for (s = ini->head; s < ini->tail; s++) {
		c = &ini->ring[s % PMV_RING];
		if (c == f || c->internal || c->reported || c->key != f->key ||
		    c->state == PMV_C_DONE || c->state == PMV_C_FREE ||
		    (c->req_seq && c->req_seq < f->req_seq))
			continue;
		if (!c->status)
			c->status = f->status;
		pmv_ini_try_done(ini, c);
		told = true;
	}
	if (!told) /* the key's next commit fails */
		pmv_fence_note_failure(&ini->scope_lost, f->key);
}
