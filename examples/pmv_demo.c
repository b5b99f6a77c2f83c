/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_demo: a message and an RMA round trip through the pmemverbs provider.
 *
 *   pmv_demo target    [-a ADDR] [-p PORT] [-f FILE]
 *   pmv_demo initiator [-a ADDR] [-p PORT]
 *
 * The target maps a 1 MiB file (a temporary one unless -f is given),
 * listens on a pmemverbs FI_EP_MSG passive endpoint, accepts one
 * connection, registers the mapping as persistent memory (FI_RMA_PMEM; the
 * provider detects its persistence profile) and sends the initiator the
 * region's address, key, length and profile.  The initiator sends a text
 * message, writes a line into the target's file with fi_write, reads it
 * back with fi_read, then writes a second line with fi_writemsg and
 * FI_COMMIT_COMPLETE: when that completes, the line is durable in the
 * target's file.  The target prints both lines.
 *
 * The demo honours the mr_mode the provider returns: FI_MR_LOCAL (local
 * buffers are registered and their descriptors passed), FI_MR_VIRT_ADDR
 * (remote addresses are virtual addresses, otherwise offsets),
 * FI_MR_PROV_KEY (the provider's key is used, otherwise the demo's own) and
 * FI_MR_ENDPOINT (regions are bound to the endpoint and enabled).
 *
 * Built by `make` (examples/pmv_demo); `./run demo` runs both sides.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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

#define DEMO_FI_VERSION FI_VERSION(1, 17)
#define PROVIDER_NAME "pmemverbs"
#define DEFAULT_ADDR "127.0.0.1"
#define DEFAULT_PORT "9400"

#define REGION_SIZE (1024 * 1024)
#define MSG_MAX 256
#define RX_SLOTS 2 /* the target receives "hello ..." and then "done" */
#define FILE_HEAD_MAX 128
#define COMMIT_OFFSET 128 /* where the durable line goes in the file */
#define TIMEOUT_MS 20000
#define RETRY_INTERVAL_MS 200

/* Keys the demo asks for when the provider does not choose them. */
#define LOCAL_MR_KEY 1
#define REGION_MR_KEY 2

#define DONE_TEXT "done"

static const char *role = "[pmv_demo]";

struct options {
	bool is_target;
	const char *addr;
	const char *port;
	const char *file; /* NULL: a temporary file */
};

/* The fabric, EQ and domain both sides open, their fi_info and core name. */
struct fabric_res {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *eq;
	struct fi_pmem_ops_domain *pmem_ops; /* pmemverbs's domain extension */
	const char *core_prov;
};

/* Buffers for messages and RMA, registered as one region under FI_MR_LOCAL. */
struct local_buffers {
	char rx[RX_SLOTS][MSG_MAX];
	char tx[MSG_MAX];
	char rma_out[MSG_MAX];
	char rma_in[MSG_MAX];
};

/* One connected endpoint with its own transmit and receive CQs. */
struct connection {
	struct fid_ep *ep;
	struct fid_cq *tx_cq;
	struct fid_cq *rx_cq;
	struct fid_mr *local_mr; /* only under FI_MR_LOCAL */
	struct local_buffers *buf;
	struct fi_context2 tx_ctx;
	struct fi_context2 rx_ctx[RX_SLOTS];
};

/* Region description the target sends, little-endian on the wire. */
struct region_msg {
	uint64_t addr; /* virtual address under FI_MR_VIRT_ADDR, else 0 */
	uint64_t key;
	uint64_t len;
	uint64_t profile; /* enum fi_pmem_profile pmemverbs found for it */
};

struct mapped_file {
	char path[PATH_MAX];
	int fd;
	char *map;
	bool remove_at_exit;
};

/* ---------------------------------------------------------------- output */

/* Prints one line prefixed with this process's role, and flushes it. */
static void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("%s ", role);
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
	va_end(ap);
}

/* Prints one error line to stderr, prefixed with this process's role. */
static void complain(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fflush(stdout);
	fprintf(stderr, "%s error: ", role);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	fflush(stderr);
	va_end(ap);
}

/* Reports a failed libfabric call (negative return) and passes it on. */
static int check(ssize_t ret, const char *what)
{
	if (ret < 0)
		complain("%s: %s (set FI_LOG_LEVEL=warn to see why)", what,
			 fi_strerror((int) -ret));
	return (int) (ret < 0 ? ret : 0);
}

/* Writes bytes as a C string literal body, escaping what is not printable. */
static const char *quote(const char *bytes, size_t len, char *out,
			 size_t out_size)
{
	size_t used = 0, i;

	for (i = 0; i < len && used + 5 < out_size; i++) {
		unsigned char c = (unsigned char) bytes[i];

		if (c == '\n')
			used += snprintf(out + used, out_size - used, "\\n");
		else if (c == '"' || c == '\\')
			used += snprintf(out + used, out_size - used, "\\%c",
					 c);
		else if (c < 0x20 || c >= 0x7f)
			used += snprintf(out + used, out_size - used,
					 "\\x%02x", c);
		else
			out[used++] = (char) c;
	}
	out[used] = '\0';
	return out;
}

/* ------------------------------------------------------------------ time */

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int ms_until(int64_t deadline)
{
	int64_t left = deadline - now_ms();

	return left > 0 ? (int) left : 0;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long) (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/* --------------------------------------------------- fabric and domain */

static bool has_mr_mode(const struct fabric_res *res, int bit)
{
	return (res->info->domain_attr->mr_mode & bit) != 0;
}

/* Hints for pmemverbs MSG endpoints, with every mr_mode the demo handles. */
static struct fi_info *demo_hints(void)
{
	struct fi_info *hints = fi_allocinfo();

	if (!hints)
		return NULL;
	hints->caps = FI_MSG | FI_RMA | FI_RMA_PMEM;
	hints->mode = FI_CONTEXT | FI_CONTEXT2; /* contexts are fi_context2 */
	hints->ep_attr->type = FI_EP_MSG;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				      FI_MR_ALLOCATED | FI_MR_PROV_KEY |
				      FI_MR_ENDPOINT;
	hints->fabric_attr->prov_name = strdup(PROVIDER_NAME);
	if (!hints->fabric_attr->prov_name) {
		fi_freeinfo(hints);
		return NULL;
	}
	return hints;
}

/* fi_getinfo for the demo's hints: FI_SOURCE on the target, a peer else. */
static int find_provider(const struct options *opts, struct fi_info **info)
{
	uint64_t flags = opts->is_target ? FI_SOURCE : 0;
	struct fi_info *hints = demo_hints();
	int ret;

	if (!hints)
		return check(-FI_ENOMEM, "allocating fi_info hints");
	ret = fi_getinfo(DEMO_FI_VERSION, opts->addr, opts->port, flags, hints,
			 info);
	fi_freeinfo(hints);
	if (ret)
		complain("fi_getinfo found no %s FI_EP_MSG endpoint with "
			 "FI_MSG|FI_RMA for %s port %s: %s (is "
			 "FI_PROVIDER_PATH the directory holding "
			 "libpmemverbs-fi.so? set FI_LOG_LEVEL=warn to see "
			 "why)",
			 PROVIDER_NAME, opts->addr, opts->port,
			 fi_strerror(-ret));
	return ret;
}

/* Opens pmemverbs's domain extension and asks which core it runs over. */
static int open_pmem_ops(struct fabric_res *res)
{
	int ret = fi_open_ops(&res->domain->fid, FI_PMEM_DOMAIN_OPS, 0,
			      (void **) &res->pmem_ops, NULL);

	if (ret)
		return check(ret, "fi_open_ops(" FI_PMEM_DOMAIN_OPS ")");
	res->core_prov = res->pmem_ops->core_prov(res->domain);
	return 0;
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
	if (!ret)
		ret = open_pmem_ops(res);
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

/* ------------------------------------------------------ waiting, bounded */

/* True when a blocking read returned without anything to read. */
static bool is_timeout(ssize_t ret)
{
	return ret == -FI_EAGAIN || ret == -FI_EINTR;
}

/* True while a blocking read came back empty before the deadline. */
static bool keep_waiting(ssize_t ret, int64_t deadline)
{
	return is_timeout(ret) && ms_until(deadline) > 0;
}

static int report_timeout(const char *what)
{
	complain("%s: timed out after %d s", what, TIMEOUT_MS / 1000);
	return -FI_ETIMEDOUT;
}

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

/* Waits for the completion of the one operation posted with context ctx. */
static int wait_for_completion(struct fid_cq *cq, void *ctx, const char *what,
			       struct fi_cq_msg_entry *entry)
{
	int64_t deadline = now_ms() + TIMEOUT_MS;
	ssize_t ret;

	do {
		ret = fi_cq_sread(cq, entry, 1, NULL, ms_until(deadline));
	} while (keep_waiting(ret, deadline));

	if (is_timeout(ret))
		return report_timeout(what);
	if (ret == -FI_EAVAIL)
		return report_cq_error(cq, what);
	if (ret < 0)
		return check(ret, what);
	if (entry->op_context != ctx) {
		complain("%s: completion for an unexpected operation", what);
		return -FI_EOTHER;
	}
	return 0;
}

/*
 * Reports the error entry waiting on an EQ and returns its negative errno;
 * an error numbered quiet_err is returned without a message.
 */
static int report_eq_error(struct fid_eq *eq, const char *what, int quiet_err)
{
	struct fi_eq_err_entry err = { 0 };
	char prov_msg[256];
	ssize_t ret = fi_eq_readerr(eq, &err, 0);

	if (ret < 0)
		return check(ret, "fi_eq_readerr");
	if (err.err != quiet_err)
		complain("%s: %s (provider: %s)", what,
			 fi_strerror(err.err),
			 fi_eq_strerror(eq, err.prov_errno, err.err_data,
					prov_msg, sizeof(prov_msg)));
	return err.err ? -err.err : -FI_EOTHER;
}

/* Waits for connection event `want`; quiet_err as for report_eq_error. */
static int wait_for_cm_event(struct fid_eq *eq, uint32_t want,
			     const char *what, struct fi_eq_cm_entry *entry,
			     int quiet_err)
{
	int64_t deadline = now_ms() + TIMEOUT_MS;
	uint32_t event;
	ssize_t ret;

	do {
		ret = fi_eq_sread(eq, &event, entry, sizeof(*entry),
				  ms_until(deadline), 0);
	} while (keep_waiting(ret, deadline));

	if (is_timeout(ret))
		return report_timeout(what);
	if (ret == -FI_EAVAIL)
		return report_eq_error(eq, what, quiet_err);
	if (ret < 0)
		return check(ret, what);
	if (event != want) {
		char got_name[32], want_name[32];

		complain("%s: got event %s instead of %s", what,
			 fi_tostr_r(got_name, sizeof(got_name), &event,
				    FI_TYPE_EQ_EVENT),
			 fi_tostr_r(want_name, sizeof(want_name), &want,
				    FI_TYPE_EQ_EVENT));
		if (event == FI_CONNREQ)
			fi_freeinfo(entry->info);
		return -FI_EOTHER;
	}
	return 0;
}

/* ----------------------------------------------------- memory regions */

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

/* ---------------------------------------------------------- connection */

static int open_cq(const struct fabric_res *res, struct fid_cq **cq)
{
	struct fi_cq_attr attr = {
		.size = 16,
		.format = FI_CQ_FORMAT_MSG,
		.wait_obj = FI_WAIT_UNSPEC,
	};

	return check(fi_cq_open(res->domain, &attr, cq, NULL), "fi_cq_open");
}

/* Opens and enables an endpoint (info: the connreq's, or ours) and buffers. */
static int open_connection(const struct fabric_res *res, struct fi_info *info,
			   struct connection *conn)
{
	int ret;

	conn->buf = calloc(1, sizeof(*conn->buf));
	if (!conn->buf)
		return check(-FI_ENOMEM, "allocating message buffers");
	ret = check(fi_endpoint(res->domain, info, &conn->ep, NULL),
		    "fi_endpoint");
	if (!ret)
		ret = open_cq(res, &conn->tx_cq);
	if (!ret)
		ret = open_cq(res, &conn->rx_cq);
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
		ret = register_buffer(res, conn->ep, conn->buf,
				      sizeof(*conn->buf),
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
	close_fid(conn->tx_cq ? &conn->tx_cq->fid : NULL,
		  "closing the transmit CQ");
	close_fid(conn->rx_cq ? &conn->rx_cq->fid : NULL,
		  "closing the receive CQ");
	free(conn->buf);
	memset(conn, 0, sizeof(*conn));
}

static int post_recv(struct connection *conn, int slot)
{
	return check(fi_recv(conn->ep, conn->buf->rx[slot], MSG_MAX,
			     local_desc(conn), 0, &conn->rx_ctx[slot]),
		     "fi_recv");
}

/* Waits for the message in receive slot `slot`; returns its length. */
static int receive_message(struct connection *conn, int slot, const char *what,
			   size_t *len)
{
	struct fi_cq_msg_entry entry;
	int ret = wait_for_completion(conn->rx_cq, &conn->rx_ctx[slot], what,
				      &entry);

	if (!ret)
		*len = entry.len;
	return ret;
}

/* Waits for the one outstanding transmit operation (send, write, read). */
static int wait_for_transmit(struct connection *conn, const char *what)
{
	struct fi_cq_msg_entry entry;

	return wait_for_completion(conn->tx_cq, &conn->tx_ctx, what, &entry);
}

/* Sends len bytes through the transmit buffer and waits for completion. */
static int send_message(struct connection *conn, const void *data, size_t len,
			const char *what)
{
	int ret;

	memcpy(conn->buf->tx, data, len);
	ret = check(fi_send(conn->ep, conn->buf->tx, len, local_desc(conn), 0,
			    &conn->tx_ctx), what);
	return ret ? ret : wait_for_transmit(conn, what);
}

/* ---------------------------------------------------------------- target */

/* Creates the default temporary file, in $TMPDIR or /tmp. */
static void create_temp_file(struct mapped_file *file)
{
	const char *dir = getenv("TMPDIR");

	if (!dir || !*dir)
		dir = "/tmp";
	snprintf(file->path, sizeof(file->path), "%s/pmv_demo.XXXXXX", dir);
	file->fd = mkstemp(file->path);
	file->remove_at_exit = file->fd >= 0;
}

/* Opens (or creates) the file, grows it to REGION_SIZE and maps it shared. */
static int map_region_file(const char *path, struct mapped_file *file)
{
	struct stat st;

	if (path) {
		snprintf(file->path, sizeof(file->path), "%s", path);
		file->fd = open(path, O_RDWR | O_CREAT, 0644);
	} else {
		create_temp_file(file);
	}
	if (file->fd < 0 || fstat(file->fd, &st) ||
	    (st.st_size < REGION_SIZE && ftruncate(file->fd, REGION_SIZE))) {
		complain("preparing %s: %s", file->path, strerror(errno));
		return -FI_EIO;
	}
	/* MAP_SYNC where the file takes it (fsdax): CPU flushes then suffice */
	file->map = mmap(NULL, REGION_SIZE, PROT_READ | PROT_WRITE,
			 MAP_SHARED_VALIDATE | MAP_SYNC, file->fd, 0);
	if (file->map == MAP_FAILED)
		file->map = mmap(NULL, REGION_SIZE, PROT_READ | PROT_WRITE,
				 MAP_SHARED, file->fd, 0);
	if (file->map == MAP_FAILED) {
		file->map = NULL;
		complain("mmap of %s: %s", file->path, strerror(errno));
		return -FI_EIO;
	}
	return 0;
}

static void unmap_region_file(struct mapped_file *file)
{
	if (file->map)
		munmap(file->map, REGION_SIZE);
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
	int ret, slot;

	ret = wait_for_cm_event(res->eq, FI_CONNREQ,
				"waiting for a connection request", &entry, 0);
	if (ret)
		return ret;
	ret = open_connection(res, entry.info, conn);
	for (slot = 0; !ret && slot < RX_SLOTS; slot++)
		ret = post_recv(conn, slot);
	if (!ret)
		ret = check(fi_accept(conn->ep, NULL, 0), "fi_accept");
	fi_freeinfo(entry.info);
	if (!ret)
		ret = wait_for_cm_event(res->eq, FI_CONNECTED,
					"establishing the connection",
					&entry, 0);
	return ret;
}

/* Sends the initiator the region's base address (or 0), key and length. */
static int send_region(const struct fabric_res *res, struct connection *conn,
		       struct fid_mr *mr, const struct mapped_file *file)
{
	uint64_t addr = has_mr_mode(res, FI_MR_VIRT_ADDR) ?
			(uint64_t) (uintptr_t) file->map : 0;
	struct region_msg msg = {
		.addr = htole64(addr),
		.key = htole64(fi_mr_key(mr)),
		.len = htole64(REGION_SIZE),
		.profile = htole64(res->pmem_ops->mr_profile(mr)),
	};
	int ret = send_message(conn, &msg, sizeof(msg),
			       "sending the region description");

	if (!ret)
		say("region sent to the initiator: address 0x%llx (%s), "
		    "key 0x%llx, %d bytes", (unsigned long long) addr,
		    addr ? "FI_MR_VIRT_ADDR" : "offsets",
		    (unsigned long long) fi_mr_key(mr), REGION_SIZE);
	return ret;
}

/* Receives a text message in `slot`, prints it and copies it to text. */
static int receive_text(struct connection *conn, int slot, const char *what,
			char *text, size_t text_size)
{
	char quoted[4 * MSG_MAX + 1];
	size_t len;
	int ret = receive_message(conn, slot, what, &len);

	if (ret)
		return ret;
	len = len < text_size - 1 ? len : text_size - 1;
	memcpy(text, conn->buf->rx[slot], len);
	text[len] = '\0';
	say("message received: \"%s\"",
	    quote(conn->buf->rx[slot], len, quoted, sizeof(quoted)));
	return 0;
}

/* Prints the line at `offset` of the file, up to a limit. */
static void print_file_line(const struct mapped_file *file, size_t offset,
			    const char *what)
{
	char quoted[4 * FILE_HEAD_MAX + 1];
	const char *line = file->map + offset;
	const char *newline = memchr(line, '\n', FILE_HEAD_MAX);
	size_t len = newline ? (size_t) (newline - line) + 1 :
			       strnlen(line, FILE_HEAD_MAX);

	say("file offset %zu (%s): \"%s\"", offset, what,
	    quote(line, len, quoted, sizeof(quoted)));
}

/* Lets the initiator write into the mapped file, then reports and msyncs. */
static int serve_initiator(const struct fabric_res *res,
			   struct connection *conn,
			   const struct mapped_file *file)
{
	struct fid_mr *mr = NULL;
	char text[MSG_MAX];
	int ret;

	ret = register_buffer(res, conn->ep, file->map, REGION_SIZE,
			      FI_REMOTE_WRITE | FI_REMOTE_READ, REGION_MR_KEY,
			      FI_RMA_PMEM, &mr);
	if (!ret)
		say("file registered as persistent memory (FI_RMA_PMEM): "
		    "profile %s", fi_pmem_profile_str(res->pmem_ops->mr_profile(mr)));
	if (!ret)
		ret = send_region(res, conn, mr, file);
	if (!ret)
		ret = receive_text(conn, 0, "receiving the initiator's message",
				   text, sizeof(text));
	if (!ret)
		ret = receive_text(conn, 1, "receiving \"done\"", text,
				   sizeof(text));
	if (!ret && strcmp(text, DONE_TEXT)) {
		complain("expected \"%s\" from the initiator", DONE_TEXT);
		ret = -FI_EOTHER;
	}
	if (!ret) {
		print_file_line(file, 0, "plain fi_write: visible, not "
				"guaranteed durable");
		print_file_line(file, COMMIT_OFFSET, "FI_COMMIT_COMPLETE: "
				"durable, persisted by pmemverbs's agent");
	}
	close_fid(mr ? &mr->fid : NULL, "closing the file's memory region");
	return ret;
}

static int run_target(const struct options *opts)
{
	struct mapped_file file = { .fd = -1 };
	struct fabric_res res = { 0 };
	struct connection conn = { 0 };
	struct fid_pep *pep = NULL;
	int ret;

	ret = map_region_file(opts->file, &file);
	if (!ret)
		ret = open_fabric_res(opts, &res);
	if (!ret)
		ret = start_listening(&res, &pep);
	if (!ret)
		say("listening on %s port %s, file %s (%d bytes), core: %s",
		    opts->addr, opts->port, file.path, REGION_SIZE,
		    res.core_prov);
	if (!ret)
		ret = accept_initiator(&res, &conn);
	if (!ret)
		say("connection from the initiator accepted");
	if (!ret)
		ret = serve_initiator(&res, &conn, &file);
	close_connection(&conn);
	close_fid(pep ? &pep->fid : NULL, "closing the passive endpoint");
	close_fabric_res(&res);
	unmap_region_file(&file);
	return ret;
}

/* ------------------------------------------------------------- initiator */

/* One connection attempt; -FI_ECONNREFUSED (unreported) if not listening. */
static int try_connect(const struct fabric_res *res, struct connection *conn)
{
	struct fi_eq_cm_entry entry;
	int ret = open_connection(res, res->info, conn);

	if (!ret)
		ret = post_recv(conn, 0);
	if (!ret) {
		ret = fi_connect(conn->ep, res->info->dest_addr, NULL, 0);
		if (ret != -FI_ECONNREFUSED)
			ret = check(ret, "fi_connect");
	}
	if (!ret)
		ret = wait_for_cm_event(res->eq, FI_CONNECTED,
					"connecting to the target", &entry,
					FI_ECONNREFUSED);
	return ret;
}

/* Connects, retrying for up to TIMEOUT_MS while the target is not listening. */
static int connect_to_target(const struct fabric_res *res,
			     const struct options *opts,
			     struct connection *conn)
{
	int64_t deadline = now_ms() + TIMEOUT_MS;
	bool retry_announced = false;
	int ret;

	while ((ret = try_connect(res, conn)) == -FI_ECONNREFUSED) {
		close_connection(conn);
		if (ms_until(deadline) == 0) {
			complain("%s port %s refused the connection for %d s; "
				 "is the target running?", opts->addr,
				 opts->port, TIMEOUT_MS / 1000);
			return ret;
		}
		if (!retry_announced)
			say("no target listening on %s port %s yet; retrying "
			    "for up to %d s", opts->addr, opts->port,
			    TIMEOUT_MS / 1000);
		retry_announced = true;
		sleep_ms(RETRY_INTERVAL_MS);
	}
	return ret;
}

/* Receives and decodes the target's region description. */
static int receive_region(struct connection *conn, struct region_msg *region)
{
	struct region_msg wire;
	size_t len;
	int ret = receive_message(conn, 0, "receiving the region description",
				  &len);

	if (ret)
		return ret;
	if (len != sizeof(wire)) {
		complain("region description of %zu bytes, expected %zu", len,
			 sizeof(wire));
		return -FI_EOTHER;
	}
	memcpy(&wire, conn->buf->rx[0], sizeof(wire));
	region->addr = le64toh(wire.addr);
	region->key = le64toh(wire.key);
	region->len = le64toh(wire.len);
	region->profile = le64toh(wire.profile);
	return 0;
}

/* fi_write of conn->buf->rma_out to offset 0 of the region; waits for it. */
static int write_to_region(struct connection *conn,
			   const struct region_msg *region, size_t len)
{
	int ret = check(fi_write(conn->ep, conn->buf->rma_out, len,
				 local_desc(conn), 0, region->addr,
				 region->key, &conn->tx_ctx), "fi_write");

	return ret ? ret : wait_for_transmit(conn, "RMA write to the file");
}

/* fi_read of len bytes at offset 0 of the region into conn->buf->rma_in. */
static int read_from_region(struct connection *conn,
			    const struct region_msg *region, size_t len)
{
	int ret = check(fi_read(conn->ep, conn->buf->rma_in, len,
				local_desc(conn), 0, region->addr, region->key,
				&conn->tx_ctx), "fi_read");

	return ret ? ret : wait_for_transmit(conn, "RMA read from the file");
}

/* Writes a line into the target's file by RMA, reads it back, compares. */
static int rma_round_trip(struct connection *conn,
			  const struct region_msg *region)
{
	char quoted[4 * MSG_MAX + 1];
	int len = snprintf(conn->buf->rma_out, MSG_MAX,
			   "written by the initiator with fi_write (pid %d)\n",
			   (int) getpid());
	int ret;

	if ((uint64_t) len > region->len) {
		complain("the target's region (%llu bytes) is too small",
			 (unsigned long long) region->len);
		return -FI_EOTHER;
	}
	ret = write_to_region(conn, region, (size_t) len);
	if (ret)
		return ret;
	say("RMA write of %d bytes into the target's file at offset 0: done",
	    len);
	ret = read_from_region(conn, region, (size_t) len);
	if (ret)
		return ret;
	quote(conn->buf->rma_in, (size_t) len, quoted, sizeof(quoted));
	if (memcmp(conn->buf->rma_in, conn->buf->rma_out, (size_t) len)) {
		complain("RMA read back \"%s\", which differs from what was "
			 "written", quoted);
		return -FI_EOTHER;
	}
	say("RMA read back: \"%s\" (matches)", quoted);
	return 0;
}

/*
 * Writes a second line at COMMIT_OFFSET with fi_writemsg(FI_COMMIT_COMPLETE):
 * its completion means the line is durable in the target's file.
 */
static int durable_commit(const struct fabric_res *res, struct connection *conn,
			  const struct region_msg *region)
{
	int len = snprintf(conn->buf->rma_out, MSG_MAX,
			   "committed durably with FI_COMMIT_COMPLETE (pid %d)\n",
			   (int) getpid());
	struct iovec iov = { .iov_base = conn->buf->rma_out, .iov_len = len };
	void *desc = local_desc(conn);
	struct fi_rma_iov rma = {
		.addr = region->addr + COMMIT_OFFSET, .len = len,
		.key = region->key,
	};
	struct fi_msg_rma msg = {
		.msg_iov = &iov, .desc = &desc, .iov_count = 1,
		.rma_iov = &rma, .rma_iov_count = 1, .context = &conn->tx_ctx,
	};
	int ret = check(fi_writemsg(conn->ep, &msg, FI_COMMIT_COMPLETE),
			"fi_writemsg(FI_COMMIT_COMPLETE)");

	if (!ret)
		ret = wait_for_transmit(conn, "durable commit");
	if (ret)
		return ret;
	say("durable commit of %d bytes at offset %d: complete (target "
	    "profile %s, method %s)", len, COMMIT_OFFSET,
	    fi_pmem_profile_str(res->pmem_ops->peer_profile(conn->ep, region->key)),
	    res->pmem_ops->method(conn->ep, region->key) == FI_PMEM_METHOD_AGENT ?
	    "target agent" : "none");
	return 0;
}

/* Sends a text message (without its NUL) and reports it. */
static int send_text(struct connection *conn, const char *text)
{
	int ret = send_message(conn, text, strlen(text), "sending a message");

	if (!ret)
		say("message sent: \"%s\"", text);
	return ret;
}

static int run_initiator(const struct options *opts)
{
	struct fabric_res res = { 0 };
	struct connection conn = { 0 };
	struct region_msg region;
	char hello[MSG_MAX];
	int ret;

	snprintf(hello, sizeof(hello), "hello from the initiator (pid %d)",
		 (int) getpid());
	ret = open_fabric_res(opts, &res);
	if (!ret)
		ret = connect_to_target(&res, opts, &conn);
	if (!ret)
		ret = receive_region(&conn, &region);
	if (!ret)
		say("provider: %s (FI_EP_MSG) over core %s, fabric %s, "
		    "domain %s", res.info->fabric_attr->prov_name,
		    res.core_prov, res.info->fabric_attr->name,
		    res.info->domain_attr->name);
	if (!ret)
		ret = send_text(&conn, hello);
	if (!ret)
		ret = rma_round_trip(&conn, &region);
	if (!ret)
		ret = durable_commit(&res, &conn, &region);
	if (!ret)
		ret = send_text(&conn, DONE_TEXT);
	if (!ret)
		fi_shutdown(conn.ep, 0); /* best effort; closing follows */
	close_connection(&conn);
	close_fabric_res(&res);
	return ret;
}

/* ------------------------------------------------------------------ main */

static void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s target    [-a ADDR] [-p PORT] [-f FILE]\n"
		"       %s initiator [-a ADDR] [-p PORT]\n"
		"defaults: -a %s -p %s; the target's FILE defaults to a "
		"temporary file\n", prog, prog, DEFAULT_ADDR, DEFAULT_PORT);
}

static bool valid_port(const char *port)
{
	char *end;
	long value = strtol(port, &end, 10);

	return *port && !*end && value > 0 && value <= 65535;
}

/* Parses "target|initiator [options]"; false if the command line is invalid. */
static bool parse_options(int argc, char **argv, struct options *opts)
{
	int c;

	*opts = (struct options) { .addr = DEFAULT_ADDR, .port = DEFAULT_PORT };
	if (argc < 2)
		return false;
	if (!strcmp(argv[1], "target"))
		opts->is_target = true;
	else if (strcmp(argv[1], "initiator"))
		return false;
	while ((c = getopt(argc - 1, argv + 1, "a:p:f:")) != -1) {
		if (c == 'a')
			opts->addr = optarg;
		else if (c == 'p')
			opts->port = optarg;
		else if (c == 'f' && opts->is_target)
			opts->file = optarg;
		else
			return false;
	}
	if (!valid_port(opts->port)) {
		fprintf(stderr, "invalid port \"%s\"\n", opts->port);
		return false;
	}
	return optind == argc - 1;
}

int main(int argc, char **argv)
{
	struct options opts;
	int ret;

	if (!parse_options(argc, argv, &opts)) {
		usage(argv[0]);
		return 2;
	}
	role = opts.is_target ? "[target]" : "[initiator]";
	/* Every failure has already been reported where it happened. */
	ret = opts.is_target ? run_target(&opts) : run_initiator(&opts);
	return ret ? 1 : 0;
}
