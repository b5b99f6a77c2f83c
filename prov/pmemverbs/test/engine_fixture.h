/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The initiator's unit tests' fixture (engine_fixture.c): a fake core
 * endpoint that records what is posted, the pmemverbs domain, CQ and
 * endpoint around it, and the hands that deliver completions and acks, so
 * that every initiator module (test_ring.c, test_request.c, test_m_*.c,
 * ...) is driven without a network.  Core calls fail through the
 * provider's fault points (fail_core_call), never a counter of the fake.
 */
#ifndef PMV_ENGINE_FIXTURE_H
#define PMV_ENGINE_FIXTURE_H

#include <criterion/criterion.h>

#include "pmv_objects.h"
#include "initiator/pmv_initiator.h"

/* One call the fake core took. */
#define MAX_POSTS 64
struct post {
	bool read;
	uint64_t flags;
	uint64_t addr;
	size_t len;
	void *context;
	uint64_t data;              /* its remote CQ data */
	uint8_t bytes[256];
	size_t iov_count, rma_iov_count;
	struct fi_rma_iov last_rma; /* its last remote segment */
	struct fi_rma_iov rma[8];   /* its remote segments (8 at most) */
	uint8_t last_bytes[256];    /* and the bytes it carries */
	bool watched_held;          /* posted with g_watched held (by us) */
};
extern struct post g_posts[MAX_POSTS];
extern unsigned g_nposts;
/* A pmemverbs lock posts must not be made under (NULL: none watched). */
extern pthread_mutex_t *g_watched;

/* The core's fi_control: FI_SETOPSFLAG's flags, and what it answers. */
extern uint64_t g_control_flags;
extern int g_control_ret;

/* The pmemverbs objects around the fake core. */
extern struct pmv_domain g_dom;
extern struct pmv_cq *g_cq;
extern struct pmv_ep *g_ep;
extern bool g_cq_opened; /* by pmv_cq_open (test_cq.c) */

#define INBOX_KEY 0x77
#define REGION_KEY 0x1234
#define GATE_ID 0x0403

/* An initiator endpoint over the fake core, hooked to g_cq. */
struct pmv_ep *open_ep(void);
void close_ep(struct pmv_ep *ep);
/* A fresh CQ for the engine's operations (no core CQ under it). */
void open_cq(void);
void close_cq(void);
/* The domain, the parameters and the fault points, fresh. */
void setup_params(void);
/* The suites' init and fini: params, CQ, g_ep (fini safe to run twice). */
void setup(void);
void teardown(void);

/* The next core call of the engine that is the nth from now fails with
 * err (-FI_EIO: FI_PMEMVERBS_FAULT_CORE_OP; -FI_EAGAIN: _CORE_FULL). */
void fail_core_call(unsigned nth, int err);

/* Delivers the completion of post i (err 0: success). */
void complete_post(unsigned i, int err);
/* Every read-flush read lands the target's generation gen. */
void reads_bring(uint64_t gen);
/* Writes the ack of request seq into ep's inbox, as the agent would, and
 * runs ep's engine (ack_lands: the write alone). */
void ack(struct pmv_ep *ep, uint64_t seq, int status, uint8_t profile,
	 uint32_t gen);
void ack_lands(struct pmv_ep *ep, uint64_t seq, int status, uint8_t profile,
	       uint32_t gen);
/* One ack for requests first .. first + covers - 1, as for a batch. */
void ack_covering(struct pmv_ep *ep, uint64_t first, uint16_t covers,
		  int status);
/* Pops one entry of the CQ's own queue; false if none. */
bool pop(struct fi_cq_err_entry *out, bool *is_error);
/* fi_writemsg(FI_COMMIT_COMPLETE | flags) of len bytes at off. */
ssize_t commit(struct pmv_ep *ep, uint64_t off, size_t len, uint64_t flags,
	       void *ctx);

/* Over tcp toward a gated peer: data and request in one write. */
void join_requests(void);
/* Learns REGION_KEY's profile (MHP) through an agent commit. */
void learn_mhp(uint32_t gen);
/* Learns REGION_KEY's profile through an agent commit acked as request 1. */
void learn_profile(uint8_t profile, uint32_t gen);
/* The target pushes its table: REGION_KEY is profile in generation gen. */
void push_table(struct pmv_ep *ep, uint8_t profile, uint32_t gen);
/* The request a post carries in its last segment, decoded into buf. */
struct pmv_req *request_of(const struct post *p, uint64_t seq,
			   uint64_t buf[32]);
/* The generation request seq carries, in the bytes of post i. */
uint32_t posted_req_gen(unsigned i, uint64_t seq);

/* The first commit of the endpoint, to REGION_KEY, refused by the agent. */
void fail_first_commit(void);
/* A fenced 32-byte commit by send to [1000, 1032) of REGION_KEY, unacked. */
void earlier_send_in_flight(void);
/* A commit of method m posts nothing while the send at send_seq is not
 * acked (-FI_EAGAIN), then goes once it is. */
void later_commit_waits(enum fi_pmem_method m, uint64_t off, size_t len,
			uint64_t send_seq, uint8_t profile);
/* Sixteen 8-byte writes a MiB apart, then a commit: its requests (the
 * extents in ext, *n of them); returns their number. */
#define SCATTERED 16
unsigned scattered_commit(int *ctx, struct pmv_extent *ext, unsigned *n);

/* fi_write of 64 bytes at off through the endpoint (default op_flags). */
ssize_t default_write(uint64_t off, void *ctx);
/* The operation of context ctx went as an agent commit: its data write
 * and its request, and its completion only at the target's ack. */
void assert_agent_commit(void *ctx);

#endif
