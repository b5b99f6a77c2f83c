/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Unit tests: fi_info translation and core provider selection.
 * Criterion runs every test in its own process, so each may set its own
 * FI_PMEMVERBS_CORE_PROV before the provider reads it.
 */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "pmv_objects.h"

struct fi_provider *fi_prov_ini(void);

static void init_with_core(const char *core)
{
	if (core)
		setenv("FI_PMEMVERBS_CORE_PROV", core, 1);
	else
		unsetenv("FI_PMEMVERBS_CORE_PROV");
	fi_prov_ini();
}

Test(hints, null_hints_ask_the_core_for_msg)
{
	struct fi_info *core = pmv_hints_to_core(NULL, "tcp");

	cr_assert_not_null(core);
	cr_assert_str_eq(core->fabric_attr->prov_name, "tcp");
	cr_assert_eq(core->ep_attr->type, FI_EP_MSG);
	fi_freeinfo(core);
}

Test(hints, application_hints_are_copied_not_changed)
{
	struct fi_info *hints = fi_allocinfo(), *core;

	hints->caps = FI_MSG | FI_RMA;
	hints->fabric_attr->prov_name = strdup(PMV_PROV_NAME);
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR;
	core = pmv_hints_to_core(hints, "verbs");
	cr_assert_str_eq(core->fabric_attr->prov_name, "verbs");
	cr_assert_eq(core->caps, FI_MSG | FI_RMA);
	cr_assert_eq(core->domain_attr->mr_mode, FI_MR_LOCAL | FI_MR_VIRT_ADDR);
	cr_assert_str_eq(hints->fabric_attr->prov_name, PMV_PROV_NAME);
	cr_assert_eq(hints->ep_attr->type, FI_EP_UNSPEC);
	fi_freeinfo(core);
	fi_freeinfo(hints);
}

Test(info, from_core_leaves_naming_to_libfabric)
{
	struct fi_info *info = fi_allocinfo();

	info->fabric_attr->prov_name = strdup("tcp");
	cr_assert_eq(pmv_info_from_core(info, NULL), 0);
	cr_assert_null(info->fabric_attr->prov_name);
	fi_freeinfo(info);
}

Test(core, parameter_selects_tcp)
{
	init_with_core("tcp");
	cr_assert_str_eq(pmv_core_name(), "tcp");
}

Test(core, parameter_naming_pmemverbs_itself_is_refused)
{
	struct fi_info *info = NULL;

	init_with_core("pmemverbs");
	cr_assert_null(pmv_core_name());
	cr_assert_eq(pmv_getinfo(PMV_FI_VERSION, NULL, NULL, 0, NULL, &info),
		     -FI_EINVAL);
	cr_assert_null(info);
}

Test(core, parameter_naming_a_utility_stack_is_refused)
{
	init_with_core("tcp;ofi_rxm");
	cr_assert_null(pmv_core_name());
}

Test(core, unknown_core_is_refused)
{
	struct fi_info *info = NULL;

	init_with_core("nosuchprov");
	cr_assert_null(pmv_core_name());
	cr_assert_eq(pmv_getinfo(PMV_FI_VERSION, NULL, NULL, 0, NULL, &info),
		     -FI_EINVAL);
	cr_assert_null(info);
}

/* pmemverbs's fi_getinfo with param=value set over the tcp core. */
static int getinfo_with(const char *param, const char *value)
{
	struct fi_info *info = NULL;
	int ret;

	setenv(param, value, 1);
	init_with_core("tcp");
	ret = pmv_getinfo(PMV_FI_VERSION, NULL, NULL, 0, NULL, &info);
	cr_assert(ret || info, "getinfo gave 0 and no entry");
	cr_assert(!ret || !info, "getinfo gave %d and entries", ret);
	fi_freeinfo(info);
	return ret;
}

/* A configuration error offers nothing rather than run otherwise than set:
 * libfabric's fi_getinfo then returns -FI_ENODATA and logs our -FI_EINVAL. */
Test(config, a_method_that_is_not_one_offers_no_endpoint)
{
	cr_assert_eq(getinfo_with("FI_PMEMVERBS_METHOD", "read-flush"),
		     -FI_EINVAL);
}

Test(config, a_boolean_that_is_not_one_offers_no_endpoint)
{
	cr_assert_eq(getinfo_with("FI_PMEMVERBS_WSP", "maybe"), -FI_EINVAL);
}

Test(config, a_scope_gap_out_of_range_offers_no_endpoint)
{
	cr_assert_eq(getinfo_with("FI_PMEMVERBS_SCOPE_GAP", "-1"), -FI_EINVAL);
}

Test(config, valid_values_offer_endpoints)
{
	cr_assert_eq(getinfo_with("FI_PMEMVERBS_METHOD", "read_flush"), 0);
	cr_assert_eq(getinfo_with("FI_PMEMVERBS_WSP", "no"), 0);
	cr_assert_eq(getinfo_with("FI_PMEMVERBS_SCOPE_GAP", "4096"), 0);
	cr_assert_eq(getinfo_with("FI_PMEMVERBS_DDIO", ""), 0,
		     "an empty value is the default");
}

/* Without the parameter, verbs is chosen exactly when it offers MSG here. */
Test(core, default_is_verbs_when_usable_else_tcp)
{
	struct fi_info *hints = pmv_hints_to_core(NULL, "verbs"), *info = NULL;
	int verbs_ret;

	verbs_ret = fi_getinfo(PMV_FI_VERSION, NULL, NULL,
			       PMV_OFI_GETINFO_HIDDEN | PMV_OFI_CORE_PROV_ONLY,
			       hints, &info);
	fi_freeinfo(info);
	fi_freeinfo(hints);
	init_with_core(NULL);
	cr_assert_str_eq(pmv_core_name(), verbs_ret ? "tcp" : "verbs");
}

Test(getinfo, returns_only_msg_entries)
{
	struct fi_info *info = NULL, *cur;

	init_with_core("tcp");
	cr_assert_eq(pmv_getinfo(PMV_FI_VERSION, NULL, NULL, 0, NULL, &info), 0);
	for (cur = info; cur; cur = cur->next) {
		cr_assert_eq(cur->ep_attr->type, FI_EP_MSG);
		cr_assert_null(cur->fabric_attr->prov_name);
	}
	fi_freeinfo(info);
}

Test(getinfo, rdm_is_left_to_ofi_rxm_layering)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;

	init_with_core("tcp");
	hints->ep_attr->type = FI_EP_RDM;
	cr_assert_eq(pmv_getinfo(PMV_FI_VERSION, NULL, NULL, 0, hints, &info),
		     -FI_ENODATA);
	fi_freeinfo(hints);
}

Test(getinfo, hints_the_core_cannot_meet_give_enodata)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;

	init_with_core("tcp");
	hints->caps = FI_MSG | FI_MULTICAST | FI_COLLECTIVE;
	cr_assert_eq(pmv_getinfo(PMV_FI_VERSION, NULL, NULL, 0, hints, &info),
		     -FI_ENODATA);
	fi_freeinfo(hints);
}

Test(getinfo, node_and_service_reach_the_core)
{
	struct fi_info *info = NULL;

	init_with_core("tcp");
	cr_assert_eq(pmv_getinfo(PMV_FI_VERSION, "127.0.0.1", "9228", FI_SOURCE,
				 NULL, &info), 0);
	cr_assert_not_null(info->src_addr);
	fi_freeinfo(info);
}

/*
 * libfabric lists a provider only to applications asking for an API
 * version it announces (2.1 printed "Provider pmemverbs fi_version 1.17 <
 * requested 2.1" and fi_info -p pmemverbs failed with -61): the plugin
 * must announce the version of the headers it is built against.
 */
Test(version, an_application_of_the_headers_version_is_served)
{
	struct fi_provider *prov = fi_prov_ini();
	uint32_t app = FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION);

	cr_assert(FI_VERSION_GE(prov->fi_version, app),
		  "provider announces %u.%u, an application of these "
		  "headers asks for %u.%u", FI_MAJOR(prov->fi_version),
		  FI_MINOR(prov->fi_version), FI_MAJOR_VERSION,
		  FI_MINOR_VERSION);
}

#if !PMV_HAVE_WAIT_SETS
/*
 * Built against libfabric 2.x, where wait sets and poll sets are
 * deprecated, pmemverbs neither opens nor forwards them (called through
 * the ops tables: the fi_wait_open and fi_poll_open wrappers are
 * deprecated, so -Werror refuses them).
 */
Test(version, no_wait_or_poll_sets_on_libfabric_2)
{
	struct fi_wait_attr wait_attr = { .wait_obj = FI_WAIT_UNSPEC };
	struct fi_poll_attr poll_attr = { 0 };
	struct fid_wait *wait = NULL;
	struct fid_poll *poll = NULL;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fi_info *info;
	int ret;

	init_with_core("tcp");
	cr_assert_eq(pmv_getinfo(PMV_FI_VERSION, "127.0.0.1", NULL, 0, NULL,
				 &info), 0);
	info->fabric_attr->prov_name = strdup(PMV_PROV_NAME);
	cr_assert_eq(pmv_fabric_open(info->fabric_attr, &fabric, NULL), 0);
	cr_assert_eq(fi_domain(fabric, info, &domain, NULL), 0);
	ret = fabric->ops->wait_open(fabric, &wait_attr, &wait);
	cr_assert_eq(ret, -FI_ENOSYS, "fi_wait_open: %d (%s)", ret,
		     fi_strerror(-ret));
	cr_assert_null(wait);
	ret = domain->ops->poll_open(domain, &poll_attr, &poll);
	cr_assert_eq(ret, -FI_ENOSYS, "fi_poll_open: %d (%s)", ret,
		     fi_strerror(-ret));
	cr_assert_null(poll);
	cr_assert_eq(fi_close(&domain->fid), 0);
	cr_assert_eq(fi_close(&fabric->fid), 0);
	fi_freeinfo(info);
}
#endif
