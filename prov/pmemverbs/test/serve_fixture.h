/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The target's unit tests' fixture (serve_fixture.c): a fake core endpoint
 * catches the acks (t_acks) at its fi_inject_write, requests are written
 * into the inbox as a peer would (put_req), and a PAGE-profile region of
 * LEN bytes at BASE, key KEY, is there to persist.  Shared by
 * test_serve.c, test_serve_wait.c and test_serve_gate.c.
 */
#ifndef PMV_SERVE_FIXTURE_H
#define PMV_SERVE_FIXTURE_H

#include <criterion/criterion.h>

#include "pmv_objects.h"
#include "target/pmv_target.h"

#define SLOT 128
#define KEY 0x55
#define BASE 0x10000
#define LEN 65536

/* The acks the fake core was asked to send, in order. */
extern struct pmv_ack t_acks[16];
extern unsigned t_nacks;
extern bool t_core_busy;   /* the fake core refuses acks with -FI_EAGAIN */
extern uint32_t t_req_gen; /* the generation the next requests carry */

extern struct pmv_domain t_dom;
extern struct pmv_mr t_mr;
extern struct pmv_ep t_ep;
extern struct pmv_cq *t_rx;
extern uint8_t *t_region; /* the region's mapping (BASE in it) */

/* serve_core_fixture.c: the fake core's counter (its reads return 7),
 * EQ, domain (t_core_dom: fi_cntr_open) and fabric (t_fab: fi_eq_open;
 * a test may set t_core_fab_ops.trywait). */
extern struct fi_ops t_fake_fi_ops;   /* a close that does nothing */
extern struct fid_domain t_core_dom;
extern struct fi_ops_fabric t_core_fab_ops;
extern struct pmv_fabric t_fab;
extern int t_core_waits;              /* its fi_cntr_wait, fi_eq_sread calls */
extern void (*t_core_cntr_progress)(void); /* run by each counter read */
extern uint64_t t_core_cntr_added;   /* what fi_cntr_add added to it */

/* The suites' init and fini. */
void serve_setup(void);
void serve_teardown(void);
/* Writes a request claiming seq (one extent, or none if len is 0) into
 * the slot of slot_seq, checksum right; a fenced one looks one back. */
struct pmv_req *put_req_claiming(uint64_t slot_seq, uint64_t seq,
				 uint64_t key, uint64_t addr, uint64_t len,
				 uint32_t flags);
/* Writes request seq into its own slot (see put_req_claiming). */
struct pmv_req *put_req(uint64_t seq, uint64_t key, uint64_t addr,
			uint64_t len, uint32_t flags);
/* Serves what waits and returns the status of ack seq (it must exist). */
int serve_and_ack(uint64_t seq);
/* The status of the ack of seq, or -1 if none was sent. */
int ack_status(uint64_t seq);

#endif
