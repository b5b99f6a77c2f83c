/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * 03-profile-query, target: registers a file as persistent memory and
 * prints what pmemverbs found (FI_PMEM_DOMAIN_OPS: mr_profile, core_prov).
 * Try PMEM2_FORCE_GRANULARITY=cache_line or =byte to see DMP and MHP.
 *
 *   ./target [PORT [FILE]]     (default 9620, /dev/shm/pmem_example_03)
 */
#include "pmem_example.h"

int main(int argc, char **argv)
{
	const char *port = argc > 1 ? argv[1] : "9620";
	const char *path = argc > 2 ? argv[2] : "/dev/shm/pmem_example_03";
	char *map = ex_map_file(path);
	struct fi_pmem_ops_domain *pmem;
	struct ex x = { 0 };
	struct ex_region region;
	enum fi_pmem_profile profile;
	struct fid_mr *mr;

	ex_accept(&x, port);
	EX_CHECK(fi_open_ops(&x.domain->fid, FI_PMEM_DOMAIN_OPS, 0,
			     (void **) &pmem, NULL));
	region = ex_register_pmem(&x, map, &mr);
	profile = pmem->mr_profile(mr);
	printf("target: core %s; %s registered as %s\n",
	       pmem->core_prov(x.domain), path, fi_pmem_profile_str(profile));
	ex_send(&x, &region, sizeof(region));
	ex_wait_for(&x, FI_RECV, NULL, NULL); /* "done" */
	ex_close(&x, mr);
	if (profile == FI_PMEM_PROFILE_UNKNOWN) {
		fprintf(stderr, "FAIL: no profile for a registered region\n");
		return 1;
	}
	printf("OK\n");
	return 0;
}
