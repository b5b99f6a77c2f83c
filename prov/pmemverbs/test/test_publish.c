/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Unit tests of the profile table a side pushes to its peer
 * (target/pmv_publish.c) against a fake core endpoint that catches the
 * inject writes and fi_shutdown.
 */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "pmv_objects.h"
#include "target/pmv_agent.h"
#include "target/pmv_target.h"

#define SLOT 64 /* the tcp core's inject size */
#define PEER_INBOX 0x1000

static struct pmv_peer g_ep_peer = { .known = true, .has_inbox = true,
				     .inbox_addr = PEER_INBOX,
				     .slots = PMV_SLOTS, .slot_size = SLOT };

/* The peer's table area, as the inject writes leave it. */
static uint8_t g_wire[PMV_PROFILES_SIZE];
static unsigned g_writes, g_shutdowns;

static ssize_t fake_inject_write(struct fid_ep *ep, const void *buf,
				 size_t len, fi_addr_t dest, uint64_t addr,
				 uint64_t key)
{
	uint64_t area = pmv_peer_profiles_addr(&g_ep_peer);

	(void) ep; (void) dest; (void) key;
	cr_assert_leq(len, SLOT, "a write over the core's inject size");
	cr_assert(addr >= area && addr + len <= area + sizeof(g_wire),
		  "a write outside the peer's table area");
	memcpy(g_wire + (addr - area), buf, len);
	g_writes++;
	return 0;
}

static int fake_shutdown(struct fid_ep *ep, uint64_t flags)
{
	(void) ep; (void) flags;
	g_shutdowns++;
	return 0;
}

static struct fi_ops_rma g_rma = { .size = sizeof(struct fi_ops_rma),
				   .inject = fake_inject_write };
static struct fi_ops_cm g_cm = { .size = sizeof(struct fi_ops_cm),
				 .shutdown = fake_shutdown };
static struct fid_ep g_core = { .rma = &g_rma, .cm = &g_cm };

static struct pmv_domain g_dom;
static struct pmv_mr g_mrs[20];
static struct pmv_ep g_ep;

/* Region i: key 0x100 + i, the profile and access given. */
static void add_region(unsigned i, enum fi_pmem_profile profile,
		       uint64_t access, size_t iov_count)
{
	g_mrs[i] = (struct pmv_mr) { .access = access, .iov_count = iov_count,
				     .next = g_dom.mrs };
	g_mrs[i].mr_fid.key = 0x100 + i;
	g_mrs[i].persistence.profile = profile;
	g_dom.mrs = &g_mrs[i];
}

static void setup(void)
{
	memset(&g_dom, 0, sizeof(g_dom));
	memset(&g_ep, 0, sizeof(g_ep));
	g_writes = g_shutdowns = 0;
	memset(g_wire, 0, sizeof(g_wire));
	g_dom.transport = PMV_TRANSPORT_TCP;
	g_dom.inject_size = SLOT;
	g_dom.mr_gen = 4;
	g_ep.core = &g_core;
	g_ep.domain = &g_dom;
	g_ep.inbox.slot_size = SLOT;
	g_ep.peer = g_ep_peer;
	g_ep.connected = true;
	cr_assert_eq(pmv_tgt_open(&g_ep), 0);
	pmv_params.push_profiles = 1;
	pmv_params.ddio = 1;
	pmv_params.fault_push = 0;
	pmv_fault_reset();
}

static void teardown(void)
{
	pmv_tgt_close(&g_ep);
}

TestSuite(publish, .init = setup, .fini = teardown);

/* Decodes the table the pushes left in the peer's area. */
static struct pmv_profiles last_table(void)
{
	struct pmv_profiles t;

	cr_assert_gt(g_writes, 0, "nothing was pushed");
	cr_assert(pmv_profiles_decode(g_wire, sizeof(g_wire), &t),
		  "the table pushed does not decode");
	return t;
}

Test(publish, the_table_names_what_a_commit_can_target_newest_first)
{
	struct pmv_profiles t;

	add_region(0, FI_PMEM_PROFILE_PAGE, FI_REMOTE_WRITE, 1);
	add_region(1, FI_PMEM_PROFILE_DMP, FI_REMOTE_READ, 1); /* no writes */
	add_region(2, FI_PMEM_PROFILE_MHP, FI_REMOTE_WRITE, 1);
	add_region(3, FI_PMEM_PROFILE_VOLATILE, FI_REMOTE_WRITE, 2); /* 2 iovs */
	pmv_publish_profiles(&g_ep);
	t = last_table();
	cr_assert_eq(t.mr_gen, 4);
	cr_assert_eq(t.count, 2);
	cr_assert_eq(t.e[0].key, 0x102);
	cr_assert_eq(t.e[0].profile, FI_PMEM_PROFILE_MHP);
	cr_assert_eq(t.e[1].key, 0x100);
	cr_assert_eq(t.e[1].profile, FI_PMEM_PROFILE_PAGE);
	cr_assert_eq(t.e[1].target_flags, 0, "DDIO on: no flag");
}

/* The table goes in writes of the core's inject size (64 bytes over tcp)
 * and holds 15 regions: the newest 15 of 20 go. */
Test(publish, the_newest_15_regions_go_in_inject_sized_writes)
{
	struct pmv_profiles t;

	for (unsigned i = 0; i < 20; i++)
		add_region(i, FI_PMEM_PROFILE_DMP, FI_REMOTE_WRITE, 1);
	pmv_publish_profiles(&g_ep);
	cr_assert_eq(g_writes, 4, "256 bytes in 64-byte writes");
	t = last_table();
	cr_assert_eq(t.count, PMV_PROFILES_MAX);
	cr_assert_eq(t.e[0].key, 0x100 + 19);
	cr_assert_eq(t.e[14].key, 0x100 + 5);
}

/* Before FI_CONNECTED is read the core could not send it; with the
 * parameter off, never. */
Test(publish, nothing_goes_before_the_connection_or_with_pushes_off)
{
	add_region(0, FI_PMEM_PROFILE_PAGE, FI_REMOTE_WRITE, 1);
	g_ep.connected = false;
	pmv_publish_profiles(&g_ep);
	g_ep.connected = true;
	pmv_params.push_profiles = 0;
	pmv_publish_profiles(&g_ep);
	cr_assert_eq(g_writes, 0);
}

/*
 * The table is a hint: a push the core refuses (after one went, over tcp)
 * leaves the connection up, and the next push goes.  Before issue 24 the
 * peer completed commits on the table, and such a refusal shut the
 * connection down.
 */
Test(publish, a_refused_push_keeps_the_connection_and_the_next_one_goes)
{
	add_region(0, FI_PMEM_PROFILE_MHP, FI_REMOTE_WRITE, 1);
	pmv_params.fault_push = 2;
	pmv_publish_profiles(&g_ep);
	g_dom.mr_gen++;
	pmv_publish_profiles(&g_ep); /* refused */
	pmv_publish_profiles(&g_ep);
	cr_assert_eq(g_shutdowns, 0, "a lost hint shut the connection down");
	cr_assert_eq(g_writes, 2, "the push after the refused one did not go");
}

/* Refused before any went (the peer never read a table), or over RDMA
 * (whose read-flushes read the generation themselves): a hint lost. */
Test(publish, a_refused_first_push_or_one_over_rdma_keeps_the_connection)
{
	add_region(0, FI_PMEM_PROFILE_MHP, FI_REMOTE_WRITE, 1);
	pmv_params.fault_push = 1;
	pmv_publish_profiles(&g_ep);
	cr_assert_eq(g_shutdowns, 0);
	pmv_publish_profiles(&g_ep);
	cr_assert_eq(g_writes, 1);
	g_dom.transport = PMV_TRANSPORT_IB;
	pmv_params.fault_push = 2;
	pmv_fault_reset();
	pmv_publish_profiles(&g_ep);
	pmv_publish_profiles(&g_ep);
	cr_assert_eq(g_shutdowns, 0);
}

/* More endpoints on the agent's list than two chunks of a push. */
#define AGENT_EPS 70

static struct pmv_agent g_agent;
static struct pmv_ep g_eps[AGENT_EPS + 1];
static struct fid_ep g_cores[AGENT_EPS + 1];
static unsigned g_pushes[AGENT_EPS + 1];
/* on endpoint g_change_at's push: g_change (below) runs, once */
static int g_change_at = -1;
static void (*g_change)(void);

static ssize_t agent_inject_write(struct fid_ep *ep, const void *buf,
				  size_t len, fi_addr_t dest, uint64_t addr,
				  uint64_t key)
{
	size_t i = (size_t) (ep - g_cores);

	(void) buf; (void) len; (void) dest; (void) key;
	cr_assert_lt(i, AGENT_EPS + 1, "a push to an unknown endpoint");
	if (addr != pmv_peer_profiles_addr(&g_ep_peer))
		return 0; /* the rest of a table */
	g_pushes[i]++;
	if ((int) i == g_change_at) {
		g_change_at = -1;
		g_change();
	}
	return 0;
}

static struct fi_ops_rma g_agent_rma = { .size = sizeof(struct fi_ops_rma),
					 .inject = agent_inject_write };

/* g_eps[i] connected, on the agent's list (its head: the list runs from
 * the last one linked) with its own fake core endpoint. */
static void agent_link(size_t i)
{
	g_eps[i] = g_ep;
	g_eps[i].tgt = NULL;
	g_cores[i] = (struct fid_ep) { .rma = &g_agent_rma, .cm = &g_cm };
	g_eps[i].core = &g_cores[i];
	cr_assert_eq(pmv_tgt_open(&g_eps[i]), 0);
	LIST_INSERT_HEAD(&g_agent.eps, &g_eps[i], tgt->agent_link);
	g_eps[i].tgt->in_agent = true;
}

/* An endpoint leaves the agent as pmv_agent_remove unlinks it. */
static void agent_unlink(size_t i)
{
	LIST_REMOVE(&g_eps[i], tgt->agent_link);
	g_eps[i].tgt->in_agent = false;
}

static size_t g_leaves; /* the endpoint unlink_one unlinks */
static void unlink_one(void) { agent_unlink(g_leaves); }
static void link_new(void) { agent_link(AGENT_EPS); }

static void agent_setup(void)
{
	setup();
	memset(&g_agent, 0, sizeof(g_agent));
	memset(g_pushes, 0, sizeof(g_pushes));
	LIST_INIT(&g_agent.eps);
	g_agent.domain = &g_dom;
	g_dom.agent = &g_agent;
	for (size_t i = 0; i < AGENT_EPS; i++)
		agent_link(i);
	add_region(0, FI_PMEM_PROFILE_PAGE, FI_REMOTE_WRITE, 1);
}

static void agent_teardown(void)
{
	for (size_t i = 0; i <= AGENT_EPS; i++)
		pmv_tgt_close(&g_eps[i]);
	g_dom.agent = NULL;
	teardown();
}

/*
 * Every endpoint on the list at the end was pushed once, but `except';
 * the push holds none when it returns (a hold left would make its close
 * wait for ever).
 */
static void assert_each_pushed_once(int except)
{
	for (size_t i = 0; i <= AGENT_EPS; i++) {
		cr_expect(!g_eps[i].tgt || g_eps[i].tgt->refs == 1,
			  "endpoint %zu is still held by the push", i);
		if ((int) i == except || i == AGENT_EPS)
			continue;
		cr_expect_eq(g_pushes[i], 1, "endpoint %zu of the agent's "
			     "list was pushed %u times", i, g_pushes[i]);
	}
}

/*
 * A push goes to the endpoints PMV_PUSH_CHUNK at a time, without the
 * domain lock between chunks.  Another endpoint's close meanwhile (here:
 * one already pushed, in the first chunk) must not make the next chunk
 * skip an endpoint that stays; one joining meanwhile must not make it
 * push one twice.  Before, the next chunk started at a position counted
 * from the list's head, which such a change shifts.
 */
TestSuite(publish_agent, .init = agent_setup, .fini = agent_teardown);

Test(publish_agent, a_close_during_a_push_makes_it_skip_no_other_endpoint)
{
	g_change_at = 40; /* in the first chunk: 69 down to 38 */
	g_change = unlink_one;
	g_leaves = 60;
	pmv_domain_publish_profiles(&g_dom);
	assert_each_pushed_once(-1);
}

Test(publish_agent, a_join_during_a_push_makes_it_push_no_endpoint_twice)
{
	g_change_at = 40;
	g_change = link_new;
	pmv_domain_publish_profiles(&g_dom);
	assert_each_pushed_once(-1);
}

/* The first chunk's last endpoint (38) closes before the second chunk. */
Test(publish_agent, a_close_of_a_chunks_last_endpoint_makes_it_skip_no_other)
{
	g_change_at = 38;
	g_change = unlink_one;
	g_leaves = 38;
	pmv_domain_publish_profiles(&g_dom);
	assert_each_pushed_once(38);
}
