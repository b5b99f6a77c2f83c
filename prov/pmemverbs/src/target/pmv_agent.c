/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: the target agent thread.
 *
 * One thread per domain that has pmem endpoints.  It serves the commit
 * requests waiting in each endpoint's inbox (pmv_serve.c); the core's
 * progress moves them even when the target application never polls.
 * Idle, it sleeps: on the core CQs' fds where the core gives them (tcp
 * makes them readable when bytes arrive for a bound endpoint) and on an
 * eventfd (an endpoint joined, or stop), else in naps of up to 1 ms.
 * Agents are listed process-wide so that none outlives the plugin's code
 * when libfabric unloads it.
 */
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "pmv.h"
#include "target/pmv_target.h"

struct pmv_agent {
	pthread_t thread;
	bool stop;
	struct pmv_ep *eps; /* under domain->lock */
	struct pmv_domain *domain;
	struct pmv_agent *next; /* every running agent, for unloading */
	int wake_fd;            /* eventfd: an endpoint joined, or stop */
	struct pmv_ep **snap;   /* a pass's endpoints, held; the agent
				 * thread's alone, read outside the lock */
	size_t snap_len;        /* room in snap */
	struct pmv_ep **snap_new; /* a larger array for it (domain lock) */
	size_t neps, snap_cap;  /* endpoints; room in the larger array */
	bool app_waits;         /* at its last sleep, an application thread
				 * waited in a CQ of an endpoint (fi_cq_sread) */
};

/* Every running agent: libfabric may unload the plugin at exit while
 * domains are still open, and no agent may outlive its code. */
static struct pmv_agent *pmv_agents;
static pthread_mutex_t pmv_agents_lock = PTHREAD_MUTEX_INITIALIZER;

/* Distinct CQs the agent tracks per pass; past it, it neither dedupes
 * their progress nor sleeps on their fds. */
#define PMV_AGENT_CQS 64

/* Most fds the agent sleeps on (CQ fds, sockets of list-waiting CQs). */
#define PMV_AGENT_FDS 4096

/* Longest sleep on fds, in ms (an eventfd ends it sooner). */
#define PMV_AGENT_SLEEP_MS 1000

static void pmv_sleep_us(long us)
{
	struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000 };

	nanosleep(&ts, NULL);
}

/* Adds ep's CQs to set (n of them so far) unless there; false if full. */
static bool pmv_agent_add_cqs(const struct pmv_ep *ep, struct pmv_cq **set,
			      unsigned *n)
{
	struct pmv_cq *cq[2] = {
		__atomic_load_n(&ep->rx_cq, __ATOMIC_ACQUIRE),
		__atomic_load_n(&ep->tx_cq, __ATOMIC_ACQUIRE),
	};
	unsigned i;

	for (int k = 0; k < 2; k++) {
		for (i = 0; i < *n && cq[k] && set[i] != cq[k]; i++)
			;
		if (!cq[k] || i < *n)
			continue;
		if (*n == PMV_AGENT_CQS)
			return false;
		set[(*n)++] = cq[k];
	}
	return true;
}

/*
 * The distinct CQs the agent's endpoints are bound to, into set; returns
 * how many, or PMV_AGENT_CQS + 1 if there are more; domain lock held.
 */
static unsigned pmv_agent_cqs(struct pmv_agent *agent, struct pmv_cq **set)
{
	unsigned n = 0;

	for (struct pmv_ep *ep = agent->eps; ep; ep = ep->agent_next)
		if (!pmv_agent_add_cqs(ep, set, &n))
			return PMV_AGENT_CQS + 1;
	return n;
}

/* Whether an application thread waits in rx or tx (fi_cq_sread): that
 * wait takes their endpoint's bytes and serves its requests, and progress
 * through its other CQ would only take the bytes from under it. */
static bool pmv_agent_cqs_waited(const struct pmv_cq *rx,
				 const struct pmv_cq *tx)
{
	return (rx && __atomic_load_n(&rx->core_waiters, __ATOMIC_ACQUIRE)) ||
	       (tx && __atomic_load_n(&tx->core_waiters, __ATOMIC_ACQUIRE));
}

/* pmv_agent_cqs_waited for ep's CQs, read atomically (fi_ep_bind). */
static bool pmv_agent_app_waits(const struct pmv_ep *ep)
{
	return pmv_agent_cqs_waited(
		__atomic_load_n(&ep->rx_cq, __ATOMIC_ACQUIRE),
		__atomic_load_n(&ep->tx_cq, __ATOMIC_ACQUIRE));
}

/*
 * Drives the core's progress once per CQ the pass's endpoints (held, so
 * their CQs stay bound) are bound to, however many endpoints share it (a
 * target that never polls still moves data over tcp), except endpoints an
 * application thread waits for.  No lock held: an application serving its
 * endpoints from its CQ reads is never kept waiting behind the agent's
 * progress.
 */
static void pmv_agent_progress(struct pmv_agent *agent, size_t neps)
{
	struct pmv_cq *set[PMV_AGENT_CQS];
	unsigned n = 0, i;
	size_t k;

	for (k = 0; k < neps; k++)
		if (!pmv_agent_app_waits(agent->snap[k]) &&
		    !pmv_agent_add_cqs(agent->snap[k], set, &n))
			break;
	for (i = 0; i < n; i++)
		pmv_cq_progress_core(set[i]);
	for (; k < neps; k++) { /* past PMV_AGENT_CQS distinct CQs */
		struct pmv_ep *ep = agent->snap[k];
		struct pmv_cq *rx = __atomic_load_n(&ep->rx_cq, __ATOMIC_ACQUIRE);
		struct pmv_cq *tx = __atomic_load_n(&ep->tx_cq, __ATOMIC_ACQUIRE);

		if (pmv_agent_cqs_waited(rx, tx))
			continue;
		if (rx)
			pmv_cq_progress_core(rx);
		if (tx && tx != rx)
			pmv_cq_progress_core(tx);
	}
}

/*
 * Fills fds with the CQs' fds and the agent's eventfd if the agent may
 * sleep on them: every CQ has one and the core says nothing is pending
 * (fi_trywait).  Returns how many, 0 if it cannot sleep on fds, -1 if
 * work is pending (the core's, or a request already landed); domain lock
 * held.
 */
static int pmv_agent_sleep_fds(struct pmv_domain *dom, struct pollfd *fds)
{
	struct pmv_cq *set[PMV_AGENT_CQS];
	struct fid *fids[PMV_AGENT_CQS];
	unsigned n = pmv_agent_cqs(dom->agent, set), i, nfds = 0;
	int got;

	/* over verbs an incoming RDMA write (a request) wakes no fd */
	if (n > PMV_AGENT_CQS || dom->transport != PMV_TRANSPORT_TCP)
		return 0;
	for (i = 0; i < n; i++) {
		got = pmv_cq_wait_fds(set[i], fds + nfds,
				       PMV_AGENT_FDS - 1 - nfds);
		if (got <= 0)
			return 0;
		nfds += (unsigned) got;
		fids[i] = &set[i]->core->fid;
	}
	/* from here on, the application's CQ reads wake the agent */
	__atomic_store_n(&dom->agent_sleeping, true, __ATOMIC_SEQ_CST);
	if (n && fi_trywait(dom->fabric->core, fids, (int) n) != FI_SUCCESS)
		return -1;
	/* fi_trywait (or an application's CQ read) may have moved a request
	 * into an inbox already */
	dom->agent->app_waits = false;
	for (struct pmv_ep *ep = dom->agent->eps; ep; ep = ep->agent_next) {
		if (pmv_serve_pending(ep))
			return -1;
		dom->agent->app_waits |= pmv_agent_app_waits(ep);
	}
	fds[nfds] = (struct pollfd) { .fd = dom->agent->wake_fd,
				      .events = POLLIN };
	return (int) nfds + 1;
}

enum pmv_agent_rest {
	PMV_REST_SLEPT,   /* the whole time */
	PMV_REST_WOKEN,   /* bytes arrived, an endpoint joined, or stop */
	PMV_REST_CANNOT,  /* no fds to sleep on */
	PMV_REST_PENDING, /* work was pending: did not sleep */
};

/*
 * After a wake: takes out of fds (n of them) the readable signals of core
 * wait objects, which only a thread waiting in the core (fi_cq_sread)
 * drains; a CQ nobody waits on (a transmit CQ whose completions signal
 * it) would keep every later sleep from sleeping: the agent spun at 100%
 * of a core after the first commit.  Returns true if those were all that
 * woke it.
 */
static bool pmv_agent_drop_signals(struct pollfd *fds, int *n)
{
	bool other = false;
	int i = 0;

	while (i < *n) {
		if (fds[i].revents && pmv_sock_family(fds[i].fd) == AF_UNIX) {
			fds[i] = fds[--*n];
			continue;
		}
		other |= fds[i].revents != 0;
		fds[i++].revents = 0;
	}
	return !other;
}

/* Sleeps up to us microseconds on the core's fds and the agent's eventfd,
 * unless it cannot sleep on fds or work is pending. */
static enum pmv_agent_rest pmv_agent_sleep(struct pmv_domain *dom, long us)
{
	struct timespec ts = { .tv_sec = us / 1000000,
			       .tv_nsec = (us % 1000000) * 1000 };
	struct pollfd fds[PMV_AGENT_FDS];
	int n, woke = 0;
	uint64_t v;

	pthread_mutex_lock(&dom->lock);
	n = pmv_agent_sleep_fds(dom, fds);
	pthread_mutex_unlock(&dom->lock);
	if (n > 0) {
		woke = ppoll(fds, (nfds_t) n, &ts, NULL);
		if (woke > 0 && pmv_agent_drop_signals(fds, &n))
			woke = ppoll(fds, (nfds_t) n, &ts, NULL);
	}
	__atomic_store_n(&dom->agent_sleeping, false, __ATOMIC_SEQ_CST);
	(void) !read(dom->agent->wake_fd, &v, sizeof(v)); /* non-blocking */
	return n > 0 ? (woke > 0 ? PMV_REST_WOKEN : PMV_REST_SLEPT) :
	       n < 0 ? PMV_REST_PENDING : PMV_REST_CANNOT;
}

/* Ends the agent's sleep (an endpoint joined, or stop). */
static void pmv_agent_wake(struct pmv_agent *agent)
{
	uint64_t one = 1;

	(void) !write(agent->wake_fd, &one, sizeof(one));
}

/*
 * Holds the agent's endpoints in agent->snap for a pass, first taking the
 * larger array an endpoint that joined left (the agent thread alone uses
 * snap, outside the lock, so nobody else may move it); domain lock held.
 */
static size_t pmv_agent_hold_eps(struct pmv_agent *agent)
{
	size_t n = 0;

	if (agent->snap_new) {
		free(agent->snap);
		agent->snap = agent->snap_new;
		agent->snap_len = agent->snap_cap;
		agent->snap_new = NULL;
	}
	for (struct pmv_ep *ep = agent->eps; ep && n < agent->snap_len;
	     ep = ep->agent_next) {
		__atomic_add_fetch(&ep->serve_holds, 1, __ATOMIC_ACQ_REL);
		agent->snap[n++] = ep;
	}
	return n;
}

/*
 * One pass: drive the core's progress, then serve every endpoint that no
 * other thread is serving and whose application does not serve it itself;
 * no domain lock is held while serving (persist may take long).  Returns
 * the requests served, or -1 if the application serves every endpoint.
 */
static int pmv_agent_pass(struct pmv_domain *dom)
{
	struct pmv_agent *agent = dom->agent;
	uint64_t now = pmv_ms_now();
	size_t n, i, left_to_app = 0;
	int served = 0;

	pthread_mutex_lock(&dom->lock);
	n = pmv_agent_hold_eps(agent);
	pthread_mutex_unlock(&dom->lock);
	for (i = 0; i < n; i++)
		left_to_app += pmv_serve_by_app(agent->snap[i], now);
	if (left_to_app < n)
		pmv_agent_progress(agent, n);
	for (i = 0; i < n; i++) {
		if (!pmv_serve_by_app(agent->snap[i], now))
			served += pmv_serve_try(dom, agent->snap[i]);
		__atomic_sub_fetch(&agent->snap[i]->serve_holds, 1,
				   __ATOMIC_ACQ_REL);
	}
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
 * An idle agent's rest: naps of 10 us doubling to 1 ms, then sleeps of up
 * to PMV_AGENT_SLEEP_MS; each on the core's fds where it can, so that the
 * bytes of a request end it.  Returns true if they did and no
 * application thread waits in fi_cq_sread (it would serve them itself): a
 * request is coming, and the agent spins again, progressing the core
 * (spinning beside a waiting thread on its core made every read of that
 * target 10 us slower).
 * Work found pending instead of sleeping (a request that landed while the
 * agent woke, or the core's) gets one pass at once, not a nap (1 s idle
 * agent commits took 1.4 ms before this).  *retried: that pass was had.
 */
static bool pmv_agent_rest(struct pmv_domain *dom, long *nap, bool *retried)
{
	enum pmv_agent_rest rest;

	*nap = *nap ? (*nap < 1000 ? *nap * 2 : 1000) : 10;
	rest = pmv_agent_sleep(dom, *nap < 1000 ? *nap :
					  PMV_AGENT_SLEEP_MS * 1000L);
	if (rest == PMV_REST_PENDING && !*retried) {
		*retried = true;
		return false;
	}
	*retried = false;
	if (rest == PMV_REST_PENDING || rest == PMV_REST_CANNOT)
		pmv_sleep_us(*nap);
	return rest == PMV_REST_WOKEN && !dom->agent->app_waits;
}

/* Longest sleep of an agent whose application serves every endpoint. */
#define PMV_AGENT_APP_NAP_MAX_MS 16

/*
 * While the application serves every endpoint itself (it read their CQs
 * within the last PMV_SERVE_DEFER_MS), the agent only looks, now and then,
 * whether that still holds: sleeps of 1 ms doubling to
 * PMV_AGENT_APP_NAP_MAX_MS, on its eventfd (an endpoint joined, or stop).
 * Each look takes the CPU from the application thread it shares a core
 * with: at one per millisecond, writes pipelined with a commit per MiB ran
 * 12-15% slower, and a busy-polling target's commit p99 was 22-30 us
 * instead of 9-14.  An application that stops reading is served by the
 * agent at most that sleep after PMV_SERVE_DEFER_MS.
 */
static void pmv_agent_app_nap(struct pmv_agent *agent, long *app_nap)
{
	struct pollfd pfd = { .fd = agent->wake_fd, .events = POLLIN };
	uint64_t v;

	*app_nap = *app_nap ? (*app_nap < PMV_AGENT_APP_NAP_MAX_MS ?
			       *app_nap * 2 : PMV_AGENT_APP_NAP_MAX_MS) : 1;
	if (poll(&pfd, 1, (int) *app_nap) > 0)
		(void) !read(agent->wake_fd, &v, sizeof(v)); /* non-blocking */
}

/*
 * The agent's loop: spin while requests keep coming (or their bytes just
 * woke it), then back off to naps and sleeps (pmv_agent_rest), so that an
 * idle target costs no CPU; while the application serves every endpoint,
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

/* Starts the domain's agent thread (domain lock held). */
static int pmv_agent_start(struct pmv_domain *dom)
{
	struct pmv_agent *agent = pmv_fault(PMV_FAULT_ALLOC) ? NULL :
				  calloc(1, sizeof(*agent));
	int ret;

	if (!agent)
		return -FI_ENOMEM;
	agent->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (agent->wake_fd < 0) {
		free(agent);
		return -FI_ENOMEM;
	}
	pmv_serve_init();
	dom->agent = agent;
	dom->agent_wake_fd = agent->wake_fd;
	agent->domain = dom;
	ret = pthread_create(&agent->thread, NULL, pmv_agent_main, dom);
	if (ret) {
		dom->agent = NULL;
		close(agent->wake_fd);
		free(agent);
		return -ret;
	}
	pthread_mutex_lock(&pmv_agents_lock);
	agent->next = pmv_agents;
	pmv_agents = agent;
	pthread_mutex_unlock(&pmv_agents_lock);
	return 0;
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
	int ret = dom->agent ? 0 : pmv_agent_start(dom);

	if (ret || ep->in_agent || (ret = pmv_agent_grow_snap(dom->agent)))
		return ret;
	ep->agent_seq = 1;
	ep->agent_acked = 0;
	ep->agent_next = dom->agent->eps;
	dom->agent->eps = ep;
	dom->agent->neps++;
	ep->in_agent = true;
	__atomic_store_n(ep->inbox.gen_word, dom->mr_gen, __ATOMIC_RELEASE);
	pmv_agent_wake(dom->agent); /* watch its CQs too */
	return 0;
}

int pmv_agent_add(struct pmv_domain *dom, struct pmv_ep *ep)
{
	int ret;

	pthread_mutex_lock(&dom->lock);
	ret = pmv_agent_link(dom, ep);
	pthread_mutex_unlock(&dom->lock);
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
	for (ep = dom->agent->eps; ep; ep = ep->agent_next)
		__atomic_store_n(ep->inbox.gen_word, dom->mr_gen,
				 __ATOMIC_RELEASE);
}

/*
 * The domain's regions changed: every connected endpoint pushes the new
 * profile table to its peer; dom->lock held.
 */
void pmv_domain_publish_profiles(struct pmv_domain *dom)
{
	if (!dom->agent)
		return;
	for (struct pmv_ep *ep = dom->agent->eps; ep; ep = ep->agent_next)
		pmv_publish_profiles(ep);
}

/* The connection is established: ep's peer gets the profile table. */
void pmv_ep_connected(struct pmv_ep *ep)
{
	pthread_mutex_lock(&ep->domain->lock);
	ep->connected = true;
	if (ep->in_agent)
		pmv_publish_profiles(ep);
	pthread_mutex_unlock(&ep->domain->lock);
}

/*
 * Unlinks ep, then waits (no lock held) until neither an agent pass nor
 * an application's CQ read is serving it.
 */
void pmv_agent_remove(struct pmv_domain *dom, struct pmv_ep *ep)
{
	struct pmv_ep **pp;

	pthread_mutex_lock(&dom->lock);
	if (ep->in_agent) {
		for (pp = &dom->agent->eps; *pp; pp = &(*pp)->agent_next) {
			if (*pp == ep) {
				*pp = ep->agent_next;
				break;
			}
		}
		ep->in_agent = false;
		dom->agent->neps--;
	}
	pthread_mutex_unlock(&dom->lock);
	pmv_serve_detach(ep);
	while (__atomic_load_n(&ep->serve_holds, __ATOMIC_ACQUIRE))
		sched_yield();
	pthread_mutex_lock(&ep->serve_lock);
	pthread_mutex_unlock(&ep->serve_lock);
}

/* Takes an agent off the list of running agents; false if not on it. */
static bool pmv_agent_unlist(struct pmv_agent *agent)
{
	struct pmv_agent **pp;
	bool found = false;

	pthread_mutex_lock(&pmv_agents_lock);
	for (pp = &pmv_agents; *pp; pp = &(*pp)->next) {
		if (*pp == agent) {
			*pp = agent->next;
			found = true;
			break;
		}
	}
	pthread_mutex_unlock(&pmv_agents_lock);
	return found;
}

/*
 * Stops the domain's agent.  The stop flag needs no lock: at exit the agent
 * may be blocked in the core on a lock the exiting thread holds, so the
 * unload path (wait_ms > 0) gives up waiting after wait_ms and leaves it.
 */
static void pmv_agent_stop_waiting(struct pmv_domain *dom, int wait_ms)
{
	struct pmv_agent *agent = dom->agent;
	struct timespec deadline;

	if (!agent || !pmv_agent_unlist(agent))
		return;
	__atomic_store_n(&agent->stop, true, __ATOMIC_RELEASE);
	pmv_agent_wake(agent);
	if (wait_ms <= 0) {
		pthread_join(agent->thread, NULL);
	} else {
		clock_gettime(CLOCK_REALTIME, &deadline);
		deadline.tv_sec += wait_ms / 1000;
		if (pthread_timedjoin_np(agent->thread, NULL, &deadline)) {
			PMV_WARN(FI_LOG_DOMAIN, "agent thread did not stop "
				 "within %d ms at unload; leaving it\n", wait_ms);
			return;
		}
	}
	dom->agent = NULL;
	dom->agent_wake_fd = -1;
	close(agent->wake_fd);
	free(agent->snap);
	free(agent->snap_new);
	free(agent);
}

void pmv_agent_stop(struct pmv_domain *dom)
{
	pmv_agent_stop_waiting(dom, 0);
}

void pmv_agent_stop_all(void)
{
	struct pmv_agent *agent;

	for (;;) {
		pthread_mutex_lock(&pmv_agents_lock);
		agent = pmv_agents;
		pthread_mutex_unlock(&pmv_agents_lock);
		if (!agent)
			return;
		pmv_agent_stop_waiting(agent->domain, 1000);
	}
}
