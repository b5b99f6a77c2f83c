/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_ct_sc_overtake.c - scenarios overtake and late-serve of pmv_commit_test
 * (issue 24, scenarios 1 and 2; late-serve in pmv_ct_sc_late.c): a key
 * registered again while a commit to it is on its way.  They use the
 * program's harness (sop_*, sc_* of pmv_ct_sc.c, the control channel,
 * target_resize) and add none of their own.
 *
 *   overtake    pmem-a (MHP, known from the pushed profile table); the
 *               target posts large plain writes back to the initiator on
 *               the commit's connection, then registers pmem-a's key again
 *               as PAGE, so that its new profile table waits behind them
 *               in the core; the initiator commits 4 KiB to the key.
 *   late-serve  the target serves its endpoint by reading that
 *               endpoint's CQs; a commit's data and request land, and
 *               before its next CQ read the target registers pmem-a's key
 *               on pmem-b's memory; then it reads its CQs (serving it).
 */

#include "pmv_ct.h"

/* ---- scenario overtake: the new table behind queued writes ---- */

#define OT_ROUNDS 6
#define OT_WRITE ((size_t)32 << 20) /* each plain write back, bytes */
#define OT_NWRITES 2
#define OT_LEN 4096                  /* the commits */

enum { OT_MOVE = 1, OT_BACK };       /* overtake_req.phase */
enum { OT_LEARN, OT_AFTER };         /* sop owners */

/* Target: the source of its writes back, and the writes in flight. */
static struct {
	uint8_t *src;
	void *desc;
	struct fid_mr *mr;
	struct op *writes[OT_NWRITES];
} g_ot_t;

/* The newest connection of a kind: an older one may not show its
 * shutdown yet. */
static struct conn *target_newest_conn(char kind)
{
	for (size_t i = g_t.nconns; i-- > 0;)
		if (g_t.conns[i].kind == kind && g_t.conns[i].ep &&
		    !g_t.conns[i].shut_down)
			return &g_t.conns[i];
	die("no connection of kind '%c'", kind);
}

/* Posts the plain writes back to the initiator's buffer (not waited). */
static void ot_target_write_back(struct conn *c, const struct overtake_req *req)
{
	ssize_t ret;

	if (!g_ot_t.src) {
		if (posix_memalign((void **)&g_ot_t.src, 4096, OT_WRITE))
			die("out of memory");
		memset(g_ot_t.src, 0x5a, OT_WRITE);
		g_ot_t.desc = local_desc(g_ot_t.src, OT_WRITE, &g_ot_t.mr);
	}
	for (unsigned i = 0; i < req->nwrites; i++) {
		struct op *op = op_alloc(OP_WRITE, c);

		POST(ret, fi_write(c->ep, g_ot_t.src, req->len, g_ot_t.desc, 0,
				   req->addr, req->key, &op->fictx));
		if (ret)
			die("overtake: writing back: %s", errname(ret));
		g_ot_t.writes[i] = op;
	}
}

/* Waits (bounded) for the writes back, which must have succeeded. */
static void ot_target_wait_writes(unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		struct op *op = g_ot_t.writes[i];

		op_wait_or_die(op, "overtake: a write back");
		if (op->err)
			die("overtake: a write back failed: %s (%s)",
			    errname(op->err), op->errtext);
		op_free(op);
	}
}

/*
 * MSG_OVERTAKE: OT_MOVE posts the writes back on the newest overtake
 * connection, then at once closes pmem-a and registers its key again on
 * its memory as PAGE (the new table is pushed behind the writes);
 * OT_BACK waits for the writes, then registers it as MHP.  RESIZED
 * answers both.
 */
void target_on_overtake(const struct overtake_req *req)
{
	struct resize_req move = { .region = REG_A, .len = k_regions[REG_A].len,
				   .gran = req->phase == OT_MOVE ? GRAN_PAGE :
								   GRAN_BYTE };
	struct status_rsp rsp;

	if (req->nwrites > OT_NWRITES || req->len > OT_WRITE ||
	    (req->phase != OT_MOVE && req->phase != OT_BACK))
		die("OVERTAKE: bad request");
	if (req->phase == OT_MOVE)
		ot_target_write_back(target_newest_conn(KIND_OVERTAKE), req);
	else
		ot_target_wait_writes(req->nwrites);
	target_resize(&move, &rsp);
	ctl_send(MSG_RESIZED, &rsp, sizeof(rsp));
}

/* Initiator: the buffer the target writes back into, and the tallies. */
static struct {
	uint8_t *buf;
	struct fid_mr *mr;
	uint64_t addr, key;
	unsigned raced, table_first, other;
	const struct sop *first_wrong;
} g_ot;

static void ot_setup(void)
{
	if (posix_memalign((void **)&g_ot.buf, 4096, OT_WRITE))
		die("out of memory");
	memset(g_ot.buf, 0, OT_WRITE);
	CHECK(fi_mr_reg(g_net.domain, g_ot.buf, OT_WRITE, FI_REMOTE_WRITE, 0,
			g_net.next_local_key++, 0, &g_ot.mr, NULL));
	track_fid(&g_ot.mr->fid);
	g_ot.key = fi_mr_key(g_ot.mr);
	g_ot.addr = (g_net.mr_mode & FI_MR_VIRT_ADDR) ?
		    (uint64_t)(uintptr_t)g_ot.buf : 0;
}

/* One phase of a round at the target; RESIZED must name the profile. */
static void ot_ask(uint32_t phase, uint32_t want)
{
	struct overtake_req req = { .addr = g_ot.addr, .key = g_ot.key,
				    .len = OT_WRITE, .nwrites = OT_NWRITES,
				    .phase = phase };
	const struct status_rsp *rsp;

	ctl_send(MSG_OVERTAKE, &req, sizeof(req));
	rsp = ctl_expect(MSG_RESIZED, sizeof(*rsp), NULL);
	if (rsp->status || rsp->key != g_s.reg[REG_A].key ||
	    rsp->profile != want)
		die("overtake: re-registering pmem-a gave %s, key 0x%" PRIx64
		    ", profile %s (wanted %s) %s", errname(rsp->status),
		    rsp->key, profile_name(rsp->profile), profile_name(want),
		    rsp->detail);
	ctl_release();
}

/* Posts s on c and waits for it (bounded); a post refused for good is
 * returned, as is 0 once s ended. */
ssize_t rg_run(struct conn *c, struct sop *s, uint64_t flags)
{
	size_t first = (size_t)(s - g_sc.ops);
	int64_t deadline = deadline_in(STEP_MS);
	ssize_t ret;

	while ((ret = sop_post(c->ep, s, flags, g_sc.nops)) == -FI_EAGAIN &&
	       before(deadline))
		if (!progress())
			pause_briefly();
	if (ret)
		return ret;
	if (sc_wait(first, NULL, 3 * STEP_MS))
		die("%s: %s did not end within %d ms", g_case, sop_str(s),
		    3 * STEP_MS);
	return 0;
}

/* Tallies the commit posted after the re-registration (its success is
 * judged by sc_verdict_durable). */
static void ot_judge(const struct sop *s, bool raced, ssize_t post_ret)
{
	const char *forced = getenv("FI_PMEMVERBS_METHOD");

	g_ot.raced += raced;
	g_ot.table_first += !raced;
	if (post_ret == -FI_EOPNOTSUPP && !raced && forced && *forced &&
	    strcmp(forced, "auto"))
		return; /* PAGE known: the override is refused */
	if (post_ret)
		die("overtake: posting %s: %s", sop_str(s), errname(post_ret));
	if (s->err && s->err != FI_EIO && !g_ot.other++)
		g_ot.first_wrong = s;
}

/*
 * One round on a connection of its own: it knows pmem-a as MHP from the
 * table; a 4 KiB commit; the target writes back and registers the key as
 * PAGE (its table queued behind the writes); a 4 KiB commit, which must be
 * persisted (the oracle covers it when it completes) or fail with FI_EIO.
 */
static void ot_round(unsigned r, uint8_t *src)
{
	struct conn c;
	struct sop *s;
	bool raced;
	ssize_t ret;

	initiator_open_conn(&c, true);
	conn_connect(&c, KIND_OVERTAKE);
	s = sop_new(SOP_COMMIT, OT_LEARN, REG_A, r * 2 * OT_LEN, OT_LEN, src);
	if (rg_run(&c, s, 0))
		die("overtake: posting %s failed", sop_str(s));
	ot_ask(OT_MOVE, FI_PMEM_PROFILE_PAGE);
	s = sop_new(SOP_COMMIT, OT_AFTER, REG_A, (r * 2 + 1) * OT_LEN, OT_LEN,
		    src + OT_LEN);
	s->oracle = true; /* PAGE now: only the agent makes it durable */
	raced = g_net.pmem->peer_profile(c.ep, g_s.reg[REG_A].key) ==
		FI_PMEM_PROFILE_MHP;
	ret = rg_run(&c, s, 0);
	ot_judge(s, raced, ret);
	ot_ask(OT_BACK, FI_PMEM_PROFILE_MHP);
	initiator_close_conn(&c);
}

static bool ot_is_learn(const struct sop *s)
{
	return s->owner == OT_LEARN;
}

static bool ot_is_after(const struct sop *s)
{
	return s->owner == OT_AFTER;
}

/*
 * Issue 24, scenario 1: every commit posted after the re-registration
 * while the initiator still held the MHP profile (raced) must be durable
 * when it completes or fail with FI_EIO.  On 03bf475 the delivered
 * read_flush completed it on the write's delivery ack, which the tcp core
 * sent ahead of the queued writes and the table behind them.
 */
void sc_overtake(void)
{
	struct sc_sum learn, after;
	uint8_t *src;

	if (g_s.want_profile != FI_PMEM_PROFILE_MHP)
		die("overtake starts from MHP: run it with -g byte");
	sc_setup(OT_ROUNDS * 2, OT_ROUNDS * 2 * OT_LEN);
	src = sc_bytes(OT_ROUNDS * 2 * OT_LEN);
	ot_setup();
	for (unsigned r = 0; r < OT_ROUNDS; r++)
		ot_round(r, src + r * 2 * OT_LEN);
	learn = sc_sum(ot_is_learn);
	after = sc_sum(ot_is_after);
	sc_verdict_once("overtake/learn", &learn, false);
	sc_verdict_once("overtake/after-rereg-complete", &after, true);
	sc_verdict_durable("overtake/after-rereg-durable", &after);
	verdict(!g_ot.other, check_name("overtake/failures-are-eio"), "%s%u "
		"of %u commits after the re-registration failed with another "
		"error than FI_EIO%s%s", g_ot.other ? "expected 0 got " : "",
		g_ot.other, after.posted, g_ot.first_wrong ? "; first: " : "",
		g_ot.first_wrong ? sop_str(g_ot.first_wrong) : "");
	verdict(g_ot.raced > 0, check_name("overtake/raced"), "%s%u of %d "
		"commits were posted while the initiator held pmem-a's old MHP "
		"profile (the new table queued behind %d x %zu MiB of writes), "
		"%u after the table had come; %u succeeded, %u failed",
		g_ot.raced ? "" : "expected at least 1 got ", g_ot.raced,
		OT_ROUNDS, OT_NWRITES, OT_WRITE >> 20, g_ot.table_first,
		after.ok, after.errors);
	sc_verdict_strays("overtake/no-stray");
}

