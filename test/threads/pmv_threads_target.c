/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_threads_target.c - the target role: the region file, the oracle log,
 * the shared CQ its poller threads read, and its verdicts.
 */
#include "pmv_threads.h"

#include <signal.h>

/* ================================================================== */
/* Target                                                             */
/* ================================================================== */

static struct {
	uint8_t *map;
	uint64_t nonce;
	struct fid_mr *mr;
	struct fid_pep *pep;
	struct fid_cq *cq;
	struct fid_ep *eps[MAX_CONNS];
	unsigned naccepted, nconnected, nshut, eq_errors;
	unsigned cq_entries, cq_errors; /* atomic: entries nobody asked for */
	pthread_t pollers[MAX_POLLERS];
	unsigned npollers;             /* started */
	int stop;                      /* atomic: the pollers end */
	char cq_error_text[160];       /* the first CQ error (under g_fail) */
	struct fi_pmem_ep_counters seen[MAX_CONNS]; /* the last read */
	unsigned counter_reads, counters_back;
} g_t;

/* Set by SIGTERM (the harness stops a target whose initiator failed). */
static volatile sig_atomic_t g_sigterm;

static void target_on_sigterm(int sig)
{
	(void)sig;
	g_sigterm = 1;
}

/*
 * SIGTERM ends the serving loop, not the process.  libinfinipath's own
 * handler calls exit() from the signal, and `timeout` signals both its
 * child and the child's group: most likely two threads in exit() at once,
 * which ended a target before the libraries' destructors (valgrind: their
 * blocks lost).  After libfabric's set-up, so that no library installs
 * its own.
 */
static void target_catch_sigterm(void)
{
	struct sigaction sa = { .sa_handler = target_on_sigterm };

	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGTERM, &sa, NULL))
		die("sigaction(SIGTERM) failed: %s", strerror(errno));
}

/* Creates the oracle log FI_PMEMVERBS_ORACLE names: empty, with magic. */
static void oracle_create(const char *path)
{
	size_t size = sizeof(struct pmv_oracle_log) +
		      ORACLE_RECS * sizeof(struct pmv_oracle_rec);
	struct pmv_oracle_log *log;
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);

	if (fd < 0 || ftruncate(fd, (off_t)size))
		die("creating oracle log %s: %s", path, strerror(errno));
	log = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (log == MAP_FAILED)
		die("mapping oracle log %s: %s", path, strerror(errno));
	log->count = 0;
	__atomic_store_n(&log->magic, PMV_ORACLE_MAGIC, __ATOMIC_RELEASE);
	munmap(log, size);
}

/* Creates and maps the region file: guards of a pattern, region zero. */
static void target_create_file(void)
{
	int fd = open(g_opt.file, O_RDWR | O_CREAT | O_TRUNC, 0600);

	if (fd < 0 || ftruncate(fd, FILE_LEN))
		die("creating %s: %s", g_opt.file, strerror(errno));
	g_t.map = mmap(NULL, FILE_LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		       0);
	close(fd);
	if (g_t.map == MAP_FAILED)
		die("mapping %s: %s", g_opt.file, strerror(errno));
	for (size_t i = 0; i < GUARD_LEN; i++) {
		g_t.map[i] = guard_byte(i);
		g_t.map[FILE_LEN - GUARD_LEN + i] =
			guard_byte(FILE_LEN - GUARD_LEN + i);
	}
	g_t.nonce = mix64((uint64_t)getpid() ^ (uint64_t)now_ms() << 20);
	memcpy(g_t.map, &g_t.nonce, NONCE_LEN);
}

/* Registers the region with FI_RMA_PMEM and prints REGION base key profile. */
static void target_register(void)
{
	uint8_t *region = g_t.map + GUARD_LEN;
	uint64_t base;

	CHECK(fi_mr_reg(g_net.domain, region, REGION_LEN,
			FI_REMOTE_WRITE | FI_REMOTE_READ, 0, REGION_KEY,
			FI_RMA_PMEM, &g_t.mr, NULL));
	base = g_net.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR ?
	       (uint64_t)(uintptr_t)region : 0;
	printf("REGION 0x%" PRIx64 " 0x%" PRIx64 " %s\n", base,
	       fi_mr_key(g_t.mr), profile_name(g_net.pmem->mr_profile(g_t.mr)));
}

/* Reads the target's CQ once: it must stay empty (the target posts
 * nothing); true if anything was there. */
static bool target_read_cq(void)
{
	struct fi_cq_data_entry e[8];
	struct fi_cq_err_entry err = { 0 };
	ssize_t n = fi_cq_read(g_t.cq, e, ARRAY_LEN(e));

	if (n == -FI_EAGAIN)
		return false;
	if (n > 0) {
		__atomic_add_fetch(&g_t.cq_entries, (unsigned)n,
				   __ATOMIC_RELAXED);
		return true;
	}
	if (n != -FI_EAVAIL || fi_cq_readerr(g_t.cq, &err, 0) != 1)
		return false; /* another thread took the error entry */
	pthread_mutex_lock(&g_fail.lock);
	if (!g_t.cq_errors++)
		snprintf(g_t.cq_error_text, sizeof(g_t.cq_error_text),
			 "%s", fi_strerror(err.err));
	pthread_mutex_unlock(&g_fail.lock);
	return true;
}

/* A poller thread: reads the shared CQ until told to stop. */
static void *target_poller(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&g_t.stop, __ATOMIC_ACQUIRE))
		if (!target_read_cq())
			pause_briefly();
	return NULL;
}

/* Opens an endpoint on the shared CQ for a request and accepts it,
 * with the nonce as CM data. */
static void target_on_connreq(struct fi_info *info)
{
	struct fid_ep *ep;

	if (g_t.naccepted == MAX_CONNS)
		die("more than %u connections", MAX_CONNS);
	ep = open_ep(info, g_t.cq);
	fi_freeinfo(info);
	g_t.eps[g_t.naccepted++] = ep;
	CHECK(fi_accept(ep, &g_t.nonce, NONCE_LEN));
}

/* Handles one EQ event, if any; true if there was one. */
static bool target_poll_eq(void)
{
	struct pmv_cm_event ev;

	if (!pmv_test_eq_poll(g_net.eq, &ev))
		return false;
	if (ev.err) {
		fprintf(stderr, "target: EQ error entry: %s\n",
			fi_strerror(ev.err));
		g_t.eq_errors++;
	} else if (ev.event == FI_CONNREQ) {
		target_on_connreq(ev.info);
	} else if (ev.event == FI_CONNECTED) {
		g_t.nconnected++;
	} else if (ev.event == FI_SHUTDOWN) {
		g_t.nshut++;
	} else {
		die("unexpected EQ event %u", ev.event);
	}
	return true;
}

/* Creates the oracle log and the file, registers, listens: READY. */
static void target_listen(void)
{
	const char *oracle = getenv("FI_PMEMVERBS_ORACLE");

	if (oracle && *oracle)
		oracle_create(oracle);
	target_create_file();
	net_open(FI_SOURCE);
	target_catch_sigterm();
	target_register();
	g_t.cq = open_cq();
	CHECK(fi_passive_ep(g_net.fabric, g_net.info, &g_t.pep, NULL));
	CHECK(fi_pep_bind(g_t.pep, &g_net.eq->fid, 0));
	CHECK(fi_listen(g_t.pep));
	printf("READY %s:%s\n", g_opt.addr, g_opt.port);
	fflush(stdout);
}

/* Stops the poller threads that were started, waits for them. */
static void target_stop_pollers(void)
{
	__atomic_store_n(&g_t.stop, 1, __ATOMIC_RELEASE);
	for (unsigned i = 1; i <= g_t.npollers; i++)
		pthread_join(g_t.pollers[i], NULL);
	g_t.npollers = 0;
}

/*
 * Reads each accepted endpoint's counters while its agent serves (the
 * agent updates them on its thread: a racy read shows under
 * ThreadSanitizer); counts the reads and any counter that went back.
 */
static void target_read_counters(void)
{
	for (unsigned i = 0; i < g_t.naccepted; i++) {
		struct fi_pmem_ep_counters c = { 0 };

		if (g_net.pmem->ep_counters(g_t.eps[i], &c))
			die("ep_counters failed");
		if (c.requests_served < g_t.seen[i].requests_served ||
		    c.bytes_persisted < g_t.seen[i].bytes_persisted)
			g_t.counters_back++;
		g_t.seen[i] = c;
		g_t.counter_reads++;
	}
}

/* Serves until -n connections were accepted and have all ended. */
static void target_serve(void)
{
	int64_t life = deadline_in(TARGET_LIFE_MS);

	for (unsigned i = 1; i < g_opt.pollers; i++, g_t.npollers++)
		if (pthread_create(&g_t.pollers[i], NULL, target_poller, NULL))
			die("pthread_create failed");
	while (g_t.naccepted < g_opt.conns || g_t.nshut < g_t.naccepted) {
		bool busy = target_poll_eq();

		busy |= target_read_cq();
		target_read_counters();
		if (g_sigterm) {
			fprintf(stderr, "target: stopped by SIGTERM, %u of %u "
				"connections ended\n", g_t.nshut, g_opt.conns);
			break;
		}
		if (!before(life)) {
			fprintf(stderr, "target: %u of %u connections ended "
				"within %d ms\n", g_t.nshut, g_opt.conns,
				TARGET_LIFE_MS);
			break;
		}
		if (!busy)
			pause_briefly();
	}
	target_stop_pollers();
}

/* The guards hold their pattern (after the nonce); reports the first
 * byte that does not. */
static void target_check_guards(void)
{
	size_t bad = 0, first = 0;

	for (size_t i = NONCE_LEN; i < FILE_LEN; i++) {
		if (i == GUARD_LEN)
			i = FILE_LEN - GUARD_LEN;
		if (g_t.map[i] != guard_byte(i) && !bad++)
			first = i;
	}
	if (!bad)
		verdict(true, "target-guards", "the %u guard bytes on each "
			"side of the region hold their pattern",
			GUARD_LEN - (unsigned)NONCE_LEN);
	else
		verdict(false, "target-guards", "%zu guard bytes changed, the "
			"first at file offset %zu", bad, first);
}

/* The target's verdicts once every connection has ended. */
static void target_report(void)
{
	verdict(g_t.naccepted == g_opt.conns && g_t.nshut == g_opt.conns &&
		!g_t.eq_errors, "target-connections",
		"%u accepted, %u connected, %u ended, %u EQ errors (expected "
		"%u, all ended, no error)", g_t.naccepted, g_t.nconnected,
		g_t.nshut, g_t.eq_errors, g_opt.conns);
	verdict(!g_t.cq_entries && !g_t.cq_errors, "target-cq",
		"%u threads read the shared CQ: %u entries, %u error entries "
		"(expected none: the target posts nothing)%s%s",
		g_opt.pollers, g_t.cq_entries, g_t.cq_errors,
		g_t.cq_errors ? "; first: " : "", g_t.cq_error_text);
	verdict(g_t.counter_reads && !g_t.counters_back, "target-counters",
		"the endpoints' counters read %u times while the agent served, "
		"%u went back (expected none)", g_t.counter_reads,
		g_t.counters_back);
	target_check_guards();
}

/* Closes what is open, newest first (also at exit, after die()). */
void target_close(void)
{
	target_stop_pollers();
	for (unsigned i = 0; i < g_t.naccepted; i++)
		CLOSE(g_t.eps[i]);
	CLOSE(g_t.pep);
	CLOSE(g_t.mr);
	CLOSE(g_t.cq);
	net_close();
	if (g_t.map)
		munmap(g_t.map, FILE_LEN);
	g_t.map = NULL;
}

int target_main(void)
{
	g_role = "target";
	if (!g_opt.file || !g_opt.conns)
		die("the target needs -f FILE and -n CONNS");
	target_listen();
	target_serve();
	if (g_sigterm) {
		/* stopped: no verdicts; the status a shell gives a signal */
		target_close();
		return 128 + SIGTERM;
	}
	target_report();
	target_close();
	return g_failed ? EXIT_FAIL : EXIT_PASS;
}
