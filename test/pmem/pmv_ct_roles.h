/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_ct_roles.h - pmv_commit_test's target, initiator session, oracle
 * checks, workload and bad-input tests: their state and the functions one
 * file calls in another (grouped by defining file).  Included by pmv_ct.h.
 */
#ifndef PMV_CT_ROLES_H
#define PMV_CT_ROLES_H

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
#if HAVE_WAIT_SETS
	struct fid_wait *wait_set;  /* WM_WAITSET: its CQs' wait set */
	struct fid_poll *poll_set;  /* WM_POLLSET: holds its receive CQ */
#endif
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
	int err, prov_errno;
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
void target_on_wberr(const struct wberr_req *req);

/* pmv_ct_target.c */
void target_resize(const struct resize_req *req,
			  struct status_rsp *rsp);
void report_problem(struct report *rep, const char *fmt, ...)
	PRINTF_LIKE(2, 3);
int target_main(void);

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
bool target_agent_thread_on(void);
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

/* pmv_ct_oracle.c */
uint64_t oracle_first_hole(uint64_t key, uint64_t addr, uint64_t len,
				  uint64_t from, uint64_t to);
extern struct commit_rec g_commit;
enum fi_pmem_method expected_method(uint32_t profile, bool known,
					   bool immed);
bool expected_send(enum fi_pmem_method m, bool fence, size_t len,
			  bool scoped);
void check_commit_durable(void);
void check_commits(void);
void check_counters(void);
void check_method(void);
void check_immed_timing(const struct report *rep);

/* pmv_ct_matrix.c */
void run_workload(void);

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
int rma_read_on(struct conn *c, enum region_id region, uint64_t off,
		void *dst, size_t len);
int plain_write_wait_on(struct conn *c, enum region_id region, uint64_t off,
			size_t len, uint64_t seed);
void resize_region(enum region_id region, uint64_t len);

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

/* pmv_ct_badinput.c */
void run_badinput(void);
noreturn void run_exit(void);

#endif /* PMV_CT_ROLES_H */
