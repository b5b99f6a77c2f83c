/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: the target agent thread.
 *
 * One thread per domain that has pmem endpoints.  It serves the commit
 * requests waiting in each endpoint's inbox (pmv_serve.c); the core's
 * progress moves them even when the target application never polls.
 * Idle, it sleeps on the core CQs' wait objects and its eventfd with no
 * timeout (pmv_agent_sleep.c); where it cannot (verbs) or while work is
 * pending, in naps of up to 1 ms.  Agents are listed process-wide so that
 * the provider's cleanup stops and joins every one before libfabric
 * unloads the plugin's code.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "pmv.h"
#include "target/pmv_agent.h"
#include "target/pmv_target.h"

/* Every running agent: libfabric may unload the plugin at exit while
 * domains are still open, and no agent may outlive its code. */
static struct pmv_agent *pmv_agents;
static pthread_mutex_t pmv_agents_lock = PTHREAD_MUTEX_INITIALIZER;

static void pmv_sleep_us(long us)
{
	struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000 };

	nanosleep(&ts, NULL);
}

/* Adds cq to the pass's CQs unless it is NULL or, after a wake by fds,
 * none of its fds woke the agent; progresses it at once if no memory. */
static void pmv_agent_progress_add(struct pmv_agent *agent, struct pmv_cq *cq)
{
	if (!cq || (agent->woken_only && !pmv_agent_cqs_has(&agent->woken, cq)))
		return;
	if (!pmv_agent_cqs_add(&agent->cqs, cq))
		pmv_cq_progress_core(cq);
}

/*
 * Drives the core's progress once per CQ the pass's endpoints (held, so
 * their CQs stay bound) are bound to, however many endpoints share it (a
 * target that never polls still moves data over tcp), except endpoints an
 * application thread waits for; after a wake by fds, only the CQs whose
 * fds woke the agent.  No lock held: an application serving its
 * endpoints from its CQ reads is never kept waiting behind the agent's
 * progress.
 */
static void pmv_agent_progress(struct pmv_agent *agent, size_t neps)
{
	agent->cqs.n = 0;
	for (size_t k = 0; k < neps; k++) {
		struct pmv_ep *ep = agent->snap[k];
		struct pmv_cq *rx = __atomic_load_n(&ep->rx_cq, __ATOMIC_ACQUIRE);
		struct pmv_cq *tx = __atomic_load_n(&ep->tx_cq, __ATOMIC_ACQUIRE);

		if (pmv_agent_cqs_waited(rx, tx))
			continue;
		pmv_agent_progress_add(agent, rx);
		pmv_agent_progress_add(agent, tx);
	}
	for (size_t i = 0; i < agent->cqs.n; i++)
		pmv_cq_progress_core(agent->cqs.cq[i]);
}

/* After the first pass that followed a wake by CQ fds: counts such wakes
 * in a row that served nothing (pmv_agent_sleep.c looks for fds that stay
 * readable after a few); a wake that served resets the bound of such
 * sleeps. */
static void pmv_agent_count_wake(struct pmv_agent *agent, int served)
{
	if (served > 0)
		agent->stale_ms = 0;
	else if (agent->fd_wake)
		agent->idle_wakes++;
	agent->fd_wake = false;
}

/*
 * One pass: drive the core's progress, then serve every endpoint that no
 * other thread is serving and whose application does not serve it itself;
 * no domain lock is held while serving (persist may take long).  By the
 * plan (pmv_agent_plan.c) while it holds: the gated endpoints through
 * their gates' marks, without a look at each.  Returns the requests
 * served, or -1 if the application serves every endpoint.
 */
static int pmv_agent_pass(struct pmv_domain *dom)
{
	struct pmv_agent *agent = dom->agent;
	uint64_t now = pmv_ms_now(), ver;
	size_t n, i, left_to_app;
	int served = 0;

	if (pmv_agent_app_still_serves(dom, now)) {
		pmv_agent_count_wake(agent, 0);
		return -1;
	}
	__atomic_add_fetch(&agent->passes, 1, __ATOMIC_RELAXED);
	if (agent->woken_only && !agent->slept)
		pmv_agent_look_again(agent);
	agent->slept = false;
	served = pmv_agent_plan_pass(dom, now);
	if (served >= 0) {
		pmv_agent_count_wake(agent, served);
		return served;
	}
	served = 0;
	pmv_lock(&dom->lock, PMV_LOCK_DOMAIN);
	ver = __atomic_load_n(&dom->agent_eps_ver, __ATOMIC_SEQ_CST);
	n = pmv_agent_hold_eps(agent);
	pmv_unlock(&dom->lock, PMV_LOCK_DOMAIN);
	left_to_app = pmv_agent_left_to_app(agent, n, now, ver);
	if (left_to_app < n)
		pmv_agent_progress(agent, n);
	for (i = 0; i < n; i++)
		if (!pmv_serve_app_list(agent->snap[i], now))
			served += pmv_serve_try(dom, agent->snap[i]);
	if (!agent->plan.made || agent->plan.ver != ver)
		pmv_agent_plan_make(agent, n, ver);
	pmv_agent_drop_eps(agent, n);
	pmv_agent_count_wake(agent, served);
	return n && left_to_app == n ? -1 : served;
}

/* CPU pauses between two passes of a spinning agent (a few microseconds). */
#define PMV_AGENT_SPIN_PAUSES 200

/*
 * Between two passes while spinning: CPU pauses, not sched_yield.  A
 * yielding agent made every other commit to a passive target wait about
 * 50 us (the application thread woken by the request's bytes, on the same
 * core, ran late), and a commit took 65-70 us against a read's 16; with
 * pauses the woken thread preempts the agent at once: 19-21 us.
 */
static void pmv_agent_spin_pause(void)
{
	for (int i = 0; i < PMV_AGENT_SPIN_PAUSES; i++) {
#if defined(__x86_64__) || defined(__i386__)
		__builtin_ia32_pause();
#elif defined(__aarch64__)
		__asm__ __volatile__("yield");
#else
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
#endif
	}
}

/*
 * An idle agent's rest: a sleep on the core CQs' wait objects and its
 * eventfd, with no timeout (pmv_agent_sleep), so that the bytes of a
 * request end it.  Returns true if they did and no application thread
 * waits in fi_cq_sread (it would serve them itself): a request is coming,
 * and the agent spins again, progressing the core (spinning beside a
 * waiting thread on its core made every read of that target 10 us
 * slower).  Work found pending instead of sleeping (a request that landed
 * while the agent woke, or the core's) gets one pass at once (1 s idle
 * agent commits took 1.4 ms before this), then naps of 10 us doubling to
 * 1 ms while it stays pending, as where the agent cannot sleep on fds
 * (verbs).  *retried: that pass was had.
 */
static bool pmv_agent_rest(struct pmv_domain *dom, long *nap, bool *retried)
{
	enum pmv_agent_rest rest = pmv_agent_sleep(dom);

	if (rest == PMV_REST_PENDING && !*retried) {
		*retried = true;
		return false;
	}
	*retried = false;
	if (rest == PMV_REST_PENDING || rest == PMV_REST_CANNOT) {
		*nap = *nap ? (*nap < 1000 ? *nap * 2 : 1000) : 10;
		pmv_sleep_us(*nap);
		return false;
	}
	*nap = 0;
	return rest == PMV_REST_WOKEN && !dom->agent->app_waits;
}

/*
 * The agent's loop: spin while requests keep coming (or their bytes just
 * woke it), then sleep (pmv_agent_rest), so that an idle target costs no
 * CPU however many connections it has; while the application serves every endpoint,
 * pmv_agent_app_nap.
 */
static void *pmv_agent_main(void *arg)
{
	struct pmv_domain *dom = arg;
	uint64_t last_work = pmv_us_now();
	bool retried = false;
	long nap = 0, app_nap = 0;
	int served;

	for (;;) {
		if (__atomic_load_n(&dom->agent->stop, __ATOMIC_ACQUIRE))
			return NULL;
		served = pmv_agent_pass(dom);
		if (served < 0) { /* the application serves every endpoint */
			pmv_agent_app_nap(dom->agent, &app_nap);
			continue;
		}
		app_nap = 0;
		if (served) {
			last_work = pmv_us_now();
			nap = 0;
			retried = false;
		} else if (pmv_us_now() - last_work > (uint64_t) pmv_params.agent_spin_us) {
			if (pmv_agent_rest(dom, &nap, &retried)) {
				last_work = pmv_us_now();
				nap = 0;
			}
		} else {
			pmv_agent_spin_pause();
		}
	}
}

/*
 * Whether dom's target endpoints get an agent thread: always over verbs
 * (a request written into the inbox makes no fd readable, so no wait of
 * the application's ends on it); over tcp unless FI_PMEMVERBS_AGENT_THREAD
 * is 0, where the application's reads and waits serve them (its waits
 * sleep on the core CQs' fds, which the requests' bytes make readable).
 */
static bool pmv_agent_threaded(const struct pmv_domain *dom)
{
	return pmv_params.agent_thread || dom->transport != PMV_TRANSPORT_TCP;
}

/* Starts the agent's thread, its eventfd made, and lists it among the
 * running agents (domain lock held). */
static int pmv_agent_start_thread(struct pmv_domain *dom,
				  struct pmv_agent *agent)
{
	/* a thread's resources: the allocation fault point covers them */
	int ret = pmv_fault(PMV_FAULT_ALLOC) ? EAGAIN :
		  pthread_create(&agent->thread, NULL, pmv_agent_main, dom);

	if (ret) {
		PMV_WARN(FI_LOG_DOMAIN, "could not create the agent thread: "
			 "%s; raise the process's thread limit or free memory\n",
			 strerror(ret));
		return -FI_EAGAIN;
	}
	agent->threaded = true;
	(void) pthread_setname_np(agent->thread, "pmv_agent");
	pmv_lock(&pmv_agents_lock, PMV_LOCK_AGENTS);
	agent->next = pmv_agents;
	pmv_agents = agent;
	pmv_unlock(&pmv_agents_lock, PMV_LOCK_AGENTS);
	return 0;
}

/* Frees a stopped agent (its thread, if it had one, joined) or one whose
 * thread did not start, and leaves the domain naming neither it nor its fd. */
static void pmv_agent_free(struct pmv_agent *agent)
{
	struct pmv_domain *dom = agent->domain;

	dom->agent = NULL;
	dom->agent_wake_fd = -1;
	if (agent->wake_fd >= 0)
		close(agent->wake_fd);
	pmv_agent_sleep_free(agent);
	pmv_agent_plan_free(&agent->plan);
	free(agent->snap);
	free(agent->snap_new);
	free(agent);
}

/*
 * Makes the domain's agent: the list of its target endpoints (which
 * profile pushes and generations also walk) and, unless the application
 * progresses them alone (pmv_agent_threaded), the thread that serves
 * them; domain lock held.
 */
static int pmv_agent_start(struct pmv_domain *dom)
{
	struct pmv_agent *agent = pmv_fault(PMV_FAULT_ALLOC) ? NULL :
				  calloc(1, sizeof(*agent));
	int ret;

	if (!agent)
		return -FI_ENOMEM;
	LIST_INIT(&agent->eps);
	agent->domain = dom;
	agent->wake_fd = -1;
	pmv_serve_init();
	if (!pmv_agent_threaded(dom)) {
		dom->agent = agent; /* dom->agent_wake_fd stays -1: no wakes */
		return 0;
	}
	agent->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (agent->wake_fd < 0) {
		free(agent);
		return -FI_ENOMEM;
	}
	dom->agent = agent;
	dom->agent_wake_fd = agent->wake_fd;
	ret = pmv_agent_start_thread(dom, agent);
	if (ret) /* dom->agent_wake_fd then names no fd, not the closed one */
		pmv_agent_free(agent);
	return ret;
}

/*
 * Room in the pass snapshot for one more endpoint: a larger array, which
 * the agent thread takes at its next pass; domain lock held.
 */
static int pmv_agent_grow_snap(struct pmv_agent *agent)
{
	size_t cap = agent->snap_cap ? agent->snap_cap * 2 : 16;
	struct pmv_ep **snap;

	if (agent->neps < agent->snap_cap)
		return 0;
	snap = pmv_fault(PMV_FAULT_ALLOC) ? NULL :
	       malloc(cap * sizeof(*snap));
	if (!snap)
		return -FI_ENOMEM;
	free(agent->snap_new); /* never taken: the agent had no pass since */
	agent->snap_new = snap;
	agent->snap_cap = cap;
	return 0;
}

/* Links ep into the agent's list; domain lock held. */
static int pmv_agent_link(struct pmv_domain *dom, struct pmv_ep *ep)
{
	struct pmv_tgt *tgt = ep->tgt;
	int ret = dom->agent ? 0 : pmv_agent_start(dom);

	if (ret || tgt->in_agent || (ret = pmv_agent_grow_snap(dom->agent)))
		return ret;
	tgt->agent_seq = 1;
	tgt->agent_acked = 0;
	LIST_INSERT_HEAD(&dom->agent->eps, ep, tgt->agent_link);
	dom->agent->neps++;
	tgt->in_agent = true;
	/* read through the plain path before (no notes): asked afresh */
	if (ep->rx_cq)
		pmv_cq_core_used(ep->rx_cq);
	if (ep->tx_cq)
		pmv_cq_core_used(ep->tx_cq);
	pmv_agent_eps_changed(dom);
	__atomic_store_n(ep->inbox.gen_word, dom->mr_gen, __ATOMIC_RELEASE);
	pmv_agent_wake(dom->agent); /* watch its CQs too */
	return 0;
}

int pmv_agent_add(struct pmv_domain *dom, struct pmv_ep *ep)
{
	int ret;

	pmv_lock(&dom->lock, PMV_LOCK_DOMAIN);
	ret = pmv_agent_link(dom, ep);
	pmv_unlock(&dom->lock, PMV_LOCK_DOMAIN);
	/* outside the domain lock: a hook runs under the CQ's hook lock */
	if (!ret)
		pmv_serve_attach(ep);
	return ret;
}

/*
 * A region of the domain closed: its key may come back naming memory of
 * another profile.  The new generation goes to every endpoint's inbox,
 * where the peers' read-flushes read it; dom->lock held.
 */
void pmv_domain_publish_gen(struct pmv_domain *dom)
{
	struct pmv_ep *ep;

	__atomic_store_n(&dom->mr_gen, dom->mr_gen + 1, __ATOMIC_RELEASE);
	if (!dom->agent)
		return;
	LIST_FOREACH(ep, &dom->agent->eps, tgt->agent_link)
		__atomic_store_n(ep->inbox.gen_word, dom->mr_gen,
				 __ATOMIC_RELEASE);
}

/*
 * Unlinks ep, then waits (no lock held) until neither an agent pass nor
 * an application's CQ read is serving it.
 */
void pmv_agent_remove(struct pmv_domain *dom, struct pmv_ep *ep)
{
	struct pmv_tgt *tgt = ep->tgt;

	pmv_lock(&dom->lock, PMV_LOCK_DOMAIN);
	if (tgt->in_agent && !dom->agent) { /* stopped at unload */
		tgt->in_agent = false;
	} else if (tgt->in_agent) {
		LIST_REMOVE(ep, tgt->agent_link);
		tgt->in_agent = false;
		dom->agent->neps--;
		pmv_agent_eps_changed(dom);
	}
	pmv_unlock(&dom->lock, PMV_LOCK_DOMAIN);
	pmv_serve_detach(ep);
	/* every pass holding ep lets go: only the endpoint's reference left */
	while (__atomic_load_n(&tgt->refs, __ATOMIC_ACQUIRE) > 1)
		sched_yield();
	pmv_lock(&tgt->serve_lock, PMV_LOCK_SERVE);
	pmv_unlock(&tgt->serve_lock, PMV_LOCK_SERVE);
}

/*
 * The core endpoint did not close, so it is still connected: the agent
 * serves it again, from the request where it stopped (pmv_agent_add
 * starts a new connection's count; the serve lock keeps the agent from
 * serving before the count is put back).
 */
void pmv_agent_serve_again(struct pmv_ep *ep, bool in_agent)
{
	struct pmv_tgt *tgt = ep->tgt;
	uint64_t seq = tgt->agent_seq, acked = tgt->agent_acked;
	int ret;

	if (!in_agent)
		return;
	pmv_lock(&tgt->serve_lock, PMV_LOCK_SERVE);
	ret = pmv_agent_add(ep->domain, ep);
	__atomic_store_n(&tgt->agent_seq, seq, __ATOMIC_RELAXED);
	tgt->agent_acked = acked;
	pmv_unlock(&tgt->serve_lock, PMV_LOCK_SERVE);
	if (ret)
		PMV_WARN(FI_LOG_EP_CTRL, "fi_close failed and the endpoint "
			 "stays open, but its commit agent could not take it "
			 "back: %s; its peer's commits fail. Close it again\n",
			 fi_strerror(-ret));
}

/* Takes an agent off the list of running agents; false if not on it. */
static bool pmv_agent_unlist(struct pmv_agent *agent)
{
	struct pmv_agent **pp;
	bool found = false;

	pmv_lock(&pmv_agents_lock, PMV_LOCK_AGENTS);
	for (pp = &pmv_agents; *pp; pp = &(*pp)->next) {
		if (*pp == agent) {
			*pp = agent->next;
			found = true;
			break;
		}
	}
	pmv_unlock(&pmv_agents_lock, PMV_LOCK_AGENTS);
	return found;
}

/*
 * Stops an agent taken off the list of running agents and joins it: its
 * sleeps end on its eventfd, its naps within 1 ms, and it takes no lock
 * that a thread stopping it holds; then frees it.
 */
static void pmv_agent_halt(struct pmv_agent *agent)
{
	__atomic_store_n(&agent->stop, true, __ATOMIC_RELEASE);
	pmv_agent_wake(agent);
	pthread_join(agent->thread, NULL);
	pmv_agent_free(agent);
}

void pmv_agent_stop(struct pmv_domain *dom)
{
	if (dom->agent && !dom->agent->threaded)
		pmv_agent_free(dom->agent);
	else if (dom->agent && pmv_agent_unlist(dom->agent))
		pmv_agent_halt(dom->agent);
}

/* Takes the first running agent off the list; NULL if none runs. */
static struct pmv_agent *pmv_agent_unlist_first(void)
{
	struct pmv_agent *agent;

	pmv_lock(&pmv_agents_lock, PMV_LOCK_AGENTS);
	agent = pmv_agents;
	if (agent)
		pmv_agents = agent->next;
	pmv_unlock(&pmv_agents_lock, PMV_LOCK_AGENTS);
	return agent;
}

/* libfabric unloads the plugin (the provider's cleanup): every agent is
 * stopped and joined before its code goes. */
void pmv_agent_stop_all(void)
{
	struct pmv_agent *agent;

	while ((agent = pmv_agent_unlist_first()))
		pmv_agent_halt(agent);
}
