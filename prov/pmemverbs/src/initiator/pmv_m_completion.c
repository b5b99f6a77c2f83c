/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: the completion method (WSP on ib/roce).
 *
 * The data write's own completion: on ib/roce it means the responder NIC
 * has the data, and a WSP target's NIC buffers are durable.  A pure flush,
 * having no write, reads (pmv_m_read_flush.c).  Fenced commits read first
 * and post the data with the core's FI_FENCE, as read-flush does.
 */
#include "pmv_initiator.h"

/* The data write is the flush op; a pure flush reads. */
static int pmv_completion_post(struct pmv_ini *ini, struct pmv_commit *c,
			       const struct fi_msg_rma *msg)
{
	int ret = pmv_flush_post_data(ini, c, msg, PMV_IOP_FLUSH, 0);

	if (ret || msg->iov_count) {
		if (!ret)
			pmv_ini_take_scope(ini, c, PMV_MAX_EXTENTS);
		return ret;
	}
	pmv_ini_take_scope(ini, c, PMV_MAX_EXTENTS);
	return pmv_flush_status(pmv_flush_read(ini, c, PMV_IOP_FLUSH, 0));
}

static int pmv_completion_resume(struct pmv_ini *ini, struct pmv_commit *c)
{
	(void) ini;
	(void) c;
	return 0;
}

static void pmv_completion_op_done(struct pmv_ini *ini, struct pmv_commit *c)
{
	pmv_ini_finish(ini, c, 0);
}

const struct pmv_method_ops pmv_m_completion = {
	.id = FI_PMEM_METHOD_COMPLETION,
	.can_post = pmv_flush_can_post,
	.post = pmv_completion_post,
	.resume = pmv_completion_resume,
	.op_done = pmv_completion_op_done,
};
