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

bool pmv_req_room(const struct pmv_ini *ini)
{
	return ini->next_req - ini->acked_req <= PMV_SLOTS;
}

/* Bytes of a request this endpoint may send: both sides' slots hold it. */
static uint32_t pmv_req_slot_bytes(const struct pmv_ep *ep)
{
	return ep->peer.slot_size < ep->inbox.slot_size ?
	       ep->peer.slot_size : ep->inbox.slot_size;
}

/*
 * Sends commit c's request as the next request seq, naming the key's scope
 * (and, for a send commit, inl's data).  fence_back > 0 asks the agent to
 * refuse it if one of the fence_back requests before it, to the same key,
 * failed.  0, or the core's error with nothing sent (scope kept).
 */
int pmv_req_send(struct pmv_ini *ini, struct pmv_commit *c,
		 const struct fi_msg_rma *inl, uint32_t fence_back)
{
	struct pmv_ep *ep = ini->ep;
	uint64_t buf[256 / sizeof(uint64_t)];
	struct pmv_req *req = (struct pmv_req *) buf;
	uint32_t slot = pmv_req_slot_bytes(ep);
	struct iovec iov = { .iov_base = buf };
	struct fi_rma_iov rma = { .key = ep->peer.inbox_key };
	struct fi_msg_rma msg = { .msg_iov = &iov, .iov_count = 1,
				  .rma_iov = &rma, .rma_iov_count = 1 };
	unsigned i;
	int ret;

	memset(buf, 0, sizeof(buf));
	req->seq = ini->next_req;
	req->key = c->key;
	req->data = c->data;
	req->flags = (c->flags & FI_IMMED) ? PMV_REQ_IMMED : 0;
	if (fence_back) {
		req->flags |= PMV_REQ_FENCE;
		req->fence_back = fence_back;
	}
	req->nextents = pmv_scope_take(&ini->scope, c->key, req->ext,
				       inl ? pmv_send_scope_room(ini, inl) :
					     pmv_req_max_extents(slot));
	if (inl)
		pmv_send_fill(req, inl);
	iov.iov_len = pmv_req_size(req, sizeof(buf));
	req->checksum = pmv_checksum(req, iov.iov_len);
	rma.addr = pmv_peer_req_addr(&ep->peer, req->seq);
	rma.len = iov.iov_len;
	ret = pmv_ini_post_op(ini, c, PMV_IOP_REQ, &msg, FI_INJECT, false);
	if (ret) {
		for (i = 0; i < req->nextents; i++)
			pmv_scope_add(&ini->scope, c->key, req->ext[i].addr,
				      req->ext[i].len);
		return ret;
	}
	c->req_seq = ini->next_req++;
	c->answered = false;
	ini->req_commit[(c->req_seq - 1) % PMV_SLOTS] = c->cseq;
	ep->counters.requests_sent++;
	return 0;
}

/* Copies an ack out of the inbox; false if it is not (yet) seq's ack. */
static bool pmv_read_ack(struct pmv_ep *ep, uint64_t seq, struct pmv_ack *out)
{
	struct pmv_ack *slot = pmv_inbox_ack(&ep->inbox, seq);
	uint32_t sum;

	if (__atomic_load_n(&slot->seq, __ATOMIC_ACQUIRE) != seq)
		return false;
	memcpy(out, slot, sizeof(*out));
	sum = out->checksum;
	out->checksum = 0;
	return out->seq == seq && pmv_checksum(out, sizeof(*out)) == sum;
}

/* Remembers the profile the peer reported for a key, with its generation. */
static void pmv_remember_fact(struct pmv_ini *ini, uint64_t key,
			      const struct pmv_ack *ack)
{
	unsigned i, slot = ini->facts_next % PMV_PEER_KEYS;

	for (i = 0; i < PMV_PEER_KEYS; i++) {
		if (ini->facts[i].known && ini->facts[i].key == key) {
			slot = i;
			break;
		}
	}
	if (i == PMV_PEER_KEYS)
		ini->facts_next++;
	ini->facts[slot] = (struct pmv_key_fact) {
		.known = true, .key = key, .profile = ack->profile,
		.target_flags = ack->target_flags, .gen = ack->mr_gen,
	};
	/* what was learned in an older generation may name other memory */
	pmv_ini_forget_facts(ini, ack->mr_gen);
}

/* Reads every ack that has arrived, in request order; lock held. */
void pmv_ini_poll_acks(struct pmv_ini *ini)
{
	struct pmv_commit *c;
	struct pmv_ack ack;
	uint64_t seq;

	while (ini->acked_req + 1 < ini->next_req) {
		seq = ini->acked_req + 1;
		if (!pmv_read_ack(ini->ep, seq, &ack))
			return;
		ini->acked_req = seq;
		c = pmv_ini_commit(ini, ini->req_commit[(seq - 1) % PMV_SLOTS]);
		if (!c)
			continue;
		if (c->inl.len)
			__atomic_fetch_sub(&ini->sends_busy, 1, __ATOMIC_RELEASE);
		if (!ack.status)
			pmv_remember_fact(ini, c->key, &ack);
		pmv_ini_finish(ini, c, ack.status);
	}
}

static int pmv_agent_can_post(struct pmv_ini *ini, const struct fi_msg_rma *msg,
			      uint64_t flags)
{
	(void) msg;
	(void) flags;
	return pmv_req_room(ini) ? 0 : -FI_EAGAIN;
}

/* The data (plain write, FI_MORE: the request follows), then the request. */
static int pmv_agent_post(struct pmv_ini *ini, struct pmv_commit *c,
			  const struct fi_msg_rma *msg)
{
	uint64_t flags = (c->flags & FI_INJECT) | FI_MORE;
	size_t i;
	int ret;

	if (msg->iov_count) {
		ret = pmv_ini_post_op(ini, c, PMV_IOP_DATA, msg, flags, false);
		if (ret)
			return ret == -FI_EAGAIN ? ret : PMV_ERR_PEER_GONE;
		for (i = 0; i < msg->rma_iov_count; i++)
			pmv_scope_add(&ini->scope, c->key, msg->rma_iov[i].addr,
				      msg->rma_iov[i].len);
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
int pmv_agent_resend(struct pmv_ini *ini, struct pmv_commit *c)
{
	unsigned i;

	for (i = 0; i < c->next; i++)
		pmv_scope_add(&ini->scope, c->key, c->ext[i].addr,
			      c->ext[i].len);
	c->m = &pmv_m_agent;
	c->answered = false;
	if (pmv_req_room(ini) && !ini->deferred &&
	    !pmv_req_send(ini, c, NULL, 0))
		return 0;
	c->state = PMV_C_DEFERRED;
	ini->deferred++;
	return 0;
}

static void pmv_agent_op_done(struct pmv_ini *ini, struct pmv_commit *c)
{
	(void) ini;
	(void) c;
}

const struct pmv_method_ops pmv_m_agent = {
	.id = FI_PMEM_METHOD_AGENT,
	.can_post = pmv_agent_can_post,
	.post = pmv_agent_post,
	.resume = pmv_agent_resume,
	.op_done = pmv_agent_op_done,
};
