/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: the agent and an application that serves its endpoints
 * itself (it reads their CQs, EQ or counters: pmv_serve_app_list).  While
 * it serves them all the agent naps, and checks now and then that it
 * still does by asking the lists it was seen serving them through, not
 * each endpoint.
 */
#include <poll.h>
#include <unistd.h>

#include "target/pmv_agent.h"
#include "target/pmv_target.h"

/*
 * True while the application still serves every endpoint, as the last
 * pass that walked them found: each one through a list it reads (its
 * witness, remembered then) and nothing changed since (agent_eps_ver).
 * The agent then naps again without holding or looking at any endpoint:
 * walking 1024 endpoints after a nap took about 1 ms of the core the
 * application shares with it, at 60 naps a second.  Under the domain
 * lock: an endpoint leaves the agent under it, bumping the version, before
 * its CQs, EQ or counters (the lists' objects) can close.
 */
bool pmv_agent_app_still_serves(struct pmv_domain *dom, uint64_t now)
{
	struct pmv_agent *agent = dom->agent;
	bool all = agent->nwitness > 0;

	pmv_lock(&dom->lock, PMV_LOCK_DOMAIN);
	if (agent->witness_ver !=
	    __atomic_load_n(&dom->agent_eps_ver, __ATOMIC_SEQ_CST))
		all = false;
	for (size_t i = 0; all && i < agent->nwitness; i++)
		all = agent->witness_by_wait[i] ?
		      pmv_hooks_byte_waited(agent->witness[i]) :
		      pmv_hooks_app_reads(agent->witness[i], now);
	pmv_unlock(&dom->lock, PMV_LOCK_DOMAIN);
	return all;
}

/* Remembers list as one through which the application serves an
 * endpoint, by its reads or (by_wait) a wait in it; false if the agent
 * cannot remember one more. */
static bool pmv_agent_note_witness(struct pmv_agent *agent,
				   struct pmv_hooks *list, bool by_wait)
{
	for (size_t i = 0; i < agent->nwitness; i++)
		if (agent->witness[i] == list &&
		    agent->witness_by_wait[i] == by_wait)
			return true;
	if (agent->nwitness == PMV_AGENT_WITNESSES)
		return false;
	agent->witness_by_wait[agent->nwitness] = by_wait;
	agent->witness[agent->nwitness++] = list;
	return true;
}

/*
 * How many of the n held endpoints the application serves itself
 * (pmv_serve_app_list); remembers the lists it serves them through if it
 * serves all, under version ver.
 */
size_t pmv_agent_left_to_app(struct pmv_agent *agent, size_t n,
			     uint64_t now, uint64_t ver)
{
	struct pmv_hooks *list;
	size_t left = 0;
	bool known = true;

	agent->nwitness = 0;
	__atomic_add_fetch(&agent->walks, 1, __ATOMIC_RELAXED);
	for (size_t i = 0; i < n; i++) {
		bool by_wait = false;

		list = pmv_serve_app_list(agent->snap[i], now);
		if (!list) {
			list = pmv_serve_wait_list(agent->snap[i]);
			by_wait = true;
		}
		if (list) {
			left++;
			known = known &&
				pmv_agent_note_witness(agent, list, by_wait);
		}
	}
	if (left < n || !known)
		agent->nwitness = 0;
	agent->witness_ver = ver;
	return left;
}

/* Longest sleep of an agent whose application serves every endpoint. */
#define PMV_AGENT_APP_NAP_MAX_MS 16

/* True if the application serves every endpoint through waits on bytes
 * alone (pmv_hooks_byte_waited): the end of the last one wakes the agent,
 * as a change of endpoints does (pmv_agent_eps_changed). */
static bool pmv_agent_app_waits_only(const struct pmv_agent *agent)
{
	for (size_t i = 0; i < agent->nwitness; i++)
		if (!agent->witness_by_wait[i])
			return false;
	return agent->nwitness > 0;
}

/*
 * While the application serves every endpoint itself (it read their CQs
 * within the last PMV_SERVE_DEFER_MS, or waits in their receive CQs on
 * bytes: then with no timeout), the agent only looks, now and then,
 * whether that still holds: sleeps of 1 ms doubling to
 * PMV_AGENT_APP_NAP_MAX_MS, on its eventfd (an endpoint joined, or stop).
 * Each look takes the CPU from the application thread it shares a core
 * with: at one per millisecond, writes pipelined with a commit per MiB ran
 * 12-15% slower, and a busy-polling target's commit p99 was 22-30 us
 * instead of 9-14.  An application that stops reading is served by the
 * agent at most that sleep after PMV_SERVE_DEFER_MS.
 */
void pmv_agent_app_nap(struct pmv_agent *agent, long *app_nap)
{
	struct pollfd pfd = { .fd = agent->wake_fd, .events = POLLIN };
	uint64_t v;

	*app_nap = *app_nap ? (*app_nap < PMV_AGENT_APP_NAP_MAX_MS ?
			       *app_nap * 2 : PMV_AGENT_APP_NAP_MAX_MS) : 1;
	if (poll(&pfd, 1, pmv_agent_app_waits_only(agent) ? -1 :
			  (int) *app_nap) > 0)
		(void) !read(agent->wake_fd, &v, sizeof(v)); /* non-blocking */
}
