/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_hostile_attack.c - the hostile client's crafted requests:
 * the tables of valid, refused and bad requests, and their verdicts.
 */
#include "pmv_hostile.h"

/* ------------------------------------------------------------------ */
/* Hostile client: crafted requests                                   */
/* ------------------------------------------------------------------ */

/*
 * Lays a request out in g_x.wbuf in wire order: the header (nextents as
 * given, which may lie), next extents (the inline one included) and dlen
 * bytes of data; the checksum covers what is laid out.  Returns its size.
 */
size_t img_build(const struct pmv_req *h, const struct pmv_extent *ext,
		 unsigned next, const uint8_t *data, size_t dlen)
{
	struct pmv_req w = {
		.seq = htole64(h->seq), .key = htole64(h->key),
		.data = htole64(h->data), .flags = htole32(h->flags),
		.nextents = htole16(h->nextents),
		.fence_back = htole16(h->fence_back),
		.gen = htole32(h->gen),
	};
	size_t len = sizeof(w);
	uint32_t sum;

	memcpy(g_x.wbuf, &w, sizeof(w));
	for (unsigned i = 0; i < next; i++, len += sizeof(*ext)) {
		struct pmv_extent e = { htole64(ext[i].addr),
					htole64(ext[i].len) };

		memcpy(g_x.wbuf + len, &e, sizeof(e));
	}
	if (dlen)
		memcpy(g_x.wbuf + len, data, dlen);
	len += dlen;
	sum = htole32(pmv_checksum(g_x.wbuf, len));
	memcpy(g_x.wbuf + offsetof(struct pmv_req, checksum), &sum,
	       sizeof(sum));
	return len;
}

static const struct attack k_valid[] = {
	{ "valid-flush", EX_SERVED, 0, SCOPE1(ZB, 64) },
	{ "valid-send", EX_SERVED, 0, .inl = true,
	  .inl_ext = { REL(ZONE_A_OFF), ZONE_A_LEN } },
	{ "valid-empty-flush", EX_SERVED, 0, .flags = 0 },
	{ "valid-immed", EX_SERVED, 0, .flags = PMV_REQ_IMMED,
	  SCOPE1(ZB + 64, 8) },
	{ "valid-five-ranges", EX_SERVED, 0, .next = 5,
	  .ext = { { REL(ZB), 1 }, { REL(ZB + 100), 7 }, { REL(ZB + 200), 64 },
		   { REL(ZB + ZONE_B_LEN - 1), 1 }, { REL(ZB + 300), 0 } } },
	{ "valid-send-fills-slot", EX_SERVED, 0, .inl = true,
	  .inl_ext = { REL(ZB + 512), 0 }, .dyn = D_INLINE_FIT },
	{ "zero-length-at-end", EX_ANY, 0, SCOPE1(RL, 0) },
	{ "fence-whole-ring", EX_ANY, 0, .flags = PMV_REQ_FENCE,
	  .fence_back = PMV_SLOTS, FLUSH8 },
};

static const struct attack k_refused[] = {
	{ "range-past-end", EX_REFUSED, PMV_ERR_RANGE, SCOPE1(RL, 8) },
	{ "range-far-past-end", EX_REFUSED, PMV_ERR_RANGE, SCOPE1(RL + 4096, 1) },
	{ "range-straddles-end", EX_REFUSED, PMV_ERR_RANGE, SCOPE1(RL - 8, 16) },
	{ "range-straddles-start", EX_REFUSED, PMV_ERR_RANGE, SCOPE1(-8, 16) },
	{ "range-before-start", EX_REFUSED, PMV_ERR_RANGE, SCOPE1(-4096, 8) },
	{ "range-wraps-address", EX_REFUSED, PMV_ERR_RANGE, .next = 1,
	  .ext = { { ABS(UINT64_MAX - 7), 16 } } },
	{ "range-wraps-length", EX_REFUSED, PMV_ERR_RANGE,
	  SCOPE1(16, UINT64_MAX - 8) },
	{ "range-huge-length", EX_REFUSED, PMV_ERR_RANGE, SCOPE1(0, UINT64_MAX) },
	{ "range-region-plus-one", EX_REFUSED, PMV_ERR_RANGE, SCOPE1(0, RL + 1) },
	{ "range-region-shifted", EX_REFUSED, PMV_ERR_RANGE, SCOPE1(1, RL) },
	{ "range-last-of-five-bad", EX_REFUSED, PMV_ERR_RANGE, .next = 5,
	  .ext = { { REL(ZB), 8 }, { REL(ZB + 64), 8 }, { REL(ZB + 128), 8 },
		   { REL(ZB + 192), 8 }, { REL(RL - 4), 8 } } },
	{ "range-first-of-two-bad", EX_REFUSED, PMV_ERR_RANGE, .next = 2,
	  .ext = { { REL(-1), 2 }, { REL(ZB), 8 } } },
	{ "send-past-end", EX_REFUSED, PMV_ERR_RANGE, .inl = true,
	  .inl_ext = { REL(RL - 4), 8 } },
	{ "send-straddles-start", EX_REFUSED, PMV_ERR_RANGE, .inl = true,
	  .inl_ext = { REL(-4), 8 } },
	{ "send-full-slot-straddles-end", EX_REFUSED, PMV_ERR_RANGE,
	  .inl = true, .inl_ext = { REL(RL - 8), 0 }, .dyn = D_INLINE_FIT },
	{ "send-wraps", EX_REFUSED, PMV_ERR_RANGE, .inl = true,
	  .inl_ext = { ABS(UINT64_MAX - 3), 8 } },
	{ "send-good-scope-bad-data", EX_REFUSED, PMV_ERR_RANGE, FLUSH8,
	  .inl = true, .inl_ext = { REL(RL), 8 } },
	{ "send-bad-scope-good-data", EX_REFUSED, PMV_ERR_RANGE,
	  SCOPE1(RL, 8), .inl = true, .inl_ext = { REL(ZB + 128), 8 } },
	/* the agent checks the fence first: the request before, to the same
	 * key, failed */
	{ "send-fenced-past-end", EX_REFUSED, PMV_ERR_FENCE,
	  .flags = PMV_REQ_FENCE | PMV_REQ_INLINE, .fence_back = 1,
	  .inl = true, .inl_ext = { REL(RL - 1), 2 } },
	{ "key-zero", EX_REFUSED, PMV_ERR_NO_KEY, .key = KEY_ZERO, FLUSH8 },
	{ "key-plus-one", EX_REFUSED, PMV_ERR_NO_KEY, .key = KEY_PLUS1, FLUSH8 },
	{ "key-all-ones", EX_REFUSED, PMV_ERR_NO_KEY, .key = KEY_ONES, FLUSH8 },
	{ "key-hostile-inbox", EX_REFUSED, PMV_ERR_NO_KEY,
	  .key = KEY_OWN_INBOX, FLUSH8 },
	{ "key-target-inbox", EX_REFUSED, PMV_ERR_NO_KEY,
	  .key = KEY_TARGET_INBOX, FLUSH8 },
	{ "key-unknown-send", EX_REFUSED, PMV_ERR_NO_KEY, .key = KEY_PLUS1,
	  .inl = true, .inl_ext = { REL(ZB), 8 } },
	/* GATED, on a write that carried no completion: refused after the
	 * target's gate wait (run_hostile.sh: 2 s), as flag-all-bits */
	{ "flag-gated-no-completion", EX_REFUSED, PMV_ERR_BAD_REQUEST,
	  .flags = PMV_REQ_GATED, FLUSH8 },
	{ "flag-unknown-bit31", EX_REFUSED, PMV_ERR_BAD_REQUEST,
	  .flags = 0x80000000u, FLUSH8 },
	{ "flag-all-bits", EX_REFUSED, PMV_ERR_BAD_REQUEST,
	  .flags = 0xffffffffu, .inl = true, .inl_ext = { REL(ZB), 8 } },
	{ "flag-unknown-bad-key", EX_REFUSED, PMV_ERR_BAD_REQUEST,
	  .flags = 0x10, .key = KEY_ZERO, FLUSH8 },
	{ "fence-past-ring", EX_REFUSED, PMV_ERR_BAD_REQUEST,
	  .flags = PMV_REQ_FENCE, .fence_back = PMV_SLOTS + 1, FLUSH8 },
	{ "fence-max", EX_REFUSED, PMV_ERR_BAD_REQUEST, .flags = PMV_REQ_FENCE,
	  .fence_back = 0xffff, FLUSH8 },
	{ "fence-back-without-fence", EX_REFUSED, PMV_ERR_BAD_REQUEST,
	  .fence_back = 3, FLUSH8 },
};

static const struct attack k_bad[] = {
	{ "bad-checksum", EX_BAD, 0, FLUSH8, .mangle = M_BAD_SUM },
	{ "zero-checksum", EX_BAD, 0, FLUSH8, .mangle = M_ZERO_SUM },
	{ "seq-zero", EX_BAD, 0, FLUSH8, .mangle = M_SEQ_ZERO },
	{ "seq-previous", EX_BAD, 0, FLUSH8, .mangle = M_SEQ_OLD },
	{ "seq-next-lap", EX_BAD, 0, FLUSH8, .mangle = M_SEQ_LAP },
	{ "seq-max", EX_BAD, 0, FLUSH8, .mangle = M_SEQ_MAX },
	{ "seq-far", EX_BAD, 0, FLUSH8, .mangle = M_SEQ_FAR },
	{ "wrong-slot", EX_IGNORED, 0, FLUSH8, .mangle = M_WRONG_SLOT },
	{ "torn", EX_BAD, 0, .next = 2,
	  .ext = { { REL(ZB), 8 }, { REL(ZB + 8), 8 } }, .mangle = M_TORN },
	{ "random-bytes-right-seq", EX_BAD, 0, .mangle = M_RANDOM_SEQ },
	{ "random-bytes", EX_BAD, 0, .mangle = M_RANDOM },
	{ "send-data-over-slot", EX_BAD, 0, .inl = true,
	  .inl_ext = { REL(ZB), 0 }, .dyn = D_INLINE_OVER },
	{ "send-data-1000", EX_BAD, 0, .inl = true,
	  .inl_ext = { REL(ZB), 1000 } },
	{ "send-data-huge", EX_BAD, 0, .inl = true,
	  .inl_ext = { REL(ZB), UINT64_MAX } },
	{ "extents-over-slot", EX_BAD, 0, .dyn = D_EXTENTS_OVER },
	{ "send-no-room-for-data", EX_BAD, 0, .inl = true,
	  .inl_ext = { REL(ZB), 1 }, .dyn = D_INLINE_NO_ROOM },
	{ "nextents-max", EX_BAD, 0, FLUSH8, .dyn = D_NEXTENTS_MAX },
};

/* The probe: a valid flush that must be served after refused requests. */
const struct attack k_probe = { "probe", EX_SERVED, 0, FLUSH8 };

static uint64_t attack_key(enum key_sel k)
{
	switch (k) {
	case KEY_PLUS1: return g_opt.key + 1;
	case KEY_ZERO: return 0;
	case KEY_ONES: return UINT64_MAX;
	case KEY_OWN_INBOX: return g_x.inbox_key;
	case KEY_TARGET_INBOX: return g_x.c.peer.inbox_key;
	default: return g_opt.key;
	}
}

static uint64_t aspec_addr(struct aspec a)
{
	return a.abs ? a.v : g_opt.base + a.v;
}

/* Extents that fit a slot after the header. */
static unsigned slot_extents(uint32_t slot)
{
	return (slot - (uint32_t)sizeof(struct pmv_req)) /
	       (uint32_t)sizeof(struct pmv_extent);
}

/* The attack's header and extents with its slot-dependent sizes applied;
 * returns how many extents to lay out. */
static unsigned attack_shape(const struct attack *a, uint32_t slot,
			     uint64_t seq, struct pmv_req *h,
			     struct pmv_extent *ext)
{
	unsigned n = a->next, room = slot_extents(slot);

	*h = (struct pmv_req){ .seq = seq, .key = attack_key(a->key),
			       .data = 0x4844, .flags = a->flags,
			       .fence_back = a->fence_back };
	if (a->dyn == D_EXTENTS_OVER || a->dyn == D_INLINE_NO_ROOM)
		n = a->dyn == D_EXTENTS_OVER ? room + 1 : room;
	for (unsigned i = 0; i < n; i++)
		ext[i] = (struct pmv_extent){
			i < a->next ? aspec_addr(a->ext[i].a) :
				      g_opt.base + REGION_LEN, /* invalid */
			i < a->next ? a->ext[i].len : 8 };
	h->nextents = a->dyn == D_NEXTENTS_MAX ? 0xffff : (uint16_t)n;
	if (a->inl) {
		h->flags |= PMV_REQ_INLINE;
		ext[n] = (struct pmv_extent){ aspec_addr(a->inl_ext.a),
					      a->inl_ext.len };
		if (a->dyn == D_INLINE_FIT || a->dyn == D_INLINE_OVER)
			ext[n].len = slot - sizeof(*h) - (n + 1) * 16 +
				     (a->dyn == D_INLINE_OVER);
		n++;
	}
	return n;
}

/* Lays out an attack's request claiming seq; returns its size. */
size_t attack_image(const struct attack *a, uint32_t slot, uint64_t seq)
{
	struct pmv_extent ext[PMV_SLOTS];
	uint8_t data[1024];
	struct pmv_req h;
	unsigned n = attack_shape(a, slot, seq, &h, ext);
	size_t dlen = 0, laid = sizeof(h) + n * sizeof(ext[0]);

	if (a->inl) {
		dlen = ext[n - 1].len;
		/* lay out what the slot holds; the length may lie */
		if (dlen > slot - laid || dlen > sizeof(data))
			dlen = slot > laid ? slot - laid : 0;
		for (size_t k = 0; k < dlen; k++)
			data[k] = zone_a_byte(k);
	}
	return img_build(&h, ext, n, data, dlen);
}

/* Spoils a laid-out image; *slot_seq: the slot it goes to. */
static size_t attack_mangle(const struct attack *a, size_t len,
			    uint32_t slot, uint64_t *slot_seq)
{
	uint64_t seq = g_x.c.seq, v;
	uint8_t *b = g_x.wbuf;

	switch (a->mangle) {
	case M_BAD_SUM: b[offsetof(struct pmv_req, checksum)] ^= 1; break;
	case M_ZERO_SUM:
		memset(b + offsetof(struct pmv_req, checksum), 0, 4);
		break;
	case M_WRONG_SLOT: *slot_seq = seq + 1; break;
	case M_TORN: /* the slot zeroed, then only the header written */
		memset(b + sizeof(struct pmv_req), 0, len - sizeof(struct pmv_req));
		break;
	case M_RANDOM_SEQ: case M_RANDOM:
		for (size_t k = 0; k < slot; k++)
			b[k] = (uint8_t)rnd64();
		v = htole64(seq);
		if (a->mangle == M_RANDOM_SEQ)
			memcpy(b, &v, sizeof(v));
		return slot;
	case M_SPILL: /* random bytes on into the next slot */
		for (size_t k = len; k < 2 * (size_t)slot; k++)
			b[k] = (uint8_t)rnd64();
		return 2 * (size_t)slot;
	default: break;
	}
	return len;
}

/* The seq a request's header claims after its mangling (re-checksummed:
 * only the seq is wrong). */
static uint64_t mangled_seq(enum mangle m, uint64_t seq)
{
	switch (m) {
	case M_SEQ_ZERO: return 0;
	case M_SEQ_OLD: return seq - 1;
	case M_SEQ_LAP: return seq + PMV_SLOTS;
	case M_SEQ_MAX: return UINT64_MAX;
	case M_SEQ_FAR: return seq + (UINT64_C(1) << 32);
	default: return seq;
	}
}

/* Counts an ack against the attack's expectation; may FAIL. */
void judge_ack(const struct attack *a, int32_t status)
{
	bool other = a->expect == EX_REFUSED && status && status != a->code;
	char name[96];

	snprintf(name, sizeof(name), "hostile-%s", a->name);
	if (status >= PMV_ERR_BASE && status < PMV_ERR_LAST)
		g_x.refusals[status - PMV_ERR_BASE]++;
	if (!status)
		g_x.served++;
	if (a->expect == EX_SERVED && status)
		verdict(false, name, "a valid request was refused: %s",
			status_name(status));
	else if (a->expect == EX_REFUSED && !status)
		verdict(false, name, "the target's agent served a request it "
			"must refuse");
	else if (a->expect == EX_IGNORED)
		verdict(false, name, "the agent acked a seq nothing was "
			"written for (%s)", status_name(status));
	else if (a->expect == EX_BAD && status != PMV_ERR_BAD_REQUEST)
		verdict(false, name, "a slot without a valid request was acked "
			"%s, expected PMV_ERR_BAD_REQUEST", status_name(status));
	else if (a->expect == EX_BAD)
		g_x.bad++;
	else if (other) /* refused, but not as pmv_proto.c says: reported */
		info("REFUSED %s: %s (expected %s)", a->name,
		     status_name(status), status_name(a->code));
	else if (g_opt.verbose)
		info("REFUSED %s: %s", a->name, status_name(status));
}

/* No ack came for an attack: as expected, or a FAIL for a valid one. */
void judge_silence(const struct attack *a)
{
	char name[96];

	snprintf(name, sizeof(name), "hostile-%s", a->name);
	if (a->expect == EX_SERVED || a->expect == EX_BAD) {
		verdict(false, name, "no ack within %d ms%s%s", ACK_MS,
			a->expect == EX_BAD ? ": a slot without a valid "
			"request stalled the connection" : "",
			g_x.c.up ? "" : " (connection gone)");
		return;
	}
	if (a->expect == EX_IGNORED)
		g_x.ignored++;
	else
		g_x.unanswered++;
	if (g_opt.verbose || a->expect == EX_REFUSED)
		info("IGNORED %s: no ack%s", a->name,
		     a->expect == EX_REFUSED ? " (a refusal was expected)" : "");
}

/*
 * Puts every request slot back to empty in one write: the seq of its
 * previous lap in the header, zeros after it.  Garbage the test left in
 * slots ahead of the agent would otherwise be refused, by rule, once the
 * agent reaches them.
 */
void clear_slots(struct hconn *c)
{
	uint32_t slot = c->peer.slot_size;
	size_t len = (size_t)PMV_SLOTS * slot;
	int ret;

	memset(g_x.wbuf, 0, len);
	for (uint64_t s = c->seq; s < c->seq + PMV_SLOTS; s++) {
		uint64_t idle = htole64(s > PMV_SLOTS ? s - PMV_SLOTS : 0);

		memcpy(g_x.wbuf + ((s - 1) % PMV_SLOTS) * slot, &idle,
		       sizeof(idle));
	}
	ret = hconn_write(c, len, req_addr(c, 1), c->peer.inbox_key);
	if (ret)
		info("INFO clearing the request slots: %s", fi_strerror(-ret));
}

/* Writes one crafted request into the target's inbox and judges what the
 * agent did with it (an ack moves the expected seq on). */
void run_attack(const struct attack *a)
{
	struct hconn *c = &g_x.c;
	uint32_t slot = c->peer.slot_size;
	uint64_t slot_seq = c->seq, seq = c->seq;
	struct pmv_ack ack;
	size_t len;
	int ret;

	len = attack_image(a, slot, mangled_seq(a->mangle, seq));
	len = attack_mangle(a, len, slot, &slot_seq);
	ret = hconn_write(c, len, req_addr(c, slot_seq), c->peer.inbox_key);
	if (ret) {
		verdict(false, "hostile-write", "%s: writing the slot: %s",
			a->name, fi_strerror(-ret));
		hostile_reconnect();
		return;
	}
	if (!hconn_ack(c, seq, a->expect == EX_IGNORED ? IGNORE_MS : ACK_MS,
		       &ack)) {
		judge_silence(a);
		if (slot_seq != seq)
			clear_slots(c);
		return;
	}
	c->seq++;
	judge_ack(a, ack.status);
}

static void run_attacks(const struct attack *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		run_attack(&list[i]);
}

/* The attack groups over the tables above (the run calls them). */
void group_valid(void)
{
	run_attacks(k_valid, ARRAY_LEN(k_valid));
}

void group_refused(void)
{
	run_attacks(k_refused, ARRAY_LEN(k_refused));
}

void group_bad(void)
{
	for (size_t i = 0; i < ARRAY_LEN(k_bad); i++) {
		run_attack(&k_bad[i]);
		/* every other one is followed by a probe */
		if (i % 2)
			run_attack(&k_probe);
	}
	run_attack(&k_probe);
}
