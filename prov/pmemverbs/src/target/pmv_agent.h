/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: the agent thread's state, shared by its loop (pmv_agent.c),
 * its sleep (pmv_agent_sleep.c) and its naps beside an application that
 * serves (pmv_agent_app.c), and its endpoint list to the profile
 * pushes (pmv_publish.c); internal to those files.
 */
#ifndef PMV_AGENT_H
#define PMV_AGENT_H

#include <poll.h>
#include <sys/queue.h>

#include "pmv.h"

/* CQs (and lists) listed distinct up to this many; past it one may be
 * listed twice (progressed or slept on twice, which is harmless), so that
 * building the list stays linear in the endpoints. */
#define PMV_AGENT_DEDUPE 64

/* A growable list of core CQs; distinct while short (pmv_agent_cqs_add). */
struct pmv_agent_cqs {
	struct pmv_cq **cq;
	size_t n, cap;
};

/* What the agent sleeps on: fds and the CQ each came from (NULL: its
 * eventfd). */
struct pmv_agent_fds {
	struct pollfd *fd;
	struct pmv_cq **cq;
	size_t n, cap;
};

/*
 * What a pass needs once the endpoints served on their gates' events are
 * left out (pmv_agent_plan.c): made by a pass that held every endpoint,
 * kept while dom->agent_eps_ver stays the same; the agent thread's alone.
 */
struct pmv_agent_plan {
	bool made;
	uint64_t ver;              /* dom->agent_eps_ver it was made under */
	struct pmv_ep **ep;        /* ep[0 .. nwalk): endpoints looked at;
				    * ep[0 .. nhold): endpoints held, which
				    * keeps every list and CQ below open */
	size_t nwalk, nhold, ep_cap;
	struct pmv_hooks **list;   /* the lists whose reads serve them all */
	size_t nlists, list_cap;
	struct pmv_agent_cqs cqs;  /* their CQs, progressed by a pass */
};

/* Distinct lists the agent remembers as serving every endpoint; past
 * them it walks the endpoints on each pass, as with none. */
#define PMV_AGENT_WITNESSES 8

struct pmv_agent {
	pthread_t thread;
	bool threaded;          /* thread runs (pmv_agent_threaded): else
				 * only the list of the domain's target
				 * endpoints, served by the application */
	bool stop;
	LIST_HEAD(, pmv_ep) eps; /* under domain->lock */
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
	/* the agent thread's alone: */
	/* the lists through which the application served every endpoint at
	 * the last pass that found so, one per endpoint at most
	 * (pmv_agent_app_still_serves); n 0: none is known */
	struct pmv_hooks *witness[PMV_AGENT_WITNESSES];
	bool witness_by_wait[PMV_AGENT_WITNESSES]; /* by a wait on bytes
				 * (pmv_hooks_byte_waited), not by reads */
	size_t nwitness;
	uint64_t witness_ver;   /* dom->agent_eps_ver they were seen under */
	uint64_t passes;        /* passes (statistics, as walks) */
	uint64_t walks;         /* passes that looked at endpoints one by
				 * one: every one, or by the plan those
				 * without a gate (statistics; tests read
				 * it, atomically) */
	uint64_t trywaits;      /* its fi_trywait calls before sleeps
				 * (statistics; tests read it, atomically) */
	struct pmv_agent_cqs cqs;   /* a pass's or a sleep's CQs */
	struct pmv_agent_fds fds;   /* a sleep's fds */
	struct pmv_agent_cqs woken; /* CQs whose fds ended the last sleep */
	struct pmv_agent_plan plan; /* passes that look at no gated endpoint */
	bool woken_only;            /* passes until the next sleep progress
				     * only those (with the CQs that become
				     * readable meanwhile) */
	bool fd_wake;               /* CQ fds alone ended the last sleep and
				     * no pass ran since */
	bool slept;                 /* no pass since the last sleep (or its
				     * look found work pending) */
	size_t sleep_cqs;           /* CQs the last sleep listed */
	uint64_t looked_us;         /* the last pmv_agent_look_again */
	unsigned idle_wakes;        /* fd wakes in a row that served nothing */
	long stale_ms;              /* sleep bound while fds stay readable */
};

enum pmv_agent_rest {
	PMV_REST_SLEPT,   /* the whole time */
	PMV_REST_WOKEN,   /* an fd became readable, an endpoint joined, stop */
	PMV_REST_CANNOT,  /* no fds to sleep on */
	PMV_REST_PENDING, /* work was pending: did not sleep */
};

/* pmv_agent_app.c */
bool pmv_agent_app_still_serves(struct pmv_domain *dom, uint64_t now);
size_t pmv_agent_left_to_app(struct pmv_agent *agent, size_t n,
			     uint64_t now, uint64_t ver);
void pmv_agent_app_nap(struct pmv_agent *agent, long *app_nap);

/* pmv_agent_plan.c */
void pmv_agent_plan_make(struct pmv_agent *agent, size_t n, uint64_t ver);
int pmv_agent_plan_pass(struct pmv_domain *dom, uint64_t now);
void pmv_agent_plan_free(struct pmv_agent_plan *plan);

/* pmv_agent_sleep.c */
bool pmv_agent_cqs_add(struct pmv_agent_cqs *set, struct pmv_cq *cq);
bool pmv_agent_cqs_has(const struct pmv_agent_cqs *set,
		       const struct pmv_cq *cq);
bool pmv_agent_cqs_waited(const struct pmv_cq *rx, const struct pmv_cq *tx);
bool pmv_agent_app_waits(const struct pmv_ep *ep);
enum pmv_agent_rest pmv_agent_sleep(struct pmv_domain *dom);
void pmv_agent_look_again(struct pmv_agent *agent);
size_t pmv_agent_hold_eps(struct pmv_agent *agent);
void pmv_agent_drop_eps(struct pmv_agent *agent, size_t n);
void pmv_agent_wake(struct pmv_agent *agent);
void pmv_agent_sleep_free(struct pmv_agent *agent);

#endif /* PMV_AGENT_H */
