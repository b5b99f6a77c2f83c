/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: a domain's registered regions, found by key (the agent
 * serving a request) and by descriptor (a commit's local segments) in
 * O(log n), with POSIX search trees (tsearch(3)); the domain lock held.
 * The list beside them (dom->mrs) is for walks over every region only
 * (the profile table).  A core may give several regions one descriptor:
 * the descriptor tree counts them.
 */
#include <search.h>
#include <stdlib.h>

#include "pmv_objects.h"

/* A descriptor and how many registered regions carry it. */
struct pmv_desc_node {
	void *desc;
	unsigned count;
};

static int pmv_cmp_key(const void *a, const void *b)
{
	uint64_t ka = ((const struct pmv_mr *) a)->mr_fid.key;
	uint64_t kb = ((const struct pmv_mr *) b)->mr_fid.key;

	return ka < kb ? -1 : ka > kb;
}

static int pmv_cmp_desc(const void *a, const void *b)
{
	uintptr_t da = (uintptr_t) ((const struct pmv_desc_node *) a)->desc;
	uintptr_t db = (uintptr_t) ((const struct pmv_desc_node *) b)->desc;

	return da < db ? -1 : da > db;
}

/*
 * Indexes mr by key and descriptor: 0, or -FI_ENOMEM (nothing indexed).
 * A key registered again while the old region's close is still finishing
 * (its core registration already gone) names the new region, as requests
 * for the key must.
 */
int pmv_mr_index_add(struct pmv_domain *dom, struct pmv_mr *mr)
{
	struct pmv_desc_node probe = { .desc = mr->mr_fid.mem_desc }, *n;
	struct pmv_mr *old = NULL;
	void **node;
	void *slot;

	node = tfind(mr, &dom->mr_by_key, pmv_cmp_key);
	if (node) {
		old = *node;
		*node = mr;
	} else if (!tsearch(mr, &dom->mr_by_key, pmv_cmp_key)) {
		return -FI_ENOMEM;
	}
	slot = tfind(&probe, &dom->mr_by_desc, pmv_cmp_desc);
	if (slot) {
		(*(struct pmv_desc_node **) slot)->count++;
		return 0;
	}
	n = pmv_fault(PMV_FAULT_ALLOC) ? NULL : malloc(sizeof(*n));
	if (n) {
		*n = (struct pmv_desc_node) { .desc = probe.desc, .count = 1 };
		if (tsearch(n, &dom->mr_by_desc, pmv_cmp_desc))
			return 0;
		free(n);
	}
	if (old)
		*(void **) tfind(mr, &dom->mr_by_key, pmv_cmp_key) = old;
	else
		tdelete(mr, &dom->mr_by_key, pmv_cmp_key);
	return -FI_ENOMEM;
}

/* Forgets mr (indexed by pmv_mr_index_add). */
void pmv_mr_index_remove(struct pmv_domain *dom, struct pmv_mr *mr)
{
	struct pmv_desc_node probe = { .desc = mr->mr_fid.mem_desc }, *n;
	void **node = tfind(mr, &dom->mr_by_key, pmv_cmp_key);
	void *slot;

	if (node && *node == mr) /* else the key names a newer region */
		tdelete(mr, &dom->mr_by_key, pmv_cmp_key);
	slot = tfind(&probe, &dom->mr_by_desc, pmv_cmp_desc);
	if (!slot)
		return;
	n = *(struct pmv_desc_node **) slot;
	if (--n->count)
		return;
	tdelete(n, &dom->mr_by_desc, pmv_cmp_desc);
	free(n);
}

/* The region registered under key, or NULL. */
struct pmv_mr *pmv_mr_index_key(struct pmv_domain *dom, uint64_t key)
{
	struct pmv_mr probe;
	void *slot;

	probe.mr_fid.key = key;
	slot = tfind(&probe, &dom->mr_by_key, pmv_cmp_key);
	return slot ? *(struct pmv_mr **) slot : NULL;
}

/* True if a registered region carries desc. */
bool pmv_mr_index_desc(struct pmv_domain *dom, void *desc)
{
	struct pmv_desc_node probe = { .desc = desc };

	return tfind(&probe, &dom->mr_by_desc, pmv_cmp_desc) != NULL;
}

/*
 * Empties the trees (the regions themselves are the application's).  The
 * first field of a tree node is its item (tsearch(3)), so *root is the
 * root's item.
 */
void pmv_mr_index_fini(struct pmv_domain *dom)
{
	struct pmv_desc_node *n;

	while (dom->mr_by_key)
		tdelete(*(void **) dom->mr_by_key, &dom->mr_by_key,
			pmv_cmp_key);
	while (dom->mr_by_desc) {
		n = *(struct pmv_desc_node **) dom->mr_by_desc;
		tdelete(n, &dom->mr_by_desc, pmv_cmp_desc);
		free(n);
	}
}
