/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_hostile_fuzz.c - the hostile client's fuzzing, flooding,
 * raw inbox writes, header attacks and core writes.
 */
#include "pmv_hostile.h"

/* ------------------------------------------------------------------ */
/* Hostile client: fuzzing, flooding, raw writes, headers             */
/* ------------------------------------------------------------------ */

/* A random extent: inside zone B, or around and far from the region. */
static struct pmv_extent fuzz_extent(uint64_t maxlen)
{
	uint64_t b = g_opt.base, off;

	switch (rnd(6)) {
	case 0:
		off = rnd(ZONE_B_LEN);
		return (struct pmv_extent){ b + ZB + off,
			rnd(ZONE_B_LEN - off + 1) % (maxlen + 1) };
	case 1:
		return (struct pmv_extent){ b + REGION_LEN + rnd(8192),
					    rnd(maxlen + 1) };
	case 2:
		off = 1 + rnd(64);
		return (struct pmv_extent){ b + REGION_LEN - off,
			off + 1 + rnd(64) };
	case 3:
		return (struct pmv_extent){ b - 1 - rnd(4096),
					    1 + rnd(maxlen) };
	case 4:
		return (struct pmv_extent){ rnd64(), rnd64() | (1ULL << 32) };
	default:
		return (struct pmv_extent){ b + ZB + rnd(ZONE_B_LEN),
					    rnd(ZONE_B_LEN) % (maxlen + 1) };
	}
}

static uint32_t fuzz_flags(void)
{
	static const uint32_t picks[] = {
		0, 0, 0, PMV_REQ_IMMED, PMV_REQ_INLINE, PMV_REQ_INLINE,
		PMV_REQ_FENCE, PMV_REQ_FENCE | PMV_REQ_INLINE,
		PMV_REQ_IMMED | PMV_REQ_INLINE, PMV_REQ_GATED, 0x100,
	};
	uint32_t f = picks[rnd(ARRAY_LEN(picks))];

	return rnd(16) ? f : (uint32_t)rnd64();
}

static uint16_t fuzz_fence(uint32_t flags)
{
	if (!(flags & PMV_REQ_FENCE))
		return rnd(12) ? 0 : (uint16_t)(1 + rnd(8));
	return rnd(8) ? (uint16_t)rnd(PMV_SLOTS + 2) : (uint16_t)rnd64();
}

/* True if [addr, addr + len) lies inside the region. */
static bool inside_region(const struct pmv_extent *e)
{
	uint64_t off = e->addr - g_opt.base;

	return e->addr >= g_opt.base && off <= REGION_LEN &&
	       e->len <= REGION_LEN - off;
}

/* The test's own model of a request: bad (it does not fit the slot:
 * refused as PMV_ERR_BAD_REQUEST), served (valid), or refused (GATED
 * among them: the hostile's write carries no completion, so the target
 * refuses it after its gate wait). */
static enum expect fuzz_model(const struct pmv_req *h,
			      const struct pmv_extent *ext, unsigned n,
			      uint32_t slot)
{
	uint64_t size = sizeof(*h) + (uint64_t)n * sizeof(*ext);
	bool valid = h->key == g_opt.key &&
		     !(h->flags & ~(uint32_t)(PMV_REQ_IMMED | PMV_REQ_INLINE |
					      PMV_REQ_FENCE)) &&
		     h->fence_back <= PMV_SLOTS &&
		     (!h->fence_back || (h->flags & PMV_REQ_FENCE));

	if ((h->flags & PMV_REQ_INLINE) &&
	    (ext[n - 1].len > slot || size + ext[n - 1].len > slot))
		return EX_BAD;
	if (size > slot)
		return EX_BAD;
	for (unsigned i = 0; i < n && valid; i++)
		valid = inside_region(&ext[i]);
	return valid ? EX_SERVED : EX_REFUSED;
}

/* A random request for the current seq with a right checksum, laid out in
 * g_x.wbuf; returns its size, and what the model expects in *ex. */
static size_t fuzz_build(uint32_t slot, enum expect *ex)
{
	struct pmv_extent ext[8];
	struct pmv_req h = { .seq = g_x.c.seq, .data = rnd64() };
	unsigned n = (unsigned)rnd(7), room;
	uint8_t data[256];
	size_t dlen = 0;

	h.key = rnd(4) ? g_opt.key : rnd64();
	h.flags = fuzz_flags();
	h.fence_back = fuzz_fence(h.flags);
	h.nextents = (uint16_t)n;
	for (unsigned i = 0; i < n; i++)
		ext[i] = fuzz_extent(UINT64_MAX - 1);
	room = slot > 56 + 16 * n ? slot - 56 - 16 * n : 0;
	if (h.flags & PMV_REQ_INLINE) {
		ext[n] = fuzz_extent(rnd(8) ? room : room + 1 + rnd(64));
		dlen = ext[n].len <= room ? ext[n].len : room;
		for (size_t k = 0; k < dlen; k++)
			data[k] = (uint8_t)rnd64();
		n++;
	}
	*ex = fuzz_model(&h, ext, n, slot);
	return img_build(&h, ext, n, data, dlen);
}

/* One random request, judged against the model (which refusal is not
 * judged; a fence refusal of a valid one is allowed: earlier requests to
 * the key failed). */
void fuzz_one(uint32_t slot)
{
	struct attack a = { .name = "fuzz" };
	size_t len = fuzz_build(slot, &a.expect);
	struct pmv_ack ack;

	if (hconn_write(&g_x.c, len, req_addr(&g_x.c, g_x.c.seq),
			g_x.c.peer.inbox_key))
		die("fuzz: writing a slot failed");
	if (!hconn_ack(&g_x.c, g_x.c.seq, ACK_MS, &ack)) {
		judge_silence(&a);
		return;
	}
	g_x.c.seq++;
	if ((a.expect == EX_SERVED && ack.status == PMV_ERR_FENCE) ||
	    (a.expect == EX_REFUSED && ack.status))
		a.expect = EX_ANY;
	judge_ack(&a, ack.status);
}

/* Waits (bounded) until the honest initiator has made PROGRESS_STEP more
 * commits than at mark: it keeps being served during the attack. */
void await_honest(const char *group, uint64_t mark, bool drive)
{
	int64_t deadline = deadline_in(PROGRESS_MS);
	char name[96];
	uint64_t now;

	snprintf(name, sizeof(name), "honest-progress-during-%s", group);
	while ((now = ctl_load(&g_x.ctl->honest_commits)) <
	       mark + PROGRESS_STEP && !ctl_load(&g_x.ctl->honest_failed) &&
	       before(deadline)) {
		if (drive && g_x.c.up)
			hconn_progress(&g_x.c, NULL, NULL, NULL);
		pause_briefly();
	}
	verdict(now >= mark + PROGRESS_STEP, name, "the honest initiator's "
		"commits %s (%" PRIu64 " -> %" PRIu64 ")",
		now >= mark + PROGRESS_STEP ? "kept completing" :
		ctl_load(&g_x.ctl->honest_failed) ? "failed" : "stalled",
		mark, now);
}

/* Floods the inbox: rounds of PMV_SLOTS requests in a row (one in four
 * refused), then their acks. */
void flood(unsigned rounds)
{
	static const struct attack ok = { "flood-valid", EX_SERVED, 0, FLUSH8 };
	static const struct attack bad = { "flood-range", EX_REFUSED,
					   PMV_ERR_RANGE, SCOPE1(RL, 8) };
	struct pmv_ack ack;

	for (unsigned r = 0; r < rounds; r++) {
		uint64_t first = g_x.c.seq;

		for (unsigned i = 0; i < PMV_SLOTS; i++, g_x.c.seq++) {
			const struct attack *a = i % 4 == 3 ? &bad : &ok;
			size_t len = attack_image(a, g_x.c.peer.slot_size,
						  g_x.c.seq);

			if (hconn_write(&g_x.c, len, req_addr(&g_x.c, g_x.c.seq),
					g_x.c.peer.inbox_key))
				die("flood: writing a slot failed");
		}
		for (uint64_t s = first; s < g_x.c.seq;) {
			uint64_t n;

			if (!hconn_ack(&g_x.c, s, ACK_MS, &ack))
				die("flood: no ack for request %" PRIu64, s);
			n = ack.covers ? ack.covers : 1;
			if (n > g_x.c.seq - s) {
				verdict(false, "hostile-flood-covers", "an ack "
					"covers %" PRIu64 " requests, %" PRIu64
					" were left", n, g_x.c.seq - s);
				n = g_x.c.seq - s;
			}
			/* an ack ends requests s .. s + n - 1; the others
			 * succeeded, the last has the status */
			for (; n; n--, s++)
				judge_ack((s - first) % 4 == 3 ? &bad : &ok,
					  n == 1 ? ack.status : 0);
		}
	}
}

/* Fills g_x.wbuf with len random bytes. */
static void random_fill(size_t len)
{
	for (size_t k = 0; k < len; k++)
		g_x.wbuf[k] = (uint8_t)rnd64();
}

/* Writes random bytes at inbox offsets in the target's registered inbox
 * (its ack slots, every request slot, the generation line, the landing
 * words, the profile table, all of it), each followed by the probe. */
void raw_inbox_writes(void)
{
	uint32_t slot = g_x.c.peer.slot_size;
	size_t size = PMV_INBOX_SIZE(slot);
	size_t acks = PMV_ACKS_SIZE(PMV_SLOTS), gen = acks + PMV_SLOTS * slot;
	const struct raw raws[] = {
		{ "target-ack-slots", 0, acks },
		{ "request-slots", acks, (size_t)PMV_SLOTS * slot },
		{ "generation-line", gen, 64 },
		{ "landing-words", gen + 64, PMV_GEN_TO_PROFILES - 64 },
		{ "profile-table", gen + PMV_GEN_TO_PROFILES, PMV_PROFILES_SIZE },
		{ "whole-inbox", 0, size },
	};

	for (size_t i = 0; i < ARRAY_LEN(raws); i++) {
		int ret;

		random_fill(raws[i].len);
		ret = hconn_write(&g_x.c, raws[i].len,
				  g_x.c.peer.inbox_addr + raws[i].off,
				  g_x.c.peer.inbox_key);
		if (ret)
			info("INFO raw write %s: %s", raws[i].name,
			     fi_strerror(-ret));
		if (!g_x.c.up)
			hostile_reconnect();
		clear_slots(&g_x.c);
		run_attack(&k_probe);
	}
}

/* A request spilling into the next slot: served, then the garbage
 * cleared before the agent's rule refuses it. */
void spill_write(void)
{
	static const struct attack spill = { "spill-into-next-slot", EX_SERVED,
					     0, FLUSH8, .mangle = M_SPILL };

	run_attack(&spill);
	clear_slots(&g_x.c);
	run_attack(&k_probe);
}

/* Connects with a lying header, sends a valid and an invalid request, and
 * reports what came back; the target must only survive it. */
void header_attack(enum hdr_mode mode)
{
	static const struct attack bad = { "header-range", EX_REFUSED,
					   PMV_ERR_RANGE, SCOPE1(RL, 8) };
	struct hconn keep = g_x.c, *c = &g_x.c;
	struct pmv_ack ack;
	unsigned acks = 0;

	if (!hconn_connect(c, mode)) {
		info("INFO header %s: the connection was refused",
		     k_hdr_names[mode]);
		g_x.c = keep;
		return;
	}
	if (c->has_peer) {
		for (int i = 0; i < 2 && c->up; i++) {
			size_t len = attack_image(i ? &bad : &k_probe,
						  c->peer.slot_size, c->seq);

			if (hconn_write(c, len, req_addr(c, c->seq),
					c->peer.inbox_key) ||
			    !hconn_ack(c, c->seq, IGNORE_MS * 10, &ack))
				break;
			acks++;
			c->seq++;
		}
	}
	info("INFO header %s: connected, %u of 2 requests acked%s",
	     k_hdr_names[mode], acks, c->up ? "" : ", then disconnected");
	hconn_close(c);
	g_x.c = keep;
}

/* The address and key of a core write. */
static void core_target(const struct core_write *w, uint64_t *addr,
			uint64_t *key)
{
	uint64_t inbox = g_x.c.peer.inbox_addr;
	uint64_t end = inbox + PMV_INBOX_SIZE(g_x.c.peer.slot_size);

	*key = w->base == CW_REGION ? g_opt.key :
	       w->base == CW_KEY ? w->key : g_x.c.peer.inbox_key;
	*addr = (uint64_t)w->off + (w->base == CW_REGION ? g_opt.base :
				    w->base == CW_INBOX_END ? end : inbox);
}

/* Runs one core write; it must not land: a write that completes while
 * the connection still serves the probe after it is a FAIL. */
void core_write(const struct core_write *w)
{
	uint64_t addr, key, seq;
	struct pmv_ack ack;
	char name[96];
	int ret;
	bool landed;

	core_target(w, &addr, &key);
	random_fill(w->len);
	ret = hconn_write(&g_x.c, w->len, addr, key);
	seq = g_x.c.seq;
	landed = !ret && g_x.c.up &&
		 !hconn_write(&g_x.c, attack_image(&k_probe,
						   g_x.c.peer.slot_size, seq),
			      req_addr(&g_x.c, seq), g_x.c.peer.inbox_key) &&
		 hconn_ack(&g_x.c, seq, ACK_MS, &ack);
	snprintf(name, sizeof(name), "hostile-core-%s", w->name);
	if (landed) {
		g_x.c.seq++;
		verdict(false, name, "the target's core accepted the write "
			"(addr 0x%" PRIx64 ", key 0x%" PRIx64 ")", addr, key);
		return;
	}
	if (g_opt.verbose)
		info("REFUSED %s: write %s, connection %s", w->name,
		     ret ? fi_strerror(-ret) : "completed",
		     g_x.c.up ? "kept" : "dropped");
	g_x.dropped += !g_x.c.up;
	hostile_reconnect();
}

void core_writes(void)
{
	uint64_t ik = g_x.c.peer.inbox_key;
	const struct core_write writes[] = {
		{ "inbox-past-end", CW_INBOX_END, 0, 8, 0 },
		{ "inbox-straddles-end", CW_INBOX_END, -8, 16, 0 },
		{ "inbox-before-start", CW_INBOX, -8, 16, 0 },
		{ "inbox-oversize", CW_INBOX, 0,
		  PMV_INBOX_SIZE(g_x.c.peer.slot_size) + 4096, 0 },
		{ "region-past-end", CW_REGION, RL, 8, 0 },
		{ "region-straddles-end", CW_REGION, RL - 4, 8, 0 },
		{ "region-before-start", CW_REGION, -8, 16, 0 },
		{ "region-oversize", CW_REGION, 0, REGION_LEN + 8, 0 },
		{ "key-inbox-plus-one", CW_KEY, 0, 8, ik + 1 },
		{ "key-inbox-minus-one", CW_KEY, 0, 8, ik - 1 },
		{ "key-inbox-xor-one", CW_KEY, 0, 8, ik ^ 1 },
		{ "key-zero", CW_KEY, 0, 8, 0 },
		{ "key-region-plus-one", CW_KEY, 0, 8, g_opt.key + 1 },
	};

	for (size_t i = 0; i < ARRAY_LEN(writes); i++)
		core_write(&writes[i]);
}
