/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_ct_bi_order.c - Bad-input cases: write order under FI_FENCE, FI_INJECT
 * commits, methods, connection states, counters, and fences after failures.
 */

#include "pmv_ct.h"

/* A one-segment message writing len bytes from src to region at off. */
static struct fi_msg_rma one_seg_msg(struct msg_parts *mp, uint8_t *src,
				     enum region_id region, uint64_t off,
				     size_t len)
{
	mp->iov[0] = (struct iovec){ src, len };
	mp->desc[0] = g_s.src_desc;
	mp->rma[0] = (struct fi_rma_iov){ rma_addr(region, off), len,
					  g_s.reg[region].key };
	return (struct fi_msg_rma){ .msg_iov = mp->iov, .desc = mp->desc,
				    .iov_count = 1, .rma_iov = mp->rma,
				    .rma_iov_count = 1 };
}

/*
 * A fenced commit of len bytes to a key with an earlier write, then at once
 * a later operation on the same range: a plain write of other bytes (which
 * must land last) or a read (which must return the commit's bytes).  On
 * agent profiles a small fenced commit travels by send: its data is placed
 * by the target's agent, and the later operation must wait for that.
 */
static void fence_then_touch(const char *name, size_t len, bool read_back)
{
	const uint64_t off = 30000;
	uint8_t *d1 = g_s.src + LOCAL_STRIDE, *d2 = d1 + LOCAL_STRIDE;
	uint8_t *back = d2 + LOCAL_STRIDE;
	struct msg_parts mp;
	struct fi_msg_rma msg = one_seg_msg(&mp, d1, REG_A, off, len);
	uint64_t key = g_s.reg[REG_A].key;
	bool known = g_net.pmem->peer_profile(g_s.main.ep, key) !=
		     FI_PMEM_PROFILE_UNKNOWN;
	bool want_send = expected_send(expected_method(g_s.reg[REG_A].profile,
						       known, false),
				       true, len, true);
	uint64_t sends = main_counters().sends;
	const uint8_t *want = read_back ? d1 : d2;
	struct op *c1, *w2 = NULL;
	struct outcome o;
	struct cmsg m;
	ssize_t ret;

	if (plain_write_wait(REG_A, 40000, 64, 0x7010))
		die("%s: the earlier write failed", name);
	gen_fill(d1, len, 0x7011, off);
	gen_fill(d2, len, 0x7012, off);
	note_placed(REG_A, off, len, 0x7011);
	if (!read_back)
		note_placed(REG_A, off, len, 0x7012);
	c1 = post_commit(&g_s.main, &msg, FI_COMMIT_COMPLETE | FI_FENCE, &ret);
	if (c1 && read_back) {
		ret = rma_read(REG_A, off, back, len);
	} else if (c1) {
		w2 = op_alloc(OP_WRITE, &g_s.main);
		POST(ret, fi_write(g_s.main.ep, d2, len, g_s.src_desc, 0,
				   rma_addr(REG_A, off), key, &w2->fictx));
	}
	if (!c1 || ret)
		die("%s: posting failed: %s", name, errname(ret));
	sends = main_counters().sends - sends;
	o = commit_outcome(c1);
	if (w2 && (!op_wait(w2) || w2->err))
		die("%s: the later plain write failed", name);
	if (w2)
		op_free(w2);
	if (!read_back && rma_read(REG_A, off, back, len))
		die("%s: reading the range back failed", name);
	if (o.err || !o.completed)
		expect_success(name, &o);
	else if (sends != want_send)
		verdict(false, check_name(name), "expected the fenced commit "
			"%s by send got %s", want_send ? "to go" : "not to go",
			sends ? "send" : "another method");
	else if (!memcmp(back, want, len))
		verdict(true, check_name(name), "the %s posted right after "
			"the fenced commit (%zu bytes, %s) %s", read_back ?
			"read" : "write", len, sends ? "by send" : "not by send",
			read_back ? "returned its bytes" : "landed last");
	else if (read_back)
		verdict(false, check_name(name), "expected the fenced "
			"commit's bytes got older ones: the read overtook it");
	else
		verdict(false, check_name(name), "expected the bytes of the "
			"write posted after the fenced commit got %s",
			memcmp(back, d1, len) ? "other bytes" :
			"the fenced commit's: the later write overtook it");
	place(REG_A, off, len, 0x7013); /* a known end state, whatever happened */
	o = try_commit(&g_s.main, cmsg_make(&m, REG_A, off, len),
		       FI_COMMIT_COMPLETE);
	if (o.ret || o.err || !o.completed)
		die("%s: the final commit failed", name);
}

void case_fence_keeps_write_order(const char *name)
{
	fence_then_touch(name, 256, false);
}

void case_send_keeps_write_order(const char *name)
{
	fence_then_touch(name, 8, false);
}

void case_send_read_sees_commit(const char *name)
{
	fence_then_touch(name, 8, true);
}

/*
 * FI_INJECT on fi_writemsg only lets the caller reuse its buffer at once
 * (fi_rma(3)); the commit must still complete, once, with its context.
 * The source is overwritten right after the call: the contents check
 * then proves the original bytes were taken.
 */
void case_inject_commit_completes(const char *name)
{
	struct cmsg m;
	struct fi_msg_rma *msg = cmsg_make(&m, REG_A, 20000, 64);
	struct outcome o;

	place(REG_A, 20000, 64, 0x7005);
	o = try_commit_then(&g_s.main, msg, FI_COMMIT_COMPLETE | FI_INJECT,
			    scribble_source);
	expect_success(name, &o);
}

/*
 * An FI_INJECT commit needs no descriptor for its source, even on an
 * FI_MR_LOCAL domain (verbs): the source is copied at the call (issue 10:
 * this was refused with -FI_EINVAL over verbs).
 */
void case_inject_commit_no_desc(const char *name)
{
	struct cmsg m;
	struct fi_msg_rma *msg = cmsg_make(&m, REG_A, 20480, 64);
	struct outcome o;

	msg->desc = NULL;
	place(REG_A, 20480, 64, 0x7006);
	o = try_commit_then(&g_s.main, msg, FI_COMMIT_COMPLETE | FI_INJECT,
			    scribble_source);
	expect_success(name, &o);
}

void case_atomicity_chunk(const char *name)
{
	expect_u64(name,
		   g_net.pmem->atomicity_chunk(g_net.domain), 8,
		   "atomicity_chunk");
}

/* Before a key's first commit the agent, unless the table the target
 * pushed named the key's profile. */
void case_method_agent(const char *name)
{
	expect_u64(name,
		   g_net.pmem->method(g_s.main.ep, g_s.reg[REG_A].key),
		   pushes_on() ? expected_method(g_s.reg[REG_A].profile, true,
						 false) : FI_PMEM_METHOD_AGENT,
		   "method before the key's first commit (FI_PMEM_METHOD_AGENT "
		   "is 1; with the target's table, the matrix's)");
}

/*
 * Once a commit taught the initiator the key's profile, the method is the
 * matrix's; a FI_PMEMVERBS_METHOD override that is incorrect for the
 * profile is refused with -FI_EOPNOTSUPP, nothing sent.
 */
void case_method_after_commit(const char *name)
{
	uint64_t key = g_s.reg[REG_B].key;
	enum fi_pmem_method want = expected_method(g_s.reg[REG_B].profile,
						   true, false);
	struct cmsg m;
	struct outcome o;

	if (pushes_on() && want == FI_PMEM_METHOD_NONE) {
		/* the table taught the profile: the first commit is refused */
		o = try_commit(&g_s.main, cmsg_flush(&m, REG_B, key),
			       FI_COMMIT_COMPLETE);
		expect_refused(name, &o, -FI_EOPNOTSUPP);
		return;
	}
	o = try_commit(&g_s.main, cmsg_flush(&m, REG_B, key),
		       FI_COMMIT_COMPLETE);
	if (o.ret || !o.completed || o.err)
		die("%s: the first commit to pmem-b failed", name);
	if (want == FI_PMEM_METHOD_NONE) {
		o = try_commit(&g_s.main, cmsg_flush(&m, REG_B, key),
			       FI_COMMIT_COMPLETE);
		expect_refused(name, &o, -FI_EOPNOTSUPP);
		return;
	}
	expect_u64(name, g_net.pmem->method(g_s.main.ep, key), want,
		   "method after a commit taught the profile");
}

/* Before any commit: what the target's table says, UNKNOWN without it. */
void case_peer_profile_before_commit(const char *name)
{
	expect_profile(name,
		       g_net.pmem->peer_profile(g_s.main.ep, g_s.reg[REG_B].key),
		       pushes_on() ? g_s.reg[REG_B].profile :
				     FI_PMEM_PROFILE_UNKNOWN,
		       "before any commit to pmem-b");
}

/* ---- cases: other endpoints ---- */

/* FI_IMMED and unknown bits on an endpoint opened without FI_RMA_PMEM. */
void case_plain_endpoint_flags(const char *name)
{
	struct conn c = { 0 };
	struct cmsg m;
	char sub[64];

	initiator_open_conn(&c, false);
	snprintf(sub, sizeof(sub), "%s-immed", name);
	expect_ret(sub, fi_writemsg(c.ep, cmsg_make(&m, REG_A, 0, 8),
				    FI_COMMIT_COMPLETE | FI_IMMED), -FI_EINVAL);
	snprintf(sub, sizeof(sub), "%s-bit61", name);
	expect_ret(sub, fi_writemsg(c.ep, cmsg_make(&m, REG_A, 0, 8),
				    FI_COMMIT_COMPLETE | (1ull << 61)),
		   -FI_EBADFLAGS);
	initiator_close_conn(&c);
}

void case_never_connected(const char *name)
{
	struct conn c = { 0 };
	struct cmsg m;
	char sub[64];

	initiator_open_conn(&c, true);
	expect_ret(name, fi_writemsg(c.ep, cmsg_flush(&m, REG_A,
						       g_s.reg[REG_A].key),
				     FI_COMMIT_COMPLETE), -FI_ENOTCONN);
	snprintf(sub, sizeof(sub), "%s-method", name);
	expect_u64(sub, g_net.pmem->method(c.ep, g_s.reg[REG_A].key),
		   FI_PMEM_METHOD_NONE, "method on an unconnected endpoint");
	initiator_close_conn(&c);
}

/* The target opened its end without FI_RMA_PMEM: no agent to commit. */
void case_peer_without_pmem(const char *name)
{
	struct conn c = { 0 };
	struct cmsg m;
	struct outcome o;

	initiator_open_conn(&c, true);
	conn_connect(&c, KIND_PLAIN_PEER);
	o = try_commit(&c, cmsg_make(&m, REG_A, 0, 8), FI_COMMIT_COMPLETE);
	expect_refused(name, &o, -FI_EOPNOTSUPP);
	fi_shutdown(c.ep, 0);
	initiator_close_conn(&c);
}

/* A commit works, the target shuts the connection, then commits fail. */
void case_after_peer_shutdown(const char *name)
{
	struct conn c = { 0 };
	struct cmsg m;
	struct outcome o;
	char sub[64];

	initiator_open_conn(&c, true);
	conn_connect(&c, KIND_SHUT);
	o = try_commit(&c, cmsg_flush(&m, REG_A, g_s.reg[REG_A].key),
		       FI_COMMIT_COMPLETE);
	snprintf(sub, sizeof(sub), "%s-before", name);
	expect_success(sub, &o);
	ctl_send(MSG_SHUT, NULL, 0);
	wait_flag(&c.shut_down, "waiting for the target's FI_SHUTDOWN");
	o = try_commit(&c, cmsg_flush(&m, REG_A, g_s.reg[REG_A].key),
		       FI_COMMIT_COMPLETE);
	expect_refused(name, &o, -FI_ENOTCONN);
	initiator_close_conn(&c);
}

/* One successful commit and one refused: the counters move by one each. */
void case_ep_counters(const char *name)
{
	struct fi_pmem_ep_counters before = main_counters(), after;
	struct cmsg m;
	struct outcome ok = try_commit(&g_s.main,
				       cmsg_flush(&m, REG_B, g_s.reg[REG_B].key),
				       FI_COMMIT_COMPLETE);
	struct outcome bad = try_commit(&g_s.main,
					cmsg_flush(&m, REG_A, UNKNOWN_KEY),
					FI_COMMIT_COMPLETE);

	after = main_counters();
	if (ok.ret || !ok.completed || ok.err || bad.ret || !bad.completed ||
	    !bad.err)
		die("%s: the two commits did not end as expected", name);
	expect_u64("ep-counters-commits", after.commits - before.commits, 1,
		   "commits added by one successful commit");
	expect_u64("ep-counters-errors",
		   after.commit_errors - before.commit_errors, 1,
		   "commit_errors added by one refused commit");
}

/*
 * Issue 25 item 6, a fence that forgets: a plain write W to REG_RANGE; a
 * pure flush of its key that the agent refuses (W lies past the region's
 * end once the target shrank it: FI_EINVAL, W never persisted); 16 pure
 * flushes to unknown keys (FI_ENOKEY each); then a fenced commit to
 * REG_RANGE.  It must fail (FI_EIO, at the call or as its completion),
 * never complete with W unpersisted, however many other keys failed in
 * between.  Over tcp (the key is requested, so it stays the same).
 */
void case_fence_after_many_failures(const char *name)
{
	uint64_t half = SMALL_REGION / 2, whole_key;
	struct cmsg m;
	struct outcome o;
	char sub[96];

	resize_region(REG_RANGE, SMALL_REGION);
	if (plain_write_wait(REG_RANGE, half + 4096, 100, 0x7400))
		die("%s: the plain write W failed", name);
	whole_key = g_s.reg[REG_RANGE].key;
	resize_region(REG_RANGE, half);
	if (g_s.reg[REG_RANGE].key != whole_key)
		die("%s: the region's key changed when it was shrunk (a core "
		    "that picks its keys): run this case over tcp", name);
	o = try_commit(&g_s.main, cmsg_flush(&m, REG_RANGE, whole_key),
		       FI_COMMIT_COMPLETE);
	snprintf(sub, sizeof(sub), "%s-refused", name);
	expect_cq_error(sub, &o, FI_EINVAL);
	for (unsigned i = 0; i < 16; i++) {
		o = try_commit(&g_s.main,
			       cmsg_flush(&m, REG_A, UNKNOWN_KEY + 1 + i),
			       FI_COMMIT_COMPLETE);
		if (o.ret || !o.completed || o.err != FI_ENOKEY)
			die("%s: flush %u to an unknown key: expected CQ "
			    "error FI_ENOKEY got %s / %s", name, i,
			    errname(o.ret), errname(o.err));
	}
	gen_fill(g_s.src, 8, 0x7401, 64); /* must not land */
	o = try_commit(&g_s.main, cmsg_make(&m, REG_RANGE, 64, 8),
		       FI_COMMIT_COMPLETE | FI_FENCE);
	if (o.ret) /* refused at the call: as good */
		expect_ret(name, o.ret, -FI_EIO);
	else
		expect_cq_error(name, &o, FI_EIO);
}

/*
 * One round of issue 25 item 7 at off of REG_A: a fenced 32-byte commit
 * of A at off + 1000 (by send on the agent's profiles), then at once,
 * before it completes, an unfenced 4 KiB commit of B over [off, off +
 * 4096).  Both must succeed and the region then hold B: true if it does.
 * *sent counts the rounds whose first commit went by send.
 */
static bool send_then_overlap_round(const char *name, uint64_t off,
				    uint64_t seed, unsigned *sent)
{
	uint8_t *a = g_s.src + LOCAL_STRIDE, *b = a + LOCAL_STRIDE;
	uint8_t *back = b + LOCAL_STRIDE;
	struct msg_parts ma, mb;
	struct fi_msg_rma msg_a = one_seg_msg(&ma, a, REG_A, off + 1000, 32);
	struct fi_msg_rma msg_b = one_seg_msg(&mb, b, REG_A, off, 4096);
	uint64_t sends = main_counters().sends;
	struct op *ca, *cb;
	struct outcome oa, ob;
	ssize_t ret;

	gen_fill(a, 32, seed, off + 1000);
	gen_fill(b, 4096, seed + 1, off);
	note_placed(REG_A, off, 4096, seed + 1);
	ca = post_commit(&g_s.main, &msg_a, FI_COMMIT_COMPLETE | FI_FENCE,
			 &ret);
	if (!ca)
		die("%s: posting A: %s", name, errname(ret));
	*sent += main_counters().sends != sends;
	cb = post_commit(&g_s.main, &msg_b, FI_COMMIT_COMPLETE, &ret);
	if (!cb)
		die("%s: posting B: %s", name, errname(ret));
	oa = commit_outcome(ca);
	ob = commit_outcome(cb);
	if (oa.ret || !oa.completed || oa.err || ob.ret || !ob.completed ||
	    ob.err)
		die("%s: the commits did not both succeed (A %s, B %s)", name,
		    errname(oa.err), errname(ob.err));
	if (rma_read(REG_A, off, back, 4096))
		die("%s: reading the range back failed", name);
	return !memcmp(back, b, 4096);
}

/*
 * Issue 25 item 7, an older send overwrites a newer commit: 20 rounds of
 * send_then_overlap_round, each at its own offset.
 */
void case_send_then_overlapping_commit(const char *name)
{
	const unsigned rounds = 20;
	unsigned bad = 0, sent = 0;

	for (unsigned r = 0; r < rounds; r++)
		bad += !send_then_overlap_round(name, (1u << 20) + r * 8192ull,
						0x7500 + 2 * r, &sent);
	verdict(!bad, check_name(name), "%s%u of %u rounds: the region held "
		"%s after both commits completed (%u rounds' fenced commit by "
		"send)", bad ? "expected B in every round got A's bytes in " :
		"", bad ? bad : rounds, rounds, bad ? "the older send's bytes" :
		"the later 4 KiB commit's bytes", sent);
}
