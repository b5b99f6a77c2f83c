/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmem_common: code shared by the pmemverbs fabtests; see pmem_common.h.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pmem_common.h"

const char *pm_role = "[fi_pmem]";

/* The target's region as sent on the wire, little-endian. */
struct pm_region_msg {
	uint64_t addr;
	uint64_t key;
	uint64_t len;
	uint64_t profile; /* enum fi_pmem_profile, or PM_NO_PROFILE_CODE */
};

/* ---------------------------------------------------------------- output */

void pm_say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "%s ", pm_role);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
}

void pm_complain(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fflush(stdout);
	fprintf(stderr, "%s error: ", pm_role);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
}

int pm_check(ssize_t ret, const char *what)
{
	if (ret < 0)
		pm_complain("%s: %s", what, fi_strerror((int) -ret));
	return (int) (ret < 0 ? ret : 0);
}

/* ------------------------------------------------------------------ time */

int64_t pm_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * PM_NS_PER_S + ts.tv_nsec;
}

bool pm_past(int64_t deadline)
{
	return pm_now_ns() >= deadline;
}

void pm_sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long) (ms % 1000) * PM_NS_PER_MS };

	nanosleep(&ts, NULL);
}

/* --------------------------------------------------------------- options */

bool pm_parse_long(const char *text, long min, long max, long *out)
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

bool pm_parse_sizes(char *list, size_t min, size_t max, size_t *sizes,
		    int *nsizes)
{
	char *save = NULL, *item;
	long size;

	*nsizes = 0;
	for (item = strtok_r(list, ",", &save); item;
	     item = strtok_r(NULL, ",", &save)) {
		if (*nsizes == PM_MAX_SIZES ||
		    !pm_parse_long(item, (long) min, (long) max, &size))
			return false;
		sizes[(*nsizes)++] = (size_t) size;
	}
	return *nsizes > 0;
}

bool pm_parse_ep_type(const char *text, enum fi_ep_type *type)
{
	if (!strcmp(text, "msg"))
		*type = FI_EP_MSG;
	else if (!strcmp(text, "rdm"))
		*type = FI_EP_RDM;
	else {
		fprintf(stderr, "invalid endpoint type \"%s\" (msg or rdm)\n",
			text);
		return false;
	}
	return true;
}

bool pm_is_pmemverbs(const char *prov)
{
	return !strcmp(prov, PM_PROVIDER);
}

int pm_check_ep_type(const char *prov, enum fi_ep_type type)
{
	struct fi_info *hints, *info = NULL;
	int ret;

	if (type == FI_EP_MSG)
		return PM_EXIT_PASS;
	hints = fi_allocinfo();
	if (hints) {
		hints->caps = FI_RMA | FI_RMA_PMEM;
		hints->ep_attr->type = FI_EP_RDM;
		hints->fabric_attr->prov_name = strdup(prov);
	}
	ret = hints && hints->fabric_attr->prov_name ?
	      fi_getinfo(PM_FI_VERSION, NULL, NULL, 0, hints, &info) :
	      -FI_ENOMEM;
	fi_freeinfo(hints);
	fi_freeinfo(info);
	printf("FI_EP_RDM: unsupported: durable commits (FI_RMA_PMEM, "
	       "FI_COMMIT_COMPLETE) need connected FI_EP_MSG endpoints; "
	       "fi_getinfo(%s, FI_EP_RDM, FI_RMA_PMEM): %s\n", prov,
	       ret ? fi_strerror(-ret) : "offered, but this test is MSG only");
	fflush(stdout);
	return PM_EXIT_SKIP;
}

/* ------------------------------------------------------- fabric, domain */

bool pm_has_mr_mode(const struct pm_fabric *res, int bit)
{
	return (res->info->domain_attr->mr_mode & bit) != 0;
}

bool pm_core_pmem;

/* MSG endpoint hints; FI_RMA_PMEM for pmemverbs, and for another provider
 * (a core's own FI_COMMIT_COMPLETE) when pm_core_pmem is set. */
static struct fi_info *pm_hints(const char *prov)
{
	struct fi_info *hints = fi_allocinfo();

	if (!hints)
		return NULL;
	hints->caps = FI_MSG | FI_RMA | (pm_is_pmemverbs(prov) ||
					 pm_core_pmem ? FI_RMA_PMEM : 0);
	hints->mode = FI_CONTEXT | FI_CONTEXT2;
	hints->ep_attr->type = FI_EP_MSG;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				      FI_MR_ALLOCATED | FI_MR_PROV_KEY |
				      FI_MR_ENDPOINT;
	hints->fabric_attr->prov_name = strdup(prov);
	if (!hints->fabric_attr->prov_name) {
		fi_freeinfo(hints);
		return NULL;
	}
	return hints;
}

/* fi_getinfo: the listening address on the target, the server's else. */
static int pm_find_provider(const char *prov, const char *server,
			    const char *port, struct fi_info **info)
{
	const char *node = server ? server : PM_LISTEN_ADDR;
	uint64_t flags = server ? 0 : FI_SOURCE;
	struct fi_info *hints = pm_hints(prov);
	int ret;

	if (!hints)
		return pm_check(-FI_ENOMEM, "allocating fi_info hints");
	ret = fi_getinfo(PM_FI_VERSION, node, port, flags, hints, info);
	fi_freeinfo(hints);
	if (ret)
		pm_complain("fi_getinfo found no %s FI_EP_MSG endpoint with RMA "
			    "for %s port %s: %s (for pmemverbs, does "
			    "FI_PROVIDER_PATH hold libpmemverbs-fi.so? set "
			    "FI_LOG_LEVEL=warn to see why)",
			    prov, node, port, fi_strerror(-ret));
	return ret;
}

int pm_open_fabric(const char *prov, const char *server, const char *port,
		   struct pm_fabric *res)
{
	struct fi_eq_attr eq_attr = { .size = 16, .wait_obj = FI_WAIT_UNSPEC };
	int ret = pm_find_provider(prov, server, port, &res->info);

	if (!ret)
		ret = pm_check(fi_fabric(res->info->fabric_attr, &res->fabric,
					 NULL), "fi_fabric");
	if (!ret)
		ret = pm_check(fi_eq_open(res->fabric, &eq_attr, &res->eq,
					  NULL), "fi_eq_open");
	if (!ret)
		pm_wait_set_fabric(res->fabric, res->eq);
	if (!ret)
		ret = pm_check(fi_domain(res->fabric, res->info, &res->domain,
					 NULL), "fi_domain");
	if (!ret && pm_is_pmemverbs(prov))
		ret = pm_check(fi_open_ops(&res->domain->fid,
					   FI_PMEM_DOMAIN_OPS, 0,
					   (void **) &res->pmem_ops, NULL),
			       "fi_open_ops(" FI_PMEM_DOMAIN_OPS ")");
	return ret;
}

void pm_close_fid(struct fid *fid, const char *what)
{
	if (fid)
		pm_check(fi_close(fid), what);
}

void pm_close_fabric(struct pm_fabric *res)
{
	pm_close_fid(res->domain ? &res->domain->fid : NULL,
		     "closing the domain");
	pm_close_fid(res->eq ? &res->eq->fid : NULL, "closing the EQ");
	pm_close_fid(res->fabric ? &res->fabric->fid : NULL,
		     "closing the fabric");
	fi_freeinfo(res->info);
	memset(res, 0, sizeof(*res));
}

/* ------------------------------------------------------ bounded waiting */

int pm_report_cq_error(struct fid_cq *cq, const char *what)
{
	struct fi_cq_err_entry err = { 0 };
	char prov_msg[256];
	ssize_t ret = fi_cq_readerr(cq, &err, 0);

	if (ret < 0)
		return pm_check(ret, "fi_cq_readerr");
	pm_complain("%s: %s (provider: %s)", what, fi_strerror(err.err),
		    fi_cq_strerror(cq, err.prov_errno, err.err_data, prov_msg,
				   sizeof(prov_msg)));
	return err.err ? -err.err : -FI_EOTHER;
}

int pm_report_eq_error(struct fid_eq *eq, const char *what, int quiet_err)
{
	struct fi_eq_err_entry err = { 0 };
	char prov_msg[256];
	ssize_t ret = fi_eq_readerr(eq, &err, 0);

	if (ret < 0)
		return pm_check(ret, "fi_eq_readerr");
	if (err.err != quiet_err)
		pm_complain("%s: %s (provider: %s)", what, fi_strerror(err.err),
			    fi_eq_strerror(eq, err.prov_errno, err.err_data,
					   prov_msg, sizeof(prov_msg)));
	return err.err ? -err.err : -FI_EOTHER;
}

bool pm_busy_poll;
bool pm_wait_on_cntr;

int pm_read_one_before(struct fid_cq *cq, int64_t deadline, const char *what,
		       struct fi_cq_data_entry *entry)
{
	int64_t left_ms;
	ssize_t ret;

	do {
		if (pm_busy_poll) {
			ret = fi_cq_read(cq, entry, 1);
			continue;
		}
		/* never a negative timeout: that would wait forever */
		left_ms = (deadline - pm_now_ns()) / PM_NS_PER_MS + 1;
		left_ms = left_ms < 0 ? 0 : left_ms < PM_POLL_INTERVAL_MS ?
			  left_ms : PM_POLL_INTERVAL_MS;
		ret = pm_wait_in_sread() ?
		      fi_cq_sread(cq, entry, 1, NULL, (int) left_ms) :
		      pm_wait_read(cq, entry, (int) left_ms);
	} while ((ret == -FI_EAGAIN || ret == -FI_EINTR) && !pm_past(deadline));
	if (ret == -FI_EAGAIN || ret == -FI_EINTR)
		return -FI_ETIMEDOUT;
	if (ret == -FI_EAVAIL)
		return pm_report_cq_error(cq, what);
	return ret < 0 ? pm_check(ret, what) : 0;
}

int pm_wait_for_one(struct fid_cq *cq, void *ctx, int64_t deadline,
		    const char *what, struct fi_cq_data_entry *entry)
{
	int ret = pm_read_one_before(cq, deadline, what, entry);

	if (ret == -FI_ETIMEDOUT)
		pm_complain("%s: timed out", what);
	if (!ret && entry->op_context != ctx) {
		pm_complain("%s: completion of an unexpected operation", what);
		ret = -FI_EOTHER;
	}
	return ret;
}

int pm_wait_for_cm_event(struct fid_eq *eq, uint32_t want, int64_t timeout_ns,
			 const char *what, struct fi_eq_cm_entry *entry,
			 int quiet_err)
{
	int64_t deadline = pm_now_ns() + timeout_ns;
	uint32_t event;
	ssize_t ret;

	do {
		ret = fi_eq_sread(eq, &event, entry, sizeof(*entry),
				  PM_POLL_INTERVAL_MS, 0);
	} while ((ret == -FI_EAGAIN || ret == -FI_EINTR) && !pm_past(deadline));
	if (ret == -FI_EAGAIN || ret == -FI_EINTR) {
		pm_complain("%s: timed out", what);
		return -FI_ETIMEDOUT;
	}
	if (ret == -FI_EAVAIL)
		return pm_report_eq_error(eq, what, quiet_err);
	if (ret < 0)
		return pm_check(ret, what);
	if (event != want) {
		pm_complain("%s: unexpected connection event %u", what, event);
		if (event == FI_CONNREQ)
			fi_freeinfo(entry->info);
		return -FI_EOTHER;
	}
	return 0;
}

/* ------------------------------------------------------ memory regions */

int pm_register(const struct pm_fabric *res, struct fid_ep *ep, void *buf,
		size_t len, uint64_t access, uint64_t requested_key,
		uint64_t flags, struct fid_mr **mr)
{
	int ret = pm_check(fi_mr_reg(res->domain, buf, len, access, 0,
				     requested_key, flags, mr, NULL),
			   "fi_mr_reg");

	if (ret || !pm_has_mr_mode(res, FI_MR_ENDPOINT))
		return ret;
	ret = pm_check(fi_mr_bind(*mr, &ep->fid, 0), "fi_mr_bind");
	if (!ret)
		ret = pm_check(fi_mr_enable(*mr), "fi_mr_enable");
	return ret;
}

void *pm_desc(const struct pm_conn *conn)
{
	return conn->local_mr ? fi_mr_desc(conn->local_mr) : NULL;
}

/* Carves control slots and RMA source and sink of rma_max bytes each. */
static int pm_alloc_local(struct pm_conn *conn, size_t rma_max)
{
	size_t rma_len = pm_round_up(rma_max, PM_LINE_SIZE);

	conn->len = 2 * PM_CTRL_MSG_MAX + 2 * rma_len;
	if (posix_memalign((void **) &conn->base, 4096, conn->len)) {
		conn->base = NULL;
		return pm_check(-FI_ENOMEM, "allocating local buffers");
	}
	memset(conn->base, 0xa5, conn->len);
	conn->ctrl_tx = conn->base;
	conn->ctrl_rx = conn->base + PM_CTRL_MSG_MAX;
	conn->src = conn->ctrl_rx + PM_CTRL_MSG_MAX;
	conn->dst = conn->src + rma_len;
	conn->rma_max = rma_max;
	return 0;
}

/* ---------------------------------------------------------- connection */

static int pm_open_cq(const struct pm_fabric *res, size_t size,
		      struct fid_cq **cq)
{
	struct fi_cq_attr attr = {
		.size = size,
		.format = FI_CQ_FORMAT_DATA,
		.wait_obj = pm_wait_cq_obj(), /* FI_WAIT_UNSPEC but with -w */
	};

	return pm_check(fi_cq_open(res->domain, &attr, cq, NULL),
			"fi_cq_open");
}

/* Entries of the receive CQ: control messages and FI_IMMED completions. */
#define PM_RX_CQ_SIZE 256

/* Opens a FI_RECV counter with a wait object and binds it to conn->ep. */
static int pm_open_rx_cntr(const struct pm_fabric *res, struct pm_conn *conn)
{
	struct fi_cntr_attr attr = { .events = FI_CNTR_EVENTS_COMP,
				     .wait_obj = FI_WAIT_UNSPEC };
	int ret = pm_check(fi_cntr_open(res->domain, &attr, &conn->rx_cntr,
					NULL), "fi_cntr_open");

	return ret ? ret : pm_check(fi_ep_bind(conn->ep, &conn->rx_cntr->fid,
					       FI_RECV),
				    "binding the FI_RECV counter");
}

int pm_open_conn(const struct pm_fabric *res, struct fi_info *info,
		 size_t rma_max, size_t tx_cq_size, struct pm_conn *conn)
{
	int ret = pm_alloc_local(conn, rma_max);

	if (!ret)
		ret = pm_check(fi_endpoint(res->domain, info, &conn->ep, NULL),
			       "fi_endpoint");
	if (!ret)
		ret = pm_open_cq(res, tx_cq_size, &conn->tx_cq);
	if (!ret)
		ret = pm_open_cq(res, PM_RX_CQ_SIZE, &conn->rx_cq);
	if (!ret)
		ret = pm_check(fi_ep_bind(conn->ep, &conn->tx_cq->fid,
					  FI_TRANSMIT),
			       "binding the transmit CQ");
	if (!ret)
		ret = pm_check(fi_ep_bind(conn->ep, &conn->rx_cq->fid, FI_RECV),
			       "binding the receive CQ");
	if (!ret)
		ret = pm_check(fi_ep_bind(conn->ep, &res->eq->fid, 0),
			       "binding the EQ");
	if (!ret && pm_wait_on_cntr)
		ret = pm_open_rx_cntr(res, conn);
	if (!ret)
		ret = pm_check(fi_enable(conn->ep), "fi_enable");
	if (!ret && pm_has_mr_mode(res, FI_MR_LOCAL))
		ret = pm_register(res, conn->ep, conn->base, conn->len,
				  FI_SEND | FI_RECV | FI_READ | FI_WRITE,
				  PM_LOCAL_MR_KEY, 0, &conn->local_mr);
	return ret;
}

void pm_close_conn(struct pm_conn *conn)
{
	pm_close_fid(conn->local_mr ? &conn->local_mr->fid : NULL,
		     "closing the local memory region");
	pm_close_fid(conn->ep ? &conn->ep->fid : NULL, "closing the endpoint");
	pm_close_fid(conn->tx_cq ? &conn->tx_cq->fid : NULL, "closing a CQ");
	pm_close_fid(conn->rx_cq ? &conn->rx_cq->fid : NULL, "closing a CQ");
	pm_close_fid(conn->rx_cntr ? &conn->rx_cntr->fid : NULL,
		     "closing the counter");
	free(conn->base);
	memset(conn, 0, sizeof(*conn));
}

int pm_post_ctrl_recv(struct pm_conn *conn)
{
	return pm_check(fi_recv(conn->ep, conn->ctrl_rx, PM_CTRL_MSG_MAX,
				pm_desc(conn), 0, &conn->ctrl_rx_ctx),
			"fi_recv");
}

int pm_send_ctrl(struct pm_conn *conn, const void *data, size_t len,
		 const char *what)
{
	struct fi_cq_data_entry entry;
	int ret;

	memcpy(conn->ctrl_tx, data, len);
	ret = pm_check(fi_send(conn->ep, conn->ctrl_tx, len, pm_desc(conn), 0,
			       &conn->ctrl_ctx), what);
	return ret ? ret : pm_wait_for_one(conn->tx_cq, &conn->ctrl_ctx,
					   pm_now_ns() + PM_OP_TIMEOUT_NS,
					   what, &entry);
}

int pm_recv_ctrl(struct pm_conn *conn, int64_t deadline, const char *what,
		 void *out, size_t len)
{
	struct fi_cq_data_entry entry;
	int ret = pm_wait_for_one(conn->rx_cq, &conn->ctrl_rx_ctx, deadline,
				  what, &entry);

	if (ret)
		return ret;
	if (entry.len != len) {
		pm_complain("%s: message of %zu bytes, expected %zu", what,
			    entry.len, len);
		return -FI_EOTHER;
	}
	memcpy(out, conn->ctrl_rx, len);
	return pm_post_ctrl_recv(conn);
}

/* ---------------------------------------------------------------- target */

/* Opens path, or creates a temporary file in $TMPDIR or /tmp. */
static void pm_open_file(const char *path, const char *prefix,
			 struct pm_file *file)
{
	const char *dir = getenv("TMPDIR");

	if (path) {
		snprintf(file->path, sizeof(file->path), "%s", path);
		file->fd = open(path, O_RDWR | O_CREAT, 0644);
		return;
	}
	snprintf(file->path, sizeof(file->path), "%s/%s.XXXXXX",
		 dir && *dir ? dir : "/tmp", prefix);
	file->fd = mkstemp(file->path);
	file->remove_at_exit = file->fd >= 0;
}

/* Writes every page once (keeping its bytes) and syncs the mapping. */
static int pm_prefault(struct pm_file *file)
{
	volatile char *p = (volatile char *) file->map;
	size_t page = (size_t) sysconf(_SC_PAGESIZE), off;

	for (off = 0; off < file->len; off += page)
		p[off] = p[off];
	if (msync(file->map, file->len, MS_SYNC)) {
		pm_complain("msync of %s: %s", file->path, strerror(errno));
		return -FI_EIO;
	}
	return 0;
}

int pm_map_file(const char *path, const char *prefix, size_t len, bool fresh,
		struct pm_file *file)
{
	struct stat st;

	pm_open_file(path, prefix, file);
	if (file->fd < 0 || (fresh && ftruncate(file->fd, 0)) ||
	    fstat(file->fd, &st) ||
	    ((size_t) st.st_size < len && ftruncate(file->fd, (off_t) len))) {
		pm_complain("preparing %s: %s", file->path, strerror(errno));
		return -FI_EIO;
	}
	/* MAP_SYNC where the file takes it (fsdax): CPU flushes then suffice */
	file->map = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_SHARED_VALIDATE | MAP_SYNC, file->fd, 0);
	if (file->map == MAP_FAILED)
		file->map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED,
				 file->fd, 0);
	if (file->map == MAP_FAILED) {
		file->map = NULL;
		pm_complain("mmap of %s: %s", file->path, strerror(errno));
		return -FI_EIO;
	}
	file->len = len;
	return pm_prefault(file);
}

void pm_unmap_file(struct pm_file *file)
{
	if (file->map)
		munmap(file->map, file->len);
	if (file->fd >= 0)
		close(file->fd);
	if (file->remove_at_exit)
		unlink(file->path);
	file->map = NULL;
	file->fd = -1;
	file->remove_at_exit = false;
}

int pm_listen(const struct pm_fabric *res, struct fid_pep **pep)
{
	int ret = pm_check(fi_passive_ep(res->fabric, res->info, pep, NULL),
			   "fi_passive_ep");

	if (!ret)
		ret = pm_check(fi_pep_bind(*pep, &res->eq->fid, 0),
			       "binding the passive endpoint to the EQ");
	if (!ret)
		ret = pm_check(fi_listen(*pep), "fi_listen");
	return ret;
}

int pm_accept(const struct pm_fabric *res, size_t rma_max, size_t tx_cq_size,
	      struct pm_conn *conn)
{
	struct fi_eq_cm_entry entry;
	int ret = pm_wait_for_cm_event(res->eq, FI_CONNREQ,
				       PM_SESSION_TIMEOUT_NS,
				       "waiting for the initiator", &entry, 0);

	if (ret)
		return ret;
	ret = pm_open_conn(res, entry.info, rma_max, tx_cq_size, conn);
	if (!ret)
		ret = pm_post_ctrl_recv(conn);
	if (!ret)
		ret = pm_check(fi_accept(conn->ep, NULL, 0), "fi_accept");
	fi_freeinfo(entry.info);
	if (!ret)
		ret = pm_wait_for_cm_event(res->eq, FI_CONNECTED,
					   PM_CM_TIMEOUT_NS,
					   "establishing the connection",
					   &entry, 0);
	return ret;
}

int pm_register_region(const struct pm_fabric *res, struct pm_conn *conn,
		       const struct pm_file *file, struct fid_mr **mr)
{
	uint64_t flags = res->pmem_ops || pm_core_pmem ? FI_RMA_PMEM : 0;

	return pm_register(res, conn->ep, file->map, file->len,
			   FI_REMOTE_WRITE | FI_REMOTE_READ, PM_REGION_MR_KEY,
			   flags, mr);
}

uint64_t pm_region_profile(const struct pm_fabric *res, struct fid_mr *mr)
{
	return res->pmem_ops ? (uint64_t) res->pmem_ops->mr_profile(mr) :
			       PM_NO_PROFILE_CODE;
}

const char *pm_commit_method(const struct pm_fabric *res, struct fid_ep *ep,
			     uint64_t key)
{
	return res->pmem_ops ?
	       fi_pmem_method_str(res->pmem_ops->method(ep, key)) :
	       PM_NO_PROFILE;
}

const char *pm_profile_name(uint64_t code)
{
	return code == PM_NO_PROFILE_CODE ? PM_NO_PROFILE :
	       fi_pmem_profile_str((enum fi_pmem_profile) code);
}

int pm_send_region(const struct pm_fabric *res, struct pm_conn *conn,
		   struct fid_mr *mr, const struct pm_file *file)
{
	uint64_t addr = pm_has_mr_mode(res, FI_MR_VIRT_ADDR) ?
			(uint64_t) (uintptr_t) file->map : 0;
	uint64_t profile = pm_region_profile(res, mr);
	struct pm_region_msg msg = {
		.addr = htole64(addr),
		.key = htole64(fi_mr_key(mr)),
		.len = htole64(file->len),
		.profile = htole64(profile),
	};

	pm_say("region: %s, %zu bytes, key 0x%" PRIx64 ", profile %s",
	       file->path, file->len, fi_mr_key(mr), pm_profile_name(profile));
	return pm_send_ctrl(conn, &msg, sizeof(msg), "sending the region");
}

bool pm_initiator_gone(const struct pm_fabric *res)
{
	struct fi_eq_cm_entry entry;
	uint32_t event;
	ssize_t ret = fi_eq_read(res->eq, &event, &entry, sizeof(entry), 0);

	if (ret == -FI_EAVAIL)
		pm_report_eq_error(res->eq, "connection", 0);
	return ret == -FI_EAVAIL || (ret >= 0 && event == FI_SHUTDOWN);
}

/*
 * Waits up to PM_POLL_INTERVAL_MS for conn's FI_RECV counter to pass
 * seen: busy in fi_cntr_read, or in fi_cntr_wait; 0 once it has.
 */
static int pm_wait_rx_cntr(struct pm_conn *conn, uint64_t seen)
{
	int64_t deadline = pm_now_ns() + PM_POLL_INTERVAL_MS * PM_NS_PER_MS;
	int ret;

	if (!pm_busy_poll) {
		ret = fi_cntr_wait(conn->rx_cntr, seen + 1, PM_POLL_INTERVAL_MS);
		return ret == -FI_ETIMEDOUT || ret == -FI_EAGAIN ?
		       -FI_ETIMEDOUT : pm_check(ret, "fi_cntr_wait");
	}
	while (fi_cntr_read(conn->rx_cntr) <= seen)
		if (pm_past(deadline))
			return -FI_ETIMEDOUT;
	return 0;
}

/* The next message, read from the receive CQ once the counter (if any)
 * says it is there; -FI_ETIMEDOUT after PM_POLL_INTERVAL_MS. */
static int pm_read_ctrl_msg(struct pm_conn *conn, uint64_t seen,
			    struct fi_cq_data_entry *entry)
{
	int ret = conn->rx_cntr ? pm_wait_rx_cntr(conn, seen) : 0;

	return ret ? ret : pm_read_one_before(conn->rx_cq,
					      pm_now_ns() + PM_POLL_INTERVAL_MS *
							    PM_NS_PER_MS,
					      "waiting for \"done\"", entry);
}

int pm_wait_for_done(const struct pm_fabric *res, struct pm_conn *conn)
{
	int64_t deadline = pm_now_ns() + PM_SESSION_TIMEOUT_NS;
	uint64_t seen = conn->rx_cntr ? fi_cntr_read(conn->rx_cntr) : 0;
	struct fi_cq_data_entry entry;
	int ret;

	do {
		ret = pm_read_ctrl_msg(conn, seen, &entry);
		if (ret == -FI_ETIMEDOUT && pm_initiator_gone(res)) {
			pm_complain("the initiator left without \"done\"");
			return -FI_ECONNRESET;
		}
	} while (ret == -FI_ETIMEDOUT && !pm_past(deadline));
	if (ret == -FI_ETIMEDOUT)
		pm_complain("no \"done\" from the initiator within the session "
			    "limit of %lld s", PM_SESSION_TIMEOUT_NS / PM_NS_PER_S);
	if (!ret && (entry.op_context != &conn->ctrl_rx_ctx ||
		     entry.len != strlen(PM_DONE_TEXT) ||
		     memcmp(conn->ctrl_rx, PM_DONE_TEXT, entry.len))) {
		pm_complain("expected \"%s\" from the initiator", PM_DONE_TEXT);
		ret = -FI_EOTHER;
	}
	return ret;
}

void pm_report_counters(const struct pm_fabric *res, struct fid_ep *ep)
{
	struct fi_pmem_ep_counters c;

	if (!res->pmem_ops ||
	    pm_check(res->pmem_ops->ep_counters(ep, &c),
		     "reading the pmemverbs counters"))
		return;
	pm_say("pmemverbs counters: %" PRIu64 " commits, %" PRIu64 " commit "
	       "errors, %" PRIu64 " requests sent, %" PRIu64 " served, %" PRIu64
	       " bytes persisted", c.commits, c.commit_errors, c.requests_sent,
	       c.requests_served, c.bytes_persisted);
}

/* ------------------------------------------------------------- initiator */

/* One connection attempt; -FI_ECONNREFUSED (unreported) if not listening. */
static int pm_try_connect(const struct pm_fabric *res, size_t rma_max,
			  size_t tx_cq_size, struct pm_conn *conn)
{
	struct fi_eq_cm_entry entry;
	int ret = pm_open_conn(res, res->info, rma_max, tx_cq_size, conn);

	if (!ret)
		ret = pm_post_ctrl_recv(conn);
	if (!ret) {
		ret = fi_connect(conn->ep, res->info->dest_addr, NULL, 0);
		if (ret != -FI_ECONNREFUSED)
			ret = pm_check(ret, "fi_connect");
	}
	if (!ret)
		ret = pm_wait_for_cm_event(res->eq, FI_CONNECTED,
					   PM_CM_TIMEOUT_NS,
					   "connecting to the target", &entry,
					   FI_ECONNREFUSED);
	return ret;
}

int pm_connect(const struct pm_fabric *res, const char *server,
	       const char *port, size_t rma_max, size_t tx_cq_size,
	       struct pm_conn *conn)
{
	int64_t deadline = pm_now_ns() + PM_CM_TIMEOUT_NS;
	int ret;

	while ((ret = pm_try_connect(res, rma_max, tx_cq_size, conn)) ==
	       -FI_ECONNREFUSED) {
		pm_close_conn(conn);
		if (pm_past(deadline)) {
			pm_complain("%s port %s refused the connection for %lld "
				    "s; is the target running?", server, port,
				    PM_CM_TIMEOUT_NS / PM_NS_PER_S);
			return ret;
		}
		pm_sleep_ms(PM_RETRY_INTERVAL_MS);
	}
	return ret;
}

int pm_receive_region(struct pm_conn *conn, struct pm_region *region)
{
	struct fi_cq_data_entry entry;
	struct pm_region_msg wire;
	int ret = pm_wait_for_one(conn->rx_cq, &conn->ctrl_rx_ctx,
				  pm_now_ns() + PM_CM_TIMEOUT_NS,
				  "receiving the region", &entry);

	if (ret)
		return ret;
	if (entry.len != sizeof(wire)) {
		pm_complain("region message of %zu bytes, expected %zu",
			    entry.len, sizeof(wire));
		return -FI_EOTHER;
	}
	memcpy(&wire, conn->ctrl_rx, sizeof(wire));
	region->addr = le64toh(wire.addr);
	region->key = le64toh(wire.key);
	region->len = le64toh(wire.len);
	region->profile_code = le64toh(wire.profile);
	region->profile = pm_profile_name(region->profile_code);
	return 0;
}

/* ------------------------------------------------------------------- RMA */

ssize_t pm_writemsg(struct pm_conn *conn, const void *buf, size_t len,
		    uint64_t addr, uint64_t key, uint64_t data,
		    uint64_t flags, void *ctx)
{
	struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };
	void *desc = pm_desc(conn);
	struct fi_rma_iov rma = { .addr = addr, .len = len, .key = key };
	struct fi_msg_rma msg = {
		.msg_iov = len ? &iov : NULL,
		.desc = len ? &desc : NULL,
		.iov_count = len ? 1 : 0,
		.rma_iov = &rma,
		.rma_iov_count = 1,
		.context = ctx,
		.data = data,
	};

	return fi_writemsg(conn->ep, &msg, flags);
}

ssize_t pm_post_rma(struct pm_conn *conn, const struct pm_region *region,
		    enum pm_rma_op op, size_t len, uint64_t offset, void *ctx)
{
	uint64_t addr = region->addr + offset;

	switch (op) {
	case PM_RMA_WRITE:
		return fi_write(conn->ep, conn->src, len, pm_desc(conn), 0,
				addr, region->key, ctx);
	case PM_RMA_READ:
		return fi_read(conn->ep, conn->dst, len, pm_desc(conn), 0,
			       addr, region->key, ctx);
	case PM_RMA_COMMIT:
		return pm_writemsg(conn, conn->src, len, addr, region->key, 0,
				   FI_COMMIT_COMPLETE | FI_COMPLETION, ctx);
	case PM_RMA_FLUSH:
		return pm_writemsg(conn, NULL, 0, region->addr, region->key, 0,
				   FI_COMMIT_COMPLETE | FI_COMPLETION, ctx);
	case PM_RMA_DELIVERY:
		return pm_writemsg(conn, conn->src, len, addr, region->key, 0,
				   FI_DELIVERY_COMPLETE | FI_COMPLETION, ctx);
	}
	return -FI_EINVAL;
}

/* ----------------------------------------------------------------- stats */

static int pm_compare_int64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *) a, y = *(const int64_t *) b;

	return (x > y) - (x < y);
}

/* Nearest-rank percentile q (0 < q <= 1) of n sorted samples. */
static int64_t pm_percentile(const int64_t *sorted, long n, double q)
{
	long rank = (long) ceil(q * (double) n);

	return sorted[rank < 1 ? 0 : rank - 1];
}

void pm_summarize(int64_t *samples, long n, struct pm_stats *s)
{
	double sum = 0;
	long i;

	qsort(samples, (size_t) n, sizeof(*samples), pm_compare_int64);
	for (i = 0; i < n; i++)
		sum += (double) samples[i];
	s->p50_us = pm_percentile(samples, n, 0.50) / 1e3;
	s->p99_us = pm_percentile(samples, n, 0.99) / 1e3;
	s->max_us = samples[n - 1] / 1e3;
	s->mean_us = sum / (double) n / 1e3;
}

int pm_serve_region(const struct pm_fabric *res, struct pm_conn *conn,
		    const struct pm_file *file)
{
	struct fid_mr *mr = NULL;
	int ret = pm_register_region(res, conn, file, &mr);

	if (!ret)
		ret = pm_send_region(res, conn, mr, file);
	if (!ret)
		ret = pm_wait_for_done(res, conn);
	if (!ret)
		pm_report_counters(res, conn->ep);
	pm_close_fid(mr ? &mr->fid : NULL, "closing the region");
	return ret;
}

int pm_run_target(const char *prov, const char *port, size_t tx_cq_size,
		  pm_serve_fn serve, const void *opts)
{
	struct pm_file file = PM_FILE_INIT;
	struct pm_fabric res = { 0 };
	struct pm_conn conn = { 0 };
	struct fid_pep *pep = NULL;
	int ret;

	ret = pm_open_fabric(prov, NULL, port, &res);
	if (!ret)
		ret = pm_listen(&res, &pep);
	if (!ret)
		pm_say("%s listening on %s port %s", prov, PM_LISTEN_ADDR, port);
	if (!ret)
		ret = pm_accept(&res, PM_CTRL_MSG_MAX, tx_cq_size, &conn);
	if (!ret)
		ret = serve(opts, &res, &conn, &file);
	pm_close_conn(&conn);
	pm_close_fid(pep ? &pep->fid : NULL, "closing the passive endpoint");
	pm_close_fabric(&res);
	pm_unmap_file(&file);
	return ret;
}
