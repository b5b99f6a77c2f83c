/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_ct_sc_late.c - scenario late-serve of pmv_commit_test (issue 24,
 * scenario 2); it uses rg_run of pmv_ct_sc_overtake.c.
 */

#include "pmv_ct.h"

/* ---- scenario late-serve: a request served after a re-registration ---- */

#define LS_ROUNDS 12            /* odd ones with FI_IMMED */
#define LS_SETTLE_TRIES 3      /* commits until one succeeds, per round */
#define LS_SETTLE_OFF (4u << 20) /* where those go in pmem-a */
#define LS_MOVE_LEN ((uint64_t)64 << 10) /* pmem-a's key on pmem-b */
#define LS_WARM_MS 40          /* the target serves by its reads before it
				* arms (see ls_target_arm) */

_Static_assert(LS_ROUNDS * LS_LEN <= LS_MOVE_LEN,
	       "every round's commit within the key's range on pmem-b");

enum { LS_SERVE = 1, LS_ARM };   /* late_req.phase */
enum { LS_SETTLE, LS_LATE };     /* sop owners */

struct late_rsp {
	int32_t status;
	uint32_t immed;        /* FI_IMMED entries read after the move */
	uint64_t served_early; /* requests served successfully before the
				* target's first CQ read after the move */
	char detail[200];
};

static struct conn *g_ls_conn; /* target: the KIND_LATE connection */

/* KIND_LATE: on the shared EQ, with CQs that progress() does not read:
 * only target_on_late reads them. */
void target_open_late(struct conn *c, struct fi_info *info)
{
	conn_open_on(c, info, g_t.eq, open_cq_sized(1024, false),
		     open_cq_sized(1024, false));
	CHECK(fi_enable(c->ep));
	g_ls_conn = c;
}

/*
 * One read, in turn: the main CQs, the late connection's receive CQ, its
 * transmit CQ.  A read of a late CQ runs the endpoint's hooks (serving
 * what had landed) and then the core's progress (placing what came), so
 * bytes first seen after a read are not served yet.  True if it got any.
 */
static bool ls_target_step(struct conn *c, unsigned *turn)
{
	switch ((*turn)++ % 3) {
	case 0: return progress();
	case 1: return progress_cq(c->rxcq);
	default: return progress_cq(c->txcq);
	}
}

/* Requests the target served successfully on c so far. */
static uint64_t ls_served(struct conn *c)
{
	struct fi_pmem_ep_counters cnt;

	CHECK(g_net.pmem->ep_counters(c->ep, &cnt));
	return cnt.requests_served;
}

/* LS_SERVE: the application serves c by its reads until the next
 * message (the one being handled is still queued). */
static void ls_target_serve(struct conn *c)
{
	int64_t deadline = deadline_in(IDLE_MS);
	unsigned turn = 0;

	while (g_rxq_count < 2 && before(deadline))
		if (!ls_target_step(c, &turn) && turn % 3 == 0)
			pause_briefly();
	if (g_rxq_count < 2)
		die("late-serve: no message within %d ms", IDLE_MS);
}

static bool ls_landed(const struct late_req *req)
{
	return !memcmp(g_t.reg[REG_A].addr + req->off, req->data, req->len);
}

/*
 * One read that places bytes without serving them: the main CQs or the
 * late connection's transmit CQ, not its receive CQ, whose read serves a
 * gated request at once when it takes that write's completion.
 */
static bool ls_target_place_step(struct conn *c, unsigned *turn)
{
	return (*turn)++ % 2 ? progress_cq(c->txcq) : progress();
}

/* Reads one CQ at a time until the commit's data is in pmem-a. */
static bool ls_target_until_landed(struct conn *c, const struct late_req *req)
{
	int64_t deadline = deadline_in(STEP_MS);
	unsigned turn = 0;

	while (!ls_landed(req) && before(deadline))
		(void)ls_target_place_step(c, &turn);
	return ls_landed(req);
}

/* pmem-a's key registered (PAGE) on len bytes of the memory of onto;
 * false, with the reason in rsp, if that failed. */
static bool ls_target_move(enum region_id onto, uint64_t len,
			   struct late_rsp *rsp)
{
	struct resize_req req = { .region = REG_A, .gran = GRAN_PAGE,
				  .len = len,
				  .onto = onto == REG_A ? 0 : onto + 1 };
	struct status_rsp st;

	target_resize(&req, &st);
	if (!st.status && !st.detail[0])
		return true;
	rsp->status = st.status ? st.status : -FI_EINVAL;
	snprintf(rsp->detail, sizeof(rsp->detail), "registering pmem-a's key "
		 "on %s's memory: %s %.120s", k_regions[onto].name,
		 errname(st.status), st.detail);
	return false;
}

/* Reads c's CQs (serving its requests) for ms; the FI_IMMED entries read
 * meanwhile. */
static uint32_t ls_target_read_for(struct conn *c, int ms)
{
	size_t seen = g_t.nimmed_all;
	int64_t deadline = deadline_in(ms);
	unsigned turn = 0;

	while (before(deadline))
		if (!ls_target_step(c, &turn) && turn % 3 == 0)
			pause_briefly();
	return (uint32_t)(g_t.nimmed_all - seen);
}

/*
 * LS_ARM, the target's half of a round (struct late_req): reads its CQs
 * one at a time until the commit's data is in pmem-a, then at once
 * registers pmem-a's key on pmem-b's memory, then reads them again (its
 * hooks serve the request now).  The agent serves an endpoint the
 * application has not read for 2 ms, looking less often the longer the
 * application serves: the reads of LS_WARM_MS first, and a move of
 * LS_MOVE_LEN bytes (a fraction of a millisecond), make that rare, and
 * served_early reports it when it happens.
 */
static void ls_target_arm(struct conn *c, const struct late_req *req)
{
	struct late_rsp rsp = { 0 };
	uint64_t served = ls_served(c);

	if (req->len > LS_LEN || req->off + req->len > k_regions[REG_A].len ||
	    ls_landed(req))
		die("LATE: bad request (offset %" PRIu64 ", %u bytes)",
		    req->off, req->len);
	ls_target_read_for(c, LS_WARM_MS);
	ctl_send(MSG_LATE_ARMED, NULL, 0);
	if (!ls_target_until_landed(c, req)) {
		rsp.status = -FI_ETIMEDOUT;
		snprintf(rsp.detail, sizeof(rsp.detail), "the commit's data "
			 "did not land in pmem-a within %d ms", STEP_MS);
	} else if (ls_target_move(REG_B, LS_MOVE_LEN, &rsp)) {
		rsp.served_early = ls_served(c) - served;
		rsp.immed = ls_target_read_for(c, DRAIN_MS);
		(void)ls_target_move(REG_A, k_regions[REG_A].len, &rsp);
	}
	ctl_send(MSG_LATE_DONE, &rsp, sizeof(rsp));
}

/* MSG_LATE on the late-serve connection. */
void target_on_late(const struct late_req *req)
{
	if (!g_ls_conn || g_ls_conn->shut_down)
		die("LATE without a late-serve connection");
	if (req->phase == LS_SERVE)
		ls_target_serve(g_ls_conn);
	else if (req->phase == LS_ARM)
		ls_target_arm(g_ls_conn, req);
	else
		die("LATE: unknown phase %u", req->phase);
}

/* Initiator: the tallies. */
static struct {
	unsigned clean, clean_immed, early, no_key, wrong, other, immed;
	const struct sop *first_wrong;
} g_ls;

/* Commits to pmem-a until one succeeds: the initiator then knows the
 * registration the target serves (a failure's ack names it). */
static void ls_settle(struct conn *c, unsigned r)
{
	struct late_req req = { .phase = LS_SERVE };

	ctl_send(MSG_LATE, &req, sizeof(req));
	for (unsigned i = 0; i < LS_SETTLE_TRIES; i++) {
		struct sop *s = sop_new(SOP_COMMIT, LS_SETTLE, REG_A,
					LS_SETTLE_OFF + (r * LS_SETTLE_TRIES + i) * 64,
					64, sc_bytes(64));

		s->oracle = true;
		if (rg_run(c, s, 0))
			die("late-serve: posting %s failed", sop_str(s));
		if (!s->err)
			return;
	}
	die("late-serve: %d commits to pmem-a failed in a row", LS_SETTLE_TRIES);
}

/* Tallies round r's late commit s against what the target saw. */
static void ls_judge(const struct sop *s, const struct late_rsp *rsp,
		     bool immed)
{
	bool early = rsp->served_early > 0, no_key = s->err == FI_ENOKEY;

	g_ls.early += early;
	g_ls.no_key += no_key && !early;
	if (early || no_key) /* the agent served it before the move ended */
		return;
	g_ls.clean++;
	g_ls.clean_immed += immed;
	if (immed && rsp->immed)
		g_ls.immed++;
	if (s->err == FI_EIO)
		return;
	if (!s->err)
		g_ls.wrong++;
	else
		g_ls.other++;
	if (!g_ls.first_wrong)
		g_ls.first_wrong = s;
}

/*
 * One round: settle, arm the target, post a 4 KiB commit to pmem-a
 * (FI_IMMED in odd rounds), wait for it and for the target's report.
 */
static void ls_round(struct conn *c, unsigned r)
{
	struct late_req req = { .phase = LS_ARM, .len = LS_LEN,
				.off = (uint64_t)r * LS_LEN };
	const struct late_rsp *rsp;
	struct sop *s;

	ls_settle(c, r);
	s = sop_new(SOP_COMMIT, LS_LATE, REG_A, req.off, LS_LEN,
		    sc_bytes(LS_LEN));
	s->oracle = true;
	memcpy(req.data, s->data, LS_LEN);
	ctl_send(MSG_LATE, &req, sizeof(req));
	(void)ctl_expect(MSG_LATE_ARMED, 0, NULL);
	ctl_release();
	if (rg_run(c, s, r % 2 ? FI_IMMED : 0))
		die("late-serve: posting %s failed", sop_str(s));
	rsp = ctl_expect(MSG_LATE_DONE, sizeof(*rsp), NULL);
	if (rsp->status)
		die("late-serve, round %u: %s", r, rsp->detail);
	ls_judge(s, rsp, r % 2);
	ctl_release();
}

static bool ls_is_settle(const struct sop *s)
{
	return s->owner == LS_SETTLE;
}

static bool ls_is_late(const struct sop *s)
{
	return s->owner == LS_LATE;
}

/*
 * At least one round with FI_IMMED and one without ran as the scenario
 * means: not served before the move ended.  If none did, each request was
 * served before the target saw its data: by the agent, or by the very CQ
 * read that placed it (then a target reading its CQs cannot reach this
 * state, and the scenario must be built another way).
 */
static void ls_verdict_exercised(void)
{
	bool ok = g_ls.clean_immed && g_ls.clean > g_ls.clean_immed;

	verdict(ok, check_name("late-serve/exercised"), "%s%u of %d requests "
		"served by the target's CQ read after the move, %u of them "
		"FI_IMMED commits%s", ok ? "" : "expected at least one with "
		"FI_IMMED and one without got ", g_ls.clean, LS_ROUNDS,
		g_ls.clean_immed, ok ? "" : " (the others were served before "
		"the target saw their data: by the agent, or by the CQ read "
		"that placed them?)");
}

/*
 * Issue 24, scenario 2: a commit whose data landed in pmem-a and whose
 * request the target served only after registering pmem-a's key on
 * pmem-b's memory must fail with FI_EIO (PMV_ERR_REREGISTERED) and raise
 * no FI_IMMED completion; on 03bf475 the target persisted pmem-b's range
 * and acked success.  Rounds the agent served before the move had ended
 * (it may once the target has not read for 2 ms) are counted apart.
 */
void sc_late_serve(void)
{
	struct sc_sum settle, late;
	struct conn c;

	if (g_s.want_profile != FI_PMEM_PROFILE_PAGE)
		die("late-serve registers pmem-a as PAGE: run it with -g page");
	sc_setup(LS_ROUNDS * (LS_SETTLE_TRIES + 1),
		 LS_ROUNDS * (LS_SETTLE_TRIES * 4096 + LS_LEN));
	initiator_open_conn(&c, true);
	conn_connect(&c, KIND_LATE);
	for (unsigned r = 0; r < LS_ROUNDS; r++)
		ls_round(&c, r);
	settle = sc_sum(ls_is_settle);
	late = sc_sum(ls_is_late);
	sc_verdict_once("late-serve/settle", &settle, true);
	sc_verdict_once("late-serve/late-complete", &late, true);
	sc_verdict_durable("late-serve/durable", &late);
	verdict(!g_ls.wrong && !g_ls.other,
		check_name("late-serve/served-after-move-fails"), "%s%u of %u "
		"commits served after the move succeeded, %u failed with "
		"another error than FI_EIO%s%s (%u served before the move "
		"ended, %u by the agent during it: FI_ENOKEY)",
		g_ls.wrong || g_ls.other ?
		"expected 0 and 0 got " : "", g_ls.wrong, g_ls.clean, g_ls.other,
		g_ls.first_wrong ? "; first: " : "",
		g_ls.first_wrong ? sop_str(g_ls.first_wrong) : "", g_ls.early,
		g_ls.no_key);
	verdict(!g_ls.immed, check_name("late-serve/no-immed"), "%s%u FI_IMMED "
		"completions read by the target for commits served after the "
		"move", g_ls.immed ? "expected 0 got " : "", g_ls.immed);
	ls_verdict_exercised();
	sc_verdict_strays("late-serve/no-stray");
	initiator_close_conn(&c);
}

