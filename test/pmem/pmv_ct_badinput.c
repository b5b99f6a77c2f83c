/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_ct_badinput.c - Bad-input tests: the case tables, the named cases, and
 * the exit test.
 */

#include "pmv_ct.h"

struct bad_case {
	const char *name;
	void (*run)(const char *name);
};

static const struct bad_case k_bad_cases[] = {
	{ "atomicity-chunk", case_atomicity_chunk },
	{ "method-agent", case_method_agent },
	{ "peer-profile-before-commit", case_peer_profile_before_commit },
	{ "method-after-first-commit", case_method_after_commit },
	{ "immed-without-commit", case_immed_without_commit },
	{ "unknown-flag-bit", case_unknown_flag_bits },
	{ "rma-iov-count-zero", case_rma_iov_count_zero },
	{ "rma-iov-null", case_rma_iov_null },
	{ "rma-iov-two-keys", case_rma_iov_two_keys },
	{ "iov-count-over-limit", case_iov_count_over_limit },
	{ "rma-iov-count-over-limit", case_rma_iov_count_over_limit },
	{ "length-mismatch", case_length_mismatch },
	{ "no-iov-with-remote-length", case_no_iov_remote_len },
	{ "desc-from-other-domain", case_desc_other_domain },
	{ "inject-over-inject-size", case_inject_too_large },
	{ "inject-commit-completes", case_inject_commit_completes },
	{ "inject-commit-no-desc", case_inject_commit_no_desc },
	{ "mr-reg-unknown-flag-bit61", case_mr_reg_unknown_flag },
	{ "mr-regv-pmem-two-iovs", case_mr_regv_pmem_two_iovs },
	{ "unknown-key", case_unknown_key },
	{ "no-remote-write", case_no_remote_write },
	{ "range-past-end", case_range_past_end },
	{ "range-straddling-end", case_range_straddling_end },
	{ "send-range-past-end", case_send_range_past_end },
	{ "send-range-straddling-end", case_send_range_straddling_end },
	{ "range-wraps-address-space", case_range_wraps },
	{ "mr-offset-nonzero", case_mr_offset_nonzero },
	{ "commit-two-segments", case_commit_two_segments },
	{ "volatile-commit", case_volatile_commit },
	{ "flush-nothing-written", case_flush_nothing_written },
	{ "commit-after-errors", case_commit_after_errors },
	{ "fence-keeps-write-order", case_fence_keeps_write_order },
	{ "send-keeps-write-order", case_send_keeps_write_order },
	{ "send-read-sees-commit", case_send_read_sees_commit },
	{ "send-then-overlapping-commit", case_send_then_overlapping_commit },
	{ "peer-profile-after-commit", case_peer_profile },
	{ "peer-profile-kept-per-key", case_peer_profile_kept },
	{ "commit-while-target-idle", case_target_idle },
	{ "ep-counters", case_ep_counters },
	{ "plain-endpoint", case_plain_endpoint_flags },
	{ "never-connected", case_never_connected },
	{ "peer-without-pmem", case_peer_without_pmem },
	{ "after-peer-shutdown", case_after_peer_shutdown },
};

/* Bytes of the target's file that are allocated (st_blocks). */
static uint64_t target_file_allocated(void)
{
	struct stat st;

	if (!g_opt.target_file || stat(g_opt.target_file, &st))
		die("sparse-scope needs the target's file (-F): %s",
		    g_opt.target_file ? strerror(errno) : "not given");
	return (uint64_t)st.st_blocks * 512;
}

/*
 * Issue 25 item 2.  The target runs with FI_PMEMVERBS_FILL_HOLES=0, so its
 * regions stay holes: five 8-byte writes spread over REG_A and a 64-byte
 * commit may allocate the pages they write (6), never the MiB between
 * them, which persisting a coalesced scope would touch.
 */
#define SPARSE_WRITES 5
static void case_sparse_scope(const char *name)
{
	uint64_t step = (BIG_REGION - 8192) / SPARSE_WRITES, before, grown;
	uint64_t limit = 8 * 4096;
	struct cmsg m;
	struct outcome o;

	before = target_file_allocated();
	for (unsigned i = 0; i < SPARSE_WRITES; i++)
		if (plain_write_wait(REG_A, i * step + 24, 8, 0x2500 + i))
			die("sparse-scope: a plain write failed");
	place(REG_A, BIG_REGION - 4096, 64, 0x2510);
	o = try_commit(&g_s.main, cmsg_make(&m, REG_A, BIG_REGION - 4096, 64),
		       FI_COMMIT_COMPLETE);
	expect_success(name, &o);
	grown = target_file_allocated() - before;
	verdict(grown <= limit, check_name("sparse-scope/allocated"),
		"%s%" PRIu64 " KiB of the target's sparse file allocated by %u "
		"8-byte writes and a 64-byte commit", grown <= limit ? "" :
		"expected at most 32 KiB got ", grown / 1024, SPARSE_WRITES);
}

/* One phase of writeback-error on [off, off + len) of REG_A at the
 * target; dies if it could not be done.  Returns its answer. */
static struct wberr_rsp wberr_phase(enum wberr_phase phase, uint64_t off,
				    uint64_t len, bool keep)
{
	struct wberr_req req = { .phase = phase, .region = REG_A, .off = off,
				 .len = len, .keep = keep };
	struct wberr_rsp rsp;

	ctl_send(MSG_WBERR, &req, sizeof(req));
	rsp = *(const struct wberr_rsp *)ctl_expect(MSG_WBERR_DONE,
						    sizeof(rsp), NULL);
	ctl_release();
	if (rsp.status)
		die("writeback-error: the target's phase %u: %s", phase,
		    rsp.detail);
	return rsp;
}

/* A commit of len bytes of seed at off of REG_A, placed (the target's
 * file holds them, durable or not), and how it ended. */
static struct outcome wberr_commit(uint64_t off, size_t len, uint64_t seed)
{
	struct cmsg m;

	place(REG_A, off, len, seed);
	return try_commit(&g_s.main, cmsg_make(&m, REG_A, off, len),
			  FI_COMMIT_COMPLETE);
}

/* A commit that must fail with FI_EIO because a persist failed on its
 * region (FI_PMEM_ERR_PERSIST), checked as name. */
static void wberr_expect_persist_error(const char *name, const char *sub,
				       const struct outcome *o)
{
	char check[96];

	snprintf(check, sizeof(check), "%s/%s", name, sub);
	expect_cq_error(check, o, FI_EIO);
	snprintf(check, sizeof(check), "%s/%s-reason", name, sub);
	verdict(o->prov_errno == FI_PMEM_ERR_PERSIST, check_name(check),
		"%sprov_errno %#x (FI_PMEM_ERR_PERSIST %#x)",
		o->prov_errno == FI_PMEM_ERR_PERSIST ? "" : "expected "
		"FI_PMEM_ERR_PERSIST got ", o->prov_errno, FI_PMEM_ERR_PERSIST);
}

/*
 * A real writeback error: the target's file is on ext4 over a loop
 * device whose image lies on a small tmpfs (run_pmem_tests.sh).  A plain
 * write of a page of REG_A lands; the target fills the tmpfs and msyncs
 * that page of its own mapping, which fails and takes the error (Linux
 * reports it once per open file); space comes back and the target drops
 * the page's clean copy (writeback-error: the write is lost on the disk
 * and in memory) or leaves it in memory (writeback-error-kept: ext4 then
 * writes that page's later stores to its block but leaves the block's
 * extent unwritten, so a read past the cache, or after a remount, sees
 * zeros although msync returned 0).  A commit into that page,
 * and one into another page of the region, must fail with FI_EIO and
 * FI_PMEM_ERR_PERSIST (never success: the region lost a write), until the
 * region is registered again; then the page, written and committed
 * again, succeeds and is on the disk (read with O_DIRECT by the target).
 */
#define WB_LOST (1u << 20)
#define WB_OTHER (3u << 20)

/* Whose 64 bytes at WB_LOST + 128 the disk holds: a failure says which. */
static const char *wberr_whose(const uint8_t got[64])
{
	static const struct { uint64_t seed; const char *whose; } k[] = {
		{ 0x2603, "the commit's" },
		{ 0x2601, "the failed same-page commit's (0x2601)" },
		{ 0x2600, "the lost plain write's (0x2600)" },
	};
	uint8_t want[64];

	for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
		gen_fill(want, sizeof(want), k[i].seed, WB_LOST + 128);
		if (!memcmp(got, want, sizeof(want)))
			return k[i].whose;
	}
	memset(want, 0, sizeof(want));
	return memcmp(got, want, sizeof(want)) ? "nobody's known" : "zeros";
}

static void wberr_case(const char *name, bool keep)
{
	uint8_t want[64];
	struct wberr_rsp rsp;
	struct outcome o;
	char sub[96];
	int tries = 1;

	if (plain_write_wait(REG_A, WB_LOST, 4096, 0x2600) ||
	    rma_read(REG_A, WB_LOST, g_s.src, 8))
		die("%s: the plain write or the read behind it failed", name);
	(void)wberr_phase(WB_FAIL, WB_LOST, 4096, false);
	(void)wberr_phase(WB_RECOVER, WB_LOST, 4096, keep);
	o = wberr_commit(WB_LOST + 128, 64, 0x2601);
	wberr_expect_persist_error(name, "same-page", &o);
	o = wberr_commit(WB_OTHER, 64, 0x2602);
	wberr_expect_persist_error(name, "other-page", &o);
	resize_region(REG_A, g_s.reg[REG_A].len);
	/* the answer and the new registration's table push travel on two
	 * connections: a first commit may name the old one, and is told to
	 * commit again, as an application would (its ack teaches the new) */
	o = wberr_commit(WB_LOST, 4096, 0x2603);
	if (o.completed && o.prov_errno == FI_PMEM_ERR_REREGISTERED) {
		o = wberr_commit(WB_LOST, 4096, 0x2603);
		tries = 2;
	}
	snprintf(sub, sizeof(sub), "%s/registered-again", name);
	expect_success(sub, &o);
	rsp = wberr_phase(WB_DISK, WB_LOST + 128, 64, false);
	gen_fill(want, sizeof(want), 0x2603, WB_LOST + 128);
	snprintf(sub, sizeof(sub), "%s/on-disk", name);
	verdict(!memcmp(rsp.disk, want, sizeof(want)), check_name(sub),
		"%s%s bytes are on the disk (O_DIRECT), the commit %s",
		memcmp(rsp.disk, want, sizeof(want)) ? "expected the commit's "
		"bytes, got: " : "", wberr_whose(rsp.disk),
		tries == 1 ? "succeeding at once" : "told the region was "
		"registered again, then succeeding");
}

/* writeback-error: the page that failed writeback is dropped from memory. */
static void case_writeback_error(const char *name)
{
	wberr_case(name, false);
}

/* writeback-error-kept: that page stays in memory. */
static void case_writeback_error_kept(const char *name)
{
	wberr_case(name, true);
}

/* Cases that need a target set up for them: run only when -c names them. */
static const struct bad_case k_named_cases[] = {
	{ "persist-fails", case_persist_fails },
	{ "fence-after-many-failures", case_fence_after_many_failures },
	{ "sparse-scope", case_sparse_scope },
	{ "truncated-region", case_truncated_region },
	{ "writeback-error", case_writeback_error },
	{ "writeback-error-kept", case_writeback_error_kept },
};

/* Runs the one case -c names; dies if there is no such case. */
static void run_named_case(const char *only)
{
	const struct bad_case *tables[] = { k_bad_cases, k_named_cases };
	const size_t lens[] = { ARRAY_LEN(k_bad_cases),
				ARRAY_LEN(k_named_cases) };

	for (size_t t = 0; t < ARRAY_LEN(tables); t++)
		for (size_t i = 0; i < lens[t]; i++)
			if (!strcmp(only, tables[t][i].name)) {
				g_case = only;
				tables[t][i].run(only);
				return;
			}
	die("-c %s: no such bad-input case", only);
}

void run_badinput(void)
{
	struct report *rep;

	if (gran_auto())
		check_profiles();
	if (g_opt.only)
		run_named_case(g_opt.only);
	for (size_t i = 0; i < ARRAY_LEN(k_bad_cases) && !g_opt.only; i++) {
		g_case = k_bad_cases[i].name;
		k_bad_cases[i].run(k_bad_cases[i].name);
	}
	g_case = "the final drain";
	drain_cqs();
	verdict(!g_unexpected, check_name("no-stray-completions"), "%s%u%s%s",
		g_unexpected ? "expected 0 got " : "", g_unexpected,
		g_unexpected ? ": " : " stray completions",
		g_unexpected ? g_unexpected_what : "");
	rep = initiator_finish(true);
	check_report_file(rep);
	free(rep);
}

/*
 * exit: one commit (both agents have run), then exit() with the endpoint,
 * domain and fabric open.  The process must still exit cleanly.
 */
noreturn void run_exit(void)
{
	struct cmsg m;
	struct outcome o;

	place(REG_A, 4096, 100, 0x7100);
	o = try_commit(&g_s.main, cmsg_make(&m, REG_A, 4096, 100),
		       FI_COMMIT_COMPLETE);
	expect_success("commit", &o);
	printf("exiting with the connected FI_RMA_PMEM endpoint open\n");
	fflush(stdout);
	exit(g_failed ? EXIT_FAIL : EXIT_PASS);
}
