/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: commit scope tracking at the initiator.
 *
 * Per endpoint and key, the ranges written since the key's last commit,
 * sorted by address.  Past `limit` extents, two neighbours merge only when
 * the bytes between them lie in pages a write touched, or are at most
 * FI_PMEMVERBS_SCOPE_GAP bytes: the scope never grows over a page nobody
 * wrote, so the target never persists (and, for a sparse file, never
 * allocates) one.  Distant extents stay apart; a commit whose request
 * cannot carry them all sends the rest ahead in internal requests
 * (pmv_request.c).  Only past PMV_SCOPE_CAP extents do the closest merge
 * whatever lies between.  No written byte is ever lost.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pmv_initiator.h"

/* Extents a key's scope has room for when it is created. */
#define PMV_KEY_EXTENTS 8

void pmv_scope_init(struct pmv_scope *scope, unsigned limit)
{
	long page = sysconf(_SC_PAGESIZE);

	memset(scope, 0, sizeof(*scope));
	scope->limit = limit < 1 ? 1 :
		       limit > PMV_MAX_EXTENTS ? PMV_MAX_EXTENTS : limit;
	scope->gap = pmv_params.scope_gap > 0 ? (uint64_t) pmv_params.scope_gap
					      : 0;
	scope->page = page > 0 ? (uint64_t) page : 4096;
}

void pmv_scope_fini(struct pmv_scope *scope)
{
	size_t i;

	for (i = 0; i < scope->nkeys; i++)
		free(scope->keys[i].ext);
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
	keys = &scope->keys[scope->nkeys];
	memset(keys, 0, sizeof(*keys));
	/* room for its extents now: once a key exists, a range is always
	 * recorded (ks_insert absorbs it when the room cannot grow) */
	keys->ext = pmv_fault(PMV_FAULT_ALLOC) ? NULL :
		    malloc(PMV_KEY_EXTENTS * sizeof(*keys->ext));
	if (!keys->ext)
		return NULL;
	keys->cap = PMV_KEY_EXTENTS;
	keys->key = key;
	scope->nkeys++;
	return keys;
}

static uint64_t ext_end(const struct pmv_extent *e)
{
	return e->addr + e->len;
}

/* Room for one more extent; -FI_ENOMEM if there is none. */
static int ks_reserve(struct pmv_key_scope *ks)
{
	struct pmv_extent *ext;
	unsigned cap;

	if (ks->count < ks->cap)
		return 0;
	cap = ks->cap * 2; /* a key is created with room (PMV_KEY_EXTENTS) */
	ext = pmv_fault(PMV_FAULT_ALLOC) ? NULL :
	      realloc(ks->ext, cap * sizeof(*ext));
	if (!ext)
		return -FI_ENOMEM;
	ks->ext = ext;
	ks->cap = cap;
	return 0;
}

/* Index of the first extent that ends at or after addr. */
static unsigned ks_first_reaching(const struct pmv_key_scope *ks,
				  uint64_t addr)
{
	unsigned lo = 0, hi = ks->count, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (ext_end(&ks->ext[mid]) < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * No room for a new extent: ext (touching none) widens its neighbour at i
 * or i - 1 over the bytes between, so its range is still recorded; the
 * target persists a few bytes more.  0, or -FI_ENOMEM with no extent.
 */
static int ks_absorb(struct pmv_key_scope *ks, unsigned i,
		     struct pmv_extent ext)
{
	unsigned at = i < ks->count ? i : i - 1;
	uint64_t lo, hi;

	if (!ks->count)
		return -FI_ENOMEM;
	if (i > 0 && i < ks->count &&
	    ext.addr - ext_end(&ks->ext[i - 1]) <
	    ks->ext[i].addr - ext_end(&ext))
		at = i - 1;
	lo = ks->ext[at].addr < ext.addr ? ks->ext[at].addr : ext.addr;
	hi = ext_end(&ks->ext[at]) > ext_end(&ext) ? ext_end(&ks->ext[at]) :
						     ext_end(&ext);
	ks->ext[at].addr = lo;
	ks->ext[at].len = hi - lo;
	return 0;
}

/* Stores ext, merged with every extent it touches or overlaps. */
static int ks_insert(struct pmv_key_scope *ks, struct pmv_extent ext)
{
	unsigned i = ks_first_reaching(ks, ext.addr), j = i;
	uint64_t end = ext_end(&ext);

	while (j < ks->count && ks->ext[j].addr <= end) {
		if (ks->ext[j].addr < ext.addr)
			ext.addr = ks->ext[j].addr;
		if (ext_end(&ks->ext[j]) > end)
			end = ext_end(&ks->ext[j]);
		j++;
	}
	ext.len = end - ext.addr;
	if (j == i && ks_reserve(ks)) /* no room, none to be had */
		return ks_absorb(ks, i, ext);
	if (j == i) { /* it touches none: a new slot at i */
		memmove(&ks->ext[i + 1], &ks->ext[i],
			(ks->count - i) * sizeof(ks->ext[0]));
		ks->count++;
	} else { /* it replaces ext[i, j) */
		memmove(&ks->ext[i + 1], &ks->ext[j],
			(ks->count - j) * sizeof(ks->ext[0]));
		ks->count -= j - i - 1;
	}
	ks->ext[i] = ext;
	return 0;
}

/*
 * True if extents a and b (b after a) may merge: the bytes between them
 * are in pages a or b touches, or no more than the scope's gap.
 */
static bool ks_mergeable(const struct pmv_scope *scope,
			 const struct pmv_extent *a, const struct pmv_extent *b)
{
	uint64_t last_a = (ext_end(a) - 1) / scope->page;

	return b->addr - ext_end(a) <= scope->gap ||
	       last_a + 1 >= b->addr / scope->page;
}

/* Merges extent i+1 into extent i. */
static void ks_merge_at(struct pmv_key_scope *ks, unsigned i)
{
	ks->ext[i].len = ext_end(&ks->ext[i + 1]) - ks->ext[i].addr;
	memmove(&ks->ext[i + 1], &ks->ext[i + 2],
		(ks->count - i - 2) * sizeof(ks->ext[0]));
	ks->count--;
}

/*
 * Index of the neighbours with the smallest gap (the pair i, i+1), among
 * those that may merge unless any is set; -1 if none.
 */
static int ks_closest(const struct pmv_scope *scope,
		      const struct pmv_key_scope *ks, bool any)
{
	uint64_t best = UINT64_MAX, gap;
	int at = -1;
	unsigned i;

	for (i = 0; i + 1 < ks->count; i++) {
		gap = ks->ext[i + 1].addr - ext_end(&ks->ext[i]);
		if (gap < best &&
		    (any || ks_mergeable(scope, &ks->ext[i], &ks->ext[i + 1]))) {
			best = gap;
			at = (int) i;
		}
	}
	return at;
}

/* Merges neighbours until at most max extents remain, if any may merge. */
static void ks_coalesce(const struct pmv_scope *scope,
			struct pmv_key_scope *ks, unsigned max, bool any)
{
	int at;

	while (ks->count > max &&
	       (at = ks_closest(scope, ks, any)) >= 0)
		ks_merge_at(ks, (unsigned) at);
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
	int ret;

	if (!len)
		return 0;
	ks = pmv_scope_key(scope, key, true);
	if (!ks)
		return -FI_ENOMEM;
	/* the oldest write's generation; set before the insert can merge */
	ks->gen = ks->count ? pmv_gen_older(ks->gen, gen) : gen;
	ret = ks_insert(ks, ext);
	if (ret)
		return ret;
	if (ks->count > scope->limit)
		ks_coalesce(scope, ks, scope->limit, false);
	ks_coalesce(scope, ks, PMV_SCOPE_CAP, true);
	return 0;
}

/* The key's scope exists, so that its writes' ranges are always recorded:
 * 0, or -FI_ENOMEM. */
int pmv_scope_prepare(struct pmv_scope *scope, uint64_t key)
{
	return pmv_scope_key(scope, key, true) ? 0 : -FI_ENOMEM;
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
	return pmv_scope_count(scope, key) == 0;
}

unsigned pmv_scope_count(const struct pmv_scope *scope, uint64_t key)
{
	size_t i;

	for (i = 0; i < scope->nkeys; i++)
		if (scope->keys[i].key == key)
			return scope->keys[i].count;
	return 0;
}

/*
 * Merges the key's neighbours that may merge (any: the closest, whatever
 * lies between) until at most max extents remain; returns how many do.
 */
unsigned pmv_scope_fit(struct pmv_scope *scope, uint64_t key, unsigned max,
		       bool any)
{
	struct pmv_key_scope *ks = pmv_scope_key(scope, key, false);

	if (!ks)
		return 0;
	ks_coalesce(scope, ks, max, false);
	if (any)
		ks_coalesce(scope, ks, max, true);
	return ks->count;
}

/* Moves the key's first n extents into out. */
static unsigned ks_take(struct pmv_key_scope *ks, struct pmv_extent *out,
			unsigned n)
{
	if (n > ks->count)
		n = ks->count;
	if (!n)
		return 0;
	memcpy(out, ks->ext, n * sizeof(*out));
	memmove(ks->ext, &ks->ext[n], (ks->count - n) * sizeof(*out));
	ks->count -= n;
	return n;
}

/*
 * Moves up to max of the key's extents into out (neighbours that may merge
 * first merge to fit); the rest stay for a later request.  Returns their
 * number.
 */
unsigned pmv_scope_take(struct pmv_scope *scope, uint64_t key,
			struct pmv_extent *out, unsigned max)
{
	struct pmv_key_scope *ks = pmv_scope_key(scope, key, false);

	if (!ks || !max)
		return 0;
	ks_coalesce(scope, ks, max, false);
	return ks_take(ks, out, max);
}

/*
 * Moves the whole scope of the key into out, at most max extents: when
 * more are distant, the closest merge over what lies between.
 */
unsigned pmv_scope_take_all(struct pmv_scope *scope, uint64_t key,
			    struct pmv_extent *out, unsigned max)
{
	struct pmv_key_scope *ks = pmv_scope_key(scope, key, false);

	if (!ks || !max)
		return 0;
	ks_coalesce(scope, ks, max, false);
	ks_coalesce(scope, ks, max, true);
	return ks_take(ks, out, max);
}
