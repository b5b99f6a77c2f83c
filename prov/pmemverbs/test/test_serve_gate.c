/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Unit tests: gated requests (target/pmv_serve_gate.c, pmv_gate.c) over
 * the fake core of serve_fixture.h: a request joined to its data in one
 * write is served only once that write's completion (its remote CQ data)
 * is read, by the application or by the server itself, and refused when
 * it never comes or the endpoint offered no gate.
 */
#include <stdint.h>
#include <string.h>

#include "serve_fixture.h"

TestSuite(serve_gate, .init = serve_setup, .fini = serve_teardown);

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
		stage_remote_write(pmv_gate_data(t_ep.gate_id,
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

/* t_rx as the application's receive CQ over the fake core, ep gated. */
static void gate_ep(void)
{
	t_dom.transport = PMV_TRANSPORT_TCP;
	t_rx->core = &g_core_data_rx;
	t_rx->domain = &t_dom;
	t_rx->format = FI_CQ_FORMAT_DATA;
	t_rx->pmem_refs = 1;
	t_rx->wait_fd = -1;
	pthread_mutex_init(&t_rx->lock, NULL);
	g_nstaged = 0;
	g_core_reads = 0;
	g_arrive_seq = 0;
	cr_assert(pmv_gate_open(&t_ep), "a tcp endpoint whose receive CQ "
		  "carries data got no gate");
}

/*
 * A gated request's bytes may be in its slot before the rest of its
 * write's data (no rule orders one write's segments): it is served only
 * once that write's completion (remote CQ data: magic, gate, seq) is read,
 * by whoever reads the CQ, and the completion never reaches the
 * application; another endpoint's completion does not release it.
 */
Test(serve_gate, a_gated_request_is_served_only_after_its_writes_completion)
{
	struct pmv_ep other = { .domain = &t_dom, .rx_cq = t_rx };
	struct fi_cq_data_entry got[4];

	gate_ep();
	cr_assert(pmv_gate_open(&other) && other.gate_id != t_ep.gate_id);
	put_req(1, KEY, BASE + 100, 64, PMV_REQ_GATED);
	pmv_serve_ep(&t_dom, &t_ep);
	cr_assert_eq(t_nacks, 0, "a gated request was served before its "
		     "write's completion was read");
	stage_remote_write(pmv_gate_data(other.gate_id, 1));
	cr_assert_eq(pmv_cq_read(&t_rx->cq_fid, got, 4), -FI_EAGAIN,
		     "another endpoint's gated completion reached the "
		     "application");
	pmv_serve_ep(&t_dom, &t_ep);
	cr_assert_eq(t_nacks, 0, "another endpoint's completion released it");
	stage_remote_write(pmv_gate_data(t_ep.gate_id, 1));
	stage_remote_write(0xfeed); /* the application's own */
	cr_assert_eq(pmv_cq_read(&t_rx->cq_fid, got, 4), 1,
		     "the gated completion reached the application");
	cr_assert_eq(got[0].data, 0xfeed);
	cr_assert_eq(serve_and_ack(1), 0, "not served once its write's "
		     "completion was read");
	pmv_gate_close(&other);
	pmv_gate_close(&t_ep);
}

/*
 * A target that reads no CQ (it polls a counter; its agent is off because
 * it progresses): the server reads the receive CQ's core entries itself,
 * so a gated request is served once its write's completion is there, and
 * the application's own entries wait for it, in order (was: refused as a
 * request never whole, "a malformed request", after 100 ms).
 */
Test(serve_gate, a_gated_request_is_served_when_nobody_reads_the_cq)
{
	struct fi_cq_data_entry got[4];

	gate_ep();
	put_req(1, KEY, BASE + 100, 64, PMV_REQ_GATED);
	stage_remote_write(0xfeed); /* the application's own */
	stage_remote_write(pmv_gate_data(t_ep.gate_id, 1));
	cr_assert_eq(serve_and_ack(1), 0, "a gated request whose completion "
		     "sat in the core CQ was not served");
	cr_assert_eq(g_core_reads, 1, "the server read the core %u times for "
		     "2 entries: a short read already says it is empty",
		     g_core_reads);
	cr_assert_eq(pmv_cq_read(&t_rx->cq_fid, got, 4), 1,
		     "the application's entry was lost or the gated one "
		     "reached it");
	cr_assert_eq(got[0].data, 0xfeed);
	pmv_gate_close(&t_ep);
}

/*
 * A busy target over tcp: one core read (its progress) places a gated
 * request and returns its write's completion.  That application read
 * serves the request, and reads the core no second time (was: served by
 * the next read, after one more core read, over tcp a poll, for nothing).
 */
Test(serve_gate, the_read_that_takes_a_gated_completion_serves_its_request)
{
	struct fi_cq_data_entry got[4];

	gate_ep();
	pmv_serve_attach(&t_ep);
	g_arrive_seq = 1;
	cr_assert_eq(pmv_cq_read(&t_rx->cq_fid, got, 4), -FI_EAGAIN,
		     "a gated completion reached the application");
	cr_assert_eq(ack_status(1), 0, "the read that took the request's "
		     "completion did not serve it");
	cr_assert_eq(g_core_reads, 1, "the core was read %u times",
		     g_core_reads);
	pmv_serve_detach(&t_ep);
	pmv_gate_close(&t_ep);
}

/* The core's progress in a counter read: places gated request 2. */
static void place_gated_request(void)
{
	put_req(2, KEY, BASE + 100, 64, PMV_REQ_GATED);
	stage_remote_write(pmv_gate_data(t_ep.gate_id, 2));
}

/*
 * A target that busy-polls a counter (fi_cntr_read), over tcp: a read
 * serves a gated request placed before it by reading the gated receive
 * CQ's core entries itself, before the core's counter (was: the request
 * waited for a read of the receive CQ, the agent's, or the next counter
 * read: 64 B commits to such a target took 1.37 read round trips at p50
 * against 1.18 for a busy CQ reader), and one that the core counter's own
 * progress places by reading them again after it (was: served by the next
 * read; 4 KiB commits 1.38 read round trips at p50, 1.23 now).
 */
Test(serve_gate, a_counter_read_serves_the_gated_requests_placed_before_and_in_it)
{
	struct fi_cntr_attr attr = { .wait_obj = FI_WAIT_UNSPEC };
	struct fid_cntr *cntr;

	gate_ep();
	t_dom.core = &t_core_dom;
	cr_assert_eq(pmv_cntr_open(&t_dom.domain_fid, &attr, &cntr, NULL), 0);
	t_ep.cntr[1] = pmv_container_of(cntr, struct pmv_cntr, cntr_fid);
	pmv_serve_attach(&t_ep);
	put_req(1, KEY, BASE, 64, PMV_REQ_GATED);
	stage_remote_write(pmv_gate_data(t_ep.gate_id, 1));
	t_core_cntr_progress = place_gated_request;
	cr_assert_eq(fi_cntr_read(cntr), 7);
	t_core_cntr_progress = NULL;
	cr_assert_eq(ack_status(1), 0, "the counter read did not serve the "
		     "gated request placed before it");
	cr_assert_eq(ack_status(2), 0, "the counter read did not serve the "
		     "gated request its core counter's progress placed");
	cr_assert_eq(g_core_reads, 2, "the receive CQ's core was read %u "
		     "times", g_core_reads);
	pmv_serve_detach(&t_ep);
	cr_assert_eq(fi_close(&cntr->fid), 0);
	pmv_gate_close(&t_ep);
}

/*
 * A gated endpoint's inbox is looked at only when its gate confirms a
 * request, or in the sweep of its word of gates: a read finds a request
 * that came without remote CQ data only once a completion naming its gate
 * is read, or at its word's sweep.  (Each read used to look into every
 * endpoint's inbox: with 1024 idle connections on one CQ, a read of it
 * cost 1.5 to 2.1 times the tcp core's own.)
 */
Test(serve_gate, reads_look_into_a_gated_inbox_only_on_its_gates_events)
{
	struct fi_cq_data_entry got[4];

	gate_ep();
	pmv_serve_attach(&t_ep);
	t_dom.gate_swept_ms = UINT64_MAX / 2; /* no sweep comes due */
	(void) pmv_cq_read(&t_rx->cq_fid, got, 4); /* the look attach asks */
	put_req(1, KEY, BASE + 100, 64, 0);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(pmv_cq_read(&t_rx->cq_fid, got, 4), -FI_EAGAIN);
	cr_assert_eq(t_nacks, 0, "a read looked into a gated endpoint's "
		     "inbox with no completion naming its gate");
	stage_remote_write(pmv_gate_data(t_ep.gate_id, 1));
	cr_assert_eq(pmv_cq_read(&t_rx->cq_fid, got, 4), -FI_EAGAIN,
		     "the gate's completion reached the application");
	cr_assert_eq(ack_status(1), 0, "the read that took the completion "
		     "naming its gate did not serve the request");
	put_req(2, KEY, BASE, 64, 0);
	(void) pmv_cq_read(&t_rx->cq_fid, got, 4);
	cr_assert_eq(t_nacks, 1, "looked into without an event or a sweep");
	/* the sweeps come due, one word of gates each, in turn */
	for (unsigned i = 0; i < PMV_GATES / 64 && t_nacks == 1; i++) {
		t_dom.gate_swept_ms = 0;
		(void) pmv_cq_read(&t_rx->cq_fid, got, 4);
	}
	cr_assert_eq(ack_status(2), 0, "the sweeps did not find a request "
		     "that came without remote CQ data");
	pmv_serve_detach(&t_ep);
	pmv_gate_close(&t_ep);
}

/*
 * A sweep marks the served gates of one word (64 gates), the next word at
 * the next sweep: a read that takes the marks looks into 64 inboxes at
 * most, not into every served one (1024 inboxes every 10 ms took 9% of a
 * target's CPU with one busy connection among 1024 idle ones).  Watched
 * through the marks each sweep leaves.  Seen failing with every gate
 * marked at each sweep (1024 marks).
 */
Test(serve_gate, a_sweep_marks_one_word_of_gates_each_in_turn)
{
	unsigned marked, seen = 0;

	for (unsigned i = 0; i < PMV_GATES; i++)
		t_dom.gate_server[i] = &t_ep; /* every gate served */
	for (unsigned sweep = 0; sweep < PMV_GATES / 64; sweep++) {
		t_dom.gate_swept_ms = 0; /* due */
		pmv_gate_sweep(&t_dom, pmv_ms_now());
		marked = 0;
		for (unsigned w = 0; w < PMV_GATES / 64; w++) {
			uint64_t bits = pmv_gate_take_marks(&t_dom, w);

			marked += (unsigned) __builtin_popcountll(bits);
			seen += bits != 0;
		}
		cr_assert_neq(pmv_gate_take_marked_words(&t_dom), 0,
			      "sweep %u marked gates but no word of them",
			      sweep);
		cr_assert_eq(marked, 64, "sweep %u marked %u gates", sweep,
			     marked);
	}
	cr_assert_eq(seen, PMV_GATES / 64, "the sweeps did not take every "
		     "word in turn");
	memset(t_dom.gate_server, 0, sizeof(t_dom.gate_server));
}

/*
 * A read of a CQ where gated endpoints receive, with no gate marked and no
 * sweep due (1024 idle connections), takes one lock, the CQ's own around
 * the core's read, and reads the clock once.  Watched by counting both
 * (test builds count them per thread).  Seen failing on 4809383: 5 locks
 * (the list's three times, to hold, let go and look past its gates hook;
 * the queue's) and 2 clock reads (the note of the read, the sweep's).
 */
#ifdef PMV_FAULT_INJECTION /* the counts exist in test builds only */
Test(serve_gate, an_idle_read_takes_one_lock_and_reads_the_clock_once)
{
	struct fi_cq_data_entry got[4];
	unsigned long locks, clocks;

	gate_ep();
	pmv_serve_attach(&t_ep);
	t_dom.gate_swept_ms = UINT64_MAX / 2; /* no sweep comes due */
	(void) pmv_cq_read(&t_rx->cq_fid, got, 4); /* the look attach asks */
	for (int i = 0; i < 3; i++) {
		locks = pmv_locks_taken();
		clocks = pmv_clock_reads();
		cr_assert_eq(pmv_cq_read(&t_rx->cq_fid, got, 4), -FI_EAGAIN);
		cr_assert_eq(pmv_locks_taken() - locks, 1, "an idle read took "
			     "%lu locks", pmv_locks_taken() - locks);
		cr_assert_eq(pmv_clock_reads() - clocks, 1, "an idle read read "
			     "the clock %lu times", pmv_clock_reads() - clocks);
	}
	/* and a confirmed request is still served by the next read */
	put_req(1, KEY, BASE + 100, 64, 0);
	stage_remote_write(pmv_gate_data(t_ep.gate_id, 1));
	(void) pmv_cq_read(&t_rx->cq_fid, got, 4);
	cr_assert_eq(ack_status(1), 0, "the read that took the completion "
		     "naming its gate did not serve the request");
	pmv_serve_detach(&t_ep);
	pmv_gate_close(&t_ep);
}
#endif

/*
 * One progress per domain: a read of any CQ of the domain serves the gates
 * that confirmed requests, not only a read of the gated endpoint's own
 * receive CQ (as libfabric's tcp provider progresses the whole domain
 * from each CQ).  The gate is confirmed as another thread's read of the
 * receive CQ, or the agent's, confirms it; then a thread reading only its
 * transmit CQ serves the request.  Before, the gates ran from the receive
 * CQ's reads alone and the request waited for the next one.
 */
Test(serve_gate, a_read_of_another_cq_of_the_domain_serves_a_confirmed_gate)
{
	struct pmv_hooks other;

	gate_ep();
	pmv_serve_attach(&t_ep);
	pmv_hooks_init(&other, &t_dom);
	t_dom.gate_swept_ms = UINT64_MAX / 2; /* no sweep comes due */
	pmv_hooks_run(&other); /* the look attach asks: nothing there yet */
	put_req(1, KEY, BASE + 100, 64, PMV_REQ_GATED);
	pmv_gate_confirm(&t_dom, t_ep.gate_id, 1);
	pmv_hooks_run(&other);
	cr_assert_eq(ack_status(1), 0, "a read of the domain's other CQ did "
		     "not serve the request its gate confirmed");
	pmv_serve_detach(&t_ep);
	cr_assert_eq(t_dom.gates_served, 0);
	pmv_hooks_fini(&other);
	pmv_gate_close(&t_ep);
}

/*
 * An accepting endpoint joins its agent (and its CQs' reads) before
 * fi_accept opens its gate: serving it again then moves it from the read
 * list, which every read walks, to the events list.
 */
Test(serve_gate, an_endpoint_whose_gate_opens_later_leaves_the_read_list)
{
	unsigned on_reads = 0, on_events = 0;

	t_dom.transport = PMV_TRANSPORT_TCP;
	pmv_serve_attach(&t_ep); /* before its gate: read on every read */
	gate_ep();
	pmv_serve_attach(&t_ep);
	for (struct pmv_hook *h = t_rx->hooks.head; h; h = h->next)
		on_reads += h->ep == &t_ep;
	for (struct pmv_hook *h = t_rx->hooks.ev_head; h; h = h->next)
		on_events += h->ep == &t_ep;
	cr_assert_eq(on_reads, 0, "a gated endpoint stays on the read list");
	cr_assert_eq(on_events, 1);
	cr_assert_null(t_dom.served.head, "a gated endpoint stays on the "
		       "domain's list of inboxes every read looks into");
	cr_assert_eq(t_dom.gates_served, 1, "nothing serves its gate");
	pmv_serve_detach(&t_ep);
	cr_assert_eq(t_dom.gates_served, 0);
	cr_assert_null(t_rx->hooks.head);
	pmv_gate_close(&t_ep);
}

/*
 * A whole gated request waits for its write's completion longer than a
 * malformed one: reading that completion depends on the target's threads
 * being scheduled (over 100 ms on a loaded host refused a commit as "a
 * malformed request" in a threads run at load 10), so it waits the peer
 * timeout, not FI_PMEMVERBS_BAD_REQUEST_MS.
 */
Test(serve_gate, a_gated_request_waits_longer_than_a_malformed_one)
{
	gate_ep();
	pmv_params.bad_request_ms = 0;
	pmv_params.peer_timeout_ms = 5000;
	put_req(1, KEY, BASE + 100, 64, PMV_REQ_GATED);
	pmv_serve_ep(&t_dom, &t_ep);
	__atomic_add_fetch(&pmv_clock_skew_ms, 1000, __ATOMIC_RELAXED);
	pmv_serve_ep(&t_dom, &t_ep);
	cr_assert_eq(ack_status(1), -1, "a whole gated request was refused "
		     "before the peer timeout while its completion was late");
	stage_remote_write(pmv_gate_data(t_ep.gate_id, 1));
	cr_assert_eq(serve_and_ack(1), 0, "the late completion did not "
		     "serve it");
	pmv_gate_close(&t_ep);
}

/*
 * A gated request whose write's completion never comes (a peer that sent
 * the flag without the remote CQ data) is refused as a slot without a
 * valid request is, after the peer timeout: it does not stall the
 * connection for ever.
 */
Test(serve_gate, a_gated_request_whose_completion_never_comes_is_refused)
{
	gate_ep();
	pmv_params.bad_request_ms = 0;
	pmv_params.peer_timeout_ms = 5000;
	put_req(1, KEY, BASE + 100, 64, PMV_REQ_GATED);
	put_req(2, KEY, BASE + 200, 64, 0);
	pmv_serve_ep(&t_dom, &t_ep);
	__atomic_add_fetch(&pmv_clock_skew_ms, 5000, __ATOMIC_RELAXED);
	cr_assert_eq(serve_and_ack(1), PMV_ERR_BAD_REQUEST, "a gated request "
		     "without its completion was not refused");
	cr_assert_eq(serve_and_ack(2), 0, "the next request was not served");
	cr_assert_eq(t_ep.counters.bytes_persisted, 64);
	pmv_gate_close(&t_ep);
}

/* A gated request to an endpoint that offered no gate is refused. */
Test(serve_gate, a_gated_request_to_an_ungated_endpoint_is_refused)
{
	put_req(1, KEY, BASE + 100, 64, PMV_REQ_GATED);
	cr_assert_eq(serve_and_ack(1), PMV_ERR_BAD_REQUEST);
	cr_assert_eq(t_ep.counters.bytes_persisted, 0);
}
