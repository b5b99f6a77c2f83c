/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Unit tests: the data path of a pmem endpoint (pmv_ep_ops.c) over the
 * fake core: FI_PMEMVERBS_DELIVERY_IS_COMMIT (issue 27 item 3) makes an
 * FI_DELIVERY_COMPLETE write, by flag or by default op_flags, a commit;
 * fi_control(FI_SETOPSFLAG) sets those defaults.
 */
#include "engine_fixture.h"

TestSuite(ep_ops, .init = setup, .fini = teardown);

/* fi_writemsg of 64 bytes at off with FI_DELIVERY_COMPLETE. */
static ssize_t delivery_writemsg(uint64_t off, void *ctx)
{
	static uint8_t buf[64];
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct fi_rma_iov rma = { .addr = off, .len = sizeof(buf),
				  .key = REGION_KEY };
	struct fi_msg_rma msg = { .msg_iov = &iov, .iov_count = 1,
				  .rma_iov = &rma, .rma_iov_count = 1,
				  .context = ctx };

	return pmv_rma_pmem_ops.writemsg(&g_ep->ep_fid, &msg,
					 FI_DELIVERY_COMPLETE | FI_COMPLETION);
}

Test(ep_ops, with_delivery_is_commit_a_delivery_complete_writemsg_commits)
{
	int ctx;

	pmv_params.delivery_is_commit = 1;
	pmv_ep_set_op_flags(g_ep, 0);
	cr_assert_eq(delivery_writemsg(0, &ctx), 0);
	assert_agent_commit(&ctx);
}

Test(ep_ops, with_delivery_is_commit_a_delivery_complete_default_commits)
{
	int ctx;

	pmv_params.delivery_is_commit = 1;
	pmv_ep_set_op_flags(g_ep, FI_DELIVERY_COMPLETE);
	cr_assert_eq(default_write(0, &ctx), 0);
	assert_agent_commit(&ctx);
}

/* The operation of context ctx went to the core in one call, as it is. */
static void assert_plain_write(void *ctx)
{
	cr_assert_eq(g_nposts, 1, "expected one core write, got %u posts",
		     g_nposts);
	cr_assert_eq(g_posts[0].context, ctx);
}

Test(ep_ops, without_delivery_is_commit_delivery_complete_writes_are_plain)
{
	int ctx[2];

	pmv_ep_set_op_flags(g_ep, FI_DELIVERY_COMPLETE);
	cr_assert_eq(delivery_writemsg(0, &ctx[0]), 0);
	assert_plain_write(&ctx[0]);
	cr_assert_eq(g_posts[0].flags & FI_DELIVERY_COMPLETE,
		     FI_DELIVERY_COMPLETE, "the core got the flag");
	g_nposts = 0;
	cr_assert_eq(default_write(64, &ctx[1]), 0);
	assert_plain_write(&ctx[1]);
}

/* fi_control(FI_SETOPSFLAG) sets the default a later fi_write follows. */
static int setopsflag(uint64_t flags)
{
	return pmv_ep_setopsflag(g_ep, &flags);
}

Test(ep_ops, setopsflag_delivery_complete_makes_fi_write_commit)
{
	int ctx;

	pmv_params.delivery_is_commit = 1;
	pmv_ep_set_op_flags(g_ep, 0);
	cr_assert_eq(setopsflag(FI_TRANSMIT | FI_DELIVERY_COMPLETE), 0);
	cr_assert_eq(default_write(0, &ctx), 0);
	assert_agent_commit(&ctx);
}

Test(ep_ops, setopsflag_commit_complete_commits_and_never_reaches_the_core)
{
	int ctx;

	pmv_ep_set_op_flags(g_ep, 0);
	cr_assert_eq(setopsflag(FI_TRANSMIT | FI_COMMIT_COMPLETE), 0);
	cr_assert_eq(g_control_flags & FI_COMMIT_COMPLETE, 0, "the core's own "
		     "FI_COMMIT_COMPLETE knows nothing of persistence");
	cr_assert_eq(default_write(0, &ctx), 0);
	assert_agent_commit(&ctx);
}

Test(ep_ops, setopsflag_the_core_refuses_leaves_the_default_alone)
{
	int ctx;

	pmv_params.delivery_is_commit = 1;
	pmv_ep_set_op_flags(g_ep, 0);
	g_control_ret = -FI_ENOSYS;
	cr_assert_eq(setopsflag(FI_TRANSMIT | FI_DELIVERY_COMPLETE),
		     -FI_ENOSYS);
	cr_assert_eq(default_write(0, &ctx), 0);
	assert_plain_write(&ctx);
}

Test(ep_ops, delivery_is_commit_leaves_endpoints_without_pmem_alone)
{
	pmv_params.delivery_is_commit = 1;
	g_ep->pmem = false;
	pmv_ep_set_op_flags(g_ep, FI_DELIVERY_COMPLETE);
	cr_assert_eq(g_ep->tx_op_flags, FI_DELIVERY_COMPLETE,
		     "an endpoint without FI_RMA_PMEM cannot commit");
	g_ep->pmem = true;
}
