/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Unit tests: the agent thread's start and its stop at unload, on a real
 * pmemverbs domain over tcp on 127.0.0.1 (the objects fixture).
 */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "pmv_objects.h"
#include "objects_fixture.h"
#include "target/pmv_agent.h"
#include "target/pmv_target.h"

TestSuite(agent, .init = open_fixture, .fini = close_fixture);

/* The threads of this process now (/proc/self/task). */
static int thread_count(void)
{
	DIR *dir = opendir("/proc/self/task");
	struct dirent *entry;
	int n = 0;

	cr_assert_not_null(dir);
	while ((entry = readdir(dir)))
		n += entry->d_name[0] != '.';
	closedir(dir);
	return n;
}

/*
 * A failed agent start (its allocation, then its thread, failed through
 * the allocation fault point) fails the call and leaves the domain naming
 * no agent and no closed fd as the agent's eventfd (which the application's
 * waits write to); the next start works.
 */
Test(agent, a_failed_start_leaves_no_closed_wake_fd)
{
	struct pmv_domain *dom = fixture_domain();
	struct fid_ep *fid;
	struct pmv_ep *ep = open_pmem_ep(&fid);
	int nth, ret;

	for (nth = 1; nth <= 2; nth++) { /* the agent, its thread */
		pmv_fault_reset();
		pmv_params.fault_alloc = nth;
		ret = pmv_agent_add(dom, ep);
		pmv_params.fault_alloc = 0;
		cr_assert_lt(ret, 0, "failure %d: the start failed", nth);
		cr_assert_null(dom->agent, "failure %d: no agent", nth);
		cr_assert(dom->agent_wake_fd < 0 ||
			  fcntl(dom->agent_wake_fd, F_GETFD) >= 0,
			  "failure %d: agent_wake_fd %d names a closed fd", nth,
			  dom->agent_wake_fd);
	}
	cr_assert_eq(pmv_agent_add(dom, ep), 0);
	cr_assert_not_null(dom->agent);
	cr_assert_geq(fcntl(dom->agent_wake_fd, F_GETFD), 0);
	cr_assert_eq(fi_close(&fid->fid), 0);
}

/*
 * FI_PMEMVERBS_AGENT_THREAD=0 over tcp: the endpoint joins the domain's
 * list of target endpoints (pushes and generations walk it), no thread
 * starts and no eventfd is named for wakes; over verbs the thread runs
 * anyway (a request written into the inbox ends no wait).  Stopped, a
 * threadless agent is freed at once (nothing to join).
 */
Test(agent, no_agent_thread_over_tcp_when_the_parameter_is_0)
{
	struct pmv_domain *dom = fixture_domain();
	struct fid_ep *fid;
	struct pmv_ep *ep = open_pmem_ep(&fid);
	int before = thread_count(), saved = pmv_params.agent_thread;
	uint8_t transport = dom->transport;

	pmv_params.agent_thread = 0;
	dom->transport = PMV_TRANSPORT_TCP;
	cr_assert_eq(pmv_agent_add(dom, ep), 0);
	cr_assert_not_null(dom->agent);
	cr_assert_not(dom->agent->threaded);
	cr_assert_eq(LIST_FIRST(&dom->agent->eps), ep, "the endpoint is listed");
	cr_assert_lt(dom->agent_wake_fd, 0, "no eventfd for wakes");
	cr_assert_eq(thread_count(), before, "no thread started");
	pmv_agent_remove(dom, ep);
	pmv_agent_stop(dom);
	cr_assert_null(dom->agent);
	dom->transport = PMV_TRANSPORT_IB;
	cr_assert_eq(pmv_agent_add(dom, ep), 0);
	cr_assert(dom->agent->threaded, "over verbs the thread runs");
	cr_assert_eq(thread_count(), before + 1);
	pmv_agent_remove(dom, ep);
	pmv_agent_stop(dom);
	dom->transport = transport;
	pmv_params.agent_thread = saved;
	cr_assert_eq(fi_close(&fid->fid), 0);
}

/* The provider's cleanup (libfabric unloads the plugin), from a thread:
 * records how many threads the process had when it returned. */
static void *run_cleanup(void *threads_at_return)
{
	pmv_agent_stop_all();
	*(int *) threads_at_return = thread_count();
	return NULL;
}

/*
 * The provider's cleanup stops the agent and joins it, even when the agent
 * is slow to stop: here it is blocked on the domain lock, which the test
 * holds for 1.5 s.  No agent thread may run the plugin's code once the
 * cleanup returned (libfabric then unloads it).
 */
Test(agent, the_providers_cleanup_stops_and_joins_the_agent)
{
	struct pmv_domain *dom = fixture_domain();
	struct fid_ep *fid;
	struct pmv_ep *ep = open_pmem_ep(&fid);
	int with_agent, at_return = 0;
	uint64_t one = 1;
	pthread_t cleanup;

	cr_assert_eq(pmv_agent_add(dom, ep), 0);
	with_agent = thread_count();
	/* woken, the agent's next pass blocks on the domain lock */
	pthread_mutex_lock(&dom->lock);
	cr_assert_eq(write(dom->agent_wake_fd, &one, sizeof(one)), 8);
	sleep_ms(200);
	cr_assert_eq(pthread_create(&cleanup, NULL, run_cleanup, &at_return), 0);
	sleep_ms(1500);
	pthread_mutex_unlock(&dom->lock);
	cr_assert_eq(pthread_join(cleanup, NULL), 0);
	/* the cleanup thread replaced the agent: as many threads as before */
	cr_assert_eq(at_return, with_agent, "the agent thread still ran when "
		     "the provider's cleanup returned (%d threads, %d with "
		     "the agent and without the cleanup's)", at_return,
		     with_agent);
	cr_assert_null(dom->agent);
	cr_assert_eq(fi_close(&fid->fid), 0);
}

/* An endpoint's close run by another thread: fi_close's result, + 1 once
 * it returned (0 while it runs). */
struct closing {
	struct fid_ep *fid;
	int done;
};

static void *close_endpoint(void *arg)
{
	struct closing *c = arg;
	int ret = fi_close(&c->fid->fid);

	__atomic_store_n(&c->done, ret + 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * Two pmem endpoints share one CQ; a read of it holds both to serve them
 * (pmv_hooks_hold_eps, as a counter wait or the agent's pass holds them).
 * One endpoint closes meanwhile from another thread: its close waits for
 * that hold (the target state's reference, struct pmv_tgt), so serving it
 * and letting go of it touch no freed memory; then the close returns 0.
 * Watched: the close has begun (the endpoint left the agent) and has not
 * returned while held, within a generous bound.
 */
Test(agent, a_close_waits_for_a_shared_cq_read_serving_the_endpoint,
     .timeout = 60)
{
	struct fi_cq_attr attr = { .format = FI_CQ_FORMAT_CONTEXT,
				   .wait_obj = FI_WAIT_NONE };
	struct pmv_domain *dom = fixture_domain();
	struct fid_ep *fid[2];
	struct pmv_ep *ep[2], *held[2];
	struct closing c;
	struct fid_cq *cq;
	struct pmv_tgt *tgt;
	pthread_t closer;
	unsigned n, i;

	cr_assert_eq(fi_cq_open(fx.domain, &attr, &cq, NULL), 0);
	for (i = 0; i < 2; i++) {
		ep[i] = open_pmem_ep(&fid[i]);
		cr_assert_eq(fi_ep_bind(fid[i], &cq->fid,
					FI_TRANSMIT | FI_RECV), 0);
		cr_assert_eq(pmv_agent_add(dom, ep[i]), 0);
	}
	n = pmv_hooks_hold_eps(&pmv_cq(cq)->hooks, held, 2);
	cr_assert_eq(n, 2, "the CQ read holds both endpoints");
	tgt = ep[0]->tgt;
	c = (struct closing) { .fid = fid[0] };
	cr_assert_eq(pthread_create(&closer, NULL, close_endpoint, &c), 0);
	for (i = 0; i < 10000 && __atomic_load_n(&tgt->in_agent,
						 __ATOMIC_ACQUIRE); i++)
		sleep_ms(1);
	cr_assert(!__atomic_load_n(&tgt->in_agent, __ATOMIC_ACQUIRE),
		  "the close did not begin");
	for (i = 0; i < 200 && !__atomic_load_n(&c.done, __ATOMIC_ACQUIRE); i++)
		sleep_ms(1);
	cr_assert_eq(__atomic_load_n(&c.done, __ATOMIC_ACQUIRE), 0,
		     "the endpoint's close returned while a CQ read held it");
	for (i = 0; i < n; i++) { /* what the read does with what it held */
		(void) pmv_serve_try(dom, held[i]);
		pmv_tgt_release(held[i]);
	}
	cr_assert_eq(pthread_join(closer, NULL), 0);
	cr_assert_eq(c.done, 1, "fi_close returned %d", c.done - 1);
	cr_assert_eq(fi_close(&fid[1]->fid), 0);
	cr_assert_eq(fi_close(&cq->fid), 0);
}

/* Endpoints sharing the CQ an application reads, in the test below. */
#define SERVED_EPS 64

/* The agent's passes that walked every endpoint so far. */
static uint64_t agent_walks(struct pmv_domain *dom)
{
	return __atomic_load_n(&dom->agent->walks, __ATOMIC_RELAXED);
}

/* Reads cq (nothing to take: the application's progress idiom) every
 * 0.2 ms for ms milliseconds. */
static void read_cq_for(struct fid_cq *cq, long ms)
{
	struct fi_cq_entry entry;

	for (long i = 0; i < ms * 5; i++) {
		(void) fi_cq_read(cq, &entry, 1);
		nanosleep(&(struct timespec) { .tv_nsec = 200000 }, NULL);
	}
}

/*
 * While the application reads the CQ of every endpoint (so serves them
 * itself), the agent naps and, after one walk that saw it, looks only at
 * that CQ, not at each endpoint (a walk of 1024 endpoints after a nap took
 * about 1 ms of the application's core); once the application stops
 * reading, or an endpoint joins, it walks them again (and serves them).
 * Watched through the agent's count of walks.  Seen failing with the
 * remembered lists left out: every pass walked, 9 walks in each 100 ms.
 */
Test(agent, an_agent_whose_application_serves_every_endpoint_walks_none,
     .timeout = 60)
{
	struct fi_cq_attr attr = { .format = FI_CQ_FORMAT_CONTEXT,
				   .wait_obj = FI_WAIT_NONE };
	struct pmv_domain *dom = fixture_domain();
	struct fid_ep *fid[SERVED_EPS + 1];
	struct fid_cq *cq;
	uint64_t before, after, least;
	int i;

	cr_assert_eq(fi_cq_open(fx.domain, &attr, &cq, NULL), 0);
	for (i = 0; i <= SERVED_EPS; i++) {
		open_pmem_ep(&fid[i]);
		cr_assert_eq(fi_ep_bind(fid[i], &cq->fid,
					FI_TRANSMIT | FI_RECV), 0);
		if (i < SERVED_EPS)
			cr_assert_eq(pmv_agent_add(dom, pmv_container_of(
				fid[i], struct pmv_ep, ep_fid)), 0);
	}
	read_cq_for(cq, 100); /* the agent sees the application serve */
	/* a window with at most one walk (napping 16 ms, it walked 6 or more
	 * per window); up to 20, as the test thread may be descheduled past
	 * PMV_SERVE_DEFER_MS, and the agent rightly takes the endpoints (all
	 * of 5 windows did in 1 run of 20 with both CPUs busy) */
	for (i = 0, least = UINT64_MAX; i < 20 && least > 1; i++) {
		before = agent_walks(dom);
		read_cq_for(cq, 100);
		after = agent_walks(dom);
		least = after - before < least ? after - before : least;
	}
	cr_assert_leq(least, 1, "the agent walked its %d endpoints %llu "
		      "times in 100 ms while the application served them",
		      SERVED_EPS, (unsigned long long) least);
	cr_assert_eq(pmv_agent_add(dom, pmv_container_of(
		fid[SERVED_EPS], struct pmv_ep, ep_fid)), 0);
	read_cq_for(cq, 50);
	cr_assert_gt(agent_walks(dom), after, "an endpoint joined and the "
		     "agent did not look at it");
	before = agent_walks(dom);
	sleep_ms(100); /* the application stops reading */
	cr_assert_gt(agent_walks(dom), before, "the application stopped "
		     "reading and the agent did not take its endpoints back");
	for (i = 0; i <= SERVED_EPS; i++)
		cr_assert_eq(fi_close(&fid[i]->fid), 0);
	cr_assert_eq(fi_close(&cq->fid), 0);
}

/* True while gate idx of dom has a mark nobody took. */
static bool gate_marked(struct pmv_domain *dom, unsigned idx)
{
	return __atomic_load_n(&dom->gate_ready[idx / 64], __ATOMIC_SEQ_CST) &
	       (1ull << (idx % 64));
}

/* Wakes the agent n times, 2 ms apart (each wake: a spin of passes). */
static void wake_agent(struct pmv_domain *dom, int n)
{
	for (int i = 0; i < n; i++) {
		pmv_agent_wake(dom->agent);
		sleep_ms(2);
	}
}

/*
 * With every endpoint served on its gate's events and an application that
 * reads nothing, the agent's passes look at no endpoint (a pass over 1024
 * of them took 12 times a commit's time with 16, libfabric 2.1): they
 * serve the marked gates (a mark is taken by the agent, watched on the
 * mark's bit), and an endpoint without a gate, once it joins, is looked at
 * on every pass again.  Seen failing before the agent's plan: 50 walks in
 * 50 passes, and the mark never taken.
 */
Test(agent, passes_look_at_no_gated_endpoint_and_serve_its_marks,
     .timeout = 60)
{
	struct fi_cq_attr data = { .format = FI_CQ_FORMAT_DATA,
				   .wait_obj = FI_WAIT_NONE };
	struct fi_cq_attr ctx = { .format = FI_CQ_FORMAT_CONTEXT,
				  .wait_obj = FI_WAIT_NONE };
	struct pmv_domain *dom = fixture_domain();
	struct fid_ep *fid[SERVED_EPS + 1];
	struct pmv_ep *ep[SERVED_EPS + 1];
	struct fid_cq *cq, *plain_cq;
	uint64_t walks, passes;
	unsigned idx;
	int i;

	cr_assert_eq(fi_cq_open(fx.domain, &data, &cq, NULL), 0);
	cr_assert_eq(fi_cq_open(fx.domain, &ctx, &plain_cq, NULL), 0);
	for (i = 0; i <= SERVED_EPS; i++) {
		ep[i] = open_pmem_ep(&fid[i]);
		cr_assert_eq(fi_ep_bind(fid[i], i < SERVED_EPS ? &cq->fid :
					&plain_cq->fid, FI_TRANSMIT | FI_RECV), 0);
	}
	for (i = 0; i < SERVED_EPS; i++) {
		cr_assert(pmv_gate_open(ep[i]), "endpoint %d got no gate", i);
		cr_assert_eq(pmv_agent_add(dom, ep[i]), 0);
		cr_assert(pmv_gate_serves(ep[i]));
	}
	wake_agent(dom, 5); /* the plan is made */
	walks = agent_walks(dom);
	passes = agent_passes(dom);
	wake_agent(dom, 50);
	cr_assert_geq(agent_passes(dom) - passes, 50, "the agent made %llu "
		      "passes for 50 wakes",
		      (unsigned long long) (agent_passes(dom) - passes));
	cr_assert_eq(agent_walks(dom), walks, "the agent looked at its %d "
		     "gated endpoints one by one in %llu of %llu passes",
		     SERVED_EPS, (unsigned long long) (agent_walks(dom) - walks),
		     (unsigned long long) (agent_passes(dom) - passes));
	idx = ep[7]->gate_id % PMV_GATES;
	pmv_gate_confirm(dom, ep[7]->gate_id, 1);
	cr_assert(gate_marked(dom, idx), "the confirmation marked no gate");
	for (i = 0; i < 1000 && gate_marked(dom, idx); i++)
		wake_agent(dom, 1);
	cr_assert(!gate_marked(dom, idx), "the agent never took a gate's "
		  "mark (its endpoint's requests wait for nobody)");
	cr_assert_eq(pmv_agent_add(dom, ep[SERVED_EPS]), 0);
	wake_agent(dom, 5);
	walks = agent_walks(dom);
	wake_agent(dom, 10);
	cr_assert_geq(agent_walks(dom) - walks, 10, "an endpoint without a "
		      "gate was looked at in %llu passes of 10 wakes",
		      (unsigned long long) (agent_walks(dom) - walks));
	for (i = 0; i <= SERVED_EPS; i++)
		cr_assert_eq(fi_close(&fid[i]->fid), 0);
	cr_assert_eq(fi_close(&cq->fid), 0);
	cr_assert_eq(fi_close(&plain_cq->fid), 0);
}
