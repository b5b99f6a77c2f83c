/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: what a hook list tells the agent about the application: when
 * it last read the object (its reads serve the endpoints: the agent leaves
 * them alone), which threads wait on the object's bytes (the agent naps
 * meanwhile), and the wakes of a napping agent.
 */
#include <unistd.h>

#include "pmv_objects.h"

/* Notes a read by the application, at now (ms), of an object serving
 * endpoints. */
void pmv_hooks_note_read(struct pmv_hooks *hooks, uint64_t now)
{
	uint64_t last = __atomic_load_n(&hooks->app_ms, __ATOMIC_RELAXED);

	if (last == now)
		return;
	__atomic_store_n(&hooks->app_prev_ms, last, __ATOMIC_RELAXED);
	__atomic_store_n(&hooks->app_ms, now, __ATOMIC_RELAXED);
}

/*
 * True while the application's reads of this object serve its endpoints:
 * it read it within PMV_SERVE_DEFER_MS, and the read before that within
 * PMV_SERVE_DEFER_MS of it (it polls).  One read now and then (a target
 * that reads its CQ every 200 ms) leaves them to the agent.
 */
bool pmv_hooks_app_reads(struct pmv_hooks *hooks, uint64_t now_ms)
{
	uint64_t last = __atomic_load_n(&hooks->app_ms, __ATOMIC_RELAXED);
	uint64_t prev = __atomic_load_n(&hooks->app_prev_ms, __ATOMIC_RELAXED);

	return last && now_ms - last < PMV_SERVE_DEFER_MS && prev &&
	       last - prev < PMV_SERVE_DEFER_MS;
}

/* Wakes the agent of dom, if it has one (it may nap because the
 * application served); an eventfd write never blocks. */
void pmv_hooks_wake_agent(struct pmv_domain *dom)
{
	uint64_t one = 1;
	int fd = __atomic_load_n(&dom->agent_wake_fd, __ATOMIC_RELAXED);

	if (fd >= 0)
		(void) !write(fd, &one, sizeof(one));
}

/*
 * Wakes the agents of the domains whose endpoints hooks serves, under the
 * list's lock (an endpoint, and so its domain, cannot go meanwhile); an
 * eventfd write never blocks.
 */
void pmv_hooks_wake_agents(struct pmv_hooks *hooks)
{
	struct pmv_hook *lists[2], *h;

	pmv_lock(&hooks->lock, PMV_LOCK_HOOKS);
	if (hooks->dom && !hooks->multi_dom)
		pmv_hooks_wake_agent(hooks->dom);
	lists[0] = hooks->multi_dom ? hooks->head : NULL;
	lists[1] = hooks->multi_dom ? hooks->ev_head : NULL;
	for (int i = 0; i < 2; i++)
		for (h = lists[i]; h; h = h->next)
			if (h->ep)
				pmv_hooks_wake_agent(h->ep->domain);
	pmv_unlock(&hooks->lock, PMV_LOCK_HOOKS);
}

/*
 * An application thread starts a wait in this CQ's fi_cq_sread that the
 * bytes of a request end (pmv_cq_poll_core: a poll on the fds FI_GETWAIT
 * gives, the ones the agent sleeps on): it serves the endpoints receiving
 * here itself, and the agent naps meanwhile (pmv_serve_wait_list).
 */
void pmv_hooks_byte_wait_begin(struct pmv_hooks *hooks)
{
	__atomic_add_fetch(&hooks->byte_waiters, 1, __ATOMIC_SEQ_CST);
}

/*
 * Its wait ended (the sread returns, or falls back to a wait that bytes do
 * not end): the last such thread wakes the agent if it napped relying on
 * them (pmv_hooks_byte_waited; both sides seq_cst, so one sees the other).
 */
void pmv_hooks_byte_wait_end(struct pmv_hooks *hooks, struct pmv_domain *dom)
{
	if (!__atomic_sub_fetch(&hooks->byte_waiters, 1, __ATOMIC_SEQ_CST) &&
	    __atomic_load_n(&hooks->agent_relies, __ATOMIC_SEQ_CST) &&
	    __atomic_exchange_n(&hooks->agent_relies, false, __ATOMIC_SEQ_CST))
		pmv_hooks_wake_agent(dom);
}

/*
 * True if an application thread waits on this CQ's bytes
 * (pmv_hooks_byte_wait_begin); the agent, which asks, relies on it from
 * then on: the last waiter's end wakes it.
 */
bool pmv_hooks_byte_waited(struct pmv_hooks *hooks)
{
	if (!__atomic_load_n(&hooks->byte_waiters, __ATOMIC_ACQUIRE))
		return false;
	__atomic_store_n(&hooks->agent_relies, true, __ATOMIC_SEQ_CST);
	return __atomic_load_n(&hooks->byte_waiters, __ATOMIC_SEQ_CST) != 0;
}
