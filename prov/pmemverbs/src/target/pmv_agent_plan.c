/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: the agent's pass without the endpoints served on their gates'
 * events.  A pass that holds and looks at every endpoint cost about
 * 0.3 us per endpoint: with 1024 connections to a target that does not
 * progress, a commit on the one busy connection took 12 times as long as
 * with 16 (libfabric 2.1, perf: the walk was nearly all of the agent's
 * time).  A gated endpoint needs no look: the agent's progress takes its
 * write's completion from the core CQ (pmv_cq_progress_core), which marks
 * its gate, and the pass serves the marked gates as a CQ read does
 * (pmv_serve_marked).  The plan, made by a pass that held every endpoint
 * and kept while dom->agent_eps_ver stays the same, names what is left to
 * do: the endpoints without a gate to look at, the CQs to progress, the
 * lists to ask whether the application serves, and one endpoint to hold
 * per list or CQ so that none closes during the pass.
 */
#include <stdlib.h>

#include "target/pmv_agent.h"
#include "target/pmv_target.h"

/* Adds list to the plan unless there (looked for while the plan is
 * short): 1 if added, 0 if there, -1 if no memory. */
static int pmv_agent_plan_list(struct pmv_agent_plan *plan,
			       struct pmv_hooks *list)
{
	struct pmv_hooks **grown;
	size_t cap;

	for (size_t i = 0; plan->nlists <= PMV_AGENT_DEDUPE &&
			   i < plan->nlists; i++)
		if (plan->list[i] == list)
			return 0;
	if (plan->nlists == plan->list_cap) {
		cap = plan->list_cap ? plan->list_cap * 2 : 16;
		grown = realloc(plan->list, cap * sizeof(*grown));
		if (!grown)
			return -1;
		plan->list = grown;
		plan->list_cap = cap;
	}
	plan->list[plan->nlists++] = list;
	return 1;
}

/* Adds cq, if not NULL, to the plan's CQs: 1 if added, 0 if there, -1 if
 * no memory. */
static int pmv_agent_plan_cq(struct pmv_agent_plan *plan, struct pmv_cq *cq)
{
	size_t before = plan->cqs.n;

	if (!cq)
		return 0;
	if (!pmv_agent_cqs_add(&plan->cqs, cq))
		return -1;
	return plan->cqs.n > before;
}

/*
 * Notes ep's lists and CQs in the plan: 1 if one was new (ep is then held
 * by the plan's passes, which keeps it and so them open), 0 if not, -1 if
 * no memory.
 */
static int pmv_agent_plan_note(struct pmv_agent_plan *plan, struct pmv_ep *ep)
{
	struct pmv_cq *cq[2] = {
		__atomic_load_n(&ep->rx_cq, __ATOMIC_ACQUIRE),
		__atomic_load_n(&ep->tx_cq, __ATOMIC_ACQUIRE) };
	struct pmv_hooks *list;
	int added = 0, r;

	for (int i = 0; i < PMV_SERVE_OBJS; i++) {
		list = __atomic_load_n(&ep->tgt->serve_on[i], __ATOMIC_ACQUIRE);
		r = list ? pmv_agent_plan_list(plan, list) : 0;
		if (r < 0)
			return -1;
		added |= r;
	}
	for (int i = 0; i < 2; i++) {
		r = pmv_agent_plan_cq(plan, cq[i]);
		if (r < 0)
			return -1;
		added |= r;
	}
	return added;
}

/* Appends ep to the plan's endpoints (room for all was made). */
static void pmv_agent_plan_ep(struct pmv_agent_plan *plan, struct pmv_ep *ep)
{
	plan->ep[plan->nhold++] = ep;
}

/* Room for n endpoints in the plan; false if no memory. */
static bool pmv_agent_plan_room(struct pmv_agent_plan *plan, size_t n)
{
	struct pmv_ep **grown;

	if (n <= plan->ep_cap)
		return true;
	grown = realloc(plan->ep, n * sizeof(*grown));
	if (!grown)
		return false;
	plan->ep = grown;
	plan->ep_cap = n;
	return true;
}

/*
 * Makes the plan from the n endpoints a pass holds (agent->snap), seen
 * under version ver: first the endpoints without a gate served on its
 * events (looked at on every pass), then, of the others, one per list or
 * CQ not noted yet.  Not made if memory runs out (passes then hold and
 * look at every endpoint, as before a plan).
 */
void pmv_agent_plan_make(struct pmv_agent *agent, size_t n, uint64_t ver)
{
	struct pmv_agent_plan *plan = &agent->plan;
	struct pmv_ep *ep;
	int r = 0;

	plan->made = false;
	plan->nlists = plan->cqs.n = plan->nhold = 0;
	if (!pmv_agent_plan_room(plan, n))
		return;
	for (size_t i = 0; i < n && r >= 0; i++) {
		ep = agent->snap[i];
		if (pmv_gate_serves(ep))
			continue;
		r = pmv_agent_plan_note(plan, ep);
		pmv_agent_plan_ep(plan, ep);
	}
	plan->nwalk = plan->nhold;
	for (size_t i = 0; i < n && r >= 0; i++) {
		ep = agent->snap[i];
		if (!pmv_gate_serves(ep))
			continue;
		r = pmv_agent_plan_note(plan, ep);
		if (r > 0)
			pmv_agent_plan_ep(plan, ep);
	}
	plan->ver = ver;
	plan->made = r >= 0;
}

/*
 * Holds the plan's endpoints if the plan still holds: made, under the
 * version now (an endpoint leaves the agent, or changes its lists or gate,
 * only after bumping it; pmv_agent_remove bumps it under the domain lock,
 * so an endpoint seen here has not begun to close).  False: a pass must
 * hold every endpoint.
 */
static bool pmv_agent_plan_hold(struct pmv_domain *dom)
{
	struct pmv_agent *agent = dom->agent;
	struct pmv_agent_plan *plan = &agent->plan;
	bool ok;

	pmv_lock(&dom->lock, PMV_LOCK_DOMAIN);
	ok = plan->made && !agent->snap_new &&
	     plan->ver == __atomic_load_n(&dom->agent_eps_ver, __ATOMIC_SEQ_CST);
	for (size_t i = 0; ok && i < plan->nhold; i++)
		pmv_tgt_hold(plan->ep[i]);
	pmv_unlock(&dom->lock, PMV_LOCK_DOMAIN);
	return ok;
}

static void pmv_agent_plan_drop(struct pmv_agent_plan *plan)
{
	for (size_t i = 0; i < plan->nhold; i++)
		pmv_tgt_release(plan->ep[i]);
}

/*
 * True if the plan's pass must not run: the application reads one of the
 * lists (it may serve some endpoints itself, which a pass that holds them
 * all sorts out), or waits in one of the CQs (whose bytes the agent's
 * progress of another CQ must not take from under it).
 */
static bool pmv_agent_plan_app_busy(const struct pmv_agent_plan *plan,
				    uint64_t now)
{
	for (size_t i = 0; i < plan->nlists; i++)
		if (pmv_hooks_app_reads(plan->list[i], now))
			return true;
	for (size_t i = 0; i < plan->cqs.n; i++)
		if (pmv_agent_cqs_waited(plan->cqs.cq[i], NULL))
			return true;
	return false;
}

/*
 * One pass by the plan: drives the core's progress on the plan's CQs
 * (after a wake by fds, only those that woke the agent), which marks the
 * gates of the gated requests whose completions it takes, serves the
 * marked gates, then looks at the endpoints without a gate.  Returns the
 * requests served, or -1 if a pass that holds every endpoint must run
 * instead.  No lock held while serving.
 */
int pmv_agent_plan_pass(struct pmv_domain *dom, uint64_t now)
{
	struct pmv_agent *agent = dom->agent;
	struct pmv_agent_plan *plan = &agent->plan;
	struct pmv_cq *cq;
	int served;

	if (!pmv_agent_plan_hold(dom))
		return -1;
	if (pmv_agent_plan_app_busy(plan, now)) {
		pmv_agent_plan_drop(plan);
		return -1;
	}
	for (size_t i = 0; i < plan->cqs.n; i++) {
		cq = plan->cqs.cq[i];
		if (!agent->woken_only || pmv_agent_cqs_has(&agent->woken, cq))
			pmv_cq_progress_core(cq);
	}
	served = pmv_serve_marked(dom, now);
	if (plan->nwalk)
		__atomic_add_fetch(&agent->walks, 1, __ATOMIC_RELAXED);
	for (size_t i = 0; i < plan->nwalk; i++)
		served += pmv_serve_try(dom, plan->ep[i]);
	pmv_agent_plan_drop(plan);
	return served;
}

void pmv_agent_plan_free(struct pmv_agent_plan *plan)
{
	free(plan->ep);
	free(plan->list);
	free(plan->cqs.cq);
}
