/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * libFuzzer target for the wire format (prov/pmemverbs/src/proto): the
 * bytes a peer controls.  The first input byte picks what the rest is:
 *
 *   0  a request slot, decoded as the agent decodes it, validated against
 *      a fake MR table, then "served": every extent is touched and a send
 *      request's data copied into the fake region, so ASan reports any
 *      byte the validator let through outside a region;
 *   1  the same with the slot's checksum made valid first, so the fuzzer
 *      reaches the validator without guessing CRCs;
 *   2  an ack slot;
 *   3  CM data carrying (or not) a pmemverbs header;
 *   4  a profile table in the inbox area the peer pushes into;
 *   5  the same with the table's checksum made valid first.
 *
 * Properties checked (abort on violation): a decoded request re-encodes to
 * the very bytes it came from; a decoded request's size lies within the
 * slot; a decoded ack's seq is the one asked for; a decoded profile table
 * fits the bytes it was read from and re-encodes to them.
 */
#include <endian.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/pmv_proto.h"

#define SLOT_MAX 256
#define REGION_LEN 4096

/* The fake MR table: key k % 4 names region k % 4 (3: none). */
static const struct pmv_region k_regions[3] = {
	{ .rma_base = 0x10000, .len = REGION_LEN, .remote_write = true,
	  .single_iov = true },
	{ .rma_base = 0, .len = 64, .remote_write = true, .single_iov = true },
	{ .rma_base = 0x7ffffffffffff000ull, .len = REGION_LEN,
	  .remote_write = true, .single_iov = true },
};

static const struct pmv_region *region_of(uint64_t key)
{
	return key % 4 < 3 ? &k_regions[key % 4] : NULL;
}

/* Touches [addr, addr + len) of region r as the agent's persist would. */
static void touch(uint8_t *mem, const struct pmv_region *r,
		  const struct pmv_extent *e)
{
	volatile uint8_t *p = mem + (e->addr - r->rma_base);

	if (!e->len)
		return;
	p[0] ^= 1;
	p[e->len - 1] ^= 1;
}

/* Serves a request that passed the validator against a fake region. */
static void serve(struct pmv_req *req, const struct pmv_region *r)
{
	uint8_t *mem = malloc(r->len);
	struct pmv_extent *inl;
	unsigned i;

	if (!mem)
		abort();
	for (i = 0; i < req->nextents; i++)
		touch(mem, r, &req->ext[i]);
	if (req->flags & PMV_REQ_INLINE) {
		inl = pmv_req_inline(req);
		touch(mem, r, inl);
		memcpy(mem + (inl->addr - r->rma_base),
		       pmv_req_inline_data(req), inl->len);
	}
	free(mem);
}

/*
 * Gives a wire request a valid checksum (its inline length first cut to
 * what the slot holds), so the fuzzer reaches the validator.
 */
static void make_checksum_valid(struct pmv_req *w, size_t avail)
{
	uint16_t n = le16toh(w->nextents);
	size_t size = sizeof(*w) + (size_t) n * sizeof(struct pmv_extent);
	uint64_t len;

	if (le32toh(w->flags) & PMV_REQ_INLINE) {
		size += sizeof(struct pmv_extent);
		if (size > avail)
			return;
		len = le64toh(w->ext[n].len) % (avail - size + 1);
		w->ext[n].len = htole64(len);
		size += len;
	}
	if (size > avail)
		return;
	w->checksum = 0;
	w->checksum = htole32(pmv_checksum(w, size));
}

/* The request path: decode, check the round trip, validate, serve. */
static void fuzz_request(const uint8_t *data, size_t size, bool fix_sum)
{
	uint64_t slot[SLOT_MAX / 8] = { 0 }, out[SLOT_MAX / 8], again[SLOT_MAX / 8];
	struct pmv_req *req = (struct pmv_req *) out;
	size_t avail = size < SLOT_MAX ? size : SLOT_MAX;
	uint64_t seq;
	int len;

	memcpy(slot, data, avail);
	avail = avail < sizeof(struct pmv_req) ? sizeof(struct pmv_req) : avail;
	seq = le64toh(slot[0]);
	if (fix_sum)
		make_checksum_valid((struct pmv_req *) slot, avail);
	len = pmv_req_decode(slot, avail, seq, req);
	if (len <= 0)
		return;
	if ((size_t) len > avail)
		abort();
	memcpy(again, req, (size_t) len);
	if (pmv_req_encode((struct pmv_req *) again, sizeof(again)) !=
	    (size_t) len || memcmp(again, slot, (size_t) len))
		abort();
	if (!pmv_req_check(req, region_of(req->key)))
		serve(req, region_of(req->key));
}

static void fuzz_ack(const uint8_t *data, size_t size)
{
	struct pmv_ack slot = { 0 }, ack;
	uint64_t seq;

	memcpy(&slot, data, size < sizeof(slot) ? size : sizeof(slot));
	seq = le64toh(slot.seq);
	if (pmv_ack_decode(&slot, seq, &ack) && ack.seq != seq)
		abort();
}

static void fuzz_cm_hdr(const uint8_t *data, size_t size)
{
	struct pmv_cm_hdr hdr;
	uint8_t wire[PMV_CM_HDR_SIZE];

	if (!pmv_cm_hdr_decode(data, size, &hdr))
		return;
	pmv_cm_hdr_encode(&hdr, wire);
	/* inbox address and key, gate id; the gated bit of the last flags */
	if (memcmp(wire + 4, data + 4, 18) || wire[22] != (data[22] & 1) ||
	    hdr.slot_size % 16)
		abort();
}

/* Gives a wire table a valid checksum over the entries its count claims. */
static void make_table_checksum_valid(struct pmv_profiles *w, size_t avail)
{
	size_t len = 16 + (size_t) w->count * sizeof(struct pmv_profile_entry);

	if (len > avail)
		return;
	w->checksum = 0;
	w->checksum = htole32(pmv_checksum(w, len));
}

/* The pushed table: decode; a whole one fits and round-trips. */
static void fuzz_profiles(const uint8_t *data, size_t size, bool fix_sum)
{
	struct pmv_profiles wire, t;
	size_t avail = size < sizeof(wire) ? size : sizeof(wire), len;

	memset(&wire, 0, sizeof(wire));
	memcpy(&wire, data, avail);
	if (fix_sum)
		make_table_checksum_valid(&wire, avail);
	if (!pmv_profiles_decode(&wire, avail, &t))
		return;
	if (t.count > pmv_profiles_fit(avail))
		abort();
	len = pmv_profiles_encode(&t, avail);
	if (!len || len > avail || memcmp(&t, &wire, len))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	switch (data[0] % 6) {
	case 0:
	case 1:
		fuzz_request(data + 1, size - 1, data[0] % 6 == 1);
		break;
	case 2:
		fuzz_ack(data + 1, size - 1);
		break;
	case 3:
		fuzz_cm_hdr(data + 1, size - 1);
		break;
	default:
		fuzz_profiles(data + 1, size - 1, data[0] % 6 == 5);
		break;
	}
	return 0;
}
