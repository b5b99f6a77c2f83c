/*
 * fi_pmem_lat: latency of durable RMA writes (FI_COMMIT_COMPLETE) to a
 * remote file mapping, next to the plain RMA operations that bound it.
 *
 *   target:    fi_pmem_lat [-p PROV] [-B PORT] [-S SIZES] [-f FILE]
 *   initiator: fi_pmem_lat [-p PROV] -s SERVER_ADDR [-B PORT] [-S SIZES]
 *                          [-I ITERS] [-W WARMUP] [-m MODES] [-b BATCH]
 *                          [--csv]
 *
 * The target maps a file (MAP_SHARED; a temporary file unless -f is given)
 * large enough for the largest size twice, registers it for remote access
 * (with FI_RMA_PMEM on pmemverbs, whose agent thread then serves commits
 * without the application polling), sends its address, key, length and
 * persistence profile to the initiator and waits until the initiator says
 * "done".  The initiator measures, per mode and size, one operation at a
 * time (each waits for its completions before the next starts):
 *
 *   write       fi_write of SIZE bytes (no durability)
 *   read        fi_read of SIZE bytes
 *   read8       fi_read of 8 bytes: the floor of a one-round-trip commit
 *   write_read  fi_write of SIZE, then an 8-byte fi_read (the naive recipe)
 *   commit      fi_writemsg(FI_COMMIT_COMPLETE) of SIZE bytes
 *   batch       BATCH fi_writes of SIZE, then one pure-flush commit
 *               (iov_count 0, rma_iov {addr, 0, key}); pmemverbs only
 *
 * and prints count, p50, p99, max and mean in microseconds (nearest-rank
 * percentiles of the sorted samples; warmup excluded), as a table or, with
 * --csv, as rows "provider,profile,mode,size,iters,p50_us,p99_us,max_us,
 * mean_us".  Offsets rotate through the region in 64-byte-aligned steps so
 * consecutive operations touch different lines.  On the target,
 * PMEM2_FORCE_GRANULARITY=page|cache_line|byte selects the pmemverbs
 * profile (PAGE, DMP, MHP) for an ordinary file.
 *
 * Every wait is bounded: 10 s per measured operation, 20 s to connect, one
 * hour for the target's whole session.  Exit status: 0 on success, 1 on a
 * failure, 2 on a usage error.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
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

#define BENCH_FI_VERSION FI_VERSION(1, 17)
#define PMEM_PROVIDER "pmemverbs"
#define DEFAULT_PROVIDER PMEM_PROVIDER
#define DEFAULT_PORT "9228"
#define DEFAULT_SIZES "64,4096,65536"
#define DEFAULT_MODES "read8,write,write_read,commit"
#define DEFAULT_ITERS 1000
#define DEFAULT_WARMUP 100
#define DEFAULT_BATCH 8
#define LISTEN_ADDR "0.0.0.0" /* the target listens on every interface */
#define NO_PROFILE "n/a"

#define MAX_SIZES 16
#define MAX_MODES 16
#define MAX_SIZE (256UL << 20)
#define MAX_ITERS 10000000L
#define MAX_BATCH 256
#define MAX_OPS_PER_SAMPLE (MAX_BATCH + 1)
#define PROBE_SIZE 8          /* the 8-byte read of read8 and write_read */
#define LINE_SIZE 64          /* offsets are multiples of this */
#define MIN_REGION (1UL << 20) /* room to rotate even for the largest size */
#define CTRL_MSG_MAX 64

#define NS_PER_MS 1000000LL
#define NS_PER_S 1000000000LL
#define OP_TIMEOUT_NS (10 * NS_PER_S)
#define CM_TIMEOUT_NS (20 * NS_PER_S)
#define SESSION_TIMEOUT_NS (3600 * NS_PER_S)
#define POLL_INTERVAL_MS 200
#define RETRY_INTERVAL_MS 100

/* Keys asked for when the provider does not choose them (no FI_MR_PROV_KEY). */
#define LOCAL_MR_KEY 1
#define REGION_MR_KEY 2
#define NO_PROFILE_CODE UINT64_MAX

#define DONE_TEXT "done"

static const char *role = "[fi_pmem_lat]";

struct options {
	const char *prov;
	const char *server; /* NULL: this process is the target */
	const char *port;
	size_t sizes[MAX_SIZES];
	int nsizes;
	const struct mode *modes[MAX_MODES];
	int nmodes;
	long iters;
	long warmup;
	int batch;
	const char *file;
	bool csv;
};

/* Fabric, domain and EQ, the fi_info they came from and pmemverbs's ops. */
struct fabric_res {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *eq;
	struct fi_pmem_ops_domain *pmem_ops; /* NULL unless pmemverbs */
};

/* Local memory: control messages, the RMA source and the RMA sink. */
struct local_buf {
	char *base;
	size_t len;
	char *ctrl_tx;
	char *ctrl_rx;
	char *src;
	char *dst;
};

/* One connected endpoint, its CQs and its local memory. */
struct connection {
	struct fid_ep *ep;
	struct fid_cq *tx_cq;
	struct fid_cq *rx_cq;
	struct fid_mr *local_mr; /* only under FI_MR_LOCAL */
	struct local_buf buf;
	struct fi_context2 ctrl_ctx;
};

/* The target's region as sent on the wire, little-endian. */
struct region_msg {
	uint64_t addr; /* virtual address under FI_MR_VIRT_ADDR, else 0 */
	uint64_t key;
	uint64_t len;
	uint64_t profile; /* enum fi_pmem_profile, or NO_PROFILE_CODE */
};

/* What the initiator knows of the target's region. */
struct remote_region {
	uint64_t addr;
	uint64_t key;
	uint64_t len;
	const char *profile;
};

struct mapped_file {
	char path[PATH_MAX];
	int fd;
	char *map;
	size_t len;
	bool remove_at_exit;
};

/* The initiator's state while it measures. */
struct bench {
	const struct options *opts;
	struct connection *conn;
	struct remote_region region;
	struct fi_context2 ctx[MAX_OPS_PER_SAMPLE];
	int posted;      /* operations posted for the current sample */
	int completed;   /* of those, completed */
	int64_t deadline; /* of the current sample */
};

/* One measured mode: posts the operations of one sample. */
struct mode {
	const char *name;
	bool pmem_only;
	int (*post)(struct bench *b, size_t size, uint64_t index);
};

struct stats {
	double p50_us, p99_us, max_us, mean_us;
};

/* ---------------------------------------------------------------- output */

/* Prints a status line on stderr (stdout carries only results). */
static void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "%s ", role);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
}

static void complain(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fflush(stdout);
	fprintf(stderr, "%s error: ", role);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
}

/* Reports a failed libfabric call (negative return) and passes it on. */
static int check(ssize_t ret, const char *what)
{
	if (ret < 0)
		complain("%s: %s", what, fi_strerror((int) -ret));
	return (int) (ret < 0 ? ret : 0);
}

/* ------------------------------------------------------------------ time */

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

static bool past(int64_t deadline)
{
	return now_ns() >= deadline;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long) (ms % 1000) * NS_PER_MS };

	nanosleep(&ts, NULL);
}

/* ------------------------------------------------------ fabric, domain */

static bool is_pmemverbs(const struct options *opts)
{
	return !strcmp(opts->prov, PMEM_PROVIDER);
}

static bool has_mr_mode(const struct fabric_res *res, int bit)
{
	return (res->info->domain_attr->mr_mode & bit) != 0;
}

/* MSG endpoint hints; FI_RMA_PMEM only for pmemverbs. */
static struct fi_info *bench_hints(const struct options *opts)
{
	struct fi_info *hints = fi_allocinfo();

	if (!hints)
		return NULL;
	hints->caps = FI_MSG | FI_RMA | (is_pmemverbs(opts) ? FI_RMA_PMEM : 0);
	hints->mode = FI_CONTEXT | FI_CONTEXT2;
	hints->ep_attr->type = FI_EP_MSG;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				      FI_MR_ALLOCATED | FI_MR_PROV_KEY |
				      FI_MR_ENDPOINT;
	hints->fabric_attr->prov_name = strdup(opts->prov);
	if (!hints->fabric_attr->prov_name) {
		fi_freeinfo(hints);
		return NULL;
	}
	return hints;
}

/* fi_getinfo: the listening address on the target, the server's else. */
static int find_provider(const struct options *opts, struct fi_info **info)
{
	const char *node = opts->server ? opts->server : LISTEN_ADDR;
	uint64_t flags = opts->server ? 0 : FI_SOURCE;
	struct fi_info *hints = bench_hints(opts);
	int ret;

	if (!hints)
		return check(-FI_ENOMEM, "allocating fi_info hints");
	ret = fi_getinfo(BENCH_FI_VERSION, node, opts->port, flags, hints,
			 info);
	fi_freeinfo(hints);
	if (ret)
		complain("fi_getinfo found no %s FI_EP_MSG endpoint with RMA "
			 "for %s port %s: %s (for pmemverbs, does "
			 "FI_PROVIDER_PATH hold libpmemverbs-fi.so?)",
			 opts->prov, node, opts->port, fi_strerror(-ret));
	return ret;
}

static int open_fabric_res(const struct options *opts, struct fabric_res *res)
{
	struct fi_eq_attr eq_attr = { .size = 16, .wait_obj = FI_WAIT_UNSPEC };
	int ret = find_provider(opts, &res->info);

	if (!ret)
		ret = check(fi_fabric(res->info->fabric_attr, &res->fabric,
				      NULL), "fi_fabric");
	if (!ret)
		ret = check(fi_eq_open(res->fabric, &eq_attr, &res->eq, NULL),
			    "fi_eq_open");
	if (!ret)
		ret = check(fi_domain(res->fabric, res->info, &res->domain,
				      NULL), "fi_domain");
	if (!ret && is_pmemverbs(opts))
		ret = check(fi_open_ops(&res->domain->fid, FI_PMEM_DOMAIN_OPS,
					0, (void **) &res->pmem_ops, NULL),
			    "fi_open_ops(" FI_PMEM_DOMAIN_OPS ")");
	return ret;
}

/* Closes a libfabric object if open; a failure is reported, not fatal. */
static void close_fid(struct fid *fid, const char *what)
{
	if (fid)
		check(fi_close(fid), what);
}

static void close_fabric_res(struct fabric_res *res)
{
	close_fid(res->domain ? &res->domain->fid : NULL, "closing the domain");
	close_fid(res->eq ? &res->eq->fid : NULL, "closing the EQ");
	close_fid(res->fabric ? &res->fabric->fid : NULL, "closing the fabric");
	fi_freeinfo(res->info);
	memset(res, 0, sizeof(*res));
}

/* ------------------------------------------------------ bounded waiting */

/* Reports the error entry waiting on a CQ; returns its negative errno. */
static int report_cq_error(struct fid_cq *cq, const char *what)
{
	struct fi_cq_err_entry err = { 0 };
	char prov_msg[256];
	ssize_t ret = fi_cq_readerr(cq, &err, 0);

	if (ret < 0)
		return check(ret, "fi_cq_readerr");
	complain("%s: %s (provider: %s)", what, fi_strerror(err.err),
		 fi_cq_strerror(cq, err.prov_errno, err.err_data, prov_msg,
				sizeof(prov_msg)));
	return err.err ? -err.err : -FI_EOTHER;
}

/* Reports the error entry on an EQ unless it is quiet_err; returns it. */
static int report_eq_error(struct fid_eq *eq, const char *what, int quiet_err)
{
	struct fi_eq_err_entry err = { 0 };
	char prov_msg[256];
	ssize_t ret = fi_eq_readerr(eq, &err, 0);

	if (ret < 0)
		return check(ret, "fi_eq_readerr");
	if (err.err != quiet_err)
		complain("%s: %s (provider: %s)", what, fi_strerror(err.err),
			 fi_eq_strerror(eq, err.prov_errno, err.err_data,
					prov_msg, sizeof(prov_msg)));
	return err.err ? -err.err : -FI_EOTHER;
}

/*
 * Waits, blocking, for one completion on cq until the deadline; the only
 * failure it does not report is -FI_ETIMEDOUT.
 */
static int read_one_before(struct fid_cq *cq, int64_t deadline,
			   const char *what, struct fi_cq_msg_entry *entry)
{
	ssize_t ret;

	do {
		ret = fi_cq_sread(cq, entry, 1, NULL, POLL_INTERVAL_MS);
	} while ((ret == -FI_EAGAIN || ret == -FI_EINTR) && !past(deadline));
	if (ret == -FI_EAGAIN || ret == -FI_EINTR)
		return -FI_ETIMEDOUT;
	if (ret == -FI_EAVAIL)
		return report_cq_error(cq, what);
	return ret < 0 ? check(ret, what) : 0;
}

/* Waits for the completion of the one operation posted with ctx. */
static int wait_for_one(struct fid_cq *cq, void *ctx, int64_t deadline,
			const char *what, struct fi_cq_msg_entry *entry)
{
	int ret = read_one_before(cq, deadline, what, entry);

	if (ret == -FI_ETIMEDOUT)
		complain("%s: timed out", what);
	if (!ret && entry->op_context != ctx) {
		complain("%s: completion of an unexpected operation", what);
		ret = -FI_EOTHER;
	}
	return ret;
}

/* Waits up to timeout_ns for connection event `want`; quiet_err as for
 * report_eq_error. */
static int wait_for_cm_event(struct fid_eq *eq, uint32_t want,
			     int64_t timeout_ns, const char *what,
			     struct fi_eq_cm_entry *entry, int quiet_err)
{
	int64_t deadline = now_ns() + timeout_ns;
	uint32_t event;
	ssize_t ret;

	do {
		ret = fi_eq_sread(eq, &event, entry, sizeof(*entry),
				  POLL_INTERVAL_MS, 0);
	} while ((ret == -FI_EAGAIN || ret == -FI_EINTR) && !past(deadline));
	if (ret == -FI_EAGAIN || ret == -FI_EINTR) {
		complain("%s: timed out", what);
		return -FI_ETIMEDOUT;
	}
	if (ret == -FI_EAVAIL)
		return report_eq_error(eq, what, quiet_err);
	if (ret < 0)
		return check(ret, what);
	if (event != want) {
		complain("%s: unexpected connection event %u", what, event);
		if (event == FI_CONNREQ)
			fi_freeinfo(entry->info);
		return -FI_EOTHER;
	}
	return 0;
}

/* ------------------------------------------------------ memory regions */

/* Registers buf; under FI_MR_ENDPOINT binds it to ep and enables it. */
static int register_buffer(const struct fabric_res *res, struct fid_ep *ep,
			   void *buf, size_t len, uint64_t access,
			   uint64_t requested_key, uint64_t flags,
			   struct fid_mr **mr)
{
	int ret = check(fi_mr_reg(res->domain, buf, len, access, 0,
				  requested_key, flags, mr, NULL), "fi_mr_reg");

	if (ret || !has_mr_mode(res, FI_MR_ENDPOINT))
		return ret;
	ret = check(fi_mr_bind(*mr, &ep->fid, 0), "fi_mr_bind");
	if (!ret)
		ret = check(fi_mr_enable(*mr), "fi_mr_enable");
	return ret;
}

/* Descriptor to pass with local buffers: set only under FI_MR_LOCAL. */
static void *local_desc(const struct connection *conn)
{
	return conn->local_mr ? fi_mr_desc(conn->local_mr) : NULL;
}

/* Carves control slots and RMA source and sink of rma_max bytes each. */
static int alloc_local_buf(struct local_buf *buf, size_t rma_max)
{
	size_t rma_len = (rma_max + LINE_SIZE - 1) / LINE_SIZE * LINE_SIZE;

	buf->len = 2 * CTRL_MSG_MAX + 2 * rma_len;
	if (posix_memalign((void **) &buf->base, 4096, buf->len)) {
		buf->base = NULL;
		return check(-FI_ENOMEM, "allocating local buffers");
	}
	memset(buf->base, 0xa5, buf->len);
	buf->ctrl_tx = buf->base;
	buf->ctrl_rx = buf->base + CTRL_MSG_MAX;
	buf->src = buf->ctrl_rx + CTRL_MSG_MAX;
	buf->dst = buf->src + rma_len;
	return 0;
}

/* ---------------------------------------------------------- connection */

static int open_cq(const struct fabric_res *res, size_t size,
		   struct fid_cq **cq)
{
	struct fi_cq_attr attr = {
		.size = size,
		.format = FI_CQ_FORMAT_MSG,
		.wait_obj = FI_WAIT_UNSPEC,
	};

	return check(fi_cq_open(res->domain, &attr, cq, NULL), "fi_cq_open");
}

/* Opens and enables an endpoint (info: the connreq's, or ours). */
static int open_connection(const struct fabric_res *res, struct fi_info *info,
			   size_t rma_max, struct connection *conn)
{
	int ret = alloc_local_buf(&conn->buf, rma_max);

	if (!ret)
		ret = check(fi_endpoint(res->domain, info, &conn->ep, NULL),
			    "fi_endpoint");
	if (!ret)
		ret = open_cq(res, 2 * MAX_OPS_PER_SAMPLE, &conn->tx_cq);
	if (!ret)
		ret = open_cq(res, 16, &conn->rx_cq);
	if (!ret)
		ret = check(fi_ep_bind(conn->ep, &conn->tx_cq->fid,
				       FI_TRANSMIT), "binding the transmit CQ");
	if (!ret)
		ret = check(fi_ep_bind(conn->ep, &conn->rx_cq->fid, FI_RECV),
			    "binding the receive CQ");
	if (!ret)
		ret = check(fi_ep_bind(conn->ep, &res->eq->fid, 0),
			    "binding the EQ");
	if (!ret)
		ret = check(fi_enable(conn->ep), "fi_enable");
	if (!ret && has_mr_mode(res, FI_MR_LOCAL))
		ret = register_buffer(res, conn->ep, conn->buf.base,
				      conn->buf.len,
				      FI_SEND | FI_RECV | FI_READ | FI_WRITE,
				      LOCAL_MR_KEY, 0, &conn->local_mr);
	return ret;
}

/* Closes the MR before the endpoint it may be bound to (FI_MR_ENDPOINT). */
static void close_connection(struct connection *conn)
{
	close_fid(conn->local_mr ? &conn->local_mr->fid : NULL,
		  "closing the local memory region");
	close_fid(conn->ep ? &conn->ep->fid : NULL, "closing the endpoint");
	close_fid(conn->tx_cq ? &conn->tx_cq->fid : NULL, "closing a CQ");
	close_fid(conn->rx_cq ? &conn->rx_cq->fid : NULL, "closing a CQ");
	free(conn->buf.base);
	memset(conn, 0, sizeof(*conn));
}

static int post_ctrl_recv(struct connection *conn)
{
	return check(fi_recv(conn->ep, conn->buf.ctrl_rx, CTRL_MSG_MAX,
			     local_desc(conn), 0, &conn->ctrl_ctx), "fi_recv");
}

/* Sends a control message and waits for its completion. */
static int send_ctrl(struct connection *conn, const void *data, size_t len,
		     const char *what)
{
	struct fi_cq_msg_entry entry;
	int ret;

	memcpy(conn->buf.ctrl_tx, data, len);
	ret = check(fi_send(conn->ep, conn->buf.ctrl_tx, len, local_desc(conn),
			    0, &conn->ctrl_ctx), what);
	return ret ? ret : wait_for_one(conn->tx_cq, &conn->ctrl_ctx,
					now_ns() + OP_TIMEOUT_NS, what, &entry);
}

/* ---------------------------------------------------------------- target */

/* Bytes the target maps: the largest size twice, at least MIN_REGION. */
static size_t region_len(const struct options *opts)
{
	size_t len = MIN_REGION;
	int i;

	for (i = 0; i < opts->nsizes; i++)
		if (2 * opts->sizes[i] > len)
			len = 2 * opts->sizes[i];
	return len;
}

/* Opens -f's file, or creates a temporary one in $TMPDIR or /tmp. */
static void open_region_file(const char *path, struct mapped_file *file)
{
	const char *dir = getenv("TMPDIR");

	if (path) {
		snprintf(file->path, sizeof(file->path), "%s", path);
		file->fd = open(path, O_RDWR | O_CREAT, 0644);
		return;
	}
	snprintf(file->path, sizeof(file->path), "%s/fi_pmem_lat.XXXXXX",
		 dir && *dir ? dir : "/tmp");
	file->fd = mkstemp(file->path);
	file->remove_at_exit = file->fd >= 0;
}

/*
 * Writes every page of the mapping once (keeping its bytes) and syncs it,
 * so measured operations pay neither first-touch faults nor block
 * allocation.
 */
static int prefault_mapping(struct mapped_file *file)
{
	volatile char *p = (volatile char *) file->map;
	size_t page = (size_t) sysconf(_SC_PAGESIZE), off;

	for (off = 0; off < file->len; off += page)
		p[off] = p[off];
	if (msync(file->map, file->len, MS_SYNC)) {
		complain("msync of %s: %s", file->path, strerror(errno));
		return -FI_EIO;
	}
	return 0;
}

/* Opens (or creates) the file, grows it to len and maps it shared. */
static int map_region_file(const char *path, size_t len,
			   struct mapped_file *file)
{
	struct stat st;

	open_region_file(path, file);
	if (file->fd < 0 || fstat(file->fd, &st) ||
	    ((size_t) st.st_size < len && ftruncate(file->fd, (off_t) len))) {
		complain("preparing %s: %s", file->path, strerror(errno));
		return -FI_EIO;
	}
	file->map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED,
			 file->fd, 0);
	if (file->map == MAP_FAILED) {
		file->map = NULL;
		complain("mmap of %s: %s", file->path, strerror(errno));
		return -FI_EIO;
	}
	file->len = len;
	return prefault_mapping(file);
}

static void unmap_region_file(struct mapped_file *file)
{
	if (file->map)
		munmap(file->map, file->len);
	if (file->fd >= 0)
		close(file->fd);
	if (file->remove_at_exit)
		unlink(file->path);
}

static int start_listening(const struct fabric_res *res, struct fid_pep **pep)
{
	int ret = check(fi_passive_ep(res->fabric, res->info, pep, NULL),
			"fi_passive_ep");

	if (!ret)
		ret = check(fi_pep_bind(*pep, &res->eq->fid, 0),
			    "binding the passive endpoint to the EQ");
	if (!ret)
		ret = check(fi_listen(*pep), "fi_listen");
	return ret;
}

/* Takes the next connection request and completes it with fi_accept. */
static int accept_initiator(const struct fabric_res *res,
			    struct connection *conn)
{
	struct fi_eq_cm_entry entry;
	int ret = wait_for_cm_event(res->eq, FI_CONNREQ, SESSION_TIMEOUT_NS,
				    "waiting for the initiator", &entry, 0);

	if (ret)
		return ret;
	ret = open_connection(res, entry.info, CTRL_MSG_MAX, conn);
	if (!ret)
		ret = post_ctrl_recv(conn);
	if (!ret)
		ret = check(fi_accept(conn->ep, NULL, 0), "fi_accept");
	fi_freeinfo(entry.info);
	if (!ret)
		ret = wait_for_cm_event(res->eq, FI_CONNECTED, CM_TIMEOUT_NS,
					"establishing the connection",
					&entry, 0);
	return ret;
}

/* Registers the mapping for remote access (FI_RMA_PMEM on pmemverbs). */
static int register_region(const struct fabric_res *res,
			   struct connection *conn,
			   const struct mapped_file *file, struct fid_mr **mr)
{
	uint64_t flags = res->pmem_ops ? FI_RMA_PMEM : 0;

	return register_buffer(res, conn->ep, file->map, file->len,
			       FI_REMOTE_WRITE | FI_REMOTE_READ, REGION_MR_KEY,
			       flags, mr);
}

/* The region's persistence profile code, or NO_PROFILE_CODE off pmemverbs. */
static uint64_t region_profile(const struct fabric_res *res, struct fid_mr *mr)
{
	return res->pmem_ops ? (uint64_t) res->pmem_ops->mr_profile(mr) :
			       NO_PROFILE_CODE;
}

static const char *profile_name(uint64_t code)
{
	return code == NO_PROFILE_CODE ? NO_PROFILE :
	       fi_pmem_profile_str((enum fi_pmem_profile) code);
}

/* Sends the initiator the region's base address (or 0), key and length. */
static int send_region(const struct fabric_res *res, struct connection *conn,
		       struct fid_mr *mr, const struct mapped_file *file)
{
	uint64_t addr = has_mr_mode(res, FI_MR_VIRT_ADDR) ?
			(uint64_t) (uintptr_t) file->map : 0;
	uint64_t profile = region_profile(res, mr);
	struct region_msg msg = {
		.addr = htole64(addr),
		.key = htole64(fi_mr_key(mr)),
		.len = htole64(file->len),
		.profile = htole64(profile),
	};

	say("region: %s, %zu bytes, key 0x%" PRIx64 ", profile %s",
	    file->path, file->len, fi_mr_key(mr), profile_name(profile));
	return send_ctrl(conn, &msg, sizeof(msg), "sending the region");
}

/* True once the initiator shut the connection down (EQ FI_SHUTDOWN). */
static bool initiator_gone(const struct fabric_res *res)
{
	struct fi_eq_cm_entry entry;
	uint32_t event;
	ssize_t ret = fi_eq_read(res->eq, &event, &entry, sizeof(entry), 0);

	if (ret == -FI_EAVAIL)
		report_eq_error(res->eq, "connection", 0);
	return ret == -FI_EAVAIL || (ret >= 0 && event == FI_SHUTDOWN);
}

/*
 * Waits (blocking, bounded by the session limit) for "done", watching for
 * a vanished initiator.  pmemverbs's agent serves commits meanwhile.
 */
static int wait_for_done(const struct fabric_res *res, struct connection *conn)
{
	int64_t deadline = now_ns() + SESSION_TIMEOUT_NS;
	struct fi_cq_msg_entry entry;
	int ret;

	do {
		ret = read_one_before(conn->rx_cq,
				      now_ns() + POLL_INTERVAL_MS * NS_PER_MS,
				      "waiting for \"done\"", &entry);
		if (ret == -FI_ETIMEDOUT && initiator_gone(res)) {
			complain("the initiator left without \"done\"");
			return -FI_ECONNRESET;
		}
	} while (ret == -FI_ETIMEDOUT && !past(deadline));
	if (ret == -FI_ETIMEDOUT)
		complain("no \"done\" from the initiator within the session "
			 "limit of %lld s", SESSION_TIMEOUT_NS / NS_PER_S);
	if (!ret && (entry.op_context != &conn->ctrl_ctx ||
		     entry.len != strlen(DONE_TEXT) ||
		     memcmp(conn->buf.ctrl_rx, DONE_TEXT, entry.len))) {
		complain("expected \"%s\" from the initiator", DONE_TEXT);
		ret = -FI_EOTHER;
	}
	return ret;
}

/* Prints pmemverbs's durability counters of an endpoint (a sanity check). */
static void report_pmem_counters(const struct fabric_res *res,
				 struct fid_ep *ep)
{
	struct fi_pmem_ep_counters c;

	if (!res->pmem_ops || check(res->pmem_ops->ep_counters(ep, &c),
				    "reading the pmemverbs counters"))
		return;
	say("pmemverbs counters: %" PRIu64 " commits, %" PRIu64 " commit "
	    "errors, %" PRIu64 " requests sent, %" PRIu64 " served, %" PRIu64
	    " bytes persisted", c.commits, c.commit_errors, c.requests_sent,
	    c.requests_served, c.bytes_persisted);
}

/* Offers the region to the initiator and stays until it is done. */
static int serve_initiator(const struct fabric_res *res,
			   struct connection *conn,
			   const struct mapped_file *file)
{
	struct fid_mr *mr = NULL;
	int ret = register_region(res, conn, file, &mr);

	if (!ret)
		ret = send_region(res, conn, mr, file);
	if (!ret)
		ret = wait_for_done(res, conn);
	if (!ret)
		report_pmem_counters(res, conn->ep);
	close_fid(mr ? &mr->fid : NULL, "closing the region");
	return ret;
}

static int run_target(const struct options *opts)
{
	struct mapped_file file = { .fd = -1 };
	struct fabric_res res = { 0 };
	struct connection conn = { 0 };
	struct fid_pep *pep = NULL;
	int ret;

	ret = map_region_file(opts->file, region_len(opts), &file);
	if (!ret)
		ret = open_fabric_res(opts, &res);
	if (!ret)
		ret = start_listening(&res, &pep);
	if (!ret)
		say("%s listening on %s port %s", opts->prov, LISTEN_ADDR,
		    opts->port);
	if (!ret)
		ret = accept_initiator(&res, &conn);
	if (!ret)
		ret = serve_initiator(&res, &conn, &file);
	close_connection(&conn);
	close_fid(pep ? &pep->fid : NULL, "closing the passive endpoint");
	close_fabric_res(&res);
	unmap_region_file(&file);
	return ret;
}

/* ------------------------------------------------- initiator: posting */

enum rma_kind { RMA_WRITE, RMA_READ, RMA_COMMIT, RMA_FLUSH };

/*
 * Offset of the index-th operation of len bytes: steps of len rounded up to
 * LINE_SIZE, wrapping before the end of the region.
 */
static uint64_t rotating_offset(const struct bench *b, size_t len,
				uint64_t index)
{
	uint64_t stride = (len + LINE_SIZE - 1) / LINE_SIZE * LINE_SIZE;
	uint64_t slots = (b->region.len - len) / stride + 1;

	return (index % slots) * stride;
}

/* fi_writemsg with FI_COMMIT_COMPLETE; len 0 makes it a pure flush. */
static ssize_t post_commit(struct bench *b, size_t len, uint64_t addr,
			   void *ctx)
{
	struct connection *conn = b->conn;
	struct iovec iov = { .iov_base = conn->buf.src, .iov_len = len };
	void *desc = local_desc(conn);
	struct fi_rma_iov rma = { .addr = addr, .len = len,
				  .key = b->region.key };
	struct fi_msg_rma msg = {
		.msg_iov = len ? &iov : NULL,
		.desc = len ? &desc : NULL,
		.iov_count = len ? 1 : 0,
		.rma_iov = &rma,
		.rma_iov_count = 1,
		.context = ctx,
	};

	return fi_writemsg(conn->ep, &msg, FI_COMMIT_COMPLETE | FI_COMPLETION);
}

/* Posts one RMA operation once; the provider's return as is. */
static ssize_t post_rma_once(struct bench *b, enum rma_kind kind, size_t len,
			     uint64_t offset, void *ctx)
{
	struct connection *conn = b->conn;
	uint64_t addr = b->region.addr + offset;

	switch (kind) {
	case RMA_WRITE:
		return fi_write(conn->ep, conn->buf.src, len, local_desc(conn),
				0, addr, b->region.key, ctx);
	case RMA_READ:
		return fi_read(conn->ep, conn->buf.dst, len, local_desc(conn),
			       0, addr, b->region.key, ctx);
	case RMA_COMMIT:
		return post_commit(b, len, addr, ctx);
	case RMA_FLUSH:
		return post_commit(b, 0, b->region.addr, ctx);
	}
	return -FI_EINVAL;
}

/* Reads whatever completions are there (non-blocking); checks each. */
static int reap_completions(struct bench *b)
{
	struct fi_cq_msg_entry entries[8];
	ssize_t n, i;

	n = fi_cq_read(b->conn->tx_cq, entries, 8);
	if (n == -FI_EAGAIN)
		return 0;
	if (n == -FI_EAVAIL)
		return report_cq_error(b->conn->tx_cq, "RMA operation");
	if (n < 0)
		return check(n, "fi_cq_read");
	for (i = 0; i < n; i++) {
		struct fi_context2 *ctx = entries[i].op_context;

		if (ctx < b->ctx || ctx >= b->ctx + b->posted ||
		    !(entries[i].flags & FI_RMA)) {
			complain("completion of an unexpected operation "
				 "(flags 0x%" PRIx64 ")", entries[i].flags);
			return -FI_EOTHER;
		}
	}
	b->completed += (int) n;
	return 0;
}

/* Posts one operation of the sample, retrying while the provider is busy. */
static int post_rma(struct bench *b, enum rma_kind kind, size_t len,
		    uint64_t offset)
{
	void *ctx = &b->ctx[b->posted];
	ssize_t ret;

	while ((ret = post_rma_once(b, kind, len, offset, ctx)) == -FI_EAGAIN) {
		if (past(b->deadline)) {
			complain("posting: provider busy until the deadline");
			return -FI_ETIMEDOUT;
		}
		ret = reap_completions(b);
		if (ret)
			return (int) ret;
	}
	if (ret)
		return check(ret, "posting an RMA operation");
	b->posted++;
	return 0;
}

/* Spins on the transmit CQ until every posted operation completed. */
static int wait_for_sample(struct bench *b)
{
	int ret = 0;

	while (!ret && b->completed < b->posted) {
		if (past(b->deadline)) {
			complain("%d of %d operations still incomplete after "
				 "%lld s", b->posted - b->completed, b->posted,
				 OP_TIMEOUT_NS / NS_PER_S);
			return -FI_ETIMEDOUT;
		}
		ret = reap_completions(b);
	}
	return ret;
}

/* ---------------------------------------------------- initiator: modes */

static int post_write(struct bench *b, size_t size, uint64_t index)
{
	return post_rma(b, RMA_WRITE, size, rotating_offset(b, size, index));
}

static int post_read(struct bench *b, size_t size, uint64_t index)
{
	return post_rma(b, RMA_READ, size, rotating_offset(b, size, index));
}

static int post_read8(struct bench *b, size_t size, uint64_t index)
{
	(void) size;
	return post_rma(b, RMA_READ, PROBE_SIZE,
			rotating_offset(b, PROBE_SIZE, index));
}

/* The naive recipe: write, then read 8 bytes of what was written. */
static int post_write_read(struct bench *b, size_t size, uint64_t index)
{
	uint64_t offset = rotating_offset(b, size, index);
	int ret = post_rma(b, RMA_WRITE, size, offset);

	return ret ? ret : post_rma(b, RMA_READ, PROBE_SIZE, offset);
}

static int post_commit_write(struct bench *b, size_t size, uint64_t index)
{
	return post_rma(b, RMA_COMMIT, size, rotating_offset(b, size, index));
}

/* BATCH plain writes to consecutive slots, then one pure-flush commit. */
static int post_batch(struct bench *b, size_t size, uint64_t index)
{
	uint64_t first = index * (uint64_t) b->opts->batch;
	int ret = 0, i;

	for (i = 0; !ret && i < b->opts->batch; i++)
		ret = post_rma(b, RMA_WRITE, size,
			       rotating_offset(b, size, first + i));
	return ret ? ret : post_rma(b, RMA_FLUSH, 0, 0);
}

static const struct mode all_modes[] = {
	{ "write", false, post_write },
	{ "read", false, post_read },
	{ "read8", false, post_read8 },
	{ "write_read", false, post_write_read },
	{ "commit", false, post_commit_write },
	{ "batch", true, post_batch },
};

/* ---------------------------------------------- initiator: measurement */

/* One sample: posts the mode's operations, waits for all; returns ns. */
static int time_sample(struct bench *b, const struct mode *mode, size_t size,
		       uint64_t index, int64_t *elapsed)
{
	int64_t start = now_ns();
	int ret;

	b->posted = b->completed = 0;
	b->deadline = start + OP_TIMEOUT_NS;
	ret = mode->post(b, size, index);
	if (!ret)
		ret = wait_for_sample(b);
	*elapsed = now_ns() - start;
	return ret;
}

/* The common timing loop: warmup, then opts->iters recorded samples. */
static int measure(struct bench *b, const struct mode *mode, size_t size,
		   int64_t *samples)
{
	long total = b->opts->warmup + b->opts->iters, i;
	int64_t elapsed;
	int ret;

	for (i = 0; i < total; i++) {
		ret = time_sample(b, mode, size, (uint64_t) i, &elapsed);
		if (ret) {
			complain("%s of %zu bytes failed at iteration %ld",
				 mode->name, size, i);
			return ret;
		}
		if (i >= b->opts->warmup)
			samples[i - b->opts->warmup] = elapsed;
	}
	return 0;
}

static int compare_int64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *) a, y = *(const int64_t *) b;

	return (x > y) - (x < y);
}

/* Nearest-rank percentile q (0 < q <= 1) of n sorted samples. */
static int64_t percentile(const int64_t *sorted, long n, double q)
{
	long rank = (long) ceil(q * (double) n);

	return sorted[rank < 1 ? 0 : rank - 1];
}

/* Sorts the samples and computes the statistics in microseconds. */
static void summarize(int64_t *samples, long n, struct stats *s)
{
	double sum = 0;
	long i;

	qsort(samples, (size_t) n, sizeof(*samples), compare_int64);
	for (i = 0; i < n; i++)
		sum += (double) samples[i];
	s->p50_us = percentile(samples, n, 0.50) / 1e3;
	s->p99_us = percentile(samples, n, 0.99) / 1e3;
	s->max_us = samples[n - 1] / 1e3;
	s->mean_us = sum / (double) n / 1e3;
}

static void print_header(const struct options *opts)
{
	if (opts->csv)
		printf("provider,profile,mode,size,iters,p50_us,p99_us,max_us,"
		       "mean_us\n");
	else
		printf("%-10s %-8s %-10s %9s %8s %10s %10s %10s %10s\n",
		       "provider", "profile", "mode", "size", "iters",
		       "p50_us", "p99_us", "max_us", "mean_us");
}

static void print_row(const struct bench *b, const struct mode *mode,
		      size_t size, const struct stats *s)
{
	const char *fmt = b->opts->csv ?
		"%s,%s,%s,%zu,%ld,%.2f,%.2f,%.2f,%.2f\n" :
		"%-10s %-8s %-10s %9zu %8ld %10.2f %10.2f %10.2f %10.2f\n";

	printf(fmt, b->opts->prov, b->region.profile, mode->name, size,
	       b->opts->iters, s->p50_us, s->p99_us, s->max_us, s->mean_us);
	fflush(stdout);
}

/* Measures every (mode, size) pair, mode-major, printing as it goes. */
static int measure_all(struct bench *b)
{
	const struct options *opts = b->opts;
	int64_t *samples = calloc((size_t) opts->iters, sizeof(*samples));
	struct stats s;
	int m, i, ret = 0;

	if (!samples)
		return check(-FI_ENOMEM, "allocating samples");
	print_header(opts);
	for (m = 0; !ret && m < opts->nmodes; m++) {
		for (i = 0; !ret && i < opts->nsizes; i++) {
			ret = measure(b, opts->modes[m], opts->sizes[i],
				      samples);
			if (ret)
				break;
			summarize(samples, opts->iters, &s);
			print_row(b, opts->modes[m], opts->sizes[i], &s);
		}
	}
	free(samples);
	return ret;
}

/* ------------------------------------------ initiator: connection setup */

static size_t largest_size(const struct options *opts)
{
	size_t max = PROBE_SIZE;
	int i;

	for (i = 0; i < opts->nsizes; i++)
		if (opts->sizes[i] > max)
			max = opts->sizes[i];
	return max;
}

/* One connection attempt; -FI_ECONNREFUSED (unreported) if not listening. */
static int try_connect(const struct fabric_res *res, const struct options *opts,
		       struct connection *conn)
{
	struct fi_eq_cm_entry entry;
	int ret = open_connection(res, res->info, largest_size(opts), conn);

	if (!ret)
		ret = post_ctrl_recv(conn);
	if (!ret) {
		ret = fi_connect(conn->ep, res->info->dest_addr, NULL, 0);
		if (ret != -FI_ECONNREFUSED)
			ret = check(ret, "fi_connect");
	}
	if (!ret)
		ret = wait_for_cm_event(res->eq, FI_CONNECTED, CM_TIMEOUT_NS,
					"connecting to the target", &entry,
					FI_ECONNREFUSED);
	return ret;
}

/* Connects, retrying while the target is not listening yet (bounded). */
static int connect_to_target(const struct fabric_res *res,
			     const struct options *opts,
			     struct connection *conn)
{
	int64_t deadline = now_ns() + CM_TIMEOUT_NS;
	int ret;

	while ((ret = try_connect(res, opts, conn)) == -FI_ECONNREFUSED) {
		close_connection(conn);
		if (past(deadline)) {
			complain("%s port %s refused the connection for %lld "
				 "s; is the target running?", opts->server,
				 opts->port, CM_TIMEOUT_NS / NS_PER_S);
			return ret;
		}
		sleep_ms(RETRY_INTERVAL_MS);
	}
	return ret;
}

/* Receives the target's region and checks that every size fits in it. */
static int receive_region(const struct options *opts, struct connection *conn,
			  struct remote_region *region)
{
	struct fi_cq_msg_entry entry;
	struct region_msg wire;
	int ret = wait_for_one(conn->rx_cq, &conn->ctrl_ctx,
			       now_ns() + CM_TIMEOUT_NS,
			       "receiving the region", &entry);

	if (ret)
		return ret;
	if (entry.len != sizeof(wire)) {
		complain("region message of %zu bytes, expected %zu",
			 entry.len, sizeof(wire));
		return -FI_EOTHER;
	}
	memcpy(&wire, conn->buf.ctrl_rx, sizeof(wire));
	region->addr = le64toh(wire.addr);
	region->key = le64toh(wire.key);
	region->len = le64toh(wire.len);
	region->profile = profile_name(le64toh(wire.profile));
	if (region->len < largest_size(opts) + LINE_SIZE) {
		complain("the target's region (%" PRIu64 " bytes) is too small "
			 "for %zu-byte operations; give the target the same -S",
			 region->len, largest_size(opts));
		return -FI_EINVAL;
	}
	return 0;
}

static int run_initiator(const struct options *opts)
{
	struct fabric_res res = { 0 };
	struct connection conn = { 0 };
	struct bench *b = calloc(1, sizeof(*b));
	int ret = b ? 0 : check(-FI_ENOMEM, "allocating the benchmark");

	if (!ret)
		ret = open_fabric_res(opts, &res);
	if (!ret)
		ret = connect_to_target(&res, opts, &conn);
	if (!ret)
		ret = receive_region(opts, &conn, &b->region);
	if (!ret) {
		say("%s to %s port %s: region of %" PRIu64 " bytes, profile "
		    "%s", opts->prov, opts->server, opts->port, b->region.len,
		    b->region.profile);
		b->opts = opts;
		b->conn = &conn;
		ret = measure_all(b);
		report_pmem_counters(&res, conn.ep);
	}
	if (!ret)
		ret = send_ctrl(&conn, DONE_TEXT, strlen(DONE_TEXT),
				"sending \"done\"");
	if (!ret)
		fi_shutdown(conn.ep, 0); /* best effort; closing follows */
	close_connection(&conn);
	close_fabric_res(&res);
	free(b);
	return ret;
}

/* ------------------------------------------------------------- options */

static void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [-p PROV] [-s SERVER_ADDR] [-B PORT] "
		"[-S SIZE[,SIZE...]]\n"
		"        [-I ITERS] [-W WARMUP] [-m MODE[,MODE...]] [-b BATCH] "
		"[-f FILE] [--csv]\n"
		"  without -s: the target; with -s: the initiator, which "
		"measures\n"
		"  -p  provider (%s); -B port (%s); -S sizes (%s)\n"
		"  -I  iterations (%d); -W warmup iterations (%d); "
		"-b writes per batch (%d)\n"
		"  -m  modes among write,read,read8,write_read,commit,batch "
		"(%s)\n"
		"  -f  target's file (default: a temporary file)\n",
		prog, DEFAULT_PROVIDER, DEFAULT_PORT, DEFAULT_SIZES,
		DEFAULT_ITERS, DEFAULT_WARMUP, DEFAULT_BATCH, DEFAULT_MODES);
}

/* Parses a decimal in [min, max]; false if it is not one. */
static bool parse_long(const char *text, long min, long max, long *out)
{
	char *end;
	long value;

	errno = 0;
	value = strtol(text, &end, 10);
	if (errno || end == text || *end || value < min || value > max) {
		fprintf(stderr, "invalid number \"%s\" (%ld..%ld)\n", text,
			min, max);
		return false;
	}
	*out = value;
	return true;
}

static bool parse_sizes(char *list, struct options *opts)
{
	char *save = NULL, *item;
	long size;

	opts->nsizes = 0;
	for (item = strtok_r(list, ",", &save); item;
	     item = strtok_r(NULL, ",", &save)) {
		if (opts->nsizes == MAX_SIZES ||
		    !parse_long(item, 1, (long) MAX_SIZE, &size))
			return false;
		opts->sizes[opts->nsizes++] = (size_t) size;
	}
	return opts->nsizes > 0;
}

static const struct mode *find_mode(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(all_modes) / sizeof(all_modes[0]); i++)
		if (!strcmp(all_modes[i].name, name))
			return &all_modes[i];
	fprintf(stderr, "unknown mode \"%s\"\n", name);
	return NULL;
}

static bool parse_modes(char *list, struct options *opts)
{
	char *save = NULL, *item;
	const struct mode *mode;

	opts->nmodes = 0;
	for (item = strtok_r(list, ",", &save); item;
	     item = strtok_r(NULL, ",", &save)) {
		mode = find_mode(item);
		if (!mode || opts->nmodes == MAX_MODES)
			return false;
		opts->modes[opts->nmodes++] = mode;
	}
	return opts->nmodes > 0;
}

/* Checks what getopt cannot: mode and provider agree, and so on. */
static bool options_consistent(const struct options *opts)
{
	int i;

	for (i = 0; i < opts->nmodes; i++) {
		if (opts->modes[i]->pmem_only && !is_pmemverbs(opts)) {
			fprintf(stderr, "mode %s needs -p %s\n",
				opts->modes[i]->name, PMEM_PROVIDER);
			return false;
		}
	}
	if (opts->server && opts->file) {
		fprintf(stderr, "-f is for the target (no -s)\n");
		return false;
	}
	return true;
}

/* Parses one option letter with its argument; false if invalid. */
static bool parse_option(int c, char *arg, struct options *opts)
{
	long value;

	switch (c) {
	case 'p': opts->prov = arg; return true;
	case 's': opts->server = arg; return true;
	case 'B': opts->port = arg; return parse_long(arg, 1, 65535, &value);
	case 'S': return parse_sizes(arg, opts);
	case 'I': return parse_long(arg, 1, MAX_ITERS, &opts->iters);
	case 'W': return parse_long(arg, 0, MAX_ITERS, &opts->warmup);
	case 'm': return parse_modes(arg, opts);
	case 'b':
		if (!parse_long(arg, 1, MAX_BATCH, &value))
			return false;
		opts->batch = (int) value;
		return true;
	case 'f': opts->file = arg; return true;
	case 'C': opts->csv = true; return true;
	default: return false;
	}
}

static bool parse_options(int argc, char **argv, struct options *opts)
{
	static const struct option long_opts[] = {
		{ "csv", no_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char sizes[] = DEFAULT_SIZES, modes[] = DEFAULT_MODES;
	int c;

	*opts = (struct options) {
		.prov = DEFAULT_PROVIDER, .port = DEFAULT_PORT,
		.iters = DEFAULT_ITERS, .warmup = DEFAULT_WARMUP,
		.batch = DEFAULT_BATCH,
	};
	if (!parse_sizes(sizes, opts) || !parse_modes(modes, opts))
		return false;
	while ((c = getopt_long(argc, argv, "p:s:B:S:I:W:m:b:f:h", long_opts,
				NULL)) != -1)
		if (!parse_option(c, optarg, opts))
			return false;
	return optind == argc && options_consistent(opts);
}

int main(int argc, char **argv)
{
	struct options opts;
	int ret;

	if (!parse_options(argc, argv, &opts)) {
		usage(argv[0]);
		return 2;
	}
	role = opts.server ? "[initiator]" : "[target]";
	/* Every failure has already been reported where it happened. */
	ret = opts.server ? run_initiator(&opts) : run_target(&opts);
	return ret ? 1 : 0;
}
