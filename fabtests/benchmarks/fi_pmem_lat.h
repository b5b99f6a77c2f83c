/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* fi_pmem_lat: what its files (main, modes, options) share. */
#ifndef FI_PMEM_LAT_H
#define FI_PMEM_LAT_H

#include <stdbool.h>
#include <stdint.h>

#include "../common/pmem_common.h"
#include "../common/pmem_early.h"
#include "../common/pmem_opts.h"

#define DEFAULT_PROVIDER PM_PROVIDER
#define DEFAULT_PORT "9228"
#define DEFAULT_SIZES "64,4096,65536"
#define DEFAULT_MODES "read8,write,write_read,commit"
#define DEFAULT_ITERS 1000
#define DEFAULT_WARMUP 100
#define DEFAULT_BATCH 8

#define MAX_MODES 16
#define MAX_SIZE (256UL << 20)
#define MAX_ITERS 10000000L
#define MAX_BATCH 256
#define MAX_IDLE_US 1000000L  /* -i: at most 1 s before each iteration */
#define MAX_OPS_PER_SAMPLE (MAX_BATCH + 1)
#define PROBE_SIZE 8          /* the 8-byte read of read8 and write_read */
#define MIN_REGION (1UL << 20) /* room to rotate even for the largest size */

struct bench;

/* One measured mode: posts the operations of one sample. */
struct mode {
	const char *name;
	bool pmem_only;
	int (*post)(struct bench *b, size_t size, uint64_t index);
};

struct options {
	struct pm_opts pm; /* -p -s -B -S -f -P --csv (pmem_opts.h) */
	const struct mode *modes[MAX_MODES];
	int nmodes;
	long iters;
	long warmup;
	int batch;
	long idle_us; /* sleep before each iteration, 0: none */
	bool ini_wait;  /* -x: the initiator waits (pm_wait_mode) */
	bool target_wait; /* -w given (the target's) */
	enum fi_ep_type ep_type; /* -e: FI_EP_MSG (default) or FI_EP_RDM */
	const char *dirty_file;  /* -D: initiator checks the target's pages */
	const char *oracle_file; /* -O: initiator checks pmemverbs' oracle */
	const char *placed_file; /* -V: initiator checks the bytes placed */
};

/* The mode of that name (fi_pmem_lat_modes.c's table), NULL with a message. */
const struct mode *lat_find_mode(const char *name);

/* The initiator's state while it measures. */
struct bench {
	const struct options *opts;
	const struct pm_fabric *res;
	struct pm_conn *conn;
	struct pm_region region;
	struct fi_context2 ctx[MAX_OPS_PER_SAMPLE];
	int posted;      /* operations posted for the current sample */
	int completed;   /* of those, completed */
	int64_t deadline; /* of the current sample */
	struct pm_early early; /* -D, -O: commits early at completion */
};

/* Offset in the region of b's index-th operation of len bytes. */
uint64_t rotating_offset(const struct bench *b, size_t len, uint64_t index);

/* The commit mode's post function (-D/-O check its commits). */
int post_commit_write(struct bench *b, size_t size, uint64_t index);

/* Waits (bounded) for the current sample's operations to complete. */
int wait_for_sample(struct bench *b);

/* Prints the usage to stderr. */
void lat_usage(const char *prog);

/* Parses the command line into opts; false on a usage error. */
bool lat_parse_options(int argc, char **argv, struct options *opts);

#endif /* FI_PMEM_LAT_H */
