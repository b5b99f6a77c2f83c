/*
 * Unit tests: persistence profile detection at registration.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "pmv.h"

#define LEN (64 * 1024)

/* Maps a fresh temporary file (unlinked at once) with the given flags. */
static void *map_temp_file(int flags)
{
	char path[] = "/tmp/pmv_profile_XXXXXX";
	int fd = mkstemp(path);
	void *map;

	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, LEN), 0);
	unlink(path);
	map = mmap(NULL, LEN, PROT_READ | PROT_WRITE, flags, fd, 0);
	close(fd);
	cr_assert_neq(map, MAP_FAILED);
	return map;
}

/* Detects the profile of a shared file mapping under a forced granularity. */
static enum fi_pmem_profile file_profile(const char *granularity)
{
	struct pmv_persistence p;
	void *map;

	if (granularity)
		setenv("PMEM2_FORCE_GRANULARITY", granularity, 1);
	else
		unsetenv("PMEM2_FORCE_GRANULARITY");
	map = map_temp_file(MAP_SHARED);
	cr_assert_eq(pmv_persistence_detect(map, LEN, &p), 0);
	cr_assert_not_null(p.persist);
	p.persist(map, 64); /* must be callable on the application's mapping */
	pmv_persistence_release(&p);
	munmap(map, LEN);
	return p.profile;
}

/* Sum of the dirty kB of the mapping that holds addr, from smaps. */
static long dirty_kb(const void *addr)
{
	char line[512];
	unsigned long start, end;
	long kb, total = -1;
	bool inside = false;
	FILE *f = fopen("/proc/self/smaps", "r");

	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &start, &end) == 2) {
			inside = (uintptr_t) addr >= start && (uintptr_t) addr < end;
			if (inside)
				total = 0;
		} else if (inside && (sscanf(line, "Shared_Dirty: %ld kB", &kb) == 1 ||
				      sscanf(line, "Private_Dirty: %ld kB", &kb) == 1)) {
			total += kb;
		}
	}
	fclose(f);
	return total;
}

/* The PAGE persist function must write dirty pages back (msync). */
Test(profile, page_persist_writes_dirty_pages_back)
{
	struct pmv_persistence p;
	char *map;

	unsetenv("PMEM2_FORCE_GRANULARITY");
	map = map_temp_file(MAP_SHARED);
	cr_assert_eq(pmv_persistence_detect(map, LEN, &p), 0);
	cr_assert_eq(p.profile, FI_PMEM_PROFILE_PAGE);
	memset(map, 0xab, LEN);
	cr_assert_gt(dirty_kb(map), 0, "writing made no dirty pages");
	p.persist(map + 100, LEN - 200);
	cr_assert_eq(dirty_kb(map), 0, "persist left dirty pages: not msynced");
	pmv_persistence_release(&p);
	munmap(map, LEN);
}

Test(profile, anonymous_memory_is_volatile)
{
	struct pmv_persistence p;
	void *buf = mmap(NULL, LEN, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	cr_assert_eq(pmv_persistence_detect(buf, LEN, &p), 0);
	cr_assert_eq(p.profile, FI_PMEM_PROFILE_VOLATILE);
	munmap(buf, LEN);
}

Test(profile, a_private_file_mapping_is_volatile)
{
	struct pmv_persistence p;
	void *map = map_temp_file(MAP_PRIVATE);

	cr_assert_eq(pmv_persistence_detect(map, LEN, &p), 0);
	cr_assert_eq(p.profile, FI_PMEM_PROFILE_VOLATILE);
	munmap(map, LEN);
}

Test(profile, an_ordinary_file_is_page_cache)
{
	cr_assert_eq(file_profile(NULL), FI_PMEM_PROFILE_PAGE);
}

Test(profile, forced_cache_line_granularity_is_dmp)
{
	cr_assert_eq(file_profile("cache_line"), FI_PMEM_PROFILE_DMP);
}

Test(profile, forced_byte_granularity_is_mhp)
{
	cr_assert_eq(file_profile("byte"), FI_PMEM_PROFILE_MHP);
}

Test(profile, forced_page_granularity_is_page)
{
	cr_assert_eq(file_profile("page"), FI_PMEM_PROFILE_PAGE);
}

Test(profile, declared_wsp_applies_to_pmem_not_to_page_cache)
{
	pmv_params.wsp = 1;
	cr_assert_eq(file_profile("byte"), FI_PMEM_PROFILE_WSP);
	cr_assert_eq(file_profile("page"), FI_PMEM_PROFILE_PAGE);
}

Test(profile, a_range_past_its_mapping_is_refused)
{
	struct pmv_persistence p;
	char *map = map_temp_file(MAP_SHARED);

	cr_assert_eq(pmv_persistence_detect(map + LEN - 8, 64, &p), -FI_EINVAL);
	munmap(map, LEN);
}

Test(profile, an_unmapped_address_is_refused)
{
	struct pmv_persistence p;

	cr_assert_eq(pmv_persistence_detect((void *) 8, 64, &p), -FI_ENOENT);
}
