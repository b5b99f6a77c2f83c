/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_ct_sc_rereg.c - Scenarios rereg and move: a key registered again with
 * another profile (or on other memory) while commits are in flight.
 */

#include "pmv_ct.h"

/* ---- scenario rereg: a key re-registered with another profile ---- */

#define RR_ROUNDS 24
#define RR_WINDOW 8               /* commits in flight */
#define RR_A_SLOTS 8              /* pmem-a in 1 MiB slots */
#define RR_A_SLOT ((size_t)1 << 20)
#define RR_B_SLOTS 1024           /* pmem-b in 4 KiB slots, 64-byte commits */
#define RR_MAX_DURING 400         /* commits posted while one waits */

/*
 * Owners: pmem-a while MHP, pmem-a posted after RESIZED (PAGE), pmem-b;
 * + RR_BROKEN: posted in a round whose connection broke (a write that
 * reached pmem-a's key while it was unregistered: tcp drops the
 * connection, and every commit in flight fails, which is allowed).
 */
enum { RR_A_MHP, RR_A_AFTER, RR_B, RR_BROKEN = 4 };

static struct {
	struct conn c;            /* the commits' connection */
	bool broken;              /* it failed: a new one next round */
	unsigned breaks, refused;
	bool a_busy[RR_A_SLOTS];
	unsigned b_next;
	uint8_t *a_src, *b_src;
	unsigned resized_ok;
	char resize_problem[320];
} g_rr;

static void rr_done(struct sop *s)
{
	if (s->region == REG_A)
		g_rr.a_busy[s->slot] = false;
	if (s->err)
		g_rr.broken = true;
}

/* Posts s on the commits' connection; a refusal other than -FI_EAGAIN
 * means the connection broke. */
static void rr_post_op(struct sop *s, uint64_t flags, uint64_t data)
{
	int64_t deadline = deadline_in(STEP_MS);
	ssize_t ret;

	while ((ret = sop_post(g_rr.c.ep, s, flags, data)) == -FI_EAGAIN &&
	       before(deadline))
		if (!progress())
			pause_briefly();
	if (ret == -FI_EAGAIN)
		die("posting %s: -FI_EAGAIN for %d ms", sop_str(s), STEP_MS);
	if (ret) {
		g_rr.refused++;
		g_rr.broken = true;
		if (s->region == REG_A)
			g_rr.a_busy[s->slot] = false;
	}
}

/* Posts one commit: to pmem-a (len bytes, a free 1 MiB slot) or, if a is
 * false or no slot is free, an FI_IMMED commit of 64 bytes to pmem-b. */
static void rr_post(bool a, size_t len, unsigned owner)
{
	unsigned slot = 0;
	struct sop *s;

	while (a && slot < RR_A_SLOTS && g_rr.a_busy[slot])
		slot++;
	if (a && slot < RR_A_SLOTS) {
		g_rr.a_busy[slot] = true;
		s = sop_new(SOP_COMMIT, owner, REG_A, slot * RR_A_SLOT + 5 + slot,
			    len, g_rr.a_src + slot * RR_A_SLOT);
		s->slot = slot;
		s->oracle = owner == RR_A_AFTER;
		rr_post_op(s, 0, 0);
		return;
	}
	slot = g_rr.b_next++ % RR_B_SLOTS;
	s = sop_new(SOP_COMMIT, RR_B, REG_B, slot * 4096 + 7, 64,
		    g_rr.b_src + slot * 64);
	s->oracle = true; /* FI_IMMED: always the agent */
	rr_post_op(s, FI_IMMED, g_sc.nops);
}

/* Checks a RESIZED answer: same key, the profile asked for. */
static void rr_check_resized(const struct status_rsp *rsp, uint64_t key,
			     uint32_t want)
{
	if (!rsp->status && rsp->key == key && rsp->profile == want) {
		g_rr.resized_ok++;
		return;
	}
	if (!g_rr.resize_problem[0])
		snprintf(g_rr.resize_problem, sizeof(g_rr.resize_problem),
			 "re-registration gave %s, key 0x%" PRIx64 " (was 0x%"
			 PRIx64 "), profile %s (wanted %s) %s",
			 errname(rsp->status), rsp->key, key,
			 profile_name(rsp->profile), profile_name(want),
			 rsp->detail);
}

/*
 * Asks the target to re-register pmem-a (whole, same key) with granularity
 * gran; with keep_busy, keeps RR_WINDOW commits to pmem-a (64 KiB) and
 * pmem-b in flight until the answer arrives.
 */
static void rr_resize(enum gran_code gran, uint32_t want, bool keep_busy)
{
	struct resize_req req = { .region = REG_A, .gran = gran,
				  .len = k_regions[REG_A].len };
	int64_t deadline = deadline_in(STEP_MS);
	const struct status_rsp *rsp;
	unsigned posted = 0;

	ctl_send(MSG_RESIZE, &req, sizeof(req));
	while (!ctl_peek() && before(deadline)) {
		if (keep_busy && !g_rr.broken && posted < RR_MAX_DURING &&
		    g_sc.nposted - g_sc.ndone < RR_WINDOW) {
			rr_post(posted % 2 == 0, 65536, RR_A_MHP);
			posted++;
		} else if (!progress()) {
			pause_briefly();
		}
	}
	rsp = ctl_expect(MSG_RESIZED, sizeof(*rsp), NULL);
	rr_check_resized(rsp, g_s.reg[REG_A].key, want);
	g_s.reg[REG_A].key = rsp->key;
	ctl_release();
}

/* A commit to pmem-a, waited for: the initiator learns its profile. */
static void rr_learn(void)
{
	size_t first = g_sc.nops;

	rr_post(true, 4096, RR_A_MHP);
	if (sc_wait(first, NULL, STEP_MS) || g_rr.broken)
		die("rereg: a commit to pmem-a on a fresh connection failed");
}

/* A new commits' connection in place of a broken one. */
static void rr_reconnect(void)
{
	if (g_rr.c.ep)
		initiator_close_conn(&g_rr.c);
	g_rr.c = (struct conn){ 0 };
	initiator_open_conn(&g_rr.c, true);
	conn_connect(&g_rr.c, KIND_EXTRA);
	g_rr.broken = false;
}

/* Marks the round's operations when its connection broke. */
static void rr_mark_broken(size_t first)
{
	if (!g_rr.broken)
		return;
	g_rr.breaks++;
	for (size_t i = first; i < g_sc.nops; i++)
		g_sc.ops[i].owner |= RR_BROKEN;
}

/*
 * One round: pmem-a is MHP (byte) and known so; it is re-registered as
 * PAGE while commits are in flight (every third round) or with none, and
 * right after RESIZED, pairs of an FI_IMMED commit to pmem-b (the agent;
 * its ack carries the new generation) and a 1 MiB commit to pmem-a go.
 * The first pair posts pmem-a's commit first: the initiator still holds
 * pmem-a's MHP profile of the old generation, and only the generation its
 * read brings, or the table the target pushed ahead of its write's
 * delivery ack, sends it to the agent.  Every pmem-a commit posted after
 * RESIZED must be persisted by the agent.
 */
static void rr_round(unsigned r)
{
	size_t first = g_sc.nops;
	unsigned pairs = 0;
	int64_t deadline;

	if (r)
		rr_resize(GRAN_BYTE, FI_PMEM_PROFILE_MHP, false);
	if (!g_rr.c.ep || g_rr.broken)
		rr_reconnect();
	rr_learn();
	rr_learn();
	rr_resize(GRAN_PAGE, FI_PMEM_PROFILE_PAGE, r % 3 == 0);
	deadline = deadline_in(STEP_MS);
	while (pairs < 8 && !g_rr.broken && before(deadline)) {
		if (g_sc.nposted - g_sc.ndone + 2 > RR_WINDOW) {
			if (!progress())
				pause_briefly();
			continue;
		}
		if (!pairs)
			rr_post(true, RR_A_SLOT - 64, RR_A_AFTER);
		rr_post(false, 64, RR_B);
		if (pairs)
			rr_post(true, RR_A_SLOT - 64, RR_A_AFTER);
		pairs++;
	}
	sc_wait(first, NULL, 30000);
	rr_mark_broken(first);
}

static bool rr_is_a_after(const struct sop *s)
{
	return s->owner == RR_A_AFTER;
}

static bool rr_is_b(const struct sop *s)
{
	return s->owner == RR_B;
}

static bool rr_is_whole(const struct sop *s)
{
	return !(s->owner & RR_BROKEN);
}

static bool rr_is_broken(const struct sop *s)
{
	return s->owner & RR_BROKEN;
}

/* Rounds whose connection broke: every commit ended, none twice, and
 * those that succeeded were durable. */
static void rr_verdict_broken(void)
{
	struct sc_sum m = sc_sum(rr_is_broken);

	sc_verdict_once("rereg/broken-rounds-end", &m, true);
	sc_verdict_durable("rereg/broken-rounds-durable", &m);
	printf("rereg: %u of %d rounds lost their connection (a write reached "
	       "pmem-a's key while it was unregistered); %u posts refused, "
	       "%u commits failed\n", g_rr.breaks, RR_ROUNDS, g_rr.refused,
	       m.errors);
}

void sc_rereg(void)
{
	struct sc_sum all, after, b;

	if (g_s.want_profile != FI_PMEM_PROFILE_MHP)
		die("rereg starts from MHP: run it with -g byte");
	sc_setup(RR_ROUNDS * (2 * RR_MAX_DURING + 64),
		 RR_A_SLOTS * RR_A_SLOT + RR_B_SLOTS * 64);
	g_rr.a_src = sc_bytes(RR_A_SLOTS * RR_A_SLOT);
	g_rr.b_src = sc_bytes(RR_B_SLOTS * 64);
	g_sc.on_done = rr_done;
	for (unsigned r = 0; r < RR_ROUNDS; r++)
		rr_round(r);
	sc_drain(NULL);
	g_sc.on_done = NULL;
	all = sc_sum(rr_is_whole);
	after = sc_sum(rr_is_a_after);
	b = sc_sum(rr_is_b);
	verdict(!g_rr.resize_problem[0], check_name("rereg/profile"),
		"%s%u re-registrations of pmem-a under key 0x%" PRIx64
		" (MHP <-> PAGE)%s", g_rr.resize_problem[0] ? "expected each "
		"with the same key and the new profile: " : "",
		g_rr.resized_ok, g_s.reg[REG_A].key, g_rr.resize_problem);
	sc_verdict_once("rereg/complete", &all, false);
	sc_verdict_durable("rereg/visible", &all);
	sc_verdict_durable("rereg/after-rereg-persisted", &after);
	sc_verdict_durable("rereg/immed-persisted", &b);
	rr_verdict_broken();
	sc_verdict_strays("rereg/no-stray");
	if (g_rr.c.ep)
		initiator_close_conn(&g_rr.c);
}

/* ---- scenario move: a key registered again on other memory ---- */

#define MV_ROUNDS 8
#define MV_WRITE_OFF (1u << 20) /* the plain writes, 4 KiB each round */

/* pmem-a's key registered on pmem-b's memory (onto) or its own, with the
 * granularity gran forced; the key must stay the same. */
static void mv_move(enum region_id onto, enum gran_code gran)
{
	struct resize_req req = { .region = REG_A, .gran = gran,
				  .len = k_regions[REG_A].len,
				  .onto = onto == REG_A ? 0 : onto + 1 };
	const struct status_rsp *rsp;

	ctl_send(MSG_RESIZE, &req, sizeof(req));
	rsp = ctl_expect(MSG_RESIZED, sizeof(*rsp), NULL);
	if (rsp->status || rsp->key != g_s.reg[REG_A].key)
		die("move: re-registering pmem-a's key gave %s, key 0x%" PRIx64
		    " %s", errname(rsp->status), rsp->key, rsp->detail);
	ctl_release();
}

/* Posts s on c and waits for it (bounded); dies if it never ends. */
static void mv_run(struct conn *c, struct sop *s, uint64_t flags)
{
	size_t first = (size_t)(s - g_sc.ops);

	sop_post_retry(c->ep, s, flags, 0, NULL);
	if (sc_wait(first, NULL, STEP_MS))
		die("move: %s did not end within %d ms", sop_str(s), STEP_MS);
}

/*
 * Issue 24, scenario 3, over a real connection: pmem-a is MHP and known;
 * a plain write is placed in it (FI_DELIVERY_COMPLETE); the target closes
 * it and registers its key on pmem-b's memory as PAGE (the tcp core
 * addresses regions from 0, so the key's offsets now name pmem-b's
 * bytes); a 64-byte commit to the key follows.  Its scope holds the write
 * placed in memory the key no longer names, which nobody persists: the
 * commit must fail (FI_EIO, durability unknown), never succeed, and
 * (odd rounds, FI_IMMED) raise no completion at the target.  Seen
 * failing on 03bf475 in every round (the agent persisted pmem-b's range
 * and acked success; forced read_flush went to the agent the same way).
 */
void sc_move(void)
{
	unsigned wrong = 0, other = 0;
	const struct sop *first_wrong = NULL;
	struct conn c = { 0 };
	uint8_t *src;

	if (g_s.want_profile != FI_PMEM_PROFILE_MHP)
		die("move starts from MHP: run it with -g byte");
	sc_setup(MV_ROUNDS * 3, MV_ROUNDS * 3 * 4096);
	src = sc_bytes(MV_ROUNDS * 3 * 4096);
	for (unsigned r = 0; r < MV_ROUNDS; r++, src += 3 * 4096) {
		struct sop *s;

		initiator_open_conn(&c, true);
		conn_connect(&c, KIND_EXTRA);
		mv_run(&c, sop_new(SOP_COMMIT, r, REG_A, r * 4096, 4096, src), 0);
		mv_run(&c, sop_new(SOP_WRITE, r, REG_A,
				   MV_WRITE_OFF + r * 4096, 4096, src + 4096), 0);
		mv_move(REG_B, GRAN_PAGE);
		s = sop_new(SOP_COMMIT, r, REG_A, r * 64, 64, src + 8192);
		mv_run(&c, s, r % 2 ? FI_IMMED : 0);
		if (!s->err && !wrong++)
			first_wrong = s;
		else if (s->err && s->err != FI_EIO && !other++)
			first_wrong = s;
		mv_move(REG_A, GRAN_BYTE);
		initiator_close_conn(&c);
	}
	g_sc.no_immed = "move/no-immed-for-a-failed-commit";
	verdict(!wrong && !other, check_name("move/write-then-move-fails"),
		"%u of %d commits whose scope held a write placed in memory "
		"the key no longer names completed successfully, %u failed "
		"with another error than FI_EIO%s%s", wrong, MV_ROUNDS, other,
		first_wrong ? "; first: " : "",
		first_wrong ? sop_str(first_wrong) : "");
}
