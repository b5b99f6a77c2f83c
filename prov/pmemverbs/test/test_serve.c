/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Unit tests of the target's request serving (target/pmv_serve.c) over
 * the fake core of serve_fixture.h: what a request must be to be
 * persisted and acked, what is refused and why, fences, FI_IMMED entries,
 * and registration generations.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "serve_fixture.h"

TestSuite(serve, .init = serve_setup, .fini = serve_teardown);

Test(serve, a_valid_request_is_persisted_and_acked_with_the_profile)
{
	put_req(1, KEY, BASE + 100, 64, 0);
	cr_assert_eq(serve_and_ack(1), 0);
	cr_assert_eq(t_acks[0].profile, FI_PMEM_PROFILE_PAGE);
	cr_assert_eq(t_ep.counters.bytes_persisted, 64);
	cr_assert_eq(t_ep.counters.requests_served, 1);
}

Test(serve, refusals_carry_their_reason_and_touch_nothing)
{
	put_req(1, KEY + 1, BASE, 64, 0);
	cr_assert_eq(serve_and_ack(1), PMV_ERR_NO_KEY);
	put_req(2, KEY, BASE + LEN - 8, 16, 0);
	cr_assert_eq(serve_and_ack(2), PMV_ERR_RANGE);
	put_req(3, KEY, BASE, 64, 0x80);
	cr_assert_eq(serve_and_ack(3), PMV_ERR_BAD_REQUEST);
	t_mr.access = FI_REMOTE_READ;
	put_req(4, KEY, BASE, 64, 0);
	cr_assert_eq(serve_and_ack(4), PMV_ERR_ACCESS);
	cr_assert_eq(t_ep.counters.bytes_persisted, 0);
}

/* Writes send request seq: 8 bytes of value for addr, in the request. */
static void put_send_req(uint64_t seq, uint64_t addr, uint8_t value)
{
	struct pmv_req *slot = put_req(seq, KEY, BASE, 0, 0);

	slot->flags = PMV_REQ_INLINE;
	*pmv_req_inline(slot) = (struct pmv_extent) { .addr = addr, .len = 8 };
	memset(pmv_req_inline_data(slot), value, 8);
	cr_assert_gt(pmv_req_encode(slot, SLOT), 0);
}

/*
 * A send request's data is placed with CPU stores: into a region of
 * device memory (FI_HMEM, registered without FI_RMA_PMEM) it is refused,
 * and the region is not touched.
 */
Test(serve, a_send_into_device_memory_is_refused_and_touches_nothing)
{
	t_mr.iface = FI_HMEM_ZE;
	put_send_req(1, BASE + 64, 0xab);
	cr_assert_eq(serve_and_ack(1), PMV_ERR_METHOD,
		     "a send into device memory was not refused");
	cr_assert_eq(t_region[64], 0, "the agent stored into device memory");
	t_mr.iface = FI_HMEM_SYSTEM;
	put_send_req(2, BASE + 64, 0xab);
	cr_assert_eq(serve_and_ack(2), 0);
	cr_assert_eq(t_region[64], 0xab);
}

Test(serve, a_torn_request_waits_until_it_is_whole)
{
	struct pmv_req *slot = put_req(1, KEY, BASE, 64, 0);

	slot->ext[0].len ^= 1; /* the extent has not fully landed */
	pmv_serve_ep(&t_dom, &t_ep);
	pmv_serve_ep(&t_dom, &t_ep);
	cr_assert_eq(t_nacks, 0, "a torn request was served");
	put_req(1, KEY, BASE, 64, 0);
	cr_assert_eq(serve_and_ack(1), 0);
}

/* Serves twice and says whether any ack was sent. */
static bool serve_twice_acks(void)
{
	pmv_serve_ep(&t_dom, &t_ep);
	pmv_serve_ep(&t_dom, &t_ep);
	return t_nacks > 0;
}

Test(serve, waiting_requests_get_one_ack_and_a_failure_its_own)
{
	put_req(1, KEY, BASE, 64, 0);
	put_req(2, KEY + 1, BASE, 64, 0); /* no such key */
	put_req(3, KEY, BASE + 64, 64, 0);
	put_req(4, KEY, BASE + 128, 64, 0);
	pmv_serve_ep(&t_dom, &t_ep);
	cr_assert_eq(t_nacks, 2, "%u acks", t_nacks);
	cr_assert_eq(t_acks[0].seq, 1);
	cr_assert_eq(t_acks[0].covers, 2);
	cr_assert_eq(t_acks[0].status, PMV_ERR_NO_KEY);
	cr_assert_eq(t_acks[1].seq, 3);
	cr_assert_eq(t_acks[1].covers, 2);
	cr_assert_eq(t_acks[1].status, 0);
	cr_assert_eq(t_ep.counters.requests_served, 3);
}

Test(serve, a_corrupt_request_is_refused_after_bad_request_ms)
{
	struct pmv_req *slot = put_req(1, KEY, BASE, 64, 0);

	slot->checksum ^= 1;
	cr_assert_not(serve_twice_acks(), "refused before its time");
	pmv_clock_skew_ms += 100;
	cr_assert_eq(serve_and_ack(1), PMV_ERR_BAD_REQUEST);
	cr_assert_eq(t_ep.counters.bytes_persisted, 0);
	put_req(2, KEY, BASE, 64, 0);
	cr_assert_eq(serve_and_ack(2), 0, "the next slot was not served");
}

/*
 * A slot refused as corrupt names no key the agent can trust: a fenced
 * request behind it, within its fence_back, must fail (its initiator saw
 * that request fail, or will), never have its data placed.
 */
Test(serve, a_refused_slot_breaks_the_fence_behind_it)
{
	struct pmv_req *slot = put_req(1, KEY, BASE, 64, 0);

	slot->checksum ^= 1;
	cr_assert_not(serve_twice_acks(), "refused before its time");
	pmv_clock_skew_ms += 100;
	cr_assert_eq(serve_and_ack(1), PMV_ERR_BAD_REQUEST);
	put_req(2, KEY, BASE + 64, 64, PMV_REQ_FENCE);
	cr_assert_eq(serve_and_ack(2), PMV_ERR_FENCE, "a fenced request "
		     "behind a refused slot was served");
}

Test(serve, out_of_sequence_requests_are_refused_not_waited_for)
{
	/* the first lap's slot 1 claiming seq 0 (the empty value), then
	 * slot 2 claiming the next lap's seq */
	put_req_claiming(1, 0, KEY, BASE, 64, 0);
	cr_assert_not(serve_twice_acks());
	pmv_clock_skew_ms += 100;
	cr_assert_eq(serve_and_ack(1), PMV_ERR_BAD_REQUEST);
	put_req_claiming(2, 2 + PMV_SLOTS, KEY, BASE, 64, 0);
	pmv_serve_ep(&t_dom, &t_ep);
	pmv_clock_skew_ms += 100;
	cr_assert_eq(serve_and_ack(2), PMV_ERR_BAD_REQUEST);
	cr_assert_eq(t_ep.counters.bytes_persisted, 0);
}

Test(serve, an_ack_the_core_cannot_take_never_times_an_empty_slot)
{
	put_req(1, KEY, BASE, 64, 0);
	t_core_busy = true;
	pmv_serve_ep(&t_dom, &t_ep); /* served; its ack waits for the core */
	pmv_serve_ep(&t_dom, &t_ep);
	pmv_clock_skew_ms += 100000;
	pmv_serve_ep(&t_dom, &t_ep);
	t_core_busy = false;
	cr_assert_eq(serve_and_ack(1), 0);
	cr_assert_eq(t_nacks, 1, "slot 2, never written, was refused");
	put_req(2, KEY, BASE + 64, 64, 0);
	cr_assert_eq(serve_and_ack(2), 0);
}

Test(serve, an_empty_slot_is_never_refused)
{
	cr_assert_not(serve_twice_acks());
	pmv_clock_skew_ms += 100000;
	cr_assert_not(serve_twice_acks(), "an empty slot was refused");
	put_req(1, KEY, BASE, 64, 0);
	cr_assert_eq(serve_and_ack(1), 0);
}

Test(serve, a_failed_persist_is_acked_as_an_error_and_breaks_the_fence)
{
	pmv_params.fault_persist = 1;
	put_req(1, KEY, BASE, 64, 0);
	cr_assert_eq(serve_and_ack(1), PMV_ERR_PERSIST);
	cr_assert_eq(t_ep.counters.requests_served, 0);
	put_req(2, KEY, BASE + 64, 64, PMV_REQ_FENCE);
	cr_assert_eq(serve_and_ack(2), PMV_ERR_FENCE);
	put_req(3, KEY, BASE + 128, 64, 0);
	cr_assert_eq(serve_and_ack(3), 0);
}

/* Pops the receive CQ's queued entries; returns how many. */
static unsigned rx_entries(uint64_t *data)
{
	unsigned n = 0;

	while (t_rx->aux_count) {
		data[n++] = t_rx->aux[t_rx->aux_head].entry.data;
		t_rx->aux_head = (t_rx->aux_head + 1) % t_rx->aux_cap;
		t_rx->aux_count--;
	}
	return n;
}

Test(serve, an_fi_immed_request_raises_one_entry_after_persisting)
{
	uint64_t data[4];

	put_req(1, KEY, BASE, 64, PMV_REQ_IMMED);
	cr_assert_eq(serve_and_ack(1), 0);
	cr_assert_eq(rx_entries(data), 1);
	cr_assert_eq(data[0], 0xd00d + 1);
	cr_assert_eq(t_rx->aux_reserved, 0, "room left reserved");
}

Test(serve, without_memory_for_its_entry_an_fi_immed_request_waits)
{
	uint64_t data[4];

	pmv_params.fault_alloc = 1; /* the receive CQ's room */
	put_req(1, KEY, BASE, 64, PMV_REQ_IMMED);
	pmv_serve_ep(&t_dom, &t_ep);
	cr_assert_eq(t_nacks, 0, "served without room for its entry");
	cr_assert_eq(t_ep.counters.requests_served, 0);
	cr_assert_eq(serve_and_ack(1), 0); /* memory is back */
	cr_assert_eq(rx_entries(data), 1);
}

Test(serve, a_refused_fi_immed_request_raises_nothing_and_frees_its_room)
{
	uint64_t data[4];

	put_req(1, KEY, BASE + LEN, 64, PMV_REQ_IMMED);
	cr_assert_eq(serve_and_ack(1), PMV_ERR_RANGE);
	cr_assert_eq(rx_entries(data), 0);
	cr_assert_eq(t_rx->aux_reserved, 0);
}

/*
 * The region under the key was registered (generation 3) after the
 * request's writes were posted (the initiator knew generation 2): a
 * region closed since may hold them, so the request is refused, nothing
 * is persisted and no FI_IMMED entry is raised (issue 24, scenarios 2
 * and 3: the target used to persist whatever region the key named when
 * it served the request, and ack success).
 */
Test(serve, a_request_posted_before_its_region_was_registered_is_refused)
{
	uint64_t data[4];

	t_mr.reg_gen = 3;
	t_req_gen = 2;
	put_req(1, KEY, BASE, 64, PMV_REQ_IMMED);
	cr_assert_eq(serve_and_ack(1), PMV_ERR_REREGISTERED);
	cr_assert_eq(t_ep.counters.bytes_persisted, 0, "persisted the new "
		     "region for writes placed in another");
	cr_assert_eq(rx_entries(data), 0, "an FI_IMMED entry for a commit "
		     "whose durability is unknown");
	cr_assert_eq(t_rx->aux_reserved, 0);
	cr_assert_eq(pmv_err_to_fi(PMV_ERR_REREGISTERED), FI_EIO);
}

/* Writes posted in the region's generation or later are in it: served. */
Test(serve, a_request_posted_in_or_after_its_regions_generation_is_served)
{
	t_mr.reg_gen = 3;
	t_req_gen = 3;
	put_req(1, KEY, BASE, 64, 0);
	cr_assert_eq(serve_and_ack(1), 0);
	t_req_gen = 9;
	put_req(2, KEY, BASE, 64, 0);
	cr_assert_eq(serve_and_ack(2), 0);
}

/*
 * A peer that has heard no generation yet sends 0: its writes were posted
 * after the endpoint opened, so they count from open_gen.  Generations are
 * compared as serial numbers (they wrap).
 */
Test(serve, a_request_knowing_no_generation_counts_from_the_endpoints_opening)
{
	t_ep.tgt->open_gen = 3;
	t_mr.reg_gen = 3;
	put_req(1, KEY, BASE, 64, 0);
	cr_assert_eq(serve_and_ack(1), 0);
	t_mr.reg_gen = 4;
	put_req(2, KEY, BASE, 64, 0);
	cr_assert_eq(serve_and_ack(2), PMV_ERR_REREGISTERED);
	t_ep.tgt->open_gen = UINT32_MAX;
	t_mr.reg_gen = 1; /* registered after the count wrapped */
	t_req_gen = 0;
	put_req(3, KEY, BASE, 64, 0);
	cr_assert_eq(serve_and_ack(3), PMV_ERR_REREGISTERED);
}
