/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The target's unit tests' fixture (serve_fixture.h): a fake core endpoint
 * that catches the acks at its fi_inject_write, an inbox requests are
 * written into as a peer would, and a PAGE-profile region to persist.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "objects_fixture.h"
#include "serve_fixture.h"

struct pmv_ack t_acks[16];
unsigned t_nacks;
bool t_core_busy;
uint32_t t_req_gen;

/* The core's fi_inject_write: records the ack it was asked to send. */
static ssize_t fake_inject_write(struct fid_ep *ep, const void *buf,
				 size_t len, fi_addr_t dest, uint64_t addr,
				 uint64_t key)
{
	(void) ep; (void) dest; (void) addr; (void) key;
	if (t_core_busy)
		return -FI_EAGAIN;
	cr_assert_eq(len, sizeof(struct pmv_ack));
	cr_assert_lt(t_nacks, 16);
	cr_assert(pmv_ack_decode(buf, ((const struct pmv_ack *) buf)->seq,
				 &t_acks[t_nacks]), "ack with a bad checksum");
	t_nacks++;
	return 0;
}

static struct fi_ops_rma t_rma = { .size = sizeof(struct fi_ops_rma),
				   .inject = fake_inject_write };
static struct fid_ep t_core = { .rma = &t_rma };

struct pmv_domain t_dom;
struct pmv_mr t_mr;
struct pmv_ep t_ep;
struct pmv_cq *t_rx;
uint8_t *t_region;

/* A region of LEN bytes of a PAGE-profile temporary file, key KEY. */
static void open_region(void)
{
	t_region = map_temp_file(LEN);
	unsetenv("PMEM2_FORCE_GRANULARITY");
	cr_assert_eq(pmv_persistence_detect(t_region, LEN, &t_mr.persistence), 0);
	t_mr.mr_fid.key = KEY;
	t_mr.access = FI_REMOTE_WRITE;
	t_mr.iov_count = 1;
	t_mr.base = t_region;
	t_mr.len = LEN;
	t_mr.rma_base = BASE;
	t_dom.mrs = &t_mr;
	t_mr.pprev = &t_dom.mrs;
	cr_assert_eq(pmv_mr_index_add(&t_dom, &t_mr), 0);
}

/* The suites' init: a fresh domain, region, endpoint and receive CQ. */
void serve_setup(void)
{
	memset(&t_dom, 0, sizeof(t_dom));
	memset(&t_mr, 0, sizeof(t_mr));
	memset(&t_ep, 0, sizeof(t_ep));
	t_nacks = 0;
	t_core_busy = false;
	t_req_gen = 0;
	t_core_waits = 0;
	t_core_cntr_progress = NULL;
	t_core_cntr_added = 0;
	pthread_mutex_init(&t_dom.lock, NULL);
	open_region();
	t_rx = calloc(1, sizeof(*t_rx));
	t_rx->domain = &t_dom;
	pthread_mutex_init(&t_rx->aux_lock, NULL);
	pmv_hooks_init(&t_dom.engines, NULL);
	pmv_hooks_init(&t_dom.served, NULL);
	pmv_hooks_init(&t_rx->hooks, &t_dom);
	t_ep.core = &t_core;
	t_ep.domain = &t_dom;
	t_ep.rx_cq = t_rx;
	cr_assert_eq(pmv_tgt_open(&t_ep), 0);
	t_ep.tgt->agent_seq = 1;
	t_ep.inbox.slot_size = SLOT;
	t_ep.inbox.mem = calloc(1, 64 * sizeof(struct pmv_ack) + 64 * SLOT);
	t_ep.peer = (struct pmv_peer) { .known = true, .has_inbox = true,
					.slots = PMV_SLOTS, .slot_size = SLOT };
	pmv_params.fault_persist = 0;
	pmv_params.fault_alloc = 0;
	pmv_params.bad_request_ms = 100;
	pmv_fault_reset();
}

void serve_teardown(void)
{
	pmv_mr_index_fini(&t_dom);
	pmv_persistence_release(&t_mr.persistence);
	munmap(t_region, LEN);
	free(t_ep.inbox.mem);
	pmv_tgt_close(&t_ep);
	free(t_rx->aux);
	free(t_rx);
}


/*
 * Writes a request claiming seq (one extent, or none if len is 0) into
 * the slot of slot_seq, checksum right; a fenced one looks one back.
 */
struct pmv_req *put_req_claiming(uint64_t slot_seq, uint64_t seq,
				 uint64_t key, uint64_t addr, uint64_t len,
				 uint32_t flags)
{
	struct pmv_req *slot = pmv_inbox_req(&t_ep.inbox, slot_seq);

	memset(slot, 0, SLOT);
	*slot = (struct pmv_req) { .seq = seq, .key = key, .flags = flags,
				   .data = 0xd00d + seq, .nextents = len ? 1 : 0,
				   .gen = t_req_gen,
				   .fence_back = (flags & PMV_REQ_FENCE) ? 1 : 0 };
	slot->ext[0] = (struct pmv_extent) { .addr = addr, .len = len };
	cr_assert_gt(pmv_req_encode(slot, SLOT), 0);
	return slot;
}

/* Writes request seq into its own slot (see put_req_claiming). */
struct pmv_req *put_req(uint64_t seq, uint64_t key, uint64_t addr,
			uint64_t len, uint32_t flags)
{
	return put_req_claiming(seq, seq, key, addr, len, flags);
}

/* Serves what waits and returns the status of ack seq (it must exist). */
int serve_and_ack(uint64_t seq)
{
	pmv_serve_ep(&t_dom, &t_ep);
	pmv_serve_ep(&t_dom, &t_ep); /* sends the last ack */
	for (unsigned i = 0; i < t_nacks; i++)
		if (t_acks[i].seq == seq)
			return t_acks[i].status;
	cr_assert_fail("no ack for request %llu", (unsigned long long) seq);
	return -1;
}

/* The status of the ack of seq, or -1 if none was sent. */
int ack_status(uint64_t seq)
{
	for (unsigned i = 0; i < t_nacks; i++)
		if (t_acks[i].seq == seq)
			return t_acks[i].status;
	return -1;
}
