/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The fi_getinfo hints the two-process durability programs start from:
 * pmemverbs MSG endpoints with FI_RMA_PMEM, provider keys and FI_CONTEXT2.
 */
#ifndef PMV_TEST_HINTS_H
#define PMV_TEST_HINTS_H

#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_ext_pmem.h>

/* pmemverbs MSG hints over IPv4, or NULL when out of memory. */
static inline struct fi_info *pmv_test_pmem_hints(void)
{
	struct fi_info *h = fi_allocinfo();

	if (!h)
		return NULL;
	h->ep_attr->type = FI_EP_MSG;
	h->caps = FI_MSG | FI_RMA | FI_RMA_PMEM;
	h->mode = FI_CONTEXT | FI_CONTEXT2;
	h->addr_format = FI_SOCKADDR_IN;
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				  FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	h->fabric_attr->prov_name = strdup("pmemverbs");
	if (!h->fabric_attr->prov_name) {
		fi_freeinfo(h);
		return NULL;
	}
	return h;
}

#endif /* PMV_TEST_HINTS_H */
