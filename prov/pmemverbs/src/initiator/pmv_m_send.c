/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: the send method.
 *
 * The commit's data travels inside its request (PMV_REQ_INLINE, proto/):
 * the target's agent persists the earlier scope the request names, then
 * places the data and persists it.  One round trip for a fenced commit on
 * a key the agent serves, where waiting for the earlier scope would take
 * two.  A fenced request also tells the agent how many requests back to
 * look: if one of them, to the same key, failed, the agent refuses the
 * fenced one (FI_FENCE: earlier writes durable, status 0, before the
 * fenced data is placed).
 *
 * Until its ack, the data of a send commit is not in the target's memory:
 * a later RDMA write could land first and be overwritten by the agent's
 * copy, and a read could return the old bytes.  So while one is in
 * flight, this endpoint's writes, reads and atomics that touch its range
 * return -FI_EAGAIN, and so do an agent commit whose data touches it and
 * a read-flush or completion commit to its key (the engine's overlap
 * rule, pmv_commit.c); a later send goes behind it.  Nothing is queued.
 */
#include <string.h>

#include "pmv_initiator.h"

/*
 * True if msg can travel by send: one remote segment with data, which fits
 * a request with room for at least one extent of a non-empty scope.
 */
bool pmv_send_fits(const struct pmv_ini *ini, const struct fi_msg_rma *msg)
{
	uint32_t slot = pmv_ep_slot_bytes(ini->ep);

	/* the length first: a huge one would wrap pmv_send_bytes */
	if (msg->rma_iov_count != 1 || !msg->rma_iov[0].len ||
	    msg->rma_iov[0].len > slot || pmv_send_bytes(msg) > slot)
		return false;
	return pmv_scope_empty(&ini->scope, msg->rma_iov[0].key) ||
	       pmv_send_scope_room(ini, msg) > 0;
}

/*
 * How many requests back the agent must check for a failure to key: back
 * to the oldest request to key still in flight (0: none is).
 */
uint32_t pmv_send_fence_back(struct pmv_ini *ini, uint64_t key)
{
	const struct pmv_commit *c;
	uint64_t s;

	for (s = ini->head; s < ini->tail; s++) {
		c = &ini->ring[s % PMV_RING];
		if (c->state != PMV_C_DONE && c->key == key && c->req_seq &&
		    !c->answered)
			return (uint32_t) (ini->next_req - c->req_seq);
	}
	return 0;
}

static int pmv_send_can_post(struct pmv_ini *ini, const struct fi_msg_rma *msg,
			     uint64_t flags)
{
	(void) flags;
	if (!pmv_req_room(ini) ||
	    pmv_ini_key_busy(ini, msg->rma_iov[0].key, NULL, false))
		return -FI_EAGAIN;
	return 0;
}

/* One request: the scope's extents, then the data. */
static int pmv_send_post(struct pmv_ini *ini, struct pmv_commit *c,
			 const struct fi_msg_rma *msg)
{
	uint32_t back = (c->flags & FI_FENCE) ?
			pmv_send_fence_back(ini, c->key) : 0;
	int ret = pmv_req_send(ini, c, msg, back);

	if (ret)
		return ret == -FI_EAGAIN ? ret : PMV_ERR_PEER_GONE;
	c->inl = (struct pmv_extent) { .addr = msg->rma_iov[0].addr,
				       .len = msg->rma_iov[0].len };
	__atomic_fetch_add(&ini->sends_busy, 1, __ATOMIC_RELEASE);
	ini->ep->counters.sends++;
	return 0;
}

/* A send commit never waits behind its own data. */
static int pmv_send_resume(struct pmv_ini *ini, struct pmv_commit *c)
{
	(void) ini;
	(void) c;
	return 0;
}

static void pmv_send_op_done(struct pmv_ini *ini, struct pmv_commit *c)
{
	(void) ini;
	(void) c;
}

const struct pmv_method_ops pmv_m_send = {
	.id = FI_PMEM_METHOD_SEND,
	.family = PMV_FAMILY_AGENT,
	.overlap = PMV_OVERLAP_NONE,
	.fits = pmv_send_fits,
	.fallback = FI_PMEM_METHOD_AGENT,
	.can_post = pmv_send_can_post,
	.post = pmv_send_post,
	.resume = pmv_send_resume,
	.op_done = pmv_send_op_done,
};

/* True if [addr, addr + len) meets ext; len 0 stands for the whole key. */
static bool pmv_send_meets(const struct pmv_extent *ext, uint64_t addr,
			   uint64_t len)
{
	return !len || (addr < ext->addr + ext->len && ext->addr < addr + len);
}

/* True if a send commit in flight to key covers bytes of the range. */
bool pmv_send_overlaps(const struct pmv_ini *ini, uint64_t key,
		       uint64_t addr, uint64_t len)
{
	const struct pmv_commit *c;
	uint64_t s;

	for (s = ini->head; s < ini->tail; s++) {
		c = &ini->ring[s % PMV_RING];
		if (c->inl.len && !c->answered && c->key == key &&
		    pmv_send_meets(&c->inl, addr, len))
			return true;
	}
	return false;
}

unsigned pmv_ini_sends_busy(const struct pmv_ep *ep)
{
	return __atomic_load_n(&ep->ini->sends_busy, __ATOMIC_ACQUIRE);
}

/* The slow path of pmv_send_conflict: a send commit is in flight. */
bool pmv_send_conflict_locked(struct pmv_ep *ep, uint64_t key, uint64_t addr,
			      uint64_t len)
{
	struct pmv_ini *ini = ep->ini;
	bool busy;

	pmv_lock(&ini->lock, PMV_LOCK_INI);
	pmv_ini_poll_acks(ini);
	busy = pmv_send_overlaps(ini, key, addr, len);
	pmv_unlock(&ini->lock, PMV_LOCK_INI);
	return busy;
}

/* Fast path (one load while no send commit is in flight): see pmv.h. */
bool pmv_send_conflict(struct pmv_ep *ep, uint64_t key, uint64_t addr,
		       uint64_t len)
{
	return ep->ini && pmv_ini_sends_busy(ep) &&
	       pmv_send_conflict_locked(ep, key, addr, len);
}
