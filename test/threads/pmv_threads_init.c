/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_threads_init.c - the initiator role: connections, the threads run
 * together, and the reports on what they did.
 */
#include "pmv_threads.h"

/* ================================================================== */
/* Initiator: set-up, run, verdicts                                   */
/* ================================================================== */

/* Opens and connects nconns endpoints; ncqs CQs shared among them. */
static void open_conns(unsigned nconns, unsigned ncqs)
{
	for (unsigned i = 0; i < ncqs; i++)
		g_cqs[i] = open_cq();
	g_ncqs = ncqs;
	for (unsigned i = 0; i < nconns; i++) {
		struct conn *c = &g_conns[i];
		int64_t deadline = deadline_in(STEP_MS);
		struct pmv_cm_event ev;

		c->cq = g_cqs[i % ncqs];
		c->ep = open_ep(g_net.info, c->cq);
		CHECK(fi_connect(c->ep, g_net.info->dest_addr, NULL, 0));
		g_nconns++;
		while (!c->connected && before(deadline)) {
			if (!pmv_test_eq_poll(g_net.eq, &ev)) {
				pause_briefly();
				continue;
			}
			if (ev.err || ev.event != FI_CONNECTED ||
			    ev.fid != &c->ep->fid)
				die("connection %u: EQ %s %d instead of "
				    "FI_CONNECTED", i, ev.err ? "error" :
				    "event", ev.err ? ev.err : (int)ev.event);
			if (ev.datalen < NONCE_LEN ||
			    memcmp(ev.data, g_file, NONCE_LEN))
				die("connection %u: the target that accepted "
				    "is not the one whose file -F names (a "
				    "stale target on the port?)", i);
			c->connected = true;
		}
		if (!c->connected)
			die("connection %u: no FI_CONNECTED within %d ms", i,
			    STEP_MS);
	}
}

/* The endpoints and CQs of the mode, and which each thread uses. */
static void setup_mode(void)
{
	unsigned t = g_opt.threads;

	if (g_opt.mode == MODE_ONE_EP)
		open_conns(1, 1);
	else if (g_opt.mode == MODE_MULTI_EP)
		open_conns(t, t);
	else
		open_conns(t < 2 ? 1 : 2, 1);
	for (unsigned i = 0; i < t; i++) {
		struct worker *w = &g_w[i];

		w->id = i;
		w->conn = &g_conns[i % g_nconns];
		w->cq = w->conn->cq;
		w->rng = mix64(g_opt.seed ^ (0x9e3779b97f4a7c15ull * (i + 1)));
		w->src = calloc(1, SLICE_LEN);
		if (!w->src)
			die("out of memory");
		for (unsigned s = 0; s < SLOTS; s++) {
			w->b[s].w = w;
			w->b[s].slot = s;
		}
	}
}

/* Watches the EQ while the threads run: a connection must not end. */
static void monitor(void)
{
	int64_t deadline = deadline_in(RUN_MS);
	struct timespec nap = { 0, 2000000 };
	unsigned running;

	do {
		struct pmv_cm_event ev;

		running = 0;
		for (unsigned i = 0; i < g_opt.threads; i++)
			running += !__atomic_load_n(&g_w[i].finished,
						    __ATOMIC_ACQUIRE);
		while (pmv_test_eq_poll(g_net.eq, &ev))
			note_failure(false, "EQ %s %d during the run (a "
				     "connection ended?)", ev.err ? "error" :
				     "event", ev.err ? ev.err : (int)ev.event);
		if (running && !before(deadline) && !stopped())
			note_failure(false, "%u threads still running after "
				     "%d ms", running, RUN_MS);
		nanosleep(&nap, NULL);
	} while (running);
}

/* Stops the threads if they run (die() in the main thread), joins them. */
static void join_threads(void)
{
	if (!g_running)
		return;
	stop_all();
	for (unsigned i = 0; i < g_opt.threads; i++)
		pthread_join(g_w[i].thread, NULL);
	g_running = false;
}

/* Starts the threads together, waits for them; the run's seconds. */
static double run_threads(void)
{
	int64_t start;

	if (pthread_barrier_init(&g_start, NULL, g_opt.threads + 1))
		die("pthread_barrier_init failed");
	for (unsigned i = 0; i < g_opt.threads; i++)
		if (pthread_create(&g_w[i].thread, NULL, worker_main, &g_w[i]))
			die("pthread_create failed");
	pthread_barrier_wait(&g_start);
	g_running = true;
	start = now_ms();
	monitor();
	join_threads();
	pthread_barrier_destroy(&g_start);
	return (double)(now_ms() - start) / 1000.0;
}

/* Sums the threads' tallies into total. */
static struct worker sum_tallies(void)
{
	struct worker s = { 0 };

	for (unsigned i = 0; i < g_opt.threads; i++) {
		s.commits += g_w[i].commits;
		s.writes += g_w[i].writes;
		s.fenced += g_w[i].fenced;
		s.flushes += g_w[i].flushes;
		s.ranges += g_w[i].ranges;
		s.covered += g_w[i].covered;
		s.eagain += g_w[i].eagain;
		s.failed += g_w[i].failed;
	}
	return s;
}

/*
 * -X faults: every batch ended, in success or in an error (an injected
 * fault), and every commit that succeeded was checked durable at its
 * completion, as in a run without faults.
 */
static void report_faulted(const struct worker *s, unsigned want)
{
	printf("INFO faults: %u batches failed, %u error completions, %u "
	       "posts refused\n", s->failed,
	       __atomic_load_n(&g_op_errors, __ATOMIC_RELAXED),
	       __atomic_load_n(&g_post_errors, __ATOMIC_RELAXED));
	verdict(s->commits + s->failed == want, "commits",
		"%u of %u batches ended in a successful commit, each checked "
		"at its completion (%u ranges, %u covered by oracle records "
		"appended after the post); %u ended in an error", s->commits,
		want, s->ranges, s->covered, s->failed);
}

/* The run's tallies (INFO) and the commits verdict. */
static void report_commits(double secs)
{
	struct worker s = sum_tallies();
	unsigned want = g_opt.threads * g_opt.commits;

	printf("INFO %s threads=%u endpoints=%u cqs=%u commits=%u writes=%u "
	       "fenced=%u flushes=%u ranges=%u oracle=%u eagain=%u "
	       "foreign=%u seconds=%.2f\n", k_modes[g_opt.mode],
	       g_opt.threads, g_nconns, g_ncqs, s.commits, s.writes, s.fenced,
	       s.flushes, s.ranges, s.covered, s.eagain,
	       __atomic_load_n(&g_foreign, __ATOMIC_RELAXED), secs);
	if (g_fail.count) {
		verdict(false, "commits", "%u failures, the first: %s",
			g_fail.count, g_fail.first);
		return;
	}
	if (g_opt.faults) {
		report_faulted(&s, want);
		return;
	}
	verdict(s.commits == want, "commits",
		"%u threads on %u endpoint(s) and %u CQ(s): %u of %u commits "
		"(%u fenced, %u pure flushes) and %u plain writes, each "
		"completed once with its own context (%u completions read by "
		"another thread than the poster); at each completion "
		"every byte of the commit and of its thread's writes before "
		"it (%u ranges) was in the target's file%s", g_opt.threads,
		g_nconns, g_ncqs, s.commits, want, s.fenced, s.flushes,
		s.writes, __atomic_load_n(&g_foreign, __ATOMIC_RELAXED),
		s.ranges, g_need_oracle ?
		", and covered by oracle records appended after it was posted"
		: " (placed: durable on MHP)");
}

/* Successful commits the threads completed on endpoint c. */
static unsigned commits_on(const struct conn *c)
{
	unsigned n = 0;

	for (unsigned i = 0; i < g_opt.threads; i++)
		if (g_w[i].conn == c)
			n += g_w[i].commits;
	return n;
}

/* Commits the threads saw complete in error on endpoint c. */
static unsigned commit_errors_on(const struct conn *c)
{
	unsigned n = 0;

	for (unsigned i = 0; i < g_opt.threads; i++)
		if (g_w[i].conn == c)
			n += g_w[i].commit_errors;
	return n;
}

/* Each endpoint's counters agree with the threads' completions. */
static void report_counters(void)
{
	bool ok = !g_fail.count;
	char detail[256] = "";

	for (unsigned i = 0; i < g_nconns && ok; i++) {
		struct fi_pmem_ep_counters c = { 0 };
		bool flushed_ok;

		if (g_net.pmem->ep_counters(g_conns[i].ep, &c))
			die("ep_counters failed");
		flushed_ok = g_need_oracle ? !c.flush_ops : c.flush_ops > 0;
		ok = c.commits == commits_on(&g_conns[i]) &&
		     c.commit_errors == commit_errors_on(&g_conns[i]) &&
		     flushed_ok;
		snprintf(detail, sizeof(detail), "endpoint %u: commits %" PRIu64
			 " (threads saw %u), commit_errors %" PRIu64
			 " (threads saw %u), flush_ops %" PRIu64 " (%s)", i,
			 c.commits, commits_on(&g_conns[i]), c.commit_errors,
			 commit_errors_on(&g_conns[i]), c.flush_ops,
			 g_need_oracle ? "0 expected: the agent persists" :
			 "read-flush expected");
	}
	verdict(ok, "counters", "%s%s", g_fail.count ? "not checked "
		"after a failure" : ok ? "on every endpoint, the last: " : "",
		detail);
}

/* Each endpoint knows the profile and takes the matrix's method. */
static void report_method(void)
{
	enum fi_pmem_profile want = profile_of_gran(g_opt.gran);
	enum fi_pmem_method want_m = want == FI_PMEM_PROFILE_MHP &&
				     !g_opt.all_oracle ?
				     FI_PMEM_METHOD_READ_FLUSH :
				     FI_PMEM_METHOD_AGENT;
	enum fi_pmem_profile got = FI_PMEM_PROFILE_UNKNOWN;
	enum fi_pmem_method got_m = FI_PMEM_METHOD_NONE;
	unsigned i;

	for (i = 0; i < g_nconns; i++) {
		got = g_net.pmem->peer_profile(g_conns[i].ep, g_opt.key);
		got_m = g_net.pmem->method(g_conns[i].ep, g_opt.key);
		if (got != want || got_m != want_m)
			break;
	}
	verdict(i == g_nconns, "method", "%s: profile %s, method %s "
		"(expected %s, %s)", i == g_nconns ? "every endpoint" :
		"an endpoint", profile_name(got), fi_pmem_method_str(got_m),
		profile_name(want), fi_pmem_method_str(want_m));
}

/*
 * Ends the connections (the target counts them) and closes everything,
 * newest first; also at exit after die() (in the main thread: the threads,
 * if running, are stopped and joined first).
 */
void initiator_close(void)
{
	join_threads();
	for (unsigned i = 0; i < g_nconns; i++)
		if (g_conns[i].ep && g_conns[i].connected)
			fi_shutdown(g_conns[i].ep, 0);
	for (unsigned i = 0; i < g_nconns; i++)
		CLOSE(g_conns[i].ep);
	for (unsigned i = 0; i < g_opt.threads; i++) {
		CLOSE(g_w[i].src_mr);
		free(g_w[i].src);
		g_w[i].src = NULL;
	}
	for (unsigned i = 0; i < g_ncqs; i++)
		CLOSE(g_cqs[i]);
	net_close();
	if (g_file)
		munmap((void *)g_file, FILE_LEN);
	if (g_log)
		munmap((void *)g_log, sizeof(struct pmv_oracle_log) +
		       ORACLE_RECS * sizeof(struct pmv_oracle_rec));
	g_file = NULL;
	g_log = NULL;
}

/* Initiator: set-up, the threads' run, verdicts; exit 3 if a completion
 * outran durability. */
int initiator_main(void)
{
	enum fi_pmem_profile want;
	double secs;

	g_role = "initiator";
	if (!g_opt.file || !g_opt.key)
		die("the initiator needs -F FILE and -x BASE:KEY");
	want = profile_of_gran(g_opt.gran);
	g_need_oracle = want != FI_PMEM_PROFILE_MHP || g_opt.all_oracle;
	if (g_need_oracle && !g_opt.oracle)
		die("-g %s%s checks the oracle: pass -o LOG", g_opt.gran,
		    g_opt.all_oracle ? " -A" : "");
	map_target_file();
	if (g_opt.oracle)
		map_oracle();
	net_open(0);
	setup_mode();
	secs = run_threads();
	report_commits(secs);
	report_counters();
	if (!g_opt.faults) /* a fault may keep a target from pushing its table */
		report_method();
	initiator_close();
	if (__atomic_load_n(&g_fail.early, __ATOMIC_ACQUIRE))
		return EXIT_EARLY;
	return g_failed ? EXIT_FAIL : EXIT_PASS;
}
