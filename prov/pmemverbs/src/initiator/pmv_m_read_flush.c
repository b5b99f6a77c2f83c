/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: the read-flush method.
 *
 * read-flush   the commit's data goes as a plain write, then an 8-byte
 *              fi_read from the peer's inbox follows on the same
 *              connection at once (seed 004 H9: no wait for the write).
 *              The core orders the read behind the writes (FI_ORDER_RAW,
 *              which the endpoint checks the core reports), so its
 *              completion proves every earlier write of the connection
 *              placed in the target's memory hierarchy: over RDMA the
 *              read flushes the NIC's posted writes, over tcp the target's
 *              progress copied them before answering.  The word read is
 *              the target's registration generation.  It must be the one
 *              the key's profile was learned in and the one known when the
 *              oldest write the commit covers was posted (c->floor): then
 *              no region closed between those writes and the read, and
 *              every one of them is in the region whose profile chose
 *              this method.  Otherwise the commit goes to the agent over
 *              the ranges it covered (a change of method), whose request
 *              carries c->floor.  Nothing else may stand for the read: a
 *              write's own delivery acknowledgement proves its placement
 *              but not in which registration, and the profile table the
 *              target pushes is not ordered with the core's
 *              acknowledgements (a tcp core sends those ahead of queued
 *              writes).
 * (The completion method, pmv_m_completion.c, shares the fenced data path
 * and the generation read.)
 *
 * A fenced commit waits in no call: a read first (every earlier write
 * placed), then the data with the core's FI_FENCE (started only once that
 * read completed), then the commit's own read.
 */
#include "pmv_initiator.h"

_Static_assert(PMV_RING <= PMV_SLOTS, "a landing word per commit in flight");

/* Posts the 8-byte read of the peer's generation word for commit c. */
ssize_t pmv_flush_read(struct pmv_ini *ini, struct pmv_commit *c,
		       enum pmv_iop_kind kind, uint64_t flags)
{
	int ret = pmv_ini_read_gen(ini, c, kind,
				   &ini->ep->inbox.flush_words[c->cseq %
							       PMV_SLOTS],
				   flags);

	if (!ret)
		ini->ep->counters.flush_ops++;
	return ret;
}

/* -FI_EAGAIN stays (nothing of the commit sent); other errors: gone. */
int pmv_flush_status(ssize_t ret)
{
	return ret == -FI_EAGAIN ? -FI_EAGAIN : ret ? PMV_ERR_PEER_GONE : 0;
}

/* Adds msg's ranges to the key's scope, so the flush op covers them. */
static void pmv_flush_scope_add(struct pmv_ini *ini, struct pmv_commit *c,
				const struct fi_msg_rma *msg)
{
	size_t i;

	for (i = 0; i < msg->rma_iov_count; i++)
		pmv_commit_scope_add(ini, c, msg->rma_iov[i].addr,
				     msg->rma_iov[i].len, ini->scope.gen);
}

/* A fenced commit waits for the agent's commits to the key (a send
 * in flight is the engine's overlap rule, pmv_commit.c). */
int pmv_flush_can_post(struct pmv_ini *ini, const struct fi_msg_rma *msg,
		       uint64_t flags)
{
	uint64_t key = msg->rma_iov[0].key;

	if ((flags & FI_FENCE) && pmv_ini_key_busy(ini, key, NULL, true))
		return -FI_EAGAIN; /* the agent still persists earlier ones */
	return 0;
}

/*
 * The fence's read (fenced commits), then the data with flags; the data
 * carries the core's FI_FENCE.  0, or a status with nothing of the data
 * sent.
 */
int pmv_flush_post_data(struct pmv_ini *ini, struct pmv_commit *c,
			const struct fi_msg_rma *msg,
			enum pmv_iop_kind data_kind, uint64_t flags)
{
	int ret;

	flags |= c->flags & FI_INJECT;

	if (c->flags & FI_FENCE) {
		ret = pmv_flush_status(pmv_flush_read(ini, c, PMV_IOP_FENCE, 0));
		if (ret)
			return ret;
		flags |= FI_FENCE;
	}
	if (!msg->iov_count)
		return 0;
	ret = pmv_ini_post_op(ini, c, data_kind, msg, flags, false);
	if (!ret)
		pmv_flush_scope_add(ini, c, msg);
	return pmv_flush_status(ret);
}

/* The data write (FI_MORE: the read follows at once), then the read. */
int pmv_read_flush_post(struct pmv_ini *ini, struct pmv_commit *c,
			const struct fi_msg_rma *msg)
{
	int ret = pmv_flush_post_data(ini, c, msg, PMV_IOP_DATA, FI_MORE);
	if (!ret) {
		pmv_ini_take_scope(ini, c, PMV_MAX_EXTENTS);
		ret = pmv_flush_status(pmv_flush_read(ini, c, PMV_IOP_FLUSH,
						      0));
		if (ret == -FI_EAGAIN && msg->iov_count) {
			c->state = PMV_C_DEFERRED; /* read from progress */
			ini->deferred++;
			ret = 0;
		}
	}
	return ret;
}

int pmv_read_flush_resume(struct pmv_ini *ini, struct pmv_commit *c)
{
	ssize_t ret = pmv_flush_read(ini, c, PMV_IOP_FLUSH, 0);

	if (ret && ret != -FI_EAGAIN)
		pmv_ini_finish(ini, c, PMV_ERR_PEER_GONE);
	return ret == -FI_EAGAIN ? -FI_EAGAIN : 0;
}

/*
 * The read completed: durable if the generation it brought is the one the
 * method was chosen under and the one known at the oldest write covered;
 * otherwise the agent persists the commit's ranges (or refuses them if the
 * key names another region now).
 */
void pmv_read_flush_op_done(struct pmv_ini *ini, struct pmv_commit *c)
{
	uint32_t gen = (uint32_t) __atomic_load_n(
		&ini->ep->inbox.flush_words[c->cseq % PMV_SLOTS],
		__ATOMIC_ACQUIRE);

	pmv_ini_learn_gen(ini, gen);
	if (gen == c->gen && gen == c->floor) {
		pmv_ini_finish(ini, c, 0);
		return;
	}
	PMV_INFO(FI_LOG_EP_DATA, "the target's generation is %u, the method "
		 "was chosen in %u and the oldest write posted in %u: the "
		 "commit goes to the agent\n", gen, c->gen, c->floor);
	if (gen != c->gen)
		pmv_ini_forget_facts(ini, gen);
	pmv_method_take_over(ini, c);
}

const struct pmv_method_ops pmv_m_read_flush = {
	.id = FI_PMEM_METHOD_READ_FLUSH,
	.family = PMV_FAMILY_FLUSH,
	.overlap = PMV_OVERLAP_KEY,
	.takeover = FI_PMEM_METHOD_AGENT,
	.can_post = pmv_flush_can_post,
	.post = pmv_read_flush_post,
	.resume = pmv_read_flush_resume,
	.op_done = pmv_read_flush_op_done,
};
