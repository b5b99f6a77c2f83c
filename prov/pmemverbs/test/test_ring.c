/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Unit tests: the commit ring (initiator/pmv_ring.c) over the fake core
 * (engine_fixture.h): a commit is reported once, never before its ack,
 * with its own context; a core call that fails (the fault points in front
 * of the core) ends in an error return or an error completion; a request
 * the core cannot take waits in the ring; a closed endpoint's late
 * completions are dropped.
 */
#include "engine_fixture.h"

TestSuite(ring, .init = setup, .fini = teardown);

/* Every core call of an agent commit, failed in turn. */
Test(ring, a_failed_core_call_never_completes_a_commit)
{
	for (unsigned n = 1; n <= 2; n++) {
		struct fi_cq_err_entry e;
		bool err, reported = false;
		ssize_t ret;
		int ctx;

		close_ep(g_ep);
		g_nposts = 0;
		fail_core_call(n, -FI_EIO);
		g_ep = open_ep();
		ret = commit(g_ep, 0, 64, 0, &ctx);
		for (unsigned i = 0; i < g_nposts; i++)
			complete_post(i, 0);
		g_ep->hook.progress(g_ep->hook.arg);
		while (pop(&e, &err))
			if (e.op_context == &ctx) {
				cr_assert(err, "call %u failed, yet the commit "
					  "succeeded", n);
				reported = true;
			}
		cr_assert(ret < 0 || reported, "call %u failed: neither an "
			  "error return (%zd) nor an error completion", n, ret);
		cr_assert(ret != -FI_EAGAIN || g_nposts == 0,
			  "-FI_EAGAIN after something was sent");
	}
}

Test(ring, a_request_the_core_cannot_take_waits_in_the_ring)
{
	struct fi_cq_err_entry e;
	bool err;
	int ctx, ctx2;

	fail_core_call(2, -FI_EAGAIN); /* the request after the data */
	cr_assert_eq(commit(g_ep, 0, 64, 0, &ctx), 0, "the data went");
	cr_assert_eq(g_nposts, 1);
	cr_assert_eq(commit(g_ep, 4096, 64, 0, &ctx2), -FI_EAGAIN,
		     "a later commit must not overtake the waiting request");
	g_ep->hook.progress(g_ep->hook.arg); /* the request goes now */
	cr_assert_eq(g_nposts, 2);
	cr_assert_eq(g_posts[1].addr, pmv_peer_req_addr(&g_ep->peer, 1));
	complete_post(0, 0);
	complete_post(1, 0);
	ack(g_ep, 1, 0, FI_PMEM_PROFILE_PAGE, 0);
	cr_assert(pop(&e, &err) && !err && e.op_context == &ctx);
}

Test(ring, an_internal_error_completes_the_commit_with_its_context)
{
	struct fi_cq_err_entry e;
	bool err;
	int ctx;

	cr_assert_eq(commit(g_ep, 0, 64, 0, &ctx), 0);
	complete_post(0, FI_ECONNRESET);
	cr_assert(pop(&e, &err));
	cr_assert(err);
	cr_assert_eq(e.op_context, &ctx);
	cr_assert_eq(e.err, FI_ECONNRESET);
	complete_post(1, FI_ECONNRESET);
	ack(g_ep, 1, 0, FI_PMEM_PROFILE_PAGE, 0);
	cr_assert(!pop(&e, &err), "reported twice");
}

/*
 * A closed endpoint's commit is canceled, and its late completions go to
 * its own engine: a new endpoint on the same CQ sees none of them.
 */
Test(ring, a_closed_endpoints_late_completions_are_dropped)
{
	struct fi_cq_err_entry e;
	struct pmv_ep *next;
	bool err;
	int ctx_old, ctx_new;

	cr_assert_eq(commit(g_ep, 0, 64, 0, &ctx_old), 0);
	close_ep(g_ep);
	g_ep = NULL;
	cr_assert(pop(&e, &err) && err && e.op_context == &ctx_old);
	cr_assert_eq(e.err, FI_ECANCELED);
	next = open_ep();
	cr_assert_eq(commit(next, 0, 64, 0, &ctx_new), 0);
	complete_post(0, FI_ECANCELED); /* the old endpoint's, late */
	complete_post(1, 0);
	cr_assert(!pop(&e, &err), "a stale completion reached the new "
		  "endpoint");
	complete_post(2, 0);
	complete_post(3, 0);
	ack(next, 1, 0, FI_PMEM_PROFILE_PAGE, 0);
	cr_assert(pop(&e, &err) && !err && e.op_context == &ctx_new);
	g_ep = next;
}
