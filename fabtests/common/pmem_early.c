/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* pmem_early: commits that complete before persistence (see pmem_early.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pmem_early.h"
#include "target/pmv_oracle.h"

#ifndef __NR_cachestat
#define __NR_cachestat 451 /* the same number on every architecture */
#endif

/* cachestat(2)'s arguments (linux/mman.h since 6.5; older headers lack it). */
struct pm_cachestat_range {
	uint64_t off;
	uint64_t len;
};

struct pm_cachestat {
	uint64_t nr_cache;
	uint64_t nr_dirty;
	uint64_t nr_writeback;
	uint64_t nr_evicted;
	uint64_t nr_recently_evicted;
};

static int pm_early_open_oracle(struct pm_early *e, const char *path)
{
	struct stat st;
	void *mem;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || fstat(fd, &st) ||
	    (size_t) st.st_size < sizeof(struct pmv_oracle_log)) {
		int err = fd < 0 ? errno : EINVAL;

		if (fd >= 0)
			close(fd);
		return -err;
	}
	mem = mmap(NULL, (size_t) st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (mem == MAP_FAILED)
		return -errno;
	e->oracle = mem;
	e->oracle_len = (size_t) st.st_size;
	e->oracle_cap = pmv_oracle_capacity((size_t) st.st_size);
	return 0;
}

/* Maps the target's file read-only for the placed check. */
static int pm_early_open_placed(struct pm_early *e, const char *path)
{
	struct stat st;
	void *mem;
	int fd = open(path, O_RDONLY), err;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !st.st_size) {
		err = errno ? errno : EINVAL;
		close(fd);
		return -err;
	}
	mem = mmap(NULL, (size_t) st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	err = errno;
	close(fd);
	if (mem == MAP_FAILED)
		return -err;
	e->placed = mem;
	e->placed_len = (size_t) st.st_size;
	return 0;
}

int pm_early_open(struct pm_early *e, const char *dirty_file,
		  const char *placed_file, const char *oracle_file)
{
	int ret = 0;

	memset(e, 0, sizeof(*e));
	e->dirty_fd = -1;
	if (dirty_file) {
		e->dirty_fd = open(dirty_file, O_RDONLY);
		if (e->dirty_fd < 0)
			return -errno;
	}
	if (placed_file)
		ret = pm_early_open_placed(e, placed_file);
	return !ret && oracle_file ? pm_early_open_oracle(e, oracle_file) : ret;
}

int pm_early_enabled(const struct pm_early *e)
{
	return e->dirty_fd >= 0 || e->oracle || e->placed;
}

/* 1 if [off, off + len) of the target's file differs from src, else 0. */
static int pm_range_unplaced(const struct pm_early *e, uint64_t off,
			     const void *src, size_t len)
{
	if (off + len > e->placed_len)
		return -ERANGE;
	return memcmp(e->placed + off, src, len) != 0;
}

/* 1 if a page of [off, off + len) is dirty or under writeback, 0 if none
 * is, -errno if the kernel cannot tell. */
static int pm_range_dirty(int fd, uint64_t off, size_t len)
{
	struct pm_cachestat_range range = { off, len };
	struct pm_cachestat cs = { 0 };

	if (syscall(__NR_cachestat, fd, &range, &cs, 0))
		return -errno;
	return cs.nr_dirty + cs.nr_writeback > 0;
}

/* Where the oracle's valid records covering addr end under key (addr if
 * none covers it). */
static uint64_t pm_oracle_reach(const struct pmv_oracle_log *log,
				uint64_t n, uint64_t key, uint64_t addr)
{
	uint64_t i, end = addr;

	for (i = 0; i < n; i++) {
		const struct pmv_oracle_rec *r = &log->rec[i];

		if (!__atomic_load_n(&r->valid, __ATOMIC_ACQUIRE) ||
		    r->key != key)
			continue;
		if (r->addr <= addr && r->addr + r->len > end)
			end = r->addr + r->len;
	}
	return end;
}

/* 1 if the oracle's records do not cover [addr, addr + len), else 0. */
static int pm_range_uncovered(const struct pm_early *e, uint64_t key,
			      uint64_t addr, size_t len)
{
	uint64_t n = __atomic_load_n(&e->oracle->count, __ATOMIC_ACQUIRE);
	uint64_t at = addr, next;

	if (__atomic_load_n(&e->oracle->magic, __ATOMIC_ACQUIRE) !=
	    PMV_ORACLE_MAGIC)
		return 1; /* the target never opened the log: nothing persisted */
	if (n > e->oracle_cap)
		return -ENOSPC;
	while (at < addr + len) {
		next = pm_oracle_reach(e->oracle, n, key, at);
		if (next == at)
			return 1;
		at = next;
	}
	return 0;
}

/* Counts one check's result r (1 early, 0 durable, -errno unknown). */
static void pm_early_count(struct pm_early *e, int r, int *early)
{
	if (r < 0) {
		e->unknown++;
		e->last_errno = -r;
	} else if (r) {
		*early = 1;
	}
}

void pm_early_check(struct pm_early *e, uint64_t key, uint64_t addr,
		    uint64_t off, const void *src, size_t len)
{
	int early = 0;

	if (!pm_early_enabled(e))
		return;
	if (e->dirty_fd >= 0)
		pm_early_count(e, pm_range_dirty(e->dirty_fd, off, len), &early);
	if (e->placed)
		pm_early_count(e, pm_range_unplaced(e, off, src, len), &early);
	if (e->oracle)
		pm_early_count(e, pm_range_uncovered(e, key, addr, len), &early);
	e->checked++;
	e->early += (uint64_t) early;
}

void pm_early_report(const struct pm_early *e, const char *what)
{
	if (!pm_early_enabled(e))
		return;
	printf("early: %" PRIu64 " of %" PRIu64 " commits completed before "
	       "persistence (%s;%s%s%s); %" PRIu64 " checks failed%s%s\n",
	       e->early, e->checked, what,
	       e->dirty_fd >= 0 ? " dirty pages" : "",
	       e->placed ? " placed bytes" : "",
	       e->oracle ? " oracle" : "", e->unknown,
	       e->unknown ? ": " : "",
	       e->unknown ? strerror(e->last_errno) : "");
	fflush(stdout);
}

void pm_early_close(struct pm_early *e)
{
	if (e->dirty_fd >= 0)
		close(e->dirty_fd);
	if (e->oracle)
		munmap((void *) e->oracle, e->oracle_len);
	if (e->placed)
		munmap((void *) e->placed, e->placed_len);
	memset(e, 0, sizeof(*e));
	e->dirty_fd = -1;
}
