/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Unit tests: fi_wait on a pmemverbs wait set and fi_poll on a poll set
 * (pmv_wait.c, pmv_members.c; libfabric 1.x) whose CQ an initiator's
 * commits complete in: pmemverbs completes them from the CQ's progress,
 * which no core wait object wakes and no core CQ shows.
 */
#include "cq_fixture.h"

#if PMV_HAVE_WAIT_SETS

TestSuite(wait_set, .init = setup_with_wait_set, .fini = teardown_wait_set);

/* Posts a commit and completes its data write and request: its ack is
 * all it waits for. */
static void commit_in_flight(int *ctx)
{
	cr_assert_eq(commit(g_ep, 0, 64, 0, ctx), 0);
	complete_post(0, 0);
	complete_post(1, 0);
}

/*
 * A commit in flight: fi_wait sleeps in the core's set for 1 ms at a time,
 * as its ack lands in memory and wakes no wait object (the initiator-waits
 * scenario's waitset mode waited out its 200 ms for 5 to 13 of 29 commits).
 */
Test(wait_set, a_commit_in_flight_makes_fi_wait_sleep_in_short_steps)
{
	int ctx;

	commit_in_flight(&ctx);
	g_waits = 0;
	(void) fi_wait(g_app_set, 1000);
	cr_assert_eq(g_waits, 1);
	cr_assert(g_wait_last_ms >= 0 && g_wait_last_ms <= 1, "slept up to %d "
		  "ms in the core's set with a commit in flight",
		  g_wait_last_ms);
}

/* An ack that landed: fi_wait completes the commit and returns at once,
 * without a sleep in the core's set, which nothing would wake. */
Test(wait_set, an_ack_that_landed_ends_fi_wait_at_once)
{
	struct fi_cq_entry e;
	int ctx;

	commit_in_flight(&ctx);
	ack_lands(g_ep, 1, 0, FI_PMEM_PROFILE_PAGE, 0);
	g_waits = 0;
	cr_assert_eq(fi_wait(g_app_set, 1000), 0);
	cr_assert_eq(g_waits, 0, "slept in the core's set with a completion "
		     "to read");
	cr_assert_eq(fi_cq_read(&g_cq->cq_fid, &e, 1), 1);
	cr_assert_eq(e.op_context, &ctx);
}

/* With nothing in flight, fi_wait is the core's, with its timeout. */
Test(wait_set, an_idle_set_waits_in_the_core_with_the_timeout)
{
	g_waits = 0;
	(void) fi_wait(g_app_set, 250);
	cr_assert_eq(g_waits, 1);
	cr_assert_eq(g_wait_last_ms, 250);
}

/*
 * With pmem endpoints bound and nothing in flight, fi_wait sleeps in the
 * core's set at most 100 ms at a time, as fi_cq_sread does: another thread
 * may start a commit meanwhile, whose ack wakes no wait object.
 */
Test(wait_set, a_set_with_pmem_endpoints_sleeps_in_bounded_steps)
{
	pmv_cq_ref_pmem(g_cq, 1);
	g_waits = 0;
	(void) fi_wait(g_app_set, 1000);
	pmv_cq_ref_pmem(g_cq, -1);
	cr_assert_eq(g_waits, 1);
	cr_assert_eq(g_wait_last_ms, 100, "slept up to %d ms in the core's "
		     "set with pmem endpoints bound", g_wait_last_ms);
}

/*
 * A poll set holding the CQ names it once an ack landed: the commit's
 * completion is pmemverbs's, in no core CQ (the initiator-waits scenario's
 * pollset mode never saw a commit complete before this).
 */
Test(wait_set, a_poll_set_names_a_cq_whose_commit_completed)
{
	struct fi_poll_attr attr = { 0 };
	struct fid_poll *pollset;
	void *ctx[2] = { NULL, NULL };
	int cq_ctx = 0, ctx1;

	g_cq->cq_fid.fid.context = &cq_ctx;
	cr_assert_eq(pmv_poll_open(&g_dom.domain_fid, &attr, &pollset), 0);
	cr_assert_eq(fi_poll_add(pollset, &g_cq->cq_fid.fid, 0), 0);
	commit_in_flight(&ctx1);
	cr_assert_eq(fi_poll(pollset, ctx, 2), 0, "named before the ack");
	ack_lands(g_ep, 1, 0, FI_PMEM_PROFILE_PAGE, 0);
	cr_assert_eq(fi_poll(pollset, ctx, 2), 1, "the CQ of a completed "
		     "commit was not named");
	cr_assert_eq(ctx[0], &cq_ctx);
	cr_assert_eq(fi_poll_del(pollset, &g_cq->cq_fid.fid, 0), 0);
	cr_assert_eq(fi_close(&pollset->fid), 0);
}

#endif /* PMV_HAVE_WAIT_SETS */
