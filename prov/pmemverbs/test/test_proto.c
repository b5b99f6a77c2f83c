/*
 * Unit tests: the wire format of the CM header and of request checksums.
 */
#include <criterion/criterion.h>

#include "pmv.h"

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

Test(proto, a_torn_request_fails_its_checksum)
{
	uint64_t buf[8] = { 0 };
	struct pmv_req *req = (struct pmv_req *) buf;
	uint32_t sum;

	req->seq = 5;
	req->key = 9;
	req->nextents = 1;
	req->ext[0].addr = 4096;
	req->ext[0].len = 64;
	sum = pmv_checksum(req, sizeof(*req) + sizeof(req->ext[0]));
	req->ext[0].len = 0; /* the extent has not landed yet */
	cr_assert_neq(pmv_checksum(req, sizeof(*req) + sizeof(req->ext[0])), sum);
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
