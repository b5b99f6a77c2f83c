/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: hook lists.  A CQ, counter or EQ that pmem endpoints are
 * bound to keeps their progress functions (the commit engine's acks,
 * inline serving of commit requests) and runs them whenever the
 * application reads or waits on it, so that a target application that
 * polls any of them serves its commit requests on its own thread.
 */
#include <sched.h>
#include <stdlib.h>

#include "pmv_objects.h"

__thread uint64_t pmv_served_here_us;

/*
 * True within FI_PMEMVERBS_SREAD_SPIN_US of woke_us (bytes woke the wait;
 * 0: never) or of the last request this thread's hooks found: a wait
 * (fi_cq_sread, fi_cntr_wait) polls on instead of sleeping, as a commit's
 * next request comes a round trip after its ack, and a thread that slept
 * wakes later than it comes.
 */
bool pmv_wait_spins(uint64_t woke_us)
{
	uint64_t last = pmv_served_here_us > woke_us ? pmv_served_here_us :
						       woke_us;

	return pmv_params.sread_spin_us > 0 && last &&
	       pmv_us_now() - last < (uint64_t) pmv_params.sread_spin_us;
}

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
	pmv_lock(&hooks->lock, PMV_LOCK_HOOKS);
	hook->next = hooks->head;
	hook->listed = true;
	__atomic_store_n(&hooks->head, hook, __ATOMIC_RELEASE);
	pmv_unlock(&hooks->lock, PMV_LOCK_HOOKS);
}

/* Runs left of hook, read under the list's lock (a remover polls it). */
static int pmv_hook_runs(struct pmv_hooks *hooks, struct pmv_hook *hook)
{
	int runs;

	pmv_lock(&hooks->lock, PMV_LOCK_HOOKS);
	runs = hook->runs;
	pmv_unlock(&hooks->lock, PMV_LOCK_HOOKS);
	return runs;
}

/*
 * Takes hook off the list; returns once no read is running it (reads run
 * hooks without the list's lock, each hook held by its runs count).  Never
 * called from a hook.
 */
void pmv_hooks_remove(struct pmv_hooks *hooks, struct pmv_hook *hook)
{
	struct pmv_hook **pp;

	pmv_lock(&hooks->lock, PMV_LOCK_HOOKS);
	for (pp = &hooks->head; *pp; pp = &(*pp)->next) {
		if (*pp == hook) {
			__atomic_store_n(pp, hook->next, __ATOMIC_RELEASE);
			break;
		}
	}
	hook->listed = false;
	pmv_unlock(&hooks->lock, PMV_LOCK_HOOKS);
	while (pmv_hook_runs(hooks, hook))
		sched_yield();
}

/*
 * The hook to run after h (NULL: the first), held for the run; h, if not
 * NULL, is let go.  A hook taken off the list while it ran has no next
 * one to trust: the walk starts again from the head (running a hook twice
 * is harmless; removals are rare).
 */
static struct pmv_hook *pmv_hooks_next(struct pmv_hooks *hooks,
				       struct pmv_hook *h)
{
	struct pmv_hook *next;

	pmv_lock(&hooks->lock, PMV_LOCK_HOOKS);
	next = h && h->listed ? h->next : hooks->head;
	if (h)
		h->runs--;
	if (next)
		next->runs++;
	pmv_unlock(&hooks->lock, PMV_LOCK_HOOKS);
	return next;
}

/*
 * Runs every hook's progress, or before a wait its before_wait if set,
 * with no lock held: a hook serves requests (persists, posts acks) and
 * progresses the commit engine (posts), and other reads of the same
 * object must not wait behind it.
 */
static void pmv_hooks_each(struct pmv_hooks *hooks, bool before_wait)
{
	struct pmv_hook *h = NULL;

	if (!__atomic_load_n(&hooks->head, __ATOMIC_ACQUIRE))
		return; /* a plain object: no lock on its reads */
	while ((h = pmv_hooks_next(hooks, h))) {
		if (before_wait && h->before_wait)
			h->before_wait(h->arg);
		else
			h->progress(h->arg);
	}
}

void pmv_hooks_run(struct pmv_hooks *hooks)
{
	pmv_hooks_each(hooks, false);
}

void pmv_hooks_run_before_wait(struct pmv_hooks *hooks)
{
	pmv_hooks_each(hooks, true);
}

/*
 * True if a hook reports work in flight (commits whose acks may land);
 * asked with no lock held, as progress is (a counter's hook asks its
 * endpoint's CQ's hooks).
 */
bool pmv_hooks_busy(struct pmv_hooks *hooks)
{
	struct pmv_hook *h = NULL;
	bool busy = false;

	if (!__atomic_load_n(&hooks->head, __ATOMIC_ACQUIRE))
		return false;
	while ((h = pmv_hooks_next(hooks, h)))
		busy = busy || (h->busy && h->busy(h->arg));
	return busy;
}

/*
 * Holds (pmv_tgt_hold: its close waits) up to max endpoints that hooks
 * serve, into eps; returns how many.  The caller drops the holds.
 */
unsigned pmv_hooks_hold_eps(struct pmv_hooks *hooks, struct pmv_ep **eps,
			    unsigned max)
{
	struct pmv_hook *h;
	unsigned n = 0;

	if (!__atomic_load_n(&hooks->head, __ATOMIC_ACQUIRE))
		return 0;
	pmv_lock(&hooks->lock, PMV_LOCK_HOOKS);
	for (h = hooks->head; h && n < max; h = h->next) {
		if (!h->ep)
			continue;
		pmv_tgt_hold(h->ep);
		eps[n++] = h->ep;
	}
	pmv_unlock(&hooks->lock, PMV_LOCK_HOOKS);
	return n;
}
