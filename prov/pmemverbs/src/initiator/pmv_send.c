/*
 * pmemverbs: the send method (initiator side).
 *
 * A fenced commit must not let its data be placed before the key's earlier
 * writes are durable.  With the agent method that takes two round trips: a
 * flush-only request, waited for in the call, then the data and its
 * request.  The send method takes one: the data travels inside the request
 * (PMV_REQ_INLINE, pmv_proto.h), and the target's agent persists the
 * earlier scope the request names, then places the data and persists it.
 * It is chosen for fenced commits on keys the agent serves, when the data
 * fits a request slot beside the scope's extents.
 *
 * Until its ack comes back, the data of a send commit is not in the
 * target's memory yet: an RDMA write placed by the NIC could land first
 * and then be overwritten by the agent's copy, and a read could return the
 * old bytes.  So while a send commit is in flight, writes, reads and
 * atomics of this endpoint that touch its range return -FI_EAGAIN, and so
 * does a read-flush or completion commit to its key (whose completion
 * would claim the send's data durable).  Nothing is queued.
 */
#include <string.h>

#include "pmv.h"

/*
 * Bytes of a send request without the scope's extents: the header, the
 * data's extent and the data (one remote segment, as long as the local
 * ones: pmv_commit.c checked).
 */
static uint64_t pmv_send_bytes(const struct fi_msg_rma *msg)
{
	return sizeof(struct pmv_req) + sizeof(struct pmv_extent) +
	       msg->rma_iov[0].len;
}

/* Extents of the key's scope that fit beside msg's data in one request. */
unsigned pmv_send_scope_room(const struct pmv_ep *ep,
			     const struct fi_msg_rma *msg)
{
	uint64_t used = pmv_send_bytes(msg);
	uint32_t slot = pmv_ep_slot_bytes(ep);

	return used > slot ? 0 :
	       (unsigned) ((slot - used) / sizeof(struct pmv_extent));
}

/*
 * True if msg can travel by send: one remote segment with data, which fits
 * a request with room for at least one extent of a non-empty scope.
 */
bool pmv_send_fits(const struct pmv_ep *ep, const struct fi_msg_rma *msg)
{
	uint32_t slot = pmv_ep_slot_bytes(ep);

	/* the length first: a huge one would wrap pmv_send_bytes */
	if (msg->rma_iov_count != 1 || !msg->rma_iov[0].len ||
	    msg->rma_iov[0].len > slot || pmv_send_bytes(msg) > slot)
		return false;
	return pmv_scope_empty(&ep->scope, msg->rma_iov[0].key) ||
	       pmv_send_scope_room(ep, msg) > 0;
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

/* True if [addr, addr + len) meets ext; len 0 stands for the whole key. */
static bool pmv_send_meets(const struct pmv_extent *ext, uint64_t addr,
			   uint64_t len)
{
	return !len || (addr < ext->addr + ext->len && ext->addr < addr + len);
}

/*
 * True if a send commit in flight to key covers bytes of [addr, addr +
 * len) (len 0: any byte of the key); lock held, acks polled.
 */
bool pmv_send_overlaps(const struct pmv_ep *ep, uint64_t key, uint64_t addr,
		       uint64_t len)
{
	const struct pmv_pending *pend;
	uint64_t seq;

	if (!ep->sends_busy)
		return false;
	for (seq = ep->acked_seq + 1; seq < ep->next_seq; seq++) {
		pend = &ep->pend[(seq - 1) % PMV_SLOTS];
		if (pend->inl.len && pend->key == key &&
		    pmv_send_meets(&pend->inl, addr, len))
			return true;
	}
	return false;
}

/* The slow path of pmv_send_conflict: a send commit is in flight. */
bool pmv_send_conflict_locked(struct pmv_ep *ep, uint64_t key, uint64_t addr,
			      uint64_t len)
{
	bool busy;

	pthread_mutex_lock(&ep->lock);
	pmv_poll_acks(ep);
	busy = pmv_send_overlaps(ep, key, addr, len);
	pthread_mutex_unlock(&ep->lock);
	return busy;
}
