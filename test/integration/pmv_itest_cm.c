/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_itest_cm.c - the connection-management tests (cmdata,
 * shutdown, reject, badaddr), waitobj, cntr and cqerr.
 */
#include "pmv_itest.h"

/* ------------------------------------------------------------------ */
/* Tests: cmdata, shutdown, reject, badaddr (connection management)   */
/* ------------------------------------------------------------------ */

static void set_cm_out(struct ctx *c, size_t len, uint32_t seed)
{
	c->cm_out.len = len;
	fill_pattern(c->cm_out.bytes, len, seed, 0);
}

/* Each side's CM private data for fi_connect / fi_accept. */
void cmdata_setup(struct ctx *c)
{
	if (is_server(c))
		set_cm_out(c, CM_SERVER_LEN, CM_SEED_SERVER);
	else
		set_cm_out(c, CM_CLIENT_LEN, CM_SEED_CLIENT);
}

/* The peer's CM data (already captured during establish) must be exact:
 * its full length, or FI_OPT_CM_DATA_SIZE if that is less. */
void cmdata_run(struct ctx *c)
{
	size_t room = cm_data_size(c);
	size_t want = min_size(is_server(c) ? CM_CLIENT_LEN : CM_SERVER_LEN,
			       room);
	uint32_t seed = is_server(c) ? CM_SEED_CLIENT : CM_SEED_SERVER;
	const char *what = is_server(c) ? "FI_CONNREQ data" : "FI_CONNECTED data";

	printf("cmdata: FI_OPT_CM_DATA_SIZE=%zu, expecting %zu bytes\n", room,
	       want);
	if (!want)
		skip("FI_OPT_CM_DATA_SIZE is 0: no CM data on this endpoint");
	if (c->cm_in.len != want)
		die("%s: %zu bytes, expected exactly %zu", what, c->cm_in.len,
		    want);
	verify_pattern(what, c->cm_in.bytes, want, seed, 0);
	finish(c);
}

/* After a message exchange the client shuts down; the server must see
 * FI_SHUTDOWN for its own endpoint. The client waits for its local
 * FI_SHUTDOWN too (the tcp core reports one; fi_cm(3) leaves it open), so
 * it is still alive and has not closed the socket when fi_shutdown acts. */
void shutdown_run(struct ctx *c)
{
	union cm_event ev;
	struct ctrl_msg msg;

	if (is_server(c)) {
		ctrl_recv(c, CTRL_GO, &msg);
		ctrl_send_kind(c, CTRL_GO);
		await_cm_event(c, FI_SHUTDOWN, &c->ep->fid, &ev, "FI_SHUTDOWN");
		return;
	}
	ctrl_send_kind(c, CTRL_GO);
	ctrl_recv(c, CTRL_GO, &msg);
	CHECK(fi_shutdown(c->ep, 0));
	await_cm_event(c, FI_SHUTDOWN, &c->ep->fid, &ev, "local FI_SHUTDOWN");
}

/* Server: rejects the one connection request with 16 bytes of data. */
void reject_server(struct ctx *c)
{
	uint8_t data[CM_REJECT_LEN];
	struct fi_info *req;

	open_fabric(c);
	msg_listen(c);
	req = msg_await_connreq(c);
	fill_pattern(data, sizeof(data), CM_SEED_REJECT, 0);
	CHECK(fi_reject(c->pep, req->handle, data, sizeof(data)));
	fi_freeinfo(req);
}

/* The refusal must arrive as an FI_ECONNREFUSED error entry; reject data,
 * if the provider passes it on, must be exact. */
void reject_client(struct ctx *c)
{
	struct eq_error err;

	open_fabric(c);
	msg_start_connect(c);
	await_eq_error(c, FI_ECONNREFUSED, &err, "rejected fi_connect");
	printf("reject: err_data_size=%zu\n", err.e.err_data_size);
	if (!err.e.err_data_size)
		return;
	if (err.e.err_data_size != CM_REJECT_LEN)
		die("reject data: %zu bytes, expected %d", err.e.err_data_size,
		    CM_REJECT_LEN);
	verify_pattern("reject data", err.e.err_data, CM_REJECT_LEN,
		       CM_SEED_REJECT, 0);
}

/* fi_getinfo naming a provider that does not exist must say -FI_ENODATA. */
static void expect_unknown_provider(enum fi_ep_type type)
{
	struct fi_info *hints = make_hints("nosuchprov", type, FI_MSG, 0);
	struct fi_info *info = NULL;
	int ret = fi_getinfo(PMV_FI_VERSION, NULL, NULL, 0, hints, &info);

	fi_freeinfo(hints);
	fi_freeinfo(info);
	if (ret != -FI_ENODATA)
		die("fi_getinfo(prov 'nosuchprov', %s) returned %d (%s), "
		    "expected -FI_ENODATA", ep_type_name(type), ret,
		    fi_strerror(-ret));
}

/* MSG: connecting to a port nobody listens on must produce an
 * FI_ECONNREFUSED error event. Both: unknown provider -> -FI_ENODATA. */
void badaddr_client(struct ctx *c)
{
	struct eq_error err;

	if (is_msg(c)) {
		open_fabric(c);
		msg_start_connect(c);
		await_eq_error(c, FI_ECONNREFUSED, &err,
			       "fi_connect to a closed port");
	}
	expect_unknown_provider(FI_EP_MSG);
	expect_unknown_provider(FI_EP_RDM);
}

noreturn void no_server_side(struct ctx *c)
{
	(void)c;
	die("this test has no server side");
}

/* ------------------------------------------------------------------ */
/* Test: waitobj                                                      */
/* ------------------------------------------------------------------ */

/* Switches every CQ/EQ to FI_WAIT_UNSPEC and every wait to sread. */
void waitobj_setup(struct ctx *c)
{
	require_cq_data(c);
	c->use_wait = true;
}

/* On idle queues blocking reads must time out with -FI_EAGAIN. */
static void check_idle_timeouts(const struct ctx *c)
{
	struct fi_cq_tagged_entry e;
	union cm_event ev;
	uint32_t event;
	ssize_t ret;

	ret = fi_cq_sread(c->rxcq, &e, 1, NULL, IDLE_TIMEOUT_MS);
	if (ret != -FI_EAGAIN)
		die("fi_cq_sread on an empty CQ returned %zd (%s), expected "
		    "-FI_EAGAIN", ret, fi_strerror((int)-ret));
	ret = fi_eq_sread(c->eq, &event, &ev, sizeof(ev), IDLE_TIMEOUT_MS, 0);
	if (ret != -FI_EAGAIN)
		die("fi_eq_sread on an empty EQ returned %zd (%s), expected "
		    "-FI_EAGAIN", ret, fi_strerror((int)-ret));
}

/* sendrecv traffic with blocking waits, then idle-queue timeouts. */
void waitobj_run(struct ctx *c)
{
	sendrecv_exchange(c);
	check_idle_timeouts(c);
	finish(c);
}

/* ------------------------------------------------------------------ */
/* Test: cntr                                                         */
/* ------------------------------------------------------------------ */

void cntr_setup(struct ctx *c)
{
	c->use_cntrs = true;
}

/* Waits (bounded) for the counter to reach want; it must then be exactly
 * want with no errors. */
static void expect_counter(const struct ctx *c, enum cntr_slot s,
			   uint64_t want)
{
	int ret = fi_cntr_wait(c->cntr[s], want, STEP_TIMEOUT_MS);
	uint64_t got = fi_cntr_read(c->cntr[s]);
	uint64_t errs = fi_cntr_readerr(c->cntr[s]);

	if (ret)
		die("%s counter: fi_cntr_wait(%" PRIu64 ") -> %s; value %" PRIu64
		    ", errors %" PRIu64, k_cntr_names[s], want,
		    fi_strerror(-ret), got, errs);
	if (got != want || errs)
		die("%s counter is %" PRIu64 " (errors %" PRIu64
		    "), expected %" PRIu64, k_cntr_names[s], got, errs, want);
}

static void expect_all_counters(const struct ctx *c)
{
	for (int s = 0; s < CNTR_COUNT; s++)
		expect_counter(c, s, c->posted[s]);
}

static const char *cntr_target_mismatch(const struct mreg *t, char *why,
					size_t whylen)
{
	char detail[128];

	for (size_t i = 0; i < 2 * CNTR_OPS; i++) {
		uint32_t seed = i < CNTR_OPS ? CNTR_SEED_WRITE + (uint32_t)i
					     : CNTR_SEED_READ + (uint32_t)(i - CNTR_OPS);

		if (pattern_mismatch(t->buf + i * CNTR_SLOT, CNTR_SLOT, seed,
				     0, detail, sizeof(detail))) {
			snprintf(why, whylen, "counted target slot %zu: %s", i,
				 detail);
			return why;
		}
	}
	return NULL;
}

/* Server: target slots [0,N) get written, [N,2N) get read; N counted
 * receives; counters must match what was posted. */
void cntr_server(struct ctx *c)
{
	struct mreg *t = mreg_alloc(c, 2 * CNTR_OPS * CNTR_SLOT);
	struct mreg *r = mreg_alloc(c, CNTR_OPS * CNTR_SLOT);
	struct fi_context2 fctx[CNTR_OPS];
	struct expect ex[CNTR_OPS];
	struct ctrl_msg msg;
	char why[256];

	for (size_t i = 0; i < CNTR_OPS; i++) {
		fill_pattern(t->buf + (CNTR_OPS + i) * CNTR_SLOT, CNTR_SLOT,
			     CNTR_SEED_READ + (uint32_t)i, 0);
		post_recv(c, r, i * CNTR_SLOT, CNTR_SLOT, &fctx[i]);
		ex[i] = expect_recv("counted fi_recv", &fctx[i],
				    FI_MSG | FI_RECV, CNTR_SLOT);
	}
	send_remote(c, t);
	expect_counter(c, CNTR_RECV, c->posted[CNTR_RECV]);
	await_all(c, c->rxcq, ex, CNTR_OPS);
	for (size_t i = 0; i < CNTR_OPS; i++)
		verify_pattern("counted fi_recv", r->buf + i * CNTR_SLOT,
			       CNTR_SLOT, CNTR_SEED_SEND + (uint32_t)i, 0);
	ctrl_recv(c, CTRL_DONE, &msg);
	report_result(c, cntr_target_mismatch(t, why, sizeof(why)));
	finish(c);
	expect_all_counters(c);
}

/* Posts op i of each kind (send, write, read) with expectations. */
static void cntr_post_round(struct ctx *c, struct mreg *l,
			    const struct remote *rem, size_t i,
			    struct fi_context2 *fctx, struct expect *ex)
{
	size_t send_off = i * CNTR_SLOT;
	size_t write_off = (CNTR_OPS + i) * CNTR_SLOT;
	size_t read_off = (2 * CNTR_OPS + i) * CNTR_SLOT;

	fill_pattern(l->buf + send_off, CNTR_SLOT, CNTR_SEED_SEND + (uint32_t)i, 0);
	fill_pattern(l->buf + write_off, CNTR_SLOT,
		     CNTR_SEED_WRITE + (uint32_t)i, 0);
	post_send(c, l, send_off, CNTR_SLOT, &fctx[0]);
	post_write(c, l, write_off, CNTR_SLOT, rem, i * CNTR_SLOT, &fctx[1]);
	post_read(c, l, read_off, CNTR_SLOT, rem, (CNTR_OPS + i) * CNTR_SLOT,
		  &fctx[2]);
	ex[0] = expect_op("counted fi_send", &fctx[0], FI_MSG | FI_SEND);
	ex[1] = expect_op("counted fi_write", &fctx[1], FI_RMA | FI_WRITE);
	ex[2] = expect_op("counted fi_read", &fctx[2], FI_RMA | FI_READ);
}

/* Client: N sends, writes and reads in flight at once, waited on through
 * the counters first, then their CQ entries. */
void cntr_client(struct ctx *c)
{
	struct remote rem = recv_remote(c);
	struct mreg *l = mreg_alloc(c, 3 * CNTR_OPS * CNTR_SLOT);
	struct fi_context2 fctx[3 * CNTR_OPS];
	struct expect ex[3 * CNTR_OPS];

	for (size_t i = 0; i < CNTR_OPS; i++)
		cntr_post_round(c, l, &rem, i, &fctx[3 * i], &ex[3 * i]);
	expect_counter(c, CNTR_SEND, c->posted[CNTR_SEND]);
	expect_counter(c, CNTR_WRITE, c->posted[CNTR_WRITE]);
	expect_counter(c, CNTR_READ, c->posted[CNTR_READ]);
	await_all(c, c->txcq, ex, 3 * CNTR_OPS);
	for (size_t i = 0; i < CNTR_OPS; i++)
		verify_pattern("counted fi_read",
			       l->buf + (2 * CNTR_OPS + i) * CNTR_SLOT,
			       CNTR_SLOT, CNTR_SEED_READ + (uint32_t)i, 0);
	finish_ops(c, 0);
	finish(c);
	expect_all_counters(c);
}

/* ------------------------------------------------------------------ */
/* Test: cqerr                                                        */
/* ------------------------------------------------------------------ */

/* Client: a receive that is cancelled must surface as FI_ECANCELED. */
void cqerr_run(struct ctx *c)
{
	struct fi_context2 fctx;

	if (!is_server(c)) {
		struct mreg *m = mreg_alloc(c, 64);

		post_recv(c, m, 0, m->len, &fctx);
		cancel_and_expect(c, &fctx, "cancelled fi_recv");
		expect_cq_empty(c->rxcq, "receive CQ after the cancel");
	}
	finish(c);
}
