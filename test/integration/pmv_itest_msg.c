/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_itest_msg.c - the sendrecv and tagged tests.
 */
#include "pmv_itest.h"

/* ------------------------------------------------------------------ */
/* Test: sendrecv (also the traffic of waitobj)                       */
/* ------------------------------------------------------------------ */

static const size_t k_msg_sizes[] = { 1, 7, 64, 4096, BIG_MSG };

static const char *step_name(enum send_kind kind)
{
	static const char *const names[] = {
		[SEND_PLAIN] = "fi_send/fi_recv",
		[SEND_IOV] = "fi_sendmsg/fi_recvmsg (2 iovs)",
		[SEND_INJECT] = "fi_inject",
		[SEND_DATA] = "fi_senddata",
	};

	return names[kind];
}

/* Remote CQ data for a step: distinct per step in high and low bits. */
static uint64_t step_cq_data(uint32_t seed)
{
	return STEP_DATA_BASE ^ ((uint64_t)seed << 40) ^ seed;
}

/* The message steps both sides walk through, in the same order. */
static size_t sendrecv_steps(const struct ctx *c, struct msg_step *steps)
{
	size_t n = 0, inject = c->ep_info->tx_attr->inject_size;

	for (size_t i = 0; i < ARRAY_LEN(k_msg_sizes); i++)
		steps[n++] = (struct msg_step){ SEND_PLAIN,
						capped(c, k_msg_sizes[i]) };
	steps[n++] = (struct msg_step){ SEND_IOV, capped(c, 1000) };
	steps[n++] = (struct msg_step){ SEND_IOV, capped(c, BIG_MSG) };
	if (inject) {
		steps[n++] = (struct msg_step){ SEND_INJECT, 1 };
		steps[n++] = (struct msg_step){ SEND_INJECT,
						min_size(inject, BIG_MSG) };
	}
	steps[n++] = (struct msg_step){ SEND_DATA, 8 };
	steps[n++] = (struct msg_step){ SEND_DATA, capped(c, 4096) };
	return n;
}

/* Needs 2-entry iovs on both directions. */
void require_iov2(const struct ctx *c)
{
	if (c->ep_info->tx_attr->iov_limit < 2 ||
	    c->ep_info->rx_attr->iov_limit < 2)
		die("iov_limit tx %zu / rx %zu is below 2",
		    c->ep_info->tx_attr->iov_limit,
		    c->ep_info->rx_attr->iov_limit);
}

/* Receives one step and checks length, flags, CQ data and every byte. */
static void recv_step(struct ctx *c, struct mreg *m, const struct msg_step *s,
		      uint32_t seed)
{
	const char *what = step_name(s->kind);
	struct expect x;
	struct fi_context2 fctx;
	struct split sp = make_split(m, s->len, s->len / 3);
	struct fi_msg msg = { .msg_iov = sp.iov, .desc = sp.desc,
			      .iov_count = 2, .addr = FI_ADDR_UNSPEC,
			      .context = &fctx };

	memset(m->buf, 0, m->len);
	x = expect_recv(what, &fctx, FI_MSG | FI_RECV, s->len);
	if (s->kind == SEND_DATA) {
		x.flags |= FI_REMOTE_CQ_DATA;
		x.checks |= CHECK_DATA;
		x.data = step_cq_data(seed);
	}
	if (s->kind == SEND_IOV) {
		POST_RETRY(c, "fi_recvmsg", fi_recvmsg(c->ep, &msg, FI_COMPLETION));
		await_one(c, c->rxcq, x);
		verify_split(what, &sp, seed);
		return;
	}
	post_recv(c, m, 0, BIG_MSG, &fctx);
	await_one(c, c->rxcq, x);
	verify_pattern(what, m->buf, s->len, seed, 0);
}

/* fi_sendmsg of a two-piece message split unlike the receiver's. */
static void send_iov_step(struct ctx *c, struct mreg *m, size_t len,
			  uint32_t seed, void *fctx)
{
	struct split sp = make_split(m, len, len / 2);
	struct fi_msg msg = { .msg_iov = sp.iov, .desc = sp.desc,
			      .iov_count = 2, .addr = c->peer,
			      .context = fctx };

	fill_split(&sp, seed);
	POST_RETRY(c, "fi_sendmsg", fi_sendmsg(c->ep, &msg, FI_COMPLETION));
}

/* Sends one step; injected data is scribbled over right after the call
 * since the buffer must be reusable at once. */
static void send_step(struct ctx *c, struct mreg *m, const struct msg_step *s,
		      uint32_t seed)
{
	struct fi_context2 fctx;

	fill_pattern(m->buf, s->len, seed, 0);
	switch (s->kind) {
	case SEND_PLAIN:
		post_send(c, m, 0, s->len, &fctx);
		break;
	case SEND_IOV:
		send_iov_step(c, m, s->len, seed, &fctx);
		break;
	case SEND_INJECT:
		POST_RETRY(c, "fi_inject",
			   fi_inject(c->ep, m->buf, s->len, c->peer));
		memset(m->buf, 0xEE, s->len);
		return;
	case SEND_DATA:
		POST_RETRY(c, "fi_senddata",
			   fi_senddata(c->ep, m->buf, s->len, m->desc,
				       step_cq_data(seed), c->peer, &fctx));
		break;
	}
	await_one(c, c->txcq, expect_op(step_name(s->kind), &fctx,
					FI_MSG | FI_SEND));
}

/* Runs all sendrecv steps: the client sends, the server receives. */
void sendrecv_exchange(struct ctx *c)
{
	struct msg_step steps[MAX_STEPS];
	size_t n = sendrecv_steps(c, steps);
	struct mreg *m = mreg_alloc(c, 2 * BIG_MSG);

	require_iov2(c);
	for (size_t i = 0; i < n; i++) {
		uint32_t seed = (uint32_t)i + 1;

		if (is_server(c))
			recv_step(c, m, &steps[i], seed);
		else
			send_step(c, m, &steps[i], seed);
	}
}

/* Remote CQ data is a capability of its own (cq_data_size > 0). */
void require_cq_data(struct ctx *c)
{
	if (!c->info->domain_attr->cq_data_size)
		skip("provider has cq_data_size 0 (no remote CQ data)");
}

void sendrecv_run(struct ctx *c)
{
	sendrecv_exchange(c);
	finish(c);
}

/* ------------------------------------------------------------------ */
/* Test: tagged                                                       */
/* ------------------------------------------------------------------ */

/* Sent in this order; received with recvs posted in reverse order. The
 * last one is matched through an ignore mask. */
static const struct tagged_msg k_tagged[] = {
	{ 0x1001, 0x1001, 0, 100, 41 },
	{ 0x2002, 0x2002, 0, 200, 42 },
	{ UINT64_C(0x30000000000000AB), UINT64_C(0x3000000000000000), 0xFF, 50,
	  43 },
};

#define N_TAGGED ARRAY_LEN(k_tagged)

/* Posts a tagged receive into TAG_SLOT-sized slot `slot` of m. */
static void post_trecv(struct ctx *c, struct mreg *m, size_t slot,
		       uint64_t tag, uint64_t ignore, void *ctx)
{
	POST_RETRY(c, "fi_trecv",
		   fi_trecv(c->ep, m->buf + slot * TAG_SLOT, TAG_SLOT, m->desc,
			    FI_ADDR_UNSPEC, tag, ignore, ctx));
}

/* Server: a never-sent decoy tag first, then the three receives in
 * reverse order; each must get its own message, the decoy nothing. */
void tagged_server(struct ctx *c)
{
	struct mreg *m = mreg_alloc(c, (N_TAGGED + 1) * TAG_SLOT);
	struct fi_context2 fctx[N_TAGGED], decoy;
	struct expect ex[N_TAGGED];

	post_trecv(c, m, N_TAGGED, TAG_DECOY, 0, &decoy);
	for (size_t i = N_TAGGED; i-- > 0;) {
		const struct tagged_msg *t = &k_tagged[i];

		post_trecv(c, m, i, t->recv_tag, t->ignore, &fctx[i]);
		ex[i] = expect_recv("fi_trecv", &fctx[i], FI_TAGGED | FI_RECV,
				    t->len);
		ex[i].checks |= CHECK_TAG;
		ex[i].tag = t->send_tag;
	}
	ctrl_send_kind(c, CTRL_GO);
	await_all(c, c->rxcq, ex, N_TAGGED);
	for (size_t i = 0; i < N_TAGGED; i++)
		verify_pattern("fi_trecv", m->buf + i * TAG_SLOT,
			       k_tagged[i].len, k_tagged[i].seed, 0);
	cancel_and_expect(c, &decoy, "cancelled decoy fi_trecv");
	finish(c);
}

/* Client: after GO, sends the k_tagged messages in table order. */
void tagged_client(struct ctx *c)
{
	struct mreg *m = mreg_alloc(c, N_TAGGED * TAG_SLOT);
	struct ctrl_msg msg;

	ctrl_recv(c, CTRL_GO, &msg);
	for (size_t i = 0; i < N_TAGGED; i++) {
		const struct tagged_msg *t = &k_tagged[i];
		uint8_t *buf = m->buf + i * TAG_SLOT;
		struct fi_context2 fctx;

		fill_pattern(buf, t->len, t->seed, 0);
		POST_RETRY(c, "fi_tsend",
			   fi_tsend(c->ep, buf, t->len, m->desc, c->peer,
				    t->send_tag, &fctx));
		await_one(c, c->txcq,
			  expect_op("fi_tsend", &fctx, FI_TAGGED | FI_SEND));
	}
	finish(c);
}
