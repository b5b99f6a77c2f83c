/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: serving commit requests on the target.
 *
 * For one endpoint: reads the next request out of its inbox (the core
 * places it behind the data writes it covers), decodes and validates it
 * with proto/ against the domain's MR table before touching memory,
 * persists each extent with the region's persist function (target/
 * pmv_profile.c), places and persists the data a send request carries
 * (after the extents: that is the fence), raises the FI_IMMED target
 * completion, and writes the ack back into the initiator's inbox.  The
 * agent thread (pmv_agent.c) and the application's reads (pmv_serve_hooks.c)
 * call it; every persisted range goes to the oracle (pmv_oracle.c).  One
 * request's validation and persistence: pmv_serve_commit.c.
 */
#include <endian.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pmv.h"
#include "target/pmv_target.h"
#include "pmv_timeline.h"

/* Raises the FI_IMMED completion in the target endpoint's receive CQ. */
static void pmv_agent_immed(struct pmv_cq *rx, const struct pmv_req *req)
{
	struct fi_cq_err_entry e = {
		.flags = FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA,
		.data = req->data,
	};

	pmv_cq_push(rx, &e, false); /* wakes pmemverbs's own sleeps */
	if (rx->core) /* a reader blocked in the core wakes */
		(void) fi_cq_signal(rx->core);
}

/* Copies the request for seq out of the inbox; false if not there (yet). */
static bool pmv_agent_read_req(struct pmv_ep *ep, uint64_t seq,
			       struct pmv_req *out, size_t out_size)
{
	struct pmv_req *slot = pmv_inbox_req(&ep->inbox, seq);
	size_t avail = ep->inbox.slot_size < out_size ?
		       ep->inbox.slot_size : out_size;

	/* one load while nothing has come: the slot's seq, little-endian */
	if (le64toh(__atomic_load_n(&slot->seq, __ATOMIC_ACQUIRE)) != seq)
		return false;
	return pmv_req_decode(slot, avail, seq, out) > 0;
}

/*
 * Posts an ack into the peer's inbox with fi_inject_write: no completion,
 * so a busy target's CQ and threads are not woken once per ack (a
 * completion per ack cost about a fifth of a DMP commit's latency over
 * tcp).  An ack that fails means the connection broke: the initiator
 * learns it from its own probe, and the context-less error entry the core
 * raises is not shown to the application (pmv_cq.c).
 */
static ssize_t pmv_agent_post_ack(struct pmv_ep *ep, uint64_t seq,
				  const struct pmv_ack *wire)
{
	return fi_inject_write(ep->core, wire, sizeof(*wire), 0,
			       pmv_peer_ack_addr(&ep->peer, seq),
			       ep->peer.inbox_key);
}

/*
 * Writes one ack for every request served since the last ack: into the
 * slot of the first, covering up to the last, with the last one's status
 * (a failed request is acked before the next is served, so the others
 * succeeded).  False if the core is busy.
 */
static bool pmv_agent_send_ack(struct pmv_ep *ep)
{
	uint64_t first = ep->tgt->agent_acked + 1;
	struct pmv_ack ack = {
		.seq = first,
		.covers = (uint16_t) (ep->tgt->agent_unacked - first + 1),
		.status = ep->tgt->agent_status,
		.profile = ep->tgt->agent_profile,
		.target_flags = pmv_params.ddio ? 0 : PMV_ACK_DDIO_OFF,
		.mr_gen = ep->tgt->agent_gen,
	};
	ssize_t ret;

	pmv_ack_encode(&ack);
	pmv_mark(PMV_MARK_ACK);
	ret = pmv_agent_post_ack(ep, first, &ack);
	pmv_mark(PMV_MARK_ACKED);
	if (ret == -FI_EAGAIN)
		return false;
	if (ret && pmv_ep_first_warning(ep, PMV_WARNED_ACK))
		PMV_WARN(FI_LOG_DOMAIN, "agent: the core refused to send the "
			 "ack of request %llu: %s (%d); the peer's commits "
			 "it covers fail when the peer times out, and it must "
			 "connect again (warned once per endpoint)\n",
			 (unsigned long long) ep->tgt->agent_unacked,
			 fi_strerror((int) -ret), (int) ret);
	ep->tgt->agent_acked = ep->tgt->agent_unacked;
	__atomic_store_n(&ep->tgt->agent_unacked, 0, __ATOMIC_RELAXED);
	return true;
}

/*
 * Requests acked together, at most: past it the pass acks what it served
 * so far, so that a long pass of slow persists (msync) does not hold back
 * the first commits' completions.
 */
#define PMV_ACK_BATCH 16

/* True if the served requests must be acked before the next is served: the
 * last one failed (its status is its own), or the batch is full. */
static bool pmv_agent_must_ack(const struct pmv_ep *ep)
{
	return ep->tgt->agent_unacked &&
	       (ep->tgt->agent_status ||
		ep->tgt->agent_unacked - ep->tgt->agent_acked >= PMV_ACK_BATCH);
}

/*
 * The request just done is the one to ack, and the next is expected.  Its
 * server holds serve_lock; CQ readers peek at both (pmv_serve_pending), so
 * they are stored atomically.
 */
static void pmv_agent_advance(struct pmv_ep *ep)
{
	uint64_t seq = ep->tgt->agent_seq;

	__atomic_store_n(&ep->tgt->agent_unacked, seq, __ATOMIC_RELAXED);
	__atomic_store_n(&ep->tgt->agent_seq, seq + 1, __ATOMIC_RELAXED);
}

/*
 * A fenced request names how many requests back to look: if one of them,
 * to its key, failed, the fenced data must not be placed.  A slot refused
 * as corrupt names no key to trust: it breaks every fence that sees it.
 * (The initiator's fence_back reaches its oldest request to the key still
 * unacked, under PMV_SLOTS back: agent_hist still holds it; older
 * failures it has read in their acks, and fails the fence itself.)
 */
static bool pmv_agent_fence_broken(const struct pmv_ep *ep,
				   const struct pmv_req *req)
{
	const struct pmv_agent_hist *h;
	uint64_t s;

	if (!(req->flags & PMV_REQ_FENCE))
		return false;
	for (s = req->seq - req->fence_back; s < req->seq; s++) {
		h = &ep->tgt->agent_hist[(s - 1) % PMV_SLOTS];
		if (h->seq == s && h->status &&
		    (h->key == req->key || h->status == PMV_ERR_BAD_REQUEST))
			return true;
	}
	return false;
}

/*
 * Serves one request and remembers its outcome for later fences; rx, if
 * not NULL, has room reserved for the request's FI_IMMED entry.
 */
static void pmv_agent_serve_req(struct pmv_domain *dom, struct pmv_ep *ep,
				struct pmv_req *req, struct pmv_cq *rx)
{
	struct pmv_agent_hist *h = &ep->tgt->agent_hist[(req->seq - 1) % PMV_SLOTS];

	pmv_mark(PMV_MARK_SERVE);
	ep->tgt->agent_status = pmv_agent_fence_broken(ep, req) ? PMV_ERR_FENCE :
			   pmv_agent_commit(dom, ep, req);
	pmv_mark(PMV_MARK_SERVED);
	if (rx && !ep->tgt->agent_status)
		pmv_agent_immed(rx, req);
	else if (rx)
		pmv_cq_unreserve(rx);
	if ((req->flags & PMV_REQ_IMMED) && !ep->tgt->agent_status)
		pmv_ep_cntr_count(ep, PMV_CNTR_REMOTE_WRITE, false);
	*h = (struct pmv_agent_hist) { .seq = req->seq, .key = req->key,
				       .status = ep->tgt->agent_status };
	pmv_agent_advance(ep);
}

/*
 * FI_IMMED entries the target application has not read yet, past which
 * the agent stops serving FI_IMMED requests (the initiators then see their
 * rings fill: -FI_EAGAIN), so that a flood cannot grow memory for ever.
 */
#define PMV_IMMED_BACKLOG 65536

/*
 * The receive CQ that gets req's FI_IMMED entry, with room reserved in it
 * (NULL: none to raise).  False: the request must wait (backlog full, or
 * no memory for the entry).
 */
static bool pmv_agent_immed_room(struct pmv_ep *ep, const struct pmv_req *req,
				 struct pmv_cq **rx)
{
	*rx = (req->flags & PMV_REQ_IMMED) ?
	      __atomic_load_n(&ep->rx_cq, __ATOMIC_ACQUIRE) : NULL;
	return !*rx || (pmv_cq_backlog(*rx) < PMV_IMMED_BACKLOG &&
			!pmv_cq_reserve(*rx));
}

/* Remembers what the slot of the request just done holds (pmv_serve_pending). */
static void pmv_agent_slot_done(struct pmv_ep *ep, uint64_t seq)
{
	struct pmv_req *slot = pmv_inbox_req(&ep->inbox, seq);

	__atomic_store_n(&ep->tgt->slot_sum[(seq - 1) % PMV_SLOTS],
			 __atomic_load_n(&slot->checksum, __ATOMIC_RELAXED),
			 __ATOMIC_RELAXED);
}

static bool pmv_serve_slot_written(struct pmv_ep *ep);

/*
 * True once the slot for the expected seq has held something other than
 * its previous occupant's seq (a slot still empty) and no request that
 * can be served for limit_ms: FI_PMEMVERBS_BAD_REQUEST_MS for one that is
 * corrupt, malformed, out of sequence, or torn and never finished (a
 * request still arriving is valid within microseconds);
 * pmv_gate_wait_ms() for a whole gated request whose write's completion
 * was not read yet.
 */
static bool pmv_agent_slot_bad(struct pmv_ep *ep, uint64_t limit_ms)
{
	uint64_t seq = ep->tgt->agent_seq, now;

	/* the slot only: an ack still unsent must not time an empty slot */
	if (!pmv_serve_slot_written(ep)) {
		ep->tgt->bad_seq = 0; /* empty again: a later write starts afresh */
		return false;
	}
	now = pmv_ms_now();
	if (ep->tgt->bad_seq != seq) {
		ep->tgt->bad_seq = seq;
		ep->tgt->bad_since_ms = now;
		return false;
	}
	return now - ep->tgt->bad_since_ms >= limit_ms;
}

/*
 * How long a whole gated request waits for its write's completion to be
 * read before it is refused: that read depends on the target's threads
 * being scheduled (seen over 100 ms on a loaded host), so the peer's
 * commit timeout, not the bound for malformed bytes; a peer that never
 * sends the completion stalls only its own connection meanwhile.
 */
static uint64_t pmv_gate_wait_ms(void)
{
	uint64_t t = pmv_params.peer_timeout_ms > 0 ?
		     (uint64_t) pmv_params.peer_timeout_ms : 10000;

	return t > (uint64_t) pmv_params.bad_request_ms ? t :
	       (uint64_t) pmv_params.bad_request_ms;
}

/*
 * Acks the expected seq with PMV_ERR_BAD_REQUEST and moves past it.  The
 * slot gets that seq back, as a served slot has, so that it reads as
 * empty when its turn comes again.
 */
static void pmv_agent_refuse_slot(struct pmv_ep *ep)
{
	struct pmv_tgt *tgt = ep->tgt;
	struct pmv_agent_hist *h = &tgt->agent_hist[(tgt->agent_seq - 1) %
						    PMV_SLOTS];
	struct pmv_req *slot = pmv_inbox_req(&ep->inbox, ep->tgt->agent_seq);

	if (!ep->tgt->bad_refused++ || !(ep->tgt->bad_refused & 1023))
		PMV_WARN(FI_LOG_EP_DATA, "agent: request slot %llu held no "
			 "valid request for %d ms (corrupt, malformed or out "
			 "of sequence; %llu refused on this endpoint): acked "
			 "as an error, its commit fails with FI_EINVAL\n",
			 (unsigned long long) ep->tgt->agent_seq,
			 pmv_params.bad_request_ms,
			 (unsigned long long) ep->tgt->bad_refused);
	__atomic_store_n(&slot->seq, htole64(ep->tgt->agent_seq), __ATOMIC_RELEASE);
	ep->tgt->agent_status = PMV_ERR_BAD_REQUEST;
	*h = (struct pmv_agent_hist) { .seq = ep->tgt->agent_seq,
				       .status = PMV_ERR_BAD_REQUEST };
	ep->tgt->bad_seq = 0;
	pmv_agent_advance(ep);
}

/* Serves the requests waiting in one endpoint's inbox; returns how many. */
int pmv_serve_ep(struct pmv_domain *dom, struct pmv_ep *ep)
{
	uint64_t buf[256 / sizeof(uint64_t)];
	struct pmv_req *req = (struct pmv_req *) buf;
	struct pmv_cq *rx;
	int served = 0;

	while (served < PMV_SLOTS) {
		if (pmv_agent_must_ack(ep) && !pmv_agent_send_ack(ep))
			return served;
		if (!pmv_agent_read_req(ep, ep->tgt->agent_seq, req, sizeof(buf))) {
			if (!pmv_agent_slot_bad(ep, pmv_params.bad_request_ms))
				break;
			pmv_agent_refuse_slot(ep);
		} else if (pmv_serve_gate_shut(ep, req)) {
			/* its write's completion never read: refused, as a
			 * slot without a valid request is, but later */
			if (!pmv_agent_slot_bad(ep, pmv_gate_wait_ms()))
				break;
			pmv_agent_refuse_slot(ep);
		} else if (!pmv_agent_immed_room(ep, req, &rx)) {
			break;
		} else {
			pmv_agent_serve_req(dom, ep, req, rx);
		}
		pmv_agent_slot_done(ep, ep->tgt->agent_unacked);
		served++;
	}
	if (ep->tgt->agent_unacked)
		(void) pmv_agent_send_ack(ep); /* the pass's cumulative ack */
	return served;
}

/* Serves ep unless another thread (the agent, a CQ reader) is; served. */
int pmv_serve_try(struct pmv_domain *dom, struct pmv_ep *ep)
{
	int served;

	if (!pmv_trylock(&ep->tgt->serve_lock, PMV_LOCK_SERVE))
		return 0;
	served = pmv_serve_ep(dom, ep);
	pmv_unlock(&ep->tgt->serve_lock, PMV_LOCK_SERVE);
	return served;
}

/*
 * True if ep's next slot is not empty: a request, or bytes
 * pmv_agent_slot_bad judges.  Empty: the previous lap's seq and the
 * checksum field the slot had when that request was done (all zeros before
 * the first lap); a few loads.
 */
static bool pmv_serve_slot_written(struct pmv_ep *ep)
{
	uint64_t seq = __atomic_load_n(&ep->tgt->agent_seq, __ATOMIC_RELAXED);
	struct pmv_req *slot = pmv_inbox_req(&ep->inbox, seq);

	return le64toh(__atomic_load_n(&slot->seq, __ATOMIC_ACQUIRE)) !=
	       (seq > PMV_SLOTS ? seq - PMV_SLOTS : 0) ||
	       __atomic_load_n(&slot->checksum, __ATOMIC_RELAXED) !=
	       __atomic_load_n(&ep->tgt->slot_sum[(seq - 1) % PMV_SLOTS],
			       __ATOMIC_RELAXED);
}

/* True if ep has an ack to send or its next slot is not empty (a gated
 * request waiting for its completion too: it is timed, as a torn one). */
bool pmv_serve_pending(struct pmv_ep *ep)
{
	return __atomic_load_n(&ep->tgt->agent_unacked, __ATOMIC_RELAXED) ||
	       pmv_serve_slot_written(ep);
}
