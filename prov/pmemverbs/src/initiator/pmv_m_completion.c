/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: the completion method (WSP on ib/roce).
 *
 * On ib/roce a write's completion means the responder NIC has the data,
 * and a WSP target's NIC buffers are durable.  But the completion cannot
 * tell in which registration the key was when the data was placed: a
 * region closed and registered again under the key (another profile) in
 * between would hold it.  So the write is followed at once, as read-flush
 * does, by the 8-byte read of the target's generation word (FI_ORDER_RAW):
 * one round trip still, and the commit completes only when that word is
 * the generation its method was chosen under and the one known at its
 * oldest write (pmv_m_read_flush.c); otherwise the agent takes over.
 */
#include "pmv_initiator.h"

const struct pmv_method_ops pmv_m_completion = {
	.id = FI_PMEM_METHOD_COMPLETION,
	.family = PMV_FAMILY_FLUSH,
	.overlap = PMV_OVERLAP_KEY,
	.takeover = FI_PMEM_METHOD_AGENT,
	.can_post = pmv_flush_can_post,
	.post = pmv_read_flush_post,
	.resume = pmv_read_flush_resume,
	.op_done = pmv_read_flush_op_done,
};
