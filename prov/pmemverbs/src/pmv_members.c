/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: the CQs and counters of a wait set or poll set (libfabric
 * 1.x).  pmemverbs completes and counts commits from the progress of reads
 * (an ack lands in memory), which wakes no core wait object and fills no
 * core CQ: fi_wait and fi_poll run their members' progress first
 * (pmv_wait.c).
 */
#include <sched.h>
#include <stdlib.h>

#include "pmv_objects.h"

#if PMV_HAVE_WAIT_SETS

/* Most members one look holds at a time (a stack array). */
#define PMV_MEMBERS_LOOK 16

void pmv_members_init(struct pmv_members *ms)
{
	*ms = (struct pmv_members) { .m = NULL };
	pthread_mutex_init(&ms->lock, NULL);
}

void pmv_members_fini(struct pmv_members *ms)
{
	free(ms->m);
	pthread_mutex_destroy(&ms->lock);
}

/* Room for one more member, the lock held; false if there is no memory. */
static bool pmv_members_room(struct pmv_members *ms)
{
	size_t cap = ms->cap ? 2 * ms->cap : 8;
	struct pmv_member *m;

	if (ms->n < ms->cap)
		return true;
	m = pmv_fault(PMV_FAULT_ALLOC) ? NULL : realloc(ms->m, cap * sizeof(*m));
	if (!m)
		return false;
	ms->m = m;
	ms->cap = cap;
	return true;
}

/* Adds a CQ or counter (one of the two); -FI_ENOMEM if no memory. */
int pmv_members_add(struct pmv_members *ms, struct pmv_cq *cq,
		    struct pmv_cntr *cntr)
{
	bool ok;

	pmv_lock(&ms->lock, PMV_LOCK_WAIT_SET);
	ok = pmv_members_room(ms);
	if (ok)
		ms->m[ms->n++] = (struct pmv_member) { .cq = cq, .cntr = cntr };
	pmv_unlock(&ms->lock, PMV_LOCK_WAIT_SET);
	if (ok)
		return 0;
	PMV_WARN(FI_LOG_CORE, "out of memory adding a CQ or counter to a wait "
		 "or poll set; free memory and add it again\n");
	return -FI_ENOMEM;
}

/* Looks running now (read under the lock: a leaving member polls it). */
static int pmv_members_looks(struct pmv_members *ms)
{
	int looks;

	pmv_lock(&ms->lock, PMV_LOCK_WAIT_SET);
	looks = ms->looks;
	pmv_unlock(&ms->lock, PMV_LOCK_WAIT_SET);
	return looks;
}

/* Takes the CQ or counter obj off the list, if on it; returns once no
 * look holds it (it may close then). */
void pmv_members_remove(struct pmv_members *ms, const void *obj)
{
	pmv_lock(&ms->lock, PMV_LOCK_WAIT_SET);
	for (size_t i = 0; i < ms->n; i++) {
		if ((const void *) ms->m[i].cq == obj ||
		    (const void *) ms->m[i].cntr == obj) {
			ms->m[i] = ms->m[--ms->n];
			break;
		}
	}
	pmv_unlock(&ms->lock, PMV_LOCK_WAIT_SET);
	while (pmv_members_looks(ms))
		sched_yield();
}

/* One member's state once its progress ran (the hooks of its pmem
 * endpoints: acks polled, requests served). */
static enum pmv_member_state pmv_member_state(const struct pmv_member *m)
{
	if (m->cntr && pmv_cntr_trywait_busy(m->cntr))
		return PMV_MEMBER_BUSY;
	if (m->cntr)
		return __atomic_load_n(&m->cntr->refs, __ATOMIC_ACQUIRE) ?
		       PMV_MEMBER_PMEM : PMV_MEMBER_IDLE;
	if (pmv_cq_ready(m->cq))
		return PMV_MEMBER_READY;
	if (pmv_cq_hooks_busy(m->cq))
		return PMV_MEMBER_BUSY;
	return pmv_cq_plain(m->cq) ? PMV_MEMBER_IDLE : PMV_MEMBER_PMEM;
}

/* Copies up to PMV_MEMBERS_LOOK members, from index from, into got,
 * counted in looks; returns how many. */
static size_t pmv_members_grab(struct pmv_members *ms, size_t from,
			       struct pmv_member *got)
{
	size_t n = 0;

	pmv_lock(&ms->lock, PMV_LOCK_WAIT_SET);
	for (; from + n < ms->n && n < PMV_MEMBERS_LOOK; n++)
		got[n] = ms->m[from + n];
	if (n)
		ms->looks++;
	pmv_unlock(&ms->lock, PMV_LOCK_WAIT_SET);
	return n;
}

/* Ends a look that pmv_members_grab or pmv_members_hold_lone_cntr began. */
void pmv_members_release(struct pmv_members *ms)
{
	pmv_lock(&ms->lock, PMV_LOCK_WAIT_SET);
	ms->looks--;
	pmv_unlock(&ms->lock, PMV_LOCK_WAIT_SET);
}

/* The set's only member if it is a counter, held by a look until
 * pmv_members_release; NULL otherwise. */
struct pmv_cntr *pmv_members_hold_lone_cntr(struct pmv_members *ms)
{
	struct pmv_cntr *cntr = NULL;

	pmv_lock(&ms->lock, PMV_LOCK_WAIT_SET);
	if (ms->n == 1 && ms->m[0].cntr) {
		cntr = ms->m[0].cntr;
		ms->looks++;
	}
	pmv_unlock(&ms->lock, PMV_LOCK_WAIT_SET);
	return cntr;
}

/*
 * Runs every member's progress, with no lock held (a member's serving may
 * persist), and returns the highest state; on_ready is called for each
 * READY member, and the look stops when it returns false.
 */
enum pmv_member_state pmv_members_look(struct pmv_members *ms,
	bool (*on_ready)(void *arg, const struct pmv_member *m), void *arg)
{
	struct pmv_member got[PMV_MEMBERS_LOOK];
	enum pmv_member_state state = PMV_MEMBER_IDLE, one;
	bool go_on = true;
	size_t n, from = 0;

	while (go_on && (n = pmv_members_grab(ms, from, got))) {
		for (size_t i = 0; i < n && go_on; i++) {
			one = pmv_member_state(&got[i]);
			state = one > state ? one : state;
			if (one == PMV_MEMBER_READY)
				go_on = on_ready(arg, &got[i]);
		}
		pmv_members_release(ms);
		from += n;
	}
	return state;
}

/* Notes a call into every member CQ's core (fi_wait, fi_poll or
 * fi_trywait on the set: pmv_cq_core_used). */
void pmv_members_note_used(struct pmv_members *ms)
{
	pmv_lock(&ms->lock, PMV_LOCK_WAIT_SET);
	for (size_t i = 0; i < ms->n; i++)
		if (ms->m[i].cq)
			pmv_cq_core_used(ms->m[i].cq);
	pmv_unlock(&ms->lock, PMV_LOCK_WAIT_SET);
}

#endif /* PMV_HAVE_WAIT_SETS */
