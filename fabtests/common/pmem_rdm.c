/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmem_rdm: the FI_EP_RDM set-up of the pmemverbs fabtests (see
 * pmem_common.h).  The target's endpoint takes the port (src_addr of its
 * FI_SOURCE fi_getinfo); the initiator inserts the target's address
 * (dest_addr) into its AV and sends a hello carrying its own fi_getname
 * address, which the target inserts into its AV, as upstream fabtests'
 * ft_init_av does.  Above this, a tool's code is the same on MSG and RDM:
 * every data transfer names conn->peer (FI_ADDR_UNSPEC on MSG).
 */
#include <stdio.h>
#include <string.h>

#include "pmem_common.h"

/* The hello: a tag, then the initiator's address (at most this size). */
#define PM_HELLO_TAG "pmhi"
#define PM_HELLO_TAG_LEN 4
#define PM_ADDR_MAX (PM_CTRL_MSG_MAX - PM_HELLO_TAG_LEN)

int pm_rdm_open_av(struct pm_fabric *res)
{
	struct fi_av_attr attr = { .type = FI_AV_TABLE, .count = 4 };

	return pm_check(fi_av_open(res->domain, &attr, &res->av, NULL),
			"fi_av_open");
}

/* Inserts one address into the AV as conn->peer. */
static int pm_rdm_insert(const struct pm_fabric *res, const void *addr,
			 struct pm_conn *conn)
{
	int ret = fi_av_insert(res->av, addr, 1, &conn->peer, 0, NULL);

	if (ret == 1)
		return 0;
	pm_complain("fi_av_insert of the peer's address: %s",
		    ret < 0 ? fi_strerror(-ret) : "not inserted");
	return ret < 0 ? ret : -FI_EINVAL;
}

/* Takes the hello on the posted control receive (waiting until deadline)
 * and inserts the address it carries. */
static int pm_rdm_take_hello(const struct pm_fabric *res,
			     struct pm_conn *conn, int64_t deadline)
{
	struct fi_cq_data_entry entry;
	int ret;

	do {
		ret = pm_read_one_before(conn->rx_cq, pm_now_ns() +
					 PM_POLL_INTERVAL_MS * PM_NS_PER_MS,
					 "waiting for the initiator", &entry);
	} while (ret == -FI_ETIMEDOUT && !pm_past(deadline));
	if (ret == -FI_ETIMEDOUT)
		pm_complain("no initiator within the session limit");
	if (ret)
		return ret;
	if (entry.op_context != &conn->ctrl_rx_ctx ||
	    entry.len <= PM_HELLO_TAG_LEN ||
	    memcmp(conn->ctrl_rx, PM_HELLO_TAG, PM_HELLO_TAG_LEN)) {
		pm_complain("expected the initiator's hello (%zu bytes "
			    "received)", entry.len);
		return -FI_EOTHER;
	}
	return pm_rdm_insert(res, conn->ctrl_rx + PM_HELLO_TAG_LEN, conn);
}

int pm_rdm_accept(const struct pm_fabric *res, size_t rma_max,
		  size_t tx_cq_size, struct pm_conn *conn)
{
	int ret = pm_open_conn(res, res->info, rma_max, tx_cq_size, conn);

	if (!ret)
		ret = pm_post_ctrl_recv(conn);
	if (!ret)
		ret = pm_rdm_take_hello(res, conn, pm_now_ns() +
					PM_SESSION_TIMEOUT_NS);
	if (!ret)
		ret = pm_post_ctrl_recv(conn);
	return ret;
}

/* Builds the hello: the tag, then this endpoint's fi_getname address. */
static int pm_rdm_make_hello(struct pm_conn *conn, char *hello, size_t *len)
{
	size_t addrlen = PM_ADDR_MAX;
	int ret = fi_getname(&conn->ep->fid, hello + PM_HELLO_TAG_LEN,
			     &addrlen);

	if (ret == -FI_ETOOSMALL)
		pm_complain("the endpoint's address (%zu bytes) does not fit "
			    "the %d-byte hello", addrlen, PM_ADDR_MAX);
	else
		pm_check(ret, "fi_getname");
	memcpy(hello, PM_HELLO_TAG, PM_HELLO_TAG_LEN);
	*len = PM_HELLO_TAG_LEN + addrlen;
	return ret;
}

/* Polls the transmit CQ for the hello's completion until deadline; a
 * failed send's error is returned unreported (the caller may retry). */
static ssize_t pm_rdm_hello_done(struct pm_conn *conn, int64_t deadline)
{
	struct fi_cq_data_entry entry;
	struct fi_cq_err_entry err = { 0 };
	ssize_t ret;

	do {
		ret = fi_cq_read(conn->tx_cq, &entry, 1);
		if (ret == -FI_EAGAIN)
			pm_sleep_ms(1);
	} while (ret == -FI_EAGAIN && !pm_past(deadline));
	if (ret == -FI_EAVAIL)
		return fi_cq_readerr(conn->tx_cq, &err, 0) < 0 || !err.err ?
		       -FI_EOTHER : -err.err;
	if (ret == -FI_EAGAIN)
		return -FI_ETIMEDOUT;
	return ret < 0 ? ret : 0;
}

/* True for the errors of a send to a target that is not there yet. */
static bool pm_rdm_not_there_yet(ssize_t ret)
{
	return ret == -FI_EAGAIN || ret == -FI_ECONNREFUSED ||
	       ret == -FI_EHOSTUNREACH || ret == -FI_ECONNRESET ||
	       ret == -FI_ENOTCONN;
}

/*
 * Sends the hello until it completes: a send to a target whose endpoint is
 * not open yet fails (the core refuses the connection), so it is retried
 * every PM_RETRY_INTERVAL_MS up to PM_CM_TIMEOUT_NS.
 */
static int pm_rdm_send_hello(struct pm_conn *conn, const char *hello,
			     size_t len)
{
	int64_t deadline = pm_now_ns() + PM_CM_TIMEOUT_NS;
	ssize_t ret;

	for (;;) {
		memcpy(conn->ctrl_tx, hello, len);
		ret = fi_send(conn->ep, conn->ctrl_tx, len, pm_desc(conn),
			      conn->peer, &conn->ctrl_ctx);
		if (!ret)
			ret = pm_rdm_hello_done(conn, deadline);
		else if (ret == -FI_EAGAIN) /* drives the connection's progress */
			(void) fi_cq_read(conn->tx_cq, NULL, 0);
		if (!ret || pm_past(deadline) || !pm_rdm_not_there_yet(ret))
			break;
		pm_sleep_ms(PM_RETRY_INTERVAL_MS);
	}
	if (ret)
		pm_complain("sending the hello to the target (for up to %lld "
			    "s): %s; is the target running?",
			    PM_CM_TIMEOUT_NS / PM_NS_PER_S,
			    fi_strerror((int) -ret));
	return (int) ret;
}

int pm_rdm_connect(const struct pm_fabric *res, size_t rma_max,
		   size_t tx_cq_size, struct pm_conn *conn)
{
	char hello[PM_CTRL_MSG_MAX];
	size_t len = 0;
	int ret = pm_open_conn(res, res->info, rma_max, tx_cq_size, conn);

	if (!ret)
		ret = pm_rdm_insert(res, res->info->dest_addr, conn);
	if (!ret)
		ret = pm_post_ctrl_recv(conn);
	if (!ret)
		ret = pm_rdm_make_hello(conn, hello, &len);
	if (!ret)
		ret = pm_rdm_send_hello(conn, hello, len);
	return ret;
}
