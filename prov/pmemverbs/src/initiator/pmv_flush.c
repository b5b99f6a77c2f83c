/*
 * pmemverbs: the read-flush and completion methods, initiator side.
 *
 * read-flush   the commit's data goes as a plain write with no completion,
 *              then an 8-byte fi_read from the peer's inbox follows on the
 *              same connection, posted at once (no wait for the write).
 *              The core orders the read behind the writes (FI_ORDER_RAW),
 *              so its completion proves that every earlier write on the
 *              connection is placed in the target's memory hierarchy:
 *              over RDMA the read's PCIe read flushes the NIC's posted
 *              writes (an RDMA read to any address of the same queue pair
 *              does, seed 000); over tcp the target's progress engine
 *              copied them before it answered.  One round trip, and the
 *              target's CPU is not involved.
 * completion   (WSP on ib/roce) the data write's own completion: the
 *              responder NIC has the data, and its buffers are durable.
 *              A pure flush, having no write, uses a read instead.
 *
 * A fenced flush commit waits in no call: a read is posted first (it
 * proves every earlier write placed), then the data with the core's
 * FI_FENCE (the core starts it only once that read has completed; the tcp
 * core places a connection's writes in order anyway), then the commit's
 * own read.  One round trip more on the wire, none in software.
 *
 * The flush op carries an internal context (PMV_ICTX_FLUSH_OP); when the
 * application reads the CQ, its entry becomes the commit's completion.
 * Flush commits have their own ring of PMV_SLOTS, independent of the
 * agent's request numbering.
 */
#include "pmv.h"

/* A flush op that cannot be posted after its data is retried this long. */
#define PMV_FLUSH_POST_TIMEOUT_MS 30000

static unsigned pmv_flush_slot(const struct pmv_ep *ep)
{
	return (unsigned) (ep->next_fseq % PMV_SLOTS);
}

/* Free slots for the commit: two for a fenced one (its fence's read). */
bool pmv_flush_can_post(const struct pmv_ep *ep, uint64_t flags)
{
	return !ep->fpend[pmv_flush_slot(ep)].busy &&
	       (!(flags & FI_FENCE) ||
		!ep->fpend[(pmv_flush_slot(ep) + 1) % PMV_SLOTS].busy);
}

/*
 * The 8-byte read behind the writes: the target's registration generation,
 * from the peer's inbox, into this slot's landing word.
 */
static ssize_t pmv_flush_read(struct pmv_ep *ep, void *context)
{
	struct iovec iov = {
		.iov_base = &ep->inbox.flush_words[pmv_flush_slot(ep)],
		.iov_len = 8,
	};
	void *desc = fi_mr_desc(ep->inbox.mr);
	struct fi_rma_iov rma = {
		.addr = pmv_peer_gen_addr(&ep->peer), .len = 8,
		.key = ep->peer.inbox_key,
	};
	struct fi_msg_rma msg = {
		.msg_iov = &iov, .desc = &desc, .iov_count = 1,
		.rma_iov = &rma, .rma_iov_count = 1, .context = context,
	};

	return fi_readmsg(ep->core, &msg, FI_COMPLETION);
}

/* Posts the read behind data already posted: giving up is no option. */
static ssize_t pmv_flush_read_after_data(struct pmv_ep *ep, void *context)
{
	uint64_t deadline = pmv_ms_now() + PMV_FLUSH_POST_TIMEOUT_MS;
	ssize_t ret;

	while ((ret = pmv_flush_read(ep, context)) == -FI_EAGAIN &&
	       pmv_ms_now() < deadline)
		pmv_cq_progress_core(ep);
	return ret;
}

/*
 * Takes the key's scope: the flush op covers every write before it.  The
 * ranges are kept with the slot, in case the commit must go to the agent.
 */
static void pmv_flush_take_scope(struct pmv_ep *ep, unsigned slot,
				 uint64_t key)
{
	struct pmv_flush_scope *fs = &ep->fscope[slot];

	fs->count = pmv_scope_take(&ep->scope, key, fs->ext, PMV_MAX_EXTENTS);
}

/* -FI_EAGAIN stays (nothing was sent); other core errors: peer gone. */
static int pmv_flush_status(ssize_t ret)
{
	return ret == -FI_EAGAIN ? -FI_EAGAIN : ret ? PMV_ERR_PEER_GONE : 0;
}

/*
 * Posts the data, then the flush op: 0, -FI_EAGAIN or PMV_ERR_PEER_GONE.
 * *sent tells whether anything reached the core.
 */
static int pmv_flush_post_ops(struct pmv_ep *ep, const struct fi_msg_rma *msg,
			      uint64_t flags, enum fi_pmem_method method,
			      bool *sent)
{
	unsigned slot = pmv_flush_slot(ep);
	void *op_ctx = pmv_ictx_get(ep, PMV_ICTX_FLUSH_OP, slot);
	uint64_t fence = flags & FI_FENCE; /* after pmv_flush_fence's read */
	ssize_t ret;

	*sent = false;
	if (method == FI_PMEM_METHOD_COMPLETION && msg->iov_count) {
		ret = pmv_post_data(ep, msg, flags, op_ctx,
				    FI_COMPLETION | fence);
		*sent = !ret;
		return pmv_flush_status(ret);
	}
	if (msg->iov_count) {
		/* FI_MORE: the read follows at once (tcp sends both together) */
		ret = pmv_post_data(ep, msg, flags,
				    pmv_ictx_get(ep, PMV_ICTX_FLUSH_DATA, slot),
				    FI_MORE | fence);
		if (ret)
			return pmv_flush_status(ret);
		*sent = true;
		ep->fpend[slot].gen_read = true;
		return pmv_flush_read_after_data(ep, op_ctx) ?
		       PMV_ERR_PEER_GONE : 0;
	}
	ret = pmv_flush_read(ep, op_ctx);
	*sent = !ret;
	ep->fpend[slot].gen_read = true;
	return pmv_flush_status(ret);
}

/*
 * The read in front of a fenced flush commit: an internal flush op of its
 * own slot, whose completion reports nothing.  0, -FI_EAGAIN or
 * PMV_ERR_PEER_GONE, nothing sent unless 0.
 */
static int pmv_flush_fence(struct pmv_ep *ep)
{
	unsigned slot = pmv_flush_slot(ep);
	int ret;

	ep->fpend[slot] = (struct pmv_pending) {
		.internal = true, .busy = true, .gen_read = true,
	};
	ret = pmv_flush_status(pmv_flush_read(ep,
				pmv_ictx_get(ep, PMV_ICTX_FLUSH_OP, slot)));
	if (ret) {
		ep->fpend[slot].busy = false;
		return ret;
	}
	ep->fscope[slot].count = 0;
	ep->next_fseq++;
	ep->flush_busy++;
	ep->counters.flush_ops++;
	return 0;
}

/*
 * Posts a flush commit; lock held.  0, -FI_EAGAIN (nothing sent) or a
 * PMV_ERR_* code (nothing sent).  If the data went but its flush op could
 * not follow, the commit completes with an error.
 */
int pmv_flush_post(struct pmv_ep *ep, const struct fi_msg_rma *msg,
		   uint64_t flags, bool silent, enum fi_pmem_method method)
{
	uint64_t key = msg->rma_iov[0].key;
	struct pmv_pending *pend;
	unsigned slot;
	bool sent;
	int ret;

	if ((flags & FI_FENCE) && (ret = pmv_flush_fence(ep)))
		return ret;
	slot = pmv_flush_slot(ep);
	pend = &ep->fpend[slot];
	*pend = (struct pmv_pending) {
		.context = msg->context, .key = key, .flags = flags,
		.silent = silent, .busy = true,
	};
	for (size_t i = 0; i < msg->rma_iov_count; i++)
		pend->len += msg->rma_iov[i].len;
	ret = pmv_flush_post_ops(ep, msg, flags, method, &sent);
	if (ret && !sent) {
		pend->busy = false;
		return ret;
	}
	ep->next_fseq++;
	ep->counters.flush_ops++;
	pmv_flush_take_scope(ep, slot, key);
	if (ret) {
		pend->busy = false;
		pmv_commit_report(ep, pend, PMV_ERR_PEER_GONE);
		return 0;
	}
	ep->flush_busy++;
	return 0;
}

/*
 * True if the target closed a region since the profiles were learned: the
 * key may now name memory of another profile, so the read proves nothing
 * for this commit, and every cached profile is forgotten.
 */
static bool pmv_flush_stale(struct pmv_ep *ep, unsigned slot)
{
	uint32_t gen = (uint32_t) __atomic_load_n(&ep->inbox.flush_words[slot],
						  __ATOMIC_ACQUIRE);

	if (!ep->fpend[slot].gen_read || gen == ep->peer_gen)
		return false;
	PMV_INFO(FI_LOG_EP_DATA, "the target closed a region (generation %u, "
		 "profiles learned in %u): the commit goes to the agent\n",
		 gen, ep->peer_gen);
	pmv_forget_profiles(ep, gen);
	return true;
}

/*
 * A flush op completed without error: true, with out filled, if the
 * application gets a completion for its commit.
 */
bool pmv_flush_op_done(const void *context, struct fi_cq_err_entry *out)
{
	enum pmv_ictx_kind kind;
	unsigned slot;
	struct pmv_ep *ep = pmv_ictx_decode(context, &kind, &slot);
	struct pmv_pending *pend;
	bool report = false;

	if (!ep || kind != PMV_ICTX_FLUSH_OP)
		return false;
	pthread_mutex_lock(&ep->lock);
	pend = &ep->fpend[slot];
	if (pend->busy) {
		pend->busy = false;
		ep->flush_busy--;
		if (pend->internal) {
			(void) pmv_flush_stale(ep, slot); /* a fence's read */
		} else if (!pend->reported && pmv_flush_stale(ep, slot)) {
			/* the agent validates and persists it, or it fails */
			if (!pmv_commit_resend(ep, pend, ep->fscope[slot].ext,
					       ep->fscope[slot].count))
				pmv_commit_report(ep, pend, PMV_ERR_REREGISTERED);
		} else if (!pend->reported) {
			pend->reported = true;
			ep->counters.commits++;
			report = ep->tx_cq && !pmv_commit_silent(ep, pend);
		}
	}
	if (report)
		*out = (struct fi_cq_err_entry) {
			.op_context = pend->context,
			.flags = FI_RMA | FI_WRITE,
			.len = pend->len,
		};
	pthread_mutex_unlock(&ep->lock);
	return report;
}

/* Fails every flush commit in flight (the peer is gone); lock held. */
void pmv_flush_fail_all(struct pmv_ep *ep)
{
	unsigned i;

	for (i = 0; i < PMV_SLOTS; i++) {
		if (!ep->fpend[i].busy)
			continue;
		ep->fpend[i].busy = false;
		if (!ep->fpend[i].reported && !ep->fpend[i].internal)
			pmv_commit_report(ep, &ep->fpend[i], PMV_ERR_PEER_GONE);
	}
	ep->flush_busy = 0;
}
