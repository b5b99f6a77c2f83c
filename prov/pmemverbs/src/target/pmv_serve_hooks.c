/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: serving a target endpoint from the application's own reads.
 *
 * Each connected FI_RMA_PMEM endpoint hooks its CQs, EQ and counters: a
 * read of any serves the endpoint's waiting requests inline (a target that
 * busy-polls needs no other thread), and a wait on them hands the
 * endpoint back to the agent first.  A CQ's reads serve through the
 * domain's one progress: the endpoints without a gate of the whole domain
 * (their inboxes looked into), the gated ones when their gates confirmed
 * a request (pmv_serve_gates), not by a look into every inbox.
 */
#include <unistd.h>

#include "target/pmv_target.h"

/*
 * Serves ep if its inbox holds requests, noting that this thread's read
 * served it; adds the requests served to *served.  True if some are left
 * (another thread serves ep, a request is not whole yet, an ack waits for
 * room).
 */
static bool pmv_serve_if_pending(struct pmv_ep *ep, int *served)
{
	if (!pmv_serve_pending(ep))
		return false;
	pmv_served_here_us = pmv_us_now();
	*served += pmv_serve_try(ep->domain, ep);
	return pmv_serve_pending(ep);
}

/*
 * The hook an application's read runs for an endpoint whose inbox it
 * looks into (one without a gate, from its domain's served list on every
 * read of a CQ of the domain; any, from a counter's or EQ's read list): a
 * target that busy-polls serves its requests itself, with no other thread
 * to be scheduled on its core.
 */
static void pmv_serve_hook(void *arg)
{
	int served = 0;

	(void) pmv_serve_if_pending(arg, &served);
}

/*
 * Serves the endpoint of gate idx if it has requests (its gate confirmed
 * one), adding them to *served; true if it still has some: the gate is
 * marked again.
 */
static bool pmv_serve_gate_one(struct pmv_domain *dom, unsigned idx,
			       int *served)
{
	struct pmv_ep *ep = pmv_gate_server(dom, idx);
	bool left;

	if (!ep)
		return false;
	left = pmv_serve_if_pending(ep, served);
	pmv_gate_server_done(dom);
	return left;
}

/*
 * The hook every read of a CQ where gated endpoints receive runs
 * (pmv_hooks_add_evented): serves the endpoints of its domain whose gates
 * confirmed requests since the last look, and only those.  A gated
 * endpoint's every request comes with remote CQ data (the initiator adds
 * it to requests sent on their own too), so a read need not look into
 * each endpoint's inbox: with 1024 idle connections on one CQ that look
 * cost more than the tcp core's own progress.  Every PMV_GATE_SWEEP_MS
 * the gates of one word are looked at (pmv_gate_sweep), the words in
 * turn, for bytes that came without.  A read with no gate marked looks
 * at one word (gate_ready_words), with the clock its list read for it.
 * The agent's pass serves them the same way (pmv_agent_plan.c).  Returns
 * the requests served.
 */
int pmv_serve_marked(struct pmv_domain *dom, uint64_t now_ms)
{
	uint64_t words, bits, again;
	unsigned w, b;
	int served = 0;

	pmv_gate_sweep(dom, now_ms);
	for (words = pmv_gate_take_marked_words(dom); words;
	     words &= words - 1) {
		w = (unsigned) __builtin_ctzll(words);
		bits = pmv_gate_take_marks(dom, w);
		for (again = 0; bits; bits &= bits - 1) {
			b = (unsigned) __builtin_ctzll(bits);
			if (pmv_serve_gate_one(dom, w * 64 + b, &served))
				again |= 1ull << b;
		}
		pmv_gate_put_marks(dom, w, again);
	}
	return served;
}

/* What every read of a CQ where gated endpoints receive runs
 * (pmv_hooks_add_evented): pmv_serve_marked. */
static void pmv_serve_gates(struct pmv_domain *dom, uint64_t now_ms)
{
	(void) pmv_serve_marked(dom, now_ms);
}

/*
 * The list (one of ep's CQs, EQ or counters) whose application reads
 * serve ep now (pmv_hooks_app_reads), NULL if none: while there is one
 * the agent leaves ep alone, so that it never holds ep while preempted by
 * a busy application on a shared core.  One read now and then (a target
 * that reads its CQ every 200 ms) leaves ep to the agent: napping after
 * such a read, the agent made one commit in a hundred wait up to 2 ms (a
 * p99 of 34 read round trips).
 */
struct pmv_hooks *pmv_serve_app_list(struct pmv_ep *ep, uint64_t now_ms)
{
	struct pmv_hooks *on;

	for (int i = 0; i < PMV_SERVE_OBJS; i++) {
		on = __atomic_load_n(&ep->tgt->serve_on[i], __ATOMIC_ACQUIRE);
		if (on && pmv_hooks_app_reads(on, now_ms))
			return on;
	}
	return NULL;
}

/* Something that decides who serves an endpoint changed: an endpoint
 * joined or left the agent, or the lists whose reads serve it changed
 * (after the change is stored).  The agent then walks its endpoints again
 * instead of trusting what it remembered (pmv_agent_app_still_serves). */
void pmv_agent_eps_changed(struct pmv_domain *dom)
{
	__atomic_add_fetch(&dom->agent_eps_ver, 1, __ATOMIC_SEQ_CST);
	/* an agent napping with no timeout (pmv_agent_app_nap) looks again */
	pmv_hooks_wake_agent(dom);
}

/*
 * ep's receive CQ if an application thread waits in its fi_cq_sread on
 * bytes (pmv_hooks_byte_waited: the agent, which asks, relies on that wait
 * from then on), NULL if none.  The bytes of ep's requests end that wait:
 * the agent may nap until it ends.  Woken by the same bytes, it made
 * commits to such a target slower, and 8-byte reads more so (libfabric
 * 2.1, docs/performance.md).  A pass the agent makes anyway still serves
 * ep: its progress of other endpoints' CQs may take ep's bytes from under
 * that wait (2 to 11 of 29 commits then waited out its 100 ms step).
 */
struct pmv_hooks *pmv_serve_wait_list(struct pmv_ep *ep)
{
	struct pmv_hooks *rx;

	rx = __atomic_load_n(&ep->tgt->serve_on[PMV_SERVE_RX_CQ],
			     __ATOMIC_ACQUIRE);
	return rx && pmv_hooks_byte_waited(rx) ? rx : NULL;
}

/* Before the application sleeps in a counter or EQ wait: serves what is
 * there (the list then hands ep to the agent, pmv_hooks_run_before_wait). */
static void pmv_serve_before_wait(void *arg)
{
	struct pmv_ep *ep = arg;

	if (pmv_serve_pending(ep))
		(void) pmv_serve_try(ep->domain, ep);
}

/* The lists whose reads serve ep: its CQs, EQ and counters, each once. */
static void pmv_serve_lists(const struct pmv_ep *ep,
			    struct pmv_hooks *want[PMV_SERVE_OBJS])
{
	want[PMV_SERVE_RX_CQ] = ep->rx_cq ? &ep->rx_cq->hooks : NULL;
	want[PMV_SERVE_TX_CQ] = ep->tx_cq ? &ep->tx_cq->hooks : NULL;
	want[PMV_SERVE_EQ] = ep->eq ? &ep->eq->hooks : NULL;
	want[PMV_SERVE_SEND_CNTR] = ep->cntr[0] ? &ep->cntr[0]->hooks : NULL;
	want[PMV_SERVE_RECV_CNTR] = ep->cntr[1] ? &ep->cntr[1]->hooks : NULL;
	for (int i = 1; i < PMV_SERVE_OBJS; i++)
		for (int j = 0; j < i; j++)
			if (want[i] == want[j])
				want[i] = NULL;
}

/* How the reads of one of an endpoint's objects serve it. */
enum pmv_serve_how {
	PMV_SERVE_BY_READS,  /* its hook on the object's read list */
	PMV_SERVE_BY_GATE,   /* its domain's progress, on its gate's events */
};

/*
 * How reads of ep's object list serve ep (object i).  A CQ's reads run its
 * domain's progress (pmv_hooks_run_domain), whichever endpoints are bound
 * to it, as libfabric's tcp provider runs one progress per domain from
 * each CQ: a gated endpoint is served there on its gate's events, through
 * its receive CQ, whose reads take the completions that confirm its
 * requests.  An endpoint without a gate is served by the reads of its own
 * CQs, which look into its inbox on every read, and by the reads of the
 * domain's CQs that serve no endpoint of their own (its hook on the
 * domain's served list, pmv_serve_on_domain): a look per endpoint, so a
 * read of one connection's CQ does not look into the domain's 1024 other
 * inboxes.
 * The reads of a gated endpoint's other objects (a transmit CQ of its
 * own, its EQ and counters) drive the core's progress, which places
 * requests, without taking those completions: they look into its inbox,
 * and a request they find has its completion read then
 * (pmv_serve_gate_shut).  (Served on events there too, a commit to a
 * target waiting in fi_cntr_wait waited one more pass of the wait: 1.37
 * read round trips against 1.25, PAGE 64 B.)  Counters and EQs, whose
 * reads run no domain's progress, keep their endpoints on their own read
 * lists.
 */
static enum pmv_serve_how pmv_serve_how(const struct pmv_ep *ep, int i,
					const struct pmv_hooks *list)
{
	if (list->progress != ep->domain || !ep->gated)
		return PMV_SERVE_BY_READS;
	return i == PMV_SERVE_RX_CQ ? PMV_SERVE_BY_GATE : PMV_SERVE_BY_READS;
}

/* How the hook of a list serves its endpoint now. */
static enum pmv_serve_how pmv_serve_hook_how(const struct pmv_hook *hook)
{
	return hook->evented ? PMV_SERVE_BY_GATE : PMV_SERVE_BY_READS;
}

/* A hook that serves ep: what a read of its object (or of a CQ of its
 * domain) runs, and a wait before it sleeps. */
static struct pmv_hook pmv_serve_hook_of(struct pmv_ep *ep)
{
	return (struct pmv_hook) { .progress = pmv_serve_hook,
				   .before_wait = pmv_serve_before_wait,
				   .arg = ep, .ep = ep };
}

/* Puts ep on its domain's served list, which the reads of the domain's
 * CQs that serve no endpoint of their own run, or takes it off. */
static void pmv_serve_on_domain(struct pmv_ep *ep, bool want)
{
	struct pmv_tgt *tgt = ep->tgt;

	if (want == tgt->on_served)
		return;
	if (want) {
		tgt->served_hook = pmv_serve_hook_of(ep);
		pmv_hooks_add(&ep->domain->served, &tgt->served_hook);
	} else {
		pmv_hooks_remove(&ep->domain->served, &tgt->served_hook);
	}
	tgt->on_served = want;
}

/* Hooks ep on list (its object i) as how says. */
static void pmv_serve_hook_on(struct pmv_ep *ep, int i, struct pmv_hooks *list,
			      enum pmv_serve_how how)
{
	struct pmv_hook *hook = &ep->tgt->serve_hook[i];

	*hook = pmv_serve_hook_of(ep);
	if (how == PMV_SERVE_BY_GATE &&
	    pmv_hooks_add_evented(list, hook, pmv_serve_gates))
		return;
	pmv_hooks_add(list, hook);
}

/*
 * Lets the application's reads of ep's CQs, EQ and counters serve ep, and
 * its waits on them hand it to the agent first (pmv_serve_how: a CQ's
 * reads through the domain's progress).  A CQ read also tells the agent
 * that the application progresses ep (an initiator reads only its
 * transmit CQ), so the agent stays off the core's locks.  Called again
 * when ep's objects or its gate change (fi_accept opens the gate after
 * the endpoint joined its agent): a hook whose list and way stay is kept.
 */
void pmv_serve_attach(struct pmv_ep *ep)
{
	struct pmv_tgt *tgt = ep->tgt;
	struct pmv_hooks *want[PMV_SERVE_OBJS];
	enum pmv_serve_how how;
	bool by_domain = false;

	pmv_serve_lists(ep, want);
	for (int i = 0; i < PMV_SERVE_OBJS; i++) {
		how = want[i] ? pmv_serve_how(ep, i, want[i]) :
				PMV_SERVE_BY_READS;
		/* without a gate, with a CQ of its domain */
		by_domain |= want[i] && !ep->gated &&
			     want[i]->progress == ep->domain;
		if (tgt->serve_on[i] == want[i] &&
		    (!want[i] ||
		     pmv_serve_hook_how(&tgt->serve_hook[i]) == how))
			continue;
		if (tgt->serve_on[i])
			pmv_hooks_remove(tgt->serve_on[i], &tgt->serve_hook[i]);
		__atomic_store_n(&tgt->serve_on[i], want[i], __ATOMIC_RELEASE);
		if (want[i])
			pmv_serve_hook_on(ep, i, want[i], how);
	}
	pmv_serve_on_domain(ep, by_domain);
	if (ep->gated)
		pmv_gate_serve_on(ep);
	pmv_agent_eps_changed(ep->domain);
}

/* Takes the hooks off; returns once no read is running them. */
void pmv_serve_detach(struct pmv_ep *ep)
{
	struct pmv_tgt *tgt = ep->tgt;

	if (ep->gated)
		pmv_gate_serve_off(ep);
	pmv_serve_on_domain(ep, false);
	for (int i = 0; i < PMV_SERVE_OBJS; i++) {
		if (tgt->serve_on[i])
			pmv_hooks_remove(tgt->serve_on[i], &tgt->serve_hook[i]);
		__atomic_store_n(&tgt->serve_on[i], NULL, __ATOMIC_RELEASE);
	}
	pmv_agent_eps_changed(ep->domain);
}
