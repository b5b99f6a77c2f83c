/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_rdm_test_init.c - the initiator of the RDM durability test
 * (pmv_rdm_test.c): writes, commits, fences, flushes and FI_IMMED through
 * one RDM endpoint to one or two peers, each completed commit checked.
 */
#include "pmv_rdm_test.h"

struct range {
	int peer;
	uint64_t lo, hi, pos;   /* oracle count when posted */
	unsigned seq;
};

static struct range g_ranges[MAX_RANGES];
static unsigned g_nranges, g_seq, g_immeds, g_checked;
static struct keys g_k;
static uint8_t *g_src;
static void *g_desc;

static bool use_oracle(void)
{
	const char *m = getenv("FI_PMEMVERBS_METHOD");

	return g_log && (strcmp(g_opt.gran, "byte") ||
			 (m && (!strcmp(m, "agent") || !strcmp(m, "send"))));
}

/* A completed commit to peer p posted as seq: its scope is durable. */
static void check_commit(int p, unsigned seq, const char *what)
{
	uint64_t now = use_oracle() ? oracle_count() : 0;

	for (unsigned i = 0; i < g_nranges; i++) {
		const struct range *r = &g_ranges[i];
		uint64_t off = r->lo - g_k.base[p];

		if (r->peer != p || r->seq > seq)
			continue;
		if (use_oracle() ? oracle_covers(g_k.key[p], r->lo, r->hi,
						 r->pos, now)
				 : !memcmp(g_tmap + p * REG_LEN + off,
					   g_src + p * REG_LEN + off,
					   r->hi - r->lo))
			continue;
		printf("FAIL %s/%s: commit %u to peer %d completed before "
		       "[%#" PRIx64 ", +%" PRIu64 ") was durable\n", label(),
		       what, seq, p, off, r->hi - r->lo);
		exit(3);
	}
	g_checked++;
}

/* Waits for the completion of ctx (others read meanwhile are kept). */
static void wait_one(void *ctx)
{
	static void *seen[4];
	struct fi_cq_data_entry e;

	for (int i = 0; i < 4; i++)
		if (seen[i] == ctx) {
			seen[i] = NULL;
			return;
		}
	for (;;) {
		if (!cq_read_one(&e))
			continue;
		if (e.op_context == ctx)
			return;
		for (int i = 0; i < 4; i++)
			if (!seen[i]) {
				seen[i] = e.op_context;
				break;
			}
	}
}

/* New data for [off, off+len) of peer p's region, in the next scope. */
static uint8_t *new_range(int p, uint64_t off, size_t len)
{
	uint8_t *src = g_src + p * REG_LEN + off;

	for (size_t i = 0; i < len; i++)
		src[i] = (uint8_t) rand();
	g_ranges[g_nranges++] = (struct range){
		p, g_k.base[p] + off, g_k.base[p] + off + len,
		use_oracle() ? oracle_count() : 0, g_seq };
	return src;
}

/* Retries a post while the provider asks, reading the CQ (progress). */
#define POST(ret, call)                                                      \
	do                                                                   \
		ret = (call);                                                \
	while (ret == -FI_EAGAIN && fi_cq_read(g_cq, NULL, 0) <= 0)

/* fi_writemsg of [off, off+len) of peer p's region, or a pure flush. */
static ssize_t post(int p, uint64_t off, size_t len, uint64_t flags,
		    uint64_t data, void *ctx)
{
	struct iovec iov = { g_src + p * REG_LEN + off, len };
	struct fi_rma_iov rma = { g_k.base[p] + off, len, g_k.key[p] };
	struct fi_msg_rma msg = { .msg_iov = &iov, .desc = &g_desc,
				  .iov_count = len ? 1 : 0, .addr = g_peer[p],
				  .rma_iov = &rma, .rma_iov_count = 1,
				  .context = ctx, .data = data };
	ssize_t ret;

	if (len)
		new_range(p, off, len);
	POST(ret, fi_writemsg(g_ep[0], &msg, flags));
	return ret;
}

static void post_ok(int p, uint64_t off, size_t len, uint64_t flags,
		    uint64_t data, void *ctx)
{
	ssize_t ret = post(p, off, len, flags, data, ctx);

	if (ret)
		die("fi_writemsg(peer %d, len %zu, flags %#" PRIx64 "): %s", p,
		    len, flags, fi_strerror((int) -ret));
}

/* fi_inject_write of [off, off+len): plain, in the next commit's scope. */
static void inject_write(int p, uint64_t off, size_t len)
{
	uint8_t *src = new_range(p, off, len);
	ssize_t ret;

	POST(ret, fi_inject_write(g_ep[0], src, len, g_peer[p],
				  g_k.base[p] + off, g_k.key[p]));
	if (ret)
		die("fi_inject_write(peer %d, len %zu): %s", p, len,
		    fi_strerror((int) -ret));
}

/* Plain writes (fi_writemsg and fi_inject_write) before a commit. */
static void plain_writes(int p)
{
	int ctx;

	if (rand() % 2)
		inject_write(p, IMMED_LEN * 64 + (uint64_t)(rand() % 4000) * 64,
			     1 + rand() % 64);
	for (int w = 0; w < 1 + rand() % 3; w++) {
		post_ok(p, IMMED_LEN * 64 + (uint64_t)(rand() % 4000) * 64,
			1 + rand() % 8192, 0, 0, &ctx);
		wait_one(&ctx);
	}
}

/* One round to peer p: writes, then commit | flush | fence pair | immed. */
static void round_to(int p, int r)
{
	uint64_t off = IMMED_LEN * 64 + (uint64_t)(rand() % 4000) * 64;
	int a, b;

	plain_writes(p);
	g_seq++;
	switch (r % 4) {
	case 0: /* a commit carrying data */
		post_ok(p, off, 1 + rand() % 4096, FI_COMMIT_COMPLETE, 0, &a);
		wait_one(&a);
		return check_commit(p, g_seq, "commit");
	case 1: /* a pure flush */
		post_ok(p, 0, 0, FI_COMMIT_COMPLETE, 0, &a);
		wait_one(&a);
		return check_commit(p, g_seq, "flush");
	case 2: /* a commit, then a fenced commit not waiting for it */
		post_ok(p, off, 64, FI_COMMIT_COMPLETE, 0, &a);
		g_seq++;
		post_ok(p, FENCED_OFF + (uint64_t)(rand() % 1000) * 64, 8,
			FI_COMMIT_COMPLETE | FI_FENCE, 0, &b);
		wait_one(&a);
		check_commit(p, g_seq - 1, "fence-first");
		wait_one(&b);
		return check_commit(p, g_seq, "fenced");
	default: /* FI_IMMED: the target checks it at arrival */
		if (p)
			return;
		post_ok(p, g_immeds * IMMED_LEN, IMMED_LEN,
			FI_COMMIT_COMPLETE | FI_IMMED, g_immeds, &a);
		g_immeds++;
		wait_one(&a);
		return check_commit(p, g_seq, "immed");
	}
}

/* A commit with FI_INJECT would lose its flags on rxm's inject path. */
static void check_inject_refused(void)
{
	/* bytes of their own: a refused post leaves them unwritten */
	ssize_t ret = post(0, FENCED_OFF + 256 * 1024, 8,
			   FI_COMMIT_COMPLETE | FI_INJECT, 0, NULL);

	g_nranges--; /* refused: in no scope */
	if (ret != -FI_EINVAL) {
		printf("FAIL %s/inject: fi_writemsg(FI_COMMIT_COMPLETE | "
		       "FI_INJECT) returned %zd, expected -FI_EINVAL\n",
		       label(), ret);
		exit(1);
	}
	printf("PASS %s/inject: FI_COMMIT_COMPLETE with FI_INJECT refused\n",
	       label());
}

/*
 * FI_COMMIT_COMPLETE in an endpoint's tx op_flags (ofi_rxm knows no such
 * flag; the pmemverbs RDM endpoint keeps it): its fi_write is a commit.
 */
static void check_write_op_flags(struct fi_info *info)
{
	uint64_t off = FENCED_OFF + 128 * 1024;
	struct fid_ep *ep;
	uint8_t *src;
	int ctx;
	ssize_t ret;

	info->tx_attr->op_flags |= FI_COMMIT_COMPLETE;
	ep = open_ep(info);
	g_seq++;
	src = new_range(0, off, 4096);
	POST(ret, fi_write(ep, src, 4096, g_desc, g_peer[0],
			   g_k.base[0] + off, g_k.key[0], &ctx));
	if (ret)
		die("fi_write (op_flags FI_COMMIT_COMPLETE): %s",
		    fi_strerror((int) -ret));
	wait_one(&ctx);
	check_commit(0, g_seq, "write-op-flags");
	CHECK(fi_close(&ep->fid));
	printf("PASS %s/write-op-flags: fi_write with FI_COMMIT_COMPLETE in "
	       "the op_flags durable at completion\n", label());
}

/* One put of the SOS pattern: FI_DELIVERY_COMPLETE, no completion entry. */
static void sos_put(struct fid_ep *ep, uint64_t off, size_t len)
{
	uint8_t *src = new_range(0, off, len);
	struct iovec iov = { src, len };
	struct fi_rma_iov rma = { g_k.base[0] + off, len, g_k.key[0] };
	struct fi_msg_rma msg = { .msg_iov = &iov, .desc = &g_desc,
				  .iov_count = 1, .addr = g_peer[0],
				  .rma_iov = &rma, .rma_iov_count = 1 };
	ssize_t ret;

	POST(ret, fi_writemsg(ep, &msg, FI_DELIVERY_COMPLETE));
	if (ret)
		die("put (fi_writemsg FI_DELIVERY_COMPLETE, len %zu): %s", len,
		    fi_strerror((int) -ret));
}

/* SIGKILLs the target (no clean-up, no msync at exit) and waits, bounded
 * by the watchdog, until the process is gone. */
static void kill_target(void)
{
	pid_t pid = (pid_t)g_k.pid;

	if (pid <= 1 || kill(pid, SIGKILL))
		die("SIGKILL of the target (pid %d): %s", (int)pid,
		    strerror(errno));
	while (kill(pid, 0) == 0 || errno != ESRCH)
		usleep(1000);
}

/*
 * After the last counter wait the target is SIGKILLed; then every byte of
 * every counted put must be in its file (its page cache: a SIGKILL loses
 * none, so the oracle checks at each wait are what prove persistence).
 */
static void check_file_after_kill(uint64_t posted)
{
	kill_target();
	for (unsigned i = 0; i < g_nranges; i++) {
		const struct range *r = &g_ranges[i];
		uint64_t off = r->lo - g_k.base[0];

		if (!memcmp(g_tmap + off, g_src + off, r->hi - r->lo))
			continue;
		printf("FAIL %s/killed: after the counter wait and the "
		       "target's SIGKILL, put [%#" PRIx64 ", +%" PRIu64 ") is "
		       "not in its file\n", label(), off, r->hi - r->lo);
		exit(3);
	}
	printf("PASS %s/killed: target SIGKILLed after the last counter wait; "
	       "all %" PRIu64 " counted puts (%u ranges) in its file\n",
	       label(), posted, g_nranges);
}

/*
 * The SOS pattern (rdm-sos): puts as Sandia OpenSHMEM posts them
 * (fi_writemsg with FI_DELIVERY_COMPLETE, FI_SELECTIVE_COMPLETION with no
 * FI_COMPLETION, counted by an FI_WRITE counter), then shmem_quiet's
 * fi_cntr_wait for every put posted.  Under
 * FI_PMEMVERBS_DELIVERY_IS_COMMIT each put is a commit, so when the wait
 * returns every byte put is durable: checked against the oracle then.
 * After the last wait the target is SIGKILLed and its file checked.
 */
static void run_sos_pattern(struct fi_info *info)
{
	struct fi_cntr_attr attr = { .events = FI_CNTR_EVENTS_COMP,
				     .wait_obj = FI_WAIT_UNSPEC };
	struct fid_cntr *cntr;
	struct fid_ep *ep;
	uint64_t posted = 0, now;
	unsigned first;

	CHECK(fi_cntr_open(g_dom, &attr, &cntr, NULL));
	CHECK(fi_endpoint(g_dom, info, &ep, NULL));
	CHECK(fi_ep_bind(ep, &g_cq->fid, FI_TRANSMIT | FI_RECV |
			 FI_SELECTIVE_COMPLETION));
	CHECK(fi_ep_bind(ep, &cntr->fid, FI_WRITE));
	CHECK(fi_ep_bind(ep, &g_av->fid, 0));
	CHECK(fi_enable(ep));
	for (int q = 0; q < ROUNDS / 2; q++) {
		first = g_nranges;
		for (int w = 0; w < 8; w++, posted++)
			sos_put(ep, IMMED_LEN * 64 +
				(uint64_t)(rand() % 4000) * 64,
				1 + rand() % 8192);
		CHECK(fi_cntr_wait(cntr, posted, WATCHDOG_S * 500));
		now = oracle_count();
		for (unsigned i = first; i < g_nranges; i++) {
			const struct range *r = &g_ranges[i];

			if (oracle_covers(g_k.key[0], r->lo, r->hi, r->pos,
					  now))
				continue;
			printf("FAIL %s/quiet: fi_cntr_wait (shmem_quiet) "
			       "returned before put [%#" PRIx64 ", +%" PRIu64
			       ") was durable\n", label(),
			       r->lo - g_k.base[0], r->hi - r->lo);
			exit(3);
		}
		g_checked++;
	}
	printf("PASS %s/quiet: %" PRIu64 " puts (FI_DELIVERY_COMPLETE, "
	       "counted, no CQ entry) durable at each of %u counter waits "
	       "(oracle)\n", label(), posted, g_checked);
	check_file_after_kill(posted);
}

/* rdm-close: the target closes its endpoint once this process is gone. */
static void write_pid_file(void)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s.ipid", g_opt.tfile);
	f = fopen(path, "w");
	if (!f || fprintf(f, "%ld\n", (long) getpid()) < 0 || fclose(f))
		die("writing %s", path);
}

void run_initiator(void)
{
	char path[4096];
	struct fi_info *info;
	struct fid_mr *mr;
	ssize_t ret;
	FILE *f;
	int ctx;

	snprintf(path, sizeof(path), "%s.keys", g_opt.tfile);
	f = fopen(path, "r");
	if (!f || fread(&g_k, sizeof(g_k), 1, f) != 1)
		die("reading %s", path);
	fclose(f);
	g_tmap = map_file(g_opt.tfile, MAX_PEERS * REG_LEN, false);
	if (g_opt.oracle)
		oracle_map();
	info = rdm_info(g_opt.port, 0);
	open_domain(info);
	g_ep[0] = open_ep(info);
	g_src = calloc(MAX_PEERS, REG_LEN);
	CHECK(fi_mr_reg(g_dom, g_src, MAX_PEERS * REG_LEN, FI_WRITE | FI_SEND,
			0, 200, 0, &mr, NULL));
	g_desc = fi_mr_desc(mr);
	for (int i = 0; i < peers(); i++) {
		struct fi_info *pi = i ? NULL : info;
		char port[16];

		snprintf(port, sizeof(port), "%d", atoi(g_opt.port) + i);
		if (!pi)
			pi = rdm_info(port, 0);
		if (fi_av_insert(g_av, pi->dest_addr, 1, &g_peer[i], 0,
				 NULL) != 1)
			die("fi_av_insert(peer %d) failed", i);
	}
	if (!strcmp(g_opt.test, "rdm-sos")) {
		if (!g_log)
			die("rdm-sos checks the oracle: pass -o");
		run_sos_pattern(info);
		return; /* the target is dead: no DONE, nothing closed */
	} else {
		for (int r = 0; r < ROUNDS && g_nranges < MAX_RANGES - 64; r++)
			for (int p = 0; p < peers(); p++)
				round_to(p, r);
		check_inject_refused();
		check_write_op_flags(info);
		printf("PASS %s/commits: %u commits to %d peer(s) durable at "
		       "completion (%s), %u FI_IMMED\n", label(), g_checked,
		       peers(), use_oracle() ? "oracle" : "target's file",
		       g_immeds);
	}
	if (!strcmp(g_opt.test, "rdm-close"))
		write_pid_file();
	memcpy(g_src, &g_immeds, sizeof(g_immeds));
	/* rxm may still be connecting (rdm-sos put through another endpoint) */
	POST(ret, fi_send(g_ep[0], g_src, sizeof(g_immeds), g_desc, g_peer[0],
			  &ctx));
	if (ret)
		die("fi_send(DONE): %s", fi_strerror((int) -ret));
	wait_one(&ctx);
}
