/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: layout of the persistence oracle's log, shared between the
 * provider's agent (writer, when FI_PMEMVERBS_ORACLE names the file) and the
 * tests (readers).  Test instrumentation only.
 *
 * The agent appends one record per extent right after persisting it; a
 * record is complete once `valid` is 1 (store-release).  A test that sees a
 * commit complete checks that records already present cover every byte of
 * the commit's scope: a completion that outran persistence cannot pass.
 */
#ifndef PMV_ORACLE_H
#define PMV_ORACLE_H

#include <stddef.h>
#include <stdint.h>

struct pmv_oracle_rec {
	uint64_t key;
	uint64_t addr;  /* RMA address, as the initiator names it */
	uint64_t len;
	uint64_t valid;
};

struct pmv_oracle_log {
	uint64_t magic;
	uint64_t count;  /* records claimed so far (may exceed capacity) */
	struct pmv_oracle_rec rec[];
};

#define PMV_ORACLE_MAGIC 0x4f52434c45504d56ull

static inline size_t pmv_oracle_capacity(size_t file_size)
{
	return (file_size - sizeof(struct pmv_oracle_log)) /
	       sizeof(struct pmv_oracle_rec);
}

#endif /* PMV_ORACLE_H */
