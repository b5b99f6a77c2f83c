/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_threads.h - what the files of pmv_threads share: options, limits,
 * types, the globals they all read, and the functions one file calls in
 * another.  The program as a whole:
 */
#ifndef PMV_THREADS_H
#define PMV_THREADS_H

/*
 * pmv_threads - several threads committing through pmemverbs at once
 * (issue 11 item 7).  One program, two roles, over 127.0.0.1:
 *
 *   target     maps a file (the region between two guard pages of a
 *              pattern), registers the region with FI_RMA_PMEM on an
 *              FI_THREAD_SAFE domain, prints "REGION base key profile" and
 *              "READY", accepts -n connections on one shared CQ that -p
 *              threads read at once (each read serves the agent's requests
 *              inline), and once every connection has ended checks that
 *              its CQ stayed empty and the guards hold.
 *   initiator  an FI_THREAD_SAFE domain; -T threads commit
 *              (FI_COMMIT_COMPLETE) into slices of the region of their own:
 *                one-ep    every thread on one endpoint and one CQ
 *                multi-ep  each thread on its own endpoint and CQ
 *                mix       the threads on two endpoints sharing one CQ;
 *                          plain writes before commits, FI_FENCE commits
 *                          (small ones go by send on agent profiles) and
 *                          pure flushes
 *              A thread that reads a completion routes it by its context,
 *              which may be another thread's, and checks it at once (the
 *              oracle): every byte of the commit and of its thread's plain
 *              writes before it must be in the target's file (-F) and,
 *              where the agent persists (PAGE, DMP, or every profile with
 *              -A), covered by records the agent appended to the oracle log
 *              (-o, FI_PMEMVERBS_ORACLE) after the byte was posted.
 *
 * Each check prints "PASS name: detail" or "FAIL name: detail"; a commit
 * seen complete before its bytes were durable also prints "DETECTED ...".
 * Exit status: 0 pass, 1 fail, 2 usage, 3 a completion outran durability.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdnoreturn.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_ext_pmem.h>

#include "../common/pmv_test_time.h"
#include "../common/pmv_test_report.h"
#include "../common/pmv_test_hints.h"
#include "../common/pmv_test_region.h"

#include "target/pmv_oracle.h"

#define PMV_FI_VERSION FI_VERSION(1, 17)
#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))

enum exit_code { EXIT_PASS = 0, EXIT_FAIL = 1, EXIT_USAGE = 2, EXIT_EARLY = 3 };

/*
 * The region file: GUARD | region | GUARD.  Thread t owns the slice
 * [t * SLICE_LEN, (t + 1) * SLICE_LEN) of the region: SLOTS slots of
 * PIECES pieces.  A batch takes one slot: plain writes in its first
 * pieces, the commit in the last, so no two bytes of a batch overlap.
 */
#define GUARD_LEN 4096u
#define PIECE_LEN (32u << 10)
#define PIECES 4u
#define SLOT_LEN (PIECES * PIECE_LEN)
#define SLOTS 6u
#define SLICE_LEN (SLOTS * SLOT_LEN)
#define MAX_THREADS 16u
#define REGION_LEN (MAX_THREADS * SLICE_LEN)
#define FILE_LEN (GUARD_LEN + REGION_LEN + GUARD_LEN)
#define REGION_KEY 0x7468726561647300ull /* requested; the core may choose */
#define WINDOW 4u          /* batches in flight per thread */
#define SEND_MAX 48u       /* a fenced commit this small fits a request */
#define ORACLE_RECS ((size_t)1 << 18)
#define MAX_CONNS MAX_THREADS
#define MAX_POLLERS 8u
#define CORRUPT_AT 25u     /* -X corrupt: the commit whose check is wrong */

/* Bounds on waits; none is a verdict on speed. */
#define STEP_MS 30000          /* one batch, one connection, one post */
#define RUN_MS 240000          /* the initiator's threads, all together */
#define DRAIN_MS 5000          /* after a failure: operations in flight */
#define TARGET_LIFE_MS 400000  /* the target's whole run */

#define OP_CLASS_FLAGS                                                        \
	(FI_MSG | FI_RMA | FI_READ | FI_WRITE | FI_SEND | FI_RECV |          \
	 FI_REMOTE_READ | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA)
#define WRITE_FLAGS (FI_RMA | FI_WRITE)

/* ------------------------------------------------------------------ */
/* Reporting                                                          */
/* ------------------------------------------------------------------ */

enum mode { MODE_ONE_EP, MODE_MULTI_EP, MODE_MIX };
extern const char *const k_modes[];

struct thr_options {
	const char *role, *addr, *port, *file, *oracle, *gran;
	enum mode mode;
	unsigned threads, commits, conns, pollers;
	uint64_t base, key, seed;
	bool all_oracle, corrupt, faults;
	bool cq_context; /* the target's CQ without remote CQ data (-c) */
};
extern struct thr_options g_opt;

extern const char *g_role;
extern bool g_dying;

noreturn void die(const char *fmt, ...) PRINTF_LIKE(1, 2);

#include "../common/pmv_test_eq.h"

/* Closes a fabric object if it is open, and forgets it. */
#define CLOSE(obj)                                                           \
	do {                                                                 \
		if (obj)                                                     \
			fi_close(&(obj)->fid);                               \
		(obj) = NULL;                                                \
	} while (0)

/* Calls that must return 0; anything else ends the run (main thread). */
#define CHECK(call)                                                          \
	do {                                                                 \
		ssize_t rc_ = (call);                                        \
		if (rc_ != 0)                                                \
			die("%s: %s (%zd)", #call, fi_strerror((int)-rc_),   \
			    rc_);                                            \
	} while (0)

/*
 * Failures the threads find.  The first is kept for the verdict; a
 * completion that outran durability (early) is also printed at once as
 * DETECTED and makes the exit status 3.  Any failure stops the run.
 */
struct thr_failures {
	pthread_mutex_t lock;
	unsigned count, printed;
	char first[512];
	int early;  /* atomic */
	int stop;   /* atomic */
};

struct thr_net {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fi_pmem_ops_domain *pmem;
	struct fid_eq *eq;
};

/*
 * The target's nonce, in the first NONCE_LEN bytes of its file and in the
 * CM data of every accept: the initiator checks that the target it is
 * connected to is the one whose file it maps (not a stale process left on
 * the port, whose file would never change).
 */
#define NONCE_LEN sizeof(uint64_t)

/* A range of the region (offset from its start) and the oracle's length
 * just before it was posted. */
struct range {
	uint64_t off;
	uint32_t len;
	uint64_t mark;
};

enum op_kind { OP_WRITE = 1, OP_COMMIT };

enum op_state { ST_IDLE, ST_POSTED, ST_DONE };

struct batch;

struct op {
	struct fi_context2 ctx;  /* first: its address is the context */
	struct batch *batch;
	enum op_kind kind;
	int state;               /* enum op_state, atomic */
	unsigned ncomp;          /* completions read, atomic */
	uint64_t post_flags;     /* FI_FENCE */
	struct range r;          /* its data; len 0: a pure flush */
	int err;                 /* from a CQ error entry */
};

/* What a batch is: the mix mode draws one of each in turn. */
enum batch_kind { BK_COMMIT, BK_WRITES_COMMIT, BK_FENCED_SMALL,
		  BK_FENCED_LARGE, BK_FLUSH, BK_COUNT };

struct worker;

/* A batch: plain writes, then the commit that must make them durable. */
struct batch {
	struct worker *w;
	unsigned slot, nops, nposted;
	enum batch_kind kind;
	bool busy, posting;
	int64_t posted_at;
	unsigned checked, covered; /* ranges: set by the checking thread */
	struct op op[PIECES];      /* op[nops - 1]: the commit */
};

struct conn {
	struct fid_ep *ep;
	struct fid_cq *cq;
	bool connected;
};

struct worker {
	unsigned id;
	pthread_t thread;
	struct conn *conn;
	struct fid_cq *cq;        /* the CQ this thread reads */
	uint8_t *src;             /* its slice's bytes as it wrote them */
	struct fid_mr *src_mr;
	void *desc;
	uint64_t rng;
	struct batch b[SLOTS];
	unsigned inflight, next_slot, posted;
	int finished;             /* atomic */
	/* tallies (the owner's) */
	unsigned commits, writes, fenced, flushes, ranges, covered, eagain;
	unsigned failed;          /* -X faults: batches that ended in an error */
	unsigned commit_errors;   /* -X faults: commits completed in error */
};

/* pmv_threads_common.c */
extern struct thr_failures g_fail;
bool stopped(void);
void stop_all(void);
void note_failure(bool early, const char *fmt, ...) PRINTF_LIKE(2, 3);
uint64_t mix64(uint64_t x);
uint64_t rng_next(uint64_t *s);
uint64_t rnd(uint64_t *s, uint64_t bound);
uint8_t guard_byte(size_t off);
const char *profile_name(enum fi_pmem_profile p);
enum fi_pmem_profile profile_of_gran(const char *gran);
extern struct thr_net g_net;
void net_open(uint64_t flags);
void net_close(void);
struct fid_cq *open_cq(void);
struct fid_ep *open_ep(struct fi_info *info, struct fid_cq *cq);

/* pmv_threads_target.c */
void target_close(void);
int target_main(void);

/* pmv_threads_check.c */
extern struct worker g_w[MAX_THREADS];
extern struct conn g_conns[MAX_CONNS];
extern unsigned g_nconns;
extern struct fid_cq *g_cqs[MAX_CONNS];
extern unsigned g_ncqs;
extern const uint8_t *g_file;
extern const struct pmv_oracle_log *g_log;
extern bool g_need_oracle;
extern unsigned g_op_errors;
extern unsigned g_post_errors;
extern unsigned g_foreign;
extern _Thread_local const struct worker *t_self;
uint64_t slice_off(const struct worker *w);
uint64_t rma_addr(uint64_t off);
const char *op_str(const struct op *op, char *buf, size_t len);
void map_target_file(void);
void map_oracle(void);
uint64_t oracle_count(void);
bool reap(struct fid_cq *cq);

/* pmv_threads_worker.c */
extern pthread_barrier_t g_start;
extern bool g_running;
void *worker_main(void *arg);

/* pmv_threads_init.c */
void initiator_close(void);
int initiator_main(void);

#endif /* PMV_THREADS_H */
