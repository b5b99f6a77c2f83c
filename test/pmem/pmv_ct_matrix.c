/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_ct_matrix.c - Initiator: the oracle and contents workloads (sizes x
 * patterns x fence x FI_IMMED x posting methods) and their final checks.
 */

#include "pmv_ct.h"

/* ================================================================== */
/* Initiator: writes and commits                                      */
/* ================================================================== */

enum pattern { PAT_SINGLE, PAT_MULTI, PAT_FLUSH, PAT_COUNT };
static const char *const k_pattern_names[PAT_COUNT] = { "single", "multi",
							 "flush" };

/* Misalignments of a write's start within a page, cycled through. */
static const uint64_t k_misalign[] = { 1, 7, 63, 0, 4095, 65, 3, 2049 };

/*
 * Plans a write of size bytes in slot of region (slots never overlap, so a
 * batch's writes do not either), with its data generated into the source
 * buffer.  Two segments leave a gap between them at the target; they are
 * used only where the endpoint's rma_iov_limit allows two (tcp: 4; verbs:
 * 1, where badinput's commit-two-segments checks such commits).
 */
static void plan_wr(struct wr *w, enum region_id region, unsigned slot,
		    size_t size, bool two_segs)
{
	uint64_t span = SLOT_SIZE - size - 64 - 4096;
	uint64_t base = slot * (uint64_t)SLOT_SIZE + (rnd(span) & ~4095ull);
	uint64_t gap = 1 + rnd(63);

	*w = (struct wr){ .region = region,
			  .nseg = two_segs && size > 1 &&
				  g_net.rma_iov_limit >= 2 ? 2 : 1,
			  .seed = (g_opt.seed << 40) ^ ++g_s.writes };
	w->off[0] = base + k_misalign[rnd(ARRAY_LEN(k_misalign))];
	w->len[0] = w->nseg > 1 ? size / 2 : size;
	w->off[1] = w->off[0] + w->len[0] + gap;
	w->len[1] = size - w->len[0];
	w->src = g_s.src + slot * (size_t)LOCAL_STRIDE + rnd(64);
	for (unsigned i = 0; i < w->nseg; i++)
		gen_fill(w->src + (i ? w->len[0] : 0), w->len[i], w->seed,
			 w->off[i]);
}

/* Adds a write to its key's pending ranges and to the placed list. */
static void track_wr(const struct wr *w)
{
	uint64_t mark = oracle_count();
	struct pend_list *pl = &g_s.pending[w->region];

	for (unsigned i = 0; i < w->nseg; i++) {
		struct range_desc r = { .region = w->region, .off = w->off[i],
					.len = w->len[i], .seed = w->seed };

		pl->v = grow(pl->v, pl->n, &pl->cap, sizeof(*pl->v));
		pl->v[pl->n++] = (struct pend){ rma_addr(w->region, w->off[i]),
						w->len[i], mark };
		range_add(&g_s.placed, &r);
		if (g_shadow[w->region])
			gen_fill(g_shadow[w->region] + w->off[i], w->len[i],
				 w->seed, w->off[i]);
	}
}

static struct fi_msg_rma wr_msg(const struct wr *w, struct msg_parts *mp,
				void *context)
{
	uint64_t key = g_s.reg[w->region].key;

	for (unsigned i = 0; i < w->nseg; i++) {
		mp->iov[i] = (struct iovec){ w->src + (i ? w->len[0] : 0),
					     w->len[i] };
		mp->desc[i] = g_s.src_desc;
		mp->rma[i] = (struct fi_rma_iov){ rma_addr(w->region, w->off[i]),
						  w->len[i], key };
	}
	return (struct fi_msg_rma){ .msg_iov = mp->iov, .desc = mp->desc,
				    .iov_count = w->nseg, .rma_iov = mp->rma,
				    .rma_iov_count = w->nseg,
				    .context = context };
}

/* A plain write's completion: it must succeed. */
static void plain_write_done(struct op *op)
{
	if (op->err)
		die("plain write failed: %s (%s)", errname(op->err),
		    op->errtext);
}

/* fi_writev with the data split in two local iovs (one remote range). */
static ssize_t post_writev(const struct wr *w, struct op *op)
{
	size_t half = w->len[0] / 2;
	struct iovec iov[2] = { { w->src, w->len[0] - half },
				{ w->src + w->len[0] - half, half } };
	void *desc[2] = { g_s.src_desc, g_s.src_desc };

	return fi_writev(g_s.main.ep, iov, desc, half ? 2 : 1, 0,
			 rma_addr(w->region, w->off[0]),
			 g_s.reg[w->region].key, &op->fictx);
}

/* Posts one plain (tracked, not committing) write with method m. */
static ssize_t post_plain_once(const struct wr *w, enum method m,
			       struct op *op)
{
	struct msg_parts mp;
	struct fi_msg_rma msg;
	uint64_t key = g_s.reg[w->region].key;

	switch (m) {
	case M_WRITEV:
		return post_writev(w, op);
	case M_INJECT:
		return fi_inject_write(g_s.main.ep, w->src, w->len[0], 0,
				       rma_addr(w->region, w->off[0]), key);
	case M_WRITEMSG:
		msg = wr_msg(w, &mp, &op->fictx);
		return fi_writemsg(g_s.main.ep, &msg, 0);
	default:
		return fi_write(g_s.main.ep, w->src, w->len[0], g_s.src_desc, 0,
				rma_addr(w->region, w->off[0]), key,
				&op->fictx);
	}
}

/* Plans and posts a plain write; the method rotates with every write. */
static void post_plain(enum region_id region, unsigned slot, size_t size)
{
	enum method m = (enum method)(g_s.writes % M_COUNT);
	struct op *op = op_alloc(OP_WRITE, &g_s.main);
	struct wr w;
	ssize_t ret;

	if (m == M_INJECT && size > g_net.inject_size)
		m = M_WRITE;
	plan_wr(&w, region, slot, size, m == M_WRITEMSG);
	track_wr(&w);
	op->autofree = true;
	op->on_done = plain_write_done;
	POST(ret, post_plain_once(&w, m, op));
	if (ret)
		die("plain write (method %d, %zu bytes): %s", m, size,
		    errname(ret));
	if (m == M_INJECT)
		op_free(op); /* an inject write raises no completion */
}

/*
 * A commit went by send exactly when the matrix says so (ep_counters'
 * sends).  A fenced commit whose key has earlier uncommitted writes must
 * make them durable before its data is placed: by send, one request names
 * them and carries the data; otherwise they are flushed on their own
 * first, one more request or flush op than the commit itself (and the
 * data then goes by send if it fits a request alone).  Earlier ranges
 * that do not fit the request (the scope keeps distant writes apart) go
 * ahead in spill requests: at most one per earlier write.
 */
static bool fence_requests_ok(uint64_t sends, uint64_t sent)
{
	uint64_t spills = g_commit.npre;

	enum fi_pmem_method m = expected_method(
		g_s.reg[g_commit.region].profile, g_commit.profile_known,
		g_commit.immed);
	bool scoped = g_commit.fence && g_commit.npre;
	bool want_send = expected_send(m, g_commit.fence, g_commit.len,
				       g_commit.npre > 0);
	bool alone = scoped && !want_send &&
		     expected_send(m, true, g_commit.len, false);

	if (alone)
		return sends == 1 && sent >= 2 && sent <= 2 + spills;
	return sends == want_send &&
	       (!scoped || (sends ? sent >= 1 && sent <= 1 + spills :
				    sent >= 2));
}

static void check_fence_requests(void)
{
	struct fi_pmem_ep_counters c = main_counters();
	uint64_t sends = c.sends - g_commit.sends_before;
	uint64_t sent = c.requests_sent - g_commit.requests_before +
			c.flush_ops - g_commit.flush_before;
	bool want_send = expected_send(
		expected_method(g_s.reg[g_commit.region].profile,
				g_commit.profile_known, g_commit.immed),
		g_commit.fence, g_commit.len, g_commit.npre > 0);

	g_s.sends_counted += sends;
	if (fence_requests_ok(sends, sent)) {
		g_s.fences_counted += g_commit.fence && g_commit.npre;
		return;
	}
	if (g_s.fence_request_errors++)
		return;
	snprintf(g_s.fence_detail, sizeof(g_s.fence_detail), "commit #%u "
		 "(%s) sent %" PRIu64 " request(s) and flush op(s), %" PRIu64
		 " by send; expected %s", g_commit.index, g_commit.what, sent,
		 sends, want_send ? "1 by send (the scope's extents, then the "
		 "data)" : g_commit.fence && g_commit.npre ? ">= 2 (flush of "
		 "the earlier ranges, then the commit), none by send" :
		 "none by send");
}

/* Keeps the ranges an FI_IMMED commit covered, for check_immed_timing. */
static void keep_immed_scope(void)
{
	const struct pend_list *pl = &g_s.pending[g_commit.region];

	for (size_t i = 0; i < pl->n; i++) {
		g_s.immed_scopes = grow(g_s.immed_scopes, g_s.n_immed_scopes,
					&g_s.cap_immed_scopes,
					sizeof(*g_s.immed_scopes));
		g_s.immed_scopes[g_s.n_immed_scopes++] = (struct immed_scope){
			g_commit.immed_index, g_commit.region, pl->v[i] };
	}
}

/* A workload commit completed: check it, then forget the key's scope. */
static void workload_commit_done(struct op *op)
{
	if (op->err) {
		verdict(false, check_name("commits"), "commit #%u (%s): "
			"expected success got %s (%s)", g_commit.index,
			g_commit.what, errname(op->err), op->errtext);
		exit(EXIT_FAIL);
	}
	if ((op->flags & OP_CLASS_FLAGS) != COMMIT_FLAGS &&
	    !g_s.bad_commit_flags++)
		g_s.first_bad_flags = op->flags;
	check_commit_durable();
	check_fence_requests();
	if (g_commit.immed)
		keep_immed_scope();
	g_s.pending[g_commit.region].n = 0;
	g_s.commits++;
}

/* One point of the matrix. */
struct mcase {
	size_t size;
	enum pattern pat;
	bool fence, immed;
	unsigned index;
};

static uint64_t commit_flags(const struct mcase *mc)
{
	return FI_COMMIT_COMPLETE | (mc->fence ? FI_FENCE : 0) |
	       (mc->immed ? FI_IMMED : 0);
}

/*
 * Posts the commit of region's key: carrying w, or a pure flush (w NULL),
 * and waits for it and every other write in flight.
 */
static void commit_and_wait(const struct mcase *mc, enum region_id region,
			    struct wr *w)
{
	struct op *op = op_alloc(OP_COMMIT, &g_s.main);
	struct fi_rma_iov flush = { rma_addr(region, 0), 0,
				    g_s.reg[region].key };
	struct msg_parts mp;
	struct fi_msg_rma msg = { .rma_iov = &flush, .rma_iov_count = 1,
				  .context = &op->fictx };
	ssize_t ret;

	g_commit.region = region;
	g_commit.fence = mc->fence;
	g_commit.immed = mc->immed;
	g_commit.immed_index = g_s.nimmed;
	g_commit.requests_before = main_counters().requests_sent;
	g_commit.flush_before = main_counters().flush_ops;
	g_commit.sends_before = main_counters().sends;
	g_commit.len = w && w->nseg == 1 ? w->len[0] : 0;
	g_commit.announced = g_net.pmem->method(g_s.main.ep,
						g_s.reg[region].key);
	g_commit.profile_known =
		g_net.pmem->peer_profile(g_s.main.ep, g_s.reg[region].key) !=
		FI_PMEM_PROFILE_UNKNOWN;
	g_commit.index = mc->index;
	g_commit.npre = g_s.pending[region].n;
	if (w) {
		track_wr(w);
		msg = wr_msg(w, &mp, &op->fictx);
	}
	g_commit.nown = g_s.pending[region].n - g_commit.npre;
	snprintf(g_commit.what, sizeof(g_commit.what), "%s %zu bytes%s%s",
		 k_pattern_names[mc->pat], mc->size, mc->fence ? " FI_FENCE" : "",
		 mc->immed ? " FI_IMMED" : "");
	msg.data = mc->immed ? (0xd1a7000000000000ull | ++g_s.immed_seq) &
			       g_net.cq_data_mask : 0;
	op->on_done = workload_commit_done;
	POST(ret, fi_writemsg(g_s.main.ep, &msg, commit_flags(mc)));
	if (ret)
		die("commit #%u (%s): fi_writemsg: %s", mc->index,
		    g_commit.what, errname(ret));
	if (mc->immed && g_s.nimmed < MAX_IMMED)
		g_s.immed[g_s.nimmed++] = msg.data;
	op_wait_or_die(op, "commit");
	op_free(op);
}

/* Waits until every plain write has completed. */
static void wait_writes(void)
{
	int64_t deadline = deadline_in(STEP_MS);

	for (size_t i = 0; i < MAX_OPS; i++) {
		while (g_ops[i].kind == OP_WRITE && g_ops[i].busy) {
			if (!progress() && !before(deadline))
				die("plain writes did not complete within %d "
				    "ms", STEP_MS);
			pause_briefly();
		}
	}
}

/*
 * One matrix case.  The main key alternates between the two pmem
 * regions; every third case also writes the other key (a write that must
 * stay in that key's scope until its own commit).
 */
static void run_case(const struct mcase *mc)
{
	enum region_id key = mc->index % 2 ? REG_B : REG_A;
	enum region_id other = key == REG_A ? REG_B : REG_A;
	unsigned n = mc->pat == PAT_SINGLE ? 1 : 3 + (unsigned)rnd(3);
	unsigned plain = mc->pat == PAT_FLUSH ? n : n - 1;
	struct wr last;

	if (mc->index % 3 == 1)
		post_plain(other, NOISE_SLOT, mc->size < 4096 ? mc->size : 4099);
	for (unsigned i = 0; i < plain; i++)
		post_plain(key, i, mc->size);
	if (mc->pat == PAT_FLUSH) {
		commit_and_wait(mc, key, NULL);
	} else {
		plan_wr(&last, key, n - 1, mc->size, mc->index % 3 == 2);
		commit_and_wait(mc, key, &last);
	}
	wait_writes();
}

/*
 * The workload's matrix: each size (odd offsets come from k_misalign),
 * repeated g_opt.reps times divided by reps_div (fewer for the large ones:
 * time bound), times each row of k_combos, in this order.
 */
struct size_row {
	size_t size;
	unsigned reps_div;
};

static const struct size_row k_sizes[] = {
	{ 1, 1 }, { 7, 1 }, { 64, 1 }, { 100, 1 }, { 4096, 1 }, { 4099, 1 },
	{ 65536, 2 }, { MAX_WRITE, 5 },
};

struct combo_row {
	enum pattern pat;
	bool fence, immed;
};

static const struct combo_row k_combos[] = {
	/* pattern   FI_FENCE FI_IMMED */
	{ PAT_SINGLE, false, false },
	{ PAT_SINGLE, true,  false },
	{ PAT_SINGLE, false, true  },
	{ PAT_SINGLE, true,  true  },
	{ PAT_MULTI,  false, false },
	{ PAT_MULTI,  true,  false },
	{ PAT_MULTI,  false, true  },
	{ PAT_MULTI,  true,  true  },
	{ PAT_FLUSH,  false, false },
	{ PAT_FLUSH,  true,  false },
	{ PAT_FLUSH,  false, true  },
	{ PAT_FLUSH,  true,  true  },
};

/* Repetitions of a size row: g_opt.reps / reps_div, rounded up. */
static unsigned reps_for(const struct size_row *row)
{
	return (g_opt.reps + row->reps_div - 1) / row->reps_div;
}

/* Runs every row of k_combos for every size row, its repetitions each. */
static void run_matrix(void)
{
	unsigned index = 0;

	for (size_t s = 0; s < ARRAY_LEN(k_sizes); s++) {
		for (unsigned rep = 0; rep < reps_for(&k_sizes[s]); rep++) {
			for (size_t c = 0; c < ARRAY_LEN(k_combos); c++) {
				struct mcase mc = {
					.size = k_sizes[s].size,
					.pat = k_combos[c].pat,
					.fence = k_combos[c].fence,
					.immed = k_combos[c].immed,
					.index = index++,
				};

				run_case(&mc);
			}
		}
	}
}

/* Final pure flush of a key, checking what the peer then reports. */
static void final_flush(enum region_id region)
{
	struct mcase mc = { .pat = PAT_FLUSH, .index = g_s.commits };

	commit_and_wait(&mc, region, NULL);
	expect_profile(region == REG_A ? "peer-profile-a" :
						    "peer-profile-b",
		       g_net.pmem->peer_profile(g_s.main.ep, g_s.reg[region].key),
		       g_s.want_profile, "after the final commit to the key");
}

/* oracle, contents and fault: the matrix, then the target's report. */
void run_workload(void)
{
	struct report *rep;

	check_profiles();
	check_method();
	run_matrix();
	final_flush(REG_A);
	final_flush(REG_B);
	drain_cqs();
	check_commits();
	check_counters();
	if (g_log)
		verdict(true, check_name("oracle"), "%u commits: %u by the "
			"agent, all %u written ranges covered by extents "
			"persisted before the completion, %u fences ordered; %u "
			"without the agent, all %u ranges in the target's file "
			"at the completion", g_s.commits,
			g_s.commits - g_s.flush_commits, g_s.ranges_checked,
			g_s.fences_checked, g_s.flush_commits,
			g_s.ranges_visible);
	if (g_s.method_errors)
		verdict(false, check_name("method"), "%s (%u commits wrong)",
			g_s.method_detail, g_s.method_errors);
	else
		verdict(true, check_name("method"), "%u commits to %s regions "
			"each used the method the matrix gives (%u without the "
			"agent)", g_s.commits,
			profile_name(g_s.reg[REG_A].profile), g_s.flush_commits);
	if (g_s.fence_request_errors)
		verdict(false, check_name("fence"), "%s (%u of %u fenced "
			"commits)", g_s.fence_detail, g_s.fence_request_errors,
			g_s.fences_counted);
	else
		verdict(true, check_name("fence"), "%u fenced commits with "
			"earlier writes each made them durable first; %u "
			"commits went by send, each when the matrix says so",
			g_s.fences_counted, g_s.sends_counted);
	if (g_opt.test == TEST_FAULT) {
		verdict(false, check_name("detect"), "expected the oracle to "
			"catch the skipped extent got every commit covered");
	}
	rep = initiator_finish(g_opt.test == TEST_CONTENTS);
	check_report_immed(rep);
	if (g_log && rep->immed_log_counted)
		check_immed_timing(rep);
	check_report_file(rep);
	free(rep);
}
