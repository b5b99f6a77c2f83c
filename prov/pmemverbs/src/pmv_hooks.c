/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: hook lists.  A CQ, counter or EQ that pmem endpoints are
 * bound to keeps their progress functions (the commit engine's acks,
 * inline serving of commit requests) and runs them whenever the
 * application reads or waits on it, so that a target application that
 * polls any of them serves its commit requests on its own thread.
 */
#include <stdlib.h>

#include "pmv_objects.h"

void pmv_hooks_init(struct pmv_hooks *hooks)
{
	pthread_mutex_init(&hooks->lock, NULL);
	hooks->head = NULL;
}

void pmv_hooks_fini(struct pmv_hooks *hooks)
{
	pthread_mutex_destroy(&hooks->lock);
}

/*
 * Closes a counter or EQ wrapper: its core object, then its hook list and
 * itself.  A core object still bound to an endpoint refuses to close, and
 * the endpoint's hooks stay where they are.
 */
int pmv_hooks_close_wrapper(struct fid *core_fid, const char *what,
			    struct pmv_hooks *hooks, void *wrapper)
{
	int ret = pmv_close_core(core_fid, what);

	if (ret)
		return ret;
	pmv_hooks_fini(hooks);
	free(wrapper);
	return 0;
}

void pmv_hooks_add(struct pmv_hooks *hooks, struct pmv_hook *hook)
{
	pthread_mutex_lock(&hooks->lock);
	hook->next = hooks->head;
	__atomic_store_n(&hooks->head, hook, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&hooks->lock);
}

/* Takes hook off the list; returns once no read is running it. */
void pmv_hooks_remove(struct pmv_hooks *hooks, struct pmv_hook *hook)
{
	struct pmv_hook **pp;

	pthread_mutex_lock(&hooks->lock);
	for (pp = &hooks->head; *pp; pp = &(*pp)->next) {
		if (*pp == hook) {
			__atomic_store_n(pp, hook->next, __ATOMIC_RELEASE);
			break;
		}
	}
	pthread_mutex_unlock(&hooks->lock);
}

/* Runs every hook's progress, or before a wait its before_wait if set. */
static void pmv_hooks_each(struct pmv_hooks *hooks, bool before_wait)
{
	struct pmv_hook *h;

	if (!__atomic_load_n(&hooks->head, __ATOMIC_ACQUIRE))
		return; /* a plain object: no lock on its reads */
	pthread_mutex_lock(&hooks->lock);
	for (h = hooks->head; h; h = h->next) {
		if (before_wait && h->before_wait)
			h->before_wait(h->arg);
		else
			h->progress(h->arg);
	}
	pthread_mutex_unlock(&hooks->lock);
}

void pmv_hooks_run(struct pmv_hooks *hooks)
{
	pmv_hooks_each(hooks, false);
}

void pmv_hooks_run_before_wait(struct pmv_hooks *hooks)
{
	pmv_hooks_each(hooks, true);
}

/* True if a hook reports work in flight (commits whose acks may land). */
bool pmv_hooks_busy(struct pmv_hooks *hooks)
{
	struct pmv_hook *h;
	bool busy = false;

	if (!__atomic_load_n(&hooks->head, __ATOMIC_ACQUIRE))
		return false;
	pthread_mutex_lock(&hooks->lock);
	for (h = hooks->head; h && !busy; h = h->next)
		busy = h->busy && h->busy(h->arg);
	pthread_mutex_unlock(&hooks->lock);
	return busy;
}

/*
 * Holds (serve_holds: its close waits) up to max endpoints that hooks
 * serve, into eps; returns how many.  The caller drops the holds.
 */
unsigned pmv_hooks_hold_eps(struct pmv_hooks *hooks, struct pmv_ep **eps,
			    unsigned max)
{
	struct pmv_hook *h;
	unsigned n = 0;

	if (!__atomic_load_n(&hooks->head, __ATOMIC_ACQUIRE))
		return 0;
	pthread_mutex_lock(&hooks->lock);
	for (h = hooks->head; h && n < max; h = h->next) {
		if (!h->ep)
			continue;
		__atomic_add_fetch(&h->ep->serve_holds, 1, __ATOMIC_ACQ_REL);
		eps[n++] = h->ep;
	}
	pthread_mutex_unlock(&hooks->lock);
	return n;
}
