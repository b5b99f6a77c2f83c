/*
 * pmemverbs: persistence profile detection.
 *
 * At fi_mr_reg with FI_RMA_PMEM, pmemverbs finds the mapping behind the
 * registered range in /proc/self/maps.  Anonymous memory is VOLATILE.  For a
 * file (or device-DAX) mapping it opens the very file through
 * /proc/self/map_files (which also works for deleted and memfd files), maps
 * its first aligned chunk with libpmem2, and asks for the store granularity
 * (PAGE, CACHE_LINE, BYTE) and the persist function of such a mapping.  The
 * persist function acts on addresses, not on a mapping, so it persists the
 * application's own mapping of the same file.  PMEM2_FORCE_GRANULARITY makes
 * libpmem2 report any granularity for an ordinary file.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <libpmem2.h>

#include "pmv.h"

/* The mapping (one line of /proc/self/maps) that contains addr. */
struct pmv_mapping {
	uintptr_t start, end;
	bool anonymous;
};

/* Fills *map with the mapping holding addr; -FI_ENOENT if none. */
static int pmv_find_mapping(uintptr_t addr, struct pmv_mapping *map)
{
	char line[4096], path[4096], perms[8];
	unsigned long long start, end, inode;
	FILE *maps = fopen("/proc/self/maps", "r");
	int ret = -FI_ENOENT;

	if (!maps)
		return -FI_EIO;
	while (fgets(line, sizeof(line), maps)) {
		path[0] = '\0';
		if (sscanf(line, "%llx-%llx %7s %*s %*s %llu %4095s", &start,
			   &end, perms, &inode, path) < 4)
			continue;
		if (addr < start || addr >= end)
			continue;
		map->start = start;
		map->end = end;
		/* /dev/zero shared mappings have an inode but are anonymous;
		 * a private file mapping never writes back to its file. */
		map->anonymous = inode == 0 || !strncmp(path, "/dev/zero", 9) ||
				 perms[3] != 's';
		ret = 0;
		break;
	}
	fclose(maps);
	return ret;
}

/* Persists a page-cache range with msync (the PAGE profile's fallback). */
static void pmv_msync_persist(const void *ptr, size_t size)
{
	uintptr_t page = (uintptr_t) sysconf(_SC_PAGESIZE);
	uintptr_t start = (uintptr_t) ptr & ~(page - 1);

	if (msync((void *) start, (uintptr_t) ptr + size - start, MS_SYNC))
		PMV_WARN(FI_LOG_MR, "msync of a PAGE-profile region failed: "
			 "%s\n", strerror(errno));
}

/* No-op persist for VOLATILE regions: visibility is all a commit gives. */
static void pmv_no_persist(const void *ptr, size_t size)
{
	(void) ptr; (void) size;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

static enum fi_pmem_profile pmv_profile_of(enum pmem2_granularity g)
{
	switch (g) {
	case PMEM2_GRANULARITY_BYTE:
		return pmv_params.wsp ? FI_PMEM_PROFILE_WSP :
					FI_PMEM_PROFILE_MHP;
	case PMEM2_GRANULARITY_CACHE_LINE:
		return pmv_params.wsp ? FI_PMEM_PROFILE_WSP :
					FI_PMEM_PROFILE_DMP;
	default:
		return FI_PMEM_PROFILE_PAGE;
	}
}

/*
 * The persist function the agent applies to the application's own mapping.
 * libpmem2's page-granularity function msyncs only mappings libpmem2 made
 * itself (on any other address it does nothing), so PAGE regions use
 * pmemverbs's own msync.  The cache-flush functions act on any address.
 * Under declared whole-system persistence visible data is durable already.
 */
static void (*pmv_persist_fn_for(enum fi_pmem_profile profile,
				 struct pmem2_map *map))(const void *, size_t)
{
	switch (profile) {
	case FI_PMEM_PROFILE_PAGE:
		return pmv_msync_persist;
	case FI_PMEM_PROFILE_WSP:
		return pmv_no_persist;
	default:
		return pmem2_get_persist_fn(map);
	}
}

/* Maps the file behind fd with libpmem2 to learn its granularity. */
static int pmv_probe_file(int fd, struct pmv_persistence *p)
{
	struct pmem2_config *cfg = NULL;
	struct pmem2_source *src = NULL;
	size_t align;
	int ret = -FI_EIO;

	if (pmem2_config_new(&cfg) || pmem2_source_from_fd(&src, fd) ||
	    pmem2_source_alignment(src, &align) ||
	    pmem2_config_set_required_store_granularity(cfg,
						PMEM2_GRANULARITY_PAGE) ||
	    pmem2_config_set_length(cfg, align) ||
	    pmem2_map_new(&p->map, cfg, src)) {
		PMV_INFO(FI_LOG_MR, "libpmem2 cannot map the region's file "
			 "(%s); treating it as page cache\n", pmem2_errormsg());
		p->map = NULL;
		goto out;
	}
	p->profile = pmv_profile_of(pmem2_map_get_store_granularity(p->map));
	p->persist = pmv_persist_fn_for(p->profile, p->map);
	ret = 0;
out:
	pmem2_source_delete(&src);
	pmem2_config_delete(&cfg);
	return ret;
}

/* Opens the file behind a mapping, deleted and memfd files included. */
static int pmv_open_mapped_file(const struct pmv_mapping *map)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/map_files/%" PRIxPTR "-%" PRIxPTR,
		 map->start, map->end);
	return open(path, O_RDWR);
}

void pmv_persistence_volatile(struct pmv_persistence *p)
{
	memset(p, 0, sizeof(*p));
	p->profile = FI_PMEM_PROFILE_VOLATILE;
	p->persist = pmv_no_persist;
}

int pmv_persistence_detect(const void *addr, size_t len,
			   struct pmv_persistence *p)
{
	struct pmv_mapping map;
	int fd, ret;

	pmv_persistence_volatile(p);
	ret = pmv_find_mapping((uintptr_t) addr, &map);
	if (ret)
		return ret;
	if ((uintptr_t) addr + len > map.end) {
		PMV_WARN(FI_LOG_MR, "FI_RMA_PMEM region %p+%zu spans more "
			 "than one mapping; register each mapping separately\n",
			 addr, len);
		return -FI_EINVAL;
	}
	if (map.anonymous)
		return 0;
	fd = pmv_open_mapped_file(&map);
	if (fd < 0) {
		PMV_WARN(FI_LOG_MR, "cannot open the file behind %p (%s); "
			 "treating the region as page cache\n", addr,
			 strerror(errno));
	} else {
		ret = pmv_probe_file(fd, p);
		close(fd);
		if (!ret)
			return 0;
	}
	p->profile = FI_PMEM_PROFILE_PAGE;
	p->persist = pmv_msync_persist;
	return 0;
}

void pmv_persistence_release(struct pmv_persistence *p)
{
	if (p->map)
		pmem2_map_delete(&p->map);
}
