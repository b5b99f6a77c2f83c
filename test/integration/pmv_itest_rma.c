/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_itest_rma.c - the rma and atomic tests.
 */
#include "pmv_itest.h"

/* ------------------------------------------------------------------ */
/* Test: rma                                                          */
/* ------------------------------------------------------------------ */

static const char *const k_rgn_names[RGN_COUNT] = {
	"fi_write", "fi_writev", "fi_writemsg",
	"fi_read", "fi_inject_write", "fi_writedata",
};

static uint32_t rgn_seed(enum rma_region r)
{
	return 60 + (uint32_t)r;
}

/* Local staging for region r: two chunks, so split iovs fit. */
static size_t local_off(enum rma_region r)
{
	return (size_t)r * 2 * RMA_CHUNK;
}

static size_t remote_off(enum rma_region r)
{
	return (size_t)r * RMA_CHUNK;
}

/* Two local pieces (chunk start, chunk+1 start) forming one message. */
static void rma_split(struct mreg *l, enum rma_region r, struct iovec iov[2],
		      void *desc[2])
{
	size_t half = RMA_CHUNK / 2 - 3; /* deliberately uneven */
	uint8_t *base = l->buf + local_off(r);

	iov[0] = (struct iovec){ base, half };
	iov[1] = (struct iovec){ base + RMA_CHUNK, RMA_CHUNK - half };
	desc[0] = desc[1] = l->desc;
	fill_pattern(base, half, rgn_seed(r), 0);
	fill_pattern(base + RMA_CHUNK, RMA_CHUNK - half, rgn_seed(r), half);
}

static void rma_await(struct ctx *c, enum rma_region r, void *fctx,
		      uint64_t flags)
{
	await_one(c, c->txcq, expect_op(k_rgn_names[r], fctx, flags));
}

static void rma_do_write(struct ctx *c, struct mreg *l, const struct remote *rem)
{
	struct fi_context2 fctx;

	fill_pattern(l->buf + local_off(RGN_WRITE), RMA_CHUNK,
		     rgn_seed(RGN_WRITE), 0);
	post_write(c, l, local_off(RGN_WRITE), RMA_CHUNK, rem,
		   remote_off(RGN_WRITE), &fctx);
	rma_await(c, RGN_WRITE, &fctx, FI_RMA | FI_WRITE);
}

static void rma_do_writev(struct ctx *c, struct mreg *l,
			  const struct remote *rem)
{
	struct fi_context2 fctx;
	struct iovec iov[2];
	void *desc[2];

	rma_split(l, RGN_WRITEV, iov, desc);
	check_remote_range(rem, remote_off(RGN_WRITEV), RMA_CHUNK);
	POST_RETRY(c, "fi_writev",
		   fi_writev(c->ep, iov, desc, 2, c->peer,
			     rem->base + remote_off(RGN_WRITEV), rem->key,
			     &fctx));
	rma_await(c, RGN_WRITEV, &fctx, FI_RMA | FI_WRITE);
}

static void rma_do_writemsg(struct ctx *c, struct mreg *l,
			    const struct remote *rem)
{
	struct fi_context2 fctx;
	struct iovec iov[2];
	void *desc[2];
	struct fi_rma_iov riov = { rem->base + remote_off(RGN_WRITEMSG),
				   RMA_CHUNK, rem->key };
	struct fi_msg_rma msg = { .msg_iov = iov, .desc = desc,
				  .iov_count = 2, .addr = c->peer,
				  .rma_iov = &riov, .rma_iov_count = 1,
				  .context = &fctx };

	rma_split(l, RGN_WRITEMSG, iov, desc);
	check_remote_range(rem, remote_off(RGN_WRITEMSG), RMA_CHUNK);
	POST_RETRY(c, "fi_writemsg", fi_writemsg(c->ep, &msg, FI_COMPLETION));
	rma_await(c, RGN_WRITEMSG, &fctx, FI_RMA | FI_WRITE);
}

static void rma_do_read(struct ctx *c, struct mreg *l, const struct remote *rem)
{
	struct fi_context2 fctx;

	post_read(c, l, local_off(RGN_READ), RMA_CHUNK, rem,
		  remote_off(RGN_READ), &fctx);
	rma_await(c, RGN_READ, &fctx, FI_RMA | FI_READ);
	verify_pattern("fi_read", l->buf + local_off(RGN_READ), RMA_CHUNK,
		       rgn_seed(RGN_READ), 0);
}

/* Returns the injected length (0 when the provider has no inject). */
static size_t rma_do_inject_write(struct ctx *c, struct mreg *l,
				  const struct remote *rem)
{
	size_t len = min_size(c->ep_info->tx_attr->inject_size, RMA_CHUNK);
	uint8_t *buf = l->buf + local_off(RGN_INJECT);

	if (!len)
		return 0;
	fill_pattern(buf, len, rgn_seed(RGN_INJECT), 0);
	check_remote_range(rem, remote_off(RGN_INJECT), len);
	POST_RETRY(c, "fi_inject_write",
		   fi_inject_write(c->ep, buf, len, c->peer,
				   rem->base + remote_off(RGN_INJECT),
				   rem->key));
	memset(buf, 0xEE, len);
	return len;
}

static void rma_do_writedata(struct ctx *c, struct mreg *l,
			     const struct remote *rem)
{
	struct fi_context2 fctx;
	uint8_t *buf = l->buf + local_off(RGN_WRITEDATA);

	fill_pattern(buf, RMA_CHUNK, rgn_seed(RGN_WRITEDATA), 0);
	check_remote_range(rem, remote_off(RGN_WRITEDATA), RMA_CHUNK);
	POST_RETRY(c, "fi_writedata",
		   fi_writedata(c->ep, buf, RMA_CHUNK, l->desc, RMA_CQ_DATA,
				c->peer, rem->base + remote_off(RGN_WRITEDATA),
				rem->key, &fctx));
	rma_await(c, RGN_WRITEDATA, &fctx, FI_RMA | FI_WRITE);
}

/* Checks every region of the target; NULL or the first mismatch. */
static const char *rma_target_mismatch(const struct mreg *t, size_t inject_len,
				       char *why, size_t whylen)
{
	char detail[128];

	for (int r = 0; r < RGN_COUNT; r++) {
		size_t len = r == RGN_INJECT ? inject_len : RMA_CHUNK;

		if (pattern_mismatch(t->buf + remote_off(r), len,
				     rgn_seed(r), 0, detail, sizeof(detail))) {
			snprintf(why, whylen, "target region of %s: %s",
				 k_rgn_names[r], detail);
			return why;
		}
	}
	return NULL;
}

/* Server: exposes a target, waits for DONE plus the fi_writedata remote
 * completion (any order), then checks its memory and reports back. */
void rma_server(struct ctx *c)
{
	struct mreg *t = mreg_alloc(c, RGN_COUNT * RMA_CHUNK);
	struct fi_context2 done;
	struct expect ex[2];
	struct ctrl_msg msg;
	char why[256];

	fill_pattern(t->buf + remote_off(RGN_READ), RMA_CHUNK,
		     rgn_seed(RGN_READ), 0);
	send_remote(c, t);
	ctrl_post_recv(c, &done);
	ex[0] = expect_ctrl(CTRL_DONE, &done);
	ex[1] = expect_remote_write("fi_writedata remote completion",
				    RMA_CQ_DATA);
	await_all(c, c->rxcq, ex, 2);
	ctrl_take(c, CTRL_DONE, &msg);
	report_result(c, rma_target_mismatch(t, msg.len, why, sizeof(why)));
	finish(c);
}

/* Client: every RMA flavour against the server's region, then DONE. */
void rma_client(struct ctx *c)
{
	struct remote rem = recv_remote(c);
	struct mreg *l = mreg_alloc(c, RGN_COUNT * 2 * RMA_CHUNK);
	size_t injected;

	require_iov2(c);
	if (c->ep_info->tx_attr->rma_iov_limit < 1)
		die("rma_iov_limit is 0");
	rma_do_write(c, l, &rem);
	rma_do_writev(c, l, &rem);
	rma_do_writemsg(c, l, &rem);
	rma_do_read(c, l, &rem);
	injected = rma_do_inject_write(c, l, &rem);
	rma_do_writedata(c, l, &rem);
	finish_ops(c, injected);
	finish(c);
}

/* ------------------------------------------------------------------ */
/* Test: atomic                                                       */
/* ------------------------------------------------------------------ */

static const uint64_t k_at_final[AT_COUNT] = {
	AT_SUM_START + 10, AT_FETCH_START + AT_FETCH_ADD, AT_SWAP
};

/* fi_query_atomic must report uint64 support for op in this mode. */
static void require_atomic(const struct ctx *c, enum fi_op op, uint64_t flags,
			   const char *what)
{
	struct fi_atomic_attr attr = { 0 };
	int ret = fi_query_atomic(c->domain, FI_UINT64, op, &attr, flags);

	if (ret)
		die("FI_ATOMIC advertised but fi_query_atomic(%s, FI_UINT64) "
		    "says %s", what, fi_strerror(-ret));
	if (attr.count < 1 || attr.size != sizeof(uint64_t))
		die("fi_query_atomic(%s): count %zu size %zu", what, attr.count,
		    attr.size);
}

/* Local operand slots: [0] operand, [1] compare, [2] result. */
static uint8_t *at_slot(struct mreg *l, int i)
{
	return l->buf + (size_t)i * sizeof(uint64_t);
}

static uint64_t at_addr(const struct remote *rem, int which)
{
	check_remote_range(rem, (size_t)which * 8, 8);
	return rem->base + (uint64_t)which * 8;
}

/* Waits for an atomic's completion: FI_ATOMIC plus FI_READ or FI_WRITE. */
static void at_await(struct ctx *c, void *fctx, const char *what,
		     uint64_t flags)
{
	await_one(c, c->txcq, expect_op(what, fctx, FI_ATOMIC | flags));
}

/* One fi_fetch_atomic on target word `which`; returns the fetched value. */
static uint64_t at_fetch(struct ctx *c, struct mreg *l, const struct remote *rem,
			 int which, enum fi_op op, uint64_t operand,
			 const char *what)
{
	struct fi_context2 fctx;

	store_u64(at_slot(l, 0), operand);
	store_u64(at_slot(l, 2), 0);
	POST_RETRY(c, what,
		   fi_fetch_atomic(c->ep, at_slot(l, 0), 1, l->desc,
				   at_slot(l, 2), l->desc, c->peer,
				   at_addr(rem, which), rem->key, FI_UINT64, op,
				   &fctx));
	at_await(c, &fctx, what, FI_READ);
	return load_u64(at_slot(l, 2));
}

/* Whether the domain does FI_SUM without fetching. The verbs core does not
 * (InfiniBand has only fetch-and-add): fi_query_atomic says -FI_ENOSYS. */
static bool at_plain_sum_supported(const struct ctx *c)
{
	struct fi_atomic_attr attr = { 0 };
	int ret = fi_query_atomic(c->domain, FI_UINT64, FI_SUM, &attr, 0);

	if (ret == -FI_ENOSYS || ret == -FI_EOPNOTSUPP)
		return false;
	if (ret)
		die("fi_query_atomic(FI_SUM, FI_UINT64) failed: %s",
		    fi_strerror(-ret));
	return true;
}

/* FI_SUM of 1..AT_SUM_ROUNDS into the first target word: fi_atomic, or
 * fi_fetch_atomic where the domain only adds while fetching. */
static void at_sums(struct ctx *c, struct mreg *l, const struct remote *rem)
{
	bool plain = at_plain_sum_supported(c);

	if (plain)
		require_atomic(c, FI_SUM, 0, "FI_SUM");
	else
		printf("fi_atomic FI_SUM not supported here: summing with "
		       "fi_fetch_atomic\n");
	for (uint64_t k = 1; k <= AT_SUM_ROUNDS; k++) {
		struct fi_context2 fctx;

		if (!plain) {
			at_fetch(c, l, rem, AT_SUM, FI_SUM, k,
				 "fi_fetch_atomic FI_SUM (sum rounds)");
			continue;
		}
		store_u64(at_slot(l, 0), k);
		POST_RETRY(c, "fi_atomic",
			   fi_atomic(c->ep, at_slot(l, 0), 1, l->desc, c->peer,
				     at_addr(rem, AT_SUM), rem->key, FI_UINT64,
				     FI_SUM, &fctx));
		at_await(c, &fctx, "fi_atomic FI_SUM", FI_WRITE);
	}
}

static void at_fetch_add(struct ctx *c, struct mreg *l,
			 const struct remote *rem)
{
	uint64_t old = at_fetch(c, l, rem, AT_FETCH, FI_SUM, AT_FETCH_ADD,
				"fi_fetch_atomic FI_SUM");

	if (old != AT_FETCH_START)
		die("fi_fetch_atomic FI_SUM fetched %" PRIu64 ", expected %d",
		    old, AT_FETCH_START);
}

/* Reads every target word back with FI_ATOMIC_READ. With
 * FI_ORDER_ATOMIC_RAW this also proves the earlier atomic writes have
 * landed before DONE is sent (tcp;ofi_rxm atomics are not SAW-ordered). */
static void at_read_back(struct ctx *c, struct mreg *l,
			 const struct remote *rem)
{
	for (int i = 0; i < AT_COUNT; i++) {
		uint64_t got = at_fetch(c, l, rem, i, FI_ATOMIC_READ, 0,
					"fi_fetch_atomic FI_ATOMIC_READ");

		if (got != k_at_final[i])
			die("FI_ATOMIC_READ of target word %d gave 0x%" PRIx64
			    ", expected 0x%" PRIx64, i, got, k_at_final[i]);
	}
}

/* One CSWAP; the fetched old value must be want_old. */
static void at_cswap(struct ctx *c, struct mreg *l, const struct remote *rem,
		     uint64_t compare, uint64_t swap, uint64_t want_old)
{
	struct fi_context2 fctx;

	store_u64(at_slot(l, 0), swap);
	store_u64(at_slot(l, 1), compare);
	store_u64(at_slot(l, 2), 0);
	POST_RETRY(c, "fi_compare_atomic",
		   fi_compare_atomic(c->ep, at_slot(l, 0), 1, l->desc,
				     at_slot(l, 1), l->desc, at_slot(l, 2),
				     l->desc, c->peer, at_addr(rem, AT_CSWAP),
				     rem->key, FI_UINT64, FI_CSWAP, &fctx));
	at_await(c, &fctx, "fi_compare_atomic FI_CSWAP", FI_READ);
	if (load_u64(at_slot(l, 2)) != want_old)
		die("fi_compare_atomic returned old value 0x%" PRIx64
		    ", expected 0x%" PRIx64, load_u64(at_slot(l, 2)), want_old);
}

static const char *atomic_target_mismatch(const struct mreg *t, char *why,
					  size_t whylen)
{
	for (int i = 0; i < AT_COUNT; i++) {
		uint64_t got = load_u64(t->buf + (size_t)i * 8);

		if (got != k_at_final[i]) {
			snprintf(why, whylen,
				 "atomic target word %d is 0x%" PRIx64
				 ", expected 0x%" PRIx64, i, got, k_at_final[i]);
			return why;
		}
	}
	return NULL;
}

/* Server: exposes three uint64 words, checks their final values on DONE. */
void atomic_server(struct ctx *c)
{
	struct mreg *t = mreg_alloc(c, AT_COUNT * sizeof(uint64_t));
	struct ctrl_msg msg;
	char why[160];

	store_u64(t->buf + AT_SUM * 8, AT_SUM_START);
	store_u64(t->buf + AT_FETCH * 8, AT_FETCH_START);
	store_u64(t->buf + AT_CSWAP * 8, AT_CMP_START);
	send_remote(c, t);
	ctrl_recv(c, CTRL_DONE, &msg);
	report_result(c, atomic_target_mismatch(t, why, sizeof(why)));
	finish(c);
}

/* Client: query support, then SUMs (plain or fetching), fetch-add, two CSWAPs, read-back. */
void atomic_client(struct ctx *c)
{
	struct remote rem = recv_remote(c);
	struct mreg *l = mreg_alloc(c, 3 * sizeof(uint64_t));

	require_atomic(c, FI_SUM, FI_FETCH_ATOMIC, "fetch FI_SUM");
	require_atomic(c, FI_CSWAP, FI_COMPARE_ATOMIC, "FI_CSWAP");
	require_atomic(c, FI_ATOMIC_READ, FI_FETCH_ATOMIC, "FI_ATOMIC_READ");
	at_sums(c, l, &rem);
	at_fetch_add(c, l, &rem);
	at_cswap(c, l, &rem, AT_CMP_START, AT_SWAP, AT_CMP_START);
	at_cswap(c, l, &rem, AT_CMP_START, AT_SWAP_REFUSED, AT_SWAP);
	at_read_back(c, l, &rem);
	finish_ops(c, 0);
	finish(c);
}
