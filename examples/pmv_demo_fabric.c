/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_demo: the plumbing both sides use (see pmv_demo.c): output, time,
 * the fabric and domain, bounded waits, memory regions, a connection and its
 * messages.
 */
#include "pmv_demo.h"

/* This process's role, the prefix of every line it prints. */
const char *role = "[pmv_demo]";
/* ---------------------------------------------------------------- output */

/* Prints one line prefixed with this process's role, and flushes it. */
void say(const char *fmt, ...)
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
void complain(const char *fmt, ...)
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
int check(ssize_t ret, const char *what)
{
	if (ret < 0)
		complain("%s: %s (set FI_LOG_LEVEL=warn to see why)", what,
			 fi_strerror((int) -ret));
	return (int) (ret < 0 ? ret : 0);
}

/* Writes bytes as a C string literal body, escaping what is not printable. */
const char *quote(const char *bytes, size_t len, char *out,
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

int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int ms_until(int64_t deadline)
{
	int64_t left = deadline - now_ms();

	return left > 0 ? (int) left : 0;
}

void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long) (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/* --------------------------------------------------- fabric and domain */

bool has_mr_mode(const struct fabric_res *res, int bit)
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

int open_fabric_res(const struct options *opts, struct fabric_res *res)
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
void close_fid(struct fid *fid, const char *what)
{
	if (fid)
		check(fi_close(fid), what);
}

void close_fabric_res(struct fabric_res *res)
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
int wait_for_cm_event(struct fid_eq *eq, uint32_t want,
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
int register_buffer(const struct fabric_res *res, struct fid_ep *ep,
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
void *local_desc(const struct connection *conn)
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
int open_connection(const struct fabric_res *res, struct fi_info *info,
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
void close_connection(struct connection *conn)
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

int post_recv(struct connection *conn, int slot)
{
	return check(fi_recv(conn->ep, conn->buf->rx[slot], MSG_MAX,
			     local_desc(conn), 0, &conn->rx_ctx[slot]),
		     "fi_recv");
}

/* Waits for the message in receive slot `slot`; returns its length. */
int receive_message(struct connection *conn, int slot, const char *what,
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
int wait_for_transmit(struct connection *conn, const char *what)
{
	struct fi_cq_msg_entry entry;

	return wait_for_completion(conn->tx_cq, &conn->tx_ctx, what, &entry);
}

/* Sends len bytes through the transmit buffer and waits for completion. */
int send_message(struct connection *conn, const void *data, size_t len,
		 const char *what)
{
	int ret;

	memcpy(conn->buf->tx, data, len);
	ret = check(fi_send(conn->ep, conn->buf->tx, len, local_desc(conn), 0,
			    &conn->tx_ctx), what);
	return ret ? ret : wait_for_transmit(conn, what);
}
