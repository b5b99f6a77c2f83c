/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * fi_pmem_commit: the target (see fi_pmem_commit.c): collects the
 * FI_IMMED completions, checks the file's contents and sends its verdict.
 */
#include "fi_pmem_commit.h"

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
			    .pmem = pm_is_pmemverbs(opts->prov) };
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

int run_target(const struct options *opts)
{
	return pm_run_target(opts->prov, opts->port, 16, serve_initiator, opts);
}
