/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmem_conn: one connection of the pmemverbs fabtests (see pmem_common.h):
 * bounded waits on its queues, its memory regions, its endpoint and
 * queues, control messages and RMA posts.
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
int pm_read_gap_ms;

/* The ms left before deadline, rounded up, within 0 .. most (never a
 * negative timeout: that would wait forever). */
static int pm_ms_before(int64_t deadline, int most)
{
	int64_t left = (deadline - pm_now_ns()) / PM_NS_PER_MS + 1;

	return left < 0 ? 0 : left < most ? (int) left : most;
}

int pm_read_one_before(struct fid_cq *cq, int64_t deadline, const char *what,
		       struct fi_cq_data_entry *entry)
{
	bool read_again = false;
	int left_ms;
	ssize_t ret;

	do {
		if (pm_busy_poll || pm_read_gap_ms) {
			ret = fi_cq_read(cq, entry, 1);
			/* a read after every gap, the deadline looked at after
			 * it: what came before the deadline is seen */
			read_again = ret == -FI_EAGAIN && pm_read_gap_ms &&
				     !pm_past(deadline);
			if (read_again)
				pm_sleep_ms(pm_ms_before(deadline, pm_read_gap_ms));
			continue;
		}
		left_ms = pm_ms_before(deadline, PM_POLL_INTERVAL_MS);
		ret = pm_wait_in_sread() ?
		      fi_cq_sread(cq, entry, 1, NULL, left_ms) :
		      pm_wait_read(cq, entry, left_ms);
	} while ((ret == -FI_EAGAIN || ret == -FI_EINTR) &&
		 (read_again || !pm_past(deadline)));
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

	conn->peer = FI_ADDR_UNSPEC;
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
		ret = res->av ? pm_check(fi_ep_bind(conn->ep, &res->av->fid, 0),
					 "binding the AV") :
				pm_check(fi_ep_bind(conn->ep, &res->eq->fid, 0),
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
				pm_desc(conn), conn->peer, &conn->ctrl_rx_ctx),
			"fi_recv");
}

int pm_send_ctrl(struct pm_conn *conn, const void *data, size_t len,
		 const char *what)
{
	struct fi_cq_data_entry entry;
	int ret;

	memcpy(conn->ctrl_tx, data, len);
	ret = pm_check(fi_send(conn->ep, conn->ctrl_tx, len, pm_desc(conn),
			       conn->peer, &conn->ctrl_ctx), what);
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
		.addr = conn->peer,
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
		return fi_write(conn->ep, conn->src, len, pm_desc(conn),
				conn->peer, addr, region->key, ctx);
	case PM_RMA_READ:
		return fi_read(conn->ep, conn->dst, len, pm_desc(conn),
			       conn->peer, addr, region->key, ctx);
	case PM_RMA_COMMIT:
		return pm_writemsg(conn, conn->src, len, addr, region->key, 0,
				   FI_COMMIT_COMPLETE | FI_COMPLETION, ctx);
	case PM_RMA_FLUSH:
		return pm_writemsg(conn, NULL, 0, region->addr, region->key, 0,
				   FI_COMMIT_COMPLETE | FI_COMPLETION, ctx);
	case PM_RMA_DELIVERY:
		return pm_writemsg(conn, conn->src, len, addr, region->key, 0,
				   FI_DELIVERY_COMPLETE | FI_COMPLETION, ctx);
	case PM_RMA_DELIVERY_DATA:
		return pm_writemsg(conn, conn->src, len, addr, region->key,
				   PM_DELIVERY_DATA, FI_DELIVERY_COMPLETE |
				   FI_REMOTE_CQ_DATA | FI_COMPLETION, ctx);
	}
	return -FI_EINVAL;
}
