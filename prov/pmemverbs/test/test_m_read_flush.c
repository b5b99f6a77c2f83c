/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Unit tests: the read-flush method (initiator/pmv_m_read_flush.c) over
 * the fake core: a commit completes at its read, only if the read brings
 * the generation its method was chosen in and its oldest write's; else
 * the agent takes it over.
 */
#include "engine_fixture.h"

TestSuite(m_read_flush, .init = setup, .fini = teardown);

Test(m_read_flush, read_flush_completes_at_its_read)
{
	struct fi_cq_err_entry e;
	bool err;
	unsigned first;
	int ctx;

	learn_mhp(5);
	first = g_nposts;
	cr_assert_eq(commit(g_ep, 0, 64, 0, &ctx), 0);
	cr_assert_eq(g_nposts, first + 2);
	cr_assert(g_posts[first + 1].read, "a read follows the data");
	complete_post(first, 0);
	cr_assert(!pop(&e, &err), "completed before its read");
	reads_bring(5);
	complete_post(first + 1, 0);
	cr_assert(pop(&e, &err) && !err && e.op_context == &ctx);
}

/* flush_ops counts flush reads (fi_ext_pmem.h): a fenced read-flush
 * commit sends two, its fence's and its own. */
Test(m_read_flush, a_fenced_read_flush_commit_counts_two_flush_reads)
{
	int ctx[2];

	learn_mhp(5);
	cr_assert_eq(commit(g_ep, 0, 64, 0, &ctx[0]), 0);
	cr_assert_eq(g_ep->counters.flush_ops, 1);
	cr_assert_eq(commit(g_ep, 64, 64, FI_FENCE, &ctx[1]), 0);
	cr_assert_eq(g_ep->counters.flush_ops, 3, "%llu flush reads",
		     (unsigned long long) g_ep->counters.flush_ops);
}

/*
 * The target re-registered (generation 5 -> 6) while an ack of another key
 * arrived: the read-flush commit, decided in generation 5, goes to the
 * agent instead of completing.
 */
Test(m_read_flush, a_new_generation_sends_the_commit_to_the_agent)
{
	struct fi_cq_err_entry e;
	unsigned first;
	bool err;
	int ctx;

	learn_mhp(5);
	first = g_nposts;
	cr_assert_eq(commit(g_ep, 0, 64, 0, &ctx), 0);
	reads_bring(6);
	complete_post(first, 0);
	complete_post(first + 1, 0);
	cr_assert(!pop(&e, &err), "completed on a stale profile");
	cr_assert_eq(g_nposts, first + 3, "a request to the agent");
	cr_assert_eq(g_posts[first + 2].addr,
		     pmv_peer_req_addr(&g_ep->peer, 2));
	complete_post(first + 2, 0);
	ack(g_ep, 2, 0, FI_PMEM_PROFILE_PAGE, 6);
	cr_assert(pop(&e, &err) && !err && e.op_context == &ctx);
}

/*
 * A read-flush whose read brings the generation its method was chosen in
 * proves nothing of a write posted before that generation: the commit
 * goes to the agent, whose request names the older generation.  Seen
 * failing on 03bf475: the commit completed at its read.
 */
Test(m_read_flush, a_read_flush_covering_an_older_write_goes_to_the_agent)
{
	struct fi_cq_err_entry e;
	unsigned first;
	bool err;

	learn_mhp(5);
	/* an FI_IMMED commit (the agent) in flight; a write posted in
	 * generation 5 behind it; its ack then teaches generation 6 (the
	 * target closed a region) and the key's profile in it */
	cr_assert_eq(commit(g_ep, 8192, 8, FI_IMMED, NULL), 0);
	complete_post(g_nposts - 2, 0);
	complete_post(g_nposts - 1, 0);
	cr_assert_eq(pmv_ini_track(g_ep, REGION_KEY, 4096, 512), 0);
	ack(g_ep, 2, 0, FI_PMEM_PROFILE_MHP, 6);
	cr_assert(pop(&e, &err) && !err);
	first = g_nposts;
	cr_assert_eq(commit(g_ep, 0, 64, 0, NULL), 0);
	cr_assert(g_posts[first + 1].read, "a read-flush commit");
	reads_bring(6);
	complete_post(first, 0);
	complete_post(first + 1, 0);
	cr_assert(!pop(&e, &err), "completed: nothing proves the write of "
		  "generation 5 landed in this registration");
	cr_assert_eq(g_nposts, first + 3, "a request to the agent");
	cr_assert_eq(posted_req_gen(first + 2, 3), 5);
}

/* Without a table (a peer that does not push), the read proves the
 * writes and brings the generation; fenced commits read too. */
Test(m_read_flush, without_a_pushed_table_read_flush_reads)
{
	unsigned first;

	learn_mhp(5);
	first = g_nposts;
	cr_assert_eq(commit(g_ep, 0, 64, 0, NULL), 0);
	cr_assert_eq(g_nposts, first + 2);
	cr_assert_eq(g_posts[first].flags & FI_DELIVERY_COMPLETE, 0);
	cr_assert(g_posts[first + 1].read, "a read follows the data");
	push_table(g_ep, FI_PMEM_PROFILE_MHP, 5);
	first = g_nposts;
	cr_assert_eq(commit(g_ep, 64, 64, FI_FENCE, NULL), 0);
	cr_assert_eq(g_nposts, first + 3, "fenced: read, data, read");
	cr_assert_eq(g_posts[first + 1].flags & FI_DELIVERY_COMPLETE, 0);
}
