/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_ct_bi_commit.c - Bad-input cases: segments, volatile regions, failed
 * persists, a truncated region, profiles and an idle target.
 */

#include "pmv_ct.h"

/* ---- cases: what must work ---- */

/*
 * A commit carrying two remote segments of one key (a gap between them),
 * on an endpoint whose rma_iov_limit is 1 (the verbs core; with a higher
 * limit, the tcp core's 4, the matrix's commits use two segments and the
 * contents test checks them, so this case prints nothing).  pmemverbs
 * takes up to 4 segments per commit (more: -FI_EINVAL), whatever the
 * core's limit.  The commit must either be refused at once with
 * -FI_EINVAL, or complete with each segment's bytes at its own address
 * and the gap untouched.  (A core with rma_iov_limit 1 writes all the data
 * at rma_iov[0].addr if handed both.)  After a mismatch the test repairs
 * the bytes, so the contents check reports only this case.
 */
void case_commit_two_segments(const char *name)
{
	const uint64_t off[2] = { 60000, 60300 };
	const size_t len[2] = { 100, 120 };
	const uint64_t seed = 0x7020;
	uint8_t *back = g_s.src + 2 * (size_t)LOCAL_STRIDE;
	struct cmsg m;
	struct fi_msg_rma *msg = cmsg_make(&m, REG_A, off[0], len[0] + len[1]);
	char got[160] = "";
	struct outcome o;

	if (g_net.rma_iov_limit >= 2)
		return; /* the matrix covers it */
	gen_fill(g_s.src, len[0], seed, off[0]);
	gen_fill(g_s.src + len[0], len[1], seed, off[1]);
	m.rma[0].len = len[0];
	m.rma[1] = (struct fi_rma_iov){ rma_addr(REG_A, off[1]), len[1],
					g_s.reg[REG_A].key };
	msg->rma_iov_count = 2;
	o = try_commit(&g_s.main, msg, FI_COMMIT_COMPLETE);
	if (o.ret == -FI_EINVAL) {
		verdict(true, check_name(name), "refused with FI_EINVAL "
			"(the endpoint's rma_iov_limit is %zu)",
			g_net.rma_iov_limit);
		return;
	}
	if (o.ret || !o.completed || o.err) {
		expect_success(name, &o);
		return;
	}
	note_placed(REG_A, off[0], len[0], seed);
	note_placed(REG_A, off[1], len[1], seed);
	if (rma_read(REG_A, off[0], back, off[1] + len[1] - off[0]))
		die("%s: reading the segments back failed", name);
	for (size_t i = 0; i < off[1] + len[1] - off[0]; i++) {
		uint64_t at = off[0] + i;
		bool in0 = at < off[0] + len[0], in1 = at >= off[1];
		uint8_t want = in0 || in1 ? gen_byte(seed, at) : 0;

		if (back[i] != want) {
			snprintf(got, sizeof(got), "byte %" PRIu64 " of "
				 "pmem-a (%s) is 0x%02x, expected 0x%02x",
				 at, in0 ? "segment 0" : in1 ? "segment 1" :
				 "the gap between them", back[i], want);
			break;
		}
	}
	if (!got[0]) {
		verdict(true, check_name(name), "completed; both segments in "
			"place, the gap untouched (the core's rma_iov_limit is "
			"%zu)", g_net.rma_iov_limit);
		return;
	}
	verdict(false, check_name(name), "expected -FI_EINVAL or both "
		"segments at their addresses got the commit completed "
		"successfully with %s (the endpoint's rma_iov_limit is %zu: "
		"the data of both segments went to rma_iov[0].addr)", got,
		g_net.rma_iov_limit);
	/* Repair, one segment per commit: the data, then a zero gap. */
	for (int i = 0; i < 2; i++) {
		gen_fill(g_s.src, len[i], seed, off[i]);
		o = try_commit(&g_s.main, cmsg_make(&m, REG_A, off[i], len[i]),
			       FI_COMMIT_COMPLETE);
		if (o.ret || o.err || !o.completed)
			die("%s: repairing segment %d failed", name, i);
	}
	memset(g_s.src, 0, off[1] - off[0] - len[0]);
	o = try_commit(&g_s.main, cmsg_make(&m, REG_A, off[0] + len[0],
					    off[1] - off[0] - len[0]),
		       FI_COMMIT_COMPLETE);
	if (o.ret || o.err || !o.completed)
		die("%s: repairing the gap failed", name);
}

void case_volatile_commit(const char *name)
{
	struct cmsg m;
	struct outcome o;

	place(REG_VOL, 1000, 77, 0x7001);
	o = try_commit(&g_s.main, cmsg_make(&m, REG_VOL, 1000, 77),
		       FI_COMMIT_COMPLETE);
	expect_success(name, &o);
	expect_profile("volatile-peer-profile",
		       g_net.pmem->peer_profile(g_s.main.ep,
						g_s.reg[REG_VOL].key),
		       FI_PMEM_PROFILE_VOLATILE,
		       "after a commit to the volatile region");
}

void case_flush_nothing_written(const char *name)
{
	struct cmsg m;
	struct outcome o = try_commit(&g_s.main,
				      cmsg_flush(&m, REG_B, g_s.reg[REG_B].key),
				      FI_COMMIT_COMPLETE);

	expect_success(name, &o);
}

/* After the errors above, a commit with data still works. */
void case_commit_after_errors(const char *name)
{
	struct cmsg m;
	struct outcome o;

	place(REG_A, 5000, 333, 0x7002);
	o = try_commit(&g_s.main, cmsg_make(&m, REG_A, 5000, 333),
		       FI_COMMIT_COMPLETE | FI_FENCE);
	expect_success(name, &o);
}

/*
 * The target runs with FI_PMEMVERBS_FAULT_PERSIST=1: its first persist
 * call fails as a failed msync would.  That commit must end in FI_EIO,
 * a fence behind it must fail too, and the next commit succeed.
 */
void case_persist_fails(const char *name)
{
	static const char *const steps[] = { "first", "fenced-after",
					     "next-succeeds" };
	static const uint64_t flags[] = { 0, FI_FENCE, 0 };
	struct cmsg m;
	struct outcome o;
	char sub[96];

	for (size_t i = 0; i < ARRAY_LEN(steps); i++) {
		place(REG_A, 8192, 64, 0x7200 + i);
		o = try_commit(&g_s.main, cmsg_make(&m, REG_A, 8192, 64),
			       FI_COMMIT_COMPLETE | flags[i]);
		snprintf(sub, sizeof(sub), "%s-%s", name, steps[i]);
		if (i == 1 && o.ret) /* refused at the call: as good */
			expect_ret(sub, o.ret, -FI_EIO);
		else if (i < 2)
			expect_cq_error(sub, &o, FI_EIO);
		else
			expect_success(sub, &o);
	}
}

/*
 * The target's region file cut at file offset cut (its tail saved in
 * *tail), or restored from *tail (NULL: cut it).  Another process
 * truncating the file under the target's live registration.
 */
static void truncate_target_file(size_t cut, uint8_t **tail)
{
	size_t size = region_file_off(REG_COUNT), len = size - cut;
	int fd = open(g_opt.target_file, O_RDWR);

	if (fd < 0)
		die("opening the target's file %s: %s", g_opt.target_file,
		    strerror(errno));
	if (!*tail) {
		*tail = malloc(len);
		if (!*tail || pread(fd, *tail, len, (off_t)cut) != (ssize_t)len ||
		    ftruncate(fd, (off_t)cut))
			die("truncating the target's file: %s", strerror(errno));
	} else {
		if (ftruncate(fd, (off_t)size) ||
		    pwrite(fd, *tail, len, (off_t)cut) != (ssize_t)len)
			die("restoring the target's file: %s", strerror(errno));
		free(*tail);
		*tail = NULL;
	}
	close(fd);
}

/*
 * A file truncated under a live registration (issue 25, 3): 4 KiB written
 * to REG_RANGE at 16 KiB and placed, then another process cuts the file
 * at REG_RANGE's 8 KiB.  A pure flush naming the range (agent) and a small
 * fenced commit into it (send, on another connection) must fail with
 * FI_EIO, not kill the target
 * with SIGBUS; then a commit to REG_A succeeds (the target lives), and
 * once the file is whole again the range commits again.
 */
void case_truncated_region(const char *name)
{
	size_t cut = region_file_off(REG_RANGE) + 8192;
	uint8_t *tail = NULL;
	struct conn c = { 0 };
	struct cmsg m;
	struct outcome o;
	char sub[96];

	struct stat st;

	if (!g_opt.target_file || stat(g_opt.target_file, &st) ||
	    !S_ISREG(st.st_mode))
		die("%s needs the target's region file (-F), not a device",
		    name);
	/* the read's completion says the write is placed: the core's own
	 * copy into a range truncated under it is the core's (SIGBUS) */
	if (plain_write_wait(REG_RANGE, 16384, 4096, 0x7400) ||
	    rma_read(REG_RANGE, 16384, g_s.src + LOCAL_STRIDE, 4096))
		die("%s: the write before the truncation failed", name);
	truncate_target_file(cut, &tail);
	o = try_commit(&g_s.main, cmsg_flush(&m, REG_RANGE,
					     g_s.reg[REG_RANGE].key),
		       FI_COMMIT_COMPLETE);
	snprintf(sub, sizeof(sub), "%s-pure-flush", name);
	expect_cq_error(sub, &o, FI_EIO);
	/* on a connection of its own, where no commit to the key failed
	 * before (a fence behind one is refused at the call): by send */
	initiator_open_conn(&c, true);
	conn_connect(&c, KIND_EXTRA);
	memset(g_s.src, 0x3c, 8); /* must not land */
	o = try_commit(&c, cmsg_make(&m, REG_RANGE, 20480, 8),
		       FI_COMMIT_COMPLETE | FI_FENCE);
	snprintf(sub, sizeof(sub), "%s-fenced-send", name);
	expect_cq_error(sub, &o, FI_EIO);
	initiator_close_conn(&c);
	place(REG_A, 4096, 64, 0x7401);
	o = try_commit(&g_s.main, cmsg_make(&m, REG_A, 4096, 64),
		       FI_COMMIT_COMPLETE);
	snprintf(sub, sizeof(sub), "%s-target-lives", name);
	expect_success(sub, &o);
	truncate_target_file(cut, &tail);
	place(REG_RANGE, 16384, 64, 0x7402);
	o = try_commit(&g_s.main, cmsg_make(&m, REG_RANGE, 16384, 64),
		       FI_COMMIT_COMPLETE);
	snprintf(sub, sizeof(sub), "%s-restored", name);
	expect_success(sub, &o);
}

/* A pure flush of region's key that must succeed (a case's set-up). */
static void flush_or_die(enum region_id region, const char *why)
{
	struct cmsg m;
	struct outcome o = try_commit(&g_s.main,
				      cmsg_flush(&m, region, g_s.reg[region].key),
				      FI_COMMIT_COMPLETE);

	if (o.ret || !o.completed || o.err)
		die("%s: flush of %s failed", why, k_regions[region].name);
}

void case_peer_profile(const char *name)
{
	flush_or_die(REG_A, name);
	expect_profile(name,
		       g_net.pmem->peer_profile(g_s.main.ep, g_s.reg[REG_A].key),
		       g_s.want_profile, "after a commit to pmem-a");
}

/* The peer's profile of a key stays known after commits to other keys. */
void case_peer_profile_kept(const char *name)
{
	flush_or_die(REG_A, name);
	flush_or_die(REG_VOL, name);
	expect_profile(name,
		       g_net.pmem->peer_profile(g_s.main.ep, g_s.reg[REG_A].key),
		       g_s.want_profile, "for pmem-a after a later commit to "
		       "the volatile region");
}

/* How long a target without an agent thread pauses in commit-while-
 * target-idle: the commit waits that long, unserved. */
#define PAUSE_MS 300

static int64_t g_paused_done_us; /* when the paused case's commit completed */

static void note_paused_done(struct op *op)
{
	(void)op;
	g_paused_done_us = now_us();
}

/*
 * commit-while-target-idle on a target without an agent thread: it calls
 * nothing for PAUSE_MS (said over the control connection first), so
 * nothing serves the commit posted meanwhile.  The commit must complete
 * only after the target calls libfabric again (both times from the one
 * monotonic clock of this machine, the completion's taken as it is
 * dispatched), and succeed; its durability is the oracle's (every ack).
 */
static void case_target_paused(const char *name)
{
	struct idle_req req = { .pause_ms = PAUSE_MS };
	const struct status_rsp *rsp;
	int64_t posted_us, resumed_us;
	struct cmsg m;
	struct outcome o = { 0 };
	struct op *op;

	ctl_send(MSG_IDLE, &req, sizeof(req));
	(void)ctl_expect(MSG_IDLE_BEGUN, 0, NULL);
	ctl_release();
	place(REG_A, 9000, 4099, 0x7004);
	g_paused_done_us = 0;
	op = post_commit(&g_s.main, cmsg_make(&m, REG_A, 9000, 4099),
			 FI_COMMIT_COMPLETE, &o.ret);
	posted_us = now_us();
	if (op && op->busy)
		op->on_done = note_paused_done;
	else if (op)
		g_paused_done_us = posted_us; /* completed while posted */
	if (op)
		o = commit_outcome(op);
	rsp = ctl_expect(MSG_IDLE_DONE, sizeof(*rsp), NULL);
	resumed_us = rsp->at_us;
	ctl_release();
	verdict(posted_us < resumed_us, check_name("commit-while-target-"
		"idle/posted-while-paused"), "%sthe commit posted %" PRId64
		" us before the target called libfabric again",
		posted_us < resumed_us ? "" : "expected > 0 got ",
		resumed_us - posted_us);
	if (o.completed)
		verdict(g_paused_done_us >= resumed_us,
			check_name("commit-while-target-idle/not-before-"
				   "resume"), "%sthe commit completed %" PRId64
			" us after the target called libfabric again",
			g_paused_done_us >= resumed_us ? "" :
			"expected >= 0 got ", g_paused_done_us - resumed_us);
	expect_success(name, &o);
}

/*
 * The target stops calling libfabric (proven by a marker the initiator
 * reads over RMA); a commit must still complete: the agent runs alone.
 * Without an agent thread: case_target_paused.
 */
void case_target_idle(const char *name)
{
	struct idle_req req = { .marker_off = 0, .flag_off = 64,
				.flag_value = 0 };
	int64_t deadline = deadline_in(STEP_MS);
	uint64_t *marker = (uint64_t *)(void *)(g_s.src + NOISE_SLOT *
						 (size_t)LOCAL_STRIDE);
	const struct status_rsp *rsp;
	struct cmsg m;
	struct outcome o;

	if (!target_agent_thread_on()) {
		case_target_paused(name);
		return;
	}
	gen_fill((uint8_t *)&req.flag_value, 8, 0x7003, 64);
	ctl_send(MSG_IDLE, &req, sizeof(req));
	*marker = 0;
	while (*marker != 1 && before(deadline))
		if (rma_read(REG_VOL, req.marker_off, marker, 8))
			die("%s: reading the target's marker failed", name);
	if (*marker != 1)
		die("%s: the target never went idle", name);
	place(REG_A, 9000, 4099, 0x7004);
	o = try_commit(&g_s.main, cmsg_make(&m, REG_A, 9000, 4099),
		       FI_COMMIT_COMPLETE);
	if (plain_write_wait(REG_VOL, 64, 8, 0x7003))
		die("%s: writing the flag failed", name);
	rsp = ctl_expect(MSG_IDLE_DONE, sizeof(*rsp), NULL);
	if (rsp->status)
		die("%s: %s", name, rsp->detail);
	ctl_release();
	expect_success(name, &o);
}
