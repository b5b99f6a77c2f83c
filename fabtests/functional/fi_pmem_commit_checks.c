/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * fi_pmem_commit: the initiator's checks, one function each (see
 * fi_pmem_commit.c for what each checks).
 */
#include "fi_pmem_commit.h"

enum verdict check_commit(struct client *c, char *d, size_t dl)
{
	static const int sets[] = { RS_COMMIT8, RS_COMMIT64, RS_COMMIT4K,
				    RS_COMMIT64K };
	const struct range_set *iov_set = &range_sets[RS_COMMIT_IOV];
	struct pm_conn *conn = c->conn;
	struct iovec iov[2];
	struct fi_rma_iov rma[2];
	void *desc[2] = { pm_desc(conn), pm_desc(conn) };
	struct fi_msg_rma msg = {
		.msg_iov = iov, .desc = desc, .iov_count = 2,
		.rma_iov = rma, .rma_iov_count = 2,
	};
	enum fi_pmem_profile peer;
	size_t i;
	int ret = 0;

	for (i = 0; !ret && i < sizeof(sets) / sizeof(sets[0]); i++) {
		ops_reset(c);
		ret = ops_post(c, OP_MSG, range_sets[sets[i]].off,
			       range_sets[sets[i]].len, 0,
			       FI_COMMIT_COMPLETE | FI_COMPLETION, "commit");
		if (!ret)
			ret = ops_wait(c, 0, "commit");
	}
	if (!ret) {
		ops_reset(c);
		for (i = 0; i < 2; i++) {
			uint64_t off = range_off(RS_COMMIT_IOV, (int) i);

			iov[i] = (struct iovec) { conn->src + off,
						  iov_set->len };
			rma[i] = (struct fi_rma_iov) { c->region.addr + off,
						       iov_set->len,
						       c->region.key };
		}
		msg.context = &c->ctx[0];
		msg.addr = conn->peer;
		ret = pm_check(fi_writemsg(conn->ep, &msg, FI_COMMIT_COMPLETE |
					   FI_COMPLETION),
			       "two-iov commit");
		if (!ret) {
			c->posted = 1;
			ret = ops_wait(c, 0, "two-iov commit");
		}
	}
	if (ret) {
		snprintf(d, dl, "a commit failed: %s", fi_strerror(-ret));
		return V_FAIL;
	}
	if (c->res->pmem_ops) {
		peer = c->res->pmem_ops->peer_profile(conn->ep, c->region.key);
		if ((uint64_t) peer != c->region.profile_code) {
			snprintf(d, dl, "peer_profile %s, the region is %s",
				 fi_pmem_profile_str(peer), c->region.profile);
			return V_FAIL;
		}
	}
	for (i = 0; i < sizeof(sets) / sizeof(sets[0]); i++)
		if (read_back(c, sets[i], d, dl))
			return V_FAIL;
	if (read_back(c, RS_COMMIT_IOV, d, dl))
		return V_FAIL;
	snprintf(d, dl, "5 commits of 8 to 65536 bytes (one with 2 iovs)%s%s",
		 c->pmem ? "; peer profile " : "",
		 c->pmem ? c->region.profile : "");
	return V_PASS;
}

/* fenced_commit: four plain writes, then a fenced 8-byte commit. */
enum verdict check_fence(struct client *c, char *d, size_t dl)
{
	const struct range_set *rs = &range_sets[RS_FENCE_DATA];
	struct fi_pmem_ep_counters before = { 0 }, after = { 0 };
	int i, ret = 0;

	if (c->res->pmem_ops)
		c->res->pmem_ops->ep_counters(c->conn->ep, &before);
	ops_reset(c);
	for (i = 0; !ret && i < rs->count; i++)
		ret = ops_post(c, OP_WRITE, range_off(RS_FENCE_DATA, i),
			       rs->len, 0, 0, "fi_write");
	if (!ret)
		ret = ops_post(c, OP_MSG, range_sets[RS_FENCE_PTR].off,
			       range_sets[RS_FENCE_PTR].len, 0,
			       FI_FENCE | FI_COMMIT_COMPLETE | FI_COMPLETION,
			       "fenced commit");
	if (!ret)
		ret = ops_wait(c, 0, "fenced commit");
	if (ret) {
		snprintf(d, dl, "failed: %s", fi_strerror(-ret));
		return V_FAIL;
	}
	if (c->res->pmem_ops)
		c->res->pmem_ops->ep_counters(c->conn->ep, &after);
	if (read_back(c, RS_FENCE_DATA, d, dl) ||
	    read_back(c, RS_FENCE_PTR, d, dl))
		return V_FAIL;
	if (c->res->pmem_ops)
		snprintf(d, dl, "4 writes + fenced commit; %" PRIu64
			 " commit requests sent for it", after.requests_sent -
			 before.requests_sent);
	else
		snprintf(d, dl, "4 writes + %s FI_FENCE|FI_COMMIT_COMPLETE",
			 c->pmem ? "RDM (no pmemverbs counters)" : "core");
	return V_PASS;
}

/* immed: IMMED_COUNT commits raising a target completion each. */
enum verdict check_immed(struct client *c, uint64_t *completed,
			 char *d, size_t dl)
{
	const struct range_set *rs = &range_sets[RS_IMMED];
	uint64_t flags = FI_COMMIT_COMPLETE | FI_COMPLETION |
			 (c->pmem ? FI_IMMED : FI_REMOTE_CQ_DATA);
	int i, ret = 0;

	ops_reset(c);
	for (i = 0; !ret && i < rs->count; i++) {
		ret = ops_wait(c, IMMED_WINDOW - 1, "FI_IMMED commit");
		if (!ret)
			ret = ops_post(c, OP_MSG, range_off(RS_IMMED, i),
				       rs->len, IMMED_BASE + (uint64_t) i,
				       flags, "FI_IMMED commit");
	}
	if (!ret)
		ret = ops_wait(c, 0, "FI_IMMED commit");
	*completed = (uint64_t) c->completed;
	if (ret) {
		snprintf(d, dl, "failed after %d completions: %s",
			 c->completed, fi_strerror(-ret));
		return V_FAIL;
	}
	if (read_back(c, RS_IMMED, d, dl))
		return V_FAIL;
	snprintf(d, dl, "%d commits with %s, %d in flight", rs->count,
		 c->pmem ? "FI_IMMED" : "the core's FI_REMOTE_CQ_DATA",
		 IMMED_WINDOW);
	return V_PASS;
}

/* flush: plain writes, then a pure flush (iov_count 0); its commit is
 * counted where pmemverbs's counters are (MSG: not on RDM, rxm's). */
enum verdict check_flush(struct client *c, char *d, size_t dl)
{
	const struct range_set *rs = &range_sets[RS_FLUSH];
	struct fi_pmem_ep_counters before = { 0 }, after = { 0 };
	int i, ret = 0;

	if (c->res->pmem_ops)
		c->res->pmem_ops->ep_counters(c->conn->ep, &before);
	ops_reset(c);
	for (i = 0; !ret && i < rs->count; i++)
		ret = ops_post(c, OP_WRITE, range_off(RS_FLUSH, i),
			       rs->len, 0, 0, "fi_write");
	if (!ret)
		ret = ops_post(c, OP_MSG, 0, 0, 0,
			       FI_COMMIT_COMPLETE | FI_COMPLETION,
			       "pure flush");
	if (!ret)
		ret = ops_wait(c, 0, "pure flush");
	if (ret) {
		snprintf(d, dl, "failed: %s", fi_strerror(-ret));
		return V_FAIL;
	}
	if (c->res->pmem_ops)
		c->res->pmem_ops->ep_counters(c->conn->ep, &after);
	if (c->res->pmem_ops && after.commits != before.commits + 1) {
		snprintf(d, dl, "the commits counter went from %" PRIu64
			 " to %" PRIu64 ", expected one more", before.commits,
			 after.commits);
		return V_FAIL;
	}
	if (read_back(c, RS_FLUSH, d, dl))
		return V_FAIL;
	snprintf(d, dl, "%d writes of %" PRIu64 " bytes + 1 pure flush",
		 rs->count, rs->len);
	return V_PASS;
}

/* immed_einval: FI_IMMED without FI_COMMIT_COMPLETE is refused. */
enum verdict check_einval(struct client *c, char *d, size_t dl)
{
	const struct range_set *rs = &range_sets[RS_COMMIT64];
	ssize_t ret;

	ops_reset(c);
	ret = pm_writemsg(c->conn, c->conn->src + rs->off, rs->len,
			  c->region.addr + rs->off, c->region.key, 1,
			  FI_IMMED | FI_COMPLETION, &c->ctx[0]);
	if (ret == -FI_EINVAL) {
		snprintf(d, dl, "-FI_EINVAL");
		return V_PASS;
	}
	if (!ret) { /* posted after all: collect its completion */
		c->posted = 1;
		ops_wait(c, 0, "FI_IMMED without FI_COMMIT_COMPLETE");
	}
	snprintf(d, dl, "returned %zd (%s), expected -FI_EINVAL", ret,
		 fi_strerror((int) -ret));
	return V_FAIL;
}
