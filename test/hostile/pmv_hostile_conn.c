/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_hostile_conn.c - the hostile client's connections and its
 * raw access to the target's inbox.
 */
#include "pmv_hostile.h"

/* ------------------------------------------------------------------ */
/* Hostile client: connections and raw access                         */
/* ------------------------------------------------------------------ */

struct hostile_client g_x;

/* Opens the tcp domain and registers the hostile's own inbox. */
void hostile_open(void)
{
	g_x.info = query_info("tcp", false, 0);
	if (strcmp(g_x.info->fabric_attr->prov_name, "tcp"))
		die("provider %s, not the plain tcp core",
		    g_x.info->fabric_attr->prov_name);
	CHECK(fi_fabric(g_x.info->fabric_attr, &g_x.fabric, NULL));
	CHECK(fi_domain(g_x.fabric, g_x.info, &g_x.domain, NULL));
	g_x.inbox_size = PMV_INBOX_SIZE(OWN_SLOT_SIZE);
	if (posix_memalign((void **)&g_x.inbox, 4096, g_x.inbox_size))
		die("out of memory");
	memset(g_x.inbox, 0, g_x.inbox_size);
	if (getrandom(&g_x.inbox_key, sizeof(g_x.inbox_key), 0) !=
	    sizeof(g_x.inbox_key))
		g_x.inbox_key = mix64((uint64_t)now_ms());
	CHECK(fi_mr_reg(g_x.domain, g_x.inbox, g_x.inbox_size,
			FI_REMOTE_WRITE | FI_REMOTE_READ, 0, g_x.inbox_key, 0,
			&g_x.inbox_mr, NULL));
	g_x.inbox_key = fi_mr_key(g_x.inbox_mr);
	g_x.inbox_addr = (g_x.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ?
			 (uint64_t)(uintptr_t)g_x.inbox : 0;
}

const char *const k_hdr_names[] = {
	"good", "bogus-inbox", "no-inbox", "tiny-slots", "huge-slots",
	"no-transport", "bad-version", "short-header", "no-header",
};

/* The CM data of a connection: a (crafted) header, then "X". */
static size_t hostile_cm_data(enum hdr_mode mode, uint8_t *out)
{
	struct pmv_cm_hdr h = { .has_inbox = true,
				.transport = PMV_TRANSPORT_TCP,
				.slot_size = OWN_SLOT_SIZE,
				.inbox_addr = g_x.inbox_addr,
				.inbox_key = g_x.inbox_key };
	size_t len = PMV_CM_HDR_SIZE;

	if (mode == HDR_BOGUS_INBOX)
		h.inbox_key = ~g_x.inbox_key;
	h.has_inbox = mode != HDR_NO_INBOX;
	h.slot_size = mode == HDR_TINY_SLOTS ? 16 :
		      mode == HDR_HUGE_SLOTS ? 496 : h.slot_size;
	h.transport = mode == HDR_TRANSPORT ? 0 : h.transport;
	pmv_cm_hdr_encode(&h, out);
	if (mode == HDR_BAD_VERSION)
		out[2] = PMV_PROTO_VERSION + 1;
	len = mode == HDR_SHORT ? 10 : mode == HDR_NONE ? 0 : len;
	out[len] = 'X';
	return len + 1;
}

void hconn_close(struct hconn *c)
{
	if (c->ep)
		fi_close(&c->ep->fid);
	if (c->cq)
		fi_close(&c->cq->fid);
	if (c->eq)
		fi_close(&c->eq->fid);
	*c = (struct hconn){ 0 };
}

/* Waits (bounded) for the connection's first event; true if connected,
 * with the target's header (if any) in c->peer. */
static bool hconn_wait_connected(struct hconn *c)
{
	int64_t deadline = deadline_in(STEP_MS);
	struct pmv_cm_event ev;

	while (!pmv_test_eq_poll(c->eq, &ev)) {
		fi_cq_read(c->cq, NULL, 0);
		if (!before(deadline))
			return false;
		pause_briefly();
	}
	if (ev.err || ev.event != FI_CONNECTED)
		return false;
	c->has_peer = pmv_cm_hdr_decode(ev.data, ev.datalen, &c->peer) &&
		      c->peer.has_inbox && c->peer.slot_size >= 64;
	c->up = true;
	c->seq = 1;
	return true;
}

/* Connects to the target over plain tcp with a crafted CM header. */
bool hconn_connect(struct hconn *c, enum hdr_mode mode)
{
	uint8_t data[PMV_CM_HDR_SIZE + 1];
	size_t len = hostile_cm_data(mode, data);

	*c = (struct hconn){ 0 };
	memset(g_x.inbox, 0, g_x.inbox_size); /* no acks of an earlier one */
	c->eq = open_eq(g_x.fabric);
	c->cq = open_cq(g_x.domain);
	CHECK(fi_endpoint(g_x.domain, g_x.info, &c->ep, NULL));
	CHECK(fi_ep_bind(c->ep, &c->eq->fid, 0));
	CHECK(fi_ep_bind(c->ep, &c->cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_enable(c->ep));
	g_x.conns++;
	if (fi_connect(c->ep, g_x.info->dest_addr, data, len) ||
	    !hconn_wait_connected(c)) {
		hconn_close(c);
		return false;
	}
	return true;
}

/* Connects the attack connection with the real header, or ends the run. */
void hostile_reconnect(void)
{
	hconn_close(&g_x.c);
	if (!hconn_connect(&g_x.c, HDR_GOOD))
		die("connecting to the target failed");
	if (!g_x.c.has_peer)
		die("the target's accept carried no pmemverbs header");
}

/* Drives the tcp core once (acks land in the inbox); notes a shutdown.
 * Completions other than the one a caller waits for are not expected. */
void hconn_progress(struct hconn *c, void *want, bool *done, int *err)
{
	struct fi_cq_data_entry e[8];
	struct fi_cq_err_entry ee = { 0 };
	struct pmv_cm_event ev;
	ssize_t n = fi_cq_read(c->cq, e, ARRAY_LEN(e));

	if (n == -FI_EAVAIL && fi_cq_readerr(c->cq, &ee, 0) == 1 &&
	    ee.op_context == want && done) {
		*done = true;
		*err = ee.err ? ee.err : -1;
	}
	for (ssize_t i = 0; i < n; i++)
		if (e[i].op_context == want && done)
			*done = true;
	if (pmv_test_eq_poll(c->eq, &ev) && (ev.err || ev.event == FI_SHUTDOWN))
		c->up = false;
}

/*
 * Writes len bytes of g_x.wbuf at (addr, key) of the target and waits
 * (bounded) for its completion: 0, the error it completed with, or
 * -FI_ENOTCONN (connection gone, or no completion: it is then closed).
 */
int hconn_write(struct hconn *c, size_t len, uint64_t addr,
		uint64_t key)
{
	static struct fi_context2 ctx;
	struct iovec iov = { g_x.wbuf, len };
	struct fi_rma_iov rma = { .addr = addr, .len = len, .key = key };
	struct fi_msg_rma msg = { .msg_iov = &iov, .iov_count = 1,
				  .rma_iov = &rma, .rma_iov_count = 1,
				  .context = &ctx };
	int64_t deadline = deadline_in(STEP_MS);
	bool done = false;
	int err = 0;
	ssize_t ret;

	if (len > sizeof(g_x.wbuf))
		die("internal: a write of %zu bytes", len);
	ctl_store(&g_x.ctl->attack_started, 1);
	while ((ret = fi_writemsg(c->ep, &msg, FI_DELIVERY_COMPLETE |
				  FI_COMPLETION)) == -FI_EAGAIN &&
	       c->up && before(deadline))
		hconn_progress(c, NULL, NULL, NULL);
	if (ret)
		return c->up ? (int)ret : -FI_ENOTCONN;
	while (!done && before(deadline)) {
		hconn_progress(c, &ctx, &done, &err);
		if (!done)
			pause_briefly();
	}
	if (!done) { /* the core keeps ctx: close the endpoint */
		hconn_close(c);
		return -FI_ENOTCONN;
	}
	return err > 0 ? -err : err;
}

/* RMA address of the target's request slot for seq. */
uint64_t req_addr(const struct hconn *c, uint64_t seq)
{
	return c->peer.inbox_addr + PMV_ACKS_SIZE(PMV_SLOTS) +
	       ((seq - 1) % PMV_SLOTS) * c->peer.slot_size;
}

/* Polls (bounded by ms) for the target's ack of seq in the hostile's
 * inbox; true with *ack once it is there. */
bool hconn_ack(struct hconn *c, uint64_t seq, int ms,
	       struct pmv_ack *ack)
{
	const uint8_t *slot = g_x.inbox + ((seq - 1) % PMV_SLOTS) *
					  sizeof(struct pmv_ack);
	int64_t deadline = deadline_in(ms);

	for (;;) {
		hconn_progress(c, NULL, NULL, NULL);
		if (pmv_ack_decode(slot, seq, ack))
			return true;
		if (!c->up || !before(deadline))
			return false;
		pause_briefly();
	}
}
