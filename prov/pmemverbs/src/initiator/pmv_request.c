/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: commit requests and their acks, the initiator's half of the
 * control channel (proto/ has the wire format).
 *
 * A request names the key's scope (and, for the send method, carries the
 * data) and is written into the peer's inbox on the same connection as the
 * writes it covers, so the core places it behind them (FI_ORDER_WAW).  Its
 * ack comes back into this endpoint's inbox, in request order; an ack
 * carries the key's profile and the registration generation it holds in.
 */
#include <string.h>

#include "pmv_initiator.h"
#include "pmv_timeline.h"

bool pmv_req_room(const struct pmv_ini *ini)
{
	return ini->next_req - ini->acked_req <= PMV_SLOTS;
}

/* Bytes of a send request without the scope's extents. */
uint64_t pmv_send_bytes(const struct fi_msg_rma *msg)
{
	return sizeof(struct pmv_req) + sizeof(struct pmv_extent) +
	       msg->rma_iov[0].len;
}

/* Extents of the key's scope that fit beside msg's data in one request. */
unsigned pmv_send_scope_room(const struct pmv_ini *ini,
			     const struct fi_msg_rma *msg)
{
	uint64_t used = pmv_send_bytes(msg);
	uint32_t slot = pmv_ep_slot_bytes(ini->ep);

	return used > slot ? 0 :
	       (unsigned) ((slot - used) / sizeof(struct pmv_extent));
}

/* Appends msg's destination and data to a request holding its extents. */
void pmv_send_fill(struct pmv_req *req, const struct fi_msg_rma *msg)
{
	struct pmv_extent *inl = pmv_req_inline(req);
	uint8_t *data = pmv_req_inline_data(req);
	size_t i;

	req->flags |= PMV_REQ_INLINE;
	inl->addr = msg->rma_iov[0].addr;
	inl->len = msg->rma_iov[0].len;
	for (i = 0; i < msg->iov_count; i++) {
		memcpy(data, msg->msg_iov[i].iov_base, msg->msg_iov[i].iov_len);
		data += msg->msg_iov[i].iov_len;
	}
}

/*
 * Builds commit c's request as the next request seq into buf (cap bytes),
 * naming the key's scope (and, for a send commit, inl's data); the
 * extents it took from the scope go to taken (*ntaken of them); flags
 * adds PMV_REQ_* flags.  Returns its encoded length.
 */
static size_t pmv_req_build(struct pmv_ini *ini, struct pmv_commit *c,
			    const struct fi_msg_rma *inl, uint32_t fence_back,
			    uint64_t *buf, size_t cap, struct pmv_extent *taken,
			    unsigned *ntaken, uint32_t flags)
{
	struct pmv_req *req = (struct pmv_req *) buf;
	uint32_t slot = pmv_ep_slot_bytes(ini->ep);

	memset(buf, 0, cap);
	req->seq = ini->next_req;
	req->key = c->key;
	req->data = c->data;
	req->flags = flags | ((c->flags & FI_IMMED) ? PMV_REQ_IMMED : 0);
	pmv_ini_cover_floor(ini, c);
	req->gen = c->floor;
	if (fence_back) {
		req->flags |= PMV_REQ_FENCE;
		req->fence_back = fence_back;
	}
	req->nextents = pmv_scope_take(&ini->scope, c->key, req->ext,
				       inl ? pmv_send_scope_room(ini, inl) :
					     pmv_req_max_extents(slot));
	if (inl)
		pmv_send_fill(req, inl);
	*ntaken = req->nextents;
	memcpy(taken, req->ext, req->nextents * sizeof(taken[0]));
	return pmv_req_encode(req, cap);
}

/* A request that did not go: its extents go back to the key's scope,
 * with the generation of the oldest write among them. */
static void pmv_req_untake(struct pmv_ini *ini, struct pmv_commit *c,
			   const struct pmv_extent *taken, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++)
		pmv_commit_scope_add(ini, c, taken[i].addr, taken[i].len,
				     c->floor);
}

/* The request just posted is commit c's, as request seq next_req. */
static void pmv_req_sent(struct pmv_ini *ini, struct pmv_commit *c)
{
	c->req_seq = ini->next_req++;
	c->answered = false;
	ini->req_commit[(c->req_seq - 1) % PMV_SLOTS] = c->cseq;
	ini->ep->counters.requests_sent++;
}

/* The remote segment of the peer's request slot for the next request. */
static struct fi_rma_iov pmv_req_slot(const struct pmv_ini *ini, size_t len)
{
	return (struct fi_rma_iov) {
		.addr = pmv_peer_req_addr(&ini->ep->peer, ini->next_req),
		.len = len, .key = ini->ep->peer.inbox_key,
	};
}

/*
 * Toward a gated peer a request sent on its own carries remote CQ data
 * too, naming the gate and its seq (it is not gated: write-after-write
 * ordering already places it after its data): the peer then learns of
 * every request from its receive CQ (pmv_serve_gates), and looks into no
 * inbox on its reads.  The flag to post msg with.
 */
static uint64_t pmv_req_gate_data(const struct pmv_ini *ini,
				  struct fi_msg_rma *msg)
{
	if (!ini->ep->peer.gated)
		return 0;
	msg->data = pmv_gate_data(ini->ep->peer.gate_id, ini->next_req);
	return FI_REMOTE_CQ_DATA;
}

/*
 * Sends commit c's request as the next request seq (see pmv_req_build).
 * fence_back > 0 asks the agent to refuse it if one of the fence_back
 * requests before it, to the same key, failed.  0, or the core's error
 * with nothing sent (scope kept).
 */
int pmv_req_send(struct pmv_ini *ini, struct pmv_commit *c,
		 const struct fi_msg_rma *inl, uint32_t fence_back)
{
	uint64_t buf[PMV_REQ_BUF_WORDS];
	struct pmv_extent taken[PMV_MAX_EXTENTS];
	struct iovec iov = { .iov_base = buf };
	struct fi_rma_iov rma;
	struct fi_msg_rma msg = { .msg_iov = &iov, .iov_count = 1,
				  .rma_iov = &rma, .rma_iov_count = 1 };
	uint32_t max = pmv_req_max_extents(pmv_ep_slot_bytes(ini->ep));
	unsigned ntaken;
	int ret;

	ret = pmv_req_spill(ini, c, inl ? pmv_send_scope_room(ini, inl) : max,
			    &fence_back);
	if (!ret) {
		iov.iov_len = pmv_req_build(ini, c, inl, fence_back, buf,
					    sizeof(buf), taken, &ntaken, 0);
		rma = pmv_req_slot(ini, iov.iov_len);
		ret = pmv_ini_post_op(ini, c, PMV_IOP_REQ, &msg,
				      FI_INJECT | pmv_req_gate_data(ini, &msg),
				      false);
		if (ret)
			pmv_req_untake(ini, c, taken, ntaken);
	}
	if (ret)
		return ret;
	pmv_req_sent(ini, c);
	return 0;
}

/*
 * True if commit c's data and its request can go as one core write:
 * over the tcp core toward a gated peer (see pmv_req_post_joined), with a
 * segment to spare,
 * and not an FI_INJECT commit (the request's bytes stay in c until the
 * write completes; injected data would not).
 */
bool pmv_req_can_join(const struct pmv_ini *ini, const struct pmv_commit *c,
		      const struct fi_msg_rma *msg)
{
	const struct pmv_domain *dom = ini->ep->domain;

	return pmv_params.join_request && dom->transport == PMV_TRANSPORT_TCP &&
	       ini->ep->peer.gated && !(c->flags & FI_INJECT) && msg->iov_count &&
	       msg->rma_iov_count <
	       pmv_req_max_extents(pmv_ep_slot_bytes(ini->ep)) &&
	       msg->iov_count < pmv_limit(PMV_MAX_IOV, dom->iov_limit) &&
	       msg->rma_iov_count < pmv_limit(PMV_MAX_IOV, dom->rma_iov_limit);
}

/*
 * Sends msg's data and commit c's request as one core write whose last
 * segment is the request slot: one message per commit instead of two.
 * No libfabric rule orders one write's segments ("RMA ordering applies
 * between two operations, and not within a single data transfer",
 * fi_endpoint(3)), so the request is gated (PMV_REQ_GATED): the write
 * carries remote CQ data naming the peer's gate and the request's seq,
 * and the peer serves it only once that write's completion is read
 * (fi_cq(3): the data is then available in the target buffer).  0, or
 * the core's error with nothing sent (msg's ranges are then in the key's
 * scope: a later commit persists them, which costs time, never
 * durability).
 */
static int pmv_req_post_joined(struct pmv_ini *ini, struct pmv_commit *c,
			       const struct fi_msg_rma *msg, uint32_t back)
{
	struct pmv_extent taken[PMV_MAX_EXTENTS];
	struct iovec iov[PMV_MAX_IOV];
	void *desc[PMV_MAX_IOV] = { NULL };
	struct fi_rma_iov rma[PMV_MAX_IOV];
	struct fi_msg_rma all = *msg;
	size_t i, n = msg->iov_count, r = msg->rma_iov_count, len;
	unsigned ntaken;
	int ret;

	for (i = 0; i < r; i++) {
		rma[i] = msg->rma_iov[i];
		pmv_commit_scope_add(ini, c, rma[i].addr, rma[i].len,
				     ini->scope.gen);
	}
	for (i = 0; i < n; i++) {
		iov[i] = msg->msg_iov[i];
		desc[i] = msg->desc ? msg->desc[i] : NULL;
	}
	len = pmv_req_build(ini, c, NULL, back, c->req_buf, sizeof(c->req_buf),
			    taken, &ntaken, PMV_REQ_GATED);
	iov[n] = (struct iovec) { .iov_base = c->req_buf, .iov_len = len };
	rma[r] = pmv_req_slot(ini, len);
	all.msg_iov = iov;
	all.desc = desc;
	all.iov_count = n + 1;
	all.rma_iov = rma;
	all.rma_iov_count = r + 1;
	all.data = pmv_gate_data(ini->ep->peer.gate_id, ini->next_req);
	ret = pmv_ini_post_op(ini, c, PMV_IOP_REQ, &all, FI_REMOTE_CQ_DATA,
			      false);
	if (ret) {
		pmv_req_untake(ini, c, taken, ntaken);
		return ret;
	}
	pmv_req_sent(ini, c);
	return 0;
}

/* The extents that do not fit go ahead (spills), then data and request. */
int pmv_req_send_joined(struct pmv_ini *ini, struct pmv_commit *c,
			const struct fi_msg_rma *msg)
{
	uint32_t max = pmv_req_max_extents(pmv_ep_slot_bytes(ini->ep)), back = 0;
	int ret;

	/* before msg's ranges join the scope: a spill goes ahead of its data */
	ret = pmv_req_spill(ini, c, max - (uint32_t) msg->rma_iov_count, &back);
	if (!ret)
		ret = pmv_req_post_joined(ini, c, msg, back);
	return ret;
}

/* Copies an ack out of the inbox; false if it is not (yet) seq's ack. */
static bool pmv_read_ack(struct pmv_ep *ep, uint64_t seq, struct pmv_ack *out)
{
	return pmv_ack_decode(pmv_inbox_ack(&ep->inbox, seq), seq, out);
}

/*
 * Ends request seq's commit: with the ack's status and facts if ack is
 * its own, else (covered by a later request's ack) successfully.
 */
static void pmv_ini_ack_one(struct pmv_ini *ini, uint64_t seq,
			    const struct pmv_ack *ack)
{
	struct pmv_commit *c;

	pmv_mark(PMV_MARK_ACK_SEEN);
	ini->acked_req = seq;
	c = pmv_ini_commit(ini, ini->req_commit[(seq - 1) % PMV_SLOTS]);
	if (!c)
		return;
	if (ack)
		pmv_ini_learn_gen(ini, ack->mr_gen);
	if (ack && !ack->status)
		pmv_ini_remember_fact(ini, c->key, ack->profile,
				      ack->target_flags, ack->mr_gen);
	pmv_ini_finish(ini, c, ack ? ack->status : 0);
}

/*
 * Reads acks in sequence order: each lands in the slot of the first
 * request it covers and ends up to covers requests (never more than were
 * sent, whatever a target claims).
 */
void pmv_ini_poll_acks(struct pmv_ini *ini)
{
	struct pmv_ack ack;
	uint64_t first, n;

	while (ini->acked_req + 1 < ini->next_req) {
		first = ini->acked_req + 1;
		if (!pmv_read_ack(ini->ep, first, &ack))
			return;
		ini->quiet_since = 0; /* the peer answered */
		n = ack.covers ? ack.covers : 1;
		if (n > ini->next_req - first)
			n = ini->next_req - first;
		for (uint64_t k = 0; k + 1 < n; k++)
			pmv_ini_ack_one(ini, first + k, NULL);
		pmv_ini_ack_one(ini, first + n - 1, &ack);
	}
}

/*
 * Spill requests: extents a commit's request cannot carry.
 *
 * A key's scope keeps distant writes apart (pmv_scope.c), so it may hold
 * more extents than one request slot does.  Before a commit's own request,
 * the extents that do not fit go ahead in internal requests ("spills") on
 * the same connection: they are placed behind the writes they name and
 * the agent serves them in order, before the commit's request.  A spill
 * that fails fails every commit to its key not yet answered (and, when
 * none is left, the key's next commit), so a commit never completes with
 * a spilled range of its scope not durable.  A fenced commit's request
 * also asks the agent to check the spills (fence_back), so its data is not
 * placed after a failed one.
 */
/*
 * Spill requests per commit at most: the ring keeps the commit, which
 * cannot retire before its spills, and them.  Past this, the scope's
 * closest extents merge whatever lies between them.
 */
#define PMV_SPILL_MAX (PMV_RING / 4)

/* Room in the peer's slots for n more requests. */
static bool pmv_req_room_n(const struct pmv_ini *ini, uint64_t n)
{
	return ini->next_req + n - 1 - ini->acked_req <= PMV_SLOTS;
}

/* Sends one spill of key's first extents (room left for one more). */
static int pmv_spill_one(struct pmv_ini *ini, uint64_t key)
{
	struct pmv_commit *f;
	int ret;

	if (pmv_ini_ring_full(ini) || !pmv_req_room_n(ini, 2))
		return -FI_EAGAIN;
	f = pmv_ini_commit_new(ini, NULL, 0);
	f->key = key;
	f->internal = true;
	f->spill = true;
	f->m = pmv_method_ops(FI_PMEM_METHOD_AGENT); /* served in order */
	ret = pmv_req_send(ini, f, NULL, 0);
	if (ret)
		pmv_ini_commit_drop(ini, f);
	return ret;
}

int pmv_req_spill(struct pmv_ini *ini, struct pmv_commit *c, unsigned room,
		  uint32_t *fence_back)
{
	unsigned max = pmv_req_max_extents(pmv_ep_slot_bytes(ini->ep));
	uint64_t first = ini->next_req;
	int ret = 0;

	if (c->spill)
		return 0;
	pmv_scope_fit(&ini->scope, c->key, room + PMV_SPILL_MAX * max, true);
	while (!ret && pmv_scope_fit(&ini->scope, c->key, room, false) > room)
		ret = pmv_spill_one(ini, c->key);
	if ((c->flags & FI_FENCE) && ini->next_req - first > *fence_back)
		*fence_back = (uint32_t) (ini->next_req - first);
	return ret;
}
