/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Unit tests: persistence profile detection at registration, persisting
 * and placing data, persist errors.
 */
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <linux/magic.h>
#include <sys/resource.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <libpmem2.h>

#include "target/pmv_target.h"

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
	/* must work on the application's mapping */
	cr_assert_eq(pmv_persist(&p, map, 64), 0);
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
	cr_assert_eq(pmv_persist(&p, map + 100, LEN - 200), 0);
	cr_assert_eq(dirty_kb(map), 0, "persist left dirty pages: not msynced");
	pmv_persistence_release(&p);
	munmap(map, LEN);
}

/* Minor page faults of the calling thread so far. */
static long minor_faults(void)
{
	struct rusage ru;

	cr_assert_eq(getrusage(RUSAGE_THREAD, &ru), 0);
	return ru.ru_minflt;
}

/*
 * An RDMA write into a page pinned by ibv_reg_mr does not dirty it: a page
 * written back once then looks clean to msync, which would write nothing.
 * The PAGE persist must itself store through the mapping into every page
 * of the range, which after a writeback is a write fault per page (the
 * page's write protection is how the kernel learns a page is dirty again).
 * The file must be on a file system with writeback (not tmpfs).
 */
/*
 * A shared mapping of LEN bytes of a file on a file system with writeback
 * (/var/tmp is on disk by the FHS); skips the test where it is tmpfs,
 * whose pages are never written back.
 */
static char *map_disk_file(void)
{
	char path[] = "/var/tmp/pmv_profile_XXXXXX";
	struct statfs fs;
	char *map;
	int fd;

	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	unlink(path);
	cr_assert_eq(fstatfs(fd, &fs), 0);
	if (fs.f_type == TMPFS_MAGIC)
		cr_skip_test("/var/tmp is tmpfs: its pages are never written "
			     "back, so there is no writeback to observe");
	cr_assert_eq(ftruncate(fd, LEN), 0);
	map = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	cr_assert_neq(map, MAP_FAILED);
	return map;
}

Test(profile, page_persist_dirties_pages_written_back)
{
	struct pmv_persistence p;
	long before;
	char *map;

	unsetenv("PMEM2_FORCE_GRANULARITY");
	map = map_disk_file();
	cr_assert_eq(pmv_persistence_detect(map, LEN, &p), 0);
	cr_assert(p.writable);
	memset(map, 0x5a, LEN);
	cr_assert_eq(msync(map, LEN, MS_SYNC), 0);
	before = minor_faults();
	/* three pages: the range starts and ends inside one */
	cr_assert_eq(pmv_persist(&p, map + 4096 + 100, 2 * 4096), 0);
	cr_assert_geq(minor_faults() - before, 3, "persist did not dirty the "
		      "pages it msyncs: an RDMA write since their writeback "
		      "would not reach the disk");
	cr_assert_eq(map[4096 + 100], 0x5a, "persist changed a byte");
	pmv_persistence_release(&p);
	munmap(map, LEN);
}

/*
 * Over the tcp core every write lands by a CPU store (its recv), which
 * dirties the page itself: the PAGE persist of such a region (cpu_written)
 * msyncs only, with no MS_ASYNC and no store per page (a write fault per
 * page after a writeback), and still writes a page dirtied since back.
 * The mapping turns read-only before the persist (the record still says
 * writable): a store into it would crash the test.
 */
Test(profile, page_persist_of_cpu_written_pages_only_msyncs)
{
	struct pmv_persistence p;
	char *map;

	unsetenv("PMEM2_FORCE_GRANULARITY");
	map = map_disk_file();
	cr_assert_eq(pmv_persistence_detect(map, LEN, &p), 0);
	cr_assert_eq(p.profile, FI_PMEM_PROFILE_PAGE);
	cr_assert(p.writable);
	p.cpu_written = true;
	memset(map, 0x5a, LEN);
	cr_assert_eq(msync(map, LEN, MS_SYNC), 0);
	map[4096 + 200] = 0x77; /* a CPU store after the writeback */
	cr_assert_gt(dirty_kb(map), 0, "the store dirtied no page");
	cr_assert_eq(mprotect(map, LEN, PROT_READ), 0);
	cr_assert_eq(pmv_persist(&p, map + 4096 + 100, 2 * 4096), 0);
	cr_assert_eq(dirty_kb(map), 0, "persist left dirty pages: not msynced");
	pmv_persistence_release(&p);
	munmap(map, LEN);
}

/* A read-only mapping is never stored to (it would fault). */
Test(profile, page_persist_of_a_read_only_mapping_stores_nothing)
{
	struct pmv_persistence p;
	char *map = map_temp_file(MAP_SHARED);

	unsetenv("PMEM2_FORCE_GRANULARITY");
	cr_assert_eq(mprotect(map, LEN, PROT_READ), 0);
	cr_assert_eq(pmv_persistence_detect(map, LEN, &p), 0);
	cr_assert_eq(p.profile, FI_PMEM_PROFILE_PAGE);
	cr_assert_not(p.writable);
	cr_assert_eq(pmv_persist(&p, map, 3 * 4096), 0);
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

Test(profile, without_map_sync_a_dax_file_is_page_cache)
{
	/* libpmem2 says cache line or byte for any fsdax file (it maps with
	 * MAP_SYNC itself); the application's mapping decides */
	cr_assert_eq(pmv_profile_decide(PMEM2_GRANULARITY_CACHE_LINE, false),
		     FI_PMEM_PROFILE_PAGE);
	cr_assert_eq(pmv_profile_decide(PMEM2_GRANULARITY_BYTE, false),
		     FI_PMEM_PROFILE_PAGE);
	cr_assert_eq(pmv_profile_decide(PMEM2_GRANULARITY_CACHE_LINE, true),
		     FI_PMEM_PROFILE_DMP);
	cr_assert_eq(pmv_profile_decide(PMEM2_GRANULARITY_BYTE, true),
		     FI_PMEM_PROFILE_MHP);
	cr_assert_eq(pmv_profile_decide(PMEM2_GRANULARITY_PAGE, true),
		     FI_PMEM_PROFILE_PAGE);
}

Test(profile, a_failed_persist_is_an_error_never_a_success)
{
	struct pmv_persistence p;
	char *map = map_temp_file(MAP_SHARED);

	unsetenv("PMEM2_FORCE_GRANULARITY");
	cr_assert_eq(pmv_persistence_detect(map, LEN, &p), 0);
	pmv_params.fault_persist = 2;
	cr_assert_eq(pmv_persist(&p, map, 64), 0);
	cr_assert_eq(pmv_persist(&p, map, 64), -FI_EIO);
	cr_assert_eq(pmv_persist(&p, map, 64), 0);
	pmv_params.fault_persist = 0;
	/* msync's own error: a range that is no longer mapped */
	munmap(map, LEN);
	cr_assert_eq(pmv_persist(&p, map, 64), -FI_EIO);
	pmv_persistence_release(&p);
}

/* Places 200 bytes at an odd offset with the region's copy function. */
static void check_place(const char *granularity, bool uncached)
{
	struct pmv_persistence p;
	uint8_t src[200];
	uint8_t *map;

	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t) (i * 13 + 1);
	setenv("PMEM2_FORCE_GRANULARITY", granularity, 1);
	map = map_temp_file(MAP_SHARED);
	cr_assert_eq(pmv_persistence_detect(map, LEN, &p), 0);
	pmv_place(&p, map + 4099, src, sizeof(src), uncached);
	cr_assert_eq(pmv_persist(&p, map + 4099, sizeof(src)), 0);
	cr_assert_arr_eq(map + 4099, src, sizeof(src));
	cr_assert_eq(map[4098], 0);
	cr_assert_eq(map[4099 + sizeof(src)], 0);
	pmv_persistence_release(&p);
	munmap(map, LEN);
}

Test(profile, placed_data_lands_whole_for_every_profile_and_fi_uncached)
{
	check_place("page", false);
	check_place("cache_line", false);
	check_place("cache_line", true);
	check_place("byte", true);
}

/* An application's own pmem2 map of a file, and its profile. */
static enum fi_pmem_profile pmem2_map_profile(const char *granularity,
					      enum pmem2_granularity want)
{
	struct pmem2_config *cfg;
	struct pmem2_source *src;
	struct pmem2_map *map;
	struct pmv_persistence p;
	char path[] = "/tmp/pmv_profile_XXXXXX";
	int fd = mkstemp(path);

	setenv("PMEM2_FORCE_GRANULARITY", granularity, 1);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, LEN), 0);
	unlink(path);
	cr_assert_eq(pmem2_config_new(&cfg), 0);
	cr_assert_eq(pmem2_source_from_fd(&src, fd), 0);
	cr_assert_eq(pmem2_config_set_required_store_granularity(cfg, want), 0);
	cr_assert_eq(pmem2_map_new(&map, cfg, src), 0, "%s", pmem2_errormsg());
	cr_assert_eq(pmv_persistence_from_map(map, &p), 0);
	cr_assert_eq(pmv_persist(&p, pmem2_map_get_address(map), 64), 0);
	pmv_persistence_release(&p);
	/* the map stays the application's: deleted here, not twice */
	pmem2_map_delete(&map);
	pmem2_source_delete(&src);
	pmem2_config_delete(&cfg);
	close(fd);
	return p.profile;
}

Test(profile, an_applications_pmem2_map_keeps_its_granularity)
{
	cr_assert_eq(pmem2_map_profile("page", PMEM2_GRANULARITY_PAGE),
		     FI_PMEM_PROFILE_PAGE);
	cr_assert_eq(pmem2_map_profile("cache_line", PMEM2_GRANULARITY_PAGE),
		     FI_PMEM_PROFILE_DMP);
	cr_assert_eq(pmem2_map_profile("byte", PMEM2_GRANULARITY_PAGE),
		     FI_PMEM_PROFILE_MHP);
}

/*
 * Mounts a tmpfs of 1 MiB on a fresh directory, in a mount namespace of
 * this test's own process; NULL if the system does not allow it.
 */
static const char *small_tmpfs(void)
{
	static char dir[] = "/tmp/pmv_holes_XXXXXX";

	if (!mkdtemp(dir))
		return NULL;
	if (unshare(CLONE_NEWNS) ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    mount("tmpfs", dir, "tmpfs", 0, "size=1m")) {
		rmdir(dir);
		return NULL;
	}
	return dir;
}

/* Maps a sparse file of len bytes in dir (MAP_SHARED). */
static void *map_sparse(const char *dir, size_t len)
{
	char path[64];
	void *map;
	int fd;

	snprintf(path, sizeof(path), "%s/region", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, (off_t) len), 0);
	map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	cr_assert_neq(map, MAP_FAILED);
	return map;
}

#define SPARSE_LEN (8u << 20)

/*
 * Issue 25 item 4: registering (FI_RMA_PMEM) a sparse 8 MiB file on a
 * full 1 MiB tmpfs fails with -FI_ENOSPC, before a peer's write into a
 * hole could kill the target with SIGBUS.
 */
Test(profile, a_sparse_file_its_file_system_cannot_fill_is_refused)
{
	struct pmv_persistence p;
	const char *dir = small_tmpfs();
	int ret;

	if (!dir)
		cr_skip_test("no private mount namespace for a small tmpfs");
	pmv_params.fill_holes = 1;
	ret = pmv_persistence_detect(map_sparse(dir, SPARSE_LEN), SPARSE_LEN,
				     &p);
	cr_assert_eq(ret, -FI_ENOSPC, "registering a sparse 8 MiB file on a "
		     "1 MiB tmpfs returned %d, not -FI_ENOSPC", ret);
}

/* The holes of a registered file range are allocated; its size is kept. */
Test(profile, the_holes_of_a_registered_file_are_allocated)
{
	struct pmv_persistence p;
	struct stat st;
	char path[] = "/tmp/pmv_holes_XXXXXX";
	int fd = mkstemp(path);
	void *map;

	cr_assert_geq(fd, 0);
	unlink(path);
	cr_assert_eq(ftruncate(fd, LEN), 0);
	map = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	cr_assert_neq(map, MAP_FAILED);
	pmv_params.fill_holes = 1;
	cr_assert_eq(pmv_persistence_detect((char *) map + 4096, LEN - 8192,
					    &p), 0);
	cr_assert_eq(fstat(fd, &st), 0);
	cr_assert_eq(st.st_size, LEN);
	cr_assert_geq((uint64_t) st.st_blocks * 512, LEN - 8192,
		      "%lu bytes allocated of a %u-byte range",
		      (unsigned long) st.st_blocks * 512, LEN - 8192);
	pmv_persistence_release(&p);
	munmap(map, LEN);
	close(fd);
}

/*
 * What the refusal prevents: with FI_PMEMVERBS_FILL_HOLES=0 the same
 * registration succeeds, and a store into a hole (the core's copy of a
 * peer's write) dies of SIGBUS once the file system is full.
 */
Test(profile, without_fill_holes_a_write_into_a_hole_is_sigbus,
     .signal = SIGBUS)
{
	struct pmv_persistence p;
	const char *dir = small_tmpfs();
	uint8_t *map;

	if (!dir)
		raise(SIGBUS); /* cannot be shown here; nothing to check */
	pmv_params.fill_holes = 0;
	map = map_sparse(dir, SPARSE_LEN);
	cr_assert_eq(pmv_persistence_detect(map, SPARSE_LEN, &p), 0);
	signal(SIGBUS, SIG_DFL); /* not libfabric's handler, which exits */
	for (size_t off = 0; off < SPARSE_LEN; off += 4096)
		map[off] = 1;
}
