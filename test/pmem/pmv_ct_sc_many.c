/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_ct_sc_many.c - Scenarios many-NxM (many endpoints on one CQ) and
 * immed-flood.
 */

#include "pmv_ct.h"

/* ---- scenario many-NxM: many endpoints on one CQ ---- */

#define MANY_SLOT 256 /* bytes of a region per commit */

/*
 * Opens n pmem endpoints on one EQ and one pair of CQs and connects them
 * all (KIND_MANY: the target shares its CQs too); bounded.
 */
static struct conn *many_connect(unsigned n, struct fid_eq *eq,
				 struct fid_cq *tx, struct fid_cq *rx)
{
	struct conn *conns = calloc(n, sizeof(*conns));
	char kind = KIND_MANY;
	int64_t deadline = deadline_in(60000);
	unsigned connected = 0;
	struct cm_event ev;

	if (!conns)
		die("out of memory");
	for (unsigned i = 0; i < n; i++) {
		conn_open_on(&conns[i], g_net.info, eq, tx, rx);
		CHECK(fi_enable(conns[i].ep));
		CHECK(fi_connect(conns[i].ep, g_net.info->dest_addr, &kind, 1));
	}
	while (connected < n && before(deadline)) {
		if (!eq_poll(eq, &ev)) {
			progress();
			pause_briefly();
			continue;
		}
		if (ev.event != FI_CONNECTED || !ev.fid->context)
			die("many: EQ event %u while connecting", ev.event);
		((struct conn *)ev.fid->context)->connected = true;
		connected++;
	}
	if (connected < n)
		die("many: %u of %u endpoints connected within 60 s", connected,
		    n);
	return conns;
}

/* Sleeps ms without a libfabric call (the CQ is not read meanwhile). */
void sleep_ms(int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000,
			       .tv_nsec = (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Posts per commits on each of n endpoints, round robin, each to its own
 * range of pmem-a or pmem-b (by endpoint). */
static void many_post(struct conn *conns, unsigned n, unsigned per,
		      struct fid_cq *tx, bool agent)
{
	uint64_t next[REG_COUNT] = { 0 };

	for (unsigned j = 0; j < per; j++) {
		for (unsigned i = 0; i < n; i++) {
			enum region_id reg = i % 2 ? REG_B : REG_A;
			uint64_t k = next[reg]++;
			size_t len = 8 + (size_t)((k * 37) % 240);
			struct sop *s = sop_new(SOP_COMMIT, i, reg,
						k * MANY_SLOT + k % 7, len,
						sc_bytes(len));

			s->oracle = agent;
			sop_post_retry(conns[i].ep, s, 0, 0, tx);
		}
	}
}

bool pick_all(const struct sop *s)
{
	(void)s;
	return true;
}

/*
 * many-NxM: N connections x M commits, all on one transmit CQ, all posted,
 * then the CQ read only 300 ms later: every commit completes exactly once,
 * with its own context, durable when read (a post refused with -FI_EAGAIN
 * is retried: back-pressure, not loss).
 */
void sc_many(unsigned n, unsigned per)
{
	size_t total = (size_t)n * per;
	struct fid_eq *eq = open_eq_sized(4 * n);
	struct fid_cq *tx = open_cq_sized(2 * total + 64, false);
	struct fid_cq *rx = open_cq_sized(2 * total + 64, false);
	bool agent = agent_profile(g_s.want_profile);
	struct conn *conns;
	struct sc_sum m;
	size_t left;
	char check[64];

	sc_setup(total, total * 4096);
	conns = many_connect(n, eq, tx, rx);
	many_post(conns, n, per, tx, agent);
	sleep_ms(300);
	left = sc_wait(0, tx, 60000);
	sc_drain(tx);
	m = sc_sum(pick_all);
	snprintf(check, sizeof(check), "many-%ux%u/each-once", n, per);
	sc_verdict_once(check, &m, false);
	if (left)
		fprintf(stderr, "many: %zu commits never completed\n", left);
	snprintf(check, sizeof(check), "many-%ux%u/durable-when-read", n, per);
	sc_verdict_durable(check, &m);
	snprintf(check, sizeof(check), "many-%ux%u/no-stray", n, per);
	sc_verdict_strays(check);
	for (unsigned i = 0; i < n; i++)
		if (!close_fid(&conns[i].ep->fid))
			verdict(false, check_name("many/close"), "expected "
				"fi_close of endpoint %u to succeed", i);
	free(conns);
}

/* ---- scenario immed-flood: FI_IMMED commits to a target not reading ---- */

#define FLOOD_N 4000
#define FLOOD_BASE 0xf100d00000000ull

/* Asks the target to stop calling libfabric; returns once it has (it sets
 * a marker in the volatile region, read here over RMA). */
static void flood_idle_start(const struct idle_req *req)
{
	int64_t deadline = deadline_in(STEP_MS);
	uint64_t *marker = (uint64_t *)(void *)(g_s.src + NOISE_SLOT *
						 (size_t)LOCAL_STRIDE);

	ctl_send(MSG_IDLE, req, sizeof(*req));
	*marker = 0;
	while (*marker != 1 && before(deadline))
		if (rma_read(REG_VOL, req->marker_off, marker, 8))
			die("immed-flood: reading the target's marker failed");
	if (*marker != 1)
		die("immed-flood: the target never went idle");
}

/* Writes the flag that ends the target's idle period, and waits for it. */
static void flood_idle_end(const struct idle_req *req, uint64_t seed)
{
	const struct status_rsp *rsp;

	if (plain_write_wait(REG_VOL, req->flag_off, 8, seed))
		die("immed-flood: writing the flag failed");
	rsp = ctl_expect(MSG_IDLE_DONE, sizeof(*rsp), NULL);
	if (rsp->status)
		die("immed-flood: %s", rsp->detail);
	ctl_release();
}

/* The target's count of FI_IMMED entries against what was sent. */
static void flood_verdict(const struct flood_rsp *r)
{
	bool ok = r->entries == FLOOD_N && r->in_range == FLOOD_N &&
		  !r->duplicates && !r->missing && !r->bad_flags;

	if (ok)
		verdict(true, check_name("immed-flood/target-entries"), "the "
			"target read exactly %d FI_REMOTE_CQ_DATA entries, one "
			"per commit, every datum once, after leaving its receive "
			"CQ unread during the flood", FLOOD_N);
	else
		verdict(false, check_name("immed-flood/target-entries"),
			"expected %d entries, each datum once, got %" PRIu64
			" entries: %" PRIu64 " missing (first 0x%" PRIx64 "), %"
			PRIu64 " duplicated (first 0x%" PRIx64 "), %" PRIu64
			" out of range, %" PRIu64 " with wrong flags", FLOOD_N,
			r->entries, r->missing, r->first_missing, r->duplicates,
			r->first_duplicate, r->out_of_range, r->bad_flags);
}

/*
 * immed-flood: the target stops calling libfabric (its receive CQ unread)
 * while FLOOD_N FI_COMMIT_COMPLETE|FI_IMMED commits go; afterwards it must
 * read exactly one entry per commit, and every commit completes here.
 */
void sc_immed_flood(void)
{
	struct idle_req req = { .marker_off = 256, .flag_off = 320 };
	struct flood_req fr = { .base = FLOOD_BASE, .count = FLOOD_N };
	struct flood_rsp rsp;
	struct sc_sum m;

	sc_setup(FLOOD_N, (size_t)FLOOD_N * 4096);
	gen_fill((uint8_t *)&req.flag_value, 8, 0x7f1d, req.flag_off);
	flood_idle_start(&req);
	for (unsigned i = 0; i < FLOOD_N; i++) {
		size_t len = 8 + i % 57;
		struct sop *s = sop_new(SOP_COMMIT, 0, i % 2 ? REG_B : REG_A,
					(uint64_t)(i / 2) * 128 + i % 5, len,
					sc_bytes(len));

		s->oracle = true; /* FI_IMMED: always the agent */
		sop_post_retry(g_s.main.ep, s, FI_IMMED, FLOOD_BASE + i, NULL);
	}
	sc_wait(0, NULL, IDLE_MS / 2); /* the target's idle period is longer */
	flood_idle_end(&req, 0x7f1d);
	m = sc_sum(pick_all);
	sc_verdict_once("immed-flood/initiator", &m, false);
	sc_verdict_durable("immed-flood/durable", &m);
	ctl_send(MSG_FLOOD_CHECK, &fr, sizeof(fr));
	memcpy(&rsp, ctl_expect(MSG_FLOOD_RESULT, sizeof(rsp), NULL),
	       sizeof(rsp));
	ctl_release();
	flood_verdict(&rsp);
	sc_verdict_strays("immed-flood/no-stray");
}

/* Reads the CQs until nothing has come for a while (bounded). */
static void target_settle(void)
{
	int64_t deadline = deadline_in(STEP_MS), quiet = deadline_in(DRAIN_MS);

	while (before(deadline) && before(quiet))
		if (progress())
			quiet = deadline_in(DRAIN_MS);
		else
			pause_briefly();
}

/* Counts the FI_IMMED data read against base .. base + count - 1. */
void target_on_flood_check(const struct flood_req *req)
{
	uint8_t *seen = calloc(req->count ? req->count : 1, 1);
	struct flood_rsp rsp = { .entries = 0 };

	if (!seen)
		die("out of memory");
	target_settle();
	rsp.entries = g_t.nimmed_all;
	rsp.bad_flags = g_t.immed_bad_flags;
	for (size_t i = 0; i < g_t.nimmed_all; i++) {
		uint64_t d = g_t.immed_all[i] - req->base;

		if (g_t.immed_all[i] < req->base || d >= req->count) {
			rsp.out_of_range++;
			continue;
		}
		rsp.in_range++;
		if (seen[d] && !rsp.duplicates++)
			rsp.first_duplicate = g_t.immed_all[i];
		seen[d] = 1;
	}
	for (uint64_t d = 0; d < req->count; d++)
		if (!seen[d] && !rsp.missing++)
			rsp.first_missing = req->base + d;
	free(seen);
	ctl_send(MSG_FLOOD_RESULT, &rsp, sizeof(rsp));
}
