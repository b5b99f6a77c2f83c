/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * fi_pmem_commit: the initiator (see fi_pmem_commit.c): its operations
 * (post, reap, wait, read back), running the checks and reporting them.
 */
#include "fi_pmem_commit.h"

void ops_reset(struct client *c)
{
	memset(c->done, 0, sizeof(c->done));
	c->posted = c->completed = 0;
}

/* Reads the completions that are there; false on an error. */
static int ops_reap(struct client *c, const char *what)
{
	struct fi_cq_data_entry e[8];
	ssize_t n, i, slot;

	n = fi_cq_read(c->conn->tx_cq, e, 8);
	if (n == -FI_EAGAIN)
		return 0;
	if (n == -FI_EAVAIL)
		return pm_report_cq_error(c->conn->tx_cq, what);
	if (n < 0)
		return pm_check(n, what);
	for (i = 0; i < n; i++) {
		slot = (struct fi_context2 *) e[i].op_context - c->ctx;
		if (slot < 0 || slot >= c->posted || c->done[slot]) {
			pm_complain("%s: unexpected completion (context %p)",
				    what, e[i].op_context);
			return -FI_EOTHER;
		}
		c->done[slot]++;
	}
	c->completed += (int) n;
	return 0;
}

/* Waits until at most max_outstanding operations are incomplete. */
int ops_wait(struct client *c, int max_outstanding, const char *what)
{
	int64_t deadline = pm_now_ns() + PM_OP_TIMEOUT_NS;
	int ret = 0;

	while (!ret && c->posted - c->completed > max_outstanding) {
		if (pm_past(deadline)) {
			pm_complain("%s: %d operations incomplete after %lld s",
				    what, c->posted - c->completed,
				    PM_OP_TIMEOUT_NS / PM_NS_PER_S);
			return -FI_ETIMEDOUT;
		}
		ret = ops_reap(c, what);
	}
	return ret;
}

/* Posts one operation on the next context, retrying while busy. */
int ops_post(struct client *c, enum op op, uint64_t off, size_t len,
	     uint64_t data, uint64_t flags, const char *what)
{
	int64_t deadline = pm_now_ns() + PM_OP_TIMEOUT_NS;
	struct pm_conn *conn = c->conn;
	uint64_t addr = c->region.addr + off;
	void *ctx = &c->ctx[c->posted];
	ssize_t ret;

	if (c->posted == MAX_OUTSTANDING)
		return pm_check(-FI_ENOSPC, what);
	for (;;) {
		switch (op) {
		case OP_WRITE:
			ret = fi_write(conn->ep, conn->src + off, len,
				       pm_desc(conn), conn->peer, addr,
				       c->region.key,
				       ctx);
			break;
		case OP_READ:
			ret = fi_read(conn->ep, conn->dst + off, len,
				      pm_desc(conn), conn->peer, addr,
				      c->region.key,
				      ctx);
			break;
		default:
			ret = pm_writemsg(conn, conn->src + off, len,
					  len ? addr : c->region.addr,
					  c->region.key, data, flags, ctx);
			break;
		}
		if (ret != -FI_EAGAIN)
			break;
		if (pm_past(deadline))
			return pm_check(-FI_ETIMEDOUT, what);
		ret = ops_reap(c, what);
		if (ret)
			return (int) ret;
	}
	if (ret)
		return pm_check(ret, what);
	c->posted++;
	return 0;
}

/* Reads the ranges of a set back and compares them with the pattern. */
int read_back(struct client *c, int set, char *detail, size_t dlen)
{
	const struct range_set *rs = &range_sets[set];
	int64_t bad;
	int i, ret = 0;

	ops_reset(c);
	for (i = 0; !ret && i < rs->count; i++) {
		memset(c->conn->dst + range_off(set, i), 0, rs->len);
		ret = ops_post(c, OP_READ, range_off(set, i), rs->len, 0, 0,
			       "fi_read");
	}
	if (!ret)
		ret = ops_wait(c, 0, "fi_read");
	for (i = 0; !ret && i < rs->count; i++) {
		bad = pattern_mismatch(c->conn->dst + range_off(set, i),
				       range_off(set, i), rs->len);
		if (bad >= 0) {
			snprintf(detail, dlen, "read back: byte at offset "
				 "0x%" PRIx64 " differs", (uint64_t) bad);
			return -FI_EIO;
		}
	}
	if (ret)
		snprintf(detail, dlen, "read back failed: %s",
			 fi_strerror(-ret));
	return ret;
}

/* commit: single-range commits of four sizes, then a two-iov commit. */
static int run_checks(struct client *c, struct done_msg *done)
{
	char d[256];
	enum verdict v;
	uint64_t immed = 0;

	fill_pattern(c->conn->src, 0, REGION_LEN);
	check_clock = pm_now_ns();

	v = check_commit(c, d, sizeof(d));
	print_verdict(CK_COMMIT, v, "%s", d);
	done->written |= 1ULL << CK_COMMIT;
	done->failed |= (uint64_t) (v == V_FAIL) << CK_COMMIT;

	v = check_fence(c, d, sizeof(d));
	print_verdict(CK_FENCE, v, "%s", d);
	done->written |= 1ULL << CK_FENCE;
	done->failed |= (uint64_t) (v == V_FAIL) << CK_FENCE;

	v = check_immed(c, &immed, d, sizeof(d));
	print_verdict(CK_IMMED, v, "%s", d);
	done->written |= 1ULL << CK_IMMED;
	done->failed |= (uint64_t) (v == V_FAIL) << CK_IMMED;
	done->immed_count = immed;

	if (c->pmem) {
		v = check_flush(c, d, sizeof(d));
		print_verdict(CK_FLUSH, v, "%s", d);
		done->written |= 1ULL << CK_FLUSH;
		done->failed |= (uint64_t) (v == V_FAIL) << CK_FLUSH;

		v = check_einval(c, d, sizeof(d));
		print_verdict(CK_EINVAL, v, "%s", d);
		done->failed |= (uint64_t) (v == V_FAIL) << CK_EINVAL;
	} else {
		print_verdict(CK_FLUSH, V_SKIP, "pure flush needs -p %s",
			      PM_PROVIDER);
		print_verdict(CK_EINVAL, V_SKIP, "FI_IMMED needs -p %s",
			      PM_PROVIDER);
	}
	return 0;
}

int run_initiator(const struct options *opts)
{
	struct pm_fabric res = { 0 };
	struct pm_conn conn = { 0 };
	struct client *c = calloc(1, sizeof(*c));
	struct setup_msg setup = {
		.magic = htole64(SETUP_MAGIC),
		.region_len = htole64(REGION_LEN),
	};
	struct done_msg done = { 0 };
	struct verdict_msg verdict;
	uint64_t failed = 0;
	int ret = c ? 0 : pm_check(-FI_ENOMEM, "allocating the test");
	int i;

	if (!ret)
		ret = pm_open_fabric(opts->prov, opts->server, opts->port, &res);
	if (!ret)
		ret = pm_connect(&res, opts->server, opts->port, REGION_LEN,
				 2 * MAX_OUTSTANDING, &conn);
	if (!ret)
		ret = pm_send_ctrl(&conn, &setup, sizeof(setup),
				   "asking for the region");
	if (!ret)
		ret = pm_receive_region(&conn, &c->region);
	if (!ret)
		ret = pm_post_ctrl_recv(&conn);
	if (!ret && c->region.len < REGION_LEN) {
		pm_complain("the target's region is too small");
		ret = -FI_EINVAL;
	}
	if (!ret) {
		pm_say("%s to %s port %s: region of %" PRIu64 " bytes, "
		       "profile %s", opts->prov, opts->server, opts->port,
		       c->region.len, c->region.profile);
		c->opts = opts;
		c->res = &res;
		c->conn = &conn;
		c->pmem = pm_is_pmemverbs(opts->prov);
		ret = run_checks(c, &done);
		failed = done.failed;
		pm_report_counters(&res, conn.ep);
	}
	if (!ret) {
		done.magic = htole64(DONE_MAGIC);
		done.written = htole64(done.written);
		done.immed_count = htole64(done.immed_count);
		done.failed = htole64(done.failed);
		ret = pm_send_ctrl(&conn, &done, sizeof(done),
				   "sending the results");
	}
	if (!ret)
		ret = pm_recv_ctrl(&conn, pm_now_ns() + PM_CM_TIMEOUT_NS,
				   "receiving the target's verdict", &verdict,
				   sizeof(verdict));
	if (!ret && le64toh(verdict.magic) != VERDICT_MAGIC) {
		pm_complain("unexpected verdict message");
		ret = -FI_EOTHER;
	}
	if (!ret) {
		failed |= le64toh(verdict.failed);
		for (i = CK_IMMED_TARGET; i < NCHECKS; i++)
			printf("%-14s %s  (checked by the target)\n",
			       check_names[i],
			       (le64toh(verdict.failed) >> i) & 1 ? "FAIL" :
			       "PASS");
		fi_shutdown(conn.ep, 0);
	}
	pm_close_conn(&conn);
	pm_close_fabric(&res);
	free(c);
	if (!ret)
		printf("%s\n", failed ? "FAIL" : "PASS: all checks");
	return ret ? ret : failed ? -FI_EIO : 0;
}
