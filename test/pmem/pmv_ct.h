/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_ct.h - what the files of pmv_commit_test share: constants, options,
 * the wire messages of the control channel, fabric objects, operations,
 * and the functions of pmv_ct_main.c, pmv_ct_fabric.c and pmv_ct_ops.c.
 * The roles' state is in pmv_ct_roles.h, the scenarios' in pmv_ct_sc.h
 * (both included at the end).  Functions are grouped by defining file.
 * pmv_ct_main.c says what the program does; README.md what each test proves.
 */
#ifndef PMV_CT_H
#define PMV_CT_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdnoreturn.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_ext_pmem.h>

#include "../common/pmv_test_time.h"
#define PMV_TEST_REPORT_SHARED /* one count over all the files */
#include "../common/pmv_test_report.h"
#include "../common/pmv_test_hints.h"

#include "target/pmv_oracle.h"

#define PMV_FI_VERSION FI_VERSION(1, 17)

enum exit_code { EXIT_PASS = 0, EXIT_FAIL = 1, EXIT_USAGE = 2, EXIT_UNCOVERED = 3 };

#define STEP_MS 10000          /* bound on every single wait */
#define IDLE_MS 60000          /* bound on a target's idle period */
#define TARGET_LIFE_MS 240000  /* bound on a target's whole run */
#define LINGER_MS 5000         /* target: wait for the initiator's shutdown */
#define DRAIN_MS 100           /* reading a CQ for stray entries */
#define ORACLE_RECS ((size_t)1 << 20) /* the oracle log's capacity */

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))

/* Completion flag bits that classify an operation; compared exactly. */
#define OP_CLASS_FLAGS                                                        \
	(FI_MSG | FI_RMA | FI_READ | FI_WRITE | FI_SEND | FI_RECV |          \
	 FI_REMOTE_READ | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA)
#define COMMIT_FLAGS (FI_RMA | FI_WRITE)
#define IMMED_FLAGS (FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA)

/* Region file layout: GUARD | region | GUARD | region | ... | GUARD. */
#define GUARD_SIZE 4096
#define BIG_REGION (8u << 20)
#define SMALL_REGION (64u << 10)
#define SLOT_SIZE (1280u << 10)   /* a batch's writes use separate slots */
#define NOISE_SLOT 5              /* slot of the write to the other key */
#define MAX_WRITE (1u << 20)
#define LOCAL_STRIDE (MAX_WRITE + 8192)
#define LOCAL_SLOTS 6

#define MAX_IMMED 2048
#define CTL_SIZE 65536
#define CTL_RECVS 4
#define CTL_MAGIC 0x50564354u
#define MAX_CONNS 160          /* scenario many-eps: 128 on one CQ */
#define MAX_CQS (2 * MAX_CONNS)
#define MAX_OPS 128

/* What the initiator asks of the target in its connection's CM data. */
enum conn_kind {
	KIND_MAIN = 'M',       /* the test's connection: control and commits */
	KIND_PLAIN_PEER = 'P', /* target endpoint opened without FI_RMA_PMEM */
	KIND_SHUT = 'S',       /* target shuts it down on request */
	KIND_EXTRA = 'X',      /* a further pmem connection for one case */
	KIND_MANY = 'N',       /* scenario many-eps: target CQs shared */
	KIND_CNTR = 'C',       /* scenario counters: the target binds an
				* FI_REMOTE_WRITE counter to its endpoint */
	KIND_WAIT = '0',       /* scenario wait-modes: '0' + enum wait_mode,
				* the way the target waits on it */
	KIND_OVERTAKE = 'O',   /* scenario overtake (pmv_ct_sc_overtake.c) */
	KIND_LATE = 'L',       /* scenario late-serve: CQs only its handler
				* reads (pmv_ct_sc_late.c) */
};

/* Scenario wait-modes: how a passive target waits (target_wait_once). */
enum wait_mode { WM_NONE, WM_UNSPEC, WM_FD, WM_POLLFD, WM_EPOLL, WM_CNTR,
		 WM_EQ, WM_NOREAD, WM_WAITSET, WM_POLLSET, WM_CNTR_EPOLL,
		 WM_IMMED_EPOLL, WM_COUNT };

/* Wait sets and poll sets: libfabric 1.x (2.0 deprecated them). */
#define HAVE_WAIT_SETS (FI_MAJOR_VERSION < 2)

/* The role's name in die()'s messages (pmv_ct_main.c). */
extern const char *g_role;
#include "../common/pmv_test_check.h"

/* ------------------------------------------------------------------ */
/* Closing what was opened                                            */
/* ------------------------------------------------------------------ */

/*
 * Every fabric object the process opens, in order: closing them in
 * reverse (endpoints before CQs and MRs, those before the domain...) is a
 * valid teardown, at the end or from exit() on a failure path.
 */
#define MAX_FIDS 1024

/* ------------------------------------------------------------------ */
/* Options                                                            */
/* ------------------------------------------------------------------ */

enum role { ROLE_TARGET, ROLE_INITIATOR };
enum test_mode { TEST_ORACLE, TEST_CONTENTS, TEST_FAULT, TEST_BADINPUT,
		 TEST_EXIT, TEST_MRREG, TEST_SCENARIO };

struct opts {
	enum role role;
	enum test_mode test;
	const char *addr, *port;
	const char *file;   /* target: the region file */
	const char *gran;   /* initiator: PMEM2_FORCE_GRANULARITY of the target,
			     * or "auto" (none forced: take what it reports) */
	const char *expect; /* initiator, -g auto: the profiles allowed */
	const char *oracle; /* initiator: the oracle log to check */
	const char *target_file; /* initiator: the target's region file, to
				  * check flush commits by what it holds */
	uint64_t seed;
	unsigned reps;      /* repetitions of the matrix for small sizes */
	const char *only;   /* badinput: run only this case; scenario: the
			     * case to run */
};

/* A range written into a region: what the target must find there. */
struct range_desc {
	uint32_t region, pad;
	uint64_t off, len, seed;
};

struct range_list {
	struct range_desc *v;
	size_t n, cap;
};

/* ------------------------------------------------------------------ */
/* Regions (both roles know the table)                                */
/* ------------------------------------------------------------------ */

enum region_id { REG_A, REG_B, REG_RO, REG_VOL, REG_RANGE, REG_OFFSET,
		 REG_COUNT };

struct region_spec {
	const char *name;
	size_t len;
	uint64_t access;
	uint64_t flags;      /* fi_mr_reg flags: FI_RMA_PMEM or 0 */
	uint64_t offset;     /* fi_mr_reg's offset argument */
};

/* A key no region is registered with. */
#define UNKNOWN_KEY 0xbad0bad0ull

/* What the target tells the initiator about one region. */
struct region_desc {
	uint64_t key, rma_base, len;
	uint32_t profile, id;
	int32_t reg_status, pad; /* fi_mr_reg's return */
};

/* ------------------------------------------------------------------ */
/* Control messages                                                   */
/* ------------------------------------------------------------------ */

enum msg_type {
	MSG_REGIONS = 1, /* T->I: struct region_desc[REG_COUNT] */
	MSG_RANGES,      /* I->T: struct range_desc[] placed in the regions */
	MSG_FINISH,      /* I->T: struct finish_req; the target answers REPORT */
	MSG_REPORT,      /* T->I: struct report */
	MSG_SHUT,        /* I->T: shut the KIND_SHUT connection down */
	MSG_RESIZE,      /* I->T: struct resize_req; answered by RESIZED */
	MSG_RESIZED,     /* T->I: struct status_rsp */
	MSG_IDLE,        /* I->T: struct idle_req; answered by IDLE_DONE */
	MSG_IDLE_DONE,   /* T->I: struct status_rsp */
	MSG_FLOOD_CHECK, /* I->T: struct flood_req; answered by FLOOD_RESULT */
	MSG_FLOOD_RESULT, /* T->I: struct flood_rsp */
	MSG_CNTR_WATCH,  /* I->T: struct cntr_watch_req; answered by
			  * CNTR_READY, then (if watching) CNTR_RESULT */
	MSG_CNTR_READY,  /* T->I: struct cntr_rsp */
	MSG_CNTR_RESULT, /* T->I: struct cntr_rsp */
	MSG_WAIT,        /* I->T: struct idle_req; the target waits on the
			  * KIND_WAIT connection until the flag, then
			  * answers WAIT_DONE */
	MSG_WAIT_DONE,   /* T->I: struct status_rsp */
	MSG_OVERTAKE,    /* I->T: struct overtake_req; answered by RESIZED */
	MSG_LATE,        /* I->T: struct late_req; answered by LATE_ARMED
			  * (phase arm) */
	MSG_LATE_ARMED,  /* T->I: no payload */
	MSG_LATE_DONE,   /* T->I: struct late_rsp */
	MSG_IDLE_BEGUN,  /* T->I: no payload; the target, told to pause
			  * (idle_req.pause_ms), calls nothing from now on */
	MSG_WBERR,       /* I->T: struct wberr_req; answered by WBERR_DONE */
	MSG_WBERR_DONE,  /* T->I: struct wberr_rsp */
};

struct msg_hdr {
	uint32_t magic, type, len, pad; /* len: payload bytes */
};

struct finish_req {
	uint32_t check_contents, pad;
};

/* Re-registration of a region under its key; gran (enum gran_code) also
 * changes the granularity libpmem2 reports, so the profile changes. */
struct resize_req {
	uint32_t region, gran;
	uint64_t len;
	uint32_t onto;     /* 0: the region's own memory; else 1 + the region
			    * whose memory it is registered on (same key) */
	uint32_t pad;
};

enum gran_code { GRAN_KEEP, GRAN_PAGE, GRAN_CACHE_LINE, GRAN_BYTE,
		 GRAN_COUNT };

struct status_rsp {
	int32_t status;
	uint32_t profile;  /* RESIZED: the region's profile now */
	uint64_t key;      /* RESIZED: the region's key now */
	int64_t at_us;     /* IDLE_DONE after a pause: when the target
			    * called libfabric again (now_us) */
	char detail[120];
};

/*
 * Case writeback-error: what the target does to its region file, which
 * lies on an ext4 file system of its own over a loop device whose image
 * is on a small tmpfs (run_pmem_tests.sh, PMV_WBERR_FILL_DIR names it).
 */
enum wberr_phase {
	WB_FAIL = 1, /* fill the tmpfs, then msync [off, off + len) of the
		      * application's mapping: its writeback must fail, and
		      * the application's msync takes the error */
	WB_RECOVER,  /* free the tmpfs, then (keep 0) drop the range's
		      * clean pages (MADV_PAGEOUT until mincore says they
		      * left memory): the lost write is gone from memory
		      * too; keep 1: the pages stay, as the failed
		      * writeback left them */
	WB_DISK,     /* read [off, off + 64) of the file past the page cache
		      * (O_DIRECT) into wberr_rsp.disk */
};

struct wberr_req {
	uint32_t phase, region;
	uint64_t off, len;   /* in the region */
	uint32_t keep, pad;  /* WB_RECOVER */
};

struct wberr_rsp {
	int32_t status;      /* 0, or what went wrong (detail) */
	uint32_t pad;
	uint8_t disk[64];    /* WB_DISK */
	char detail[120];
};

/* Scenario immed-flood: FI_IMMED data base .. base + count - 1 was sent. */
struct flood_req {
	uint64_t base, count;
};

/* What the target read from its receive CQ, against the flood sent. */
struct flood_rsp {
	uint64_t entries, in_range, duplicates, out_of_range, missing;
	uint64_t bad_flags, first_missing, first_duplicate;
};

/* Scenario counters: the range of the commit the target watches. */
struct cntr_watch_req {
	uint32_t region, pad;
	uint64_t off, len;
};

/*
 * The target's FI_REMOTE_WRITE counter: fi_ep_bind's code, and if it was
 * bound, what it counted while the watched commit became durable.
 */
struct cntr_rsp {
	int32_t bind_ret, watched;
	uint64_t early;     /* samples where it had counted, not yet durable */
	uint64_t value;     /* its value once the range was persisted */
	uint32_t covered, pad;
	char detail[160];
};

/*
 * The target stops calling libfabric: it sets the marker word (in the
 * volatile region) and spins on the flag word until it holds flag_value.
 */
struct idle_req {
	uint64_t marker_off, flag_off, flag_value;
	uint64_t pause_ms; /* MSG_IDLE: 0, wait for the flag; else call
			    * nothing for this long (no marker, no flag) */
};

/* One FI_IMMED completion, and how long the oracle log was when the
 * target read it (0 without an oracle). */
struct immed_seen {
	uint64_t data, log_count;
};

struct report {
	uint32_t guards_ok, contents_checked, contents_ok, nimmed;
	uint32_t immed_bad_flags, unexpected, immed_log_counted, pad;
	uint64_t first_bad_flags;
	char detail[256];         /* the first problem found, for a person */
	struct immed_seen immed[]; /* in arrival order (MAX_IMMED) */
};

/* ------------------------------------------------------------------ */
/* Fabric objects                                                     */
/* ------------------------------------------------------------------ */

struct net {
	struct fi_info *info;            /* fi_getinfo result */
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fi_pmem_ops_domain *pmem; /* fi_open_ops(FI_PMEM_DOMAIN_OPS) */
	uint64_t mr_mode;
	size_t inject_size;
	size_t rma_iov_limit;            /* remote segments per RMA operation */
	uint64_t cq_data_mask;
	uint64_t next_local_key;
};

struct conn {
	char kind;
	struct fid_ep *ep;
	struct fid_eq *eq;
	struct fid_cq *txcq, *rxcq;
	bool connected, shut_down;
};

/* ------------------------------------------------------------------ */
/* Event queues                                                       */
/* ------------------------------------------------------------------ */

struct cm_event {
	uint32_t event;
	struct fid *fid;
	struct fi_info *info;
	uint8_t data[256];
	size_t datalen;
};

/* ------------------------------------------------------------------ */
/* Operations and completions                                         */
/* ------------------------------------------------------------------ */

enum op_kind { OP_FREE, OP_WRITE, OP_COMMIT, OP_READ, OP_SEND, OP_RECV };

struct op {
	struct fi_context2 fictx; /* first: its address is the op's context */
	enum op_kind kind;
	bool busy;
	bool autofree;            /* freed once complete (plain writes) */
	struct conn *conn;
	int err, prov_errno;      /* from a CQ error entry */
	uint64_t flags;           /* completion flags */
	size_t len;               /* OP_RECV: bytes received */
	char errtext[200];        /* fi_cq_strerror of an error */
	void (*on_done)(struct op *op);
	uint8_t *buf;             /* OP_RECV: its buffer */
};

/* A scenario's operations (see Scenarios): their own contexts. */
struct sop;

/* Posts with call until it stops saying -FI_EAGAIN (bounded). */
#define POST(ret, call)                                                      \
	do {                                                                 \
		int64_t dl_ = deadline_in(STEP_MS);                          \
		while (((ret) = (call)) == -FI_EAGAIN && before(dl_))        \
			if (!progress())                                     \
				pause_briefly();                             \
	} while (0)

/* ------------------------------------------------------------------ */
/* Control channel (messages on the main connection)                  */
/* ------------------------------------------------------------------ */

struct ctl {
	struct conn *c;
	uint8_t *sbuf, *rbuf;
	struct fid_mr *smr, *rmr;
	void *sdesc, *rdesc;
};

/* ---- functions and state of the files above ---- */

/* pmv_ct_main.c */
const char *errname(long code);
bool readable(const char *text);
void expect_u64(const char *name, uint64_t got, uint64_t want,
		       const char *what);
void track_fid(struct fid *fid);
bool close_fid(struct fid *fid);
void close_all_fids(void);
extern const char *const k_test_names[];
extern struct opts g_opt;
noreturn void usage(void);
int main(int argc, char **argv);

/* pmv_ct_fabric.c */
uint64_t mix64(uint64_t x);
uint8_t gen_byte(uint64_t seed, uint64_t off);
void gen_fill(uint8_t *dst, size_t len, uint64_t seed, uint64_t off);
uint8_t guard_byte(size_t off);
extern uint64_t g_rng;
uint64_t rnd(uint64_t bound);
void *grow(void *v, size_t n, size_t *cap, size_t elem);
void range_add(struct range_list *l, const struct range_desc *r);
extern const struct region_spec k_regions[REG_COUNT];
uint64_t region_key(enum region_id id);
extern const char *const k_gran_names[GRAN_COUNT];
extern struct net g_net;
extern struct fid_cq *g_cqs[MAX_CQS];
extern size_t g_ncqs;
struct fi_info *make_hints(void);
struct fi_info *query_info(uint64_t flags);
void open_fabric(struct fi_info *info);
void open_domain(struct fi_info *info);
struct fid_eq *open_eq_sized(size_t size);
struct fid_eq *open_eq(void);
struct fid_cq *open_cq_sized(size_t size, bool polled);
struct fid_cq *open_cq_obj(size_t size, enum fi_wait_obj obj, bool polled);
#if HAVE_WAIT_SETS
struct fid_wait *open_wait_set(void);
struct fid_cq *open_cq_on_set(struct fid_wait *set, bool polled);
struct fid_poll *open_poll_set(struct fid_cq *cq);
#endif
struct fid_cq *open_cq(void);
void info_without_pmem(struct fi_info *info);
void conn_open_on(struct conn *c, struct fi_info *info,
			 struct fid_eq *eq, struct fid_cq *txcq,
			 struct fid_cq *rxcq);
void conn_open(struct conn *c, struct fi_info *info,
		      struct fid_eq *shared_eq);
void *local_desc(void *buf, size_t len, struct fid_mr **mr);
bool eq_poll(struct fid_eq *eq, struct cm_event *ev);
void watch_conn(struct conn *c, bool on);
bool poll_watched_eqs(void);

/* pmv_ct_ops.c */
extern struct op g_ops[MAX_OPS];
extern unsigned g_unexpected;
extern char g_unexpected_what[256];
extern void (*g_on_immed)(const struct fi_cq_data_entry *e);
extern size_t g_rxq_head, g_rxq_count;
struct op *op_alloc(enum op_kind kind, struct conn *c);
void op_free(struct op *op);
extern const char *g_case;
void note_unexpected(const char *fmt, ...) PRINTF_LIKE(1, 2);
bool progress_cq(struct fid_cq *cq);
bool dispatch_read(struct fid_cq *cq, ssize_t n,
		   const struct fi_cq_data_entry *e);
bool progress(void);
void wait_flag(const bool *flag, const char *what);
bool op_wait(struct op *op);
void op_wait_or_die(struct op *op, const char *what);
void drain_cqs(void);
extern struct ctl g_ctl;
void ctl_init(struct conn *c);
void ctl_send(uint32_t type, const void *payload, size_t len);
struct op *ctl_peek(void);
const struct msg_hdr *msg_hdr(const struct op *op);
void ctl_release(void);
void ctl_release_last(void);
const void *ctl_expect(uint32_t type, size_t min_len, size_t *len);

#include "pmv_ct_roles.h"
#include "pmv_ct_sc.h"

#endif /* PMV_CT_H */
