/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * fi_pmem_commit: what its files share (see fi_pmem_commit.c for the
 * program): the checks, the region's ranges, the messages, the initiator's
 * operations and the functions one file defines and another calls.
 */
#ifndef FI_PMEM_COMMIT_H
#define FI_PMEM_COMMIT_H

#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/pmem_common.h"

#define DEFAULT_PROVIDER PM_PROVIDER
#define DEFAULT_PORT "9230"
#define REGION_LEN (1UL << 20)
#define IMMED_COUNT 64
#define IMMED_WINDOW 16
#define IMMED_BASE 0x1eed0000ULL
#define MAX_OUTSTANDING 128
#define IMMED_GRACE_NS (2 * PM_NS_PER_S) /* late FI_IMMED entries */

#define SETUP_MAGIC 0x31304d43564d50ULL   /* "PMVCM01" */
#define DONE_MAGIC 0x454e4f44564d50ULL    /* "PMVDONE" */
#define VERDICT_MAGIC 0x54445256564d50ULL /* "PMVVRDT" */

enum check_id {
	CK_COMMIT,
	CK_FENCE,
	CK_IMMED,
	CK_FLUSH,
	CK_EINVAL,
	CK_IMMED_TARGET, /* the target's */
	CK_FILE,         /* the target's */
	NCHECKS,
};

/* Ranges of the region each check writes: count ranges of len bytes,
 * stride apart, from off. */
struct range_set {
	enum check_id check;
	uint64_t off, len;
	int count;
	uint64_t stride;
};

enum {
	RS_COMMIT8, RS_COMMIT64, RS_COMMIT4K, RS_COMMIT64K, RS_COMMIT_IOV,
	RS_FENCE_DATA, RS_FENCE_PTR, RS_IMMED, RS_FLUSH, NRANGE_SETS,
};

struct options {
	const char *prov;
	enum fi_ep_type ep_type;
	const char *server;
	const char *port;
	const char *file;
};

/* Initiator to target, little-endian. */
struct setup_msg {
	uint64_t magic;
	uint64_t region_len;
};

struct done_msg {
	uint64_t magic;
	uint64_t written;     /* bit per check whose ranges were written */
	uint64_t immed_count; /* FI_IMMED commits that completed */
	uint64_t failed;      /* bit per initiator check that failed */
};

/* Target to initiator. */
struct verdict_msg {
	uint64_t magic;
	uint64_t failed;     /* bit per target check that failed */
	uint64_t immed_seen; /* distinct FI_IMMED data values */
};

enum verdict { V_PASS, V_FAIL, V_SKIP };

/* ----------------------------------------------------------- initiator */

struct client {
	const struct options *opts;
	struct pm_fabric *res;
	struct pm_conn *conn;
	struct pm_region region;
	bool pmem;
	struct fi_context2 ctx[MAX_OUTSTANDING];
	int done[MAX_OUTSTANDING]; /* completions per context */
	int posted;
	int completed;
};

enum op { OP_WRITE, OP_MSG, OP_READ };

/* Defined in fi_pmem_commit.c: each check's name, each range set, and when
 * the check being printed started. */
extern const char *const check_names[NCHECKS];
extern const struct range_set range_sets[NRANGE_SETS];
extern int64_t check_clock;

/* Functions one file of the program defines and another calls. */
uint8_t pattern_byte(uint64_t off);
void fill_pattern(char *buf, uint64_t off, uint64_t len);
int64_t pattern_mismatch(const char *buf, uint64_t off, uint64_t len);
uint64_t range_off(int set, int i);
void print_verdict(enum check_id id, enum verdict v, const char *fmt,
		   ...) __attribute__((format(printf, 3, 4)));
void ops_reset(struct client *c);
int ops_wait(struct client *c, int max_outstanding, const char *what);
int ops_post(struct client *c, enum op op, uint64_t off, size_t len,
	     uint64_t data, uint64_t flags, const char *what);
int read_back(struct client *c, int set, char *detail, size_t dlen);
enum verdict check_commit(struct client *c, char *d, size_t dl);
enum verdict check_fence(struct client *c, char *d, size_t dl);
enum verdict check_immed(struct client *c, uint64_t *completed,
			 char *d, size_t dl);
enum verdict check_flush(struct client *c, char *d, size_t dl);
enum verdict check_einval(struct client *c, char *d, size_t dl);
int run_initiator(const struct options *opts);
int run_target(const struct options *opts);
void usage(const char *prog);
bool parse_options(int argc, char **argv, struct options *opts);

#endif /* FI_PMEM_COMMIT_H */
