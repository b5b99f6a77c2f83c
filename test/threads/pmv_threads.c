/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_threads - several threads committing through pmemverbs at once
 * (issue 11 item 7).  One program, two roles, over 127.0.0.1:
 *
 *   target     maps a file (the region between two guard pages of a
 *              pattern), registers the region with FI_RMA_PMEM on an
 *              FI_THREAD_SAFE domain, prints "REGION base key profile" and
 *              "READY", accepts -n connections on one shared CQ that -p
 *              threads read at once (each read serves the agent's requests
 *              inline), and once every connection has ended checks that
 *              its CQ stayed empty and the guards hold.
 *   initiator  an FI_THREAD_SAFE domain; -T threads commit
 *              (FI_COMMIT_COMPLETE) into slices of the region of their own:
 *                one-ep    every thread on one endpoint and one CQ
 *                multi-ep  each thread on its own endpoint and CQ
 *                mix       the threads on two endpoints sharing one CQ;
 *                          plain writes before commits, FI_FENCE commits
 *                          (small ones go by send on agent profiles) and
 *                          pure flushes
 *              A thread that reads a completion routes it by its context,
 *              which may be another thread's, and checks it at once (the
 *              oracle): every byte of the commit and of its thread's plain
 *              writes before it must be in the target's file (-F) and,
 *              where the agent persists (PAGE, DMP, or every profile with
 *              -A), covered by records the agent appended to the oracle log
 *              (-o, FI_PMEMVERBS_ORACLE) after the byte was posted.
 *
 * Each check prints "PASS name: detail" or "FAIL name: detail"; a commit
 * seen complete before its bytes were durable also prints "DETECTED ...".
 * Exit status: 0 pass, 1 fail, 2 usage, 3 a completion outran durability.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdnoreturn.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_ext_pmem.h>

#include "../common/pmv_test_time.h"
#include "../common/pmv_test_report.h"
#include "../common/pmv_test_hints.h"

#include "target/pmv_oracle.h"

#define PMV_FI_VERSION FI_VERSION(1, 17)
#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))

enum exit_code { EXIT_PASS = 0, EXIT_FAIL = 1, EXIT_USAGE = 2, EXIT_EARLY = 3 };

/*
 * The region file: GUARD | region | GUARD.  Thread t owns the slice
 * [t * SLICE_LEN, (t + 1) * SLICE_LEN) of the region: SLOTS slots of
 * PIECES pieces.  A batch takes one slot: plain writes in its first
 * pieces, the commit in the last, so no two bytes of a batch overlap.
 */
#define GUARD_LEN 4096u
#define PIECE_LEN (32u << 10)
#define PIECES 4u
#define SLOT_LEN (PIECES * PIECE_LEN)
#define SLOTS 6u
#define SLICE_LEN (SLOTS * SLOT_LEN)
#define MAX_THREADS 16u
#define REGION_LEN (MAX_THREADS * SLICE_LEN)
#define FILE_LEN (GUARD_LEN + REGION_LEN + GUARD_LEN)
#define REGION_KEY 0x7468726561647300ull /* requested; the core may choose */
#define WINDOW 4u          /* batches in flight per thread */
#define SEND_MAX 48u       /* a fenced commit this small fits a request */
#define ORACLE_RECS ((size_t)1 << 18)
#define MAX_CONNS MAX_THREADS
#define MAX_POLLERS 8u
#define CORRUPT_AT 25u     /* -X corrupt: the commit whose check is wrong */

/* Bounds on waits; none is a verdict on speed. */
#define STEP_MS 30000          /* one batch, one connection, one post */
#define RUN_MS 240000          /* the initiator's threads, all together */
#define DRAIN_MS 5000          /* after a failure: operations in flight */
#define TARGET_LIFE_MS 400000  /* the target's whole run */

#define OP_CLASS_FLAGS                                                        \
	(FI_MSG | FI_RMA | FI_READ | FI_WRITE | FI_SEND | FI_RECV |          \
	 FI_REMOTE_READ | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA)
#define WRITE_FLAGS (FI_RMA | FI_WRITE)

/* ------------------------------------------------------------------ */
/* Reporting                                                          */
/* ------------------------------------------------------------------ */

enum mode { MODE_ONE_EP, MODE_MULTI_EP, MODE_MIX };
static const char *const k_modes[] = { "one-ep", "multi-ep", "mix" };

static struct {
	const char *role, *addr, *port, *file, *oracle, *gran;
	enum mode mode;
	unsigned threads, commits, conns, pollers;
	uint64_t base, key, seed;
	bool all_oracle, corrupt, faults;
} g_opt = { .addr = "127.0.0.1", .gran = "page", .threads = 4,
	    .commits = 200, .pollers = 2, .seed = 1 };

static const char *g_role = "pmv_threads";
static bool g_dying; /* die(): close the fabric objects at exit */

static noreturn void die(const char *fmt, ...) PRINTF_LIKE(1, 2);
static void note_failure(bool early, const char *fmt, ...) PRINTF_LIKE(2, 3);

/* Prints "ERROR <role>: <reason>" on stderr and exits with EXIT_FAIL. */
static noreturn void die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "ERROR %s: ", g_role);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	g_dying = true;
	exit(EXIT_FAIL);
}

/* Closes a fabric object if it is open, and forgets it. */
#define CLOSE(obj)                                                           \
	do {                                                                 \
		if (obj)                                                     \
			fi_close(&(obj)->fid);                               \
		(obj) = NULL;                                                \
	} while (0)

/* Calls that must return 0; anything else ends the run (main thread). */
#define CHECK(call)                                                          \
	do {                                                                 \
		ssize_t rc_ = (call);                                        \
		if (rc_ != 0)                                                \
			die("%s: %s (%zd)", #call, fi_strerror((int)-rc_),   \
			    rc_);                                            \
	} while (0)

/*
 * Failures the threads find.  The first is kept for the verdict; a
 * completion that outran durability (early) is also printed at once as
 * DETECTED and makes the exit status 3.  Any failure stops the run.
 */
static struct {
	pthread_mutex_t lock;
	unsigned count, printed;
	char first[512];
	int early;  /* atomic */
	int stop;   /* atomic */
} g_fail = { .lock = PTHREAD_MUTEX_INITIALIZER };

static bool stopped(void)
{
	return __atomic_load_n(&g_fail.stop, __ATOMIC_ACQUIRE);
}

static void stop_all(void)
{
	__atomic_store_n(&g_fail.stop, 1, __ATOMIC_RELEASE);
}

/* Records a thread's failure (see g_fail) and stops the run. */
static void note_failure(bool early, const char *fmt, ...)
{
	char text[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&g_fail.lock);
	if (!g_fail.count++)
		snprintf(g_fail.first, sizeof(g_fail.first), "%s", text);
	if (early && g_fail.printed++ < 5) {
		printf("DETECTED %s\n", text);
		fflush(stdout);
	}
	pthread_mutex_unlock(&g_fail.lock);
	if (early)
		__atomic_store_n(&g_fail.early, 1, __ATOMIC_RELEASE);
	stop_all();
}

/* ------------------------------------------------------------------ */
/* Data                                                               */
/* ------------------------------------------------------------------ */

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Next number of a thread's generator (xorshift64*). */
static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

static uint64_t rnd(uint64_t *s, uint64_t bound)
{
	return bound ? rng_next(s) % bound : 0;
}

/* The guard pattern at file offset off. */
static uint8_t guard_byte(size_t off)
{
	return (uint8_t)(0xa5 ^ mix64(off));
}

static const char *profile_name(enum fi_pmem_profile p)
{
	return fi_pmem_profile_str(p);
}

/* The profile a forced granularity gives a plain file. */
static enum fi_pmem_profile profile_of_gran(const char *gran)
{
	if (!strcmp(gran, "page"))
		return FI_PMEM_PROFILE_PAGE;
	if (!strcmp(gran, "cache_line"))
		return FI_PMEM_PROFILE_DMP;
	if (!strcmp(gran, "byte"))
		return FI_PMEM_PROFILE_MHP;
	die("-g %s: page, cache_line or byte", gran);
}

/* ------------------------------------------------------------------ */
/* Fabric                                                             */
/* ------------------------------------------------------------------ */

static struct {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fi_pmem_ops_domain *pmem;
	struct fid_eq *eq;
} g_net;

/* pmemverbs MSG hints: FI_RMA_PMEM, FI_THREAD_SAFE, provider keys. */
static struct fi_info *make_hints(void)
{
	struct fi_info *h = pmv_test_pmem_hints();

	if (!h)
		die("out of memory for fi_getinfo hints");
	h->domain_attr->threading = FI_THREAD_SAFE;
	return h;
}

/* Opens fabric, domain (FI_THREAD_SAFE), its pmem ops and one EQ. */
static void net_open(uint64_t flags)
{
	struct fi_info *hints = make_hints();
	struct fi_eq_attr eq_attr = { .size = 64, .wait_obj = FI_WAIT_UNSPEC };
	int ret = fi_getinfo(PMV_FI_VERSION, g_opt.addr, g_opt.port, flags,
			     hints, &g_net.info);

	fi_freeinfo(hints);
	if (ret)
		die("fi_getinfo(pmemverbs, FI_THREAD_SAFE, %s:%s): %s (is "
		    "FI_PROVIDER_PATH set to the plugin's directory?)",
		    g_opt.addr, g_opt.port, fi_strerror(-ret));
	if (g_net.info->domain_attr->threading != FI_THREAD_SAFE)
		die("the domain is not FI_THREAD_SAFE (threading %d)",
		    g_net.info->domain_attr->threading);
	CHECK(fi_fabric(g_net.info->fabric_attr, &g_net.fabric, NULL));
	CHECK(fi_domain(g_net.fabric, g_net.info, &g_net.domain, NULL));
	CHECK(fi_open_ops(&g_net.domain->fid, FI_PMEM_DOMAIN_OPS, 0,
			  (void **)&g_net.pmem, NULL));
	CHECK(fi_eq_open(g_net.fabric, &eq_attr, &g_net.eq, NULL));
}

static void net_close(void)
{
	CLOSE(g_net.eq);
	CLOSE(g_net.domain);
	CLOSE(g_net.fabric);
	fi_freeinfo(g_net.info);
	memset(&g_net, 0, sizeof(g_net));
}

static struct fid_cq *open_cq(void)
{
	struct fi_cq_attr attr = { .size = 1024, .format = FI_CQ_FORMAT_DATA,
				   .wait_obj = FI_WAIT_NONE };
	struct fid_cq *cq;

	CHECK(fi_cq_open(g_net.domain, &attr, &cq, NULL));
	return cq;
}

/* Opens an endpoint from info on the EQ and cq (both directions). */
static struct fid_ep *open_ep(struct fi_info *info, struct fid_cq *cq)
{
	struct fid_ep *ep;

	CHECK(fi_endpoint(g_net.domain, info, &ep, NULL));
	CHECK(fi_ep_bind(ep, &g_net.eq->fid, 0));
	CHECK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_enable(ep));
	return ep;
}

/* One CM event: its type, fid, (FI_CONNREQ) info and CM data; err for
 * an error entry. */
struct cm_event {
	uint32_t event;
	struct fid *fid;
	struct fi_info *info;
	uint8_t data[256];
	size_t datalen;
	int err;
};

/* Reads one EQ event or error entry, if there is one. */
static bool eq_poll(struct cm_event *ev)
{
	uint64_t buf[(sizeof(struct fi_eq_cm_entry) + 256) / 8 + 1];
	struct fi_eq_cm_entry *entry = (struct fi_eq_cm_entry *)buf;
	struct fi_eq_err_entry err = { 0 };
	uint32_t event = 0;
	ssize_t n = fi_eq_read(g_net.eq, &event, buf, sizeof(buf), 0);

	if (n == -FI_EAGAIN)
		return false;
	memset(ev, 0, sizeof(*ev));
	ev->event = event;
	if (n == -FI_EAVAIL) {
		if (fi_eq_readerr(g_net.eq, &err, 0) < 0)
			die("fi_eq_readerr failed after -FI_EAVAIL");
		ev->err = err.err ? err.err : -1;
		ev->fid = err.fid;
		return true;
	}
	if (n < (ssize_t)sizeof(entry->fid))
		die("fi_eq_read: %s", fi_strerror((int)-n));
	ev->fid = entry->fid;
	ev->info = n >= (ssize_t)sizeof(*entry) ? entry->info : NULL;
	ev->datalen = n > (ssize_t)sizeof(*entry) ?
		      (size_t)n - sizeof(*entry) : 0;
	memcpy(ev->data, entry->data, ev->datalen);
	return true;
}

/* ================================================================== */
/* Target                                                             */
/* ================================================================== */

/*
 * The target's nonce, in the first NONCE_LEN bytes of its file and in the
 * CM data of every accept: the initiator checks that the target it is
 * connected to is the one whose file it maps (not a stale process left on
 * the port, whose file would never change).
 */
#define NONCE_LEN sizeof(uint64_t)

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
	struct cm_event ev;

	if (!eq_poll(&ev))
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
static void target_close(void)
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

static int target_main(void)
{
	g_role = "target";
	if (!g_opt.file || !g_opt.conns)
		die("the target needs -f FILE and -n CONNS");
	target_listen();
	target_serve();
	target_report();
	target_close();
	return g_failed ? EXIT_FAIL : EXIT_PASS;
}

/* ================================================================== */
/* Initiator: operations and the oracle                               */
/* ================================================================== */

/* A range of the region (offset from its start) and the oracle's length
 * just before it was posted. */
struct range {
	uint64_t off;
	uint32_t len;
	uint64_t mark;
};

enum op_kind { OP_WRITE = 1, OP_COMMIT };
enum op_state { ST_IDLE, ST_POSTED, ST_DONE };

struct batch;

struct op {
	struct fi_context2 ctx;  /* first: its address is the context */
	struct batch *batch;
	enum op_kind kind;
	int state;               /* enum op_state, atomic */
	unsigned ncomp;          /* completions read, atomic */
	uint64_t post_flags;     /* FI_FENCE */
	struct range r;          /* its data; len 0: a pure flush */
	int err;                 /* from a CQ error entry */
};

/* What a batch is: the mix mode draws one of each in turn. */
enum batch_kind { BK_COMMIT, BK_WRITES_COMMIT, BK_FENCED_SMALL,
		  BK_FENCED_LARGE, BK_FLUSH, BK_COUNT };

struct worker;

/* A batch: plain writes, then the commit that must make them durable. */
struct batch {
	struct worker *w;
	unsigned slot, nops, nposted;
	enum batch_kind kind;
	bool busy, posting;
	int64_t posted_at;
	unsigned checked, covered; /* ranges: set by the checking thread */
	struct op op[PIECES];      /* op[nops - 1]: the commit */
};

struct conn {
	struct fid_ep *ep;
	struct fid_cq *cq;
	bool connected;
};

struct worker {
	unsigned id;
	pthread_t thread;
	struct conn *conn;
	struct fid_cq *cq;        /* the CQ this thread reads */
	uint8_t *src;             /* its slice's bytes as it wrote them */
	struct fid_mr *src_mr;
	void *desc;
	uint64_t rng;
	struct batch b[SLOTS];
	unsigned inflight, next_slot, posted;
	int finished;             /* atomic */
	/* tallies (the owner's) */
	unsigned commits, writes, fenced, flushes, ranges, covered, eagain;
	unsigned failed;          /* -X faults: batches that ended in an error */
	unsigned commit_errors;   /* -X faults: commits completed in error */
};

static struct worker g_w[MAX_THREADS];
static struct conn g_conns[MAX_CONNS];
static unsigned g_nconns;
static struct fid_cq *g_cqs[MAX_CONNS];
static unsigned g_ncqs;
static const uint8_t *g_file;    /* the target's file, read-only */
static const struct pmv_oracle_log *g_log;
static size_t g_log_cap;
static bool g_need_oracle;       /* the agent persists every commit */
static unsigned g_checked_commits; /* atomic: for -X corrupt */
static unsigned g_strays;        /* atomic */
static unsigned g_op_errors;     /* atomic: -X faults, error completions */
static unsigned g_post_errors;   /* atomic: -X faults, refused posts */
static unsigned g_foreign;       /* atomic: completions read by a thread
				  * other than their operation's owner */
static _Thread_local const struct worker *t_self; /* the reading thread */

/* The op whose context this is, or NULL if it is none of ours. */
static struct op *op_of(void *context)
{
	for (unsigned t = 0; t < g_opt.threads; t++) {
		uintptr_t lo = (uintptr_t)&g_w[t].b[0];
		uintptr_t hi = (uintptr_t)&g_w[t].b[SLOTS];
		uintptr_t p = (uintptr_t)context;

		if (p < lo || p >= hi)
			continue;
		for (unsigned s = 0; s < SLOTS; s++)
			for (unsigned i = 0; i < PIECES; i++)
				if (context == &g_w[t].b[s].op[i])
					return context;
	}
	return NULL;
}

static uint64_t slice_off(const struct worker *w)
{
	return (uint64_t)w->id * SLICE_LEN;
}

static uint64_t rma_addr(uint64_t off)
{
	return g_opt.base + off;
}

/* An operation, described for a failure's message. */
static const char *op_str(const struct op *op, char *buf, size_t len)
{
	snprintf(buf, len, "%s of %" PRIu32 " bytes at region offset %" PRIu64
		 " (thread %u, %s batch)",
		 op->kind == OP_COMMIT ? op->r.len ? "commit" : "pure flush" :
		 "write", op->r.len, op->r.off, op->batch->w->id,
		 op->post_flags & FI_FENCE ? "fenced" : "plain");
	return buf;
}

/* Maps the target's region file read-only (the initiator's view). */
static void map_target_file(void)
{
	int fd = open(g_opt.file, O_RDONLY);
	void *p;

	if (fd < 0)
		die("opening the target's file %s: %s", g_opt.file,
		    strerror(errno));
	p = mmap(NULL, FILE_LEN, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		die("mapping %s: %s", g_opt.file, strerror(errno));
	g_file = p;
}

/* Maps the oracle log (-o) read-only; the target created it. */
static void map_oracle(void)
{
	size_t size = sizeof(struct pmv_oracle_log) +
		      ORACLE_RECS * sizeof(struct pmv_oracle_rec);
	int fd = open(g_opt.oracle, O_RDONLY);
	void *p;

	if (fd < 0)
		die("opening oracle log %s: %s", g_opt.oracle, strerror(errno));
	p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		die("mapping oracle log %s: %s", g_opt.oracle, strerror(errno));
	g_log = p;
	if (__atomic_load_n(&g_log->magic, __ATOMIC_ACQUIRE) != PMV_ORACLE_MAGIC)
		die("oracle log %s has no magic: did the target create it?",
		    g_opt.oracle);
	g_log_cap = ORACLE_RECS;
}

/* Records claimed so far (a full log cannot prove anything: a failure). */
static uint64_t oracle_count(void)
{
	uint64_t n;

	if (!g_log)
		return 0;
	n = __atomic_load_n(&g_log->count, __ATOMIC_ACQUIRE);
	return n < g_log_cap ? n : g_log_cap;
}

/*
 * First address of [lo, hi) that no complete record of key among records
 * [from, to) covers; hi if all are covered.  No allocation: any thread.
 */
static uint64_t oracle_first_hole(uint64_t key, uint64_t lo, uint64_t hi,
				  uint64_t from, uint64_t to)
{
	uint64_t cur = lo;
	bool moved = true;

	while (cur < hi && moved) {
		moved = false;
		for (uint64_t i = from; i < to && cur < hi; i++) {
			const struct pmv_oracle_rec *r = &g_log->rec[i];

			if (__atomic_load_n(&r->valid, __ATOMIC_ACQUIRE) != 1 ||
			    r->key != key)
				continue;
			if (r->addr <= cur && r->addr + r->len > cur) {
				cur = r->addr + r->len;
				moved = true;
			}
		}
	}
	return cur < hi ? cur : hi;
}

/* First byte of the file range that differs from want; len if none.
 * corrupt: the checker wants the first byte inverted (-X corrupt). */
static size_t first_diff(const uint8_t *file, const uint8_t *want,
			 size_t len, bool corrupt)
{
	if (corrupt && len && file[0] == want[0])
		return 0;
	for (size_t i = 0; i < len; i++)
		if (file[i] != want[i])
			return i;
	return len;
}

/* The target's file holds r's bytes at commit's completion; false (a
 * violation noted) if not. */
static bool check_file(const struct op *commit, const struct range *r,
		       bool corrupt)
{
	const struct worker *w = commit->batch->w;
	const uint8_t *want = w->src + (r->off - slice_off(w));
	size_t at = first_diff(g_file + GUARD_LEN + r->off, want, r->len,
			       corrupt);
	char what[160];

	if (at == r->len)
		return true;
	note_failure(true, "%s completed, but its range at offset %" PRIu64
		     " (%" PRIu32 " bytes) is not in the target's file: byte "
		     "%zu holds 0x%02x, not 0x%02x%s",
		     op_str(commit, what, sizeof(what)), r->off, r->len, at,
		     g_file[GUARD_LEN + r->off + at],
		     corrupt && !at ? (uint8_t)~want[0] : want[at],
		     corrupt ? " (-X corrupt)" : "");
	return false;
}

/* Oracle records appended since r was posted cover it at commit's
 * completion; false (a violation noted) if not. */
static bool check_oracle(const struct op *commit, const struct range *r)
{
	uint64_t lo = rma_addr(r->off), hi = lo + r->len;
	uint64_t count = oracle_count(), hole;
	char what[160];

	if (count == g_log_cap) {
		note_failure(false, "the oracle log is full (%zu records): "
			     "fewer batches (-N)", g_log_cap);
		return false;
	}
	hole = oracle_first_hole(g_opt.key, lo, hi, r->mark, count);
	if (hole == hi)
		return true;
	note_failure(true, "%s completed, but byte %" PRIu64 " of its range "
		     "at offset %" PRIu64 " (%" PRIu32 " bytes) is in no oracle "
		     "record appended after it was posted (records %" PRIu64
		     "..%" PRIu64 "): not persisted",
		     op_str(commit, what, sizeof(what)), hole - lo, r->off,
		     r->len, r->mark, count);
	return false;
}

/* Checks one range at the completion of commit; false on a violation. */
static bool check_range(const struct op *commit, const struct range *r,
			bool corrupt)
{
	return check_file(commit, r, corrupt) &&
	       (!g_need_oracle || check_oracle(commit, r));
}

/* At a commit's completion: its bytes and its batch's writes are durable. */
static void check_commit(struct op *commit)
{
	struct batch *b = commit->batch;
	unsigned n = __atomic_add_fetch(&g_checked_commits, 1, __ATOMIC_RELAXED);
	bool corrupt = g_opt.corrupt && n == CORRUPT_AT;

	for (unsigned i = 0; i < b->nops; i++) {
		const struct range *r = &b->op[i].r;

		if (!r->len)
			continue;
		if (!check_range(commit, r, corrupt))
			return;
		corrupt = false;
		b->checked++;
		b->covered += g_need_oracle;
	}
}

/* Handles a completion read by any thread, for whichever op it names. */
static void on_completion(void *context, uint64_t flags, int err,
			  const char *text)
{
	struct op *op = op_of(context);
	char what[160];

	if (!op) {
		__atomic_add_fetch(&g_strays, 1, __ATOMIC_RELAXED);
		note_failure(false, "a completion with context %p, none of "
			     "ours (flags 0x%" PRIx64 ")", context, flags);
		return;
	}
	if (__atomic_fetch_add(&op->ncomp, 1, __ATOMIC_ACQ_REL)) {
		note_failure(false, "%s completed twice",
			     op_str(op, what, sizeof(what)));
		return;
	}
	if (__atomic_load_n(&op->state, __ATOMIC_ACQUIRE) != ST_POSTED) {
		note_failure(false, "a completion for an operation not posted");
		return;
	}
	op->err = err;
	if (op->batch->w != t_self)
		__atomic_add_fetch(&g_foreign, 1, __ATOMIC_RELAXED);
	if (err && g_opt.faults)
		__atomic_add_fetch(&g_op_errors, 1, __ATOMIC_RELAXED);
	else if (err)
		note_failure(false, "%s completed with %s: %s",
			     op_str(op, what, sizeof(what)), fi_strerror(err),
			     text);
	else if ((flags & OP_CLASS_FLAGS) != WRITE_FLAGS)
		note_failure(false, "%s completed with flags 0x%" PRIx64
			     ", not FI_RMA|FI_WRITE",
			     op_str(op, what, sizeof(what)), flags);
	else if (op->kind == OP_COMMIT)
		check_commit(op);
	__atomic_store_n(&op->state, ST_DONE, __ATOMIC_RELEASE);
}

/* Reads an error entry (another thread may have taken it first). */
static bool reap_error(struct fid_cq *cq)
{
	struct fi_cq_err_entry err = { 0 };
	char buf[160] = "";
	const char *text;

	if (fi_cq_readerr(cq, &err, 0) != 1)
		return false;
	text = fi_cq_strerror(cq, err.prov_errno, err.err_data, buf,
			      sizeof(buf));
	on_completion(err.op_context, err.flags, err.err ? err.err : FI_EOTHER,
		      text ? text : "");
	return true;
}

/* Reads up to 16 entries of cq and handles them; true if any. */
static bool reap(struct fid_cq *cq)
{
	struct fi_cq_data_entry e[16];
	ssize_t n = fi_cq_read(cq, e, ARRAY_LEN(e));

	if (n == -FI_EAGAIN)
		return false;
	if (n == -FI_EAVAIL)
		return reap_error(cq);
	if (n < 0) {
		note_failure(false, "fi_cq_read: %s", fi_strerror((int)-n));
		return false;
	}
	for (ssize_t i = 0; i < n; i++)
		on_completion(e[i].op_context, e[i].flags, 0, "");
	return true;
}

/* ================================================================== */
/* Initiator: the threads                                             */
/* ================================================================== */

/* Registers the thread's source buffer (FI_MR_LOCAL), in the thread. */
static bool worker_register(struct worker *w)
{
	int ret;

	w->desc = NULL;
	if (!(g_net.info->domain_attr->mr_mode & FI_MR_LOCAL))
		return true;
	ret = fi_mr_reg(g_net.domain, w->src, SLICE_LEN, FI_WRITE | FI_READ,
			0, w->id + 1, 0, &w->src_mr, NULL);
	if (ret) {
		note_failure(false, "thread %u: fi_mr_reg: %s", w->id,
			     fi_strerror(-ret));
		return false;
	}
	w->desc = fi_mr_desc(w->src_mr);
	return true;
}

/* A length for a range in a piece: small, odd, page-sized or whole. */
static uint32_t pick_len(struct worker *w)
{
	static const uint32_t lens[] = { 1, 7, 8, 63, 64, 100, 511, 4096, 4099,
					 8192, 20000, PIECE_LEN };

	return lens[rnd(&w->rng, ARRAY_LEN(lens))];
}

/* A range of len bytes at a random place in piece p of slot s. */
static struct range pick_range(struct worker *w, unsigned s, unsigned p,
			       uint32_t len)
{
	uint64_t piece = slice_off(w) + (uint64_t)s * SLOT_LEN +
			 (uint64_t)p * PIECE_LEN;

	return (struct range){ piece + rnd(&w->rng, PIECE_LEN - len + 1), len,
			       0 };
}

/* New bytes for r in the source buffer, each unlike the byte before it
 * (what the target's file holds there), so a missed write shows. */
static void fill_range(struct worker *w, const struct range *r)
{
	uint8_t *p = w->src + (r->off - slice_off(w));

	for (uint32_t i = 0; i < r->len; i++) {
		uint8_t v = (uint8_t)rng_next(&w->rng);

		p[i] = v == p[i] ? (uint8_t)~v : v;
	}
}

/* The next batch's kind: every kind in turn in mix, else mostly plain
 * commits. */
static enum batch_kind pick_kind(struct worker *w)
{
	if (g_opt.mode == MODE_MIX)
		return (enum batch_kind)((w->posted + w->id) % BK_COUNT);
	return w->posted % 4 == 3 ? BK_WRITES_COMMIT : BK_COMMIT;
}

/* Operation i of batch b, idle, for range r with flags at the post. */
static void init_op(struct batch *b, unsigned i, enum op_kind kind,
		    struct range r, uint64_t flags)
{
	struct op *op = &b->op[i];

	memset(op, 0, sizeof(*op));
	op->batch = b;
	op->kind = kind;
	op->r = r;
	op->post_flags = flags;
}

/* Plans batch b: its writes, its commit, and their new bytes. */
static void plan_batch(struct worker *w, struct batch *b)
{
	enum batch_kind k = pick_kind(w);
	unsigned nwrites = k == BK_COMMIT ? 0 : 1 + (unsigned)rnd(&w->rng, 3);
	uint32_t len = k == BK_FLUSH ? 0 : k == BK_FENCED_SMALL ?
		       1 + (uint32_t)rnd(&w->rng, SEND_MAX) : pick_len(w);
	bool fenced = k == BK_FENCED_SMALL || k == BK_FENCED_LARGE;

	b->kind = k;
	b->nops = nwrites + 1;
	b->nposted = b->checked = b->covered = 0;
	for (unsigned i = 0; i < nwrites; i++)
		init_op(b, i, OP_WRITE, pick_range(w, b->slot, i, pick_len(w)),
			0);
	init_op(b, nwrites, OP_COMMIT, pick_range(w, b->slot, PIECES - 1, len),
		fenced ? FI_FENCE : 0);
	for (unsigned i = 0; i < b->nops; i++)
		fill_range(w, &b->op[i].r);
}

/* Posts op as fi_writemsg: a plain write, or a commit (FI_COMMIT_COMPLETE). */
static ssize_t post_rma(struct worker *w, struct op *op)
{
	struct iovec iov = { w->src + (op->r.off - slice_off(w)), op->r.len };
	void *desc = w->desc;
	struct fi_rma_iov rma = { rma_addr(op->r.off), op->r.len, g_opt.key };
	struct fi_msg_rma msg = { .msg_iov = &iov, .desc = &desc,
				  .iov_count = op->r.len ? 1 : 0,
				  .rma_iov = &rma, .rma_iov_count = 1,
				  .context = &op->ctx };
	uint64_t flags = FI_COMPLETION | op->post_flags;

	if (op->kind == OP_COMMIT)
		flags |= FI_COMMIT_COMPLETE;
	return fi_writemsg(w->conn->ep, &msg, flags);
}

static bool collect(struct worker *w);

/*
 * Posts op, retrying while the provider says -FI_EAGAIN (back-pressure:
 * the CQ is read meanwhile), within STEP_MS; false on a failure.
 */
static bool post_op(struct worker *w, struct op *op)
{
	int64_t deadline = deadline_in(STEP_MS);
	char what[160];
	ssize_t ret;

	for (;;) {
		op->r.mark = oracle_count();
		__atomic_store_n(&op->state, ST_POSTED, __ATOMIC_RELEASE);
		ret = post_rma(w, op);
		if (!ret)
			return true;
		__atomic_store_n(&op->state, ST_IDLE, __ATOMIC_RELEASE);
		if (ret != -FI_EAGAIN && g_opt.faults) {
			/* an injected fault: the batch ends here */
			__atomic_add_fetch(&g_post_errors, 1, __ATOMIC_RELAXED);
			return false;
		}
		if (ret != -FI_EAGAIN) {
			note_failure(false, "posting the %s: %s",
				     op_str(op, what, sizeof(what)),
				     fi_strerror((int)-ret));
			return false;
		}
		w->eagain++;
		if (stopped() || !before(deadline)) {
			if (!stopped())
				note_failure(false, "posting the %s: "
					     "-FI_EAGAIN for %d ms",
					     op_str(op, what, sizeof(what)),
					     STEP_MS);
			return false;
		}
		if (!reap(w->cq) && !collect(w))
			pause_briefly();
	}
}

/* The next free slot's batch, or NULL. */
static struct batch *free_batch(struct worker *w)
{
	for (unsigned i = 0; i < SLOTS; i++) {
		struct batch *b = &w->b[(w->next_slot + i) % SLOTS];

		if (!b->busy) {
			w->next_slot = (b->slot + 1) % SLOTS;
			return b;
		}
	}
	return NULL;
}

/* Plans and posts a batch in a free slot; true if one was posted. */
static bool post_batch(struct worker *w)
{
	struct batch *b = free_batch(w);

	if (!b)
		return false;
	plan_batch(w, b);
	b->busy = b->posting = true;
	b->posted_at = now_ms();
	w->inflight++;
	w->posted++;
	for (unsigned i = 0; i < b->nops && !stopped(); i++) {
		if (!post_op(w, &b->op[i]))
			break;
		b->nposted++;
	}
	b->posting = false;
	return true;
}

/* Counts a batch whose every posted operation completed, frees it. */
static void finish_batch(struct worker *w, struct batch *b)
{
	const struct op *commit = &b->op[b->nops - 1];

	if (b->nposted == b->nops && !commit->err) {
		w->commits++;
		w->writes += b->nops - 1;
		w->fenced += !!(commit->post_flags & FI_FENCE);
		w->flushes += !commit->r.len;
		w->ranges += b->checked;
		w->covered += b->covered;
	} else {
		w->failed++;
		w->commit_errors += b->nposted == b->nops && commit->err;
	}
	b->busy = false;
	w->inflight--;
}

/* Frees the batches that are done; true if any was. */
static bool collect(struct worker *w)
{
	bool any = false;

	for (unsigned s = 0; s < SLOTS; s++) {
		struct batch *b = &w->b[s];
		unsigned i;

		if (!b->busy || b->posting)
			continue;
		for (i = 0; i < b->nposted; i++)
			if (__atomic_load_n(&b->op[i].state, __ATOMIC_ACQUIRE) !=
			    ST_DONE)
				break;
		if (i == b->nposted) {
			finish_batch(w, b);
			any = true;
		}
	}
	return any;
}

/* A batch in flight for longer than STEP_MS is a failure (a hang). */
static bool overdue(struct worker *w)
{
	for (unsigned s = 0; s < SLOTS; s++) {
		const struct batch *b = &w->b[s];

		if (b->busy && !b->posting && now_ms() - b->posted_at > STEP_MS) {
			note_failure(false, "thread %u: a batch (%u operations"
				     ") did not complete within %d ms",
				     w->id, b->nposted, STEP_MS);
			return true;
		}
	}
	return false;
}

/* A thread's loop: read the CQ, free done batches, post, until its
 * batches are all done (or the run stops). */
static void worker_run(struct worker *w)
{
	while (!stopped() && (w->posted < g_opt.commits || w->inflight)) {
		bool busy = reap(w->cq);

		busy |= collect(w);
		if (w->posted < g_opt.commits && w->inflight < WINDOW)
			busy |= post_batch(w);
		if (overdue(w))
			break;
		if (!busy)
			pause_briefly();
	}
}

/* After a failure: lets what is in flight complete (bounded). */
static void worker_drain(struct worker *w)
{
	int64_t deadline = deadline_in(DRAIN_MS);

	while (w->inflight && before(deadline))
		if (!reap(w->cq) && !collect(w))
			pause_briefly();
}

static pthread_barrier_t g_start;
static bool g_running; /* the threads started together, not joined yet */

/* A thread: registers its buffer, starts with the others, runs. */
static void *worker_main(void *arg)
{
	struct worker *w = arg;
	bool ok = worker_register(w);

	t_self = w;
	pthread_barrier_wait(&g_start);
	if (ok)
		worker_run(w);
	worker_drain(w);
	__atomic_store_n(&w->finished, 1, __ATOMIC_RELEASE);
	return NULL;
}

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
		struct cm_event ev;

		c->cq = g_cqs[i % ncqs];
		c->ep = open_ep(g_net.info, c->cq);
		CHECK(fi_connect(c->ep, g_net.info->dest_addr, NULL, 0));
		g_nconns++;
		while (!c->connected && before(deadline)) {
			if (!eq_poll(&ev)) {
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
		struct cm_event ev;

		running = 0;
		for (unsigned i = 0; i < g_opt.threads; i++)
			running += !__atomic_load_n(&g_w[i].finished,
						    __ATOMIC_ACQUIRE);
		while (eq_poll(&ev))
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
static void initiator_close(void)
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
static int initiator_main(void)
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

/* ================================================================== */
/* Options                                                            */
/* ================================================================== */

static noreturn void usage(void)
{
	fprintf(stderr,
		"usage: pmv_threads -r target -P PORT -f FILE -n CONNS [-p POLLERS]\n"
		"       pmv_threads -r initiator -P PORT -m MODE -x BASE:KEY -F FILE\n"
		"                   [-o ORACLE] [-g GRAN] [-T THREADS] [-N BATCHES] [-A]\n"
		"                   [-X corrupt|faults] [-s SEED]\n"
		"  -a ADDR   address (default 127.0.0.1)\n"
		"  -m MODE   one-ep | multi-ep | mix\n"
		"  -T N      threads (1..%u, default 4); -N N batches each (default 200)\n"
		"  -g GRAN   the target's forced granularity: page | cache_line | byte\n"
		"  -A        every commit goes to the agent (FI_PMEMVERBS_METHOD=agent):\n"
		"            check the oracle on every profile\n"
		"  -X corrupt  test only: one commit's check expects a wrong byte (exit 3)\n"
		"  -X faults   errors from injected faults (FI_PMEMVERBS_FAULT_*) end\n"
		"              their batch instead of the run; successful commits are\n"
		"              checked as always\n"
		"  target: FI_PMEMVERBS_ORACLE=PATH creates the oracle log (-o PATH)\n",
		MAX_THREADS);
	exit(EXIT_USAGE);
}

static unsigned parse_uint(const char *s, unsigned lo, unsigned hi)
{
	char *end;
	unsigned long v = strtoul(s, &end, 0);

	if (*end || v < lo || v > hi)
		usage();
	return (unsigned)v;
}

static enum mode parse_mode(const char *s)
{
	for (unsigned i = 0; i < ARRAY_LEN(k_modes); i++)
		if (!strcmp(s, k_modes[i]))
			return (enum mode)i;
	usage();
}

/* -x BASE:KEY, as the target printed them on its REGION line. */
static void parse_region(const char *s)
{
	char *end;

	g_opt.base = strtoull(s, &end, 0);
	if (*end != ':')
		usage();
	g_opt.key = strtoull(end + 1, &end, 0);
	if (*end)
		usage();
}

static void parse_opts(int argc, char **argv)
{
	int c;

	while ((c = getopt(argc, argv, "r:a:P:f:F:n:p:m:T:N:x:o:g:AX:s:")) != -1) {
		switch (c) {
		case 'r': g_opt.role = optarg; break;
		case 'a': g_opt.addr = optarg; break;
		case 'P': g_opt.port = optarg; break;
		case 'f': case 'F': g_opt.file = optarg; break;
		case 'n': g_opt.conns = parse_uint(optarg, 1, MAX_CONNS); break;
		case 'p': g_opt.pollers = parse_uint(optarg, 1, MAX_POLLERS); break;
		case 'm': g_opt.mode = parse_mode(optarg); break;
		case 'T': g_opt.threads = parse_uint(optarg, 1, MAX_THREADS); break;
		case 'N': g_opt.commits = parse_uint(optarg, 1, 1000000); break;
		case 'x': parse_region(optarg); break;
		case 'o': g_opt.oracle = optarg; break;
		case 'g': g_opt.gran = optarg; break;
		case 'A': g_opt.all_oracle = true; break;
		case 'X':
			if (!strcmp(optarg, "corrupt"))
				g_opt.corrupt = true;
			else if (!strcmp(optarg, "faults"))
				g_opt.faults = true;
			else
				usage();
			break;
		case 's': g_opt.seed = strtoull(optarg, NULL, 0); break;
		default: usage();
		}
	}
	if (!g_opt.role || !g_opt.port || optind != argc)
		usage();
}

/*
 * At exit after die(): fabric objects closed before libfabric unloads.
 * Not on other exits: a library's signal handler that calls exit()
 * (libinfinipath's, on SIGTERM) must not close them under running threads.
 */
static void close_at_exit(void)
{
	if (!g_dying)
		return;
	if (!strcmp(g_opt.role, "target"))
		target_close();
	else
		initiator_close();
}

int main(int argc, char **argv)
{
	parse_opts(argc, argv);
	if (strcmp(g_opt.role, "target") && strcmp(g_opt.role, "initiator"))
		usage();
	if (atexit(close_at_exit))
		die("atexit failed");
	if (!strcmp(g_opt.role, "target"))
		return target_main();
	return initiator_main();
}
