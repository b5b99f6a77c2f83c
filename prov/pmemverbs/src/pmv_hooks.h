/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: hook lists (pmv_hooks.c, pmv_hooks_agent.c), what a CQ,
 * counter or EQ runs when the application reads or waits on it, and the
 * domain's commit engines every such read runs.  Included by pmv.h.
 */
#ifndef PMV_HOOKS_H
#define PMV_HOOKS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct pmv_ep;
struct pmv_domain;

/*
 * Progress a CQ, counter or EQ runs when the application reads or waits on
 * it (pmv_hooks.c): the commit engine's acks and deferred operations, and
 * inline serving of commit requests.
 */
struct pmv_hook {
	void (*progress)(void *arg);
	/* run instead of progress before the thread sleeps in the core (a
	 * counter or EQ wait, which request bytes do not end); NULL: progress */
	void (*before_wait)(void *arg);
	bool (*busy)(void *arg);   /* work in flight that memory may end */
	/* an engine's: the list of the CQ it completes in, whose waits alone
	 * its work keeps busy (it runs from every CQ of its domain) */
	const struct pmv_hooks *busy_for;
	/* run instead of progress by a read of another CQ (busy_for is not
	 * that CQ's): progress only if no thread holds the engine; NULL:
	 * progress */
	void (*help)(void *arg);
	void *arg;
	struct pmv_ep *ep;         /* the endpoint served, or NULL */
	struct pmv_hook *next;
	struct pmv_hook **pprev;   /* what points to it: unlinked in O(1)
				    * (by hand, not <sys/queue.h>: reads load
				    * the head atomically, without the lock) */
	bool listed;               /* on its list (under the list's lock) */
	bool evented;              /* on the events list: reads do not run it
				    * (a gated endpoint's, served by its
				    * domain's progress on its gate's events;
				    * counted in the domain's gates_served) */
	bool park_idle;            /* off the read list while busy() is false
				    * (the commit engine with an empty ring):
				    * reads of a CQ with 1024 idle engines
				    * walk none of them */
	bool parked;               /* so, until pmv_hooks_wake (locked) */
};

struct pmv_hooks {
	pthread_mutex_t lock;      /* the links only: hooks run without it */
	struct pmv_hook *head;     /* run by every read, which walks it
				    * without the lock (pmv_hooks_each) */
	unsigned epoch;            /* its parity: the side of walkers that
				    * walks join (atomic; flipped under the
				    * lock by pmv_hooks_drain) */
	int walkers[2];            /* walks running, by side (atomic): a
				    * removal waits for the side the walks
				    * that may reach its hook joined */
	bool draining;             /* a removal waits so (under the lock) */
	struct pmv_hook *ev_head;  /* endpoints served on events */
	/* the domain whose one progress every read of the object runs after
	 * its own list (pmv_hooks_run_domain): its confirmed gates and its
	 * commit engines.  NULL: none (a counter, which reads its endpoints'
	 * transmit CQs; an EQ, whose endpoints may be of several domains;
	 * the engines' own list) */
	struct pmv_domain *progress;
	struct pmv_domain *dom;    /* the domain of the endpoints served
				    * (the first one's; NULL: none yet) */
	bool multi_dom;            /* endpoints of other domains too */
	int serving;               /* endpoints served through it (atomic) */
	uint64_t app_ms;           /* when the application last read it
				    * (pmv_ms_now; 0: it waits, or never) */
	uint64_t app_prev_ms;      /* the read before that (atomic both) */
	int byte_waiters;          /* application threads in this CQ's
				    * fi_cq_sread waiting on its fds, whose
				    * bytes end the wait (atomic) */
	bool agent_relies;         /* the agent naps because of them: the
				    * last one's end wakes it (atomic) */
};

/* The application read ep's CQ this recently (ms): it serves ep itself. */
#define PMV_SERVE_DEFER_MS 2

/* pmv_hooks.c */
/* When this thread's hook last found a request (pmv_us_now): waits spin on */
extern __thread uint64_t pmv_served_here_us;
bool pmv_wait_spins(uint64_t woke_us);
void pmv_hooks_add(struct pmv_hooks *hooks, struct pmv_hook *hook);
void pmv_hooks_remove(struct pmv_hooks *hooks, struct pmv_hook *hook);
void pmv_hooks_wake(struct pmv_hooks *hooks, struct pmv_hook *hook);
bool pmv_hooks_add_evented(struct pmv_hooks *hooks, struct pmv_hook *hook,
			   void (*serve_gates)(struct pmv_domain *dom,
					       uint64_t now_ms));

/* pmv_hooks_agent.c */
bool pmv_hooks_app_reads(struct pmv_hooks *hooks, uint64_t now_ms);
void pmv_hooks_byte_wait_begin(struct pmv_hooks *hooks);
void pmv_hooks_byte_wait_end(struct pmv_hooks *hooks, struct pmv_domain *dom);
bool pmv_hooks_byte_waited(struct pmv_hooks *hooks);
void pmv_hooks_wake_agent(struct pmv_domain *dom);

#endif /* PMV_HOOKS_H */
