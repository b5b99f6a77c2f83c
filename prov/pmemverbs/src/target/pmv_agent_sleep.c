/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: the agent thread's sleep.  Idle, the agent sleeps on what
 * libfabric documents as a CQ's wait object (the fd or list of fds that
 * FI_GETWAIT returns, after fi_trywait said nothing is pending, as
 * fi_trywait(3) prescribes) and on its own eventfd, with no timeout: no
 * periodic pass over the endpoints.  fi_trywait is asked again only of
 * the CQs someone called into since the agent's last (pmv_cq_core_used),
 * as only such a call takes what their wait objects signal.  Every fd is
 * treated alike: one that becomes readable makes the passes until the
 * next sleep progress its CQ (and only the CQs so woken).  A bounded sleep
 * only while work may be pending: fds that stay readable although the
 * core's progress ran and fi_trywait said nothing is pending (a core
 * signal only the core's own wait drains, bytes no receive takes yet) are
 * drained where the wait is ours (a wait set's), else left out of the
 * sleep, which then lasts at most PMV_AGENT_STALE_MAX_MS.
 */
#include <stdlib.h>
#include <unistd.h>

#include "target/pmv_agent.h"
#include "target/pmv_target.h"

/* Fd wakes in a row that served nothing before the agent drains the wait
 * sets of ours whose fds stay readable (their own signal: after any
 * connection) and looks for fds that stay readable still. */
#define PMV_AGENT_IDLE_WAKES 8

/* Longest sleep while fds stay readable, in ms (doubling from 1). */
#define PMV_AGENT_STALE_MAX_MS 1000

bool pmv_agent_cqs_has(const struct pmv_agent_cqs *set,
		       const struct pmv_cq *cq)
{
	for (size_t i = 0; i < set->n; i++)
		if (set->cq[i] == cq)
			return true;
	return false;
}

/* Adds cq to set unless there (checked while the set is short); false if
 * no memory. */
bool pmv_agent_cqs_add(struct pmv_agent_cqs *set, struct pmv_cq *cq)
{
	struct pmv_cq **grown;
	size_t cap;

	if (set->n <= PMV_AGENT_DEDUPE && pmv_agent_cqs_has(set, cq))
		return true;
	if (set->n == set->cap) {
		cap = set->cap ? set->cap * 2 : 16;
		grown = realloc(set->cq, cap * sizeof(*grown));
		if (!grown)
			return false;
		set->cq = grown;
		set->cap = cap;
	}
	set->cq[set->n++] = cq;
	return true;
}

/* Room in fds for need entries; false if no memory. */
static bool pmv_agent_fds_room(struct pmv_agent_fds *fds, size_t need)
{
	size_t cap = fds->cap ? fds->cap : 64;
	struct pollfd *fd;
	struct pmv_cq **cq;

	if (need <= fds->cap)
		return true;
	while (cap < need)
		cap *= 2;
	fd = realloc(fds->fd, cap * sizeof(*fd));
	if (!fd)
		return false;
	fds->fd = fd;
	cq = realloc(fds->cq, cap * sizeof(*cq));
	if (!cq)
		return false;
	fds->cq = cq;
	fds->cap = cap;
	return true;
}

/* Appends cq's wait object (FI_GETWAIT: one fd or a list) to fds; false
 * if the agent cannot sleep on it. */
static bool pmv_agent_add_fds(struct pmv_agent_fds *fds, struct pmv_cq *cq)
{
	int got;

	for (;;) {
		got = pmv_cq_wait_fds(cq, fds->fd + fds->n,
				      (unsigned) (fds->cap - fds->n));
		if (got > 0)
			break;
		if (!got || !pmv_agent_fds_room(fds, fds->n + (size_t) -got))
			return false;
	}
	for (int i = 0; i < got; i++)
		fds->cq[fds->n + (size_t) i] = cq;
	fds->n += (size_t) got;
	return true;
}

/*
 * Holds the agent's endpoints in agent->snap for a pass, first taking the
 * larger array an endpoint that joined left (the agent thread alone uses
 * snap, outside the lock, so nobody else may move it); domain lock held.
 */
size_t pmv_agent_hold_eps(struct pmv_agent *agent)
{
	size_t n = 0;

	if (agent->snap_new) {
		free(agent->snap);
		agent->snap = agent->snap_new;
		agent->snap_len = agent->snap_cap;
		agent->snap_new = NULL;
	}
	for (struct pmv_ep *ep = LIST_FIRST(&agent->eps);
	     ep && n < agent->snap_len; ep = LIST_NEXT(ep, tgt->agent_link)) {
		pmv_tgt_hold(ep);
		agent->snap[n++] = ep;
	}
	return n;
}

/* Lets go of the n endpoints pmv_agent_hold_eps held. */
void pmv_agent_drop_eps(struct pmv_agent *agent, size_t n)
{
	for (size_t i = 0; i < n; i++)
		pmv_tgt_release(agent->snap[i]);
}

/* Whether an application thread waits in rx or tx (pmv_cq_sleepers):
 * that wait takes their endpoint's bytes and serves its requests, and
 * progress through its other CQ would only take the bytes from under it. */
bool pmv_agent_cqs_waited(const struct pmv_cq *rx, const struct pmv_cq *tx)
{
	return (rx && pmv_cq_sleepers(rx)) || (tx && pmv_cq_sleepers(tx));
}

/* pmv_agent_cqs_waited for ep's CQs, read atomically (fi_ep_bind). */
bool pmv_agent_app_waits(const struct pmv_ep *ep)
{
	return pmv_agent_cqs_waited(
		__atomic_load_n(&ep->rx_cq, __ATOMIC_ACQUIRE),
		__atomic_load_n(&ep->tx_cq, __ATOMIC_ACQUIRE));
}

/* The distinct CQs of the agent's n held endpoints (agent->snap) into
 * agent->cqs; false if no memory. */
static bool pmv_agent_list_cqs(struct pmv_agent *agent, size_t n)
{
	agent->cqs.n = 0;
	for (size_t k = 0; k < n; k++) {
		struct pmv_ep *ep = agent->snap[k];
		struct pmv_cq *rx = __atomic_load_n(&ep->rx_cq, __ATOMIC_ACQUIRE);
		struct pmv_cq *tx = __atomic_load_n(&ep->tx_cq, __ATOMIC_ACQUIRE);

		if ((rx && !pmv_agent_cqs_add(&agent->cqs, rx)) ||
		    (tx && !pmv_agent_cqs_add(&agent->cqs, tx)))
			return false;
	}
	return true;
}

/*
 * Restricts the passes until the next sleep to the core progress of a and
 * b (either may be NULL), where work was found pending: the sleep that
 * follows asks every CQ again.  All CQs if no memory.
 */
static void pmv_agent_pending_on(struct pmv_agent *agent, struct pmv_cq *a,
				 struct pmv_cq *b)
{
	agent->woken.n = 0;
	agent->woken_only = (!a || pmv_agent_cqs_add(&agent->woken, a)) &&
			    (!b || pmv_agent_cqs_add(&agent->woken, b)) &&
			    agent->woken.n < agent->sleep_cqs;
}

/*
 * Nothing is pending: the core says so for every CQ (fi_trywait, one call
 * per CQ as their wait objects may differ) that anyone called into since
 * its last (pmv_cq_core_used: the others' wait objects signal whatever
 * comes), and no request waits in the inbox of one of the n held
 * endpoints (a progress may have moved one there); notes whether an
 * application thread waits in a CQ.  Else the passes until the next sleep
 * progress where it was found.  No lock held: fi_trywait runs the core's
 * progress.  A sleep after a wake asks only the CQs a pass or an
 * application thread called: with 1024 connections each on its own CQ,
 * it was 1024 fi_trywait calls (2048 polls) after each commit.
 */
static bool pmv_agent_nothing_pending(struct pmv_domain *dom, size_t n)
{
	struct pmv_agent *agent = dom->agent;
	struct pmv_cq *cq;
	struct pmv_ep *ep;

	for (size_t i = 0; i < agent->cqs.n; i++) {
		cq = agent->cqs.cq[i];
		if (!pmv_cq_core_take_used(cq)) {
			/* an ack's bytes another CQ's progress took wake
			 * a thread asleep here, as after a fi_trywait */
			pmv_cq_wake_waiters(cq, false);
			continue;
		}
		__atomic_add_fetch(&agent->trywaits, 1, __ATOMIC_RELAXED);
		if (pmv_cq_agent_trywait(cq, dom->fabric->core)) {
			pmv_cq_core_used(cq); /* asked again next time */
			pmv_agent_pending_on(agent, cq, NULL);
			return false;
		}
	}
	agent->app_waits = false;
	for (size_t k = 0; k < n; k++) {
		ep = agent->snap[k];
		if (pmv_serve_pending(ep)) {
			pmv_agent_pending_on(agent,
				__atomic_load_n(&ep->rx_cq, __ATOMIC_ACQUIRE),
				__atomic_load_n(&ep->tx_cq, __ATOMIC_ACQUIRE));
			return false;
		}
		agent->app_waits |= pmv_agent_app_waits(ep);
	}
	return true;
}

/*
 * Fills agent->fds with the wait object of every CQ of the n held
 * endpoints and, last, the agent's eventfd.  Returns how many, 0 if it
 * cannot sleep on fds (over verbs an incoming RDMA write, a request,
 * makes no fd readable), -1 if work is pending.  No lock held.
 */
static int pmv_agent_sleep_fds(struct pmv_domain *dom, size_t n)
{
	struct pmv_agent *agent = dom->agent;
	struct pmv_agent_fds *fds = &agent->fds;

	fds->n = 0;
	if (dom->transport != PMV_TRANSPORT_TCP || !pmv_agent_list_cqs(agent, n) ||
	    !pmv_agent_fds_room(fds, 1)) /* never an fd array of NULL */
		return 0;
	agent->sleep_cqs = agent->cqs.n;
	for (size_t i = 0; i < agent->cqs.n; i++)
		if (!pmv_agent_add_fds(fds, agent->cqs.cq[i]))
			return 0;
	if (!pmv_agent_fds_room(fds, fds->n + 1))
		return 0;
	/* from here on, the application's CQ reads wake the agent */
	__atomic_store_n(&dom->agent_sleeping, true, __ATOMIC_SEQ_CST);
	if (!pmv_agent_nothing_pending(dom, n))
		return -1;
	fds->fd[fds->n] = (struct pollfd) { .fd = agent->wake_fd,
					    .events = POLLIN };
	fds->cq[fds->n++] = NULL;
	return (int) fds->n;
}

/*
 * Drains the wait sets of ours (a wait of 1 ms at most in each:
 * pmv_cq_wait_in_set; one of 0 polls nothing) of the CQs with an fd
 * readable in the last poll of fds, once each (a CQ's fds are listed
 * together), but for those an application thread waits in (its wait
 * drains it).  True if it drained one.
 */
static bool pmv_agent_drain_sets(struct pmv_agent_fds *fds)
{
	struct pmv_cq *last = NULL;
	bool drained = false;

	for (size_t i = 0; i < fds->n; i++) {
		if (!fds->cq[i] || !fds->fd[i].revents || fds->cq[i] == last)
			continue;
		last = fds->cq[i];
		if (!pmv_cq_sleepers(last) && pmv_cq_wait_in_set(last, 1)) {
			/* its progress may take an application's wake */
			pmv_cq_wake_waiters(last, false);
			drained = true;
		}
	}
	return drained;
}

/* pmv_agent_leave_stale's answer: work is pending, a pass first */
#define PMV_AGENT_PASS_FIRST (-2)

/* Whether an fd of the sleep is readable now (revents set); if none, the
 * agent sleeps as usual from now on. */
static bool pmv_agent_fds_readable(struct pmv_agent *agent)
{
	struct pmv_agent_fds *fds = &agent->fds;

	if (poll(fds->fd, (nfds_t) fds->n, 0) > 0)
		return true;
	agent->idle_wakes = 0;
	agent->stale_ms = 0;
	return false;
}

/*
 * After PMV_AGENT_IDLE_WAKES fd wakes that served nothing, with fds
 * readable now: drains the wait sets of ours among their CQs (their own
 * signal) and looks again (the drain's progress may have placed a
 * request: then a pass first); then takes out of this sleep the CQ fds
 * still readable, which the core's progress and fi_trywait left readable
 * (nothing the agent can take), and bounds the sleep instead.  Only then:
 * a busy target's agent runs no more progress than it did.  The n
 * endpoints of the sleep are held.  Returns the sleep's bound in ms, -1
 * for none, or PMV_AGENT_PASS_FIRST.
 */
static int pmv_agent_leave_stale(struct pmv_domain *dom, size_t n)
{
	struct pmv_agent *agent = dom->agent;
	struct pmv_agent_fds *fds = &agent->fds;
	bool stale = false;
	size_t i = 0;

	if (agent->idle_wakes < PMV_AGENT_IDLE_WAKES ||
	    !pmv_agent_fds_readable(agent))
		return -1;
	if (pmv_agent_drain_sets(fds)) {
		if (!pmv_agent_nothing_pending(dom, n))
			return PMV_AGENT_PASS_FIRST;
		if (!pmv_agent_fds_readable(agent))
			return -1;
	}
	while (i < fds->n) {
		if (fds->cq[i] && fds->fd[i].revents) {
			fds->n--;
			fds->fd[i] = fds->fd[fds->n];
			fds->cq[i] = fds->cq[fds->n];
			stale = true;
			continue;
		}
		fds->fd[i++].revents = 0;
	}
	if (!stale)
		return -1;
	agent->stale_ms = agent->stale_ms ?
			  (agent->stale_ms < PMV_AGENT_STALE_MAX_MS ?
			   agent->stale_ms * 2 : PMV_AGENT_STALE_MAX_MS) : 1;
	return (int) agent->stale_ms;
}

/* Most CQs the passes between two sleeps progress alone; past them (many
 * readable at once, or fds that stay readable), they progress all. */
#define PMV_AGENT_WOKEN_MAX PMV_AGENT_DEDUPE

/* Adds the CQs with an fd readable in the last poll of the sleep's fds to
 * agent->woken (not the eventfd's: what wrote it, an endpoint that joined
 * or an application's read, needs the next sleep's look at every CQ, not
 * a pass over their progress); too many, or all the sleep's CQs, make the
 * passes progress all, with no look again. */
static void pmv_agent_add_woken(struct pmv_agent *agent)
{
	struct pmv_agent_fds *fds = &agent->fds;

	for (size_t i = 0; i < fds->n && agent->woken_only; i++) {
		if (!fds->fd[i].revents || !fds->cq[i])
			continue;
		if (agent->woken.n >= PMV_AGENT_WOKEN_MAX ||
		    !pmv_agent_cqs_add(&agent->woken, fds->cq[i]))
			agent->woken_only = false;
	}
	if (agent->woken.n >= agent->sleep_cqs)
		agent->woken_only = false;
}

/* Notes the CQs whose fds ended the sleep: the passes until the next
 * sleep progress only those; and whether CQ fds alone ended it (such
 * wakes that serve nothing are counted: pmv_agent_leave_stale). */
static void pmv_agent_note_woken(struct pmv_agent *agent)
{
	struct pmv_agent_fds *fds = &agent->fds;

	agent->woken.n = 0;
	agent->woken_only = true;
	pmv_agent_add_woken(agent);
	agent->fd_wake = true; /* unless the eventfd ended it too */
	for (size_t i = 0; i < fds->n; i++)
		if (!fds->cq[i] && fds->fd[i].revents)
			agent->fd_wake = false;
}

/* Microseconds between two looks again (a poll system call: on every
 * spinning pass, it made back-to-back commits to a target that reads
 * nothing 0.1-0.3 read round trips slower). */
#define PMV_AGENT_LOOK_US 25

/*
 * Before a pass that progresses only some CQs (after a wake by their fds,
 * or where work was found pending): looks at the last sleep's fds again
 * (a poll with no timeout) and adds the CQs readable now, so that a
 * request on another connection is progressed by the next pass, not after
 * the spin.  A pass over every CQ's progress costs a system call per CQ;
 * one poll of their fds, one.
 */
void pmv_agent_look_again(struct pmv_agent *agent)
{
	struct pmv_agent_fds *fds = &agent->fds;
	uint64_t now = pmv_us_now();

	if (now - agent->looked_us < PMV_AGENT_LOOK_US)
		return;
	agent->looked_us = now;
	if (fds->n && poll(fds->fd, (nfds_t) fds->n, 0) > 0)
		pmv_agent_add_woken(agent);
}

/* Sleeps on the CQs' wait objects and the agent's eventfd, with no
 * timeout unless fds stay readable, if nothing is pending. */
enum pmv_agent_rest pmv_agent_sleep(struct pmv_domain *dom)
{
	struct pmv_agent *agent = dom->agent;
	int n, ms, woke = 0;
	size_t neps;
	uint64_t v;

	agent->woken_only = agent->fd_wake = false;
	pmv_lock(&dom->lock, PMV_LOCK_DOMAIN);
	neps = pmv_agent_hold_eps(agent);
	pmv_unlock(&dom->lock, PMV_LOCK_DOMAIN);
	/* held while their CQs are listed, asked and drained, not while it
	 * sleeps (a close waits for its endpoint's holds) */
	n = pmv_agent_sleep_fds(dom, neps);
	ms = n > 0 ? pmv_agent_leave_stale(dom, neps) : -1;
	if (ms == PMV_AGENT_PASS_FIRST)
		n = -1;
	pmv_agent_drop_eps(agent, neps);
	if (n > 0) {
		woke = poll(agent->fds.fd, (nfds_t) agent->fds.n, ms);
		if (woke > 0)
			pmv_agent_note_woken(agent);
	}
	__atomic_store_n(&dom->agent_sleeping, false, __ATOMIC_SEQ_CST);
	(void) !read(agent->wake_fd, &v, sizeof(v)); /* non-blocking */
	agent->slept = true; /* the fds were looked at just now */
	return n > 0 ? (woke > 0 ? PMV_REST_WOKEN : PMV_REST_SLEPT) :
	       n < 0 ? PMV_REST_PENDING : PMV_REST_CANNOT;
}

/* Ends the agent's sleep (an endpoint joined, or stop). */
void pmv_agent_wake(struct pmv_agent *agent)
{
	uint64_t one = 1;

	if (agent->wake_fd >= 0) /* a thread sleeps on it */
		(void) !write(agent->wake_fd, &one, sizeof(one));
}

void pmv_agent_sleep_free(struct pmv_agent *agent)
{
	free(agent->cqs.cq);
	free(agent->woken.cq);
	free(agent->fds.fd);
	free(agent->fds.cq);
}
