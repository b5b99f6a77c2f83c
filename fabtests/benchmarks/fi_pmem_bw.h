/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* fi_pmem_bw: what its main file and its option parsing share. */
#ifndef FI_PMEM_BW_H
#define FI_PMEM_BW_H

#include <stdbool.h>
#include <stdint.h>

#include "../common/pmem_common.h"
#include "../common/pmem_opts.h"

#define DEFAULT_PROVIDER PM_PROVIDER
#define DEFAULT_PORT "9229"
#define DEFAULT_SIZES "4096,65536,1048576"
#define DEFAULT_BATCHES "1,16,mib"
#define DEFAULT_PMEM_MODES "write,commit,core_commit"
#define DEFAULT_CORE_MODES "write,core_commit"
#define DEFAULT_WINDOW 64
#define DEFAULT_BYTES (256UL << 20) /* per measurement, without -I */
#define MIN_WRITES 64
#define MAX_WRITES 32768
#define MAX_SIZE (64UL << 20)
#define MAX_WINDOW 1024
#define MAX_BATCHES 8
#define MAX_BATCH 65536
#define BATCH_MIB 0 /* "mib" in -b */
#define MAX_MODES 4
#define MAX_ROUNDS 100
#define MIN_REGION (16UL << 20)
#define MAX_REGION (1UL << 30)
#define MIB (1UL << 20)

struct mode;

struct options {
	struct pm_opts pm; /* -p -s -B -S -f -P --csv (pmem_opts.h) */
	enum fi_ep_type ep_type;
	long batches[MAX_BATCHES]; /* BATCH_MIB: one commit per MiB */
	int nbatches;
	const struct mode *modes[MAX_MODES];
	int nmodes;
	long window;
	long writes; /* 0: DEFAULT_BYTES worth */
	long warmup; /* -1: writes / 8 */
	long rounds;
	long limit_ms; /* per measurement, 0: none */
};

/* One measured mode (fi_pmem_bw.c's all_modes). */
struct mode {
	const char *name;
	bool pmem_only;
	bool batched;  /* one row per batch; else batch 0 or 1 */
	bool flush;    /* the batch ends with a pure flush */
	long fixed_batch;
};

/* The mode of that name, NULL if none. */
const struct mode *bw_find_mode(const char *name);

/* Prints the usage to stderr. */
void bw_usage(const char *prog);

/* Parses the command line into opts; false on a usage error. */
bool bw_parse_options(int argc, char **argv, struct options *opts);

#endif /* FI_PMEM_BW_H */
