/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_itest.h - what the files of pmv_itest share: options, the test
 * context, limits, types and the functions one file calls in another.
 * The program as a whole:
 */
#ifndef PMV_ITEST_H
#define PMV_ITEST_H

/*
 * pmv_itest - two-process libfabric integration tests.
 *
 * Uses only the public libfabric API, so the same binary validates the core
 * providers (tcp for FI_EP_MSG, tcp;ofi_rxm for FI_EP_RDM) and any provider
 * layered on them (pmemverbs), which must behave exactly like that core.
 *
 * Usage: pmv_itest -p PROVIDER|-n -e msg|rdm -t TEST -r server|client
 *                  [-a ADDR] [-P PORT]
 * Exit status: 0 pass, 77 skip (a capability the test needs is genuinely not
 * advertised, or no CQ format it can read is accepted), anything else fail
 * with a one-line reason on stderr.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdnoreturn.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "../common/pmv_test_time.h"

#define PMV_FI_VERSION FI_VERSION(1, 17)
#define EXIT_FAIL 1
#define EXIT_USAGE 2
#define EXIT_SKIP 77

#define STEP_TIMEOUT_MS 10000 /* bound on every single wait */
#define SREAD_TIMEOUT_MS 5000 /* per fi_cq_sread / fi_eq_sread call */
#define IDLE_TIMEOUT_MS 500   /* blocking read on an empty queue */

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))

#define CTRL_SIZE 512   /* one control message slot */
#define CM_DATA_MAX 256 /* CM private data we can hold */
#define MAX_MRS 8
#define BIG_MSG 65536

/* Completion flag bits that classify an operation; compared exactly. */
#define OP_CLASS_FLAGS                                                       \
	(FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_SEND | FI_RECV |       \
	 FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE |             \
	 FI_REMOTE_CQ_DATA)

/* Calls that must return 0 (int or ssize_t); anything else fails the test. */
#define CHECK(call)                                                          \
	do {                                                                 \
		ssize_t rc_ = (call);                                        \
		if (rc_ != 0)                                                \
			die("%s failed: %s (%zd)", #call,                    \
			    fi_strerror((int)-rc_), rc_);                    \
	} while (0)

enum role { ROLE_SERVER, ROLE_CLIENT };

struct opts {
	const char *prov; /* NULL: leave prov_name unset (FI_PROVIDER selects) */
	enum fi_ep_type ep_type;
	const char *test;
	enum role role;
	const char *addr;
	const char *port;
};

struct mreg {
	uint8_t *buf;
	size_t len;
	struct fid_mr *mr;
	void *desc; /* NULL unless FI_MR_LOCAL is in force */
};

enum cntr_slot { CNTR_SEND, CNTR_RECV, CNTR_WRITE, CNTR_READ, CNTR_COUNT };

struct cm_data {
	uint8_t bytes[CM_DATA_MAX];
	size_t len;
};

struct ctx {
	const struct opts *o;
	struct fi_info *info;    /* fi_getinfo result the fabric comes from */
	struct fi_info *ep_info; /* info the active endpoint was created from */
	struct fid_fabric *fabric;
	struct fid_eq *eq;
	struct fid_pep *pep;
	struct fid_domain *domain;
	struct fid_cq *txcq;
	struct fid_cq *rxcq;
	struct fid_cntr *cntr[CNTR_COUNT];
	struct fid_av *av;
	struct fid_ep *ep;
	fi_addr_t peer;
	enum fi_cq_format cq_format; /* the format both CQs are opened in */
	bool use_wait;  /* wait objects + blocking reads (waitobj test) */
	bool use_cntrs; /* bind counters (cntr test) */
	uint64_t posted[CNTR_COUNT]; /* counted operations posted so far */
	struct mreg mrs[MAX_MRS];
	size_t n_mrs;
	uint64_t next_key;
	struct mreg *ctrl;
	struct cm_data cm_out; /* sent with fi_connect / fi_accept */
	struct cm_data cm_in;  /* received with FI_CONNREQ / FI_CONNECTED */
};

/* A logical message kept as two pieces: [0, split) at offset 0 of the
 * buffer and [split, len) at offset BIG_MSG, so the iovs are not adjacent. */
struct split {
	struct iovec iov[2];
	void *desc[2];
};

enum { CHECK_LEN = 1, CHECK_TAG = 2, CHECK_DATA = 4 };

/* One completion we wait for. */
struct expect {
	const char *what;
	void *ctx;      /* op_context to match; NULL: a remote write event */
	uint64_t flags;    /* OP_CLASS_FLAGS bits that must be set */
	uint64_t optional; /* bits fi_cq(3) allows but does not require */
	unsigned checks; /* CHECK_* fields below that must match */
	size_t len;
	uint64_t tag;
	uint64_t data;
	bool seen;
};

/* Retries a post returning -FI_EAGAIN (driving progress) up to the step
 * deadline; any other error is fatal. */
#define POST_RETRY(c, what, call)                                            \
	do {                                                                 \
		int64_t dl_ = deadline_in(STEP_TIMEOUT_MS);                  \
		ssize_t rc_;                                                 \
		while ((rc_ = (call)) == -FI_EAGAIN) {                       \
			drive_progress(c);                                   \
			if (!ms_left(dl_))                                   \
				die("%s: still -FI_EAGAIN after %d ms",      \
				    what, STEP_TIMEOUT_MS);                  \
		}                                                            \
		if (rc_)                                                     \
			die("%s: %s (%zd)", what, fi_strerror((int)-rc_),    \
			    rc_);                                            \
	} while (0)

/* Room for a CM entry plus its private data. */
union cm_event {
	struct fi_eq_cm_entry entry;
	uint8_t raw[sizeof(struct fi_eq_cm_entry) + CM_DATA_MAX];
};

struct eq_error {
	struct fi_eq_err_entry e;
	uint8_t data[CM_DATA_MAX];
};

#define CLOSE(obj) close_fid((obj) ? &(obj)->fid : NULL, #obj)

/* Where the peer lets us read/write: base (virtual address or 0) + key. */
struct remote {
	uint64_t base;
	uint64_t key;
	uint64_t len;
};

enum ctrl_kind {
	CTRL_ADDR = 1, /* RDM client -> server: fi_getname address */
	CTRL_GO,       /* "receives are posted, go ahead" */
	CTRL_RMA_INFO, /* target region address/key/length */
	CTRL_DONE,     /* initiator finished its operations */
	CTRL_RESULT,   /* target's verdict on its memory */
	CTRL_FIN,
	CTRL_FIN_ACK,
};

struct ctrl_msg {
	uint32_t kind;
	uint32_t ok;
	uint64_t addr;
	uint64_t key;
	uint64_t len;
	uint64_t name_len;
	uint8_t name[128];
	char reason[200];
};

enum send_kind { SEND_PLAIN, SEND_IOV, SEND_INJECT, SEND_DATA };

struct msg_step {
	enum send_kind kind;
	size_t len;
};

#define MAX_STEPS 16
#define STEP_DATA_BASE UINT64_C(0x1122334455667788)

#define TAG_SLOT 256
#define TAG_DECOY UINT64_C(0x7777)

struct tagged_msg {
	uint64_t send_tag;
	uint64_t recv_tag;
	uint64_t ignore;
	size_t len;
	uint32_t seed;
};

#define RMA_CHUNK 4096
#define RMA_CQ_DATA UINT64_C(0x0DA7A0000000BEEF)

enum rma_region {
	RGN_WRITE,
	RGN_WRITEV,
	RGN_WRITEMSG,
	RGN_READ,
	RGN_INJECT,
	RGN_WRITEDATA,
	RGN_COUNT
};

enum { AT_SUM, AT_FETCH, AT_CSWAP, AT_COUNT };

#define AT_SUM_START 100
#define AT_SUM_ROUNDS 4 /* adds 1 + 2 + 3 + 4 */
#define AT_FETCH_START 1000
#define AT_FETCH_ADD 7
#define AT_CMP_START 0xAAAA
#define AT_SWAP 0xBBBB
#define AT_SWAP_REFUSED 0xCCCC

#define CM_CLIENT_LEN 40
#define CM_SERVER_LEN 24
#define CM_REJECT_LEN 16

enum { CM_SEED_CLIENT = 71, CM_SEED_SERVER = 72, CM_SEED_REJECT = 73 };

#define CNTR_OPS 8
#define CNTR_SLOT 256

enum { CNTR_SEED_SEND = 80, CNTR_SEED_WRITE = 90, CNTR_SEED_READ = 100 };

struct test_def {
	const char *name;
	uint64_t caps;
	uint64_t msg_order; /* ordering the test's verification relies on */
	enum fi_cq_format cq_format; /* least detailed one its checks can read */
	bool msg_only;
	bool own_connection; /* run functions set up (or fail) the connection */
	void (*setup)(struct ctx *c); /* after fi_getinfo, before connecting */
	void (*server)(struct ctx *c);
	void (*client)(struct ctx *c);
};

/* pmv_itest_util.c */
extern const char *g_role;
noreturn void die(const char *fmt, ...) PRINTF_LIKE(1, 2);
noreturn void skip(const char *fmt, ...) PRINTF_LIKE(1, 2);
const char *tostr(char *buf, size_t len, const void *val,
		  enum fi_type type);
int ms_left(int64_t deadline);
void poll_pause(void);
noreturn void usage(void);
void parse_opts(int argc, char **argv, struct opts *o);
extern const uint64_t k_cntr_flags[CNTR_COUNT];
extern const char *const k_cntr_names[CNTR_COUNT];
bool is_msg(const struct ctx *c);
bool is_server(const struct ctx *c);
size_t min_size(size_t a, size_t b);
size_t capped(const struct ctx *c, size_t len);
uint64_t cq_data_mask(const struct ctx *c);
void fill_pattern(uint8_t *p, size_t len, uint32_t seed, size_t first);
bool pattern_mismatch(const uint8_t *p, size_t len, uint32_t seed,
		      size_t first, char *why, size_t whylen);
void verify_pattern(const char *what, const uint8_t *p, size_t len,
		    uint32_t seed, size_t first);
uint64_t load_u64(const uint8_t *p);
void store_u64(uint8_t *p, uint64_t v);
struct split make_split(const struct mreg *m, size_t len, size_t split);
void fill_split(const struct split *s, uint32_t seed);
void verify_split(const char *what, const struct split *s,
		  uint32_t seed);

/* pmv_itest_info.c */
struct fi_info *make_hints(const char *prov, enum fi_ep_type type,
			   uint64_t caps, uint64_t msg_order);
const char *ep_type_name(enum fi_ep_type type);
struct fi_info *resolve_info(const struct opts *o, uint64_t caps,
			     uint64_t msg_order);
void describe_info(const struct fi_info *info);
void announce_ready(void);
struct expect expect_op(const char *what, void *ctx, uint64_t flags);
struct expect expect_recv(const char *what, void *ctx, uint64_t flags,
			  size_t len);
struct expect expect_remote_write(const char *what, uint64_t data);
void await_all(const struct ctx *c, struct fid_cq *cq,
	       struct expect *ex, size_t n);
void await_one(const struct ctx *c, struct fid_cq *cq, struct expect x);
void expect_cq_empty(struct fid_cq *cq, const char *name);
void cancel_and_expect(const struct ctx *c, void *ctx, const char *what);
void drive_progress(const struct ctx *c);

/* pmv_itest_res.c */
size_t await_cm_event(const struct ctx *c, uint32_t want, fid_t fid,
		      union cm_event *ev, const char *what);
void await_eq_error(const struct ctx *c, int want_err,
		    struct eq_error *err, const char *what);
void store_cm_data(struct cm_data *dst, const union cm_event *ev,
		   size_t len);
const void *cm_out_ptr(const struct ctx *c);
size_t cm_data_size(const struct ctx *c);
void cap_cm_out(struct ctx *c);
void close_fid(struct fid *fid, const char *name);
void open_fabric(struct ctx *c);
void settle_cq_format(struct ctx *c);
void open_domain_res(struct ctx *c, struct fi_info *info);
void open_endpoint(struct ctx *c);
struct mreg *mreg_alloc(struct ctx *c, size_t len);
void teardown(struct ctx *c);
void check_remote_range(const struct remote *r, size_t off, size_t len);
void post_send(struct ctx *c, struct mreg *m, size_t off, size_t len,
	       void *ctx);
void post_recv(struct ctx *c, struct mreg *m, size_t off, size_t len,
	       void *ctx);
void post_write(struct ctx *c, struct mreg *m, size_t off, size_t len,
		const struct remote *r, size_t roff, void *ctx);
void post_read(struct ctx *c, struct mreg *m, size_t off, size_t len,
	       const struct remote *r, size_t roff, void *ctx);

/* pmv_itest_conn.c */
void ctrl_send_kind(struct ctx *c, enum ctrl_kind kind);
void ctrl_post_recv(struct ctx *c, void *ctx);
struct expect expect_ctrl(enum ctrl_kind kind, void *ctx);
void ctrl_take(const struct ctx *c, enum ctrl_kind kind,
	       struct ctrl_msg *out);
void ctrl_recv(struct ctx *c, enum ctrl_kind kind, struct ctrl_msg *out);
void report_result(struct ctx *c, const char *failure);
void finish_ops(struct ctx *c, uint64_t len);
void send_remote(struct ctx *c, const struct mreg *t);
struct remote recv_remote(struct ctx *c);
void finish(struct ctx *c);
void msg_listen(struct ctx *c);
struct fi_info *msg_await_connreq(struct ctx *c);
void msg_start_connect(struct ctx *c);
void establish(struct ctx *c);

/* pmv_itest_msg.c */
void require_iov2(const struct ctx *c);
void sendrecv_exchange(struct ctx *c);
void require_cq_data(struct ctx *c);
void sendrecv_run(struct ctx *c);
void tagged_server(struct ctx *c);
void tagged_client(struct ctx *c);

/* pmv_itest_rma.c */
void rma_server(struct ctx *c);
void rma_client(struct ctx *c);
void atomic_server(struct ctx *c);
void atomic_client(struct ctx *c);

/* pmv_itest_cm.c */
void cmdata_setup(struct ctx *c);
void cmdata_run(struct ctx *c);
void shutdown_run(struct ctx *c);
void reject_server(struct ctx *c);
void reject_client(struct ctx *c);
void badaddr_client(struct ctx *c);
noreturn void no_server_side(struct ctx *c);
void waitobj_setup(struct ctx *c);
void waitobj_run(struct ctx *c);
void cntr_setup(struct ctx *c);
void cntr_server(struct ctx *c);
void cntr_client(struct ctx *c);
void cqerr_run(struct ctx *c);

#endif /* PMV_ITEST_H */
