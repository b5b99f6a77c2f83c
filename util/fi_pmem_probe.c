/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * fi_pmem_probe: prints the persistence profile pmemverbs would find for a
 * file registered with FI_RMA_PMEM, and how a peer's commits to it would be
 * made durable.  Usage: fi_pmem_probe [-n] FILE, or fi_pmem_probe -r ADDR
 * PORT for the profile table of a remote target (fi_pmem_probe_remote.c).
 *
 * It opens the file read-only and maps it shared, as a target application
 * would (with MAP_SYNC where the file takes it; -n: without MAP_SYNC), and
 * runs the provider's own detection on that mapping, so
 * PMEM2_FORCE_GRANULARITY and FI_PMEMVERBS_WSP apply as they would there.
 * The method is the one the provider's method selection gives a peer's
 * commits to that profile over the core this process would use
 * (FI_PMEMVERBS_CORE_PROV, FI_PMEMVERBS_METHOD, FI_PMEMVERBS_JOIN_REQUEST
 * and FI_PMEMVERBS_DDIO apply).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pmv_objects.h"
#include "initiator/pmv_initiator.h"
#include "fi_pmem_probe.h"

struct fi_provider *fi_prov_ini(void);

/* What the target agent does for a commit to a region of this profile. */
static const char *pmv_agent_action(enum fi_pmem_profile profile)
{
	switch (profile) {
	case FI_PMEM_PROFILE_VOLATILE:
		return "nothing to persist: a commit completes once the data "
		       "is visible at the target";
	case FI_PMEM_PROFILE_PAGE:
		return "msync of the committed pages (page cache)";
	case FI_PMEM_PROFILE_DMP:
		return "cache-line flush of the committed lines, then a fence "
		       "(libpmem2's persist function)";
	case FI_PMEM_PROFILE_MHP:
		return "a fence only: CPU caches are in the persistence domain";
	case FI_PMEM_PROFILE_WSP:
		return "a fence only: declared whole-system persistence";
	default:
		return "unknown";
	}
}

/* Maps len bytes of the file shared and read-only, as a target would. */
static void *pmv_map_file(const char *path, size_t *len, bool *sync)
{
	struct stat st;
	void *map;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || fstat(fd, &st)) {
		perror(path);
		return NULL;
	}
	*len = S_ISREG(st.st_mode) && st.st_size > 0 ? (size_t) st.st_size :
						       2 * 1024 * 1024;
	map = *sync ? mmap(NULL, *len, PROT_READ,
			   MAP_SHARED_VALIDATE | MAP_SYNC, fd, 0) : MAP_FAILED;
	*sync = map != MAP_FAILED;
	if (map == MAP_FAILED)
		map = mmap(NULL, *len, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED) {
		perror("mmap");
		return NULL;
	}
	return map;
}

/* The method a peer's commits to a key of this profile take, once the
 * peer knows the profile (from the pushed table), over this process's
 * core; NONE if FI_PMEMVERBS_METHOD forces an incorrect one. */
enum fi_pmem_method pmv_probe_method(enum fi_pmem_profile profile,
				     bool ddio_off, const char **core)
{
	struct pmv_key_facts k = { .profile = profile, .ddio_off = ddio_off,
				   .raw_ordered = true };
	const char *name = pmv_core_name();

	if (!name)
		name = "none";
	if (core)
		*core = name;
	k.transport = !strcasecmp(name, "verbs") ? PMV_TRANSPORT_IB :
		      PMV_TRANSPORT_TCP;
	return pmv_method_select(&k, 0);
}

/* Prints the method line. */
static void pmv_print_method(enum fi_pmem_profile profile)
{
	const char *core;
	enum fi_pmem_method m = pmv_probe_method(profile, !pmv_params.ddio,
						 &core);

	if (m == FI_PMEM_METHOD_NONE)
		printf("method:          none: FI_PMEMVERBS_METHOD forces a "
		       "method incorrect for %s; commits are refused\n",
		       fi_pmem_profile_str(profile));
	else
		printf("method:          %s (over the %s core, once the peer "
		       "knows the profile from the pushed table; agent before; "
		       "FI_IMMED commits: agent)\n", fi_pmem_method_str(m),
		       core);
}

int main(int argc, char **argv)
{
	struct pmv_persistence p;
	bool sync = !(argc == 3 && !strcmp(argv[1], "-n"));
	const char *path = argv[argc - 1];
	size_t len;
	void *map;
	int ret;

	fi_prov_ini(); /* reads FI_PMEMVERBS_* parameters */
	if (pmv_params.config_error || !pmv_core_name()) {
		fprintf(stderr, "%s: pmemverbs cannot run with this environment "
			"(an FI_PMEMVERBS_* value is invalid, or "
			"FI_PMEMVERBS_CORE_PROV names no usable core): set "
			"FI_LOG_LEVEL=warn to see why\n", argv[0]);
		return 1;
	}
	if (argc == 4 && !strcmp(argv[1], "-r"))
		return pmv_probe_remote(argv[2], argv[3]);
	if ((argc != 2 && sync) || !strcmp(path, "-h")) {
		fprintf(stderr, "usage: %s [-n] FILE\n"
			"       %s -r ADDR PORT\n"
			"  -n  map without MAP_SYNC\n"
			"  -r  the profile table of the target listening at "
			"ADDR PORT\n", argv[0], argv[0]);
		return 2;
	}
	map = pmv_map_file(path, &len, &sync);
	if (!map)
		return 1;
	ret = pmv_persistence_detect(map, len, &p);
	if (ret) {
		fprintf(stderr, "%s: detection failed: %s\n", path,
			fi_strerror(-ret));
		return 1;
	}
	printf("file:            %s (%zu bytes mapped%s)\n", path, len,
	       sync ? ", MAP_SYNC" : "");
	printf("profile:         %s\n", fi_pmem_profile_str(p.profile));
	pmv_print_method(p.profile);
	printf("agent persists:  %s\n", pmv_agent_action(p.profile));
	printf("atomicity chunk: %d bytes\n", PMV_ATOMICITY_CHUNK);
	pmv_persistence_release(&p);
	munmap(map, len);
	return 0;
}
