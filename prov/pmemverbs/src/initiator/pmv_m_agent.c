/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: the agent method, and the commit requests it shares with send.
 *
 *   1. the commit's data goes to the core as a plain write;
 *   2. a commit request naming every range written to the key since its
 *      last commit follows on the same connection, written into the peer's
 *      inbox, so the core places it behind those writes (FI_ORDER_WAW);
 *   3. the target's agent persists the ranges and writes an ack back into
 *      this endpoint's inbox;
 *   4. the ack, found when the application reads its CQ, completes the
 *      commit.
 * A request that cannot follow its data at once (the core is busy) waits
 * in the ring and goes from the engine's progress; no later commit
 * overtakes it.
 */
#include <string.h>

#include "pmv_initiator.h"

static int pmv_agent_can_post(struct pmv_ini *ini, const struct fi_msg_rma *msg,
			      uint64_t flags)
{
	(void) msg;
	(void) flags;
	return pmv_req_room(ini) ? 0 : -FI_EAGAIN;
}

/*
 * The data (plain write, FI_MORE: the request follows), then the request;
 * over tcp both in one write (pmv_req_send_joined).
 */
static int pmv_agent_post(struct pmv_ini *ini, struct pmv_commit *c,
			  const struct fi_msg_rma *msg)
{
	uint64_t flags = (c->flags & FI_INJECT) | FI_MORE;
	size_t i;
	int ret;

	if (pmv_req_can_join(ini, c, msg)) {
		ret = pmv_req_send_joined(ini, c, msg);
		return ret == -FI_EAGAIN ? ret : ret ? PMV_ERR_PEER_GONE : 0;
	}
	if (msg->iov_count) {
		ret = pmv_ini_post_op(ini, c, PMV_IOP_DATA, msg, flags, false);
		if (ret)
			return ret == -FI_EAGAIN ? ret : PMV_ERR_PEER_GONE;
		for (i = 0; i < msg->rma_iov_count; i++)
			pmv_commit_scope_add(ini, c, msg->rma_iov[i].addr,
					     msg->rma_iov[i].len,
					     ini->scope.gen);
	}
	ret = pmv_req_send(ini, c, NULL, 0);
	if (ret == -FI_EAGAIN && msg->iov_count) {
		c->state = PMV_C_DEFERRED;
		ini->deferred++;
		return 0;
	}
	return ret == -FI_EAGAIN ? ret : ret ? PMV_ERR_PEER_GONE : 0;
}

/* A deferred request goes now, or later (-FI_EAGAIN). */
static int pmv_agent_resume(struct pmv_ini *ini, struct pmv_commit *c)
{
	int ret;

	if (!pmv_req_room(ini))
		return -FI_EAGAIN;
	ret = pmv_req_send(ini, c, NULL, 0);
	if (ret && ret != -FI_EAGAIN)
		pmv_ini_finish(ini, c, PMV_ERR_PEER_GONE);
	return ret == -FI_EAGAIN ? ret : 0;
}

/*
 * A read-flush commit found the target's regions changed: the agent now
 * persists the ranges it covered (its data is already placed).  The
 * commit's method becomes agent; its request goes now or from progress.
 */
static int pmv_agent_take_over(struct pmv_ini *ini, struct pmv_commit *c)
{
	unsigned i;

	for (i = 0; i < c->next; i++)
		pmv_commit_scope_add(ini, c, c->ext[i].addr, c->ext[i].len,
				     c->floor);
	c->m = &pmv_m_agent;
	c->answered = false;
	if (pmv_req_room(ini) && !ini->deferred &&
	    !pmv_req_send(ini, c, NULL, 0))
		return 0;
	c->state = PMV_C_DEFERRED;
	ini->deferred++;
	return 0;
}

/* Sends an internal request that flushes the key's scope; lock held. */
static int pmv_agent_flush_scope(struct pmv_ini *ini, uint64_t key)
{
	struct pmv_commit *f;
	int ret;

	if (pmv_ini_ring_full(ini) || !pmv_req_room(ini))
		return -FI_EAGAIN;
	f = pmv_ini_commit_new(ini, NULL, 0);
	f->key = key;
	f->internal = true;
	f->m = &pmv_m_agent;
	ret = pmv_req_send(ini, f, NULL, 0);
	if (ret) {
		pmv_ini_commit_drop(ini, f);
		return ret == -FI_EAGAIN ? ret : PMV_ERR_PEER_GONE;
	}
	return 0;
}

/*
 * FI_FENCE for an agent commit: it waits for the key's read-flush and
 * completion commits (their flush op proves placement, not durability),
 * then the key's scope is flushed by an internal request.  If the data
 * then fits the fenced method (send) it goes by it at once (the agent
 * serves requests in order, and checks the flush's status); otherwise it
 * waits (-FI_EAGAIN) until every older commit to the key has completed.
 */
static int pmv_agent_fence(struct pmv_ini *ini,
			   const struct pmv_method_ops **m,
			   const struct fi_msg_rma *msg)
{
	const struct pmv_method_ops *fenced = pmv_method_ops((*m)->fenced);
	uint64_t key = msg->rma_iov[0].key;
	int ret;

	if (pmv_ini_key_busy(ini, key, NULL, false))
		return -FI_EAGAIN;
	if (!pmv_scope_empty(&ini->scope, key) &&
	    (ret = pmv_agent_flush_scope(ini, key)))
		return ret;
	if (fenced && pmv_method_may_take(fenced->id) &&
	    pmv_method_fit(ini, fenced, msg) == fenced) {
		*m = fenced;
		return 0;
	}
	return pmv_ini_key_busy(ini, key, NULL, true) ? -FI_EAGAIN : 0;
}

static void pmv_agent_op_done(struct pmv_ini *ini, struct pmv_commit *c)
{
	(void) ini;
	(void) c;
}

const struct pmv_method_ops pmv_m_agent = {
	.id = FI_PMEM_METHOD_AGENT,
	.family = PMV_FAMILY_AGENT,
	.overlap = PMV_OVERLAP_RANGES,
	.fence = pmv_agent_fence,
	.fenced = FI_PMEM_METHOD_SEND,
	.take_over = pmv_agent_take_over,
	.can_post = pmv_agent_can_post,
	.post = pmv_agent_post,
	.resume = pmv_agent_resume,
	.op_done = pmv_agent_op_done,
};
