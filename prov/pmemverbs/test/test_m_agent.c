/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Unit tests: the agent method (initiator/pmv_m_agent.c) over the fake
 * core: a commit completes only at the target's ack; toward a gated peer
 * data and request go as one write with remote CQ data, toward others as
 * two; a request never lands (and could be served) before the data it
 * names is placed, in any placement order libfabric allows a core.
 */
#include "engine_fixture.h"

TestSuite(m_agent, .init = setup, .fini = teardown);

Test(m_agent, agent_commit_completes_only_at_its_ack)
{
	struct fi_cq_err_entry e;
	bool err;
	int ctx;

	cr_assert_eq(commit(g_ep, 0, 1000, 0, &ctx), 0);
	cr_assert_eq(g_nposts, 2, "data write and request");
	cr_assert(!g_posts[0].read && g_posts[0].addr == 0);
	cr_assert_eq(g_posts[1].flags & FI_INJECT, FI_INJECT);
	complete_post(0, 0);
	complete_post(1, 0);
	g_ep->hook.progress(g_ep->hook.arg);
	cr_assert(!pop(&e, &err), "completed before the target's ack");
	ack(g_ep, 1, 0, FI_PMEM_PROFILE_PAGE, 0);
	cr_assert(pop(&e, &err));
	cr_assert(!err);
	cr_assert_eq(e.op_context, &ctx);
	cr_assert(!pop(&e, &err), "reported twice");
}

Test(m_agent, joined_agent_commit_is_one_write_with_the_request_last)
{
	struct fi_cq_err_entry e;
	uint64_t buf[32];
	struct pmv_req *req;
	bool err;
	int ctx;

	join_requests();
	cr_assert_eq(commit(g_ep, 0, 1000, 0, &ctx), 0);
	cr_assert_eq(g_nposts, 1, "data and request in one write");
	cr_assert_eq(g_posts[0].iov_count, 2);
	cr_assert_eq(g_posts[0].rma_iov_count, 2);
	cr_assert(g_posts[0].addr == 0 && g_posts[0].len == 1000,
		  "the data comes first");
	cr_assert_eq(g_posts[0].last_rma.addr, pmv_peer_req_addr(&g_ep->peer, 1));
	cr_assert_eq(g_posts[0].last_rma.key, INBOX_KEY);
	cr_assert_eq(g_posts[0].flags & (FI_INJECT | FI_MORE), 0);
	req = request_of(&g_posts[0], 1, buf);
	cr_assert_eq(req->nextents, 1);
	cr_assert(req->ext[0].addr == 0 && req->ext[0].len == 1000,
		  "the request names the commit's range");
	ack(g_ep, 1, 0, FI_PMEM_PROFILE_PAGE, 0);
	cr_assert(!pop(&e, &err), "completed with its write in flight");
	complete_post(0, 0);
	cr_assert(pop(&e, &err) && !err && e.op_context == &ctx);
	cr_assert(!pop(&e, &err), "reported twice");
}

/*
 * The weakest placement libfabric's rules allow a core: writes placed in
 * the order they were posted (FI_ORDER_WAW), the segments of one write in
 * any order ("RMA ordering applies between two operations, and not
 * within a single data transfer", fi_endpoint(3)).  g_placed marks the
 * region's bytes placed so far; a request that lands could be served at
 * once, so every byte it names must be placed by then.
 */
static uint8_t g_placed[16384];
static unsigned g_requests_landed;

/* The request slot seq that the inbox address addr names (0: none). */
static uint64_t slot_seq(uint64_t addr)
{
	for (uint64_t seq = 1; seq <= PMV_SLOTS; seq++)
		if (pmv_peer_req_addr(&g_ep->peer, seq) == addr)
			return seq;
	return 0;
}

/* Request post p carries in its last segment may be served: its ranges
 * placed? */
static void request_servable(const struct post *p)
{
	uint64_t buf[32], seq = slot_seq(p->last_rma.addr);
	struct pmv_req *req = request_of(p, seq, buf);
	const struct pmv_extent *e;

	for (unsigned i = 0; i < req->nextents; i++) {
		e = &req->ext[i];
		cr_assert_leq(e->addr + e->len, sizeof(g_placed));
		for (uint64_t b = e->addr; b < e->addr + e->len; b++)
			cr_assert(g_placed[b], "request %llu landed (and could "
				  "be served) before byte %llu of the data it "
				  "names was placed",
				  (unsigned long long) seq,
				  (unsigned long long) b);
	}
	g_requests_landed++;
}

/*
 * True if post p's request is gated: the target serves it only once p's
 * completion is read, which fi_cq(3) gives only when all of p's data is
 * available.  The request says so, and p carries the remote CQ data that
 * names the target's gate and the request's seq.
 */
static bool request_gated(const struct post *p)
{
	uint64_t buf[32], seq = slot_seq(p->last_rma.addr);
	struct pmv_req *req = request_of(p, seq, buf);

	return (req->flags & PMV_REQ_GATED) && (p->flags & FI_REMOTE_CQ_DATA) &&
	       (p->data >> 48) == PMV_GATE_MAGIC &&
	       ((p->data >> 32) & 0xffff) == GATE_ID &&
	       (uint32_t) p->data == (uint32_t) seq;
}

/* Places post i's remote segments last first; then its completion. */
static void place_last_first(unsigned i)
{
	const struct post *p = &g_posts[i];
	const struct fi_rma_iov *r;
	bool gated_request = false;

	for (size_t s = p->rma_iov_count; s-- > 0;) {
		r = &p->rma[s];
		if (r->key == INBOX_KEY && s + 1 == p->rma_iov_count &&
		    request_gated(p))
			gated_request = true; /* waits for the completion */
		else if (r->key == INBOX_KEY && s + 1 == p->rma_iov_count)
			request_servable(p);
		else if (r->key == REGION_KEY)
			memset(g_placed + r->addr, 1, r->len);
	}
	if (gated_request)
		request_servable(p); /* its write's completion is read */
}

/* Two agent commits placed in the weakest order the rules allow. */
static void commit_two_and_place_them(void)
{
	memset(g_placed, 0, sizeof(g_placed));
	g_requests_landed = 0;
	cr_assert_eq(commit(g_ep, 0, 1000, 0, NULL), 0);
	cr_assert_eq(commit(g_ep, 8192, 200, 0, NULL), 0);
	for (unsigned i = 0; i < g_nposts; i++)
		place_last_first(i);
	cr_assert_eq(g_requests_landed, 2, "two agent requests, %u landed",
		     g_requests_landed);
}

Test(m_agent, default_agent_commits_requests_land_after_their_data_in_any_segment_order)
{
	pmv_params.join_request = PMV_JOIN_REQUEST_DEFAULT;
	commit_two_and_place_them(); /* toward a gated peer: one write each */
	cr_assert_eq(g_nposts, 2, "not one write per commit");
	g_nposts = 0;
	g_ep->peer.gated = false;
	commit_two_and_place_them(); /* toward one without: two writes each */
	cr_assert_eq(g_nposts, 4, "not two writes per commit");
}

/*
 * Toward a peer that offered a gate, an agent commit is one write: its
 * data, then its request (marked gated), with remote CQ data naming the
 * peer's gate and the request's seq.
 */
Test(m_agent, a_gated_agent_commit_is_one_write_with_remote_cq_data)
{
	uint64_t buf[32];
	struct pmv_req *req;

	pmv_params.join_request = PMV_JOIN_REQUEST_DEFAULT;
	for (uint64_t seq = 1; seq <= 2; seq++) {
		cr_assert_eq(commit(g_ep, seq * 4096, 64, 0, NULL), 0);
		cr_assert_eq(g_nposts, seq, "not one write per commit");
		req = request_of(&g_posts[seq - 1], seq, buf);
		cr_assert(req->flags & PMV_REQ_GATED, "the request is not "
			  "marked gated");
		cr_assert(g_posts[seq - 1].flags & FI_REMOTE_CQ_DATA,
			  "the write carries no remote CQ data");
		cr_assert_eq(g_posts[seq - 1].data,
			     (uint64_t) PMV_GATE_MAGIC << 48 |
			     (uint64_t) GATE_ID << 32 | seq,
			     "remote CQ data 0x%llx",
			     (unsigned long long) g_posts[seq - 1].data);
	}
}

/* Toward a peer without a gate: two writes, neither with remote CQ data. */
Test(m_agent, toward_an_ungated_peer_an_agent_commit_is_two_writes)
{
	uint64_t buf[32];

	pmv_params.join_request = PMV_JOIN_REQUEST_DEFAULT;
	g_ep->peer.gated = false;
	cr_assert_eq(commit(g_ep, 0, 64, 0, NULL), 0);
	cr_assert_eq(g_nposts, 2, "data and request not in two writes");
	cr_assert_eq((g_posts[0].flags | g_posts[1].flags) & FI_REMOTE_CQ_DATA,
		     0, "remote CQ data toward a peer without a gate");
	cr_assert_not(request_of(&g_posts[1], 1, buf)->flags & PMV_REQ_GATED);
}

Test(m_agent, inject_commits_and_full_iovs_keep_two_writes)
{
	static uint8_t buf[4][16];
	struct iovec iov[4];
	struct fi_rma_iov rma = { .addr = 0, .len = 64, .key = REGION_KEY };
	struct fi_msg_rma msg = { .msg_iov = iov, .iov_count = 4,
				  .rma_iov = &rma, .rma_iov_count = 1 };
	int ctx;

	join_requests();
	for (int i = 0; i < 4; i++)
		iov[i] = (struct iovec) { .iov_base = buf[i], .iov_len = 16 };
	cr_assert_eq(pmv_commit_writemsg(g_ep, &msg, FI_COMMIT_COMPLETE), 0);
	cr_assert_eq(g_nposts, 2, "no segment left for the request");
	cr_assert_eq(commit(g_ep, 128, 64, FI_INJECT, &ctx), 0);
	cr_assert_eq(g_nposts, 4, "an injected commit's request is its own "
		     "write");
}

/*
 * Toward a gated peer a request sent on its own (an injected commit's)
 * carries remote CQ data too, naming the gate and its seq, and is not
 * marked gated (write-after-write ordering places it after its data): the
 * target learns of every request from its receive CQ (pmv_serve_gates)
 * and its reads look into no inbox without one.
 */
Test(m_agent, toward_a_gated_peer_a_request_sent_alone_carries_remote_cq_data)
{
	uint64_t buf[32];

	join_requests();
	cr_assert_eq(commit(g_ep, 128, 64, FI_INJECT, NULL), 0);
	cr_assert_eq(g_nposts, 2, "an injected commit's request is its own "
		     "write");
	cr_assert_eq(g_posts[0].flags & FI_REMOTE_CQ_DATA, 0,
		     "the data write carries remote CQ data");
	cr_assert(g_posts[1].flags & FI_REMOTE_CQ_DATA,
		  "the request carries no remote CQ data");
	cr_assert_eq(g_posts[1].data, (uint64_t) PMV_GATE_MAGIC << 48 |
		     (uint64_t) GATE_ID << 32 | 1, "remote CQ data 0x%llx",
		     (unsigned long long) g_posts[1].data);
	cr_assert_not(request_of(&g_posts[1], 1, buf)->flags & PMV_REQ_GATED,
		      "a request sent after its data is marked gated");
}
