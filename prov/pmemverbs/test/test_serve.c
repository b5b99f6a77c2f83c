/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Unit tests of the target's request serving (target/pmv_serve.c) against
 * a fake core endpoint: requests are written into the inbox as a peer
 * would, acks are caught at the core's fi_inject_write.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "pmv.h"
#include "target/pmv_target.h"

#define SLOT 128
#define KEY 0x55
#define BASE 0x10000
#define LEN 65536

/* The acks the fake core was asked to send, in order. */
static struct pmv_ack g_acks[16];
static unsigned g_nacks;
static bool g_core_busy; /* the fake core refuses acks with -FI_EAGAIN */
static uint32_t g_req_gen; /* the generation the next requests carry */

static ssize_t fake_inject_write(struct fid_ep *ep, const void *buf,
				 size_t len, fi_addr_t dest, uint64_t addr,
				 uint64_t key)
{
	(void) ep; (void) dest; (void) addr; (void) key;
	if (g_core_busy)
		return -FI_EAGAIN;
	cr_assert_eq(len, sizeof(struct pmv_ack));
	cr_assert_lt(g_nacks, 16);
	cr_assert(pmv_ack_decode(buf, ((const struct pmv_ack *) buf)->seq,
				 &g_acks[g_nacks]), "ack with a bad checksum");
	g_nacks++;
	return 0;
}

static struct fi_ops_rma g_rma = { .size = sizeof(struct fi_ops_rma),
				   .inject = fake_inject_write };
static struct fid_ep g_core = { .rma = &g_rma };

static struct pmv_domain g_dom;
static struct pmv_mr g_mr;
static struct pmv_ep g_ep;
static struct pmv_cq *g_rx;
static uint8_t *g_region;

/* A region of LEN bytes of a PAGE-profile temporary file, key KEY. */
static void open_region(void)
{
	char path[] = "/tmp/pmv_serve_XXXXXX";
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	unlink(path);
	cr_assert_eq(ftruncate(fd, LEN), 0);
	g_region = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	cr_assert_neq(g_region, MAP_FAILED);
	unsetenv("PMEM2_FORCE_GRANULARITY");
	cr_assert_eq(pmv_persistence_detect(g_region, LEN, &g_mr.persistence), 0);
	g_mr.mr_fid.key = KEY;
	g_mr.access = FI_REMOTE_WRITE;
	g_mr.iov_count = 1;
	g_mr.base = g_region;
	g_mr.len = LEN;
	g_mr.rma_base = BASE;
	g_dom.mrs = &g_mr;
}

static void setup(void)
{
	memset(&g_dom, 0, sizeof(g_dom));
	memset(&g_mr, 0, sizeof(g_mr));
	memset(&g_ep, 0, sizeof(g_ep));
	g_nacks = 0;
	g_core_busy = false;
	g_req_gen = 0;
	pthread_mutex_init(&g_dom.lock, NULL);
	open_region();
	g_rx = calloc(1, sizeof(*g_rx));
	pthread_mutex_init(&g_rx->aux_lock, NULL);
	pmv_hooks_init(&g_rx->hooks);
	g_ep.core = &g_core;
	g_ep.domain = &g_dom;
	g_ep.rx_cq = g_rx;
	g_ep.agent_seq = 1;
	g_ep.inbox.slot_size = SLOT;
	g_ep.inbox.mem = calloc(1, 64 * sizeof(struct pmv_ack) + 64 * SLOT);
	g_ep.peer = (struct pmv_peer) { .known = true, .has_inbox = true,
					.slots = PMV_SLOTS, .slot_size = SLOT };
	pmv_params.fault_persist = 0;
	pmv_params.fault_alloc = 0;
	pmv_params.bad_request_ms = 100;
	pmv_fault_reset();
}

static void teardown(void)
{
	pmv_persistence_release(&g_mr.persistence);
	munmap(g_region, LEN);
	free(g_ep.inbox.mem);
	free(g_rx->aux);
	free(g_rx);
}

TestSuite(serve, .init = setup, .fini = teardown);

/*
 * Writes a request claiming seq (one extent, or none if len is 0) into
 * the slot of slot_seq, checksum right; a fenced one looks one back.
 */
static struct pmv_req *put_req_claiming(uint64_t slot_seq, uint64_t seq,
					uint64_t key, uint64_t addr,
					uint64_t len, uint32_t flags)
{
	struct pmv_req *slot = pmv_inbox_req(&g_ep.inbox, slot_seq);

	memset(slot, 0, SLOT);
	*slot = (struct pmv_req) { .seq = seq, .key = key, .flags = flags,
				   .data = 0xd00d + seq, .nextents = len ? 1 : 0,
				   .gen = g_req_gen,
				   .fence_back = (flags & PMV_REQ_FENCE) ? 1 : 0 };
	slot->ext[0] = (struct pmv_extent) { .addr = addr, .len = len };
	cr_assert_gt(pmv_req_encode(slot, SLOT), 0);
	return slot;
}

/* Writes request seq into its own slot (see put_req_claiming). */
static struct pmv_req *put_req(uint64_t seq, uint64_t key, uint64_t addr,
			       uint64_t len, uint32_t flags)
{
	return put_req_claiming(seq, seq, key, addr, len, flags);
}

/* Serves what waits and returns the status of ack seq (it must exist). */
static int serve_and_ack(uint64_t seq)
{
	pmv_serve_ep(&g_dom, &g_ep);
	pmv_serve_ep(&g_dom, &g_ep); /* sends the last ack */
	for (unsigned i = 0; i < g_nacks; i++)
		if (g_acks[i].seq == seq)
			return g_acks[i].status;
	cr_assert_fail("no ack for request %llu", (unsigned long long) seq);
	return -1;
}

Test(serve, a_valid_request_is_persisted_and_acked_with_the_profile)
{
	put_req(1, KEY, BASE + 100, 64, 0);
	cr_assert_eq(serve_and_ack(1), 0);
	cr_assert_eq(g_acks[0].profile, FI_PMEM_PROFILE_PAGE);
	cr_assert_eq(g_ep.counters.bytes_persisted, 64);
	cr_assert_eq(g_ep.counters.requests_served, 1);
}

Test(serve, refusals_carry_their_reason_and_touch_nothing)
{
	put_req(1, KEY + 1, BASE, 64, 0);
	cr_assert_eq(serve_and_ack(1), PMV_ERR_NO_KEY);
	put_req(2, KEY, BASE + LEN - 8, 16, 0);
	cr_assert_eq(serve_and_ack(2), PMV_ERR_RANGE);
	put_req(3, KEY, BASE, 64, 0x80);
	cr_assert_eq(serve_and_ack(3), PMV_ERR_BAD_REQUEST);
	g_mr.access = FI_REMOTE_READ;
	put_req(4, KEY, BASE, 64, 0);
	cr_assert_eq(serve_and_ack(4), PMV_ERR_ACCESS);
	cr_assert_eq(g_ep.counters.bytes_persisted, 0);
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
	g_mr.iface = FI_HMEM_ZE;
	put_send_req(1, BASE + 64, 0xab);
	cr_assert_eq(serve_and_ack(1), PMV_ERR_METHOD,
		     "a send into device memory was not refused");
	cr_assert_eq(g_region[64], 0, "the agent stored into device memory");
	g_mr.iface = FI_HMEM_SYSTEM;
	put_send_req(2, BASE + 64, 0xab);
	cr_assert_eq(serve_and_ack(2), 0);
	cr_assert_eq(g_region[64], 0xab);
}

Test(serve, a_torn_request_waits_until_it_is_whole)
{
	struct pmv_req *slot = put_req(1, KEY, BASE, 64, 0);

	slot->ext[0].len ^= 1; /* the extent has not fully landed */
	pmv_serve_ep(&g_dom, &g_ep);
	pmv_serve_ep(&g_dom, &g_ep);
	cr_assert_eq(g_nacks, 0, "a torn request was served");
	put_req(1, KEY, BASE, 64, 0);
	cr_assert_eq(serve_and_ack(1), 0);
}

/* Serves twice and says whether any ack was sent. */
static bool serve_twice_acks(void)
{
	pmv_serve_ep(&g_dom, &g_ep);
	pmv_serve_ep(&g_dom, &g_ep);
	return g_nacks > 0;
}

Test(serve, waiting_requests_get_one_ack_and_a_failure_its_own)
{
	put_req(1, KEY, BASE, 64, 0);
	put_req(2, KEY + 1, BASE, 64, 0); /* no such key */
	put_req(3, KEY, BASE + 64, 64, 0);
	put_req(4, KEY, BASE + 128, 64, 0);
	pmv_serve_ep(&g_dom, &g_ep);
	cr_assert_eq(g_nacks, 2, "%u acks", g_nacks);
	cr_assert_eq(g_acks[0].seq, 1);
	cr_assert_eq(g_acks[0].covers, 2);
	cr_assert_eq(g_acks[0].status, PMV_ERR_NO_KEY);
	cr_assert_eq(g_acks[1].seq, 3);
	cr_assert_eq(g_acks[1].covers, 2);
	cr_assert_eq(g_acks[1].status, 0);
	cr_assert_eq(g_ep.counters.requests_served, 3);
}

Test(serve, a_corrupt_request_is_refused_after_bad_request_ms)
{
	struct pmv_req *slot = put_req(1, KEY, BASE, 64, 0);

	slot->checksum ^= 1;
	cr_assert_not(serve_twice_acks(), "refused before its time");
	pmv_clock_skew_ms += 100;
	cr_assert_eq(serve_and_ack(1), PMV_ERR_BAD_REQUEST);
	cr_assert_eq(g_ep.counters.bytes_persisted, 0);
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
	pmv_serve_ep(&g_dom, &g_ep);
	pmv_clock_skew_ms += 100;
	cr_assert_eq(serve_and_ack(2), PMV_ERR_BAD_REQUEST);
	cr_assert_eq(g_ep.counters.bytes_persisted, 0);
}

Test(serve, an_ack_the_core_cannot_take_never_times_an_empty_slot)
{
	put_req(1, KEY, BASE, 64, 0);
	g_core_busy = true;
	pmv_serve_ep(&g_dom, &g_ep); /* served; its ack waits for the core */
	pmv_serve_ep(&g_dom, &g_ep);
	pmv_clock_skew_ms += 100000;
	pmv_serve_ep(&g_dom, &g_ep);
	g_core_busy = false;
	cr_assert_eq(serve_and_ack(1), 0);
	cr_assert_eq(g_nacks, 1, "slot 2, never written, was refused");
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
	cr_assert_eq(g_ep.counters.requests_served, 0);
	put_req(2, KEY, BASE + 64, 64, PMV_REQ_FENCE);
	cr_assert_eq(serve_and_ack(2), PMV_ERR_FENCE);
	put_req(3, KEY, BASE + 128, 64, 0);
	cr_assert_eq(serve_and_ack(3), 0);
}

/* Pops the receive CQ's queued entries; returns how many. */
static unsigned rx_entries(uint64_t *data)
{
	unsigned n = 0;

	while (g_rx->aux_count) {
		data[n++] = g_rx->aux[g_rx->aux_head].entry.data;
		g_rx->aux_head = (g_rx->aux_head + 1) % g_rx->aux_cap;
		g_rx->aux_count--;
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
	cr_assert_eq(g_rx->aux_reserved, 0, "room left reserved");
}

Test(serve, without_memory_for_its_entry_an_fi_immed_request_waits)
{
	uint64_t data[4];

	pmv_params.fault_alloc = 1; /* the receive CQ's room */
	put_req(1, KEY, BASE, 64, PMV_REQ_IMMED);
	pmv_serve_ep(&g_dom, &g_ep);
	cr_assert_eq(g_nacks, 0, "served without room for its entry");
	cr_assert_eq(g_ep.counters.requests_served, 0);
	cr_assert_eq(serve_and_ack(1), 0); /* memory is back */
	cr_assert_eq(rx_entries(data), 1);
}

Test(serve, a_refused_fi_immed_request_raises_nothing_and_frees_its_room)
{
	uint64_t data[4];

	put_req(1, KEY, BASE + LEN, 64, PMV_REQ_IMMED);
	cr_assert_eq(serve_and_ack(1), PMV_ERR_RANGE);
	cr_assert_eq(rx_entries(data), 0);
	cr_assert_eq(g_rx->aux_reserved, 0);
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

	g_mr.reg_gen = 3;
	g_req_gen = 2;
	put_req(1, KEY, BASE, 64, PMV_REQ_IMMED);
	cr_assert_eq(serve_and_ack(1), PMV_ERR_REREGISTERED);
	cr_assert_eq(g_ep.counters.bytes_persisted, 0, "persisted the new "
		     "region for writes placed in another");
	cr_assert_eq(rx_entries(data), 0, "an FI_IMMED entry for a commit "
		     "whose durability is unknown");
	cr_assert_eq(g_rx->aux_reserved, 0);
	cr_assert_eq(pmv_err_to_fi(PMV_ERR_REREGISTERED), FI_EIO);
}

/* Writes posted in the region's generation or later are in it: served. */
Test(serve, a_request_posted_in_or_after_its_regions_generation_is_served)
{
	g_mr.reg_gen = 3;
	g_req_gen = 3;
	put_req(1, KEY, BASE, 64, 0);
	cr_assert_eq(serve_and_ack(1), 0);
	g_req_gen = 9;
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
	g_ep.open_gen = 3;
	g_mr.reg_gen = 3;
	put_req(1, KEY, BASE, 64, 0);
	cr_assert_eq(serve_and_ack(1), 0);
	g_mr.reg_gen = 4;
	put_req(2, KEY, BASE, 64, 0);
	cr_assert_eq(serve_and_ack(2), PMV_ERR_REREGISTERED);
	g_ep.open_gen = UINT32_MAX;
	g_mr.reg_gen = 1; /* registered after the count wrapped */
	g_req_gen = 0;
	put_req(3, KEY, BASE, 64, 0);
	cr_assert_eq(serve_and_ack(3), PMV_ERR_REREGISTERED);
}

/* ------------------------------------------------------------------ *
 * Serving from the application's counter and EQ reads (pmv_hooks.c):
 * a target that polls only a counter or its EQ must ack commits with no
 * agent thread, and one about to sleep in their wait hands them back.
 */

static int fake_close(struct fid *fid)
{
	(void) fid;
	return 0;
}

static struct fi_ops g_fake_fi_ops = { .size = sizeof(struct fi_ops),
				       .close = fake_close };

static uint64_t fake_cntr_read(struct fid_cntr *cntr)
{
	(void) cntr;
	return 7;
}

static int g_waits; /* the fake core's fi_cntr_wait and fi_eq_sread calls */

static int fake_cntr_wait(struct fid_cntr *cntr, uint64_t threshold,
			  int timeout)
{
	(void) cntr; (void) threshold; (void) timeout;
	g_waits++;
	return -FI_ETIMEDOUT;
}

static struct fi_ops_cntr g_fake_cntr_ops = {
	.size = sizeof(struct fi_ops_cntr), .read = fake_cntr_read,
	.readerr = fake_cntr_read, .wait = fake_cntr_wait };
static struct fid_cntr g_core_cntr = { .fid.ops = &g_fake_fi_ops,
				       .ops = &g_fake_cntr_ops };

static int fake_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr,
			  struct fid_cntr **cntr, void *context)
{
	(void) domain; (void) attr; (void) context;
	*cntr = &g_core_cntr;
	return 0;
}

static ssize_t fake_eq_read(struct fid_eq *eq, uint32_t *event, void *buf,
			    size_t len, uint64_t flags)
{
	(void) eq; (void) event; (void) buf; (void) len; (void) flags;
	return -FI_EAGAIN;
}

static ssize_t fake_eq_sread(struct fid_eq *eq, uint32_t *event, void *buf,
			     size_t len, int timeout, uint64_t flags)
{
	(void) eq; (void) event; (void) buf; (void) len; (void) timeout;
	(void) flags;
	g_waits++;
	return -FI_EAGAIN;
}

static struct fi_ops_eq g_fake_eq_ops = { .size = sizeof(struct fi_ops_eq),
					  .read = fake_eq_read,
					  .sread = fake_eq_sread };
static struct fid_eq g_core_eq = { .fid.ops = &g_fake_fi_ops,
				   .ops = &g_fake_eq_ops };

static int fake_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr,
			struct fid_eq **eq, void *context)
{
	(void) fabric; (void) attr; (void) context;
	*eq = &g_core_eq;
	return 0;
}

static struct fi_ops_domain g_fake_dom_ops = {
	.size = sizeof(struct fi_ops_domain), .cntr_open = fake_cntr_open };
static struct fid_domain g_core_dom = { .ops = &g_fake_dom_ops };
static struct fi_ops_fabric g_fake_fab_ops = {
	.size = sizeof(struct fi_ops_fabric), .eq_open = fake_eq_open };
static struct fid_fabric g_core_fab = { .ops = &g_fake_fab_ops };
static struct pmv_fabric g_fab = { .core = &g_core_fab };

static struct fid_cntr *g_cntr;
static struct fid_eq *g_eq;
static int g_wake_fd;

/* After the suite's setup: the endpoint's counter and EQ, attached as
 * when it connects. */
static void setup_bound(void)
{
	struct fi_cntr_attr cntr_attr = { .wait_obj = FI_WAIT_UNSPEC };
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_UNSPEC };

	g_waits = 0;
	g_dom.core = &g_core_dom;
	g_wake_fd = eventfd(0, EFD_NONBLOCK);
	cr_assert_geq(g_wake_fd, 0);
	g_dom.agent_wake_fd = g_wake_fd;
	cr_assert_eq(pmv_cntr_open(&g_dom.domain_fid, &cntr_attr, &g_cntr,
				   NULL), 0);
	cr_assert_eq(pmv_eq_open(&g_fab.fabric_fid, &eq_attr, &g_eq, NULL), 0);
	g_ep.cntr[1] = pmv_container_of(g_cntr, struct pmv_cntr, cntr_fid);
	g_ep.eq = pmv_container_of(g_eq, struct pmv_eq, eq_fid);
	pmv_serve_attach(&g_ep);
}

static void teardown_bound(void)
{
	pmv_serve_detach(&g_ep);
	cr_assert_eq(fi_close(&g_cntr->fid), 0);
	cr_assert_eq(fi_close(&g_eq->fid), 0);
	close(g_wake_fd);
}

/* The status of the ack of seq, or -1 if none was sent. */
static int ack_status(uint64_t seq)
{
	for (unsigned i = 0; i < g_nacks; i++)
		if (g_acks[i].seq == seq)
			return g_acks[i].status;
	return -1;
}

/* Wake-ups of the agent written to its eventfd since the last call. */
static uint64_t agent_wakes(void)
{
	uint64_t n = 0;

	return read(g_wake_fd, &n, sizeof(n)) == sizeof(n) ? n : 0;
}

Test(serve, polling_a_counter_serves_and_acks_a_request,
     .init = setup_bound, .fini = teardown_bound)
{
	put_req(1, KEY, BASE + 64, 64, 0);
	cr_assert_eq(fi_cntr_read(g_cntr), 7);
	cr_assert_eq(ack_status(1), 0, "fi_cntr_read did not serve the request");
	cr_assert_neq(g_ep.hook_ms, 0,
		      "the agent would not leave a served endpoint alone");
	put_req(2, KEY, BASE, 64, 0);
	cr_assert_eq(fi_cntr_readerr(g_cntr), 7);
	cr_assert_eq(ack_status(2), 0, "fi_cntr_readerr did not serve");
}

Test(serve, polling_an_eq_serves_and_acks_a_request,
     .init = setup_bound, .fini = teardown_bound)
{
	uint32_t event;
	char buf[64];

	put_req(1, KEY, BASE + 64, 64, 0);
	cr_assert_eq(fi_eq_read(g_eq, &event, buf, sizeof(buf), 0),
		     -FI_EAGAIN);
	cr_assert_eq(ack_status(1), 0, "fi_eq_read did not serve the request");
}

/*
 * A wait in the core ends on its threshold or an event, not on a
 * request's bytes: what is there is served, and the agent (napping while
 * the application served) is woken to serve what comes during the wait.
 */
Test(serve, a_counter_or_eq_wait_serves_then_hands_the_endpoint_to_the_agent,
     .init = setup_bound, .fini = teardown_bound)
{
	uint32_t event;
	char buf[64];

	(void) fi_cntr_read(g_cntr);
	(void) agent_wakes();
	put_req(1, KEY, BASE + 64, 64, 0);
	cr_assert_eq(fi_cntr_wait(g_cntr, 8, 10), -FI_ETIMEDOUT);
	cr_assert_eq(g_waits, 1);
	cr_assert_eq(ack_status(1), 0, "fi_cntr_wait did not serve first");
	cr_assert_eq(g_ep.hook_ms, 0,
		     "the agent would leave the endpoint to a sleeping thread");
	cr_assert_eq(agent_wakes(), 1, "the napping agent was not woken");
	(void) fi_eq_read(g_eq, &event, buf, sizeof(buf), 0);
	put_req(2, KEY, BASE, 64, 0);
	cr_assert_eq(fi_eq_sread(g_eq, &event, buf, sizeof(buf), 10, 0),
		     -FI_EAGAIN);
	cr_assert_eq(ack_status(2), 0, "fi_eq_sread did not serve first");
	cr_assert_eq(g_ep.hook_ms, 0);
	cr_assert_eq(agent_wakes(), 1);
}

/* Each object runs an endpoint's hook once, however it is bound. */
Test(serve, an_object_bound_twice_serves_through_one_hook,
     .init = setup_bound, .fini = teardown_bound)
{
	struct pmv_cntr *cntr = g_ep.cntr[1];
	int hooks = 0;

	g_ep.cntr[0] = cntr; /* FI_SEND | FI_RECV */
	g_ep.tx_cq = g_rx;   /* FI_TRANSMIT | FI_RECV */
	pmv_serve_attach(&g_ep);
	for (struct pmv_hook *h = cntr->hooks.head; h; h = h->next)
		hooks++;
	cr_assert_eq(hooks, 1);
	hooks = 0;
	for (struct pmv_hook *h = g_rx->hooks.head; h; h = h->next)
		hooks++;
	cr_assert_eq(hooks, 1);
	pmv_serve_detach(&g_ep);
	cr_assert_null(cntr->hooks.head);
	cr_assert_null(g_rx->hooks.head);
	cr_assert_null(g_ep.eq->hooks.head);
}

/* ------------------------------------------------------------------ *
 * A counter wait over tcp that sleeps on its only endpoint's CQ fd
 * serves that endpoint itself, as fi_cq_sread does: the agent is never
 * handed the endpoint in the middle of it (it served a quarter of the
 * requests and spun on the waiting thread's core: p99 17-19 read round
 * trips back to back).
 */

static int g_trywaits;        /* the fake fabric's fi_trywait calls */
static int g_handed;          /* of them, found the endpoint the agent's */

/* fi_trywait of the fake tcp fabric: a request's bytes come during the
 * wait (placed by this "progress"); notes whether the agent would take the
 * endpoint (its hook_ms cleared) while the wait serves it. */
static int fake_trywait(struct fid_fabric *fabric, struct fid **fids,
			int count)
{
	(void) fabric; (void) fids; (void) count;
	if (g_trywaits++ == 1)
		put_req(2, KEY, BASE, 64, 0);
	/* handed: the wait cleared the mark of the application's serving
	 * (not its age: a loaded machine may stall this thread 2 ms) */
	if (g_trywaits > 1 && !__atomic_load_n(&g_ep.hook_ms, __ATOMIC_RELAXED))
		g_handed++;
	return FI_SUCCESS;
}

static struct fid_cq g_core_rx = { .fid.ops = &g_fake_fi_ops };

Test(serve, a_counter_wait_on_its_endpoints_cq_keeps_serving_it,
     .init = setup_bound, .fini = teardown_bound)
{
	int fd = eventfd(1, EFD_NONBLOCK); /* readable: bytes keep coming */

	cr_assert_geq(fd, 0);
	g_fake_fab_ops.trywait = fake_trywait;
	g_dom.fabric = &g_fab;
	g_dom.transport = PMV_TRANSPORT_TCP;
	g_rx->core = &g_core_rx;
	g_rx->wait_fd = fd;
	(void) agent_wakes();
	put_req(1, KEY, BASE + 64, 64, 0);
	cr_assert_eq(fi_cntr_wait(g_cntr, 8, 30), -FI_ETIMEDOUT);
	cr_assert_eq(g_waits, 0, "the wait fell back to the core's");
	cr_assert_gt(g_trywaits, 2, "the wait slept %d times", g_trywaits);
	cr_assert_eq(ack_status(1), 0, "the wait did not serve first");
	cr_assert_eq(ack_status(2), 0, "a request that came in the wait "
		     "was not served");
	cr_assert_eq(g_handed, 0, "the endpoint was the agent's in %d of %d "
		     "sleeps of a wait that served it", g_handed, g_trywaits - 1);
	cr_assert_eq(agent_wakes(), 0, "the agent was woken to serve it");
	g_rx->wait_fd = -1;
	g_dom.transport = 0;
	g_fake_fab_ops.trywait = NULL;
	close(fd);
}

/* A fake core receive CQ (FI_CQ_FORMAT_DATA) handing out staged entries. */
static struct fi_cq_data_entry g_staged[4];
static unsigned g_nstaged;
static unsigned g_core_reads;  /* reads of the fake core CQ (tcp: a poll each) */
static uint64_t g_arrive_seq;  /* gated request the next read places, or 0 */

static void stage_remote_write(uint64_t data);

static ssize_t fake_data_cq_read(struct fid_cq *cq, void *buf, size_t count)
{
	size_t n;

	(void) cq;
	g_core_reads++;
	if (g_arrive_seq) { /* the core's progress places a gated write */
		put_req(g_arrive_seq, KEY, BASE + 100, 64, PMV_REQ_GATED);
		stage_remote_write(pmv_gate_data(g_ep.gate_id,
						 (uint32_t) g_arrive_seq));
		g_arrive_seq = 0;
	}
	n = g_nstaged < count ? g_nstaged : count;
	if (!n)
		return -FI_EAGAIN;
	memcpy(buf, g_staged, n * sizeof(g_staged[0]));
	g_nstaged -= (unsigned) n;
	memmove(g_staged, g_staged + n, g_nstaged * sizeof(g_staged[0]));
	return (ssize_t) n;
}

static struct fi_ops_cq g_data_cq_ops = { .size = sizeof(struct fi_ops_cq),
					  .read = fake_data_cq_read };
static struct fid_cq g_core_data_rx = { .ops = &g_data_cq_ops };

/* Stages a remote write's completion carrying data. */
static void stage_remote_write(uint64_t data)
{
	cr_assert_lt(g_nstaged, 4);
	g_staged[g_nstaged++] = (struct fi_cq_data_entry) {
		.flags = FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA, .data = data };
}

/* g_rx as the application's receive CQ over the fake core, ep gated. */
static void gate_ep(void)
{
	g_dom.transport = PMV_TRANSPORT_TCP;
	g_rx->core = &g_core_data_rx;
	g_rx->domain = &g_dom;
	g_rx->format = FI_CQ_FORMAT_DATA;
	g_rx->pmem_refs = 1;
	g_rx->wait_fd = -1;
	pthread_mutex_init(&g_rx->lock, NULL);
	g_nstaged = 0;
	g_core_reads = 0;
	g_arrive_seq = 0;
	cr_assert(pmv_gate_open(&g_ep), "a tcp endpoint whose receive CQ "
		  "carries data got no gate");
}

/*
 * A gated request's bytes may be in its slot before the rest of its
 * write's data (no rule orders one write's segments): it is served only
 * once that write's completion (remote CQ data: magic, gate, seq) is read,
 * by whoever reads the CQ, and the completion never reaches the
 * application; another endpoint's completion does not release it.
 */
Test(serve, a_gated_request_is_served_only_after_its_writes_completion)
{
	struct pmv_ep other = { .domain = &g_dom, .rx_cq = g_rx };
	struct fi_cq_data_entry got[4];

	gate_ep();
	cr_assert(pmv_gate_open(&other) && other.gate_id != g_ep.gate_id);
	put_req(1, KEY, BASE + 100, 64, PMV_REQ_GATED);
	pmv_serve_ep(&g_dom, &g_ep);
	cr_assert_eq(g_nacks, 0, "a gated request was served before its "
		     "write's completion was read");
	stage_remote_write(pmv_gate_data(other.gate_id, 1));
	cr_assert_eq(pmv_cq_read(&g_rx->cq_fid, got, 4), -FI_EAGAIN,
		     "another endpoint's gated completion reached the "
		     "application");
	pmv_serve_ep(&g_dom, &g_ep);
	cr_assert_eq(g_nacks, 0, "another endpoint's completion released it");
	stage_remote_write(pmv_gate_data(g_ep.gate_id, 1));
	stage_remote_write(0xfeed); /* the application's own */
	cr_assert_eq(pmv_cq_read(&g_rx->cq_fid, got, 4), 1,
		     "the gated completion reached the application");
	cr_assert_eq(got[0].data, 0xfeed);
	cr_assert_eq(serve_and_ack(1), 0, "not served once its write's "
		     "completion was read");
	pmv_gate_close(&other);
	pmv_gate_close(&g_ep);
}

/*
 * A target that reads no CQ (it polls a counter; its agent is off because
 * it progresses): the server reads the receive CQ's core entries itself,
 * so a gated request is served once its write's completion is there, and
 * the application's own entries wait for it, in order (was: refused as a
 * request never whole, "a malformed request", after 100 ms).
 */
Test(serve, a_gated_request_is_served_when_nobody_reads_the_cq)
{
	struct fi_cq_data_entry got[4];

	gate_ep();
	put_req(1, KEY, BASE + 100, 64, PMV_REQ_GATED);
	stage_remote_write(0xfeed); /* the application's own */
	stage_remote_write(pmv_gate_data(g_ep.gate_id, 1));
	cr_assert_eq(serve_and_ack(1), 0, "a gated request whose completion "
		     "sat in the core CQ was not served");
	cr_assert_eq(g_core_reads, 1, "the server read the core %u times for "
		     "2 entries: a short read already says it is empty",
		     g_core_reads);
	cr_assert_eq(pmv_cq_read(&g_rx->cq_fid, got, 4), 1,
		     "the application's entry was lost or the gated one "
		     "reached it");
	cr_assert_eq(got[0].data, 0xfeed);
	pmv_gate_close(&g_ep);
}

/*
 * A busy target over tcp: one core read (its progress) places a gated
 * request and returns its write's completion.  That application read
 * serves the request, and reads the core no second time (was: served by
 * the next read, after one more core read, over tcp a poll, for nothing).
 */
Test(serve, the_read_that_takes_a_gated_completion_serves_its_request)
{
	struct fi_cq_data_entry got[4];

	gate_ep();
	pmv_serve_attach(&g_ep);
	g_arrive_seq = 1;
	cr_assert_eq(pmv_cq_read(&g_rx->cq_fid, got, 4), -FI_EAGAIN,
		     "a gated completion reached the application");
	cr_assert_eq(ack_status(1), 0, "the read that took the request's "
		     "completion did not serve it");
	cr_assert_eq(g_core_reads, 1, "the core was read %u times",
		     g_core_reads);
	pmv_serve_detach(&g_ep);
	pmv_gate_close(&g_ep);
}

/*
 * A gated request whose write's completion never comes (a peer that sent
 * the flag without the remote CQ data) is refused as a slot without a
 * valid request is, after FI_PMEMVERBS_BAD_REQUEST_MS: it does not stall
 * the connection.
 */
Test(serve, a_gated_request_whose_completion_never_comes_is_refused)
{
	gate_ep();
	pmv_params.bad_request_ms = 0;
	put_req(1, KEY, BASE + 100, 64, PMV_REQ_GATED);
	put_req(2, KEY, BASE + 200, 64, 0);
	cr_assert_eq(serve_and_ack(1), PMV_ERR_BAD_REQUEST, "a gated request "
		     "without its completion was not refused");
	cr_assert_eq(serve_and_ack(2), 0, "the next request was not served");
	cr_assert_eq(g_ep.counters.bytes_persisted, 64);
	pmv_gate_close(&g_ep);
}

/* A gated request to an endpoint that offered no gate is refused. */
Test(serve, a_gated_request_to_an_ungated_endpoint_is_refused)
{
	put_req(1, KEY, BASE + 100, 64, PMV_REQ_GATED);
	cr_assert_eq(serve_and_ack(1), PMV_ERR_BAD_REQUEST);
	cr_assert_eq(g_ep.counters.bytes_persisted, 0);
}
