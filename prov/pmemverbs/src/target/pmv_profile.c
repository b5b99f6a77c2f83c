/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: persistence profile detection, and persisting a region.
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
 *
 * CPU flushes alone make data durable only where the file system has
 * nothing left to do: device-DAX, or an fsdax file the application mapped
 * with MAP_SYNC (PMDK's rule).  libpmem2 maps with MAP_SYNC itself, so it
 * reports cache-line granularity for any fsdax file; an application mapping
 * without MAP_SYNC ("sf" missing from its VmFlags in /proc/self/smaps) is
 * PAGE, persisted with msync.  A forced granularity is a test's statement
 * about the mapping and is taken as it is.
 *
 * An application that has its own struct pmem2_map registers it through
 * FI_PMEM_DOMAIN_OPS: then that map's granularity, persist and memcpy
 * functions are used as libpmem2 gives them.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <libpmem2.h>

#include "target/pmv_target.h"
#include "pmv_timeline.h"

/* The mapping (one line of /proc/self/maps) that contains addr. */
struct pmv_mapping {
	uintptr_t start, end;
	uint64_t offset; /* of start in the file */
	bool anonymous;
	bool writable;
};



/* Fills *map with the mapping holding addr; -FI_ENOENT if none. */
static int pmv_find_mapping(uintptr_t addr, struct pmv_mapping *map)
{
	char line[4096], path[4096], perms[8];
	unsigned long long start, end, offset, inode;
	FILE *maps = fopen("/proc/self/maps", "r");
	int ret = -FI_ENOENT;

	if (!maps)
		return -FI_EIO;
	while (fgets(line, sizeof(line), maps)) {
		path[0] = '\0';
		if (sscanf(line, "%llx-%llx %7s %llx %*s %llu %4095s", &start,
			   &end, perms, &offset, &inode, path) < 5)
			continue;
		if (addr < start || addr >= end)
			continue;
		map->start = start;
		map->end = end;
		map->offset = offset;
		/* /dev/zero shared mappings have an inode but are anonymous;
		 * a private file mapping never writes back to its file. */
		map->anonymous = inode == 0 || !strncmp(path, "/dev/zero", 9) ||
				 perms[3] != 's';
		map->writable = perms[1] == 'w';
		ret = 0;
		break;
	}
	fclose(maps);
	return ret;
}

/*
 * Marks every page of [start, end) dirty by a store through the mapping: an
 * atomic OR of zero into its first word, which changes no byte and cannot
 * lose a concurrent write.  RDMA writes into pages that ibv_reg_mr pinned
 * do not dirty them, so once such a page was written back, msync alone
 * would find it clean and write nothing; the store's write fault dirties
 * it again.  Over tcp the core's recv() already dirtied the pages.
 */
static void pmv_dirty_pages(uintptr_t start, uintptr_t end, uintptr_t page)
{
	for (; start < end; start += page)
		__atomic_fetch_or((uint64_t *) start, 0, __ATOMIC_RELAXED);
}

/*
 * Persists a page-cache range with msync: through the region's view, which
 * reports writeback errors that the application's descriptor consumed
 * (pmv_file.c), else through the application's mapping, then reads it
 * back if its file failed before (pmv_file_read_back).  0; -FI_EIO if
 * its writeback failed (EIO, ENOSPC, EDQUOT: the file's pages may be
 * poisoned) or the read-back did; -FI_EFAULT if msync failed otherwise
 * (ENOMEM: the range is no longer mapped).
 */
static int pmv_msync_persist(const struct pmv_persistence *p,
			     const void *ptr, size_t size)
{
	uintptr_t page = (uintptr_t) sysconf(_SC_PAGESIZE);
	uintptr_t start = (uintptr_t) ptr & ~(page - 1);
	uintptr_t end = (uintptr_t) ptr + size;
	int ret;

	/* MS_ASYNC writes nothing; its ENOMEM says the range is unmapped,
	 * where a store would fault: the pages cannot be dirtied, the commit
	 * fails.  Writes that came by a CPU store (the tcp core's recv)
	 * dirtied their pages themselves: msync only. */
	if (p->writable && !p->cpu_written) {
		if (msync((void *) start, end - start, MS_ASYNC))
			goto failed;
		pmv_dirty_pages(start, end, page);
	}
	pmv_mark(PMV_MARK_SYNC);
	ret = pmv_file_view_sync(p, ptr, size);
	pmv_mark(PMV_MARK_SYNCED);
	if (!ret || (ret > 0 && !msync((void *) start, end - start, MS_SYNC)))
		return pmv_file_read_back(p, ptr, size);
failed:
	ret = errno == EIO || errno == ENOSPC || errno == EDQUOT ? -FI_EIO :
								   -FI_EFAULT;
	PMV_WARN(FI_LOG_MR, "msync of a PAGE-profile region failed (%s): data "
		 "written to it may be lost, its durability unknown; the "
		 "commit fails with FI_EIO\n", strerror(errno));
	return ret;
}

/*
 * Makes [addr, addr + len) of a region durable: 0, or -FI_EIO when the
 * system could not, or could not before (an earlier failure of the file,
 * pmv_file.c), or the range is no longer in the file (the commit then
 * fails, never completes).
 */
int pmv_persist(const struct pmv_persistence *p, const void *addr,
		size_t len)
{
	int ret;

	PMV_CALL_CHECK(PMV_CALL_PERSIST, "a persist (msync or CPU flush)");
	if (pmv_fault(PMV_FAULT_PERSIST))
		return -FI_EIO;
	ret = pmv_file_check(p, addr, len);
	pmv_mark(PMV_MARK_CHECKED);
	if (ret)
		return ret;
	switch (p->kind) {
	case PMV_PERSIST_MSYNC:
		ret = pmv_msync_persist(p, addr, len);
		if (ret)
			pmv_file_failed(p, ret == -FI_EIO);
		return ret ? -FI_EIO : 0;
	case PMV_PERSIST_CPU:
		p->cpu_persist(addr, len);
		return 0;
	default:
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		return 0;
	}
}

/* One aligned 8-byte word in one store: non-temporal (movnti) if nt. */
static inline void pmv_store_word(uint8_t *dst, const uint8_t *src, bool nt)
{
	uint64_t w;

	memcpy(&w, src, sizeof(w));
#if defined(__x86_64__)
	if (nt) {
		_mm_stream_si64((long long *) (void *) dst, (long long) w);
		return;
	}
#endif
	__atomic_store_n((uint64_t *) (void *) dst, w, __ATOMIC_RELAXED);
}

/*
 * Copies len bytes with one whole 8-byte store for every aligned word of
 * dst, so that each stays atomically durable (the atomicity chunk of
 * fi_ext_pmem(3)), as an RDMA write keeps it; the bytes before the first
 * and after the last aligned word go one by one.  Library copies (such as
 * libpmem2's) write some words as two 4-byte stores.  nt: the words with
 * non-temporal stores, fenced before returning.
 */
static void pmv_copy_words(uint8_t *dst, const uint8_t *src, size_t len,
			   bool nt)
{
	for (; len && ((uintptr_t) dst & 7); len--)
		*dst++ = *src++;
	for (; len >= 8; len -= 8, dst += 8, src += 8)
		pmv_store_word(dst, src, nt);
	for (; len; len--)
		*dst++ = *src++;
#if defined(__x86_64__)
	if (nt)
		_mm_sfence();
#endif
}

/*
 * Places data the agent received (send method) into a region, with whole
 * 8-byte stores (non-temporal for FI_UNCACHED regions); the caller
 * persists it.  0, or -FI_EIO if the region's file failed or no longer
 * holds the range (nothing stored).
 */
int pmv_place(const struct pmv_persistence *p, void *dst, const void *src,
	      size_t len, bool uncached)
{
	int ret = pmv_file_check(p, dst, len);

	if (!ret)
		pmv_copy_words(dst, src, len, uncached);
	return ret;
}

/*
 * The profile of a mapping from libpmem2's granularity and whether CPU
 * flushes alone can make it durable (device-DAX, MAP_SYNC, or forced).
 */
enum fi_pmem_profile pmv_profile_decide(int granularity, bool cpu_flush_ok)
{
	if (granularity == PMEM2_GRANULARITY_PAGE || !cpu_flush_ok)
		return FI_PMEM_PROFILE_PAGE;
	if (pmv_params.wsp)
		return FI_PMEM_PROFILE_WSP;
	return granularity == PMEM2_GRANULARITY_BYTE ? FI_PMEM_PROFILE_MHP :
						       FI_PMEM_PROFILE_DMP;
}

/* Sets how a region of profile p->profile is persisted, from map. */
static void pmv_persistence_set(struct pmv_persistence *p,
				struct pmem2_map *map)
{
	switch (p->profile) {
	case FI_PMEM_PROFILE_PAGE:
		/* libpmem2's page persist acts only on its own mappings and
		 * ignores msync's errors: pmemverbs msyncs itself */
		p->kind = PMV_PERSIST_MSYNC;
		break;
	case FI_PMEM_PROFILE_WSP:
		p->kind = PMV_PERSIST_NONE;
		break;
	default:
		p->kind = PMV_PERSIST_CPU;
		p->cpu_persist = pmem2_get_persist_fn(map);
		break;
	}
}

/*
 * Maps the file behind fd with libpmem2 to learn its granularity, and
 * unmaps it: its persist function needs no map, and a mapping kept per
 * registration counts against vm.max_map_count.
 */
static int pmv_probe_file(int fd, bool cpu_flush_ok,
			  struct pmv_persistence *p)
{
	struct pmem2_config *cfg = NULL;
	struct pmem2_source *src = NULL;
	struct pmem2_map *map;
	size_t align;
	int ret = -FI_EIO;

	if (pmem2_config_new(&cfg) || pmem2_source_from_fd(&src, fd) ||
	    pmem2_source_alignment(src, &align) ||
	    pmem2_config_set_required_store_granularity(cfg,
						PMEM2_GRANULARITY_PAGE) ||
	    pmem2_config_set_length(cfg, align) ||
	    pmem2_map_new(&map, cfg, src)) {
		PMV_INFO(FI_LOG_MR, "libpmem2 cannot map the region's file "
			 "(%s); treating it as page cache\n", pmem2_errormsg());
		goto out;
	}
	p->profile = pmv_profile_decide(pmem2_map_get_store_granularity(map),
					cpu_flush_ok);
	if (p->profile == FI_PMEM_PROFILE_PAGE && !cpu_flush_ok &&
	    pmem2_map_get_store_granularity(map) != PMEM2_GRANULARITY_PAGE)
		PMV_INFO(FI_LOG_MR, "the region is a DAX file mapped without "
			 "MAP_SYNC: profile PAGE (msync); map it with "
			 "MAP_SHARED_VALIDATE | MAP_SYNC for CPU flushes\n");
	pmv_persistence_set(p, map);
	(void) pmem2_map_delete(&map);
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
	return open(path, O_RDWR | O_CLOEXEC); /* kept: pmv_file.c */
}

void pmv_persistence_volatile(struct pmv_persistence *p)
{
	memset(p, 0, sizeof(*p));
	p->profile = FI_PMEM_PROFILE_VOLATILE;
	p->kind = PMV_PERSIST_NONE;
}

/* True if the mapping starting at start was made with MAP_SYNC. */
static bool pmv_mapping_is_sync(uintptr_t start)
{
	char line[512];
	unsigned long long s, e;
	bool inside = false, sync = false;
	FILE *f = fopen("/proc/self/smaps", "r");

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx-%llx ", &s, &e) == 2) {
			if (inside)
				break;
			inside = s == start;
		} else if (inside && !strncmp(line, "VmFlags:", 8)) {
			sync = strstr(line, " sf") != NULL;
			break;
		}
	}
	fclose(f);
	return sync;
}

#ifndef STATX_ATTR_DAX
#define STATX_ATTR_DAX 0x00200000 /* statx(2), Linux 5.8 */
#endif

/*
 * True if CPU flushes alone make the file's mapped bytes durable:
 * device-DAX, a MAP_SYNC mapping, or a granularity a test forced.  The
 * mapping's smaps are read only if statx does not say the file is not DAX
 * (STATX_ATTR_DAX, Linux 5.8): no mapping of another file can be MAP_SYNC
 * (mmap refuses), and the kernel builds smaps by walking the page tables
 * of every mapping listed before the region's (21 ms beside 2 GiB of the
 * application's memory).
 */
static bool pmv_cpu_flush_ok(int fd, const struct pmv_mapping *map)
{
	const char *forced = getenv("PMEM2_FORCE_GRANULARITY");
	struct statx stx;

	if (forced && *forced)
		return true;
	if (statx(fd, "", AT_EMPTY_PATH, STATX_TYPE, &stx))
		return pmv_mapping_is_sync(map->start);
	if (S_ISCHR(stx.stx_mode))
		return true;
	if ((stx.stx_attributes_mask & STATX_ATTR_DAX) &&
	    !(stx.stx_attributes & STATX_ATTR_DAX))
		return false;
	return pmv_mapping_is_sync(map->start);
}

/* Ties p to the file fd opens, which mapping map maps (fd is taken). */
static void pmv_persistence_file(struct pmv_persistence *p,
				 const struct pmv_mapping *map, int fd)
{
	p->map_start = map->start;
	p->map_offset = map->offset;
	p->map_len = map->end - map->start;
	pmv_file_attach(p, fd);
}

/* A region of the page cache, persisted with msync. */
static void pmv_persistence_page(struct pmv_persistence *p)
{
	p->profile = FI_PMEM_PROFILE_PAGE;
	p->kind = PMV_PERSIST_MSYNC;
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
	p->writable = map.writable;
	fd = pmv_open_mapped_file(&map);
	if (fd < 0) {
		PMV_WARN(FI_LOG_MR, "cannot open the file behind %p (%s); "
			 "treating the region as page cache, unchecked for "
			 "truncation and earlier writeback errors\n", addr,
			 strerror(errno));
		pmv_persistence_page(p);
		return 0;
	}
	ret = pmv_fill_holes(fd, map.offset + ((uintptr_t) addr - map.start),
			     len);
	if (ret == -FI_ENOSPC) {
		close(fd);
		return ret;
	}
	if (pmv_probe_file(fd, pmv_cpu_flush_ok(fd, &map), p))
		pmv_persistence_page(p);
	pmv_persistence_file(p, &map, fd);
	ret = pmv_file_view_map(p, addr, len);
	if (ret)
		pmv_persistence_release(p);
	return ret;
}

/*
 * The persistence of an application's own pmem2 map: libpmem2 made it, so
 * its granularity holds for it (MAP_SYNC where needed) and its functions
 * act on it.  The map stays the application's.
 */
int pmv_persistence_from_map(struct pmem2_map *map, struct pmv_persistence *p)
{
	struct pmv_mapping mapping;
	int fd, ret;

	pmv_persistence_volatile(p);
	if (!map)
		return -FI_EINVAL;
	p->profile = pmv_profile_decide(pmem2_map_get_store_granularity(map),
					true);
	pmv_persistence_set(p, map);
	if (pmv_find_mapping((uintptr_t) pmem2_map_get_address(map), &mapping))
		return 0;
	p->writable = mapping.writable;
	fd = mapping.anonymous ? -1 : pmv_open_mapped_file(&mapping);
	if (fd < 0)
		return 0;
	pmv_persistence_file(p, &mapping, fd);
	ret = pmv_file_view_map(p, pmem2_map_get_address(map),
				pmem2_map_get_size(map));
	if (ret)
		pmv_persistence_release(p);
	return ret;
}

void pmv_persistence_release(struct pmv_persistence *p)
{
	pmv_file_detach(p);
}
