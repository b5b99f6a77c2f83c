/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_ct_bi_args.c - Bad-input cases: arguments refused at the call, and
 * out-of-range commits.
 */

#include "pmv_ct.h"

/* ---- cases: immediate refusals on the main endpoint ---- */

void case_immed_without_commit(const char *name)
{
	struct cmsg m;
	struct outcome o = try_commit(&g_s.main, cmsg_make(&m, REG_A, 0, 8),
				      FI_IMMED);

	expect_refused(name, &o, -FI_EINVAL);
}

/* Provider flag bits pmemverbs does not define: 61, 62, 63. */
void case_unknown_flag_bits(const char *name)
{
	for (int bit = 61; bit <= 63; bit++) {
		char sub[64];
		struct cmsg m;
		struct outcome o = try_commit(&g_s.main,
					      cmsg_make(&m, REG_A, 0, 8),
					      FI_COMMIT_COMPLETE | (1ull << bit));

		snprintf(sub, sizeof(sub), "%s-%d", name, bit);
		expect_refused(sub, &o, -FI_EBADFLAGS);
	}
}

void case_rma_iov_count_zero(const char *name)
{
	struct cmsg m;
	struct fi_msg_rma *msg = cmsg_make(&m, REG_A, 0, 8);
	struct outcome o;

	msg->rma_iov_count = 0;
	o = try_commit(&g_s.main, msg, FI_COMMIT_COMPLETE);
	expect_refused(name, &o, -FI_EINVAL);
}

void case_rma_iov_null(const char *name)
{
	struct cmsg m;
	struct fi_msg_rma *msg = cmsg_make(&m, REG_A, 0, 8);
	struct outcome o;

	msg->rma_iov = NULL;
	o = try_commit(&g_s.main, msg, FI_COMMIT_COMPLETE);
	expect_refused(name, &o, -FI_EINVAL);
}

void case_rma_iov_two_keys(const char *name)
{
	struct cmsg m;
	struct fi_msg_rma *msg = cmsg_make(&m, REG_A, 0, 1);
	struct outcome o;

	msg->iov_count = 2;
	msg->rma_iov_count = 2;
	m.rma[1] = (struct fi_rma_iov){ rma_addr(REG_B, 0), 1,
					g_s.reg[REG_B].key };
	o = try_commit(&g_s.main, msg, FI_COMMIT_COMPLETE);
	expect_refused(name, &o, -FI_EINVAL);
}

/* 5 local iovs, one more than the limit of 4. */
void case_iov_count_over_limit(const char *name)
{
	struct cmsg m;
	struct fi_msg_rma *msg = cmsg_make(&m, REG_A, 0, 1);
	struct outcome o;

	msg->iov_count = 5;
	m.rma[0].len = 5;
	o = try_commit(&g_s.main, msg, FI_COMMIT_COMPLETE);
	expect_refused(name, &o, -FI_EINVAL);
}

/* 5 remote iovs, one more than the limit of 4. */
void case_rma_iov_count_over_limit(const char *name)
{
	struct cmsg m;
	struct fi_msg_rma *msg = cmsg_make(&m, REG_A, 0, 1);
	struct outcome o;

	msg->rma_iov_count = 5;
	m.iov[0].iov_len = 5;
	o = try_commit(&g_s.main, msg, FI_COMMIT_COMPLETE);
	expect_refused(name, &o, -FI_EINVAL);
}

/* 10 local bytes for 20 remote bytes. */
void case_length_mismatch(const char *name)
{
	struct cmsg m;
	struct fi_msg_rma *msg = cmsg_make(&m, REG_A, 0, 10);
	struct outcome o;

	m.rma[0].len = 20;
	o = try_commit(&g_s.main, msg, FI_COMMIT_COMPLETE);
	expect_refused(name, &o, -FI_EINVAL);
}

/* No local data for 16 remote bytes: not a pure flush (that has len 0). */
void case_no_iov_remote_len(const char *name)
{
	struct cmsg m;
	struct fi_msg_rma *msg = cmsg_make(&m, REG_A, 0, 0);
	struct outcome o;

	m.rma[0].len = 16;
	o = try_commit(&g_s.main, msg, FI_COMMIT_COMPLETE);
	expect_refused(name, &o, -FI_EINVAL);
}

/* desc of a region registered on a second domain. */
void case_desc_other_domain(const char *name)
{
	struct fid_domain *dom2;
	struct fid_mr *mr2;
	struct cmsg m;
	struct fi_msg_rma *msg = cmsg_make(&m, REG_A, 0, 8);
	struct outcome o;

	CHECK(fi_domain(g_net.fabric, g_net.info, &dom2, NULL));
	CHECK(fi_mr_reg(dom2, g_s.src, 4096, FI_WRITE | FI_READ, 0,
			0xf0f0f0ull, 0, &mr2, NULL));
	m.desc[0] = fi_mr_desc(mr2);
	if (!m.desc[0])
		verdict(false, check_name(name), "expected a non-NULL desc "
			"from the second domain got NULL (case not exercised)");
	o = try_commit(&g_s.main, msg, FI_COMMIT_COMPLETE);
	if (m.desc[0])
		expect_refused(name, &o, -FI_EINVAL);
	CHECK(fi_close(&mr2->fid));
	CHECK(fi_close(&dom2->fid));
}

/* FI_INJECT commit one byte over the inject size. */
void case_inject_too_large(const char *name)
{
	size_t len = g_net.inject_size + 1;
	struct cmsg m;
	struct outcome o = try_commit(&g_s.main,
				      cmsg_make(&m, REG_A, 0, len),
				      FI_COMMIT_COMPLETE | FI_INJECT);

	expect_refused(name, &o, -FI_EINVAL);
}

void case_mr_reg_unknown_flag(const char *name)
{
	struct fid_mr *mr = NULL;
	int ret = fi_mr_reg(g_net.domain, g_s.src, 4096, FI_REMOTE_WRITE, 0,
			    0xf1f1f1ull, 1ull << 61, &mr, NULL);

	expect_ret(name, ret, -FI_EBADFLAGS);
	if (!ret)
		fi_close(&mr->fid);
}

void case_mr_regv_pmem_two_iovs(const char *name)
{
	struct iovec iov[2] = { { g_s.src, 4096 }, { g_s.src + 8192, 4096 } };
	struct fid_mr *mr = NULL;
	int ret = fi_mr_regv(g_net.domain, iov, 2, FI_REMOTE_WRITE, 0,
			     0xf2f2f2ull, FI_RMA_PMEM, &mr, NULL);

	expect_ret(name, ret, -FI_EINVAL);
	if (!ret)
		fi_close(&mr->fid);
}

/* ---- cases: refusals by the target's agent (CQ errors) ---- */

void case_unknown_key(const char *name)
{
	struct cmsg m;
	struct outcome o = try_commit(&g_s.main,
				      cmsg_flush(&m, REG_A, UNKNOWN_KEY),
				      FI_COMMIT_COMPLETE);

	expect_cq_error(name, &o, FI_ENOKEY);
}

void case_no_remote_write(const char *name)
{
	struct cmsg m;
	struct outcome o = try_commit(&g_s.main,
				      cmsg_flush(&m, REG_RO, g_s.reg[REG_RO].key),
				      FI_COMMIT_COMPLETE);

	expect_cq_error(name, &o, FI_EACCES);
}

/*
 * The CQ error of a commit whose data write the target's core refuses:
 * the tcp core drops the connection, and the commit fails as "peer gone"
 * with the core's error for its operation: FI_ENOTCONN for a read posted
 * behind the write, FI_ECANCELED for a write whose delivery acknowledgement
 * the core was waiting for (a read_flush commit's write over tcp).  Over
 * verbs the RNIC answers with a remote access error, which breaks the queue
 * pair and which the verbs core reports as FI_EIO.
 */
static int core_refusal_err(const struct outcome *o)
{
	uint32_t proto = g_net.info->ep_attr->protocol;

	if (proto == FI_PROTO_RDMA_CM_IB_RC || proto == FI_PROTO_IWARP)
		return FI_EIO;
	return o->err == FI_ECANCELED ? FI_ECANCELED : FI_ENOTCONN;
}

/*
 * When the shrunk region has a new key (keys the provider chooses,
 * FI_MR_PROV_KEY, and a core that does not hand back a cached, larger
 * registration), the agent can never see a range the region lacks: the
 * core checks every write against the registration first.  There the case
 * checks that core: a commit carrying len bytes at off, on a connection of
 * its own (a refused RDMA write breaks its queue pair), must fail with the
 * core's CQ error -- not succeed, not hang -- and write nothing (guards,
 * contents).
 */
static void range_case_core(const char *name, uint64_t off, size_t len)
{
	struct conn c = { 0 };
	struct cmsg m;
	struct outcome o;

	initiator_open_conn(&c, true);
	conn_connect(&c, KIND_EXTRA);
	gen_fill(g_s.src, len, 0x5100 + off, off); /* must not land */
	o = try_commit(&c, cmsg_make(&m, REG_RANGE, off, len),
		       FI_COMMIT_COMPLETE);
	expect_cq_error(name, &o, core_refusal_err(&o));
	initiator_close_conn(&c);
}

/*
 * A range the agent must refuse: written while REG_RANGE is whole (so the
 * core accepts the data), then the target shrinks the region to half
 * under the same key (a requested key; with FI_MR_PROV_KEY the verbs
 * core's registration cache hands the same key back), then a pure flush
 * asks the agent to persist it.  If the key changed, see range_case_core.
 */
static void range_case(const char *name, uint64_t off, size_t len)
{
	uint64_t half = SMALL_REGION / 2, whole_key;
	struct cmsg m;
	struct outcome o;
	int err;

	resize_region(REG_RANGE, SMALL_REGION);
	err = plain_write_wait(REG_RANGE, off, len, 0x5000 + off);
	if (err) {
		verdict(false, check_name(name), "expected the in-range write "
			"to succeed got %s", errname(err));
		return;
	}
	whole_key = g_s.reg[REG_RANGE].key;
	resize_region(REG_RANGE, half);
	if (g_s.reg[REG_RANGE].key != whole_key) {
		range_case_core(name, off, len);
		return;
	}
	o = try_commit(&g_s.main,
		       cmsg_flush(&m, REG_RANGE, g_s.reg[REG_RANGE].key),
		       FI_COMMIT_COMPLETE);
	expect_cq_error(name, &o, FI_EINVAL);
}

/*
 * A fenced 8-byte commit at off of the half-size REG_RANGE, on a
 * connection of its own (the key's profile unknown there: the agent's
 * family, so it goes by send).  Its data never passes the core's range
 * check: the agent must refuse it (FI_EINVAL) and write nothing (guards,
 * contents).  Where it does not go by send (a one-sided method, known from
 * the target's profile table), the core checks the write against the
 * registration it holds, which over verbs can be the whole region still
 * (its registration cache hands the whole one back for the half): the
 * write then goes as far past the whole region, where every core refuses
 * it.
 */
static void send_range_case(const char *name, uint64_t off)
{
	struct conn c = { 0 };
	struct cmsg m;
	struct outcome o;
	bool by_send;

	resize_region(REG_RANGE, SMALL_REGION / 2);
	initiator_open_conn(&c, true);
	conn_connect(&c, KIND_EXTRA);
	by_send = expected_send(expected_method(g_s.reg[REG_RANGE].profile,
						pushes_on(), false),
				true, 8, false);
	if (!by_send)
		off += SMALL_REGION / 2;
	gen_fill(g_s.src, 8, 0x5200 + off, off); /* must not land */
	o = try_commit(&c, cmsg_make(&m, REG_RANGE, off, 8),
		       FI_COMMIT_COMPLETE | FI_FENCE);
	expect_cq_error(name, &o, by_send ? FI_EINVAL : core_refusal_err(&o));
	initiator_close_conn(&c);
}

void case_send_range_past_end(const char *name)
{
	send_range_case(name, SMALL_REGION / 2 + 64);
}

void case_send_range_straddling_end(const char *name)
{
	send_range_case(name, SMALL_REGION / 2 - 4);
}

void case_range_past_end(const char *name)
{
	range_case(name, SMALL_REGION / 2 + 4096, 100);
}

void case_range_straddling_end(const char *name)
{
	range_case(name, SMALL_REGION / 2 - 50, 100);
}

/*
 * A commit carrying 100 bytes at 2^64 - 50 (the range wraps), on a
 * connection of its own.  The core validates RMA ranges before the agent
 * sees them: the tcp core refuses the write and drops that connection, so
 * the commit must fail as "peer gone" (FI_ENOTCONN); the verbs core's RNIC
 * answers with a remote access error (FI_EIO) -- not succeed, not hang --
 * and nothing may be written (guards).
 */
void case_range_wraps(const char *name)
{
	struct conn c = { 0 };
	struct cmsg m;
	struct fi_msg_rma *msg = cmsg_make(&m, REG_A, 0, 100);
	struct outcome o;

	initiator_open_conn(&c, true);
	conn_connect(&c, KIND_EXTRA);
	m.rma[0].addr = UINT64_MAX - 49;
	o = try_commit(&c, msg, FI_COMMIT_COMPLETE);
	expect_cq_error(name, &o, core_refusal_err(&o));
	initiator_close_conn(&c);
}

/*
 * fi_mr_reg with a non-zero offset (libfabric 1.17: "reserved for future
 * use and must be 0"; the tcp core addresses the region from 0 anyway).
 * Either the registration is refused with -FI_EINVAL, or a commit to an
 * address the core accepts must succeed: agent and core must agree.
 */
void case_mr_offset_nonzero(const char *name)
{
	struct cmsg m;
	struct outcome o;

	if (g_s.reg[REG_OFFSET].reg_status) {
		expect_ret(name, g_s.reg[REG_OFFSET].reg_status, -FI_EINVAL);
		return;
	}
	place(REG_OFFSET, 100, 200, 0x7006);
	o = try_commit(&g_s.main, cmsg_make(&m, REG_OFFSET, 100, 200),
		       FI_COMMIT_COMPLETE);
	expect_success(name, &o);
}
