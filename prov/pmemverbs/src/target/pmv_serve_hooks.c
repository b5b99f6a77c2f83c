/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: serving a target endpoint from the application's own reads.
 *
 * Each connected FI_RMA_PMEM endpoint hooks its CQs, EQ and counters: a
 * read of any serves the endpoint's waiting requests inline (a target that
 * busy-polls needs no other thread), and a wait on them hands the
 * endpoint back to the agent first.
 */
#include <unistd.h>

#include "target/pmv_target.h"

/*
 * The hook an endpoint's CQ runs when the application reads it: a target
 * that busy-polls serves its requests itself, with no other thread to be
 * scheduled on its core.
 */
static void pmv_serve_hook(void *arg)
{
	struct pmv_ep *ep = arg;
	uint64_t now = pmv_ms_now();
	uint64_t last = __atomic_load_n(&ep->tgt->hook_ms, __ATOMIC_RELAXED);

	if (last != now) {
		__atomic_store_n(&ep->tgt->hook_prev_ms, last, __ATOMIC_RELAXED);
		__atomic_store_n(&ep->tgt->hook_ms, now, __ATOMIC_RELAXED);
	}
	if (pmv_serve_pending(ep)) {
		pmv_served_here_us = pmv_us_now();
		(void) pmv_serve_try(ep->domain, ep);
	}
}

/*
 * True while the application's CQ reads serve ep (its hook ran within
 * PMV_SERVE_DEFER_MS, and the time before that within PMV_SERVE_DEFER_MS
 * of it: the application polls): the agent then leaves ep alone, so that
 * it never holds ep while preempted by a busy application on a shared
 * core.  One read now and then (a target that reads its CQ every 200 ms)
 * leaves ep to the agent: napping after such a read, the agent made one
 * commit in a hundred wait up to 2 ms (a p99 of 34 read round trips).
 */
bool pmv_serve_by_app(struct pmv_ep *ep, uint64_t now_ms)
{
	uint64_t last = __atomic_load_n(&ep->tgt->hook_ms, __ATOMIC_RELAXED);
	uint64_t prev = __atomic_load_n(&ep->tgt->hook_prev_ms,
					__ATOMIC_RELAXED);

	return last && now_ms - last < PMV_SERVE_DEFER_MS && prev &&
	       last - prev < PMV_SERVE_DEFER_MS;
}

/*
 * Before the application sleeps in a counter or EQ wait, which a request's
 * bytes do not end: serves what is there, and hands ep back to the agent
 * (an agent napping because the application served ep is woken).
 */
static void pmv_serve_before_wait(void *arg)
{
	struct pmv_ep *ep = arg;
	uint64_t one = 1;

	if (pmv_serve_pending(ep))
		(void) pmv_serve_try(ep->domain, ep);
	if (__atomic_exchange_n(&ep->tgt->hook_ms, 0, __ATOMIC_RELAXED))
		(void) !write(ep->domain->agent_wake_fd, &one, sizeof(one));
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

/*
 * Lets the application's reads of ep's CQs, EQ and counters serve ep, and
 * its waits on them hand it to the agent first.  A CQ read also tells the
 * agent that the application progresses ep (an initiator reads only its
 * transmit CQ), so the agent stays off the core's locks.
 */
void pmv_serve_attach(struct pmv_ep *ep)
{
	struct pmv_tgt *tgt = ep->tgt;
	struct pmv_hooks *want[PMV_SERVE_OBJS];

	pmv_serve_lists(ep, want);
	for (int i = 0; i < PMV_SERVE_OBJS; i++) {
		if (tgt->serve_on[i] == want[i])
			continue;
		if (tgt->serve_on[i])
			pmv_hooks_remove(tgt->serve_on[i], &tgt->serve_hook[i]);
		tgt->serve_on[i] = want[i];
		if (!want[i])
			continue;
		tgt->serve_hook[i] = (struct pmv_hook) {
			.progress = pmv_serve_hook,
			.before_wait = pmv_serve_before_wait, .arg = ep,
			.ep = ep };
		pmv_hooks_add(want[i], &tgt->serve_hook[i]);
	}
}

/* Takes the hooks off; returns once no read is running them. */
void pmv_serve_detach(struct pmv_ep *ep)
{
	struct pmv_tgt *tgt = ep->tgt;

	for (int i = 0; i < PMV_SERVE_OBJS; i++) {
		if (tgt->serve_on[i])
			pmv_hooks_remove(tgt->serve_on[i], &tgt->serve_hook[i]);
		tgt->serve_on[i] = NULL;
	}
}
