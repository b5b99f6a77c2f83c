/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmem_common: what the pmemverbs fabtests (fi_pmem_lat, fi_pmem_bw,
 * fi_pmem_commit, fi_pmem_remotelog) share: status output, bounded waits,
 * fabric and connection setup over FI_EP_MSG or FI_EP_RDM, the target's file mapping and
 * its registration (FI_RMA_PMEM on pmemverbs), the exchange of the region,
 * durable commits with fi_writemsg, option parsing and latency statistics.
 *
 * Every wait is bounded (PM_OP_TIMEOUT_NS per operation, PM_CM_TIMEOUT_NS
 * to connect, PM_SESSION_TIMEOUT_NS for a target's session).  Functions
 * returning int give 0 or a negative fabric errno and have reported the
 * failure on stderr where it happened.
 */
#ifndef PMEM_COMMON_H
#define PMEM_COMMON_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_ext_pmem.h>

#include "pmem_wait.h"

#define PM_FI_VERSION FI_VERSION(1, 17)
#define PM_PROVIDER "pmemverbs"
#define PM_LISTEN_ADDR "0.0.0.0" /* the target listens on every interface */
#define PM_NO_PROFILE "n/a"      /* profile column off pmemverbs */
#define PM_NO_PROFILE_CODE UINT64_MAX

/* Exit status: as fabtests, a test that cannot run here exits -FI_ENODATA. */
#define PM_EXIT_PASS 0
#define PM_EXIT_FAIL 1
#define PM_EXIT_USAGE 2
#define PM_EXIT_SKIP FI_ENODATA

#define PM_MAX_SIZES 16
#define PM_LINE_SIZE 64      /* offsets and records are multiples of this */
#define PM_CTRL_MSG_MAX 64   /* largest control message */

#define PM_NS_PER_MS 1000000LL
#define PM_NS_PER_S 1000000000LL
#define PM_OP_TIMEOUT_NS (10 * PM_NS_PER_S)
#define PM_CM_TIMEOUT_NS (20 * PM_NS_PER_S)
#define PM_SESSION_TIMEOUT_NS (3600 * PM_NS_PER_S)
#define PM_POLL_INTERVAL_MS 200
#define PM_RETRY_INTERVAL_MS 100

/* Keys asked for when the provider does not choose them (no FI_MR_PROV_KEY). */
#define PM_LOCAL_MR_KEY 1
#define PM_REGION_MR_KEY 2

/* ------------------------------------------------------------- output */

/* Prefix of status lines ("[target]", "[initiator]"); set by main. */
extern const char *pm_role;
/* Read CQs by busy-polling (fi_cq_read) instead of fi_cq_sread. */
extern bool pm_busy_poll;
/* Ask a provider other than pmemverbs for FI_RMA_PMEM (endpoint and the
 * target's region): the core's own FI_COMMIT_COMPLETE on persistent memory. */
extern bool pm_core_pmem;
/* A target waits for "done" on a FI_RECV counter (fi_cntr_wait, or
 * fi_cntr_read with pm_busy_poll) instead of its receive CQ. */
extern bool pm_wait_on_cntr;
/* Reads of a CQ one every this many ms (0: as pm_busy_poll says): a target
 * that does not progress, served by pmemverbs's agent alone. */
extern int pm_read_gap_ms;

/* A status line on stderr (stdout carries only results). */
void pm_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* An error line on stderr. */
void pm_complain(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Reports a failed libfabric call (negative return) and passes it on. */
int pm_check(ssize_t ret, const char *what);

/* --------------------------------------------------------------- time */

int64_t pm_now_ns(void);
bool pm_past(int64_t deadline);
void pm_sleep_ms(int ms);
void pm_sleep_us(long us);

/* ------------------------------------------------------------ options */

/* Parses a decimal in [min, max]; false (and a message) if it is not one. */
bool pm_parse_long(const char *text, long min, long max, long *out);
/* Parses "SIZE[,SIZE...]", each in [min, max]; false if invalid. */
bool pm_parse_sizes(char *list, size_t min, size_t max, size_t *sizes,
		    int *nsizes);
/* Parses -e's argument: "msg" or "rdm". */
bool pm_parse_ep_type(const char *text, enum fi_ep_type *type);
bool pm_is_pmemverbs(const char *prov);
/*
 * Sets the endpoint type of the whole program (pm_ep_type).  For -e rdm
 * it first asks fi_getinfo whether prov offers FI_RMA_PMEM (or, off
 * pmemverbs without pm_core_pmem, FI_RMA) on FI_EP_RDM endpoints; if not,
 * it prints why and returns PM_EXIT_SKIP.  PM_EXIT_PASS otherwise.
 */
int pm_check_ep_type(const char *prov, enum fi_ep_type type);
/* FI_EP_MSG (the default) or FI_EP_RDM: how pm_open_fabric, pm_connect and
 * pm_run_target set up; set by pm_check_ep_type. */
extern enum fi_ep_type pm_ep_type;
/* "msg" or "rdm", for output. */
const char *pm_ep_type_name(void);

/* ------------------------------------------------------------- fabric */

/* Fabric, domain and EQ, the fi_info they came from and pmemverbs's ops. */
struct pm_fabric {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *eq;   /* connection events; bound to MSG endpoints only */
	struct fid_av *av;   /* FI_EP_RDM only: the peer's address */
	struct fi_pmem_ops_domain *pmem_ops; /* NULL unless pmemverbs */
};

/*
 * fi_getinfo for a pm_ep_type endpoint with FI_MSG | FI_RMA (and
 * FI_RMA_PMEM on pmemverbs) on server:port, or listening on port when
 * server is NULL; then opens the fabric, an EQ, the domain, on FI_EP_RDM
 * an AV and, on pmemverbs, its FI_PMEM_DOMAIN_OPS.
 */
int pm_open_fabric(const char *prov, const char *server, const char *port,
		   struct pm_fabric *res);
void pm_close_fabric(struct pm_fabric *res);
bool pm_has_mr_mode(const struct pm_fabric *res, int bit);
/* Closes a libfabric object if open; a failure is reported, not fatal. */
void pm_close_fid(struct fid *fid, const char *what);

/* --------------------------------------------------- bounded waiting */

/* Reports the error entry waiting on a CQ; returns its negative errno. */
int pm_report_cq_error(struct fid_cq *cq, const char *what);
/* Reports the error entry on an EQ unless it is quiet_err; returns it. */
int pm_report_eq_error(struct fid_eq *eq, const char *what, int quiet_err);
/*
 * Waits, blocking, for one completion on cq until the deadline; every
 * failure but -FI_ETIMEDOUT is reported.  CQs are FI_CQ_FORMAT_DATA.
 */
int pm_read_one_before(struct fid_cq *cq, int64_t deadline, const char *what,
		       struct fi_cq_data_entry *entry);
/* Waits for the completion of the one operation posted with ctx. */
int pm_wait_for_one(struct fid_cq *cq, void *ctx, int64_t deadline,
		    const char *what, struct fi_cq_data_entry *entry);
/* Waits up to timeout_ns for connection event want. */
int pm_wait_for_cm_event(struct fid_eq *eq, uint32_t want, int64_t timeout_ns,
			 const char *what, struct fi_eq_cm_entry *entry,
			 int quiet_err);

/* ---------------------------------------------------------- memory */

/* Registers buf; under FI_MR_ENDPOINT binds it to ep and enables it. */
int pm_register(const struct pm_fabric *res, struct fid_ep *ep, void *buf,
		size_t len, uint64_t access, uint64_t requested_key,
		uint64_t flags, struct fid_mr **mr);

/* ------------------------------------------------------ connection */

/* One connected endpoint, its CQs and its local memory. */
struct pm_conn {
	struct fid_ep *ep;
	fi_addr_t peer; /* the other end in the AV; FI_ADDR_UNSPEC on MSG */
	struct fid_cq *tx_cq;
	struct fid_cq *rx_cq; /* FI_CQ_FORMAT_DATA: FI_IMMED data too */
	struct fid_cntr *rx_cntr; /* FI_RECV counter (pm_wait_on_cntr) */
	struct fid_mr *local_mr; /* only under FI_MR_LOCAL */
	char *base;   /* local memory: control slots, then src, then dst */
	size_t len;
	char *ctrl_tx;
	char *ctrl_rx;
	char *src;    /* RMA source, rma_max bytes */
	char *dst;    /* RMA sink, rma_max bytes */
	size_t rma_max;
	struct fi_context2 ctrl_ctx;    /* control sends */
	struct fi_context2 ctrl_rx_ctx; /* control receives */
};

/* Descriptor to pass with local buffers: set only under FI_MR_LOCAL. */
void *pm_desc(const struct pm_conn *conn);
/*
 * Opens and enables an endpoint from info (the connreq's, or ours) with a
 * transmit CQ of tx_cq_size entries, and local memory with an RMA source
 * and sink of rma_max bytes each (0xa5 bytes).
 */
int pm_open_conn(const struct pm_fabric *res, struct fi_info *info,
		 size_t rma_max, size_t tx_cq_size, struct pm_conn *conn);
/* Closes the MR before the endpoint it may be bound to (FI_MR_ENDPOINT). */
void pm_close_conn(struct pm_conn *conn);
/* Posts the receive of the next control message (ctrl_rx_ctx). */
int pm_post_ctrl_recv(struct pm_conn *conn);
/* Sends a control message and waits for its completion. */
int pm_send_ctrl(struct pm_conn *conn, const void *data, size_t len,
		 const char *what);
/*
 * Waits until the deadline for the control message received on the recv
 * posted with pm_post_ctrl_recv, copies its len bytes (it must have that
 * size) to out and posts the next receive.
 */
int pm_recv_ctrl(struct pm_conn *conn, int64_t deadline, const char *what,
		 void *out, size_t len);

/* ---------------------------------------------------------- target */

struct pm_file {
	char path[PATH_MAX];
	int fd;
	char *map;
	size_t len;
	bool remove_at_exit;
};

#define PM_FILE_INIT { .fd = -1 }

/*
 * Opens path (created if missing), or a temporary file in $TMPDIR or /tmp
 * named after prefix when path is NULL; with fresh, empties it first (its
 * bytes then read 0); grows it to len, maps it MAP_SHARED, writes every page
 * once (keeping its bytes) and msyncs it, so that measurements pay neither
 * first-touch faults nor block allocation.
 */
int pm_map_file(const char *path, const char *prefix, size_t len, bool fresh,
		struct pm_file *file);
/* Unmaps and closes; removes a temporary file. */
void pm_unmap_file(struct pm_file *file);

/* Opens a passive endpoint on res->info and listens. */
int pm_listen(const struct pm_fabric *res, struct fid_pep **pep);

/* What a program's target does with one connected initiator. */
typedef int (*pm_serve_fn)(const void *opts, const struct pm_fabric *res,
			   struct pm_conn *conn, struct pm_file *file);

/*
 * The target's whole life: opens the fabric, listens, accepts one
 * initiator (a transmit CQ of tx_cq_size), serves it, closes everything.
 */
int pm_run_target(const char *prov, const char *port, size_t tx_cq_size,
		  pm_serve_fn serve, const void *opts);
/*
 * Takes the next connection request (waiting up to the session limit),
 * opens its endpoint with pm_open_conn, posts the first control receive
 * and accepts it.
 */
int pm_accept(const struct pm_fabric *res, size_t rma_max, size_t tx_cq_size,
	      struct pm_conn *conn);
/* Registers the mapping for remote access (FI_RMA_PMEM on pmemverbs). */
int pm_register_region(const struct pm_fabric *res, struct pm_conn *conn,
		       const struct pm_file *file, struct fid_mr **mr);
/* The region's profile code, or PM_NO_PROFILE_CODE off pmemverbs. */
uint64_t pm_region_profile(const struct pm_fabric *res, struct fid_mr *mr);
const char *pm_profile_name(uint64_t code);
/* The method pmemverbs takes for commits to key over ep; PM_NO_PROFILE
 * off pmemverbs. */
const char *pm_commit_method(const struct pm_fabric *res, struct fid_ep *ep,
			     uint64_t key);
/* Sends the initiator the region's base address (or 0), key, length and
 * profile. */
int pm_send_region(const struct pm_fabric *res, struct pm_conn *conn,
		   struct fid_mr *mr, const struct pm_file *file);
/* True once the initiator shut the connection down (EQ FI_SHUTDOWN). */
bool pm_initiator_gone(const struct pm_fabric *res);
/*
 * Waits (bounded by the session limit) for the control message "done" on
 * the posted control receive, blocking in fi_cq_sread (which also drives
 * the progress of a core such as tcp), watching for a vanished initiator.
 */
int pm_wait_for_done(const struct pm_fabric *res, struct pm_conn *conn);
/* Prints pmemverbs's durability counters of an endpoint. */
void pm_report_counters(const struct pm_fabric *res, struct fid_ep *ep);

/*
 * The target's part of a benchmark: registers the mapped file, sends the
 * region to the initiator, waits for its "done", reports the counters.
 */
int pm_serve_region(const struct pm_fabric *res, struct pm_conn *conn,
		    const struct pm_file *file);

#define PM_DONE_TEXT "done"

/* -------------------------------------------------------- initiator */

/* What the initiator knows of the target's region. */
struct pm_region {
	uint64_t addr; /* virtual address under FI_MR_VIRT_ADDR, else 0 */
	uint64_t key;
	uint64_t len;
	uint64_t profile_code;
	const char *profile;
};

/*
 * Connects to server:port, retrying for PM_CM_TIMEOUT_NS while the target
 * is not listening yet; the first control receive is posted.
 */
int pm_connect(const struct pm_fabric *res, const char *server,
	       const char *port, size_t rma_max, size_t tx_cq_size,
	       struct pm_conn *conn);
/* Receives the target's region (on the posted control receive); does not
 * post the next receive. */
int pm_receive_region(struct pm_conn *conn, struct pm_region *region);

/* ------------------------------------------------------------- RDM */

/*
 * The RDM target's counterpart of pm_accept: opens its endpoint (bound to
 * the AV, listening on the port of res->info's src_addr), posts the first
 * control receive, waits (up to the session limit) for the initiator's
 * hello carrying its fi_getname address, inserts it into the AV as
 * conn->peer and posts the next control receive.
 */
int pm_rdm_accept(const struct pm_fabric *res, size_t rma_max,
		  size_t tx_cq_size, struct pm_conn *conn);
/*
 * The RDM initiator's counterpart of pm_connect: opens its endpoint,
 * inserts the target's address (res->info->dest_addr) as conn->peer,
 * posts the first control receive and sends the hello with its own
 * address (retried while the target is not there yet, up to
 * PM_CM_TIMEOUT_NS).
 */
int pm_rdm_connect(const struct pm_fabric *res, size_t rma_max,
		   size_t tx_cq_size, struct pm_conn *conn);
/* Opens res->av (FI_AV_TABLE). */
int pm_rdm_open_av(struct pm_fabric *res);

/* ------------------------------------------------------------- RMA */

/*
 * fi_writemsg of len bytes from buf to addr under key with flags (and
 * msg.data = data); len 0 is a pure flush (iov_count 0, rma_iov {addr, 0,
 * key}).  Returns the provider's return as is.
 */
ssize_t pm_writemsg(struct pm_conn *conn, const void *buf, size_t len,
		    uint64_t addr, uint64_t key, uint64_t data,
		    uint64_t flags, void *ctx);

/* The operations the benchmarks time, on the target's region. */
enum pm_rma_op { PM_RMA_WRITE, PM_RMA_READ, PM_RMA_COMMIT, PM_RMA_FLUSH,
		 PM_RMA_DELIVERY, /* fi_writemsg(FI_DELIVERY_COMPLETE) */
		 /* the same with remote CQ data: a completion at the target */
		 PM_RMA_DELIVERY_DATA };

/* The remote CQ data of PM_RMA_DELIVERY_DATA (fits 4 bytes, names no
 * pmemverbs gate). */
#define PM_DELIVERY_DATA 0x5ca1ab1eu

/*
 * Posts one op of len bytes at offset in the region (from src, or into
 * dst for a read); a flush names the region's key with length 0.
 * Returns the provider's return as is.
 */
ssize_t pm_post_rma(struct pm_conn *conn, const struct pm_region *region,
		    enum pm_rma_op op, size_t len, uint64_t offset, void *ctx);

/* ----------------------------------------------------------- stats */

struct pm_stats {
	double p50_us, p99_us, max_us, mean_us;
};

/* Sorts n samples (ns) and computes nearest-rank percentiles in us. */
void pm_summarize(int64_t *samples, long n, struct pm_stats *s);

static inline uint64_t pm_round_up(uint64_t x, uint64_t align)
{
	return (x + align - 1) / align * align;
}

#endif /* PMEM_COMMON_H */
