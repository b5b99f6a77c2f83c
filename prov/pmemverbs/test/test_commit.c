/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Unit tests: the commit entry (initiator/pmv_commit.c) over the fake
 * core: what it refuses, and the rules it applies before a method posts:
 * a fenced send waits for read-flush commits to its key, and no commit
 * goes over a send's data still in flight (issue 25 item 7, the overlap
 * rule), whatever its method.
 */
#include "engine_fixture.h"

TestSuite(commit, .init = setup, .fini = teardown);

Test(commit, a_null_msg_iov_is_refused)
{
	struct fi_rma_iov rma = { .addr = 0, .len = 8, .key = REGION_KEY };
	struct fi_msg_rma msg = { .iov_count = 1, .rma_iov = &rma,
				  .rma_iov_count = 1 };

	cr_assert_eq(pmv_commit_writemsg(g_ep, &msg, FI_COMMIT_COMPLETE),
		     -FI_EINVAL);
	cr_assert_eq(g_nposts, 0);
}

/*
 * FI_FENCE by send while a read-flush commit to the key is in flight: the
 * agent would place the fenced data before the earlier commit is durable,
 * so the fenced commit posts nothing (-FI_EAGAIN) until that one is done.
 */
Test(commit, a_fenced_send_commit_waits_for_read_flush_commits_to_its_key)
{
	struct fi_cq_err_entry e;
	unsigned first, posts;
	bool err;
	int ctx[2];

	learn_mhp(5);
	first = g_nposts;
	cr_assert_eq(commit(g_ep, 0, 64, 0, &ctx[0]), 0);
	cr_assert(g_posts[first + 1].read, "a read-flush commit");
	pmv_params.method = FI_PMEM_METHOD_SEND;
	posts = g_nposts;
	cr_assert_eq(commit(g_ep, 64, 8, FI_FENCE, &ctx[1]), -FI_EAGAIN);
	cr_assert_eq(g_nposts, posts, "the fenced commit posted while a "
		     "read-flush commit to its key was in flight");
	complete_post(first, 0);
	reads_bring(5);
	complete_post(first + 1, 0);
	cr_assert(pop(&e, &err) && !err && e.op_context == &ctx[0]);
	cr_assert_eq(commit(g_ep, 64, 8, FI_FENCE, &ctx[1]), 0);
	cr_assert_gt(g_nposts, posts, "the fenced commit went once the "
		     "key was idle");
}

/* send x agent: the agent commit's data would land under the send's. */
Test(commit, an_agent_commit_over_send_data_in_flight_waits)
{
	earlier_send_in_flight();
	pmv_params.method = FI_PMEM_METHOD_AGENT;
	cr_assert_eq(commit(g_ep, 8192, 64, 0, NULL), 0,
		     "a commit beside the send's range need not wait");
	later_commit_waits(FI_PMEM_METHOD_AGENT, 0, 4096, 1,
			   FI_PMEM_PROFILE_PAGE);
}

/* send x agent, joined (over tcp data and request go as one write). */
Test(commit, a_joined_agent_commit_over_send_data_in_flight_waits)
{
	join_requests();
	earlier_send_in_flight();
	later_commit_waits(FI_PMEM_METHOD_AGENT, 1016, 8, 1,
			   FI_PMEM_PROFILE_PAGE);
}

/* send x read_flush: its read proves placement, not the send's data. */
Test(commit, a_read_flush_commit_waits_for_a_send_to_its_key)
{
	learn_profile(FI_PMEM_PROFILE_MHP, 5);
	earlier_send_in_flight();
	cr_assert_eq(pmv_ini_method(g_ep, REGION_KEY),
		     FI_PMEM_METHOD_READ_FLUSH);
	later_commit_waits(FI_PMEM_METHOD_NONE, 16384, 64, 2,
			   FI_PMEM_PROFILE_MHP);
}

/* send x completion (WSP on ib/roce): the write's completion, likewise. */
Test(commit, a_completion_commit_waits_for_a_send_to_its_key)
{
	g_dom.transport = PMV_TRANSPORT_IB;
	learn_profile(FI_PMEM_PROFILE_WSP, 5);
	earlier_send_in_flight();
	cr_assert_eq(pmv_ini_method(g_ep, REGION_KEY),
		     FI_PMEM_METHOD_COMPLETION);
	later_commit_waits(FI_PMEM_METHOD_NONE, 1000, 64, 2,
			   FI_PMEM_PROFILE_WSP);
}
