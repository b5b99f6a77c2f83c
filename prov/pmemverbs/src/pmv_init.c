/*
 * pmemverbs: provider entry point and parameters.
 */
#include <stdlib.h>

#include "pmv.h"

struct pmv_params pmv_params;

struct fi_provider pmv_prov = {
	.name = PMV_PROV_NAME,
	.version = PMV_PROV_VERSION,
	.fi_version = PMV_FI_VERSION,
	.getinfo = pmv_getinfo,
	.fabric = pmv_fabric_open,
	.cleanup = NULL,
};

/* Declares every pmemverbs knob so that `fi_info -e` lists it with its help. */
static void pmv_define_params(void)
{
	fi_param_define(&pmv_prov, "core_prov", FI_PARAM_STRING,
			"Core provider pmemverbs layers on for its MSG endpoints "
			"(RDM endpoints come from ofi_rxm layered on pmemverbs): "
			"'verbs' or 'tcp'. Default: verbs when a verbs device "
			"is usable, tcp otherwise.");
}

/* Reads the parameters once; later getinfo calls use the cached values. */
static void pmv_read_params(void)
{
	char *core = NULL;

	if (!fi_param_get_str(&pmv_prov, "core_prov", &core) && core && *core)
		pmv_params.core_prov = core;
}

FI_EXT_INI
{
	pmv_define_params();
	pmv_read_params();
	return &pmv_prov;
}
