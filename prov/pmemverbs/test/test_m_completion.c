/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Unit tests: the completion method (initiator/pmv_m_completion.c, WSP on
 * ib/roce) over the fake core: the write, then the read of the target's
 * generation word at once; the commit completes at that read, only in
 * the generation its method was chosen in, never at its write alone, and
 * fails if its write fails.
 */
#include "engine_fixture.h"

TestSuite(m_completion, .init = setup, .fini = teardown);

/* Over ib, REGION_KEY learned WSP in generation 5: the completion method. */
static void learn_wsp_over_ib(void)
{
	g_dom.transport = PMV_TRANSPORT_IB;
	learn_profile(FI_PMEM_PROFILE_WSP, 5);
	cr_assert_eq(pmv_ini_method(g_ep, REGION_KEY),
		     FI_PMEM_METHOD_COMPLETION, "WSP over ib: method %d",
		     (int) pmv_ini_method(g_ep, REGION_KEY));
}

/*
 * The write's completion alone completes nothing: the read of the
 * generation word behind it does, when it brings the generation the
 * method was chosen in.  One flush read, no request to the agent.
 */
Test(m_completion, a_commit_completes_at_its_generation_read_not_its_write)
{
	struct fi_cq_err_entry e;
	uint64_t requests, flush_ops;
	unsigned first;
	bool err;
	int ctx;

	learn_wsp_over_ib();
	requests = g_ep->counters.requests_sent;
	flush_ops = g_ep->counters.flush_ops;
	first = g_nposts;
	cr_assert_eq(commit(g_ep, 0, 64, 0, &ctx), 0);
	cr_assert_eq(g_nposts, first + 2, "the write, then the read");
	cr_assert(!g_posts[first].read && g_posts[first].addr == 0);
	cr_assert(g_posts[first + 1].read, "no read behind the write");
	cr_assert_eq(g_posts[first + 1].addr, pmv_peer_gen_addr(&g_ep->peer),
		     "the read is not of the generation word");
	complete_post(first, 0);
	g_ep->hook.progress(g_ep->hook.arg);
	cr_assert(!pop(&e, &err), "completed at its write's completion");
	reads_bring(5);
	complete_post(first + 1, 0);
	cr_assert(pop(&e, &err), "not completed at its read");
	cr_assert(!err && e.op_context == &ctx);
	cr_assert_eq(g_ep->counters.flush_ops, flush_ops + 1);
	cr_assert_eq(g_ep->counters.requests_sent, requests, "the agent was "
		     "asked");
}

/*
 * The completion method (WSP on ib/roce): the write's completion cannot
 * tell which registration it landed in, so a read of the generation word
 * follows it, and a new generation sends the commit to the agent.  Seen
 * failing on 03bf475: it completed at its write's completion.
 */
Test(m_completion, the_completion_method_reads_the_generation_behind_its_write)
{
	struct fi_cq_err_entry e;
	unsigned first;
	bool err;

	g_dom.transport = PMV_TRANSPORT_IB;
	cr_assert_eq(commit(g_ep, 0, 8, 0, NULL), 0);
	complete_post(0, 0);
	complete_post(1, 0);
	ack(g_ep, 1, 0, FI_PMEM_PROFILE_WSP, 5);
	cr_assert(pop(&e, &err) && !err);
	cr_assert_eq(pmv_ini_method(g_ep, REGION_KEY),
		     FI_PMEM_METHOD_COMPLETION);
	first = g_nposts;
	cr_assert_eq(commit(g_ep, 0, 64, 0, NULL), 0);
	cr_assert_eq(g_nposts, first + 2, "the write, then the read");
	cr_assert(g_posts[first + 1].read);
	reads_bring(6);
	complete_post(first, 0);
	complete_post(first + 1, 0);
	cr_assert(!pop(&e, &err), "completed in another generation");
	cr_assert_eq(g_nposts, first + 3, "a request to the agent");
}

/* A fenced commit: a read first (every earlier write placed), then the
 * data with the core's FI_FENCE, then its own read. */
Test(m_completion, a_fenced_commit_reads_then_writes_fenced_then_reads)
{
	unsigned first;

	learn_wsp_over_ib();
	first = g_nposts;
	cr_assert_eq(commit(g_ep, 64, 64, FI_FENCE, NULL), 0);
	cr_assert_eq(g_nposts, first + 3, "fenced: read, data, read");
	cr_assert(g_posts[first].read, "no read ahead of the fenced data");
	cr_assert(!g_posts[first + 1].read && g_posts[first + 1].addr == 64);
	cr_assert(g_posts[first + 1].flags & FI_FENCE, "the data does not "
		  "carry the core's FI_FENCE");
	cr_assert(g_posts[first + 2].read, "no read behind the fenced data");
}

/* The write failed: the commit fails with its context, once, whatever
 * the read behind it brings. */
Test(m_completion, a_failed_write_fails_its_commit)
{
	struct fi_cq_err_entry e;
	unsigned first;
	bool err;
	int ctx;

	learn_wsp_over_ib();
	first = g_nposts;
	cr_assert_eq(commit(g_ep, 0, 64, 0, &ctx), 0);
	complete_post(first, FI_EIO);
	reads_bring(5);
	complete_post(first + 1, 0);
	cr_assert(pop(&e, &err), "the commit never completed");
	cr_assert(err && e.op_context == &ctx, "the write failed, yet the "
		  "commit succeeded");
	cr_assert(!pop(&e, &err), "reported twice");
}
