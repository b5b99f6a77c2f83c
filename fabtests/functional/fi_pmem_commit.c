/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * fi_pmem_commit: functional test of durable RMA writes (FI_COMMIT_COMPLETE)
 * to a remote file mapping.
 *
 *   target:    fi_pmem_commit [-p PROV] [-e msg] [-B PORT] [-f FILE]
 *   initiator: fi_pmem_commit [-p PROV] [-e msg] -s SERVER_ADDR [-B PORT]
 *
 * The target empties and maps a file (MAP_SHARED; a temporary file unless
 * -f is given), registers it (with FI_RMA_PMEM on pmemverbs) and sends its
 * address, key and persistence profile.  The initiator writes a
 * deterministic pattern (each byte a function of its offset in the file)
 * into fixed ranges of the region, one set of ranges per check:
 *
 *   commit         commits of 8, 64, 4096 and 65536 bytes, and one of two
 *                  iov entries, each fi_writemsg(FI_COMMIT_COMPLETE); on
 *                  pmemverbs the profile the target reported for the key
 *                  (peer_profile) must be the region's
 *   fenced_commit  four fi_writes, then an 8-byte write with
 *                  FI_FENCE | FI_COMMIT_COMPLETE
 *   immed          64 commits with FI_IMMED | FI_COMMIT_COMPLETE, 16 in
 *                  flight, msg.data = 0x1eed0000 + i; the target must get
 *                  each data value exactly once, in an entry with FI_RMA |
 *                  FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA, and find the
 *                  commit's bytes in place when it arrives (with -p tcp:
 *                  FI_REMOTE_CQ_DATA | FI_COMMIT_COMPLETE, the core's own,
 *                  whose target entries have no FI_RMA flag)
 *   flush          eight fi_writes, then a pure flush (iov_count 0,
 *                  rma_iov {addr, 0, key}) with FI_COMMIT_COMPLETE;
 *                  pmemverbs only
 *   immed_einval   FI_IMMED without FI_COMMIT_COMPLETE is -FI_EINVAL;
 *                  pmemverbs only
 *
 * After each check the initiator reads its ranges back with fi_read.  At
 * the end the target closes the region, reads the whole file back and
 * checks every byte: the pattern in the ranges written, 0 elsewhere
 * (file_contents).  Each side prints one PASS, FAIL or SKIP line per check
 * on stdout; the target sends its verdict to the initiator, so both exit 0
 * only if every check passed, 1 otherwise (2 on a usage error, 61 =
 * FI_ENODATA, a fabtests skip, for -e rdm).  Every wait is bounded.
 */
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/pmem_common.h"

#define DEFAULT_PROVIDER PM_PROVIDER
#define DEFAULT_PORT "9230"
#define REGION_LEN (1UL << 20)
#define IMMED_COUNT 64
#define IMMED_WINDOW 16
#define IMMED_BASE 0x1eed0000ULL
#define MAX_OUTSTANDING 128
#define IMMED_GRACE_NS (2 * PM_NS_PER_S) /* late FI_IMMED entries */

#define SETUP_MAGIC 0x31304d43564d50ULL   /* "PMVCM01" */
#define DONE_MAGIC 0x454e4f44564d50ULL    /* "PMVDONE" */
#define VERDICT_MAGIC 0x54445256564d50ULL /* "PMVVRDT" */

enum check_id {
	CK_COMMIT,
	CK_FENCE,
	CK_IMMED,
	CK_FLUSH,
	CK_EINVAL,
	CK_IMMED_TARGET, /* the target's */
	CK_FILE,         /* the target's */
	NCHECKS,
};

static const char *const check_names[NCHECKS] = {
	"commit", "fenced_commit", "immed", "flush", "immed_einval",
	"immed_target", "file_contents",
};

/* Ranges of the region each check writes: count ranges of len bytes,
 * stride apart, from off. */
struct range_set {
	enum check_id check;
	uint64_t off, len;
	int count;
	uint64_t stride;
};

enum {
	RS_COMMIT8, RS_COMMIT64, RS_COMMIT4K, RS_COMMIT64K, RS_COMMIT_IOV,
	RS_FENCE_DATA, RS_FENCE_PTR, RS_IMMED, RS_FLUSH, NRANGE_SETS,
};

static const struct range_set range_sets[NRANGE_SETS] = {
	[RS_COMMIT8] = { CK_COMMIT, 0x00000, 8, 1, 0 },
	[RS_COMMIT64] = { CK_COMMIT, 0x00040, 64, 1, 0 },
	[RS_COMMIT4K] = { CK_COMMIT, 0x01000, 4096, 1, 0 },
	[RS_COMMIT64K] = { CK_COMMIT, 0x10000, 65536, 1, 0 },
	[RS_COMMIT_IOV] = { CK_COMMIT, 0x20000, 64, 2, 0x100 },
	[RS_FENCE_DATA] = { CK_FENCE, 0x30000, 4096, 4, 0x1000 },
	[RS_FENCE_PTR] = { CK_FENCE, 0x2f000, 8, 1, 0 },
	[RS_IMMED] = { CK_IMMED, 0x40000, 256, IMMED_COUNT, 256 },
	[RS_FLUSH] = { CK_FLUSH, 0x80000, 8192, 8, 8192 },
};

struct options {
	const char *prov;
	enum fi_ep_type ep_type;
	const char *server;
	const char *port;
	const char *file;
};

/* Initiator to target, little-endian. */
struct setup_msg {
	uint64_t magic;
	uint64_t region_len;
};

struct done_msg {
	uint64_t magic;
	uint64_t written;     /* bit per check whose ranges were written */
	uint64_t immed_count; /* FI_IMMED commits that completed */
	uint64_t failed;      /* bit per initiator check that failed */
};

/* Target to initiator. */
struct verdict_msg {
	uint64_t magic;
	uint64_t failed;     /* bit per target check that failed */
	uint64_t immed_seen; /* distinct FI_IMMED data values */
};

enum verdict { V_PASS, V_FAIL, V_SKIP };

/* ------------------------------------------------------------- pattern */

/* The byte the pattern puts at offset off of the region. */
static uint8_t pattern_byte(uint64_t off)
{
	uint64_t x = (off >> 3) + 0x9e3779b97f4a7c15ULL;

	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return (uint8_t) (x >> (8 * (off & 7)));
}

static void fill_pattern(char *buf, uint64_t off, uint64_t len)
{
	uint64_t i;

	for (i = 0; i < len; i++)
		buf[i] = (char) pattern_byte(off + i);
}

/* Offset of the first mismatch of buf (at region offset off), or -1. */
static int64_t pattern_mismatch(const char *buf, uint64_t off, uint64_t len)
{
	uint64_t i;

	for (i = 0; i < len; i++)
		if ((uint8_t) buf[i] != pattern_byte(off + i))
			return (int64_t) (off + i);
	return -1;
}

static uint64_t range_off(int set, int i)
{
	return range_sets[set].off + (uint64_t) i * range_sets[set].stride;
}

/* When the check being printed started (the previous one ended). */
static int64_t check_clock;

/* Prints "NAME RESULT TIME detail" for a check on stdout. */
static void print_verdict(enum check_id id, enum verdict v, const char *fmt,
			  ...) __attribute__((format(printf, 3, 4)));

static void print_verdict(enum check_id id, enum verdict v, const char *fmt,
			  ...)
{
	static const char *const names[] = { "PASS", "FAIL", "SKIP" };
	int64_t now = pm_now_ns();
	va_list ap;

	printf("%-14s %s  %7.1f ms  ", check_names[id], names[v],
	       (double) (now - check_clock) / 1e6);
	check_clock = now;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

/* ----------------------------------------------------------- initiator */

struct client {
	const struct options *opts;
	struct pm_fabric *res;
	struct pm_conn *conn;
	struct pm_region region;
	bool pmem;
	struct fi_context2 ctx[MAX_OUTSTANDING];
	int done[MAX_OUTSTANDING]; /* completions per context */
	int posted;
	int completed;
};

static void ops_reset(struct client *c)
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
static int ops_wait(struct client *c, int max_outstanding, const char *what)
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

enum op { OP_WRITE, OP_MSG, OP_READ };

/* Posts one operation on the next context, retrying while busy. */
static int ops_post(struct client *c, enum op op, uint64_t off, size_t len,
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
				       pm_desc(conn), 0, addr, c->region.key,
				       ctx);
			break;
		case OP_READ:
			ret = fi_read(conn->ep, conn->dst + off, len,
				      pm_desc(conn), 0, addr, c->region.key,
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
static int read_back(struct client *c, int set, char *detail, size_t dlen)
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
static enum verdict check_commit(struct client *c, char *d, size_t dl)
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
	if (c->pmem) {
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
static enum verdict check_fence(struct client *c, char *d, size_t dl)
{
	const struct range_set *rs = &range_sets[RS_FENCE_DATA];
	struct fi_pmem_ep_counters before = { 0 }, after = { 0 };
	int i, ret = 0;

	if (c->pmem)
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
	if (c->pmem)
		c->res->pmem_ops->ep_counters(c->conn->ep, &after);
	if (read_back(c, RS_FENCE_DATA, d, dl) ||
	    read_back(c, RS_FENCE_PTR, d, dl))
		return V_FAIL;
	if (c->pmem)
		snprintf(d, dl, "4 writes + fenced commit; %" PRIu64
			 " commit requests sent for it", after.requests_sent -
			 before.requests_sent);
	else
		snprintf(d, dl, "4 writes + core FI_FENCE|FI_COMMIT_COMPLETE");
	return V_PASS;
}

/* immed: IMMED_COUNT commits raising a target completion each. */
static enum verdict check_immed(struct client *c, uint64_t *completed,
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

/* flush: plain writes, then a pure flush (iov_count 0). */
static enum verdict check_flush(struct client *c, char *d, size_t dl)
{
	const struct range_set *rs = &range_sets[RS_FLUSH];
	struct fi_pmem_ep_counters before, after;
	int i, ret = 0;

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
	c->res->pmem_ops->ep_counters(c->conn->ep, &after);
	if (after.commits != before.commits + 1) {
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
static enum verdict check_einval(struct client *c, char *d, size_t dl)
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

static int run_initiator(const struct options *opts)
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
		c->pmem = res.pmem_ops != NULL;
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

/* --------------------------------------------------------------- target */

struct server {
	const struct pm_fabric *res;
	struct pm_conn *conn;
	struct pm_file *file;
	bool pmem;
	bool seen[IMMED_COUNT];
	uint64_t nseen;
	char immed_err[256]; /* the first problem found, "" if none */
};

/* One target completion: checks its flags, its data and the bytes. */
static void take_immed(struct server *s, const struct fi_cq_data_entry *e)
{
	/* fi_ext_pmem(3) promises FI_RMA too; the tcp core does not set it */
	const uint64_t want = FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA |
			      (s->pmem ? FI_RMA : 0);
	const struct range_set *rs = &range_sets[RS_IMMED];
	uint64_t i = e->data - IMMED_BASE, off;
	int64_t bad;

	if (s->immed_err[0])
		return;
	if ((e->flags & want) != want) {
		snprintf(s->immed_err, sizeof(s->immed_err), "flags 0x%" PRIx64
			 ", expected %sFI_REMOTE_WRITE|FI_REMOTE_CQ_DATA",
			 e->flags, s->pmem ? "FI_RMA|" : "");
	} else if (e->data < IMMED_BASE || i >= IMMED_COUNT) {
		snprintf(s->immed_err, sizeof(s->immed_err), "unexpected data "
			 "0x%" PRIx64, e->data);
	} else if (s->seen[i]) {
		snprintf(s->immed_err, sizeof(s->immed_err), "data 0x%" PRIx64
			 " twice", e->data);
	} else if (s->pmem && (e->len || e->op_context)) {
		snprintf(s->immed_err, sizeof(s->immed_err), "entry with len "
			 "%zu and op_context %p, expected 0 and NULL", e->len,
			 e->op_context);
	} else {
		off = range_off(RS_IMMED, (int) i);
		bad = pattern_mismatch(s->file->map + off, off, rs->len);
		if (bad >= 0)
			snprintf(s->immed_err, sizeof(s->immed_err), "data "
				 "0x%" PRIx64 " arrived before its bytes (offset "
				 "0x%" PRIx64 ")", e->data, (uint64_t) bad);
		s->seen[i] = true;
		s->nseen++;
	}
}

/*
 * Reads the receive CQ until the initiator's results arrive (taking the
 * FI_IMMED completions on the way), then for up to IMMED_GRACE_NS more
 * while completions are missing.
 */
static int collect(struct server *s, struct done_msg *done)
{
	int64_t deadline = pm_now_ns() + PM_SESSION_TIMEOUT_NS;
	struct pm_conn *conn = s->conn;
	struct fi_cq_data_entry e;
	bool have_done = false;
	int ret;

	for (;;) {
		ret = pm_read_one_before(conn->rx_cq, pm_now_ns() +
					 PM_POLL_INTERVAL_MS * PM_NS_PER_MS,
					 "reading the receive CQ", &e);
		if (ret == -FI_ETIMEDOUT) {
			if (have_done && (s->nseen >= done->immed_count ||
					  pm_past(deadline)))
				return 0;
			if (!have_done && pm_initiator_gone(s->res)) {
				pm_complain("the initiator left");
				return -FI_ECONNRESET;
			}
			if (pm_past(deadline)) {
				pm_complain("timed out");
				return -FI_ETIMEDOUT;
			}
			continue;
		}
		if (ret)
			return ret;
		if (e.flags & FI_REMOTE_CQ_DATA) {
			take_immed(s, &e);
		} else if (e.op_context == &conn->ctrl_rx_ctx && !have_done &&
			   e.len == sizeof(*done)) {
			memcpy(done, conn->ctrl_rx, sizeof(*done));
			done->magic = le64toh(done->magic);
			done->written = le64toh(done->written);
			done->immed_count = le64toh(done->immed_count);
			done->failed = le64toh(done->failed);
			if (done->magic != DONE_MAGIC) {
				pm_complain("unexpected results message");
				return -FI_EOTHER;
			}
			have_done = true;
			deadline = pm_now_ns() + IMMED_GRACE_NS;
			ret = pm_post_ctrl_recv(conn);
			if (ret)
				return ret;
		} else {
			pm_complain("unexpected receive completion (flags 0x%"
				    PRIx64 ")", e.flags);
			return -FI_EOTHER;
		}
	}
}

/* Whether region offset off lies in a range of a check in mask. */
static bool written_at(uint64_t off, uint64_t mask)
{
	const struct range_set *rs;
	int set, i;

	for (set = 0; set < NRANGE_SETS; set++) {
		rs = &range_sets[set];
		if (!((mask >> rs->check) & 1))
			continue;
		for (i = 0; i < rs->count; i++)
			if (off >= range_off(set, i) &&
			    off < range_off(set, i) + rs->len)
				return true;
	}
	return false;
}

/* Reads the file back (not through the mapping) and checks every byte. */
static enum verdict check_file(const struct pm_file *file, uint64_t written,
			       char *d, size_t dl)
{
	char *buf = malloc(REGION_LEN);
	uint64_t off, nwritten = 0;
	ssize_t n;
	uint8_t want;

	if (!buf) {
		snprintf(d, dl, "out of memory");
		return V_FAIL;
	}
	n = pread(file->fd, buf, REGION_LEN, 0);
	if (n != (ssize_t) REGION_LEN) {
		snprintf(d, dl, "reading %s: %s", file->path,
			 n < 0 ? strerror(errno) : "short read");
		free(buf);
		return V_FAIL;
	}
	for (off = 0; off < REGION_LEN; off++) {
		bool w = written_at(off, written);

		nwritten += w;
		want = w ? pattern_byte(off) : 0;
		if ((uint8_t) buf[off] != want) {
			snprintf(d, dl, "%s: byte at 0x%" PRIx64 " is 0x%02x, "
				 "expected 0x%02x", file->path, off,
				 (uint8_t) buf[off], want);
			free(buf);
			return V_FAIL;
		}
	}
	free(buf);
	snprintf(d, dl, "%s: %" PRIu64 " bytes of pattern, the other %"
		 PRIu64 " zero", file->path, nwritten, REGION_LEN - nwritten);
	return V_PASS;
}

/* pm_run_target's callback. */
static int serve_initiator(const void *arg, const struct pm_fabric *res,
			   struct pm_conn *conn, struct pm_file *file)
{
	const struct options *opts = arg;
	struct server s = { .res = res, .conn = conn, .file = file,
			    .pmem = res->pmem_ops != NULL };
	struct setup_msg setup;
	struct done_msg done = { 0 };
	struct verdict_msg verdict = { .magic = htole64(VERDICT_MAGIC) };
	struct fid_mr *mr = NULL;
	uint64_t failed = 0;
	enum verdict v;
	char d[PATH_MAX + 256];
	int ret;

	ret = pm_recv_ctrl(conn, pm_now_ns() + PM_CM_TIMEOUT_NS,
			   "receiving the initiator's request", &setup,
			   sizeof(setup));
	if (!ret && (le64toh(setup.magic) != SETUP_MAGIC ||
		     le64toh(setup.region_len) != REGION_LEN)) {
		pm_complain("unexpected request (is the initiator "
			    "fi_pmem_commit?)");
		ret = -FI_EINVAL;
	}
	if (!ret)
		ret = pm_map_file(opts->file, "fi_pmem_commit", REGION_LEN,
				  true, file);
	if (!ret)
		ret = pm_register_region(res, conn, file, &mr);
	if (!ret)
		ret = pm_send_region(res, conn, mr, file);
	check_clock = pm_now_ns();
	if (!ret)
		ret = collect(&s, &done);
	pm_close_fid(mr ? &mr->fid : NULL, "closing the region");
	if (ret)
		return ret;
	pm_report_counters(res, conn->ep);

	if (s.immed_err[0])
		v = V_FAIL;
	else
		v = s.nseen == IMMED_COUNT && done.immed_count == IMMED_COUNT ?
		    V_PASS : V_FAIL;
	if (s.immed_err[0])
		snprintf(d, sizeof(d), "%s", s.immed_err);
	else
		snprintf(d, sizeof(d), "%" PRIu64 " of %d data values, each "
			 "once, with its bytes in place", s.nseen,
			 IMMED_COUNT);
	print_verdict(CK_IMMED_TARGET, v, "%s", d);
	failed |= (uint64_t) (v == V_FAIL) << CK_IMMED_TARGET;

	v = check_file(file, done.written, d, sizeof(d));
	print_verdict(CK_FILE, v, "%s", d);
	failed |= (uint64_t) (v == V_FAIL) << CK_FILE;

	verdict.failed = htole64(failed);
	verdict.immed_seen = htole64(s.nseen);
	ret = pm_send_ctrl(conn, &verdict, sizeof(verdict),
			   "sending the verdict");
	if (!ret)
		printf("%s\n", failed | done.failed ? "FAIL" :
		       "PASS: all checks");
	return ret ? ret : failed | done.failed ? -FI_EIO : 0;
}

static int run_target(const struct options *opts)
{
	return pm_run_target(opts->prov, opts->port, 16, serve_initiator, opts);
}

/* -------------------------------------------------------------- options */

static void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [-p PROV] [-e msg|rdm] [-s SERVER_ADDR] [-B PORT] "
		"[-f FILE]\n"
		"  without -s: the target; with -s: the initiator\n"
		"  -p  provider (%s); -e endpoint type (msg); -B port (%s)\n"
		"  -f  target's file, emptied first (default: a temporary "
		"file)\n", prog, DEFAULT_PROVIDER, DEFAULT_PORT);
}

static bool parse_options(int argc, char **argv, struct options *opts)
{
	long value;
	int c;

	*opts = (struct options) {
		.prov = DEFAULT_PROVIDER, .ep_type = FI_EP_MSG,
		.port = DEFAULT_PORT,
	};
	while ((c = getopt(argc, argv, "p:e:s:B:f:h")) != -1) {
		switch (c) {
		case 'p': opts->prov = optarg; break;
		case 'e':
			if (!pm_parse_ep_type(optarg, &opts->ep_type))
				return false;
			break;
		case 's': opts->server = optarg; break;
		case 'B':
			if (!pm_parse_long(optarg, 1, 65535, &value))
				return false;
			opts->port = optarg;
			break;
		case 'f': opts->file = optarg; break;
		default: return false;
		}
	}
	if (opts->server && opts->file) {
		fprintf(stderr, "-f is for the target (no -s)\n");
		return false;
	}
	return optind == argc;
}

int main(int argc, char **argv)
{
	struct options opts;
	int ret;

	if (!parse_options(argc, argv, &opts)) {
		usage(argv[0]);
		return PM_EXIT_USAGE;
	}
	pm_role = opts.server ? "[initiator]" : "[target]";
	if (opts.ep_type != FI_EP_MSG)
		return pm_check_ep_type(opts.prov, opts.ep_type);
	ret = opts.server ? run_initiator(&opts) : run_target(&opts);
	return ret ? PM_EXIT_FAIL : PM_EXIT_PASS;
}
