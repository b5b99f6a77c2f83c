/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmem_session: a test session's two ends (see pmem_common.h): the target's
 * file, listener, accepted connection, region and wait for the initiator's
 * end; the initiator's connection and the region it receives.
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

/* The target's region as sent on the wire, little-endian. */
struct pm_region_msg {
	uint64_t addr;
	uint64_t key;
	uint64_t len;
	uint64_t profile; /* enum fi_pmem_profile, or PM_NO_PROFILE_CODE */
};

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
	uint64_t flags = res->info->caps & FI_RMA_PMEM;

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

/* fi_pmem_lat's delivery_data writes: a completion at the target each. */
static bool pm_is_delivery_data(const struct fi_cq_data_entry *entry)
{
	return (entry->flags & FI_REMOTE_WRITE) &&
	       entry->data == PM_DELIVERY_DATA;
}

/* The next message, read from the receive CQ once the counter (if any)
 * says it is there, skipping delivery_data completions; -FI_ETIMEDOUT
 * after PM_POLL_INTERVAL_MS without one. */
static int pm_read_ctrl_msg(struct pm_conn *conn, uint64_t seen,
			    struct fi_cq_data_entry *entry)
{
	int ret = conn->rx_cntr ? pm_wait_rx_cntr(conn, seen) : 0;

	while (!ret) {
		ret = pm_read_one_before(conn->rx_cq, pm_now_ns() +
					 PM_POLL_INTERVAL_MS * PM_NS_PER_MS,
					 "waiting for \"done\"", entry);
		if (!ret && !pm_is_delivery_data(entry))
			break;
	}
	return ret;
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

	if (pm_ep_type == FI_EP_RDM)
		return pm_rdm_connect(res, rma_max, tx_cq_size, conn);
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
	if (!ret && pm_ep_type == FI_EP_MSG)
		ret = pm_listen(&res, &pep);
	if (!ret)
		pm_say("%s %s listening on %s port %s", prov,
		       pm_ep_type_name(), PM_LISTEN_ADDR, port);
	if (!ret)
		ret = pm_ep_type == FI_EP_RDM ?
		      pm_rdm_accept(&res, PM_CTRL_MSG_MAX, tx_cq_size, &conn) :
		      pm_accept(&res, PM_CTRL_MSG_MAX, tx_cq_size, &conn);
	if (!ret)
		ret = serve(opts, &res, &conn, &file);
	pm_close_conn(&conn);
	pm_close_fid(pep ? &pep->fid : NULL, "closing the passive endpoint");
	pm_close_fabric(&res);
	pm_unmap_file(&file);
	return ret;
}
