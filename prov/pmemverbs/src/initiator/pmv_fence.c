/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: keys whose next fence or commit must fail.
 *
 * Fences: the keys whose commits failed since their last fence.  Lost
 * scopes: the keys an earlier write of which could not be recorded (no
 * memory) or whose spill request failed with no commit left to tell: their
 * next commit fails (PMV_ERR_SCOPE_LOST).  Both are the same set.
 *
 * FI_FENCE: every earlier commit to the key done, with status 0, before
 * the fenced data is placed.  A commit that failed is remembered here
 * until a fenced commit to its key reports the failure (-FI_EIO), however
 * many other keys fail in between: a set that grows (open addressing,
 * linear probing) and never evicts.  If it cannot grow (no memory), the
 * failure is not lost either: every later fence of the endpoint fails.
 * Lock held for every call (ini->lock).
 */
#include <stdlib.h>

#include "pmv_initiator.h"

#define PMV_FENCE_MIN_CAP 16

/* The slot where key's probe starts. */
static size_t pmv_fence_home(const struct pmv_fence_set *set, uint64_t key)
{
	uint64_t h = key * 0x9e3779b97f4a7c15ull;

	return (size_t) (h ^ (h >> 32)) & (set->cap - 1);
}

/* The slot holding key, or set->cap if it is not in the set. */
static size_t pmv_fence_find(const struct pmv_fence_set *set, uint64_t key)
{
	size_t i;

	if (!set->count)
		return set->cap;
	for (i = pmv_fence_home(set, key); set->slots[i].used;
	     i = (i + 1) & (set->cap - 1))
		if (set->slots[i].key == key)
			return i;
	return set->cap;
}

/* Puts key in the first free slot of its probe (room checked). */
static void pmv_fence_place(struct pmv_fence_set *set, uint64_t key)
{
	size_t i = pmv_fence_home(set, key);

	while (set->slots[i].used)
		i = (i + 1) & (set->cap - 1);
	set->slots[i] = (struct pmv_fence_key) { .key = key, .used = true };
	set->count++;
}

/* Doubles the table (kept at most half full); false if out of memory. */
static bool pmv_fence_grow(struct pmv_fence_set *set)
{
	struct pmv_fence_key *old = set->slots;
	size_t old_cap = set->cap, cap = old_cap ? 2 * old_cap :
						   PMV_FENCE_MIN_CAP;
	size_t i;

	set->slots = pmv_fault(PMV_FAULT_ALLOC) ? NULL :
		     calloc(cap, sizeof(*set->slots));
	if (!set->slots) {
		set->slots = old;
		return false;
	}
	set->cap = cap;
	set->count = 0;
	for (i = 0; i < old_cap; i++)
		if (old[i].used)
			pmv_fence_place(set, old[i].key);
	free(old);
	return true;
}

/* Empties slot i, moving later entries of its probe run back into it. */
static void pmv_fence_remove(struct pmv_fence_set *set, size_t i)
{
	size_t mask = set->cap - 1, j = i, home;

	set->slots[i].used = false;
	set->count--;
	for (;;) {
		j = (j + 1) & mask;
		if (!set->slots[j].used)
			return;
		home = pmv_fence_home(set, set->slots[j].key);
		/* j's entry may move to i unless its home lies in (i, j] */
		if (((j - home) & mask) < ((j - i) & mask))
			continue;
		set->slots[i] = set->slots[j];
		set->slots[j].used = false;
		i = j;
	}
}

/* Remembers that a commit to key failed, for the key's next fence. */
void pmv_fence_note_failure(struct pmv_fence_set *set, uint64_t key)
{
	if (set->lost || pmv_fence_find(set, key) < set->cap)
		return;
	if (2 * (set->count + 1) > set->cap && !pmv_fence_grow(set)) {
		set->lost = true;
		PMV_WARN(FI_LOG_EP_DATA, "no memory to remember a failed "
			 "commit to key 0x%llx for its next FI_FENCE: every "
			 "later fenced commit on this endpoint fails "
			 "(-FI_EIO); open a new endpoint\n",
			 (unsigned long long) key);
		return;
	}
	pmv_fence_place(set, key);
}

/*
 * True if a commit to key failed since the key's last fenced commit (a
 * fence then cannot hold); clear forgets it, as the fence reports it.
 */
bool pmv_fence_failed(struct pmv_fence_set *set, uint64_t key, bool clear)
{
	size_t i = pmv_fence_find(set, key);

	if (i < set->cap && clear)
		pmv_fence_remove(set, i);
	return i < set->cap || set->lost;
}

void pmv_fence_fini(struct pmv_fence_set *set)
{
	free(set->slots);
	*set = (struct pmv_fence_set) { 0 };
}

/* True (once) if key's next commit must fail: its scope lost a range. */
bool pmv_ini_scope_lost(struct pmv_ini *ini, uint64_t key)
{
	return pmv_fence_failed(&ini->scope_lost, key, true);
}

/*
 * Adds a posted write's range (known generation gen) to the key's scope.
 * If it cannot be recorded (no memory), no commit may claim the key's
 * writes durable: its next commit fails with PMV_ERR_SCOPE_LOST.
 */
void pmv_ini_scope_add(struct pmv_ini *ini, uint64_t key, uint64_t addr,
		       uint64_t len, uint32_t gen)
{
	if (!pmv_scope_add_gen(&ini->scope, key, addr, len, gen))
		return;
	PMV_WARN(FI_LOG_EP_DATA, "no memory to record a write's range (key "
		 "0x%llx): the key's next commit fails (FI_EIO); free memory, "
		 "then write the data again and commit\n",
		 (unsigned long long) key);
	pmv_fence_note_failure(&ini->scope_lost, key);
}

/* As pmv_ini_scope_add for a range of commit c itself: c fails instead. */
void pmv_commit_scope_add(struct pmv_ini *ini, struct pmv_commit *c,
			  uint64_t addr, uint64_t len, uint32_t gen)
{
	if (pmv_scope_add_gen(&ini->scope, c->key, addr, len, gen) &&
	    !c->status) {
		PMV_WARN(FI_LOG_EP_DATA, "no memory to record a commit's "
			 "range: the commit fails (FI_EIO); free memory, then "
			 "write the data again and commit\n");
		c->status = PMV_ERR_SCOPE_LOST;
	}
}
