/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_ct.h - what the files of pmv_commit_test share: constants, the wire
 * messages of the control channel, the state of each role, and the
 * functions one file calls in another (grouped by the file defining them).
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
		 WM_EQ, WM_NOREAD, WM_COUNT };

/* Calls that must return 0; anything else ends the run. */
#define CHECK(call)                                                          \
	do {                                                                 \
		ssize_t rc_ = (call);                                        \
		if (rc_ != 0)                                                \
			die("%s: %s (%zd)", #call, fi_strerror((int)-rc_),   \
			    rc_);                                            \
	} while (0)

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

/* ================================================================== */
/* Target                                                             */
/* ================================================================== */

struct region {
	size_t file_off;   /* where the region starts in the file */
	size_t len;        /* registered length (REG_RANGE may shrink) */
	uint8_t *addr;
	struct fid_mr *mr;
	uint64_t key, rma_base;
	enum fi_pmem_profile profile;
	int reg_status;
};

struct target {
	int fd;
	bool chardev;      /* the region file is a device (device-DAX) */
	uint8_t *map;
	size_t size;       /* mapped: the layout, rounded up to the alignment */
	struct region reg[REG_COUNT];
	struct fid_pep *pep;
	struct fid_eq *eq;
	struct conn conns[MAX_CONNS];
	size_t nconns;
	struct conn *main;
	bool regions_sent, finished, done;
	int64_t linger_deadline;
	struct range_list ranges;
	struct immed_seen immed[MAX_IMMED];
	uint32_t nimmed, immed_bad_flags;
	uint64_t first_bad_flags;
	struct pmv_oracle_log *log; /* the oracle, to time FI_IMMED entries */
	uint64_t *immed_all;        /* every FI_IMMED datum, in arrival order */
	size_t nimmed_all, cap_immed_all;
	struct fid_cq *many_tx, *many_rx; /* shared by KIND_MANY endpoints */
	struct fid_cntr *rw_cntr;   /* KIND_CNTR: FI_REMOTE_WRITE counter */
	int rw_bind_ret;            /* fi_ep_bind's code for it */
	bool rw_tried;
	struct conn *wait_conn;     /* KIND_WAIT: the connection waited on */
	enum wait_mode wait_mode;   /* and how */
	struct fid_cntr *wait_cntr; /* WM_CNTR: its FI_RECV counter */
};
struct overtake_req;
struct late_req;

/* ================================================================== */
/* Initiator: session                                                 */
/* ================================================================== */

/* A range written to a key and not yet covered by a completed commit. */
struct pend {
	uint64_t addr, len; /* RMA address as the initiator names it */
	uint64_t mark;      /* oracle records before it was posted */
};

struct pend_list {
	struct pend *v;
	size_t n, cap;
};

/* A range an FI_IMMED commit covered: its data must be durable before the
 * target sees the completion. */
struct immed_scope {
	size_t index;
	enum region_id region;
	struct pend p;
};

struct session {
	struct conn main;
	struct region_desc reg[REG_COUNT];
	enum fi_pmem_profile want_profile;
	uint8_t *src;             /* source buffer, LOCAL_SLOTS slots */
	struct fid_mr *src_mr;
	void *src_desc;
	struct pend_list pending[REG_COUNT];
	struct range_list placed; /* every range the target must hold */
	uint64_t immed[MAX_IMMED];
	size_t nimmed;
	uint64_t writes, immed_seq;
	/* ranges each FI_IMMED commit made durable, by FI_IMMED index */
	struct immed_scope *immed_scopes;
	size_t n_immed_scopes, cap_immed_scopes;
	/* results */
	unsigned commits, bad_commit_flags, ranges_checked, fences_checked;
	unsigned flush_commits, ranges_visible, method_errors;
	char method_detail[256];
	unsigned fences_counted, fence_request_errors, sends_counted;
	uint64_t first_bad_flags;
	char fence_detail[256];
};

/* What is being committed, for failure messages. */
struct commit_rec {
	enum region_id region;
	size_t npre;         /* pending ranges of the key before this commit */
	size_t nown;         /* ranges the commit writes itself */
	bool fence, immed;
	size_t immed_index;  /* its place among the FI_IMMED commits */
	uint64_t requests_before; /* requests_sent before it was posted */
	uint64_t flush_before;    /* flush_ops before it was posted */
	uint64_t sends_before;    /* sends before it was posted */
	size_t len;               /* bytes of its own data (0: pure flush) */
	enum fi_pmem_method announced; /* method() before it was posted */
	bool profile_known;       /* peer_profile() known before it was posted */
	unsigned index;
	char what[96];
};

/* How a plain write is posted; the test rotates through all of them. */
enum method { M_WRITE, M_WRITEV, M_INJECT, M_WRITEMSG, M_COUNT };

/* One planned RMA write: one or two remote segments, data back to back. */
struct wr {
	enum region_id region;
	unsigned nseg;
	uint64_t off[2];
	size_t len[2];
	uint8_t *src;
	uint64_t seed;
};

/* The iovs of an fi_msg_rma for w, segment i from source i. */
struct msg_parts {
	struct iovec iov[2];
	void *desc[2];
	struct fi_rma_iov rma[2];
};

/* ================================================================== */
/* Initiator: bad input                                               */
/* ================================================================== */

/* The outcome of one fi_writemsg: its return, then its completion. */
struct outcome {
	ssize_t ret;
	bool completed;
	int err;
	uint64_t flags;
	char text[200];
};

/* A commit of len bytes from the source buffer to region at off. */
struct cmsg {
	struct iovec iov[8];
	void *desc[8];
	struct fi_rma_iov rma[8];
	struct fi_msg_rma msg;
};

/* ================================================================== */
/* Scenarios (-t scenario -c CASE)                                    */
/* ================================================================== */

/*
 * Ways an application could see a commit complete before it is durable,
 * or lose a completion (README.md, Scenarios).  A scenario posts its
 * operations as struct sop, whose address is the context, and checks every
 * completion the moment it is read: a commit's bytes must be in the
 * target's file (-F) and, where the agent persists (sop.oracle), covered
 * by oracle records appended after the commit was posted.
 */

enum sop_kind { SOP_COMMIT = 1, SOP_READ, SOP_WRITE /* plain, placed */,
	SOP_DELIVERY, /* fi_writemsg(FI_DELIVERY_COMPLETE) */
	SOP_DEFAULT   /* fi_write: the endpoint's default op_flags */ };

struct sop {
	struct fi_context2 fictx; /* first: its address is the context */
	enum sop_kind kind;
	unsigned owner;           /* the scenario's name for its endpoint */
	unsigned round;           /* reopen: the round that posted it */
	unsigned slot;            /* the scenario's bookkeeping */
	unsigned ncomp;           /* completions read for it */
	unsigned bad;             /* BAD_* */
	bool posted, oracle, late;
	int err;
	uint64_t flags;
	enum region_id region;
	uint64_t off, mark;       /* mark: oracle records before the post */
	size_t len;
	uint8_t *data;            /* commit: its source; read: destination */
	uint64_t hole;            /* first byte found missing */
	char errtext[96];
};

struct sc_state {
	struct sop *ops;
	size_t nops, cap;
	size_t nposted, ndone;    /* posted, and completed at least once */
	uint8_t *buf;             /* sources and read destinations */
	size_t buf_len, buf_used;
	void *desc;
	struct fid_mr *mr;
	unsigned eagain;          /* posts refused with -FI_EAGAIN, retried */
	unsigned round;           /* reopen: the round running */
	void (*on_done)(struct sop *s);
	const char *no_immed;     /* check: the target raised no FI_IMMED */
};

/* What the operations a filter picks showed, and the first of each kind. */
struct sc_sum {
	unsigned n, posted, lost, ok, errors, dups, bad_flags, not_posted;
	unsigned not_visible, not_covered, covered, late;
	const struct sop *first_bad, *first_err, *first_lost;
};

/* I->T: the initiator's buffer, and what to do (phase). */
struct overtake_req {
	uint64_t addr, key, len;
	uint32_t nwrites;
	uint32_t phase;  /* OT_MOVE: write back, then pmem-a's key as PAGE;
			  * OT_BACK: wait for the writes, then MHP again */
};
#define LS_LEN 4096            /* the late commits */

/*
 * I->T.  LS_SERVE: read the late connection's CQs until the next control
 * message.  LS_ARM: answer LATE_ARMED, read them until pmem-a holds data
 * at off, register pmem-a's key on pmem-b's memory (PAGE), read them
 * again (serving the request), register the key back, answer LATE_DONE.
 */
struct late_req {
	uint32_t phase, len;
	uint64_t off;
	uint8_t data[LS_LEN];
};

/* ---- functions and state shared between the files ---- */
/* pmv_ct_main.c */
extern const char *g_role;
noreturn void die(const char *fmt, ...) PRINTF_LIKE(1, 2);
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

/* pmv_ct_badinput.c */
void run_badinput(void);
noreturn void run_exit(void);

/* pmv_ct_bi_args.c */
void case_immed_without_commit(const char *name);
void case_unknown_flag_bits(const char *name);
void case_rma_iov_count_zero(const char *name);
void case_rma_iov_null(const char *name);
void case_rma_iov_two_keys(const char *name);
void case_iov_count_over_limit(const char *name);
void case_rma_iov_count_over_limit(const char *name);
void case_length_mismatch(const char *name);
void case_no_iov_remote_len(const char *name);
void case_desc_other_domain(const char *name);
void case_inject_too_large(const char *name);
void case_mr_reg_unknown_flag(const char *name);
void case_mr_regv_pmem_two_iovs(const char *name);
void case_unknown_key(const char *name);
void case_no_remote_write(const char *name);
void case_send_range_past_end(const char *name);
void case_send_range_straddling_end(const char *name);
void case_range_past_end(const char *name);
void case_range_straddling_end(const char *name);
void case_range_wraps(const char *name);
void case_mr_offset_nonzero(const char *name);

/* pmv_ct_bi_commit.c */
void case_commit_two_segments(const char *name);
void case_volatile_commit(const char *name);
void case_flush_nothing_written(const char *name);
void case_commit_after_errors(const char *name);
void case_persist_fails(const char *name);
void case_truncated_region(const char *name);
void case_peer_profile(const char *name);
void case_peer_profile_kept(const char *name);
void case_target_idle(const char *name);

/* pmv_ct_bi_order.c */
void case_fence_keeps_write_order(const char *name);
void case_send_keeps_write_order(const char *name);
void case_send_read_sees_commit(const char *name);
void case_inject_commit_completes(const char *name);
void case_inject_commit_no_desc(const char *name);
void case_atomicity_chunk(const char *name);
void case_method_agent(const char *name);
void case_method_after_commit(const char *name);
void case_peer_profile_before_commit(const char *name);
void case_plain_endpoint_flags(const char *name);
void case_never_connected(const char *name);
void case_peer_without_pmem(const char *name);
void case_after_peer_shutdown(const char *name);
void case_ep_counters(const char *name);
void case_fence_after_many_failures(const char *name);
void case_send_then_overlapping_commit(const char *name);

/* pmv_ct_bi_util.c */
struct op *post_commit(struct conn *c, struct fi_msg_rma *msg,
			      uint64_t flags, ssize_t *ret);
struct outcome commit_outcome(struct op *op);
struct outcome try_commit_then(struct conn *c, struct fi_msg_rma *msg,
				      uint64_t flags, void (*after_post)(void));
struct outcome try_commit(struct conn *c, struct fi_msg_rma *msg,
				 uint64_t flags);
void scribble_source(void);
void expect_ret(const char *name, ssize_t got, int want);
void expect_refused(const char *name, const struct outcome *o,
			   int want);
void expect_cq_error(const char *name, const struct outcome *o,
			    int want);
void expect_success(const char *name, const struct outcome *o);
struct fi_msg_rma *cmsg_make(struct cmsg *m, enum region_id region,
				    uint64_t off, size_t len);
struct fi_msg_rma *cmsg_flush(struct cmsg *m, enum region_id region,
				     uint64_t key);
void note_placed(enum region_id region, uint64_t off, size_t len,
			uint64_t seed);
void place(enum region_id region, uint64_t off, size_t len,
		  uint64_t seed);
int rma_read(enum region_id region, uint64_t off, void *dst,
		    size_t len);
int plain_write_wait(enum region_id region, uint64_t off, size_t len,
			    uint64_t seed);
void resize_region(enum region_id region, uint64_t len);

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

/* pmv_ct_initiator.c */
extern struct session g_s;
struct fi_pmem_ep_counters main_counters(void);
extern const uint8_t *g_target_map;
extern uint8_t *g_shadow[REG_COUNT];
void target_file_map(const char *path);
extern struct pmv_oracle_log *g_log;
extern size_t g_log_cap;
void oracle_map(const char *path);
uint64_t oracle_count(void);
const char *profile_name(uint32_t p);
void expect_profile(const char *name, uint32_t got, uint32_t want,
			   const char *when);
bool gran_auto(void);
uint64_t rma_addr(enum region_id id, uint64_t off);
const char *check_name(const char *check);
bool join_request_on(void);
bool pushes_on(void);
void conn_connect(struct conn *c, char kind);
void initiator_open_conn_flags(struct conn *c, bool pmem,
				      uint64_t op_flags);
void initiator_open_conn(struct conn *c, bool pmem);
void initiator_close_conn(struct conn *c);
void initiator_setup(void);
void check_profiles(void);
struct report *initiator_finish(bool check_contents);
void check_report_file(const struct report *rep);
void check_report_immed(const struct report *rep);
void initiator_close(void);

/* pmv_ct_matrix.c */
void run_workload(void);

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

/* pmv_ct_oracle.c */
uint64_t oracle_first_hole(uint64_t key, uint64_t addr, uint64_t len,
				  uint64_t from, uint64_t to);
extern struct commit_rec g_commit;
enum fi_pmem_method expected_method(uint32_t profile, bool known,
					   bool immed);
bool expected_send(enum fi_pmem_method m, bool fence, size_t len,
			  bool scoped);
void check_commit_durable(void);

/* pmv_ct_sc.c */
extern struct sc_state g_sc;
struct sop *sop_of(void *context);
void sc_setup(size_t nops, size_t buf_len);
uint8_t *sc_bytes(size_t len);
struct sop *sop_new(enum sop_kind kind, unsigned owner,
			   enum region_id region, uint64_t off, size_t len,
			   uint8_t *data);
const char *sop_str(const struct sop *s);
bool sop_covered(const struct sop *s, uint64_t *hole);
void sop_complete(struct sop *s, uint64_t flags, int err,
			 const char *text);
ssize_t sop_post(struct fid_ep *ep, struct sop *s, uint64_t flags,
			uint64_t data);
void sop_post_retry(struct fid_ep *ep, struct sop *s, uint64_t flags,
			   uint64_t data, struct fid_cq *cq);
size_t sc_wait(size_t from, struct fid_cq *cq, int ms);
void sc_drain(struct fid_cq *cq);
void sc_conn_open(struct conn *c, struct fid_cq *tx, struct fid_cq *rx);
bool agent_profile(uint32_t profile);
struct sc_sum sc_sum(bool (*pick)(const struct sop *s));
const char *sc_problem(const struct sc_sum *m);
void sc_verdict_once(const char *check, const struct sc_sum *m,
			    bool errors_ok);
void sc_verdict_durable(const char *check, const struct sc_sum *m);
void sc_verdict_strays(const char *check);

/* pmv_ct_sc_counters.c */
void sc_counters(void);
void target_on_cntr_watch(const struct cntr_watch_req *req);

/* pmv_ct_sc_delivery.c */
void sc_delivery(void);

/* pmv_ct_sc_late.c */
void target_open_late(struct conn *c, struct fi_info *info);
void target_on_late(const struct late_req *req);
void sc_late_serve(void);

/* pmv_ct_sc_many.c */
void sleep_ms(int ms);
bool pick_all(const struct sop *s);
void sc_many(unsigned n, unsigned per);
void sc_immed_flood(void);
void target_on_flood_check(const struct flood_req *req);

/* pmv_ct_sc_overtake.c */
void target_on_overtake(const struct overtake_req *req);
ssize_t rg_run(struct conn *c, struct sop *s, uint64_t flags);
void sc_overtake(void);

/* pmv_ct_sc_plain.c */
void sc_no_pmem_caps(void);

/* pmv_ct_sc_reopen.c */
void sc_reopen(void);

/* pmv_ct_sc_rereg.c */
void sc_rereg(void);
void sc_move(void);

/* pmv_ct_sc_wait.c */
void target_open_wait(struct conn *c, struct fi_info *info,
			     enum wait_mode mode);
void target_on_wait(const struct idle_req *req);
void sc_wait_modes(void);

/* pmv_ct_target.c */
void target_resize(const struct resize_req *req,
			  struct status_rsp *rsp);
void report_problem(struct report *rep, const char *fmt, ...)
	PRINTF_LIKE(2, 3);
int target_main(void);

/* pmv_ct_target_file.c */
extern struct target g_t;
void oracle_create(const char *path);
size_t region_file_off(int id);
bool in_guard(size_t off);
uint8_t *map_file(int fd, size_t size, bool writable);
size_t chardev_alignment(const struct stat *st);
void target_create_file(void);
int target_register_at(enum region_id id, uint8_t *addr);
int target_register(enum region_id id);
void target_register_all(void);
void target_send_regions(void);

#endif /* PMV_CT_H */
