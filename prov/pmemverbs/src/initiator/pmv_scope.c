/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: commit scope tracking at the initiator.
 *
 * Per endpoint and key, the ranges written since the key's last commit, as
 * at most `limit` extents.  When a new range would exceed the limit, the two
 * closest extents merge: the scope may grow to cover bytes nobody wrote
 * (persisting a clean line is harmless) but never loses a written byte.
 */
#include <stdlib.h>
#include <string.h>

#include "pmv.h"

void pmv_scope_init(struct pmv_scope *scope, unsigned limit)
{
	memset(scope, 0, sizeof(*scope));
	scope->limit = limit < 1 ? 1 :
		       limit > PMV_MAX_EXTENTS ? PMV_MAX_EXTENTS : limit;
}

void pmv_scope_fini(struct pmv_scope *scope)
{
	free(scope->keys);
	memset(scope, 0, sizeof(*scope));
}

/* Finds the scope of a key, creating it when create is set. */
static struct pmv_key_scope *pmv_scope_key(struct pmv_scope *scope,
					   uint64_t key, bool create)
{
	struct pmv_key_scope *keys;
	size_t i;

	for (i = 0; i < scope->nkeys; i++)
		if (scope->keys[i].key == key)
			return &scope->keys[i];
	if (!create)
		return NULL;
	if (scope->nkeys == scope->cap) {
		size_t cap = scope->cap ? scope->cap * 2 : 4;

		keys = pmv_fault(PMV_FAULT_ALLOC) ? NULL :
		       realloc(scope->keys, cap * sizeof(*keys));
		if (!keys)
			return NULL;
		scope->keys = keys;
		scope->cap = cap;
	}
	keys = &scope->keys[scope->nkeys++];
	keys->key = key;
	keys->count = 0;
	return keys;
}

static uint64_t ext_end(const struct pmv_extent *e)
{
	return e->addr + e->len;
}

/* Makes a the smallest extent covering a and b. */
static void ext_cover(struct pmv_extent *a, const struct pmv_extent *b)
{
	uint64_t start = a->addr < b->addr ? a->addr : b->addr;
	uint64_t end = ext_end(a) > ext_end(b) ? ext_end(a) : ext_end(b);

	a->addr = start;
	a->len = end - start;
}

/* Gap between two extents (0 if they touch or overlap). */
static uint64_t ext_gap(const struct pmv_extent *a, const struct pmv_extent *b)
{
	if (ext_end(a) < b->addr)
		return b->addr - ext_end(a);
	if (ext_end(b) < a->addr)
		return a->addr - ext_end(b);
	return 0;
}

static void ks_remove(struct pmv_key_scope *ks, unsigned i)
{
	ks->ext[i] = ks->ext[--ks->count];
}

/* Merges every extent that touches ext into it, then stores it. */
static void ks_insert(struct pmv_key_scope *ks, struct pmv_extent ext)
{
	unsigned i = 0;

	while (i < ks->count) {
		if (ext_gap(&ks->ext[i], &ext) == 0) {
			ext_cover(&ext, &ks->ext[i]);
			ks_remove(ks, i);
		} else {
			i++;
		}
	}
	ks->ext[ks->count++] = ext;
}

/* Merges the two closest extents into one. */
static void ks_merge_closest(struct pmv_key_scope *ks)
{
	unsigned i, j, bi = 0, bj = 1;
	uint64_t best = UINT64_MAX, gap;

	for (i = 0; i < ks->count; i++)
		for (j = i + 1; j < ks->count; j++) {
			gap = ext_gap(&ks->ext[i], &ks->ext[j]);
			if (gap < best) {
				best = gap;
				bi = i;
				bj = j;
			}
		}
	ext_cover(&ks->ext[bi], &ks->ext[bj]);
	ks_remove(ks, bj);
}

/*
 * Adds a range written when the peer's generation known was gen (older
 * than now for ranges given back): the key's scope keeps the oldest.
 */
int pmv_scope_add_gen(struct pmv_scope *scope, uint64_t key, uint64_t addr,
		      uint64_t len, uint32_t gen)
{
	struct pmv_key_scope *ks;
	struct pmv_extent ext = { .addr = addr, .len = len };

	if (!len)
		return 0;
	ks = pmv_scope_key(scope, key, true);
	if (!ks)
		return -FI_ENOMEM;
	ks->gen = ks->count ? pmv_gen_older(ks->gen, gen) : gen;
	ks_insert(ks, ext);
	while (ks->count > scope->limit)
		ks_merge_closest(ks);
	return 0;
}

/* A range written now, when the peer's known generation is scope->gen. */
int pmv_scope_add(struct pmv_scope *scope, uint64_t key, uint64_t addr,
		  uint64_t len)
{
	return pmv_scope_add_gen(scope, key, addr, len, scope->gen);
}

/* The generation known at the key's oldest write in scope; false if none. */
bool pmv_scope_gen(const struct pmv_scope *scope, uint64_t key, uint32_t *gen)
{
	for (size_t i = 0; i < scope->nkeys; i++) {
		if (scope->keys[i].key == key && scope->keys[i].count) {
			*gen = scope->keys[i].gen;
			return true;
		}
	}
	return false;
}

bool pmv_scope_empty(const struct pmv_scope *scope, uint64_t key)
{
	size_t i;

	for (i = 0; i < scope->nkeys; i++)
		if (scope->keys[i].key == key)
			return scope->keys[i].count == 0;
	return true;
}

/*
 * Moves the key's scope into out (at most max extents, coalescing more) and
 * empties it.  Returns the number of extents.
 */
unsigned pmv_scope_take(struct pmv_scope *scope, uint64_t key,
			struct pmv_extent *out, unsigned max)
{
	struct pmv_key_scope *ks = pmv_scope_key(scope, key, false);
	unsigned n;

	if (!ks || !max)
		return 0;
	while (ks->count > max)
		ks_merge_closest(ks);
	n = ks->count;
	memcpy(out, ks->ext, n * sizeof(*out));
	ks->count = 0;
	return n;
}
