/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Unit tests: the failed-key set (initiator/pmv_fence.c) over the fake
 * core: a fence after a failure to its key fails, once, however many
 * other keys fail in between; a failure it could not remember fails every
 * later fence.
 */
#include "engine_fixture.h"

TestSuite(fence, .init = setup, .fini = teardown);

Test(fence, a_fence_after_a_failure_to_its_key_fails)
{
	fail_first_commit();
	cr_assert_eq(commit(g_ep, 0, 8, FI_FENCE, NULL), -FI_EIO);
}

Test(fence, a_failure_to_another_key_leaves_the_fence_alone)
{
	struct fi_cq_err_entry e;
	struct iovec iov = { .iov_base = &e, .iov_len = 8 };
	struct fi_rma_iov rma = { .addr = 0, .len = 8, .key = REGION_KEY + 1 };
	struct fi_msg_rma msg = { .msg_iov = &iov, .iov_count = 1,
				  .rma_iov = &rma, .rma_iov_count = 1 };
	bool err;

	cr_assert_eq(pmv_commit_writemsg(g_ep, &msg, FI_COMMIT_COMPLETE), 0);
	complete_post(0, 0);
	complete_post(1, 0);
	ack(g_ep, 1, PMV_ERR_NO_KEY, 0, 0);
	cr_assert(pop(&e, &err) && err);
	cr_assert_eq(commit(g_ep, 0, 8, FI_FENCE, NULL), 0);
}

/* A pure flush to key that the agent refuses (no such key): request seq. */
static void fail_flush(uint64_t key, uint64_t seq)
{
	struct fi_cq_err_entry e;
	struct fi_rma_iov rma = { .addr = 0, .len = 0, .key = key };
	struct fi_msg_rma msg = { .rma_iov = &rma, .rma_iov_count = 1 };
	bool err;

	cr_assert_eq(pmv_commit_writemsg(g_ep, &msg, FI_COMMIT_COMPLETE), 0);
	complete_post(g_nposts - 1, 0);
	ack(g_ep, seq, PMV_ERR_NO_KEY, 0, 0);
	cr_assert(pop(&e, &err) && err, "the flush to key %llu did not fail",
		  (unsigned long long) key);
	g_nposts = 0; /* every post completed: the fake core's log restarts */
}

/*
 * Issue 25 item 6: a commit to the key fails, then n commits to n other
 * keys fail; a fenced commit to the first key must still fail (-FI_EIO),
 * once: the failure is not forgotten however many keys fail in between.
 */
static void fence_after_failures(unsigned n)
{
	fail_first_commit();
	g_nposts = 0;
	for (unsigned i = 0; i < n; i++)
		fail_flush(REGION_KEY + 1 + i, 2 + i);
	cr_assert_eq(commit(g_ep, 0, 8, FI_FENCE, NULL), -FI_EIO,
		     "a fence after a failure to its key and %u failures to "
		     "other keys did not fail", n);
	cr_assert_eq(commit(g_ep, 0, 8, FI_FENCE, NULL), 0,
		     "the failure was reported by the fence: the next one "
		     "goes");
}

Test(fence, a_fence_fails_after_its_keys_failure_and_16_others)
{
	fence_after_failures(16);
}

Test(fence, a_fence_fails_after_its_keys_failure_and_100_others)
{
	fence_after_failures(100);
}

Test(fence, a_fence_fails_after_its_keys_failure_and_1000_others)
{
	fence_after_failures(1000);
}

/* A failure that cannot be remembered (no memory) fails every fence. */
Test(fence, a_failure_not_remembered_fails_every_later_fence)
{
	struct fi_cq_err_entry e;
	struct fi_rma_iov rma = { .addr = 0, .len = 0, .key = REGION_KEY + 1 };
	struct fi_msg_rma msg = { .rma_iov = &rma, .rma_iov_count = 1 };
	bool err;

	cr_assert_eq(pmv_commit_writemsg(g_ep, &msg, FI_COMMIT_COMPLETE), 0);
	complete_post(0, 0);
	pmv_fault_reset();
	pmv_params.fault_alloc = 1; /* the failure table's first allocation */
	ack(g_ep, 1, PMV_ERR_NO_KEY, 0, 0);
	pmv_params.fault_alloc = 0;
	cr_assert(pop(&e, &err) && err);
	cr_assert_eq(commit(g_ep, 0, 8, FI_FENCE, NULL), -FI_EIO,
		     "a fence after a failure that could not be remembered "
		     "did not fail");
	cr_assert_eq(commit(g_ep, 64, 8, FI_FENCE, NULL), -FI_EIO);
}
