/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Unit tests: FI_EP_RDM with FI_RMA_PMEM (pmv_rdm.h): ofi_rxm's view of a
 * pmemverbs RDM fi_info, and pmemverbs MSG entries for the marked hints
 * ofi_rxm passes down when it opens its core.
 */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "pmv_objects.h"
#include "pmv_rdm.h"

struct fi_provider *fi_prov_ini(void);

static struct fi_info *rdm_pmem_info(const char *domain_name)
{
	struct fi_info *info = fi_allocinfo();

	cr_assert_not_null(info);
	info->ep_attr->type = FI_EP_RDM;
	info->caps = FI_RMA | FI_RMA_PMEM;
	info->tx_attr->caps = FI_RMA | FI_RMA_PMEM;
	info->tx_attr->op_flags = FI_COMMIT_COMPLETE;
	info->fabric_attr->prov_name = strdup(PMV_PROV_NAME);
	if (domain_name)
		info->domain_attr->name = strdup(domain_name);
	return info;
}

Test(rdm, only_rdm_hints_asking_pmem_take_the_rdm_path)
{
	struct fi_info *hints = rdm_pmem_info(NULL);

	cr_assert(pmv_rdm_hints_want_pmem(hints));
	hints->caps = FI_RMA;
	cr_assert(pmv_rdm_hints_want_pmem(hints)); /* FI_COMMIT_COMPLETE */
	hints->tx_attr->op_flags = 0;
	cr_assert_not(pmv_rdm_hints_want_pmem(hints));
	hints->caps = FI_RMA | FI_RMA_PMEM;
	hints->ep_attr->type = FI_EP_MSG;
	cr_assert_not(pmv_rdm_hints_want_pmem(hints));
	cr_assert_not(pmv_rdm_hints_want_pmem(NULL));
	fi_freeinfo(hints);
}

Test(rdm, rxm_gets_no_pmem_caps_and_a_marked_domain_name)
{
	struct fi_info *info = rdm_pmem_info("lo");
	struct fi_info *rxm = pmv_rdm_info_to_rxm(info);

	cr_assert_not_null(rxm);
	cr_assert_str_eq(rxm->fabric_attr->prov_name, PMV_RDM_STACK);
	cr_assert_str_eq(rxm->domain_attr->name, PMV_RDM_MARK "lo");
	cr_assert_eq(rxm->caps, FI_RMA);
	cr_assert_eq(rxm->tx_attr->caps, FI_RMA);
	cr_assert_eq(rxm->tx_attr->op_flags & FI_COMMIT_COMPLETE, 0);
	cr_assert_str_eq(info->domain_attr->name, "lo"); /* a copy */
	fi_freeinfo(rxm);
	fi_freeinfo(info);
}

Test(rdm, unmarked_hints_ask_pmem_of_the_named_domain)
{
	struct fi_info *hints = rdm_pmem_info(PMV_RDM_MARK "lo"), *out;

	hints->ep_attr->type = FI_EP_MSG;
	hints->caps = FI_RMA;
	cr_assert_eq(pmv_rdm_unmark_hints(hints, &out), 0);
	cr_assert_not_null(out);
	cr_assert_str_eq(out->domain_attr->name, "lo");
	cr_assert(out->caps & FI_RMA_PMEM);
	fi_freeinfo(out);
	free(hints->domain_attr->name);
	hints->domain_attr->name = strdup(PMV_RDM_MARK);
	cr_assert_eq(pmv_rdm_unmark_hints(hints, &out), 0);
	cr_assert_null(out->domain_attr->name); /* any domain */
	fi_freeinfo(out);
	free(hints->domain_attr->name);
	hints->domain_attr->name = strdup("lo");
	cr_assert_eq(pmv_rdm_unmark_hints(hints, &out), 0);
	cr_assert_null(out); /* no mark: the hints as they are */
	fi_freeinfo(hints);
}

/*
 * What ofi_rxm asks of pmemverbs MSG when it opens the core of a pmemverbs
 * RDM domain: caps without FI_RMA_PMEM (rxm strips it), the marked domain
 * name.  Every entry must be a pmem one, or rxm's MSG endpoints could not
 * commit, and carry the mark in its domain name.
 */
Test(rdm, marked_msg_hints_get_pmem_entries)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;

	setenv("FI_PMEMVERBS_CORE_PROV", "tcp", 1);
	fi_prov_ini();
	hints->ep_attr->type = FI_EP_MSG;
	hints->caps = FI_MSG | FI_RMA;
	hints->domain_attr->name = strdup(PMV_RDM_MARK);
	cr_assert_eq(pmv_getinfo(PMV_FI_VERSION, "127.0.0.1", NULL, 0, hints,
				 &info), 0);
	for (struct fi_info *cur = info; cur; cur = cur->next) {
		cr_assert(cur->caps & FI_RMA_PMEM, "an entry without "
			  "FI_RMA_PMEM for ofi_rxm's marked hints");
		/* marked again: libfabric 2.x's rxm keeps only entries of
		 * the domain name it asked for */
		cr_assert_not(strncmp(cur->domain_attr->name, PMV_RDM_MARK,
				      strlen(PMV_RDM_MARK)));
	}
	fi_freeinfo(info);
	fi_freeinfo(hints);
}

/* rxm opens its MSG objects with those entries: the core never sees the
 * mark (it would not know the domain), pmemverbs sees FI_RMA_PMEM. */
Test(rdm, core_hints_lose_the_mark_and_ask_pmem)
{
	struct fi_info *info = rdm_pmem_info(PMV_RDM_MARK "lo"), *core;

	info->ep_attr->type = FI_EP_MSG;
	info->caps = FI_RMA;
	core = pmv_hints_to_core(info, "tcp");
	cr_assert_not_null(core);
	cr_assert_str_eq(core->domain_attr->name, "lo");
	cr_assert_eq(core->caps & FI_RMA_PMEM, 0);
	cr_assert_eq(core->domain_attr->threading, FI_THREAD_SAFE);
	fi_freeinfo(core);
	fi_freeinfo(info);
}
