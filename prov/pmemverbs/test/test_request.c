/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Unit tests: requests and acks (initiator/pmv_request.c) over the fake
 * core: acks that cover several requests, an ack ahead of the data's
 * completion, joined writes the core refuses or fails, and the spills
 * that carry extents a commit's own request has no room for.
 */
#include "engine_fixture.h"

TestSuite(request, .init = setup, .fini = teardown);

/* Three agent commits, their posts completed; returns nothing. */
static void three_commits(int ctx[3])
{
	for (int i = 0; i < 3; i++)
		cr_assert_eq(commit(g_ep, (uint64_t) i * 64, 64, 0, &ctx[i]), 0);
	for (unsigned i = 0; i < g_nposts; i++)
		complete_post(i, 0);
}

Test(request, one_ack_covering_three_requests_completes_them_in_order)
{
	struct fi_cq_err_entry e;
	bool err;
	int ctx[3];

	three_commits(ctx);
	ack_covering(g_ep, 1, 3, -FI_EIO);
	for (int i = 0; i < 3; i++) {
		cr_assert(pop(&e, &err), "commit %d not completed", i);
		cr_assert_eq(e.op_context, &ctx[i]);
		cr_assert_eq(err, i == 2, "only the last carries the status");
	}
	cr_assert(!pop(&e, &err));
}

Test(request, an_ack_covering_more_than_was_sent_ends_only_what_was_sent)
{
	struct fi_cq_err_entry e;
	bool err;
	int ctx[3], n = 0;

	three_commits(ctx);
	ack_covering(g_ep, 1, 60, 0);
	while (pop(&e, &err))
		cr_assert_eq(e.op_context, &ctx[n++]);
	cr_assert_eq(n, 3);
	cr_assert_eq(commit(g_ep, 192, 64, 0, &ctx[0]), 0, "the ring is "
		     "still usable");
}

Test(request, ack_before_the_data_write_completes_waits_for_it)
{
	struct fi_cq_err_entry e;
	bool err;
	int ctx;

	cr_assert_eq(commit(g_ep, 0, 64, 0, &ctx), 0);
	ack(g_ep, 1, 0, FI_PMEM_PROFILE_DMP, 0);
	cr_assert(!pop(&e, &err), "completed with its data write in flight");
	complete_post(0, 0);
	complete_post(1, 0);
	cr_assert(pop(&e, &err) && !err && e.op_context == &ctx);
}

Test(request, a_joined_write_the_core_refuses_sends_nothing_and_loses_no_range)
{
	uint64_t buf[32];
	struct pmv_req *req;
	int ctx, ctx2;

	join_requests();
	fail_core_call(1, -FI_EAGAIN);
	cr_assert_eq(commit(g_ep, 0, 64, 0, &ctx), -FI_EAGAIN);
	cr_assert_eq(g_nposts, 0);
	cr_assert_eq(commit(g_ep, 4096, 64, 0, &ctx2), 0);
	cr_assert_eq(g_nposts, 1);
	req = request_of(&g_posts[0], 1, buf);
	cr_assert_eq(req->seq, 1, "the refused write took no request seq");
	cr_assert_eq(req->nextents, 2, "the refused commit's range went "
		     "missing from the key's scope");
	cr_assert(req->ext[0].addr == 0 && req->ext[1].addr == 4096);
}

Test(request, a_failed_joined_write_fails_its_commit)
{
	struct fi_cq_err_entry e;
	bool err;
	int ctx;

	join_requests();
	cr_assert_eq(commit(g_ep, 0, 64, 0, &ctx), 0);
	ack(g_ep, 1, 0, FI_PMEM_PROFILE_PAGE, 0); /* a forged early ack */
	complete_post(0, FI_EIO);
	cr_assert(pop(&e, &err) && err && e.op_context == &ctx,
		  "the write failed, yet the commit succeeded");
	fail_core_call(1, -FI_EIO);
	cr_assert(commit(g_ep, 128, 64, 0, &ctx) < 0, "a failed post returns "
		  "an error");
}

Test(request, scattered_writes_reach_the_agent_exact)
{
	struct pmv_extent ext[64];
	struct fi_cq_err_entry e;
	unsigned n, nreq, i, j;
	bool err;
	int ctx;

	nreq = scattered_commit(&ctx, ext, &n);
	for (i = 0; i <= SCATTERED; i++) {
		uint64_t w = i * 1048576ULL + (i < SCATTERED ? 16 : 0);
		bool in = false;

		for (j = 0; j < n; j++)
			in |= ext[j].addr <= w && w + 8 <= ext[j].addr + ext[j].len;
		cr_assert(in, "the write at %#lx is in no request",
			  (unsigned long) w);
	}
	for (j = 0; j < n; j++)
		cr_assert_leq(ext[j].len, 4096, "extent %#lx+%lu covers pages "
			      "nobody wrote", (unsigned long) ext[j].addr,
			      (unsigned long) ext[j].len);
	for (i = 0; i < g_nposts; i++)
		complete_post(i, 0);
	for (i = 1; i < nreq; i++) {
		ack(g_ep, i, 0, FI_PMEM_PROFILE_PAGE, 0);
		cr_assert(!pop(&e, &err), "completed before its last request's "
			  "ack");
	}
	ack(g_ep, nreq, 0, FI_PMEM_PROFILE_PAGE, 0);
	cr_assert(pop(&e, &err) && !err && e.op_context == &ctx);
	cr_assert(!pop(&e, &err), "the spills raised completions");
}

Test(request, a_failed_spill_fails_its_commit)
{
	struct pmv_extent ext[64];
	struct fi_cq_err_entry e;
	unsigned n, nreq, i;
	bool err;
	int ctx;

	nreq = scattered_commit(&ctx, ext, &n);
	cr_assert_gt(nreq, 1, "no spill: %u request", nreq);
	for (i = 0; i < g_nposts; i++)
		complete_post(i, 0);
	ack(g_ep, 1, -FI_EIO, FI_PMEM_PROFILE_PAGE, 0);
	for (i = 2; i <= nreq; i++)
		ack(g_ep, i, 0, FI_PMEM_PROFILE_PAGE, 0);
	cr_assert(pop(&e, &err), "the commit never completed");
	cr_assert(err && e.op_context == &ctx, "a spilled range failed, yet "
		  "the commit succeeded");
	cr_assert(!pop(&e, &err));
}

Test(request, a_spill_failing_after_its_commit_dropped_fails_the_next_one)
{
	struct fi_cq_err_entry e;
	unsigned i, nreq;
	bool err;
	int ctx;

	join_requests();
	for (i = 0; i < SCATTERED; i++)
		pmv_ini_track(g_ep, REGION_KEY, i * 1048576ULL + 16, 8);
	/* three spills go, the joined write is refused */
	fail_core_call(4, -FI_EAGAIN);
	cr_assert_eq(commit(g_ep, 0, 8, 0, &ctx), -FI_EAGAIN);
	nreq = g_nposts;
	cr_assert_eq(nreq, 3, "%u spills", nreq);
	for (i = 0; i < g_nposts; i++)
		complete_post(i, 0);
	ack(g_ep, 1, -FI_EIO, FI_PMEM_PROFILE_PAGE, 0);
	for (i = 2; i <= nreq; i++)
		ack(g_ep, i, 0, FI_PMEM_PROFILE_PAGE, 0);
	cr_assert(commit(g_ep, 0, 8, 0, &ctx) < 0, "the writes of a failed "
		  "spill were forgotten");
	cr_assert(!pop(&e, &err));
}
