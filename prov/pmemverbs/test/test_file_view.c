/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Unit tests: a PAGE region's view (target/pmv_file.c), pmemverbs's own
 * mapping of its file, with no access, through which it is persisted:
 * unmapped with its last region, aligned for huge pages, never populated
 * or locked by mlockall, and shared by the regions of one mapping; and
 * what else a PAGE registration reads.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "target/pmv_target.h"

#define PAGE 4096

/* Maps len bytes of a new unlinked file (PAGE: no forced granularity). */
static uint8_t *map_unlinked(size_t len, int *fd_out)
{
	char path[] = "/var/tmp/pmv_file_XXXXXX";
	int fd = mkstemp(path);
	void *map;

	unsetenv("PMEM2_FORCE_GRANULARITY");
	cr_assert_geq(fd, 0);
	unlink(path);
	cr_assert_eq(ftruncate(fd, (off_t) len), 0);
	map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	cr_assert_neq(map, MAP_FAILED);
	*fd_out = fd;
	return map;
}

/* Mappings of this process (lines of /proc/self/maps). */
static int mappings(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	int n = 0, c;

	cr_assert_not_null(f);
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

/* Each PAGE registration's view is unmapped at its release. */
Test(file, a_released_page_region_leaves_no_mapping)
{
	struct pmv_persistence p;
	int fd, before;
	uint8_t *map = map_unlinked(16 * PAGE, &fd);

	before = mappings();
	for (int i = 0; i < 200; i++) {
		cr_assert_eq(pmv_persistence_detect(map + PAGE, 3 * PAGE, &p),
			     0);
		cr_assert_eq(p.profile, FI_PMEM_PROFILE_PAGE);
		cr_assert_not_null(p.view);
		cr_assert_eq(pmv_persist(&p, map + 2 * PAGE + 5, 100), 0);
		pmv_persistence_release(&p);
	}
	cr_assert_eq(mappings(), before, "200 registrations and releases "
		     "left %d mappings behind", mappings() - before);
	munmap(map, 16 * PAGE);
	close(fd);
}

/* Sets the pool of 2 MiB huge pages (vm.nr_hugepages); the old value. */
static long set_huge_pages(long n)
{
	FILE *f = fopen("/proc/sys/vm/nr_hugepages", "r+");
	long old = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%ld", &old) != 1)
		old = -1;
	rewind(f);
	fprintf(f, "%ld\n", n);
	fclose(f);
	return old;
}

static long g_huge_pages_before = -1;

static void huge_pages_restore(void)
{
	if (g_huge_pages_before >= 0)
		set_huge_pages(g_huge_pages_before);
}

/*
 * A region on hugetlbfs (a memfd with MFD_HUGETLB), whose mappings must
 * start at a huge page's offset: it registers, persists and releases (its
 * view is aligned to the file's block size, a huge page).
 */
Test(file, a_page_region_on_huge_pages_registers_and_persists,
     .fini = huge_pages_restore)
{
	size_t huge = 2 << 20;
	struct pmv_persistence p;
	uint8_t *map;
	int fd;

	if (geteuid())
		cr_skip_test("needs root: vm.nr_hugepages");
	g_huge_pages_before = set_huge_pages(4);
	fd = memfd_create("pmv_huge", MFD_HUGETLB);
	cr_assert_geq(fd, 0, "memfd_create(MFD_HUGETLB): %s", strerror(errno));
	cr_assert_eq(ftruncate(fd, (off_t) (2 * huge)), 0);
	map = mmap(NULL, 2 * huge, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	cr_assert_neq(map, MAP_FAILED, "mmap of huge pages: %s",
		      strerror(errno));
	cr_assert_eq(pmv_persistence_detect(map + huge + PAGE, 3 * PAGE, &p),
		     0, "a region on huge pages did not register");
	memset(map + huge + PAGE, 0x3c, 100);
	cr_assert_eq(pmv_persist(&p, map + huge + PAGE + 8, 90), 0);
	pmv_persistence_release(&p);
	munmap(map, 2 * huge);
	close(fd);
}

/*
 * The kernel's account of the mapping at addr (/proc/self/smaps): its
 * resident kB (pages it maps), and whether it is locked (VmFlags "lo").
 */
static void smaps_of(const void *addr, long *rss_kb, bool *locked)
{
	char line[512], want[32];
	FILE *f = fopen("/proc/self/smaps", "r");
	bool in = false;

	cr_assert_not_null(f);
	snprintf(want, sizeof(want), "%lx-", (unsigned long) addr);
	*rss_kb = -1;
	*locked = false;
	while (fgets(line, sizeof(line), f)) {
		if (strchr(line, '-') && strchr(line, '-') < strchr(line, ' ')
		    && line[0] != ' ' && strncmp(line, "VmFlags", 7))
			in = !strncmp(line, want, strlen(want));
		else if (in && !strncmp(line, "Rss:", 4))
			*rss_kb = strtol(line + 4, NULL, 10);
		else if (in && !strncmp(line, "VmFlags:", 8))
			*locked = strstr(line, " lo") != NULL;
	}
	fclose(f);
	cr_assert_geq(*rss_kb, 0, "no mapping at %p in /proc/self/smaps",
		      addr);
}

/*
 * An application that locks its memory (mlockall(MCL_FUTURE), common
 * with RDMA) registers a PAGE region: the view, which only msync uses,
 * maps no page and stays unlocked.  A readable view was faulted in and
 * locked at registration: page tables over the whole region, a read of
 * every page not in memory, the region counted twice against
 * RLIMIT_MEMLOCK.
 */
Test(file, a_page_regions_view_maps_no_page_under_mlockall)
{
	size_t len = 16 << 20;
	struct pmv_persistence p;
	long rss_kb;
	bool locked;
	int fd;
	uint8_t *map = map_unlinked(len, &fd);

	if (mlockall(MCL_CURRENT | MCL_FUTURE))
		cr_skip_test("mlockall: %s (RLIMIT_MEMLOCK)", strerror(errno));
	cr_assert_eq(pmv_persistence_detect(map, len, &p), 0);
	cr_assert_eq(p.profile, FI_PMEM_PROFILE_PAGE);
	cr_assert_not_null(p.view);
	smaps_of(p.view->addr, &rss_kb, &locked);
	cr_assert_eq(rss_kb, 0, "the view maps %ld kB of the %zu kB region "
		     "(populated at registration)", rss_kb, len >> 10);
	cr_assert_not(locked, "the view is locked (counted against "
		      "RLIMIT_MEMLOCK beside the application's mapping)");
	memset(map + PAGE, 0x4d, 100);
	cr_assert_eq(pmv_persist(&p, map + PAGE, 100), 0);
	pmv_persistence_release(&p);
	munlockall();
	munmap(map, len);
	close(fd);
}

/*
 * Regions registered in one mapping of a file (subranges of one heap,
 * each its own key) share one view: 2000 of them add a few mappings,
 * not 2000 (vm.max_map_count is 65530 by default, and a view per region
 * made registrations fail with FI_ENOMEM past it).  Each still persists.
 */
Test(file, page_regions_of_one_mapping_share_its_view)
{
	enum { N = 2000 };
	size_t len = (size_t) N * PAGE;
	static struct pmv_persistence p[N];
	int fd, before;
	uint8_t *map = map_unlinked(len, &fd);

	before = mappings();
	for (int i = 0; i < N; i++)
		cr_assert_eq(pmv_persistence_detect(map + (size_t) i * PAGE,
						    PAGE, &p[i]), 0,
			     "region %d did not register", i);
	cr_assert_lt(mappings() - before, 8, "%d regions of one mapping added "
		     "%d mappings", N, mappings() - before);
	for (int i = 0; i < N; i += 97) {
		map[(size_t) i * PAGE + 7] = (uint8_t) i;
		cr_assert_eq(pmv_persist(&p[i], map + (size_t) i * PAGE + 7,
					 1), 0);
	}
	for (int i = 0; i < N; i++)
		pmv_persistence_release(&p[i]);
	cr_assert_eq(mappings(), before, "the shared view outlived its "
		     "regions");
	munmap(map, len);
	close(fd);
}

/* Opens of /proc/self/smaps in this process (fopen below counts them). */
static int g_smaps_opens;

/* fopen, counting the opens of /proc/self/smaps: this executable's
 * definition is the one libpmv's calls reach. */
FILE *fopen(const char *path, const char *mode)
{
	static FILE *(*real)(const char *, const char *);

	if (!real)
		real = (FILE *(*)(const char *, const char *))
		       dlsym(RTLD_NEXT, "fopen");
	if (path && !strcmp(path, "/proc/self/smaps"))
		__atomic_add_fetch(&g_smaps_opens, 1, __ATOMIC_RELAXED);
	return real(path, mode);
}

/*
 * A region of a file that is not DAX registers without reading
 * /proc/self/smaps: no mapping of such a file can be MAP_SYNC (statx
 * says whether it is DAX), and the kernel builds smaps by walking the page
 * tables of every mapping listed before the region's (a registration
 * took 21 ms beside 2 GiB of the application's memory, 83 ms beside 8).
 */
Test(file, a_page_cache_region_registers_without_reading_smaps)
{
	struct pmv_persistence p;
	int fd;
	uint8_t *map = map_unlinked(16 * PAGE, &fd);

	g_smaps_opens = 0;
	cr_assert_eq(pmv_persistence_detect(map, 16 * PAGE, &p), 0);
	cr_assert_eq(p.profile, FI_PMEM_PROFILE_PAGE);
	cr_assert_eq(g_smaps_opens, 0, "the registration read /proc/self/"
		     "smaps %d times for a file that is not DAX",
		     g_smaps_opens);
	pmv_persistence_release(&p);
	munmap(map, 16 * PAGE);
	close(fd);
}
