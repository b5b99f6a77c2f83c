/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Unit tests: a domain's regions found by key and by descriptor
 * (pmv_mr_index.c), among many, after closes, with descriptors shared.
 */
#include <criterion/criterion.h>

#include "pmv_objects.h"

#define NREGIONS 1000

static struct pmv_domain g_dom;
static struct pmv_mr g_mrs[NREGIONS];

/* Region i: key 7 * i + 3, descriptor &g_mrs[i / 2] (two share each). */
static void index_all(void)
{
	for (unsigned i = 0; i < NREGIONS; i++) {
		g_mrs[i].mr_fid.key = 7ull * i + 3;
		g_mrs[i].mr_fid.mem_desc = &g_mrs[i / 2];
		cr_assert_eq(pmv_mr_index_add(&g_dom, &g_mrs[i]), 0);
	}
}

static void teardown(void)
{
	pmv_mr_index_fini(&g_dom);
	cr_assert_null(g_dom.mr_by_key);
	cr_assert_null(g_dom.mr_by_desc);
}

TestSuite(mr_index, .fini = teardown);

/* Every region is found by its key, and no key that is not one. */
Test(mr_index, every_region_is_found_by_its_key_among_many)
{
	index_all();
	for (unsigned i = 0; i < NREGIONS; i++) {
		cr_assert_eq(pmv_mr_index_key(&g_dom, 7ull * i + 3), &g_mrs[i],
			     "region %u not found by its key", i);
		cr_assert_null(pmv_mr_index_key(&g_dom, 7ull * i + 4));
	}
}

/* A closed region is found no more; a descriptor two regions carry is
 * known until both are closed. */
Test(mr_index, a_closed_region_is_not_found_and_a_shared_desc_counts)
{
	index_all();
	pmv_mr_index_remove(&g_dom, &g_mrs[10]);
	cr_assert_null(pmv_mr_index_key(&g_dom, 7ull * 10 + 3));
	cr_assert_eq(pmv_mr_index_key(&g_dom, 7ull * 11 + 3), &g_mrs[11]);
	cr_assert(pmv_mr_index_desc(&g_dom, &g_mrs[5]),
		  "a descriptor another open region carries was forgotten");
	pmv_mr_index_remove(&g_dom, &g_mrs[11]);
	cr_assert_not(pmv_mr_index_desc(&g_dom, &g_mrs[5]),
		      "a descriptor no open region carries is still known");
	cr_assert_not(pmv_mr_index_desc(&g_dom, &g_dom));
}

/*
 * A key registered again before the old region's close finished (its core
 * registration gone, pmv_mr_gone not yet run): the key names the new
 * region, and still does once the old one leaves.
 */
Test(mr_index, a_key_registered_again_names_the_new_region)
{
	struct pmv_mr old = { .mr_fid = { .key = 42, .mem_desc = &old } };
	struct pmv_mr new = { .mr_fid = { .key = 42, .mem_desc = &new } };

	cr_assert_eq(pmv_mr_index_add(&g_dom, &old), 0);
	cr_assert_eq(pmv_mr_index_add(&g_dom, &new), 0);
	cr_assert_eq(pmv_mr_index_key(&g_dom, 42), &new,
		     "requests for the key would go to the closed region");
	pmv_mr_index_remove(&g_dom, &old);
	cr_assert_eq(pmv_mr_index_key(&g_dom, 42), &new,
		     "the old region's close took the new region's key away");
	cr_assert(pmv_mr_index_desc(&g_dom, &new));
	cr_assert_not(pmv_mr_index_desc(&g_dom, &old));
	pmv_mr_index_remove(&g_dom, &new);
	cr_assert_null(pmv_mr_index_key(&g_dom, 42));
}

/* Out of memory for the descriptor's node: nothing is indexed. */
Test(mr_index, without_memory_nothing_is_indexed)
{
	struct pmv_mr mr = { .mr_fid = { .key = 42, .mem_desc = &mr } };

	pmv_fault_reset();
	pmv_params.fault_alloc = 1;
	cr_assert_eq(pmv_mr_index_add(&g_dom, &mr), -FI_ENOMEM);
	pmv_params.fault_alloc = 0;
	cr_assert_null(pmv_mr_index_key(&g_dom, 42));
	cr_assert_not(pmv_mr_index_desc(&g_dom, &mr));
}
