/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: hook lists.  A CQ, counter or EQ that pmem endpoints are
 * bound to keeps their serving (inline serving of commit requests) and
 * runs it whenever the application reads or waits on it, so that a target
 * application that polls any of them serves its commit requests on its
 * own thread.  A domain's one progress, which every read and wait of its
 * CQs runs after the CQ's own list (pmv_hooks_run_domain), serves the
 * gates its endpoints' requests confirmed and runs its endpoints' commit
 * engines (acks, deferred operations), each kind kept on one list; from a
 * CQ that serves no endpoint of its own, it also looks into the inboxes
 * of the domain's endpoints without a gate.
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

/* An object's list; progress: the domain whose progress its reads run too
 * (NULL: none). */
void pmv_hooks_init(struct pmv_hooks *hooks, struct pmv_domain *progress)
{
	*hooks = (struct pmv_hooks) { .progress = progress };
	pthread_mutex_init(&hooks->lock, NULL);
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

/* Pushes hook on the list head points to; the list's lock held. */
static void pmv_hooks_push(struct pmv_hook **head, struct pmv_hook *hook)
{
	/* a walk may still stand on a parked hook and load its next */
	__atomic_store_n(&hook->next, *head, __ATOMIC_RELAXED);
	hook->pprev = head;
	if (hook->next)
		hook->next->pprev = &hook->next;
	hook->listed = true;
	__atomic_store_n(head, hook, __ATOMIC_RELEASE);
}

/* Counts an endpoint served through hooks and notes its domain; locked. */
static void pmv_hooks_count_ep(struct pmv_hooks *hooks,
			       const struct pmv_hook *hook)
{
	if (!hook->ep)
		return;
	if (!hooks->dom)
		hooks->dom = hook->ep->domain;
	else if (hooks->dom != hook->ep->domain)
		hooks->multi_dom = true;
	__atomic_add_fetch(&hooks->serving, 1, __ATOMIC_RELAXED);
}

void pmv_hooks_add(struct pmv_hooks *hooks, struct pmv_hook *hook)
{
	pmv_lock(&hooks->lock, PMV_LOCK_HOOKS);
	hook->evented = false;
	pmv_hooks_count_ep(hooks, hook);
	if (hook->park_idle && !hook->busy(hook->arg))
		hook->parked = true;
	else
		pmv_hooks_push(&hooks->head, hook);
	pmv_unlock(&hooks->lock, PMV_LOCK_HOOKS);
}

/*
 * Puts a parked hook back on the read list: its busy() has just turned
 * true (the engine's first commit in an empty ring), and the caller holds
 * what keeps it true (the engine's lock).  A walk parks a hook under this
 * list's lock after finding it idle (pmv_hook_park_if_idle), so either that
 * walk saw it busy or this call sees it parked.
 */
void pmv_hooks_wake(struct pmv_hooks *hooks, struct pmv_hook *hook)
{
	pmv_lock(&hooks->lock, PMV_LOCK_HOOKS);
	if (hook->parked) {
		hook->parked = false;
		pmv_hooks_push(&hooks->head, hook);
	}
	pmv_unlock(&hooks->lock, PMV_LOCK_HOOKS);
}

/*
 * Adds hook (a gated endpoint's) to the events list, which reads do not
 * run: its requests are served when its gate confirms them.  The list
 * counts the endpoint (the agent leaves it alone while the application
 * reads the list) and holds it for counter waits.  From the first such
 * endpoint of the domain on, every read of the domain's CQs runs
 * serve_gates (pmv_hooks_run_domain), which serves the domain's confirmed
 * gates.  False (nothing done): the list's reads do not run the
 * endpoint's domain's progress (a counter's, an EQ's); add hook to the
 * read list then.
 */
bool pmv_hooks_add_evented(struct pmv_hooks *hooks, struct pmv_hook *hook,
			   void (*serve_gates)(struct pmv_domain *dom,
					       uint64_t now_ms))
{
	struct pmv_domain *dom = hook->ep->domain;

	if (hooks->progress != dom)
		return false;
	pmv_lock(&hooks->lock, PMV_LOCK_HOOKS);
	hook->evented = true;
	pmv_hooks_count_ep(hooks, hook);
	pmv_hooks_push(&hooks->ev_head, hook);
	pmv_unlock(&hooks->lock, PMV_LOCK_HOOKS);
	/* stored before the count that makes reads call it (release) */
	__atomic_store_n(&dom->serve_gates, serve_gates, __ATOMIC_RELAXED);
	__atomic_add_fetch(&dom->gates_served, 1, __ATOMIC_RELEASE);
	return true;
}

/* Unlinks hook from its list, if on one, through its back link (a walk
 * to find it made closing N endpoints cost N^2/2 steps); locked.  The
 * store a walk may race with is sequentially consistent (pmv_hooks_drain). */
static void pmv_hooks_unlink(struct pmv_hook *hook)
{
	if (hook->listed) {
		if (hook->next)
			hook->next->pprev = hook->pprev;
		__atomic_store_n(hook->pprev, hook->next, __ATOMIC_SEQ_CST);
	}
	hook->listed = false;
}

/* Joins the walks of hooks: returns the side to leave (the epoch's parity
 * now; pmv_hooks_drain). */
static unsigned pmv_hooks_join(struct pmv_hooks *hooks)
{
	unsigned side = __atomic_load_n(&hooks->epoch, __ATOMIC_ACQUIRE) & 1;

	__atomic_add_fetch(&hooks->walkers[side], 1, __ATOMIC_SEQ_CST);
	return side;
}

static void pmv_hooks_leave(struct pmv_hooks *hooks, unsigned side)
{
	__atomic_sub_fetch(&hooks->walkers[side], 1, __ATOMIC_RELEASE);
}

/*
 * Returns once no walk that may still reach a hook unlinked before this
 * call runs.  The epoch flips, so that walks that start now join the other
 * side (they start from the head, past the unlink), and the side the
 * earlier walks joined empties.  A walk that read the old epoch but
 * joined after the side was seen empty loads the head after the unlink
 * (both sequentially consistent).  One drain at a time per list: a second
 * flip would send new walks to the side the first one waits on.  No lock
 * held while it waits; never called from a hook (it would wait for
 * itself).
 */
static void pmv_hooks_drain(struct pmv_hooks *hooks)
{
	unsigned side;

	for (;;) {
		pmv_lock(&hooks->lock, PMV_LOCK_HOOKS);
		if (!hooks->draining)
			break;
		pmv_unlock(&hooks->lock, PMV_LOCK_HOOKS);
		sched_yield();
	}
	hooks->draining = true;
	side = hooks->epoch & 1;
	__atomic_store_n(&hooks->epoch, hooks->epoch + 1, __ATOMIC_SEQ_CST);
	pmv_unlock(&hooks->lock, PMV_LOCK_HOOKS);
	while (__atomic_load_n(&hooks->walkers[side], __ATOMIC_SEQ_CST))
		sched_yield();
	pmv_lock(&hooks->lock, PMV_LOCK_HOOKS);
	hooks->draining = false;
	pmv_unlock(&hooks->lock, PMV_LOCK_HOOKS);
}

/*
 * Takes hook off its list; returns once no read is running it or may
 * still reach it (reads walk the list without its lock:
 * pmv_hooks_drain).  An evented hook leaves its domain's count: the last
 * one stops the reads' serve_gates (pmv_gate_serve_off waits for a serve
 * that found its endpoint; the domain outlives its CQs).  Never called
 * from a hook.
 */
void pmv_hooks_remove(struct pmv_hooks *hooks, struct pmv_hook *hook)
{
	bool evented, walked;

	pmv_lock(&hooks->lock, PMV_LOCK_HOOKS);
	evented = hook->listed && hook->evented;
	/* on the read list, or parked off it by a walk that may still hold
	 * it; an evented hook is never walked without the lock */
	walked = !hook->evented && (hook->listed || hook->parked);
	hook->parked = false;
	if (hook->listed && hook->ep &&
	    !__atomic_sub_fetch(&hooks->serving, 1, __ATOMIC_RELAXED)) {
		hooks->dom = NULL; /* it may close now */
		hooks->multi_dom = false;
	}
	pmv_hooks_unlink(hook);
	pmv_unlock(&hooks->lock, PMV_LOCK_HOOKS);
	if (evented)
		__atomic_sub_fetch(&hook->ep->domain->gates_served, 1,
				   __ATOMIC_RELEASE);
	if (walked)
		pmv_hooks_drain(hooks);
}

/*
 * After a walk ran h (one that parks while idle: the commit engine): takes
 * it off the read list if it is idle now.  Checked again under the list's
 * lock, which pmv_hooks_wake takes too: either this sees the engine busy
 * or its next commit sees the hook parked.
 */
static void pmv_hook_park_if_idle(struct pmv_hooks *hooks, struct pmv_hook *h)
{
	if (h->busy(h->arg))
		return;
	pmv_lock(&hooks->lock, PMV_LOCK_HOOKS);
	if (h->listed && !h->busy(h->arg)) {
		pmv_hooks_unlink(h);
		h->parked = true;
	}
	pmv_unlock(&hooks->lock, PMV_LOCK_HOOKS);
}

enum pmv_hooks_call { PMV_HOOKS_PROGRESS, PMV_HOOKS_BEFORE_WAIT,
		      PMV_HOOKS_BUSY };

/*
 * Calls one hook as call says, for a read of asker (NULL: the hook's own
 * list); true if it reports work in flight (busy) for asker's waits (an
 * engine only for its transmit CQ's).  An engine run from another CQ's
 * read only helps (h->help): threads that each read their own CQ do not
 * queue on one another's engines.
 */
static bool pmv_hook_call(struct pmv_hook *h, enum pmv_hooks_call call,
			  const struct pmv_hooks *asker)
{
	bool foreign = asker && h->busy_for != asker;

	if (call == PMV_HOOKS_BUSY)
		return h->busy && !foreign && h->busy(h->arg);
	if (foreign && h->help)
		h->help(h->arg);
	else if (call == PMV_HOOKS_BEFORE_WAIT && h->before_wait)
		h->before_wait(h->arg);
	else
		h->progress(h->arg);
	return false;
}

/*
 * Calls every hook of the read list, with no lock held: a hook serves
 * requests (persists, posts acks) and progresses the commit engine
 * (posts), and other reads of the same object must not wait behind it.
 * The walk writes no hook and takes no lock (but to park an idle engine):
 * it joins the list's walks, which a removal waits for (pmv_hooks_drain).
 * A hook parked or re-added meanwhile keeps a next that leads to the end
 * of the list (running a hook twice is harmless).  True if a hook
 * reported work in flight for asker (PMV_HOOKS_BUSY: the walk stops;
 * pmv_hook_call).
 */
static bool pmv_hooks_each(struct pmv_hooks *hooks, enum pmv_hooks_call call,
			   const struct pmv_hooks *asker)
{
	struct pmv_hook *h;
	bool busy = false;
	unsigned side;

	if (!__atomic_load_n(&hooks->head, __ATOMIC_ACQUIRE))
		return false; /* a plain object: nothing to join */
	side = pmv_hooks_join(hooks);
	for (h = __atomic_load_n(&hooks->head, __ATOMIC_SEQ_CST); h && !busy;
	     h = __atomic_load_n(&h->next, __ATOMIC_SEQ_CST)) {
		busy = pmv_hook_call(h, call, asker);
		if (h->park_idle)
			pmv_hook_park_if_idle(hooks, h);
	}
	pmv_hooks_leave(hooks, side);
	return busy;
}

/*
 * The domain's commit engines, which every read and wait of a CQ of the
 * domain runs (as libfabric's tcp provider runs one progress per domain
 * from each of its CQs; a counter's reads read its endpoints' transmit
 * CQs): those with commits in flight (an idle engine is parked off the
 * list), whichever CQ each completes in: a read of any CQ of the domain
 * takes the acks that landed for every endpoint.  Asked PMV_HOOKS_BUSY,
 * only the engines completing in this CQ count (a wait on a receive CQ
 * need not spin while another thread's commits are in flight).  True as
 * pmv_hooks_each.
 */
static bool pmv_hooks_run_engines(struct pmv_hooks *hooks,
				  enum pmv_hooks_call call)
{
	return hooks->progress &&
	       pmv_hooks_each(&hooks->progress->engines, call, hooks);
}

/* True if reads of hooks serve their domain's confirmed gates now: it has
 * endpoints served on their gates' events (pmv_hooks_add_evented). */
static bool pmv_hooks_gated(const struct pmv_hooks *hooks)
{
	return hooks->progress &&
	       __atomic_load_n(&hooks->progress->gates_served,
			       __ATOMIC_ACQUIRE);
}

/*
 * The domain's one progress, which every read of a CQ of the domain runs
 * after the CQ's own list, read at now_ms if gated (pmv_hooks_gated):
 * serves the gates its endpoints' requests confirmed, without the list's
 * lock (a read of a CQ where 1024 idle gated endpoints receive takes no
 * lock of it), then runs its commit engines.  A CQ that serves no
 * endpoint of its own (serving: its list's count) also looks into the
 * inboxes of the domain's endpoints without a gate (dom->served), which
 * their own CQs' read lists look into otherwise: a thread that reads only
 * another endpoint's CQ serves them, and a read of one connection's CQ
 * looks into no other connection's inbox (with a CQ per connection, each
 * read looked into all 1024: 66 us against 0.5).
 */
static void pmv_hooks_run_domain(struct pmv_hooks *hooks, bool gated,
				 bool serving, uint64_t now_ms)
{
	struct pmv_domain *dom = hooks->progress;

	if (!dom)
		return;
	if (gated)
		__atomic_load_n(&dom->serve_gates, __ATOMIC_RELAXED)(dom,
								     now_ms);
	if (!serving)
		(void) pmv_hooks_each(&dom->served, PMV_HOOKS_PROGRESS, NULL);
	(void) pmv_hooks_run_engines(hooks, PMV_HOOKS_PROGRESS);
}

/*
 * What a read of the object runs: notes it if it serves endpoints, runs
 * the read list, then the domain's progress (one clock read for the note
 * and the gates).
 */
void pmv_hooks_run(struct pmv_hooks *hooks)
{
	bool serving = __atomic_load_n(&hooks->serving, __ATOMIC_RELAXED);
	bool gated = pmv_hooks_gated(hooks);
	uint64_t now = serving || gated ? pmv_ms_now() : 0;

	if (serving)
		pmv_hooks_note_read(hooks, now);
	(void) pmv_hooks_each(hooks, PMV_HOOKS_PROGRESS, NULL);
	pmv_hooks_run_domain(hooks, gated, serving, now);
}

/*
 * Before the application sleeps in a counter or EQ wait, which a request's
 * bytes do not end: serves what is there, and hands the endpoints back to
 * the agent (an agent napping because the application served them is
 * woken).
 */
void pmv_hooks_run_before_wait(struct pmv_hooks *hooks)
{
	(void) pmv_hooks_each(hooks, PMV_HOOKS_BEFORE_WAIT, NULL);
	if (__atomic_exchange_n(&hooks->app_ms, 0, __ATOMIC_RELAXED))
		pmv_hooks_wake_agents(hooks);
}

/*
 * True if a hook, or an engine of the domain completing here, reports work
 * in flight (commits whose acks may land); asked with no lock held, as
 * progress is (a counter's hook asks its endpoint's CQ's hooks).
 */
bool pmv_hooks_busy(struct pmv_hooks *hooks)
{
	return pmv_hooks_each(hooks, PMV_HOOKS_BUSY, NULL) ||
	       pmv_hooks_run_engines(hooks, PMV_HOOKS_BUSY);
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

	if (!__atomic_load_n(&hooks->serving, __ATOMIC_ACQUIRE))
		return 0;
	pmv_lock(&hooks->lock, PMV_LOCK_HOOKS);
	for (h = hooks->head; h && n < max; h = h->next) {
		if (!h->ep)
			continue;
		pmv_tgt_hold(h->ep);
		eps[n++] = h->ep;
	}
	for (h = hooks->ev_head; h && n < max; h = h->next) {
		pmv_tgt_hold(h->ep);
		eps[n++] = h->ep;
	}
	pmv_unlock(&hooks->lock, PMV_LOCK_HOOKS);
	return n;
}
