/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmem_early: did a commit complete before its bytes were persistent?
 * Benchmark instrumentation, checked right after each completion, outside
 * any timed interval, on a target on the same host:
 *
 *   dirty   (-D FILE) the target's file, when it is a page-cache file
 *           (PAGE): a commit is early if a page of its range is still
 *           dirty or under writeback in the page cache at its completion
 *           (cachestat(2), Linux 6.5+).  Works for any provider, the tcp
 *           core's own FI_COMMIT_COMPLETE included.
 *   placed  (-V FILE) the target's file, mapped read-only: a commit is early
 *           if its range does not hold the bytes written (MHP, where
 *           placement is persistence).  Any provider.
 *   oracle  (-O LOG) pmemverbs' persistence oracle (FI_PMEMVERBS_ORACLE
 *           on the target, --enable-fault-injection builds): a commit is
 *           early if the records already in the log do not cover every
 *           byte of its range.  Any profile, pmemverbs only.
 */
#ifndef PMEM_EARLY_H
#define PMEM_EARLY_H

#include <stddef.h>
#include <stdint.h>

struct pmv_oracle_log;

struct pm_early {
	int dirty_fd;                        /* -1: no dirty check */
	const struct pmv_oracle_log *oracle; /* NULL: no oracle check */
	size_t oracle_cap;
	size_t oracle_len;
	const unsigned char *placed; /* -V's mapping, NULL: no placed check */
	size_t placed_len;
	uint64_t checked;   /* commits checked */
	uint64_t early;     /* of those, not persistent at completion */
	uint64_t unknown;   /* checks that could not be made (errno kept) */
	int last_errno;
};

/* Opens what the checks need (any path may be NULL); 0 or -errno. */
int pm_early_open(struct pm_early *e, const char *dirty_file,
		  const char *placed_file, const char *oracle_file);

/* True if a check was asked for. */
int pm_early_enabled(const struct pm_early *e);

/* Checks one completed commit of the len bytes at src, written at file
 * offset off (dirty, placed) and RMA address addr under key (oracle). */
void pm_early_check(struct pm_early *e, uint64_t key, uint64_t addr,
		    uint64_t off, const void *src, size_t len);

/* Prints "early: N of M commits completed before persistence (...)". */
void pm_early_report(const struct pm_early *e, const char *what);

void pm_early_close(struct pm_early *e);

#endif /* PMEM_EARLY_H */
