/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_ct_sc_counters.c - Scenario counters: RMA counters on FI_RMA_PMEM
 * endpoints count a commit at durability, never before.
 */

#include "pmv_ct.h"

/* ---- scenario counters: RMA counters on an FI_RMA_PMEM endpoint ---- */

#define CN_COMMITS 8
#define CN_LEN ((size_t)256 << 10)

/* fi_ep_bind's answer for a counter of these events on a fresh, unconnected
 * FI_RMA_PMEM endpoint. */
static int cn_try_bind(uint64_t events)
{
	struct fi_cntr_attr attr = { .events = FI_CNTR_EVENTS_COMP,
				     .wait_obj = FI_WAIT_NONE };
	struct fid_cntr *cntr;
	struct fid_ep *ep;
	int ret;

	CHECK(fi_endpoint(g_net.domain, g_net.info, &ep, NULL));
	CHECK(fi_cntr_open(g_net.domain, &attr, &cntr, NULL));
	ret = fi_ep_bind(ep, &cntr->fid, events);
	CHECK(fi_close(&ep->fid));
	CHECK(fi_close(&cntr->fid));
	return ret;
}

/* Commits of the scenario durable now by the oracle's evidence. */
static unsigned cn_durable_now(void)
{
	unsigned n = 0;

	for (size_t i = 0; i < g_sc.nops; i++)
		n += g_sc.ops[i].posted && sop_covered(&g_sc.ops[i], NULL);
	return n;
}

/* The first sample where the counter was ahead of durability. */
static struct {
	unsigned early;
	uint64_t value, durable;
} g_cn;

/* Reads the counter, then the oracle: a value above the commits durable
 * after the read means it counted one before it was durable. */
static void cn_sample(struct fid_cntr *cntr)
{
	uint64_t v = fi_cntr_read(cntr);
	unsigned durable = cn_durable_now();

	if (v > durable && !g_cn.early++) {
		g_cn.value = v;
		g_cn.durable = durable;
	}
}

/* Commits CN_LEN bytes on c (with flags) and waits, sampling the counter
 * (if any). */
static void cn_commit(struct conn *c, unsigned i, struct fid_cntr *cntr,
		      uint64_t flags)
{
	struct sop *s = sop_new(SOP_COMMIT, 0, REG_A, i * (CN_LEN + 4096) + 9,
				CN_LEN, sc_bytes(CN_LEN));
	int64_t deadline = deadline_in(STEP_MS);

	s->oracle = true;
	sop_post_retry(c->ep, s, flags, i, NULL);
	while (!s->ncomp && before(deadline)) {
		if (cntr)
			cn_sample(cntr);
		if (!progress())
			pause_briefly();
	}
}

/* Verdict on a counter: bound (fi_ep_bind 0), exact and never ahead of
 * durability. */
static void cn_verdict(const char *check, int bind_ret, bool bound_ok,
		       const char *detail)
{
	if (bind_ret)
		verdict(false, check_name(check), "expected fi_ep_bind to "
			"accept the counter (it counts at durability) got %s",
			errname(bind_ret));
	else
		verdict(bound_ok, check_name(check), "%sfi_ep_bind accepted "
			"it: %s", bound_ok ? "" : "expected a counter exact and "
			"never ahead of durability, got ", detail);
}

/* The initiator's FI_WRITE counter over CN_COMMITS commits. */
static void cn_write_verdict(int bind_ret, struct fid_cntr *cntr)
{
	char detail[200] = "";
	bool ok = true;
	uint64_t v;

	if (cntr) {
		sc_drain(NULL);
		v = fi_cntr_read(cntr);
		ok = !g_cn.early && v == CN_COMMITS;
		snprintf(detail, sizeof(detail), "it read %" PRIu64 " after "
			 "%d commits; %u samples were ahead of durability (the "
			 "first: %" PRIu64 " counted, %" PRIu64 " durable)", v,
			 CN_COMMITS, g_cn.early, g_cn.value, g_cn.durable);
	}
	cn_verdict("counters/write", bind_ret, ok, detail);
}

#define CN_WAITS 6

/* Posts commit i of CN_LEN bytes on c. */
static void cn_post(struct conn *c, unsigned i)
{
	struct sop *s = sop_new(SOP_COMMIT, 0, REG_A, i * (CN_LEN + 4096) + 9,
				CN_LEN, sc_bytes(CN_LEN));

	s->oracle = true;
	sop_post_retry(c->ep, s, 0, 0, NULL);
}

/* Commits of ops [from, nops) durable now by the oracle's evidence. */
static unsigned cn_durable_since(size_t from)
{
	unsigned n = 0;

	for (size_t i = from; i < g_sc.nops; i++)
		n += g_sc.ops[i].posted && sop_covered(&g_sc.ops[i], NULL);
	return n;
}

/*
 * fi_cntr_wait on the FI_WRITE counter, with nothing else read: commit k
 * posted, the wait for base + k must return with the oracle already
 * showing k of these commits durable.  Returns how many returns came early (or not
 * at all); *detail says the first.
 */
static unsigned cn_wait_batch(struct conn *c, struct fid_cntr *cntr,
			      char *detail, size_t size)
{
	uint64_t base = fi_cntr_read(cntr);
	size_t from = g_sc.nops;
	unsigned bad = 0, durable;
	int ret;

	for (unsigned k = 1; k <= CN_WAITS; k++) {
		cn_post(c, CN_COMMITS + k - 1);
		ret = fi_cntr_wait(cntr, base + k, STEP_MS);
		durable = cn_durable_since(from);
		if ((ret || durable < k) && !bad++)
			snprintf(detail, size, "fi_cntr_wait(%" PRIu64 ") "
				 "returned %s with %u of the commits durable",
				 base + k, errname(ret), durable);
	}
	return bad;
}

/*
 * The FI_WRITE counter's other events: a plain write counts once the
 * core completes it, a refused commit only in the error count (and ends
 * a wait with -FI_EAVAIL), and the count stays exact: pmemverbs's own
 * writes and reads (data, requests, acks, read-flushes) never move it.
 */
static void cn_wait_verdict(struct conn *c, struct fid_cntr *cntr)
{
	char detail[300] = "every return came with its commits durable";
	unsigned bad = cn_wait_batch(c, cntr, detail, sizeof(detail));
	uint64_t v, errs = fi_cntr_readerr(cntr);
	struct sop *w = sop_new(SOP_WRITE, 0, REG_B, 9, 4096, sc_bytes(4096));
	struct cmsg m;
	struct outcome o = { 0 };
	struct op *op;
	ssize_t pret;
	int wret;

	verdict(!bad, check_name("counters/wait-durable"), "%u of %d returns "
		"early: %s", bad, CN_WAITS, detail);
	v = fi_cntr_read(cntr);
	sop_post_retry(c->ep, w, 0, 0, NULL);
	wret = fi_cntr_wait(cntr, v + 1, STEP_MS);
	expect_ret("counters/plain-write-counts", wret, 0);
	v = fi_cntr_read(cntr);
	/* the wait is in progress when the refusal comes */
	op = post_commit(c, cmsg_flush(&m, REG_A, UNKNOWN_KEY),
			 FI_COMMIT_COMPLETE, &pret);
	wret = op ? fi_cntr_wait(cntr, v + 1, STEP_MS) : (int)pret;
	if (op)
		o = commit_outcome(op);
	verdict(o.completed && o.err && fi_cntr_readerr(cntr) == errs + 1 &&
		fi_cntr_read(cntr) == v && wret == -FI_EAVAIL,
		check_name("counters/error-count"), "a refused commit (%s): "
		"error count +%" PRIu64 ", count +%" PRIu64 ", a wait for one "
		"more returned %s (expected +1, +0, -FI_EAVAIL)",
		o.completed ? fi_strerror(o.err) : "not completed",
		fi_cntr_readerr(cntr) - errs, fi_cntr_read(cntr) - v,
		errname(wret));
	sc_drain(NULL);
	expect_u64("counters/exact", fi_cntr_read(cntr),
		   CN_COMMITS + CN_WAITS + 1, "count after the commits and the "
		   "plain write (pmemverbs's own operations never count)");
}

/* The target's FI_REMOTE_WRITE counter, as the target saw it: one
 * FI_IMMED commit, counted once, at durability. */
static void cn_remote_verdict(const struct cntr_rsp *r)
{
	char detail[300];
	bool ok = r->watched && !r->early && r->covered && r->value == 1;

	snprintf(detail, sizeof(detail), "%s; it read %" PRIu64 " once the "
		 "commit's range was persisted (%s), %" PRIu64 " samples "
		 "counted before that", r->detail[0] ? r->detail : "watched",
		 r->value, r->covered ? "it was" : "it never was", r->early);
	cn_verdict("counters/remote-write", r->bind_ret, ok, detail);
}

/*
 * counters: FI_WRITE (initiator) and FI_REMOTE_WRITE (target) counters on
 * FI_RMA_PMEM endpoints bind and count no commit before it is durable
 * (sampled, and at each return of fi_cntr_wait), exactly (pmemverbs's own
 * operations never count), a plain write at its completion, a refused
 * commit in the error count; the target's counts its FI_IMMED commit
 * only; FI_SEND counters bind as usual.
 */
void sc_counters(void)
{
	struct fi_cntr_attr attr = { .events = FI_CNTR_EVENTS_COMP,
				     .wait_obj = FI_WAIT_UNSPEC };
	struct cntr_watch_req wr = { .region = REG_A, .off = 9, .len = CN_LEN };
	struct fid_cntr *cntr;
	struct cntr_rsp rr;
	struct conn c = { 0 };
	int wret;

	sc_setup(CN_COMMITS + CN_WAITS + 1,
		 (CN_COMMITS + CN_WAITS + 1) * (CN_LEN + 4096));
	expect_ret("counters/send-counter-binds", cn_try_bind(FI_SEND), 0);
	CHECK(fi_cntr_open(g_net.domain, &attr, &cntr, NULL));
	track_fid(&cntr->fid);
	conn_open_on(&c, g_net.info, open_eq(), open_cq(), open_cq());
	wret = fi_ep_bind(c.ep, &cntr->fid, FI_WRITE);
	CHECK(fi_enable(c.ep));
	watch_conn(&c, true);
	conn_connect(&c, KIND_CNTR);
	ctl_send(MSG_CNTR_WATCH, &wr, sizeof(wr));
	memcpy(&rr, ctl_expect(MSG_CNTR_READY, sizeof(rr), NULL), sizeof(rr));
	ctl_release();
	for (unsigned i = 0; i < CN_COMMITS; i++) {
		cn_commit(&c, i, wret ? NULL : cntr, i ? 0 : FI_IMMED);
		if (!i && rr.watched) {
			memcpy(&rr, ctl_expect(MSG_CNTR_RESULT, sizeof(rr),
					       NULL), sizeof(rr));
			ctl_release();
		}
	}
	cn_write_verdict(wret, wret ? NULL : cntr);
	if (!wret)
		cn_wait_verdict(&c, cntr);
	cn_remote_verdict(&rr);
	initiator_close_conn(&c);
}

/*
 * Samples the target's counter, then the oracle, until the watched range
 * is persisted (bounded): a count before that is a count ahead of
 * durability.
 */
static void cntr_watch(const struct cntr_watch_req *req, uint64_t mark,
		       struct cntr_rsp *rsp)
{
	const struct region *reg = &g_t.reg[req->region];
	uint64_t addr = reg->rma_base + req->off;
	int64_t deadline = deadline_in(STEP_MS / 2);

	while (!rsp->covered && before(deadline)) {
		uint64_t v = fi_cntr_read(g_t.rw_cntr);

		rsp->covered = oracle_first_hole(reg->key, addr, req->len, mark,
						 oracle_count()) >=
			       addr + req->len;
		if (v && !rsp->covered && !rsp->early++)
			snprintf(rsp->detail, sizeof(rsp->detail), "it read %"
				 PRIu64 " before the agent had persisted the "
				 "commit", v);
		if (!rsp->covered)
			pause_briefly();
	}
	deadline = deadline_in(DRAIN_MS);
	while (before(deadline))
		pause_briefly();
	rsp->value = fi_cntr_read(g_t.rw_cntr);
}

/*
 * The target's side of counters: says whether its FI_REMOTE_WRITE counter
 * was bound (KIND_CNTR); if it was, watches it while the initiator commits
 * the range asked for, then reports.
 */
void target_on_cntr_watch(const struct cntr_watch_req *req)
{
	struct cntr_rsp rsp = { .bind_ret = g_t.rw_bind_ret };
	uint64_t mark;

	if (!g_t.rw_tried || req->region >= REG_COUNT)
		die("CNTR_WATCH without a counter connection");
	rsp.watched = g_t.rw_cntr && g_t.log;
	if (g_t.rw_cntr && !g_t.log)
		snprintf(rsp.detail, sizeof(rsp.detail), "not watched: the "
			 "target has no oracle (FI_PMEMVERBS_ORACLE)");
	g_log = g_t.log;
	g_log_cap = ORACLE_RECS;
	mark = oracle_count();
	ctl_send(MSG_CNTR_READY, &rsp, sizeof(rsp));
	if (!rsp.watched)
		return;
	cntr_watch(req, mark, &rsp);
	ctl_send(MSG_CNTR_RESULT, &rsp, sizeof(rsp));
}
