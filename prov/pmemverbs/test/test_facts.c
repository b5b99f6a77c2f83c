/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Unit tests: what the initiator knows of the target's keys
 * (initiator/pmv_facts.c) over the fake core: the profile table the
 * target pushes, and the registration generations that decide whether a
 * commit may trust it.
 */
#include "engine_fixture.h"

TestSuite(facts, .init = setup, .fini = teardown);

/* Over tcp with joined requests a key the table names MHP goes to the
 * agent from its first commit: one joined write, no read. */
Test(facts, a_pushed_mhp_keys_first_commit_over_tcp_is_one_joined_write)
{
	join_requests();
	push_table(g_ep, FI_PMEM_PROFILE_MHP, 5);
	cr_assert_eq(commit(g_ep, 0, 64, 0, NULL), 0);
	cr_assert_eq(g_nposts, 1, "one write: data and request");
	cr_assert(!g_posts[0].read);
	cr_assert_eq(g_posts[0].flags & FI_DELIVERY_COMPLETE, 0);
	cr_assert_eq(g_posts[0].last_rma.addr,
		     pmv_peer_req_addr(&g_ep->peer, 1));
	cr_assert_eq(pmv_ini_method(g_ep, REGION_KEY), FI_PMEM_METHOD_AGENT);
}

/* Without joining, the table lets an MHP key's first commit take
 * read-flush (no agent), whose read still proves the generation. */
Test(facts, a_pushed_mhp_keys_first_commit_takes_read_flush_and_reads)
{
	struct fi_cq_err_entry e;
	bool err;
	int ctx;

	push_table(g_ep, FI_PMEM_PROFILE_MHP, 5);
	cr_assert_eq(commit(g_ep, 0, 64, 0, &ctx), 0);
	cr_assert_eq(g_nposts, 2, "the write and its read");
	cr_assert(g_posts[1].read);
	complete_post(0, 0);
	reads_bring(5);
	complete_post(1, 0);
	cr_assert(pop(&e, &err) && !err && e.op_context == &ctx);
	cr_assert_eq(g_ep->counters.requests_sent, 0);
}

/*
 * Writes posted before the table was read may have landed before a close
 * it reports, in memory that is gone: a key whose scope holds them is not
 * learned from the table, and its commit goes to the agent, which checks
 * their ranges against the region the key names now.
 */
Test(facts, a_key_with_earlier_writes_is_not_learned_from_the_table)
{
	join_requests();
	push_table(g_ep, FI_PMEM_PROFILE_MHP, 6);
	cr_assert_eq(pmv_ini_track(g_ep, REGION_KEY, 4096, 512), 0);
	cr_assert_eq(pmv_ini_peer_profile(g_ep, REGION_KEY),
		     FI_PMEM_PROFILE_UNKNOWN);
	cr_assert_eq(commit(g_ep, 0, 0, 0, NULL), 0);
	cr_assert_eq(g_nposts, 1);
	cr_assert_eq(g_posts[0].addr, pmv_peer_req_addr(&g_ep->peer, 1),
		     "the pure flush went to the agent");
	cr_assert_eq(g_ep->counters.requests_sent, 1);
}

/* The table names PAGE: the first commit goes to the agent at once, with
 * its request joined to the data, as with a key already learned. */
Test(facts, a_pushed_page_keys_first_commit_goes_to_the_agent)
{
	join_requests();
	push_table(g_ep, FI_PMEM_PROFILE_PAGE, 5);
	cr_assert_eq(commit(g_ep, 0, 64, 0, NULL), 0);
	cr_assert_eq(pmv_ini_peer_profile(g_ep, REGION_KEY),
		     FI_PMEM_PROFILE_PAGE);
	cr_assert_eq(pmv_ini_method(g_ep, REGION_KEY), FI_PMEM_METHOD_AGENT);
	cr_assert_eq(g_posts[0].flags & FI_DELIVERY_COMPLETE, 0);
}

/*
 * Issue 24, scenario 1: the target closed the MHP region of the key and
 * registered a PAGE one under it (its generation is 6), but the table it
 * pushed with that news is still queued behind its own writes (a tcp core
 * sends its delivery acks ahead of queued writes), so the table here
 * still says MHP in generation 5.  Nothing that arrives may complete the
 * commit on that table: it completes only on the target's word (6: the
 * agent then decides) or the agent's ack.  Seen failing on 03bf475: the
 * commit went as one FI_DELIVERY_COMPLETE write and completed, successfully,
 * at that write's completion.
 */
Test(facts, a_commit_never_completes_on_a_table_the_targets_acks_overtook)
{
	struct fi_cq_err_entry e;
	unsigned done = 0;
	bool err;
	int ctx;

	push_table(g_ep, FI_PMEM_PROFILE_MHP, 5);
	*g_ep->inbox.gen_word = 6;
	reads_bring(6);
	for (int join = 0; join < 2; join++) {
		pmv_params.join_request = join;
		cr_assert_eq(commit(g_ep, (uint64_t) join * 4096, 4096, 0,
				    &ctx), 0);
		while (done < g_nposts)
			complete_post(done++, 0);
		g_ep->hook.progress(g_ep->hook.arg);
		cr_assert(!pop(&e, &err), "completed on the stale table "
			  "(join %d)", join);
	}
}

/*
 * Issue 24, scenario 3: a write placed before the target re-registered
 * the key, then a commit decided after the initiator learned the new
 * generation: the request names the generation of that oldest write, so
 * the target refuses it rather than persisting the new region.  Seen
 * failing by mutation (the request carrying the generation known at the
 * commit instead): "gen 7, want 3".
 */
Test(facts, a_request_carries_the_generation_of_its_oldest_write)
{
	unsigned first;
	uint32_t gen;

	learn_mhp(3);
	pmv_params.method = FI_PMEM_METHOD_AGENT;
	cr_assert_eq(pmv_ini_track(g_ep, REGION_KEY, 4096, 512), 0);
	push_table(g_ep, FI_PMEM_PROFILE_PAGE, 7);
	(void) pmv_ini_peer_profile(g_ep, REGION_KEY + 1); /* reads it */
	first = g_nposts;
	cr_assert_eq(commit(g_ep, 0, 64, 0, NULL), 0);
	cr_assert_eq(g_nposts, first + 2, "data, then the request");
	gen = posted_req_gen(first + 1, 2);
	cr_assert_eq(gen, 3, "gen %u, want 3", gen);
	/* the next commit's writes are all of generation 7 */
	first = g_nposts;
	cr_assert_eq(commit(g_ep, 64, 64, 0, NULL), 0);
	gen = posted_req_gen(first + 1, 3);
	cr_assert_eq(gen, 7, "gen %u, want 7", gen);
}
