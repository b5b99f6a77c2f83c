/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Unit tests: the wire format (proto/pmv_proto.c): the CM header, requests
 * and acks through their encoder and decoder, and the request validator.
 */
#include <criterion/criterion.h>

#include "pmv_objects.h"

Test(proto, cm_header_round_trips_in_20_bytes)
{
	struct pmv_cm_hdr in = {
		.has_inbox = true, .transport = PMV_TRANSPORT_IB,
		.slot_size = 256, .inbox_addr = 0x7f00deadbeef0000ull,
		.inbox_key = 0x706d760000000001ull,
	}, out;
	uint8_t wire[PMV_CM_HDR_SIZE];

	pmv_cm_hdr_encode(&in, wire);
	cr_assert(pmv_cm_hdr_decode(wire, sizeof(wire), &out));
	cr_assert_eq(out.has_inbox, true);
	cr_assert_eq(out.transport, PMV_TRANSPORT_IB);
	cr_assert_eq(out.slot_size, 256);
	cr_assert_eq(out.inbox_addr, in.inbox_addr);
	cr_assert_eq(out.inbox_key, in.inbox_key);
}

Test(proto, other_cm_data_is_not_a_header)
{
	struct pmv_cm_hdr out;
	uint8_t wire[PMV_CM_HDR_SIZE] = "hello, application";

	cr_assert_not(pmv_cm_hdr_decode(wire, sizeof(wire), &out));
	cr_assert_not(pmv_cm_hdr_decode((const uint8_t *) "PV", 2, &out));
}

/* The slots' checksum is CRC32C (Castagnoli), not zlib's CRC-32. */
Test(proto, slots_are_checked_with_crc32c)
{
	cr_assert_eq(pmv_checksum("123456789", 9), 0xe3069283u);
	cr_assert_eq(pmv_checksum("", 0), 0);
}

/* A peer of protocol version 2 (CRC-32 slots) is not taken for ours. */
Test(proto, an_older_version_cm_header_is_refused)
{
	struct pmv_cm_hdr in = { .has_inbox = true, .slot_size = 64 }, out;
	uint8_t wire[PMV_CM_HDR_SIZE];

	pmv_cm_hdr_encode(&in, wire);
	cr_assert_eq(wire[2], 5);
	wire[2] = 4; /* a version-4 peer: a 20-byte header, no gate */
	cr_assert_not(pmv_cm_hdr_decode(wire, sizeof(wire), &out));
}

/*
 * The header of a peer of another version is taken off the application's
 * CM data, and the peer stays unknown: commits to it fail.
 */
Test(proto, an_old_peers_header_is_stripped_and_the_peer_is_unknown)
{
	struct pmv_cm_hdr in = { .has_inbox = true, .slot_size = 64 };
	struct pmv_peer peer = { .known = true };
	uint8_t wire[PMV_CM_HDR_SIZE];

	pmv_cm_hdr_encode(&in, wire);
	wire[2] = 2;
	cr_assert(pmv_cm_hdr_parse(wire, sizeof(wire), &peer));
	cr_assert_not(peer.known);
	cr_assert_not(peer.has_inbox);
	wire[0] = 'Q';
	cr_assert_not(pmv_cm_hdr_parse(wire, sizeof(wire), &peer));
}

/* A host-order request of seq 5 to key 9 with one extent. */
static struct pmv_req *one_extent_req(uint64_t *buf)
{
	struct pmv_req *req = (struct pmv_req *) buf;

	req->seq = 5;
	req->key = 9;
	req->data = 0x1234;
	req->flags = PMV_REQ_IMMED;
	req->nextents = 1;
	req->ext[0].addr = 4096;
	req->ext[0].len = 64;
	return req;
}

Test(proto, a_request_round_trips_through_the_wire)
{
	uint64_t buf[16] = { 0 }, out[16];
	struct pmv_req *req = one_extent_req(buf), *got = (struct pmv_req *) out;
	size_t size = pmv_req_encode(req, sizeof(buf));

	cr_assert_eq(size, 40 + 16);
	cr_assert_eq(pmv_req_decode(buf, sizeof(buf), 5, got), (int) size);
	cr_assert_eq(got->seq, 5);
	cr_assert_eq(got->key, 9);
	cr_assert_eq(got->data, 0x1234);
	cr_assert_eq(got->flags, PMV_REQ_IMMED);
	cr_assert_eq(got->nextents, 1);
	cr_assert_eq(got->ext[0].addr, 4096);
	cr_assert_eq(got->ext[0].len, 64);
	/* the next request's seq is not this one */
	cr_assert_eq(pmv_req_decode(buf, sizeof(buf), 6, got), 0);
}

Test(proto, a_torn_request_fails_its_checksum)
{
	uint64_t buf[16] = { 0 }, out[16];
	struct pmv_req *req = one_extent_req(buf);

	pmv_req_encode(req, sizeof(buf));
	req->ext[0].len = 0; /* the extent has not landed yet */
	cr_assert_eq(pmv_req_decode(buf, sizeof(buf), 5,
				    (struct pmv_req *) out), 0);
}

Test(proto, an_ack_round_trips_and_a_torn_one_is_not_read)
{
	struct pmv_ack a = { .seq = 77, .status = -22, .profile = 3,
			     .target_flags = PMV_ACK_DDIO_OFF, .mr_gen = 9 }, b;

	pmv_ack_encode(&a);
	cr_assert(pmv_ack_decode(&a, 77, &b));
	cr_assert_eq(b.seq, 77);
	cr_assert_eq(b.status, -22);
	cr_assert_eq(b.profile, 3);
	cr_assert_eq(b.target_flags, PMV_ACK_DDIO_OFF);
	cr_assert_eq(b.mr_gen, 9);
	cr_assert_not(pmv_ack_decode(&a, 78, &b));
	a.mr_gen ^= 1;
	cr_assert_not(pmv_ack_decode(&a, 77, &b));
}

Test(proto, the_validator_refuses_before_memory_is_touched)
{
	uint64_t buf[16] = { 0 };
	struct pmv_req *req = one_extent_req(buf);
	struct pmv_region r = { .rma_base = 4096, .len = 64,
				.remote_write = true, .single_iov = true };

	cr_assert_eq(pmv_req_check(req, &r), 0);
	cr_assert_eq(pmv_req_check(req, NULL), PMV_ERR_NO_KEY);
	r.len = 63;
	cr_assert_eq(pmv_req_check(req, &r), PMV_ERR_RANGE);
	r.len = 64;
	r.rma_base = 4097;
	cr_assert_eq(pmv_req_check(req, &r), PMV_ERR_RANGE);
	r.rma_base = 4096;
	req->ext[0].addr = UINT64_MAX - 8; /* would wrap */
	cr_assert_eq(pmv_req_check(req, &r), PMV_ERR_RANGE);
	req->ext[0].addr = 4096;
	r.remote_write = false;
	cr_assert_eq(pmv_req_check(req, &r), PMV_ERR_ACCESS);
	r.remote_write = true;
	r.single_iov = false;
	cr_assert_eq(pmv_req_check(req, &r), PMV_ERR_MULTI_IOV);
	r.single_iov = true;
	req->flags |= 0x80; /* a flag this version does not know */
	cr_assert_eq(pmv_req_check(req, &r), PMV_ERR_BAD_REQUEST);
	req->flags = PMV_REQ_FENCE;
	req->fence_back = PMV_SLOTS + 1;
	cr_assert_eq(pmv_req_check(req, &r), PMV_ERR_BAD_REQUEST);
	req->flags = 0;
	req->fence_back = 1; /* a fence count without the fence flag */
	cr_assert_eq(pmv_req_check(req, &r), PMV_ERR_BAD_REQUEST);
}

Test(proto, a_send_requests_data_range_is_validated_too)
{
	uint64_t buf[16] = { 0 };
	struct pmv_req *req = one_extent_req(buf);
	struct pmv_region r = { .rma_base = 4096, .len = 128,
				.remote_write = true, .single_iov = true };

	req->flags = PMV_REQ_INLINE;
	pmv_req_inline(req)->addr = 4096 + 120;
	pmv_req_inline(req)->len = 8;
	cr_assert_eq(pmv_req_check(req, &r), 0);
	pmv_req_inline(req)->len = 9;
	cr_assert_eq(pmv_req_check(req, &r), PMV_ERR_RANGE);
}

Test(proto, a_send_request_holds_its_data_after_the_extents)
{
	uint64_t buf[128 / sizeof(uint64_t)] = { 0 };
	struct pmv_req *req = (struct pmv_req *) buf;

	req->nextents = 2;
	cr_assert_eq(pmv_req_size(req, sizeof(buf)), 40 + 2 * 16);
	req->flags = PMV_REQ_INLINE;
	pmv_req_inline(req)->len = 8;
	cr_assert_eq((uint8_t *) pmv_req_inline(req) - (uint8_t *) req, 72);
	cr_assert_eq(pmv_req_inline_data(req) - (uint8_t *) req, 88);
	cr_assert_eq(pmv_req_size(req, sizeof(buf)), 96);
	/* data past the slot, or a length that would wrap: not a request */
	pmv_req_inline(req)->len = 128 - 88 + 1;
	cr_assert_eq(pmv_req_size(req, sizeof(buf)), 0);
	pmv_req_inline(req)->len = UINT64_MAX - 10;
	cr_assert_eq(pmv_req_size(req, sizeof(buf)), 0);
	req->nextents = 6; /* its inline extent would lie past the slot */
	cr_assert_eq(pmv_req_size(req, sizeof(buf)), 0);
}

/* A table of n entries for key base + i, generation gen, on the wire. */
static size_t wire_table(struct pmv_profiles *t, unsigned n, uint32_t gen,
			 size_t cap)
{
	memset(t, 0, sizeof(*t));
	t->mr_gen = gen;
	t->count = (uint8_t) n;
	for (unsigned i = 0; i < n; i++)
		t->e[i] = (struct pmv_profile_entry) {
			.key = 0x1000 + i, .profile = FI_PMEM_PROFILE_MHP,
			.target_flags = PMV_ACK_DDIO_OFF,
		};
	return pmv_profiles_encode(t, cap);
}

Test(proto, a_profile_table_round_trips_in_a_64_byte_slot)
{
	struct pmv_profiles t, out;

	cr_assert_eq(pmv_profiles_fit(64), 3, "the tcp core's 64-byte slot");
	cr_assert_eq(pmv_profiles_fit(256), PMV_PROFILES_MAX);
	cr_assert_eq(wire_table(&t, 3, 7, 64), 64);
	cr_assert(pmv_profiles_decode(&t, 64, &out));
	cr_assert_eq(out.mr_gen, 7);
	cr_assert_eq(out.count, 3);
	cr_assert_eq(out.e[2].key, 0x1002);
	cr_assert_eq(out.e[2].profile, FI_PMEM_PROFILE_MHP);
	cr_assert_eq(out.e[2].target_flags, PMV_ACK_DDIO_OFF);
	cr_assert_eq(wire_table(&t, 4, 7, 64), 0, "4 entries do not fit 64 B");
}

/* A table being overwritten by a newer push, one never written, or one
 * that claims more entries than the area holds, is not read. */
Test(proto, a_torn_empty_or_oversized_profile_table_is_not_read)
{
	struct pmv_profiles t, out;
	uint8_t zero[64] = { 0 };

	cr_assert_eq(wire_table(&t, 2, 9, 64), 48);
	t.e[1].key ^= htole64(1); /* half of a newer table landed */
	cr_assert_not(pmv_profiles_decode(&t, 64, &out));
	cr_assert_not(pmv_profiles_decode(zero, sizeof(zero), &out),
		      "an area nobody wrote holds no table");
	cr_assert_eq(wire_table(&t, 3, 9, 64), 64);
	cr_assert_not(pmv_profiles_decode(&t, 48, &out),
		      "3 entries read from a 48-byte area");
	cr_assert_not(pmv_profiles_decode(&t, 8, &out));
}

/* The exported FI_PMEM_ERR_* are the provider's codes, and each code is
 * at most one of "commit again" and "reconnect" (fi_ext_pmem(3)). */
Test(proto, exported_error_codes_are_the_providers)
{
	static const struct { int exported, internal; } codes[] = {
		{ FI_PMEM_ERR_NO_KEY, PMV_ERR_NO_KEY },
		{ FI_PMEM_ERR_RANGE, PMV_ERR_RANGE },
		{ FI_PMEM_ERR_ACCESS, PMV_ERR_ACCESS },
		{ FI_PMEM_ERR_MULTI_IOV, PMV_ERR_MULTI_IOV },
		{ FI_PMEM_ERR_PEER_GONE, PMV_ERR_PEER_GONE },
		{ FI_PMEM_ERR_FENCE, PMV_ERR_FENCE },
		{ FI_PMEM_ERR_METHOD, PMV_ERR_METHOD },
		{ FI_PMEM_ERR_REREGISTERED, PMV_ERR_REREGISTERED },
		{ FI_PMEM_ERR_CLOSED, PMV_ERR_CLOSED },
		{ FI_PMEM_ERR_PEER_TIMEOUT, PMV_ERR_PEER_TIMEOUT },
		{ FI_PMEM_ERR_PERSIST, PMV_ERR_PERSIST },
		{ FI_PMEM_ERR_BAD_REQUEST, PMV_ERR_BAD_REQUEST },
		{ FI_PMEM_ERR_SCOPE_LOST, PMV_ERR_SCOPE_LOST },
	};
	size_t n = sizeof(codes) / sizeof(codes[0]);

	cr_assert_eq(n, (size_t) (PMV_ERR_LAST - PMV_ERR_BASE - 1),
		     "a PMV_ERR_* code is not exported");
	for (size_t i = 0; i < n; i++) {
		cr_assert_eq(codes[i].exported, codes[i].internal, "code %zu", i);
		cr_assert(!(fi_pmem_err_commit_again(codes[i].exported) &&
			    fi_pmem_err_reconnect(codes[i].exported)));
		cr_assert_not_null(pmv_strerror(codes[i].internal));
	}
	cr_assert(fi_pmem_err_reconnect(FI_PMEM_ERR_PEER_TIMEOUT));
	cr_assert(fi_pmem_err_commit_again(FI_PMEM_ERR_REREGISTERED));
	cr_assert(!fi_pmem_err_commit_again(0) && !fi_pmem_err_reconnect(0));
}
