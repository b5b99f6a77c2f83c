/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: the wakes of a domain's sleeping threads (pmv_wake.c).
 * Included by pmv.h.
 *
 * An application thread that sleeps on a pmemverbs object itself (a poll
 * on the fds fi_control(FI_GETWAIT) gives, in fi_cq_sread or
 * fi_cntr_wait) also polls an eventfd of its own, listed in the domain
 * while it sleeps.  What may end its sleep without bytes on those fds (a
 * commit started, an entry pmemverbs queued in the CQ) writes the
 * eventfds of the threads asleep on that object.  The core's signal
 * (fi_cq_signal) wakes them too, but any thread's fi_trywait of the same
 * core CQ may drain it first; nobody else reads a thread's eventfd.
 */
#ifndef PMV_WAKE_H
#define PMV_WAKE_H

#include <poll.h>
#include <pthread.h>
#include <stdbool.h>

/* A thread asleep on an object of a domain (on its stack while listed). */
struct pmv_sleeper {
	const void *on;             /* the object it sleeps on (a CQ) */
	struct pmv_domain *dom;
	struct pollfd *slot;        /* its eventfd's place in the poll */
	struct pmv_sleeper *next;
	struct pmv_sleeper **pprev;
};

/* The threads asleep on a domain's objects. */
struct pmv_wakes {
	pthread_mutex_t lock;       /* the list; a leaf, held only to link,
				     * unlink and write eventfds */
	struct pmv_sleeper *head;
	int count;                  /* sleepers listed (atomic): a wake
				     * with none takes no lock */
};

struct pmv_domain;

void pmv_wakes_init(struct pmv_wakes *wakes);
void pmv_wakes_fini(struct pmv_wakes *wakes);
nfds_t pmv_sleep_begin(struct pmv_sleeper *s, struct pmv_domain *dom,
		       const void *on, struct pollfd *slot);
bool pmv_sleep_end(struct pmv_sleeper *s);
void pmv_wake_sleepers_on(struct pmv_domain *dom, const void *on);
void pmv_wake_fini(void);

#endif /* PMV_WAKE_H */
