/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_demo: the initiator (see pmv_demo.c): connects, sends a message,
 * writes and reads back a line, then writes one with FI_COMMIT_COMPLETE.
 */
#include "pmv_demo.h"

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

int run_initiator(const struct options *opts)
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
