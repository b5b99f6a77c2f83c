/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Unit tests: serving from the application's counter, EQ and CQ waits
 * (target/pmv_serve_hooks.c, pmv_hooks.c) over the fake core of
 * serve_fixture.h: a target that polls only a counter or its EQ acks
 * commits with no agent thread, one about to sleep in their wait hands
 * its endpoints back, and a counter wait on its endpoint's CQ fd keeps
 * serving it and gives back the signal of a thread armed on that CQ.
 */
#include <sys/eventfd.h>
#include <unistd.h>

#include "serve_fixture.h"

TestSuite(serve_wait, .init = serve_setup, .fini = serve_teardown);


static struct fid_cntr *g_cntr;
static struct fid_eq *g_eq;
static int g_wake_fd;

/* After the suite's serve_setup: the endpoint's counter and EQ, attached as
 * when it connects. */
static void setup_bound(void)
{
	struct fi_cntr_attr cntr_attr = { .wait_obj = FI_WAIT_UNSPEC };
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_UNSPEC };

	t_dom.core = &t_core_dom;
	g_wake_fd = eventfd(0, EFD_NONBLOCK);
	cr_assert_geq(g_wake_fd, 0);
	t_dom.agent_wake_fd = g_wake_fd;
	cr_assert_eq(pmv_cntr_open(&t_dom.domain_fid, &cntr_attr, &g_cntr,
				   NULL), 0);
	cr_assert_eq(pmv_eq_open(&t_fab.fabric_fid, &eq_attr, &g_eq, NULL), 0);
	t_ep.cntr[1] = pmv_container_of(g_cntr, struct pmv_cntr, cntr_fid);
	t_ep.eq = pmv_container_of(g_eq, struct pmv_eq, eq_fid);
	pmv_serve_attach(&t_ep);
}

static void teardown_bound(void)
{
	pmv_serve_detach(&t_ep);
	cr_assert_eq(fi_close(&g_cntr->fid), 0);
	cr_assert_eq(fi_close(&g_eq->fid), 0);
	close(g_wake_fd);
}

/* Wake-ups of the agent written to its eventfd since the last call. */
static uint64_t agent_wakes(void)
{
	uint64_t n = 0;

	return read(g_wake_fd, &n, sizeof(n)) == sizeof(n) ? n : 0;
}

Test(serve_wait, polling_a_counter_serves_and_acks_a_request,
     .init = setup_bound, .fini = teardown_bound)
{
	put_req(1, KEY, BASE + 64, 64, 0);
	cr_assert_eq(fi_cntr_read(g_cntr), 7);
	cr_assert_eq(ack_status(1), 0, "fi_cntr_read did not serve the request");
	cr_assert_neq(t_ep.cntr[1]->hooks.app_ms, 0,
		      "the agent would not leave a served endpoint alone");
	put_req(2, KEY, BASE, 64, 0);
	cr_assert_eq(fi_cntr_readerr(g_cntr), 7);
	cr_assert_eq(ack_status(2), 0, "fi_cntr_readerr did not serve");
}

/*
 * A counter bound for FI_RECV and FI_REMOTE_WRITE: the read that serves an
 * FI_IMMED commit returns it counted (it was counted only in the next).
 */
Test(serve_wait, a_counter_read_counts_the_fi_immed_commit_it_served,
     .init = setup_bound, .fini = teardown_bound)
{
	t_ep.rma_cntr[PMV_CNTR_REMOTE_WRITE] = t_ep.cntr[1];
	put_req(1, KEY, BASE, 64, PMV_REQ_IMMED);
	cr_assert_eq(fi_cntr_read(g_cntr), 8, "the read that served an "
		     "FI_IMMED commit did not count it");
	cr_assert_eq(ack_status(1), 0);
	put_req(2, KEY, BASE + 64, 64, PMV_REQ_IMMED);
	cr_assert_eq(fi_cntr_readerr(g_cntr), 9, "fi_cntr_readerr's serving "
		     "was counted after its read");
	cr_assert_eq(ack_status(2), 0);
	t_ep.rma_cntr[PMV_CNTR_REMOTE_WRITE] = NULL;
}

/*
 * The agent leaves an endpoint to the application only while it polls:
 * reads in two distinct milliseconds within PMV_SERVE_DEFER_MS of each
 * other.  One read now and then (a target that reads its CQ every 200 ms)
 * leaves it to the agent, which napped after such a read while a commit
 * waited (a p99 of 24 to 34 read round trips, 2 ms idle).
 */
Test(serve_wait, one_read_now_and_then_leaves_the_endpoint_to_the_agent,
     .init = setup_bound, .fini = teardown_bound)
{
	struct pmv_hooks *reads = &t_ep.cntr[1]->hooks;

	reads->app_prev_ms = 0;
	reads->app_ms = pmv_ms_now() - 200; /* its previous read */
	(void) fi_cntr_read(g_cntr);
	cr_assert_null(pmv_serve_app_list(&t_ep, pmv_ms_now()),
		       "one read after 200 ms made the agent leave the "
		       "endpoint");
	reads->app_prev_ms = 1000;
	reads->app_ms = 1200;
	cr_assert_null(pmv_serve_app_list(&t_ep, 1201));
	reads->app_prev_ms = 1199;
	cr_assert_not_null(pmv_serve_app_list(&t_ep, 1201),
			   "an application that polls was not left to serve");
	cr_assert_null(pmv_serve_app_list(&t_ep, 1200 + PMV_SERVE_DEFER_MS),
		       "the application serves past PMV_SERVE_DEFER_MS");
}

Test(serve_wait, polling_an_eq_serves_and_acks_a_request,
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
Test(serve_wait, a_counter_or_eq_wait_serves_then_hands_the_endpoint_to_the_agent,
     .init = setup_bound, .fini = teardown_bound)
{
	uint32_t event;
	char buf[64];

	(void) fi_cntr_read(g_cntr);
	(void) agent_wakes();
	put_req(1, KEY, BASE + 64, 64, 0);
	cr_assert_eq(fi_cntr_wait(g_cntr, 8, 10), -FI_ETIMEDOUT);
	cr_assert_eq(t_core_waits, 1);
	cr_assert_eq(ack_status(1), 0, "fi_cntr_wait did not serve first");
	cr_assert_eq(t_ep.cntr[1]->hooks.app_ms, 0,
		     "the agent would leave the endpoint to a sleeping thread");
	cr_assert_eq(agent_wakes(), 1, "the napping agent was not woken");
	(void) fi_eq_read(g_eq, &event, buf, sizeof(buf), 0);
	put_req(2, KEY, BASE, 64, 0);
	cr_assert_eq(fi_eq_sread(g_eq, &event, buf, sizeof(buf), 10, 0),
		     -FI_EAGAIN);
	cr_assert_eq(ack_status(2), 0, "fi_eq_sread did not serve first");
	cr_assert_eq(t_ep.eq->hooks.app_ms, 0);
	cr_assert_eq(agent_wakes(), 1);
}

/* Each object runs an endpoint's hook once, however it is bound. */
Test(serve_wait, an_object_bound_twice_serves_through_one_hook,
     .init = setup_bound, .fini = teardown_bound)
{
	struct pmv_cntr *cntr = t_ep.cntr[1];
	int hooks = 0;

	t_ep.cntr[0] = cntr; /* FI_SEND | FI_RECV */
	t_ep.tx_cq = t_rx;   /* FI_TRANSMIT | FI_RECV */
	pmv_serve_attach(&t_ep);
	for (struct pmv_hook *h = cntr->hooks.head; h; h = h->next)
		hooks++;
	cr_assert_eq(hooks, 1);
	hooks = 0;
	/* without a gate: the CQ's reads look into its inbox, and so do the
	 * reads of the domain's CQs without endpoints (its served hook) */
	for (struct pmv_hook *h = t_rx->hooks.head; h; h = h->next)
		hooks++;
	cr_assert_eq(hooks, 1);
	cr_assert_null(t_rx->hooks.ev_head);
	cr_assert_eq(t_dom.served.serving, 1);
	pmv_serve_detach(&t_ep);
	cr_assert_null(cntr->hooks.head);
	cr_assert_null(t_rx->hooks.head);
	cr_assert_null(t_rx->hooks.ev_head);
	cr_assert_null(t_dom.served.head);
	cr_assert_null(t_ep.eq->hooks.head);
}

/*
 * A read of a CQ of the domain that serves no endpoint of its own looks
 * into the inbox of an endpoint without a gate (pmv_hooks_run_domain runs
 * the domain's served list), as libfabric's tcp provider progresses the
 * whole domain from each of its CQs: a thread that reads only another CQ
 * of the domain (its initiator's transmit CQ, say) serves a request that
 * came to this endpoint.
 */
Test(serve_wait, a_read_of_another_cq_of_the_domain_serves_an_endpoint_without_a_gate)
{
	struct pmv_hooks other;

	pmv_serve_attach(&t_ep);
	pmv_hooks_init(&other, &t_dom);
	put_req(1, KEY, BASE + 64, 64, 0);
	pmv_hooks_run(&other);
	cr_assert_eq(ack_status(1), 0, "a read of the domain's other CQ did "
		     "not serve the request of an endpoint without a gate");
	pmv_serve_detach(&t_ep);
	cr_assert_null(t_dom.served.head);
	pmv_hooks_fini(&other);
}

static void serve_nothing(void *arg)
{
	(void) arg;
}

/*
 * A read of a CQ that serves endpoints of its own (one per connection, as
 * verbs applications often have) looks into theirs alone, not into every
 * inbox of the domain: each read of one connection's CQ looked into all
 * 1024 (66 us against 0.5 with the connection's own, docs/performance.md).
 */
Test(serve_wait, a_read_of_a_cq_with_endpoints_of_its_own_looks_into_no_other_inbox)
{
	struct pmv_hooks own;
	struct pmv_ep other_ep = { .domain = &t_dom };
	struct pmv_hook other_hook = { .progress = serve_nothing,
				       .arg = &other_ep, .ep = &other_ep };

	pmv_serve_attach(&t_ep);
	pmv_hooks_init(&own, &t_dom);
	pmv_hooks_add(&own, &other_hook); /* another connection's, served here */
	put_req(1, KEY, BASE + 64, 64, 0);
	pmv_hooks_run(&own);
	cr_assert_eq(ack_status(1), -1, "a read of another connection's CQ "
		     "looked into this endpoint's inbox");
	pmv_hooks_run(&t_rx->hooks);
	cr_assert_eq(ack_status(1), 0, "a read of the endpoint's own CQ did "
		     "not serve its request");
	pmv_hooks_remove(&own, &other_hook);
	pmv_serve_detach(&t_ep);
	pmv_hooks_fini(&own);
}

/*
 * A thread in fi_cq_sread whose waits end on bytes (a poll on the
 * receive CQ's fds) serves the endpoint receiving there: the agent leaves
 * it to that thread while the wait lasts, without a nap's timeout, so
 * the wait's end must wake the agent (else a request that comes after
 * it waits for the next change).  Only the agent's asking makes the end
 * wake it: a thread that waits and returns in a loop costs no write.
 */
Test(serve_wait, a_wait_on_bytes_serves_until_its_end_wakes_the_agent,
     .init = setup_bound, .fini = teardown_bound)
{
	struct pmv_hooks *rx = &t_rx->hooks;

	(void) agent_wakes();
	cr_assert_null(pmv_serve_wait_list(&t_ep));
	pmv_hooks_byte_wait_begin(rx);
	cr_assert_null(pmv_serve_app_list(&t_ep, pmv_ms_now()),
		       "a wait counted as the application's reads");
	cr_assert_eq(pmv_serve_wait_list(&t_ep), rx, "a thread waiting on "
		     "the receive CQ's bytes was not left to serve the endpoint");
	pmv_hooks_byte_wait_end(rx, &t_dom);
	cr_assert_eq(agent_wakes(), 1, "the end of the wait the agent relied "
		     "on did not wake it");
	cr_assert_null(pmv_serve_wait_list(&t_ep),
		       "the endpoint stayed the application's after its wait");
	pmv_hooks_byte_wait_begin(rx);
	pmv_hooks_byte_wait_end(rx, &t_dom);
	cr_assert_eq(agent_wakes(), 0, "a wait the agent did not rely on "
		     "woke it");
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
 * endpoint (the counter's app_ms cleared) while the wait serves it. */
static int fake_trywait(struct fid_fabric *fabric, struct fid **fids,
			int count)
{
	(void) fabric; (void) fids; (void) count;
	if (g_trywaits++ == 1)
		put_req(2, KEY, BASE, 64, 0);
	/* handed: the wait cleared the mark of the application's serving
	 * (not its age: a loaded machine may stall this thread 2 ms) */
	if (g_trywaits > 1 &&
	    !__atomic_load_n(&t_ep.cntr[1]->hooks.app_ms, __ATOMIC_RELAXED))
		g_handed++;
	return FI_SUCCESS;
}

static struct fid_cq g_core_rx = { .fid.ops = &t_fake_fi_ops };

/* The counter's endpoint over a tcp fabric whose fi_trywait is trywait;
 * its receive CQ's core is core_cq, which waits on fd. */
static void wait_on_rx(struct fid_cq *core_cq, int fd,
		       int (*trywait)(struct fid_fabric *, struct fid **, int))
{
	cr_assert_geq(fd, 0);
	t_core_fab_ops.trywait = trywait;
	t_dom.fabric = &t_fab;
	t_dom.transport = PMV_TRANSPORT_TCP;
	t_rx->core = core_cq;
	t_rx->wait_fd = fd;
}

/* Undoes wait_on_rx, closing fd. */
static void wait_on_rx_end(int fd)
{
	t_rx->wait_fd = -1;
	t_dom.transport = 0;
	t_core_fab_ops.trywait = NULL;
	close(fd);
}

Test(serve_wait, a_counter_wait_on_its_endpoints_cq_keeps_serving_it,
     .init = setup_bound, .fini = teardown_bound)
{
	int fd = eventfd(1, EFD_NONBLOCK); /* readable: bytes keep coming */

	wait_on_rx(&g_core_rx, fd, fake_trywait);
	(void) agent_wakes();
	put_req(1, KEY, BASE + 64, 64, 0);
	/* 300 ms: room for three sleeps on a loaded machine (30 ms gave
	 * "the wait slept 2 times" at load 8 on 2 cores) */
	cr_assert_eq(fi_cntr_wait(g_cntr, 8, 300), -FI_ETIMEDOUT);
	cr_assert_eq(t_core_waits, 0, "the wait fell back to the core's");
	cr_assert_gt(g_trywaits, 2, "the wait slept %d times", g_trywaits);
	cr_assert_eq(ack_status(1), 0, "the wait did not serve first");
	cr_assert_eq(ack_status(2), 0, "a request that came in the wait "
		     "was not served");
	cr_assert_eq(g_handed, 0, "the endpoint was the agent's in %d of %d "
		     "sleeps of a wait that served it", g_handed, g_trywaits - 1);
	cr_assert_eq(agent_wakes(), 0, "the agent was woken to serve it");
	wait_on_rx_end(fd);
}

/*
 * A core CQ whose signal is an eventfd (g_signal_fd), as the tcp core's
 * util wait object: fi_cq_signal makes it readable, the fake fabric's
 * fi_trywait (drain_trywait) resets it.
 */
static int g_signal_fd = -1;

static int signal_core_cq(struct fid_cq *cq)
{
	(void) cq;
	return eventfd_write(g_signal_fd, 1) ? -FI_EIO : 0;
}

static int drain_trywait(struct fid_fabric *fabric, struct fid **fids,
			 int count)
{
	eventfd_t n;

	(void) fabric; (void) fids; (void) count;
	(void) eventfd_read(g_signal_fd, &n);
	return FI_SUCCESS;
}

static struct fi_ops_cq g_signal_cq_ops = { .size = sizeof(struct fi_ops_cq),
					    .signal = signal_core_cq };
static struct fid_cq g_signal_rx = { .fid.ops = &t_fake_fi_ops,
				     .ops = &g_signal_cq_ops };

/*
 * An application thread epolls the receive CQ's fd (fi_trywait said yes
 * to it: app_armed) for an entry pmemverbs queued there (an FI_IMMED
 * completion) while another thread waits on the endpoint's counter.  The
 * counter wait's fi_trywait of the same core CQ before each sleep resets
 * the core's signal, as util's does: the entry's wake must be given back,
 * else the epolling thread sleeps on to its timeout.
 */
Test(serve_wait, a_counter_waits_trywait_gives_back_an_armed_readers_signal,
     .init = setup_bound, .fini = teardown_bound, .timeout = 20)
{
	struct fi_cq_err_entry e = { .flags = FI_RMA | FI_REMOTE_WRITE };
	struct pollfd p;

	g_signal_fd = eventfd(0, EFD_NONBLOCK);
	wait_on_rx(&g_signal_rx, g_signal_fd, drain_trywait);
	__atomic_store_n(&t_rx->app_armed, true, __ATOMIC_SEQ_CST);
	cr_assert_eq(pmv_cq_reserve(t_rx), 0);
	pmv_cq_push(t_rx, &e, false);
	cr_assert_eq(fi_cq_signal(t_rx->core), 0); /* as pmv_agent_immed */
	cr_assert_eq(fi_cntr_wait(g_cntr, 8, 50), -FI_ETIMEDOUT);
	p = (struct pollfd) { .fd = g_signal_fd, .events = POLLIN };
	cr_assert_eq(poll(&p, 1, 0), 1, "the counter wait's fi_trywait took "
		     "the signal of an entry queued for a thread armed on the "
		     "CQ's fd");
	wait_on_rx_end(g_signal_fd);
}
