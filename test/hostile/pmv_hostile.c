/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_hostile - a hostile or buggy peer against a pmemverbs target
 * (issue 11 item 5).  One program, three roles, over 127.0.0.1:
 *
 *   target   pmemverbs, FI_RMA_PMEM endpoints.  Maps a /dev/shm file
 *            between two PROT_NONE guard pages, fills it with a pattern
 *            (its first and last EDGE bytes are guard bytes that no valid
 *            request names), registers it with FI_RMA_PMEM and serves every
 *            connection until the honest initiator is done and every
 *            connection is gone.  Then it checks every byte of the region.
 *   honest   a well-behaved pmemverbs initiator: commits into its zone of
 *            the region until the attack is over (a marker file), then a
 *            few more, and tells the target how many ("DONE n", fi_send).
 *   hostile  the plain tcp core, no pmemverbs.  Sends a crafted pmemverbs
 *            CM header (its own inbox, registered), learns the target's
 *            inbox from the CM data of the accept, and writes crafted
 *            request slots and raw bytes into it with plain RMA writes;
 *            reads its acks and reports the refusals.
 *
 * The region (REGION_LEN bytes, offsets from its RMA base):
 *   [0, EDGE)                  guard bytes: the pattern, never named
 *   HONEST_OFF ...             the honest initiator's slots
 *   ZONE_A_OFF, ZONE_A_LEN     the hostile's one valid send request
 *   ZONE_B_OFF, ZONE_B_LEN     the hostile's other valid requests
 *   [REGION_LEN - EDGE, ...)   guard bytes
 * Every other byte keeps the pattern too.
 *
 * Each check prints "PASS name: detail" or "FAIL name: detail"; other lines
 * are information.  Exit status: 0 every check passed, 1 a check failed,
 * 2 usage.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdnoreturn.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
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

#include "proto/pmv_proto.h"

#define PMV_FI_VERSION FI_VERSION(1, 17)
#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))

/* The region and its zones (offsets from the region's RMA base). */
#define REGION_LEN 65536u
#define EDGE 512u
#define HONEST_OFF 4096u
#define HONEST_SLOTS 16u
#define HONEST_SLOT 1024u
#define ZONE_A_OFF 32768u
#define ZONE_A_LEN 32u
#define ZONE_B_OFF 40960u
#define ZONE_B_LEN 4096u
#define REGION_KEY 0x484f5354494c45ULL /* requested; the core may choose */

#define OWN_SLOT_SIZE 128u

/* Bounds on waits (none is a verdict on time). */
#define STEP_MS 30000          /* one operation, one connection setup */
#define ACK_MS 5000            /* an ack the hostile expects */
#define IGNORE_MS 50           /* watching for an ack that must not come */
#define PROGRESS_MS 30000      /* honest commits during an attack group */
#define TARGET_LIFE_MS 400000  /* the target's whole run */
#define HONEST_LIFE_MS 300000  /* the honest initiator's whole run */
#define GRACE_MS 20000         /* target: connections to end after DONE */
#define MAX_CONNS 128
#define PROGRESS_STEP 3        /* honest commits an attack group waits for */
#define CHURN_CONNS 40         /* connections the churn group drops */
#define STALL_REQS 40000       /* requests the stalled reader injects */
#define STALL_GAP_US 2000      /* its pause after each ring */

_Static_assert(sizeof(struct pmv_req) == 40, "pmv_req is 40 bytes on the wire");
_Static_assert(sizeof(struct pmv_ack) == 24, "pmv_ack is 24 bytes on the wire");

/* Shared between the processes (-c FILE, created by the script). */
struct ctl {
	uint64_t honest_commits; /* honest: commits completed */
	uint64_t honest_failed;  /* honest: 1 once a commit failed */
	uint64_t attack_started; /* hostile: 1 from its first crafted write */
};

/* ------------------------------------------------------------------ */
/* Common                                                             */
/* ------------------------------------------------------------------ */

static struct {
	const char *role, *addr, *port, *file, *ctl, *marker;
	uint64_t base, key;   /* the target's region (-x BASE:KEY) */
	unsigned after;       /* honest: commits after the attack */
	unsigned fuzz;        /* hostile: random requests */
	uint64_t seed;
	bool verbose;
} g_opt = { .addr = "127.0.0.1", .after = 100, .fuzz = 200, .seed = 1 };

static const char *g_role = "pmv_hostile";

#include "../common/pmv_test_check.h"

static void info(const char *fmt, ...) PRINTF_LIKE(1, 2);

/* Prints an information line (no verdict). */
static void info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

/* splitmix64's finalizer: the test's deterministic byte source. */
static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* The byte every untouched region offset holds. */
static uint8_t pattern_byte(uint64_t off)
{
	return (uint8_t)mix64(off ^ 0x504154544552ULL);
}

/* The byte honest commit i writes at region offset off. */
static uint8_t honest_byte(uint64_t i, uint64_t off)
{
	return (uint8_t)mix64((i << 20) ^ off ^ 0x484f4e455354ULL);
}

/* The byte the hostile's valid send places at zone A offset k. */
static uint8_t zone_a_byte(uint64_t k)
{
	return (uint8_t)mix64(k ^ 0x5a4f4e4541ULL);
}

/* The hostile's random numbers (seeded: a run can be repeated). */
static uint64_t rnd64(void)
{
	static uint64_t state;

	if (!state)
		state = mix64(g_opt.seed) | 1;
	return mix64(state++);
}

static uint64_t rnd(uint64_t bound)
{
	return bound ? rnd64() % bound : 0;
}

/* The honest commit kinds: slot s has kind s % 4, the same every time. */
struct piece {
	uint32_t off, len; /* within the slot */
};

static const struct hkind {
	struct piece p[2];
	unsigned n;
	bool split; /* piece 0 a plain write, piece 1 the commit */
	bool fence; /* FI_FENCE: the send method on agent profiles */
} k_kinds[4] = {
	{ { { 0, 1000 } }, 1, false, false },
	{ { { 8, 24 } }, 1, false, false },
	{ { { 0, 300 }, { 500, 300 } }, 2, true, false },
	{ { { 16, 40 } }, 1, false, true },
};

/* The mapped control file (-c). */
static struct ctl *ctl_map(void)
{
	int fd = open(g_opt.ctl, O_RDWR);
	void *p;

	if (fd < 0)
		die("opening %s: %s", g_opt.ctl, strerror(errno));
	p = mmap(NULL, sizeof(struct ctl), PROT_READ | PROT_WRITE, MAP_SHARED,
		 fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		die("mapping %s: %s", g_opt.ctl, strerror(errno));
	return p;
}

static uint64_t ctl_load(const uint64_t *word)
{
	return __atomic_load_n(word, __ATOMIC_ACQUIRE);
}

static void ctl_store(uint64_t *word, uint64_t v)
{
	__atomic_store_n(word, v, __ATOMIC_RELEASE);
}

/* fi_info hints for an FI_EP_MSG endpoint of prov over sockets. */
static struct fi_info *make_hints(const char *prov, bool pmem)
{
	struct fi_info *h = fi_allocinfo();

	if (!h)
		die("fi_allocinfo failed");
	h->ep_attr->type = FI_EP_MSG;
	h->caps = FI_MSG | FI_RMA | (pmem ? FI_RMA_PMEM : 0);
	h->mode = FI_CONTEXT | FI_CONTEXT2;
	h->addr_format = FI_SOCKADDR_IN;
	h->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				  FI_MR_PROV_KEY;
	h->fabric_attr->prov_name = strdup(prov);
	if (!h->fabric_attr->prov_name)
		die("out of memory");
	return h;
}

/* The first entry of prov for addr:port (FI_SOURCE: to listen on it). */
static struct fi_info *query_info(const char *prov, bool pmem, uint64_t flags)
{
	struct fi_info *hints = make_hints(prov, pmem), *info = NULL;
	int ret = fi_getinfo(PMV_FI_VERSION, g_opt.addr, g_opt.port, flags,
			     hints, &info);

	fi_freeinfo(hints);
	if (ret)
		die("fi_getinfo(%s, %s:%s): %s", prov, g_opt.addr, g_opt.port,
		    fi_strerror(-ret));
	return info;
}

static struct fid_eq *open_eq(struct fid_fabric *fabric)
{
	struct fi_eq_attr attr = { .size = 64, .wait_obj = FI_WAIT_UNSPEC };
	struct fid_eq *eq;

	CHECK(fi_eq_open(fabric, &attr, &eq, NULL));
	return eq;
}

static struct fid_cq *open_cq(struct fid_domain *domain)
{
	struct fi_cq_attr attr = { .size = 1024, .format = FI_CQ_FORMAT_DATA,
				   .wait_obj = FI_WAIT_NONE };
	struct fid_cq *cq;

	CHECK(fi_cq_open(domain, &attr, &cq, NULL));
	return cq;
}

/* One CM event: its type, fid, info (CONNREQ) and data. */
struct cm_event {
	uint32_t event;
	struct fid *fid;
	struct fi_info *info;
	uint8_t data[256];
	size_t datalen;
	int err; /* an error entry: its err (the event is then 0) */
};

/* Reads one EQ event or error entry; false if there is none. */
static bool eq_poll(struct fid_eq *eq, struct cm_event *ev)
{
	uint64_t buf[(sizeof(struct fi_eq_cm_entry) + 256) / 8 + 1];
	struct fi_eq_cm_entry *entry = (struct fi_eq_cm_entry *)buf;
	struct fi_eq_err_entry err = { 0 };
	uint32_t event = 0;
	ssize_t n = fi_eq_read(eq, &event, buf, sizeof(buf), 0);

	if (n == -FI_EAGAIN)
		return false;
	memset(ev, 0, sizeof(*ev));
	if (n == -FI_EAVAIL) {
		if (fi_eq_readerr(eq, &err, 0) < 0)
			die("fi_eq_readerr failed after -FI_EAVAIL");
		ev->err = err.err ? err.err : -1;
		ev->fid = err.fid;
		return true;
	}
	if (n < (ssize_t)sizeof(entry->fid))
		die("fi_eq_read: %s", fi_strerror((int)-n));
	ev->event = event;
	ev->fid = entry->fid;
	ev->info = n >= (ssize_t)sizeof(*entry) ? entry->info : NULL;
	ev->datalen = n > (ssize_t)sizeof(*entry) ?
		      (size_t)n - sizeof(*entry) : 0;
	memcpy(ev->data, entry->data, ev->datalen);
	return true;
}

/* Name of an ack status: a PMV_ERR_* code, 0, or an fi_errno code. */
static const char *status_name(int32_t status)
{
	static const char *const names[] = {
		"PMV_ERR_BASE", "PMV_ERR_NO_KEY", "PMV_ERR_RANGE",
		"PMV_ERR_ACCESS", "PMV_ERR_MULTI_IOV", "PMV_ERR_PEER_GONE",
		"PMV_ERR_FENCE", "PMV_ERR_METHOD", "PMV_ERR_REREGISTERED",
		"PMV_ERR_CLOSED", "PMV_ERR_PEER_TIMEOUT", "PMV_ERR_PERSIST",
		"PMV_ERR_BAD_REQUEST",
	};
	static char buf[48];

	if (status == 0)
		return "0 (served)";
	if (status >= PMV_ERR_BASE && status < PMV_ERR_LAST)
		return names[status - PMV_ERR_BASE];
	snprintf(buf, sizeof(buf), "status %" PRId32 " (%s)", status,
		 fi_strerror(status < 0 ? -status : status));
	return buf;
}

/* ------------------------------------------------------------------ */
/* The region's zones                                                 */
/* ------------------------------------------------------------------ */

enum zone { Z_EDGE, Z_HONEST, Z_A, Z_B, Z_OTHER };

static enum zone zone_of(uint32_t off)
{
	if (off < EDGE || off >= REGION_LEN - EDGE)
		return Z_EDGE;
	if (off >= HONEST_OFF && off < HONEST_OFF + HONEST_SLOTS * HONEST_SLOT)
		return Z_HONEST;
	if (off >= ZONE_A_OFF && off < ZONE_A_OFF + ZONE_A_LEN)
		return Z_A;
	if (off >= ZONE_B_OFF && off < ZONE_B_OFF + ZONE_B_LEN)
		return Z_B;
	return Z_OTHER;
}

/* The byte at honest-zone offset off after honest commits 0 .. n-1. */
static uint8_t honest_expected(uint64_t n, uint32_t off)
{
	uint32_t rel = off - HONEST_OFF, s = rel / HONEST_SLOT;
	uint32_t in = rel % HONEST_SLOT;
	const struct hkind *k = &k_kinds[s % 4];
	uint64_t last;

	if (n <= s)
		return pattern_byte(off);
	last = s + (n - 1 - s) / HONEST_SLOTS * HONEST_SLOTS;
	for (unsigned j = 0; j < k->n; j++)
		if (in >= k->p[j].off && in < k->p[j].off + k->p[j].len)
			return honest_byte(last, off);
	return pattern_byte(off);
}

/* ------------------------------------------------------------------ */
/* Target                                                             */
/* ------------------------------------------------------------------ */

struct tconn {
	struct fid_ep *ep;
	char kind;   /* last byte of its CM data: 'H' honest, 'X' hostile */
	bool shut;   /* FI_SHUTDOWN read, or never accepted */
	struct fi_context2 rxctx[2];
	char rxbuf[2][64];
};

static struct {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *eq;
	struct fid_pep *pep;
	struct fid_cq *txcq, *rxcq;
	struct fid_mr *mr;
	struct fi_pmem_ops_domain *pmem;
	uint8_t *map;
	int fd;
	struct tconn conns[MAX_CONNS];
	unsigned nconns;
	int64_t honest_n;       /* commits the honest made; -1: no DONE yet */
	int64_t honest_shut_at; /* when its connection ended; 0: not yet */
	unsigned immed, canceled_recvs, cq_errors, eq_errors, rejected;
	uint64_t served[2], persisted[2]; /* [1]: the honest connection */
} g_t = { .honest_n = -1, .fd = -1 };

/*
 * Maps the region file between two PROT_NONE pages: an access one byte
 * outside the region faults (SIGSEGV) instead of landing in other memory.
 */
static void target_map_region(void)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	uint8_t *res = mmap(NULL, REGION_LEN + 2 * pg, PROT_NONE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (res == MAP_FAILED)
		die("reserving the guard pages: %s", strerror(errno));
	g_t.fd = open(g_opt.file, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (g_t.fd < 0 || ftruncate(g_t.fd, REGION_LEN))
		die("creating %s: %s", g_opt.file, strerror(errno));
	g_t.map = mmap(res + pg, REGION_LEN, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_FIXED, g_t.fd, 0);
	if (g_t.map == MAP_FAILED)
		die("mapping %s: %s", g_opt.file, strerror(errno));
	for (uint32_t off = 0; off < REGION_LEN; off++)
		g_t.map[off] = pattern_byte(off);
	if (msync(g_t.map, REGION_LEN, MS_SYNC))
		die("msync of %s: %s", g_opt.file, strerror(errno));
}

/* Registers the region with FI_RMA_PMEM and prints "REGION base key". */
static void target_register(void)
{
	uint64_t base;
	const char *profile = "unknown";

	CHECK(fi_mr_reg(g_t.domain, g_t.map, REGION_LEN, FI_REMOTE_WRITE, 0,
			REGION_KEY, FI_RMA_PMEM, &g_t.mr, NULL));
	base = (g_t.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ?
	       (uint64_t)(uintptr_t)g_t.map : 0;
	if (g_t.pmem)
		profile = fi_pmem_profile_str(g_t.pmem->mr_profile(g_t.mr));
	printf("REGION 0x%" PRIx64 ":0x%" PRIx64 " profile %s core %s\n", base,
	       fi_mr_key(g_t.mr), profile,
	       g_t.pmem ? g_t.pmem->core_prov(g_t.domain) : "?");
}

/* Opens the domain, the region, and the listening endpoint. */
static void target_open(void)
{
	g_t.info = query_info("pmemverbs", true, FI_SOURCE);
	CHECK(fi_fabric(g_t.info->fabric_attr, &g_t.fabric, NULL));
	CHECK(fi_domain(g_t.fabric, g_t.info, &g_t.domain, NULL));
	if (fi_open_ops(&g_t.domain->fid, FI_PMEM_DOMAIN_OPS, 0,
			(void **)&g_t.pmem, NULL))
		g_t.pmem = NULL;
	g_t.eq = open_eq(g_t.fabric);
	g_t.txcq = open_cq(g_t.domain);
	g_t.rxcq = open_cq(g_t.domain);
	target_map_region();
	target_register();
	CHECK(fi_passive_ep(g_t.fabric, g_t.info, &g_t.pep, NULL));
	CHECK(fi_pep_bind(g_t.pep, &g_t.eq->fid, 0));
	CHECK(fi_listen(g_t.pep));
	printf("READY %s:%s\n", g_opt.addr, g_opt.port);
	fflush(stdout);
}

/* Opens, binds and enables c's endpoint, and posts its two receives. */
static int target_open_conn(struct tconn *c, struct fi_info *info)
{
	int ret = fi_endpoint(g_t.domain, info, &c->ep, c);

	if (ret)
		return ret;
	if ((ret = fi_ep_bind(c->ep, &g_t.eq->fid, 0)) ||
	    (ret = fi_ep_bind(c->ep, &g_t.txcq->fid, FI_TRANSMIT)) ||
	    (ret = fi_ep_bind(c->ep, &g_t.rxcq->fid, FI_RECV)) ||
	    (ret = fi_enable(c->ep)))
		return ret;
	for (int k = 0; k < 2; k++) {
		ret = (int)fi_recv(c->ep, c->rxbuf[k], sizeof(c->rxbuf[k]),
				   NULL, 0, &c->rxctx[k]);
		if (ret)
			return ret;
	}
	return 0;
}

/* Accepts a connection request (any peer: the hostile one too). */
static void target_on_connreq(struct cm_event *ev)
{
	struct tconn *c;
	int ret;

	if (g_t.nconns == MAX_CONNS) {
		fi_reject(g_t.pep, ev->info->handle, NULL, 0);
		fi_freeinfo(ev->info);
		g_t.rejected++;
		return;
	}
	c = &g_t.conns[g_t.nconns++];
	c->kind = ev->datalen ? (char)ev->data[ev->datalen - 1] : '?';
	ret = target_open_conn(c, ev->info);
	if (!ret)
		ret = fi_accept(c->ep, NULL, 0);
	if (ret) {
		info("INFO target: connection %u ('%c') not accepted: %s",
		     g_t.nconns - 1, c->kind, fi_strerror(-ret));
		c->shut = true;
		if (c->ep)
			fi_close(&c->ep->fid);
		else
			fi_reject(g_t.pep, ev->info->handle, NULL, 0);
		c->ep = NULL;
	}
	fi_freeinfo(ev->info);
}

static struct tconn *target_conn_of(const struct fid *fid)
{
	for (unsigned i = 0; i < g_t.nconns; i++)
		if (g_t.conns[i].ep && &g_t.conns[i].ep->fid == fid)
			return &g_t.conns[i];
	return NULL;
}

/* Adds a connection's counters to the honest's or the others' sums. */
static void target_count_conn(const struct tconn *c)
{
	struct fi_pmem_ep_counters cn = { 0 };
	bool honest = c->kind == 'H';

	if (!c->ep || !g_t.pmem || g_t.pmem->ep_counters(c->ep, &cn))
		return;
	g_t.served[honest] += cn.requests_served;
	g_t.persisted[honest] += cn.bytes_persisted;
}

/* A connection ended (FI_SHUTDOWN, or an EQ error entry for it): its
 * endpoint is closed at once, whatever its agent is doing. */
static void target_conn_ended(struct tconn *c)
{
	if (!c || c->shut)
		return;
	c->shut = true;
	target_count_conn(c);
	if (c->kind == 'H')
		g_t.honest_shut_at = now_ms();
	fi_close(&c->ep->fid);
	c->ep = NULL;
}

/* Handles one EQ event, if any; an error entry is noted, not fatal. */
static bool target_poll_eq(void)
{
	struct cm_event ev;

	if (!eq_poll(g_t.eq, &ev))
		return false;
	if (ev.err)
		g_t.eq_errors++;
	if (ev.err || ev.event == FI_SHUTDOWN)
		target_conn_ended(target_conn_of(ev.fid));
	else if (ev.event == FI_CONNREQ)
		target_on_connreq(&ev);
	return true;
}

/* A receive completed: the honest's "DONE n". */
static void target_on_recv(const struct fi_cq_data_entry *e)
{
	unsigned long long n;

	for (unsigned i = 0; i < g_t.nconns; i++) {
		struct tconn *c = &g_t.conns[i];

		for (int k = 0; k < 2; k++) {
			if (e->op_context != &c->rxctx[k])
				continue;
			c->rxbuf[k][sizeof(c->rxbuf[k]) - 1] = '\0';
			if (c->kind == 'H' &&
			    sscanf(c->rxbuf[k], "DONE %llu", &n) == 1)
				g_t.honest_n = (int64_t)n;
			else
				info("INFO target: a message on connection %u "
				     "('%c')", i, c->kind);
		}
	}
}

/* True if context is one of the target's receive contexts. */
static bool target_is_recv(const void *context)
{
	for (unsigned i = 0; i < g_t.nconns; i++)
		if (context == &g_t.conns[i].rxctx[0] ||
		    context == &g_t.conns[i].rxctx[1])
			return true;
	return false;
}

/* An error entry: a receive canceled as its connection ended is
 * expected; anything else is printed (pmemverbs's own traffic must not
 * show in the application's CQs). */
static void target_on_error(struct fid_cq *cq)
{
	struct fi_cq_err_entry err = { 0 };

	if (fi_cq_readerr(cq, &err, 0) != 1)
		return;
	if (err.err == FI_ECANCELED && target_is_recv(err.op_context)) {
		g_t.canceled_recvs++;
		return;
	}
	if (g_t.cq_errors++ < 5)
		info("INFO target: CQ error entry: %s (prov_errno %d, context "
		     "%p, flags 0x%" PRIx64 "): %s", fi_strerror(err.err),
		     err.prov_errno, err.op_context, (uint64_t)err.flags,
		     fi_cq_strerror(cq, err.prov_errno, err.err_data, NULL, 0));
}

/* Reads one CQ; FI_IMMED entries are counted, errors noted. */
static bool target_poll_cq(struct fid_cq *cq)
{
	struct fi_cq_data_entry e[16];
	ssize_t n = fi_cq_read(cq, e, ARRAY_LEN(e));

	if (n == -FI_EAGAIN)
		return false;
	if (n == -FI_EAVAIL) {
		target_on_error(cq);
		return true;
	}
	if (n < 0)
		die("fi_cq_read: %s", fi_strerror((int)-n));
	for (ssize_t i = 0; i < n; i++) {
		if (e[i].flags & FI_REMOTE_CQ_DATA)
			g_t.immed++;
		else if (e[i].flags & FI_RECV)
			target_on_recv(&e[i]);
	}
	return true;
}

/* True when the honest is done and every connection has ended (or the
 * grace after the honest's end is over). */
static bool target_done(void)
{
	bool all = true;

	if (g_t.honest_n < 0 || !g_t.honest_shut_at)
		return false;
	for (unsigned i = 0; i < g_t.nconns; i++)
		all &= g_t.conns[i].shut;
	return all || now_ms() - g_t.honest_shut_at > GRACE_MS;
}

/* Serves connections until target_done; false if it never came. */
static bool target_serve(void)
{
	int64_t life = deadline_in(TARGET_LIFE_MS);

	while (!target_done()) {
		bool busy = target_poll_eq();

		busy |= target_poll_cq(g_t.txcq);
		busy |= target_poll_cq(g_t.rxcq);
		if (g_t.honest_shut_at && g_t.honest_n < 0 &&
		    now_ms() - g_t.honest_shut_at > GRACE_MS)
			return false;
		if (!before(life))
			return false;
		if (!busy)
			pause_briefly();
	}
	return true;
}

/* Counts the bytes of zone z that differ from want(off); first: where. */
static unsigned count_diffs(enum zone z, uint8_t (*want)(uint32_t),
			    uint32_t *first)
{
	unsigned bad = 0;

	for (uint32_t off = 0; off < REGION_LEN; off++) {
		if (zone_of(off) != z || g_t.map[off] == want(off))
			continue;
		if (!bad++)
			*first = off;
	}
	return bad;
}

static uint8_t want_pattern(uint32_t off)
{
	return pattern_byte(off);
}

static uint64_t g_check_n;

static uint8_t want_honest(uint32_t off)
{
	return honest_expected(g_check_n, off);
}

/* One verdict on a zone's bytes. */
static void check_zone(const char *name, enum zone z, uint8_t (*want)(uint32_t),
		       const char *what)
{
	uint32_t first = 0;
	unsigned bad = count_diffs(z, want, &first);

	if (!bad)
		verdict(true, name, "%s", what);
	else
		verdict(false, name, "%u bytes changed, the first at region "
			"offset %u (0x%02x, expected 0x%02x)", bad, first,
			g_t.map[first], want(first));
}

/* Zone A: untouched, or exactly the hostile's valid send. */
static void check_zone_a(void)
{
	unsigned pat = 0, sent = 0;

	for (uint32_t k = 0; k < ZONE_A_LEN; k++) {
		pat += g_t.map[ZONE_A_OFF + k] == pattern_byte(ZONE_A_OFF + k);
		sent += g_t.map[ZONE_A_OFF + k] == zone_a_byte(k);
	}
	verdict(pat == ZONE_A_LEN || sent == ZONE_A_LEN, "target-zone-a",
		"the hostile's valid send request's %u bytes: %s", ZONE_A_LEN,
		sent == ZONE_A_LEN ? "placed" :
		pat == ZONE_A_LEN ? "not placed" : "neither pattern nor data");
}

/* Checks every byte of the region against what valid requests name. */
static void target_check(void)
{
	char what[160];

	check_zone("target-guards", Z_EDGE, want_pattern,
		   "the guard bytes at both region edges hold their pattern");
	check_zone("target-untouched", Z_OTHER, want_pattern,
		   "every byte no request named holds its pattern");
	check_zone_a();
	if (g_t.honest_n < 0) {
		verdict(false, "target-honest-data", "the honest initiator "
			"never said how many commits it made");
		return;
	}
	g_check_n = (uint64_t)g_t.honest_n;
	snprintf(what, sizeof(what), "the honest zone holds the data of its "
		 "last commit to each slot (%" PRIu64 " commits)", g_check_n);
	check_zone("target-honest-data", Z_HONEST, want_honest, what);
}

static void target_close(void)
{
	for (unsigned i = 0; i < g_t.nconns; i++)
		if (g_t.conns[i].ep)
			fi_close(&g_t.conns[i].ep->fid);
	fi_close(&g_t.pep->fid);
	fi_close(&g_t.mr->fid);
	fi_close(&g_t.txcq->fid);
	fi_close(&g_t.rxcq->fid);
	fi_close(&g_t.eq->fid);
	fi_close(&g_t.domain->fid);
	fi_close(&g_t.fabric->fid);
	fi_freeinfo(g_t.info);
	munmap(g_t.map, REGION_LEN);
	close(g_t.fd);
}

static int target_main(void)
{
	bool served;

	g_role = "target";
	if (!g_opt.file)
		die("-f FILE is needed");
	target_open();
	served = target_serve();
	for (unsigned i = 0; i < g_t.nconns; i++)
		if (!g_t.conns[i].shut)
			target_count_conn(&g_t.conns[i]);
	info("INFO target: requests served: %" PRIu64 " honest (%" PRIu64
	     " bytes persisted), %" PRIu64 " from the other connections (%"
	     PRIu64 " bytes)", g_t.served[1], g_t.persisted[1], g_t.served[0],
	     g_t.persisted[0]);
	info("INFO target: %u connections (%u rejected), %u FI_IMMED entries, "
	     "%u receives canceled at disconnection, %u other CQ error "
	     "entries, %u EQ error entries", g_t.nconns, g_t.rejected,
	     g_t.immed, g_t.canceled_recvs, g_t.cq_errors, g_t.eq_errors);
	verdict(served, "target-served", served ? "the honest initiator "
		"finished and every connection ended" : "the honest initiator "
		"did not finish (no DONE) within the bounds");
	target_check();
	target_close();
	return g_failed ? 1 : 0;
}

/* ------------------------------------------------------------------ */
/* Honest initiator                                                   */
/* ------------------------------------------------------------------ */

struct hop {
	struct fi_context2 ctx;
	bool done;
	int err;
	char text[200];
};

static struct {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *eq;
	struct fid_cq *txcq, *rxcq;
	struct fid_ep *ep;
	struct ctl *ctl;
	uint8_t buf[HONEST_SLOT];
	char msg[64];
	bool shut;
} g_h;

/* Completes the hop of one CQ entry or error entry. */
static void honest_complete(void *context, int err, const char *text)
{
	struct hop *op = context;

	if (!op) {
		info("INFO honest: a completion without context (err %d)", err);
		return;
	}
	op->err = err;
	snprintf(op->text, sizeof(op->text), "%s", text ? text : "");
	op->done = true;
}

/* Reads the transmit CQ and the EQ once; true if something came. */
static bool honest_poll(void)
{
	struct fi_cq_data_entry e[8];
	struct fi_cq_err_entry err = { 0 };
	struct cm_event ev;
	ssize_t n = fi_cq_read(g_h.txcq, e, ARRAY_LEN(e));

	if (eq_poll(g_h.eq, &ev) && (ev.err || ev.event == FI_SHUTDOWN))
		g_h.shut = true;
	if (n == -FI_EAGAIN)
		return false;
	if (n == -FI_EAVAIL) {
		if (fi_cq_readerr(g_h.txcq, &err, 0) != 1)
			die("fi_cq_readerr failed after -FI_EAVAIL");
		honest_complete(err.op_context, err.err ? err.err : -1,
				fi_cq_strerror(g_h.txcq, err.prov_errno,
					       err.err_data, NULL, 0));
		return true;
	}
	if (n < 0)
		die("fi_cq_read: %s", fi_strerror((int)-n));
	for (ssize_t i = 0; i < n; i++)
		honest_complete(e[i].op_context, 0, NULL);
	return true;
}

/* Waits (bounded) for op; false if it did not complete. */
static bool honest_wait(struct hop *op)
{
	int64_t deadline = deadline_in(STEP_MS);

	while (!op->done) {
		if (!honest_poll() && !before(deadline))
			return false;
		if (!op->done)
			pause_briefly();
	}
	return true;
}

/* Posts one RMA write (a commit with FI_COMMIT_COMPLETE), retrying
 * -FI_EAGAIN (bounded); 0 or the post's error. */
static ssize_t honest_post(struct hop *op, const struct piece *p,
			   uint32_t slot_off, uint64_t flags)
{
	struct iovec iov = { g_h.buf + p->off, p->len };
	void *desc = NULL;
	struct fi_rma_iov rma = { .addr = g_opt.base + slot_off + p->off,
				  .len = p->len, .key = g_opt.key };
	struct fi_msg_rma msg = { .msg_iov = &iov, .desc = &desc,
				  .iov_count = 1, .rma_iov = &rma,
				  .rma_iov_count = 1, .context = &op->ctx };
	int64_t deadline = deadline_in(STEP_MS);
	ssize_t ret;

	*op = (struct hop){ 0 };
	while ((ret = fi_writemsg(g_h.ep, &msg, flags | FI_COMPLETION)) ==
	       -FI_EAGAIN && before(deadline))
		honest_poll();
	return ret;
}

/* Why op failed, for a FAIL line ("" if it did not). */
static const char *honest_failure(struct hop *op, ssize_t posted)
{
	static char why[256];

	if (posted)
		snprintf(why, sizeof(why), "fi_writemsg: %s",
			 fi_strerror((int)-posted));
	else if (!honest_wait(op))
		snprintf(why, sizeof(why), "no completion within %d ms",
			 STEP_MS);
	else if (op->err)
		snprintf(why, sizeof(why), "%s: %s", fi_strerror(op->err),
			 op->text);
	else
		return "";
	return why;
}

/* Honest commit i into slot i % HONEST_SLOTS; false (and a FAIL) if it
 * did not complete successfully. */
static bool honest_commit(uint64_t i)
{
	uint32_t s = (uint32_t)(i % HONEST_SLOTS);
	uint32_t slot_off = HONEST_OFF + s * HONEST_SLOT;
	const struct hkind *k = &k_kinds[s % 4];
	const struct piece *c = &k->p[k->n - 1];
	struct hop wop, cop;
	const char *why = "";
	char name[64];

	for (unsigned j = 0; j < k->n; j++)
		for (uint32_t b = 0; b < k->p[j].len; b++)
			g_h.buf[k->p[j].off + b] =
				honest_byte(i, slot_off + k->p[j].off + b);
	if (k->split)
		why = honest_failure(&wop, honest_post(&wop, &k->p[0],
						       slot_off, 0));
	if (!*why)
		why = honest_failure(&cop, honest_post(&cop, c, slot_off,
			FI_COMMIT_COMPLETE | (k->fence ? FI_FENCE : 0)));
	if (!*why)
		return true;
	snprintf(name, sizeof(name), "honest-commit-%" PRIu64, i);
	verdict(false, name, "%s%s", k->split ? "(write, then commit) " : "",
		why);
	return false;
}

/* Connects to the target through pmemverbs (CM data "H"). */
static void honest_connect(void)
{
	int64_t deadline = deadline_in(STEP_MS);
	struct cm_event ev;

	g_h.info = query_info("pmemverbs", true, 0);
	CHECK(fi_fabric(g_h.info->fabric_attr, &g_h.fabric, NULL));
	CHECK(fi_domain(g_h.fabric, g_h.info, &g_h.domain, NULL));
	g_h.eq = open_eq(g_h.fabric);
	g_h.txcq = open_cq(g_h.domain);
	g_h.rxcq = open_cq(g_h.domain);
	CHECK(fi_endpoint(g_h.domain, g_h.info, &g_h.ep, NULL));
	CHECK(fi_ep_bind(g_h.ep, &g_h.eq->fid, 0));
	CHECK(fi_ep_bind(g_h.ep, &g_h.txcq->fid, FI_TRANSMIT));
	CHECK(fi_ep_bind(g_h.ep, &g_h.rxcq->fid, FI_RECV));
	CHECK(fi_enable(g_h.ep));
	CHECK(fi_connect(g_h.ep, g_h.info->dest_addr, "H", 1));
	while (!eq_poll(g_h.eq, &ev)) {
		if (!before(deadline))
			die("no FI_CONNECTED within %d ms", STEP_MS);
		pause_briefly();
	}
	if (ev.err || ev.event != FI_CONNECTED)
		die("connecting: event %u, error %s", ev.event,
		    fi_strerror(ev.err < 0 ? -ev.err : ev.err));
}

/* Sends "DONE n" to the target and waits (bounded) for it to go. */
static void honest_send_done(uint64_t n)
{
	struct hop op = { 0 };
	int64_t deadline = deadline_in(STEP_MS);
	ssize_t ret;

	snprintf(g_h.msg, sizeof(g_h.msg), "DONE %" PRIu64, n);
	while ((ret = fi_send(g_h.ep, g_h.msg, strlen(g_h.msg) + 1, NULL, 0,
			      &op.ctx)) == -FI_EAGAIN && before(deadline))
		honest_poll();
	if (ret || !honest_wait(&op) || op.err)
		verdict(false, "honest-done", "telling the target: %s",
			ret ? fi_strerror((int)-ret) : op.err ?
			fi_strerror(op.err) : "no completion");
}

/* Where the honest's run stands: commits made, when the attack began and
 * ended (in commits; UINT64_MAX: not yet). */
struct hrun {
	uint64_t n, started, ended;
	bool failed;
};

/* Commits until the attack is over and g_opt.after more are done. */
static void honest_run(struct hrun *r)
{
	int64_t life = deadline_in(HONEST_LIFE_MS);

	*r = (struct hrun){ .started = UINT64_MAX, .ended = UINT64_MAX };
	while (r->ended == UINT64_MAX || r->n < r->ended + g_opt.after) {
		r->failed = !honest_commit(r->n);
		r->n++;
		if (r->failed) {
			ctl_store(&g_h.ctl->honest_failed, 1);
			return;
		}
		ctl_store(&g_h.ctl->honest_commits, r->n);
		if (r->n == 1)
			info("STARTED");
		if (r->started == UINT64_MAX &&
		    ctl_load(&g_h.ctl->attack_started))
			r->started = r->n;
		if (r->ended == UINT64_MAX && !access(g_opt.marker, F_OK))
			r->ended = r->n;
		if (!before(life) && r->ended == UINT64_MAX) {
			verdict(false, "honest-commits", "the attack did not "
				"end within %d ms", HONEST_LIFE_MS);
			r->failed = true;
			return;
		}
	}
}

static void honest_close(void)
{
	fi_shutdown(g_h.ep, 0);
	fi_close(&g_h.ep->fid);
	fi_close(&g_h.txcq->fid);
	fi_close(&g_h.rxcq->fid);
	fi_close(&g_h.eq->fid);
	fi_close(&g_h.domain->fid);
	fi_close(&g_h.fabric->fid);
	fi_freeinfo(g_h.info);
}

static int honest_main(void)
{
	struct hrun r;

	g_role = "honest";
	if (!g_opt.ctl || !g_opt.marker || !g_opt.key)
		die("-c CTL, -m MARKER and -x BASE:KEY are needed");
	g_h.ctl = ctl_map();
	honest_connect();
	honest_run(&r);
	honest_send_done(r.n);
	if (!r.failed)
		verdict(true, "honest-commits", "%" PRIu64 " commits completed, "
			"%" PRIu64 " of them while the hostile client attacked, "
			"%u after it; none failed", r.n,
			r.started == UINT64_MAX ? 0 : r.ended - r.started,
			g_opt.after);
	if (r.started == UINT64_MAX)
		info("INFO honest: the hostile client never started its attack");
	honest_close();
	return g_failed ? 1 : 0;
}

/* ------------------------------------------------------------------ */
/* Hostile client: connections and raw access                         */
/* ------------------------------------------------------------------ */

struct hconn {
	struct fid_ep *ep;
	struct fid_eq *eq;
	struct fid_cq *cq;
	struct pmv_cm_hdr peer; /* the target's inbox */
	bool has_peer;          /* the accept carried a pmemverbs header */
	bool up;
	uint64_t seq;           /* next request the target's agent expects */
};

static struct {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_mr *inbox_mr;
	uint8_t *inbox;
	size_t inbox_size;
	uint64_t inbox_addr, inbox_key;
	struct ctl *ctl;
	struct hconn c;               /* the connection the attacks use */
	uint8_t wbuf[REGION_LEN + 4096]; /* what a write sends */
	unsigned refusals[PMV_ERR_LAST - PMV_ERR_BASE];
	unsigned served, bad, ignored, unanswered, conns, dropped;
} g_x;


/* Opens the tcp domain and registers the hostile's own inbox. */
static void hostile_open(void)
{
	g_x.info = query_info("tcp", false, 0);
	if (strcmp(g_x.info->fabric_attr->prov_name, "tcp"))
		die("provider %s, not the plain tcp core",
		    g_x.info->fabric_attr->prov_name);
	CHECK(fi_fabric(g_x.info->fabric_attr, &g_x.fabric, NULL));
	CHECK(fi_domain(g_x.fabric, g_x.info, &g_x.domain, NULL));
	g_x.inbox_size = PMV_INBOX_SIZE(OWN_SLOT_SIZE);
	if (posix_memalign((void **)&g_x.inbox, 4096, g_x.inbox_size))
		die("out of memory");
	memset(g_x.inbox, 0, g_x.inbox_size);
	if (getrandom(&g_x.inbox_key, sizeof(g_x.inbox_key), 0) !=
	    sizeof(g_x.inbox_key))
		g_x.inbox_key = mix64((uint64_t)now_ms());
	CHECK(fi_mr_reg(g_x.domain, g_x.inbox, g_x.inbox_size,
			FI_REMOTE_WRITE | FI_REMOTE_READ, 0, g_x.inbox_key, 0,
			&g_x.inbox_mr, NULL));
	g_x.inbox_key = fi_mr_key(g_x.inbox_mr);
	g_x.inbox_addr = (g_x.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ?
			 (uint64_t)(uintptr_t)g_x.inbox : 0;
}

/* How the hostile's CM header lies about itself. */
enum hdr_mode {
	HDR_GOOD,        /* its real inbox */
	HDR_BOGUS_INBOX, /* an inbox key nobody registered */
	HDR_NO_INBOX,    /* "no inbox" */
	HDR_TINY_SLOTS,  /* 16-byte slots: room for no extent */
	HDR_HUGE_SLOTS,  /* 496-byte slots, more than its inbox has */
	HDR_TRANSPORT,   /* transport 0 (none) */
	HDR_BAD_VERSION, /* protocol version 2 */
	HDR_SHORT,       /* 10 bytes of a header */
	HDR_NONE,        /* no header: a plain tcp peer */
};

static const char *const k_hdr_names[] = {
	"good", "bogus-inbox", "no-inbox", "tiny-slots", "huge-slots",
	"no-transport", "bad-version", "short-header", "no-header",
};

/* The CM data of a connection: a (crafted) header, then "X". */
static size_t hostile_cm_data(enum hdr_mode mode, uint8_t *out)
{
	struct pmv_cm_hdr h = { .has_inbox = true,
				.transport = PMV_TRANSPORT_TCP,
				.slot_size = OWN_SLOT_SIZE,
				.inbox_addr = g_x.inbox_addr,
				.inbox_key = g_x.inbox_key };
	size_t len = PMV_CM_HDR_SIZE;

	if (mode == HDR_BOGUS_INBOX)
		h.inbox_key = ~g_x.inbox_key;
	h.has_inbox = mode != HDR_NO_INBOX;
	h.slot_size = mode == HDR_TINY_SLOTS ? 16 :
		      mode == HDR_HUGE_SLOTS ? 496 : h.slot_size;
	h.transport = mode == HDR_TRANSPORT ? 0 : h.transport;
	pmv_cm_hdr_encode(&h, out);
	if (mode == HDR_BAD_VERSION)
		out[2] = PMV_PROTO_VERSION + 1;
	len = mode == HDR_SHORT ? 10 : mode == HDR_NONE ? 0 : len;
	out[len] = 'X';
	return len + 1;
}

static void hconn_close(struct hconn *c)
{
	if (c->ep)
		fi_close(&c->ep->fid);
	if (c->cq)
		fi_close(&c->cq->fid);
	if (c->eq)
		fi_close(&c->eq->fid);
	*c = (struct hconn){ 0 };
}

/* Waits (bounded) for the connection's first event; true if connected,
 * with the target's header (if any) in c->peer. */
static bool hconn_wait_connected(struct hconn *c)
{
	int64_t deadline = deadline_in(STEP_MS);
	struct cm_event ev;

	while (!eq_poll(c->eq, &ev)) {
		fi_cq_read(c->cq, NULL, 0);
		if (!before(deadline))
			return false;
		pause_briefly();
	}
	if (ev.err || ev.event != FI_CONNECTED)
		return false;
	c->has_peer = pmv_cm_hdr_decode(ev.data, ev.datalen, &c->peer) &&
		      c->peer.has_inbox && c->peer.slot_size >= 64;
	c->up = true;
	c->seq = 1;
	return true;
}

/* Connects to the target over plain tcp with a crafted CM header. */
static bool hconn_connect(struct hconn *c, enum hdr_mode mode)
{
	uint8_t data[PMV_CM_HDR_SIZE + 1];
	size_t len = hostile_cm_data(mode, data);

	*c = (struct hconn){ 0 };
	memset(g_x.inbox, 0, g_x.inbox_size); /* no acks of an earlier one */
	c->eq = open_eq(g_x.fabric);
	c->cq = open_cq(g_x.domain);
	CHECK(fi_endpoint(g_x.domain, g_x.info, &c->ep, NULL));
	CHECK(fi_ep_bind(c->ep, &c->eq->fid, 0));
	CHECK(fi_ep_bind(c->ep, &c->cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_enable(c->ep));
	g_x.conns++;
	if (fi_connect(c->ep, g_x.info->dest_addr, data, len) ||
	    !hconn_wait_connected(c)) {
		hconn_close(c);
		return false;
	}
	return true;
}

/* Connects the attack connection with the real header, or ends the run. */
static void hostile_reconnect(void)
{
	hconn_close(&g_x.c);
	if (!hconn_connect(&g_x.c, HDR_GOOD))
		die("connecting to the target failed");
	if (!g_x.c.has_peer)
		die("the target's accept carried no pmemverbs header");
}

/* Drives the tcp core once (acks land in the inbox); notes a shutdown.
 * Completions other than the one a caller waits for are not expected. */
static void hconn_progress(struct hconn *c, void *want, bool *done, int *err)
{
	struct fi_cq_data_entry e[8];
	struct fi_cq_err_entry ee = { 0 };
	struct cm_event ev;
	ssize_t n = fi_cq_read(c->cq, e, ARRAY_LEN(e));

	if (n == -FI_EAVAIL && fi_cq_readerr(c->cq, &ee, 0) == 1 &&
	    ee.op_context == want && done) {
		*done = true;
		*err = ee.err ? ee.err : -1;
	}
	for (ssize_t i = 0; i < n; i++)
		if (e[i].op_context == want && done)
			*done = true;
	if (eq_poll(c->eq, &ev) && (ev.err || ev.event == FI_SHUTDOWN))
		c->up = false;
}

/*
 * Writes len bytes of g_x.wbuf at (addr, key) of the target and waits
 * (bounded) for its completion: 0, the error it completed with, or
 * -FI_ENOTCONN (connection gone, or no completion: it is then closed).
 */
static int hconn_write(struct hconn *c, size_t len, uint64_t addr,
		       uint64_t key)
{
	static struct fi_context2 ctx;
	struct iovec iov = { g_x.wbuf, len };
	struct fi_rma_iov rma = { .addr = addr, .len = len, .key = key };
	struct fi_msg_rma msg = { .msg_iov = &iov, .iov_count = 1,
				  .rma_iov = &rma, .rma_iov_count = 1,
				  .context = &ctx };
	int64_t deadline = deadline_in(STEP_MS);
	bool done = false;
	int err = 0;
	ssize_t ret;

	if (len > sizeof(g_x.wbuf))
		die("internal: a write of %zu bytes", len);
	ctl_store(&g_x.ctl->attack_started, 1);
	while ((ret = fi_writemsg(c->ep, &msg, FI_DELIVERY_COMPLETE |
				  FI_COMPLETION)) == -FI_EAGAIN &&
	       c->up && before(deadline))
		hconn_progress(c, NULL, NULL, NULL);
	if (ret)
		return c->up ? (int)ret : -FI_ENOTCONN;
	while (!done && before(deadline)) {
		hconn_progress(c, &ctx, &done, &err);
		if (!done)
			pause_briefly();
	}
	if (!done) { /* the core keeps ctx: close the endpoint */
		hconn_close(c);
		return -FI_ENOTCONN;
	}
	return err > 0 ? -err : err;
}

/* RMA address of the target's request slot for seq. */
static uint64_t req_addr(const struct hconn *c, uint64_t seq)
{
	return c->peer.inbox_addr + PMV_ACKS_SIZE(PMV_SLOTS) +
	       ((seq - 1) % PMV_SLOTS) * c->peer.slot_size;
}

/* Polls (bounded by ms) for the target's ack of seq in the hostile's
 * inbox; true with *ack once it is there. */
static bool hconn_ack(struct hconn *c, uint64_t seq, int ms,
		      struct pmv_ack *ack)
{
	const uint8_t *slot = g_x.inbox + ((seq - 1) % PMV_SLOTS) *
					  sizeof(struct pmv_ack);
	int64_t deadline = deadline_in(ms);

	for (;;) {
		hconn_progress(c, NULL, NULL, NULL);
		if (pmv_ack_decode(slot, seq, ack))
			return true;
		if (!c->up || !before(deadline))
			return false;
		pause_briefly();
	}
}

/* ------------------------------------------------------------------ */
/* Hostile client: crafted requests                                   */
/* ------------------------------------------------------------------ */

/*
 * Lays a request out in g_x.wbuf in wire order: the header (nextents as
 * given, which may lie), next extents (the inline one included) and dlen
 * bytes of data; the checksum covers what is laid out.  Returns its size.
 */
static size_t img_build(const struct pmv_req *h, const struct pmv_extent *ext,
			unsigned next, const uint8_t *data, size_t dlen)
{
	struct pmv_req w = {
		.seq = htole64(h->seq), .key = htole64(h->key),
		.data = htole64(h->data), .flags = htole32(h->flags),
		.nextents = htole16(h->nextents),
		.fence_back = htole16(h->fence_back),
		.gen = htole32(h->gen),
	};
	size_t len = sizeof(w);
	uint32_t sum;

	memcpy(g_x.wbuf, &w, sizeof(w));
	for (unsigned i = 0; i < next; i++, len += sizeof(*ext)) {
		struct pmv_extent e = { htole64(ext[i].addr),
					htole64(ext[i].len) };

		memcpy(g_x.wbuf + len, &e, sizeof(e));
	}
	if (dlen)
		memcpy(g_x.wbuf + len, data, dlen);
	len += dlen;
	sum = htole32(pmv_checksum(g_x.wbuf, len));
	memcpy(g_x.wbuf + offsetof(struct pmv_req, checksum), &sum,
	       sizeof(sum));
	return len;
}

/* What a crafted request should get. */
enum expect {
	EX_SERVED,  /* a valid request: status 0 (the harness works) */
	EX_REFUSED, /* an ack with a nonzero status */
	EX_IGNORED, /* no ack: nothing was written to the slot for the seq */
	EX_BAD,     /* the slot holds no valid request: an ack refusing it as
		     * PMV_ERR_BAD_REQUEST (after FI_PMEMVERBS_BAD_REQUEST_MS),
		     * never a stall */
	EX_ANY,     /* either; only reported */
};

/* Where an address points: from the region's base, or absolute. */
struct aspec {
	bool abs;
	uint64_t v;
};

struct espec {
	struct aspec a;
	uint64_t len;
};

#define REL(off) { .abs = false, .v = (uint64_t)(int64_t)(off) }
#define ABS(x) { .abs = true, .v = (x) }
#define ZB ZONE_B_OFF
#define RL ((int64_t)REGION_LEN)

enum key_sel { KEY_REGION, KEY_PLUS1, KEY_ZERO, KEY_ONES, KEY_OWN_INBOX,
	       KEY_TARGET_INBOX };

/* How an image is spoiled after it is laid out. */
enum mangle {
	M_NONE, M_BAD_SUM, M_ZERO_SUM, M_SEQ_ZERO, M_SEQ_OLD, M_SEQ_LAP,
	M_SEQ_MAX, M_SEQ_FAR, M_WRONG_SLOT, M_TORN, M_RANDOM_SEQ, M_RANDOM,
	M_SPILL,
};

/* Lengths that depend on the target's slot size. */
enum dyn {
	D_NONE,
	D_INLINE_FIT,     /* the inline data fills the slot exactly */
	D_INLINE_OVER,    /* the inline data is one byte more than fits */
	D_EXTENTS_OVER,   /* one extent more than fits */
	D_INLINE_NO_ROOM, /* a full slot of extents, and an inline one */
	D_NEXTENTS_MAX,   /* nextents 0xffff, one laid out */
};

struct attack {
	const char *name;
	enum expect expect;
	int code; /* EX_REFUSED: what pmv_proto.c's validator gives */
	uint32_t flags;
	uint16_t fence_back;
	enum key_sel key;
	unsigned next;
	struct espec ext[6];
	bool inl; /* an inline extent (and its data) follows */
	struct espec inl_ext;
	enum dyn dyn;
	enum mangle mangle;
};

/* One valid flush of 8 bytes of zone B: the base of spoiled requests. */
#define FLUSH8 .next = 1, .ext = { { REL(ZB), 8 } }
#define SCOPE1(o, l) .next = 1, .ext = { { REL(o), (l) } }

static const struct attack k_valid[] = {
	{ "valid-flush", EX_SERVED, 0, SCOPE1(ZB, 64) },
	{ "valid-send", EX_SERVED, 0, .inl = true,
	  .inl_ext = { REL(ZONE_A_OFF), ZONE_A_LEN } },
	{ "valid-empty-flush", EX_SERVED, 0, .flags = 0 },
	{ "valid-immed", EX_SERVED, 0, .flags = PMV_REQ_IMMED,
	  SCOPE1(ZB + 64, 8) },
	{ "valid-five-ranges", EX_SERVED, 0, .next = 5,
	  .ext = { { REL(ZB), 1 }, { REL(ZB + 100), 7 }, { REL(ZB + 200), 64 },
		   { REL(ZB + ZONE_B_LEN - 1), 1 }, { REL(ZB + 300), 0 } } },
	{ "valid-send-fills-slot", EX_SERVED, 0, .inl = true,
	  .inl_ext = { REL(ZB + 512), 0 }, .dyn = D_INLINE_FIT },
	{ "zero-length-at-end", EX_ANY, 0, SCOPE1(RL, 0) },
	{ "fence-whole-ring", EX_ANY, 0, .flags = PMV_REQ_FENCE,
	  .fence_back = PMV_SLOTS, FLUSH8 },
};

static const struct attack k_refused[] = {
	{ "range-past-end", EX_REFUSED, PMV_ERR_RANGE, SCOPE1(RL, 8) },
	{ "range-far-past-end", EX_REFUSED, PMV_ERR_RANGE, SCOPE1(RL + 4096, 1) },
	{ "range-straddles-end", EX_REFUSED, PMV_ERR_RANGE, SCOPE1(RL - 8, 16) },
	{ "range-straddles-start", EX_REFUSED, PMV_ERR_RANGE, SCOPE1(-8, 16) },
	{ "range-before-start", EX_REFUSED, PMV_ERR_RANGE, SCOPE1(-4096, 8) },
	{ "range-wraps-address", EX_REFUSED, PMV_ERR_RANGE, .next = 1,
	  .ext = { { ABS(UINT64_MAX - 7), 16 } } },
	{ "range-wraps-length", EX_REFUSED, PMV_ERR_RANGE,
	  SCOPE1(16, UINT64_MAX - 8) },
	{ "range-huge-length", EX_REFUSED, PMV_ERR_RANGE, SCOPE1(0, UINT64_MAX) },
	{ "range-region-plus-one", EX_REFUSED, PMV_ERR_RANGE, SCOPE1(0, RL + 1) },
	{ "range-region-shifted", EX_REFUSED, PMV_ERR_RANGE, SCOPE1(1, RL) },
	{ "range-last-of-five-bad", EX_REFUSED, PMV_ERR_RANGE, .next = 5,
	  .ext = { { REL(ZB), 8 }, { REL(ZB + 64), 8 }, { REL(ZB + 128), 8 },
		   { REL(ZB + 192), 8 }, { REL(RL - 4), 8 } } },
	{ "range-first-of-two-bad", EX_REFUSED, PMV_ERR_RANGE, .next = 2,
	  .ext = { { REL(-1), 2 }, { REL(ZB), 8 } } },
	{ "send-past-end", EX_REFUSED, PMV_ERR_RANGE, .inl = true,
	  .inl_ext = { REL(RL - 4), 8 } },
	{ "send-straddles-start", EX_REFUSED, PMV_ERR_RANGE, .inl = true,
	  .inl_ext = { REL(-4), 8 } },
	{ "send-full-slot-straddles-end", EX_REFUSED, PMV_ERR_RANGE,
	  .inl = true, .inl_ext = { REL(RL - 8), 0 }, .dyn = D_INLINE_FIT },
	{ "send-wraps", EX_REFUSED, PMV_ERR_RANGE, .inl = true,
	  .inl_ext = { ABS(UINT64_MAX - 3), 8 } },
	{ "send-good-scope-bad-data", EX_REFUSED, PMV_ERR_RANGE, FLUSH8,
	  .inl = true, .inl_ext = { REL(RL), 8 } },
	{ "send-bad-scope-good-data", EX_REFUSED, PMV_ERR_RANGE,
	  SCOPE1(RL, 8), .inl = true, .inl_ext = { REL(ZB + 128), 8 } },
	/* the agent checks the fence first: the request before, to the same
	 * key, failed */
	{ "send-fenced-past-end", EX_REFUSED, PMV_ERR_FENCE,
	  .flags = PMV_REQ_FENCE | PMV_REQ_INLINE, .fence_back = 1,
	  .inl = true, .inl_ext = { REL(RL - 1), 2 } },
	{ "key-zero", EX_REFUSED, PMV_ERR_NO_KEY, .key = KEY_ZERO, FLUSH8 },
	{ "key-plus-one", EX_REFUSED, PMV_ERR_NO_KEY, .key = KEY_PLUS1, FLUSH8 },
	{ "key-all-ones", EX_REFUSED, PMV_ERR_NO_KEY, .key = KEY_ONES, FLUSH8 },
	{ "key-hostile-inbox", EX_REFUSED, PMV_ERR_NO_KEY,
	  .key = KEY_OWN_INBOX, FLUSH8 },
	{ "key-target-inbox", EX_REFUSED, PMV_ERR_NO_KEY,
	  .key = KEY_TARGET_INBOX, FLUSH8 },
	{ "key-unknown-send", EX_REFUSED, PMV_ERR_NO_KEY, .key = KEY_PLUS1,
	  .inl = true, .inl_ext = { REL(ZB), 8 } },
	{ "flag-unknown-0x8", EX_REFUSED, PMV_ERR_BAD_REQUEST, .flags = 0x8,
	  FLUSH8 },
	{ "flag-unknown-bit31", EX_REFUSED, PMV_ERR_BAD_REQUEST,
	  .flags = 0x80000000u, FLUSH8 },
	{ "flag-all-bits", EX_REFUSED, PMV_ERR_BAD_REQUEST,
	  .flags = 0xffffffffu, .inl = true, .inl_ext = { REL(ZB), 8 } },
	{ "flag-unknown-bad-key", EX_REFUSED, PMV_ERR_BAD_REQUEST,
	  .flags = 0x10, .key = KEY_ZERO, FLUSH8 },
	{ "fence-past-ring", EX_REFUSED, PMV_ERR_BAD_REQUEST,
	  .flags = PMV_REQ_FENCE, .fence_back = PMV_SLOTS + 1, FLUSH8 },
	{ "fence-max", EX_REFUSED, PMV_ERR_BAD_REQUEST, .flags = PMV_REQ_FENCE,
	  .fence_back = 0xffff, FLUSH8 },
	{ "fence-back-without-fence", EX_REFUSED, PMV_ERR_BAD_REQUEST,
	  .fence_back = 3, FLUSH8 },
};

static const struct attack k_bad[] = {
	{ "bad-checksum", EX_BAD, 0, FLUSH8, .mangle = M_BAD_SUM },
	{ "zero-checksum", EX_BAD, 0, FLUSH8, .mangle = M_ZERO_SUM },
	{ "seq-zero", EX_BAD, 0, FLUSH8, .mangle = M_SEQ_ZERO },
	{ "seq-previous", EX_BAD, 0, FLUSH8, .mangle = M_SEQ_OLD },
	{ "seq-next-lap", EX_BAD, 0, FLUSH8, .mangle = M_SEQ_LAP },
	{ "seq-max", EX_BAD, 0, FLUSH8, .mangle = M_SEQ_MAX },
	{ "seq-far", EX_BAD, 0, FLUSH8, .mangle = M_SEQ_FAR },
	{ "wrong-slot", EX_IGNORED, 0, FLUSH8, .mangle = M_WRONG_SLOT },
	{ "torn", EX_BAD, 0, .next = 2,
	  .ext = { { REL(ZB), 8 }, { REL(ZB + 8), 8 } }, .mangle = M_TORN },
	{ "random-bytes-right-seq", EX_BAD, 0, .mangle = M_RANDOM_SEQ },
	{ "random-bytes", EX_BAD, 0, .mangle = M_RANDOM },
	{ "send-data-over-slot", EX_BAD, 0, .inl = true,
	  .inl_ext = { REL(ZB), 0 }, .dyn = D_INLINE_OVER },
	{ "send-data-1000", EX_BAD, 0, .inl = true,
	  .inl_ext = { REL(ZB), 1000 } },
	{ "send-data-huge", EX_BAD, 0, .inl = true,
	  .inl_ext = { REL(ZB), UINT64_MAX } },
	{ "extents-over-slot", EX_BAD, 0, .dyn = D_EXTENTS_OVER },
	{ "send-no-room-for-data", EX_BAD, 0, .inl = true,
	  .inl_ext = { REL(ZB), 1 }, .dyn = D_INLINE_NO_ROOM },
	{ "nextents-max", EX_BAD, 0, FLUSH8, .dyn = D_NEXTENTS_MAX },
};

/* The probe: a valid flush that must be served after refused requests. */
static const struct attack k_probe = { "probe", EX_SERVED, 0, FLUSH8 };

static uint64_t attack_key(enum key_sel k)
{
	switch (k) {
	case KEY_PLUS1: return g_opt.key + 1;
	case KEY_ZERO: return 0;
	case KEY_ONES: return UINT64_MAX;
	case KEY_OWN_INBOX: return g_x.inbox_key;
	case KEY_TARGET_INBOX: return g_x.c.peer.inbox_key;
	default: return g_opt.key;
	}
}

static uint64_t aspec_addr(struct aspec a)
{
	return a.abs ? a.v : g_opt.base + a.v;
}

/* Extents that fit a slot after the header. */
static unsigned slot_extents(uint32_t slot)
{
	return (slot - (uint32_t)sizeof(struct pmv_req)) /
	       (uint32_t)sizeof(struct pmv_extent);
}

/* The attack's header and extents with its slot-dependent sizes applied;
 * returns how many extents to lay out. */
static unsigned attack_shape(const struct attack *a, uint32_t slot,
			     uint64_t seq, struct pmv_req *h,
			     struct pmv_extent *ext)
{
	unsigned n = a->next, room = slot_extents(slot);

	*h = (struct pmv_req){ .seq = seq, .key = attack_key(a->key),
			       .data = 0x4844, .flags = a->flags,
			       .fence_back = a->fence_back };
	if (a->dyn == D_EXTENTS_OVER || a->dyn == D_INLINE_NO_ROOM)
		n = a->dyn == D_EXTENTS_OVER ? room + 1 : room;
	for (unsigned i = 0; i < n; i++)
		ext[i] = (struct pmv_extent){
			i < a->next ? aspec_addr(a->ext[i].a) :
				      g_opt.base + REGION_LEN, /* invalid */
			i < a->next ? a->ext[i].len : 8 };
	h->nextents = a->dyn == D_NEXTENTS_MAX ? 0xffff : (uint16_t)n;
	if (a->inl) {
		h->flags |= PMV_REQ_INLINE;
		ext[n] = (struct pmv_extent){ aspec_addr(a->inl_ext.a),
					      a->inl_ext.len };
		if (a->dyn == D_INLINE_FIT || a->dyn == D_INLINE_OVER)
			ext[n].len = slot - sizeof(*h) - (n + 1) * 16 +
				     (a->dyn == D_INLINE_OVER);
		n++;
	}
	return n;
}

/* Lays out an attack's request claiming seq; returns its size. */
static size_t attack_image(const struct attack *a, uint32_t slot, uint64_t seq)
{
	struct pmv_extent ext[PMV_SLOTS];
	uint8_t data[1024];
	struct pmv_req h;
	unsigned n = attack_shape(a, slot, seq, &h, ext);
	size_t dlen = 0, laid = sizeof(h) + n * sizeof(ext[0]);

	if (a->inl) {
		dlen = ext[n - 1].len;
		/* lay out what the slot holds; the length may lie */
		if (dlen > slot - laid || dlen > sizeof(data))
			dlen = slot > laid ? slot - laid : 0;
		for (size_t k = 0; k < dlen; k++)
			data[k] = zone_a_byte(k);
	}
	return img_build(&h, ext, n, data, dlen);
}

/* Spoils a laid-out image; *slot_seq: the slot it goes to. */
static size_t attack_mangle(const struct attack *a, size_t len,
			    uint32_t slot, uint64_t *slot_seq)
{
	uint64_t seq = g_x.c.seq, v;
	uint8_t *b = g_x.wbuf;

	switch (a->mangle) {
	case M_BAD_SUM: b[offsetof(struct pmv_req, checksum)] ^= 1; break;
	case M_ZERO_SUM:
		memset(b + offsetof(struct pmv_req, checksum), 0, 4);
		break;
	case M_WRONG_SLOT: *slot_seq = seq + 1; break;
	case M_TORN: /* the slot zeroed, then only the header written */
		memset(b + sizeof(struct pmv_req), 0, len - sizeof(struct pmv_req));
		break;
	case M_RANDOM_SEQ: case M_RANDOM:
		for (size_t k = 0; k < slot; k++)
			b[k] = (uint8_t)rnd64();
		v = htole64(seq);
		if (a->mangle == M_RANDOM_SEQ)
			memcpy(b, &v, sizeof(v));
		return slot;
	case M_SPILL: /* random bytes on into the next slot */
		for (size_t k = len; k < 2 * (size_t)slot; k++)
			b[k] = (uint8_t)rnd64();
		return 2 * (size_t)slot;
	default: break;
	}
	return len;
}

/* The seq a request's header claims after its mangling (re-checksummed:
 * only the seq is wrong). */
static uint64_t mangled_seq(enum mangle m, uint64_t seq)
{
	switch (m) {
	case M_SEQ_ZERO: return 0;
	case M_SEQ_OLD: return seq - 1;
	case M_SEQ_LAP: return seq + PMV_SLOTS;
	case M_SEQ_MAX: return UINT64_MAX;
	case M_SEQ_FAR: return seq + (UINT64_C(1) << 32);
	default: return seq;
	}
}

/* Counts an ack against the attack's expectation; may FAIL. */
static void judge_ack(const struct attack *a, int32_t status)
{
	bool other = a->expect == EX_REFUSED && status && status != a->code;
	char name[96];

	snprintf(name, sizeof(name), "hostile-%s", a->name);
	if (status >= PMV_ERR_BASE && status < PMV_ERR_LAST)
		g_x.refusals[status - PMV_ERR_BASE]++;
	if (!status)
		g_x.served++;
	if (a->expect == EX_SERVED && status)
		verdict(false, name, "a valid request was refused: %s",
			status_name(status));
	else if (a->expect == EX_REFUSED && !status)
		verdict(false, name, "the target's agent served a request it "
			"must refuse");
	else if (a->expect == EX_IGNORED)
		verdict(false, name, "the agent acked a seq nothing was "
			"written for (%s)", status_name(status));
	else if (a->expect == EX_BAD && status != PMV_ERR_BAD_REQUEST)
		verdict(false, name, "a slot without a valid request was acked "
			"%s, expected PMV_ERR_BAD_REQUEST", status_name(status));
	else if (a->expect == EX_BAD)
		g_x.bad++;
	else if (other) /* refused, but not as pmv_proto.c says: reported */
		info("REFUSED %s: %s (expected %s)", a->name,
		     status_name(status), status_name(a->code));
	else if (g_opt.verbose)
		info("REFUSED %s: %s", a->name, status_name(status));
}

/* No ack came for an attack: as expected, or a FAIL for a valid one. */
static void judge_silence(const struct attack *a)
{
	char name[96];

	snprintf(name, sizeof(name), "hostile-%s", a->name);
	if (a->expect == EX_SERVED || a->expect == EX_BAD) {
		verdict(false, name, "no ack within %d ms%s%s", ACK_MS,
			a->expect == EX_BAD ? ": a slot without a valid "
			"request stalled the connection" : "",
			g_x.c.up ? "" : " (connection gone)");
		return;
	}
	if (a->expect == EX_IGNORED)
		g_x.ignored++;
	else
		g_x.unanswered++;
	if (g_opt.verbose || a->expect == EX_REFUSED)
		info("IGNORED %s: no ack%s", a->name,
		     a->expect == EX_REFUSED ? " (a refusal was expected)" : "");
}

/*
 * Puts every request slot back to empty in one write: the seq of its
 * previous lap in the header, zeros after it.  Garbage the test left in
 * slots ahead of the agent would otherwise be refused, by rule, once the
 * agent reaches them.
 */
static void clear_slots(struct hconn *c)
{
	uint32_t slot = c->peer.slot_size;
	size_t len = (size_t)PMV_SLOTS * slot;
	int ret;

	memset(g_x.wbuf, 0, len);
	for (uint64_t s = c->seq; s < c->seq + PMV_SLOTS; s++) {
		uint64_t idle = htole64(s > PMV_SLOTS ? s - PMV_SLOTS : 0);

		memcpy(g_x.wbuf + ((s - 1) % PMV_SLOTS) * slot, &idle,
		       sizeof(idle));
	}
	ret = hconn_write(c, len, req_addr(c, 1), c->peer.inbox_key);
	if (ret)
		info("INFO clearing the request slots: %s", fi_strerror(-ret));
}

/* Writes one crafted request into the target's inbox and judges what the
 * agent did with it (an ack moves the expected seq on). */
static void run_attack(const struct attack *a)
{
	struct hconn *c = &g_x.c;
	uint32_t slot = c->peer.slot_size;
	uint64_t slot_seq = c->seq, seq = c->seq;
	struct pmv_ack ack;
	size_t len;
	int ret;

	len = attack_image(a, slot, mangled_seq(a->mangle, seq));
	len = attack_mangle(a, len, slot, &slot_seq);
	ret = hconn_write(c, len, req_addr(c, slot_seq), c->peer.inbox_key);
	if (ret) {
		verdict(false, "hostile-write", "%s: writing the slot: %s",
			a->name, fi_strerror(-ret));
		hostile_reconnect();
		return;
	}
	if (!hconn_ack(c, seq, a->expect == EX_IGNORED ? IGNORE_MS : ACK_MS,
		       &ack)) {
		judge_silence(a);
		if (slot_seq != seq)
			clear_slots(c);
		return;
	}
	c->seq++;
	judge_ack(a, ack.status);
}

static void run_attacks(const struct attack *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		run_attack(&list[i]);
}

/* ------------------------------------------------------------------ */
/* Hostile client: fuzzing, flooding, raw writes, headers             */
/* ------------------------------------------------------------------ */

/* A random extent: inside zone B, or around and far from the region. */
static struct pmv_extent fuzz_extent(uint64_t maxlen)
{
	uint64_t b = g_opt.base, off;

	switch (rnd(6)) {
	case 0:
		off = rnd(ZONE_B_LEN);
		return (struct pmv_extent){ b + ZB + off,
			rnd(ZONE_B_LEN - off + 1) % (maxlen + 1) };
	case 1:
		return (struct pmv_extent){ b + REGION_LEN + rnd(8192),
					    rnd(maxlen + 1) };
	case 2:
		off = 1 + rnd(64);
		return (struct pmv_extent){ b + REGION_LEN - off,
			off + 1 + rnd(64) };
	case 3:
		return (struct pmv_extent){ b - 1 - rnd(4096),
					    1 + rnd(maxlen) };
	case 4:
		return (struct pmv_extent){ rnd64(), rnd64() | (1ULL << 32) };
	default:
		return (struct pmv_extent){ b + ZB + rnd(ZONE_B_LEN),
					    rnd(ZONE_B_LEN) % (maxlen + 1) };
	}
}

static uint32_t fuzz_flags(void)
{
	static const uint32_t picks[] = {
		0, 0, 0, PMV_REQ_IMMED, PMV_REQ_INLINE, PMV_REQ_INLINE,
		PMV_REQ_FENCE, PMV_REQ_FENCE | PMV_REQ_INLINE,
		PMV_REQ_IMMED | PMV_REQ_INLINE, 0x8, 0x100,
	};
	uint32_t f = picks[rnd(ARRAY_LEN(picks))];

	return rnd(16) ? f : (uint32_t)rnd64();
}

static uint16_t fuzz_fence(uint32_t flags)
{
	if (!(flags & PMV_REQ_FENCE))
		return rnd(12) ? 0 : (uint16_t)(1 + rnd(8));
	return rnd(8) ? (uint16_t)rnd(PMV_SLOTS + 2) : (uint16_t)rnd64();
}

/* True if [addr, addr + len) lies inside the region. */
static bool inside_region(const struct pmv_extent *e)
{
	uint64_t off = e->addr - g_opt.base;

	return e->addr >= g_opt.base && off <= REGION_LEN &&
	       e->len <= REGION_LEN - off;
}

/* The test's own model of a request: bad (it does not fit the slot:
 * refused as PMV_ERR_BAD_REQUEST), served (valid), or refused. */
static enum expect fuzz_model(const struct pmv_req *h,
			      const struct pmv_extent *ext, unsigned n,
			      uint32_t slot)
{
	uint64_t size = sizeof(*h) + (uint64_t)n * sizeof(*ext);
	bool valid = h->key == g_opt.key &&
		     !(h->flags & ~(uint32_t)(PMV_REQ_IMMED | PMV_REQ_INLINE |
					      PMV_REQ_FENCE)) &&
		     h->fence_back <= PMV_SLOTS &&
		     (!h->fence_back || (h->flags & PMV_REQ_FENCE));

	if ((h->flags & PMV_REQ_INLINE) &&
	    (ext[n - 1].len > slot || size + ext[n - 1].len > slot))
		return EX_BAD;
	if (size > slot)
		return EX_BAD;
	for (unsigned i = 0; i < n && valid; i++)
		valid = inside_region(&ext[i]);
	return valid ? EX_SERVED : EX_REFUSED;
}

/* A random request for the current seq with a right checksum, laid out in
 * g_x.wbuf; returns its size, and what the model expects in *ex. */
static size_t fuzz_build(uint32_t slot, enum expect *ex)
{
	struct pmv_extent ext[8];
	struct pmv_req h = { .seq = g_x.c.seq, .data = rnd64() };
	unsigned n = (unsigned)rnd(7), room;
	uint8_t data[256];
	size_t dlen = 0;

	h.key = rnd(4) ? g_opt.key : rnd64();
	h.flags = fuzz_flags();
	h.fence_back = fuzz_fence(h.flags);
	h.nextents = (uint16_t)n;
	for (unsigned i = 0; i < n; i++)
		ext[i] = fuzz_extent(UINT64_MAX - 1);
	room = slot > 56 + 16 * n ? slot - 56 - 16 * n : 0;
	if (h.flags & PMV_REQ_INLINE) {
		ext[n] = fuzz_extent(rnd(8) ? room : room + 1 + rnd(64));
		dlen = ext[n].len <= room ? ext[n].len : room;
		for (size_t k = 0; k < dlen; k++)
			data[k] = (uint8_t)rnd64();
		n++;
	}
	*ex = fuzz_model(&h, ext, n, slot);
	return img_build(&h, ext, n, data, dlen);
}

/* One random request, judged against the model (which refusal is not
 * judged; a fence refusal of a valid one is allowed: earlier requests to
 * the key failed). */
static void fuzz_one(uint32_t slot)
{
	struct attack a = { .name = "fuzz" };
	size_t len = fuzz_build(slot, &a.expect);
	struct pmv_ack ack;

	if (hconn_write(&g_x.c, len, req_addr(&g_x.c, g_x.c.seq),
			g_x.c.peer.inbox_key))
		die("fuzz: writing a slot failed");
	if (!hconn_ack(&g_x.c, g_x.c.seq, ACK_MS, &ack)) {
		judge_silence(&a);
		return;
	}
	g_x.c.seq++;
	if ((a.expect == EX_SERVED && ack.status == PMV_ERR_FENCE) ||
	    (a.expect == EX_REFUSED && ack.status))
		a.expect = EX_ANY;
	judge_ack(&a, ack.status);
}

/* Waits (bounded) until the honest initiator has made PROGRESS_STEP more
 * commits than at mark: it keeps being served during the attack. */
static void await_honest(const char *group, uint64_t mark, bool drive)
{
	int64_t deadline = deadline_in(PROGRESS_MS);
	char name[96];
	uint64_t now;

	snprintf(name, sizeof(name), "honest-progress-during-%s", group);
	while ((now = ctl_load(&g_x.ctl->honest_commits)) <
	       mark + PROGRESS_STEP && !ctl_load(&g_x.ctl->honest_failed) &&
	       before(deadline)) {
		if (drive && g_x.c.up)
			hconn_progress(&g_x.c, NULL, NULL, NULL);
		pause_briefly();
	}
	verdict(now >= mark + PROGRESS_STEP, name, "the honest initiator's "
		"commits %s (%" PRIu64 " -> %" PRIu64 ")",
		now >= mark + PROGRESS_STEP ? "kept completing" :
		ctl_load(&g_x.ctl->honest_failed) ? "failed" : "stalled",
		mark, now);
}

/* Floods the inbox: rounds of PMV_SLOTS requests in a row (one in four
 * refused), then their acks. */
static void flood(unsigned rounds)
{
	static const struct attack ok = { "flood-valid", EX_SERVED, 0, FLUSH8 };
	static const struct attack bad = { "flood-range", EX_REFUSED,
					   PMV_ERR_RANGE, SCOPE1(RL, 8) };
	struct pmv_ack ack;

	for (unsigned r = 0; r < rounds; r++) {
		uint64_t first = g_x.c.seq;

		for (unsigned i = 0; i < PMV_SLOTS; i++, g_x.c.seq++) {
			const struct attack *a = i % 4 == 3 ? &bad : &ok;
			size_t len = attack_image(a, g_x.c.peer.slot_size,
						  g_x.c.seq);

			if (hconn_write(&g_x.c, len, req_addr(&g_x.c, g_x.c.seq),
					g_x.c.peer.inbox_key))
				die("flood: writing a slot failed");
		}
		for (uint64_t s = first; s < g_x.c.seq;) {
			uint64_t n;

			if (!hconn_ack(&g_x.c, s, ACK_MS, &ack))
				die("flood: no ack for request %" PRIu64, s);
			n = ack.covers ? ack.covers : 1;
			if (n > g_x.c.seq - s) {
				verdict(false, "hostile-flood-covers", "an ack "
					"covers %" PRIu64 " requests, %" PRIu64
					" were left", n, g_x.c.seq - s);
				n = g_x.c.seq - s;
			}
			/* an ack ends requests s .. s + n - 1; the others
			 * succeeded, the last has the status */
			for (; n; n--, s++)
				judge_ack((s - first) % 4 == 3 ? &bad : &ok,
					  n == 1 ? ack.status : 0);
		}
	}
}

/* Raw bytes written into the target's inbox, outside the request slot
 * the agent reads next, then the probe. */
struct raw {
	const char *name;
	size_t off;     /* from the inbox's start; SIZE_MAX: the gen line */
	size_t len;     /* 0: the rest of the inbox */
};

/* Fills g_x.wbuf with len random bytes. */
static void random_fill(size_t len)
{
	for (size_t k = 0; k < len; k++)
		g_x.wbuf[k] = (uint8_t)rnd64();
}

/* Writes random bytes at inbox offsets in the target's registered inbox
 * (its ack slots, every request slot, the generation line, the landing
 * words, the profile table, all of it), each followed by the probe. */
static void raw_inbox_writes(void)
{
	uint32_t slot = g_x.c.peer.slot_size;
	size_t size = PMV_INBOX_SIZE(slot);
	size_t acks = PMV_ACKS_SIZE(PMV_SLOTS), gen = acks + PMV_SLOTS * slot;
	const struct raw raws[] = {
		{ "target-ack-slots", 0, acks },
		{ "request-slots", acks, (size_t)PMV_SLOTS * slot },
		{ "generation-line", gen, 64 },
		{ "landing-words", gen + 64, PMV_GEN_TO_PROFILES - 64 },
		{ "profile-table", gen + PMV_GEN_TO_PROFILES, PMV_PROFILES_SIZE },
		{ "whole-inbox", 0, size },
	};

	for (size_t i = 0; i < ARRAY_LEN(raws); i++) {
		int ret;

		random_fill(raws[i].len);
		ret = hconn_write(&g_x.c, raws[i].len,
				  g_x.c.peer.inbox_addr + raws[i].off,
				  g_x.c.peer.inbox_key);
		if (ret)
			info("INFO raw write %s: %s", raws[i].name,
			     fi_strerror(-ret));
		if (!g_x.c.up)
			hostile_reconnect();
		clear_slots(&g_x.c);
		run_attack(&k_probe);
	}
}

/* A request spilling into the next slot: served, then the garbage
 * cleared before the agent's rule refuses it. */
static void spill_write(void)
{
	static const struct attack spill = { "spill-into-next-slot", EX_SERVED,
					     0, FLUSH8, .mangle = M_SPILL };

	run_attack(&spill);
	clear_slots(&g_x.c);
	run_attack(&k_probe);
}

/* Connects with a lying header, sends a valid and an invalid request, and
 * reports what came back; the target must only survive it. */
static void header_attack(enum hdr_mode mode)
{
	static const struct attack bad = { "header-range", EX_REFUSED,
					   PMV_ERR_RANGE, SCOPE1(RL, 8) };
	struct hconn keep = g_x.c, *c = &g_x.c;
	struct pmv_ack ack;
	unsigned acks = 0;

	if (!hconn_connect(c, mode)) {
		info("INFO header %s: the connection was refused",
		     k_hdr_names[mode]);
		g_x.c = keep;
		return;
	}
	if (c->has_peer) {
		for (int i = 0; i < 2 && c->up; i++) {
			size_t len = attack_image(i ? &bad : &k_probe,
						  c->peer.slot_size, c->seq);

			if (hconn_write(c, len, req_addr(c, c->seq),
					c->peer.inbox_key) ||
			    !hconn_ack(c, c->seq, IGNORE_MS * 10, &ack))
				break;
			acks++;
			c->seq++;
		}
	}
	info("INFO header %s: connected, %u of 2 requests acked%s",
	     k_hdr_names[mode], acks, c->up ? "" : ", then disconnected");
	hconn_close(c);
	g_x.c = keep;
}

/* Where a core write points. */
enum cw_base {
	CW_INBOX,     /* the target's inbox, from its start */
	CW_INBOX_END, /* the target's inbox, from its end */
	CW_REGION,    /* the region, with its key */
	CW_KEY,       /* the inbox's start, with another key */
};

/* A write the target's core must refuse: past and before the target's
 * inbox and region, and with guessed keys. */
struct core_write {
	const char *name;
	enum cw_base base;
	int64_t off;
	size_t len;
	uint64_t key; /* CW_KEY */
};

/* The address and key of a core write. */
static void core_target(const struct core_write *w, uint64_t *addr,
			uint64_t *key)
{
	uint64_t inbox = g_x.c.peer.inbox_addr;
	uint64_t end = inbox + PMV_INBOX_SIZE(g_x.c.peer.slot_size);

	*key = w->base == CW_REGION ? g_opt.key :
	       w->base == CW_KEY ? w->key : g_x.c.peer.inbox_key;
	*addr = (uint64_t)w->off + (w->base == CW_REGION ? g_opt.base :
				    w->base == CW_INBOX_END ? end : inbox);
}

/* Runs one core write; it must not land: a write that completes while
 * the connection still serves the probe after it is a FAIL. */
static void core_write(const struct core_write *w)
{
	uint64_t addr, key, seq;
	struct pmv_ack ack;
	char name[96];
	int ret;
	bool landed;

	core_target(w, &addr, &key);
	random_fill(w->len);
	ret = hconn_write(&g_x.c, w->len, addr, key);
	seq = g_x.c.seq;
	landed = !ret && g_x.c.up &&
		 !hconn_write(&g_x.c, attack_image(&k_probe,
						   g_x.c.peer.slot_size, seq),
			      req_addr(&g_x.c, seq), g_x.c.peer.inbox_key) &&
		 hconn_ack(&g_x.c, seq, ACK_MS, &ack);
	snprintf(name, sizeof(name), "hostile-core-%s", w->name);
	if (landed) {
		g_x.c.seq++;
		verdict(false, name, "the target's core accepted the write "
			"(addr 0x%" PRIx64 ", key 0x%" PRIx64 ")", addr, key);
		return;
	}
	if (g_opt.verbose)
		info("REFUSED %s: write %s, connection %s", w->name,
		     ret ? fi_strerror(-ret) : "completed",
		     g_x.c.up ? "kept" : "dropped");
	g_x.dropped += !g_x.c.up;
	hostile_reconnect();
}

static void core_writes(void)
{
	uint64_t ik = g_x.c.peer.inbox_key;
	const struct core_write writes[] = {
		{ "inbox-past-end", CW_INBOX_END, 0, 8, 0 },
		{ "inbox-straddles-end", CW_INBOX_END, -8, 16, 0 },
		{ "inbox-before-start", CW_INBOX, -8, 16, 0 },
		{ "inbox-oversize", CW_INBOX, 0,
		  PMV_INBOX_SIZE(g_x.c.peer.slot_size) + 4096, 0 },
		{ "region-past-end", CW_REGION, RL, 8, 0 },
		{ "region-straddles-end", CW_REGION, RL - 4, 8, 0 },
		{ "region-before-start", CW_REGION, -8, 16, 0 },
		{ "region-oversize", CW_REGION, 0, REGION_LEN + 8, 0 },
		{ "key-inbox-plus-one", CW_KEY, 0, 8, ik + 1 },
		{ "key-inbox-minus-one", CW_KEY, 0, 8, ik - 1 },
		{ "key-inbox-xor-one", CW_KEY, 0, 8, ik ^ 1 },
		{ "key-zero", CW_KEY, 0, 8, 0 },
		{ "key-region-plus-one", CW_KEY, 0, 8, g_opt.key + 1 },
	};

	for (size_t i = 0; i < ARRAY_LEN(writes); i++)
		core_write(&writes[i]);
}

/* ------------------------------------------------------------------ */
/* Hostile client: the run                                            */
/* ------------------------------------------------------------------ */

/* Runs one attack group, then checks the honest kept committing. */
static void group(const char *name, void (*fn)(void))
{
	uint64_t mark = ctl_load(&g_x.ctl->honest_commits);

	fn();
	await_honest(name, mark, true);
}

static void group_valid(void)
{
	run_attacks(k_valid, ARRAY_LEN(k_valid));
}

static void group_refused(void)
{
	run_attacks(k_refused, ARRAY_LEN(k_refused));
}

static void group_bad(void)
{
	for (size_t i = 0; i < ARRAY_LEN(k_bad); i++) {
		run_attack(&k_bad[i]);
		/* every other one is followed by a probe */
		if (i % 2)
			run_attack(&k_probe);
	}
	run_attack(&k_probe);
}

static void group_fuzz(void)
{
	for (unsigned i = 0; i < g_opt.fuzz; i++)
		fuzz_one(g_x.c.peer.slot_size);
	run_attack(&k_probe);
}

static void group_flood(void)
{
	flood(8);
}

static void group_inbox(void)
{
	raw_inbox_writes();
	spill_write();
}

static void group_headers(void)
{
	for (int m = HDR_BOGUS_INBOX; m <= HDR_NONE; m++)
		header_attack((enum hdr_mode)m);
}

/* Connects and drops the connection again and again, each time with
 * requests (valid and refused) left in the target's inbox. */
static void group_churn(void)
{
	static const struct attack bad = { "churn-range", EX_REFUSED,
					   PMV_ERR_RANGE, SCOPE1(RL, 8) };
	struct hconn keep = g_x.c, *c = &g_x.c;

	for (unsigned r = 0; r < CHURN_CONNS; r++) {
		if (!hconn_connect(c, HDR_GOOD) || !c->has_peer) {
			info("INFO churn: connection %u failed", r);
			hconn_close(c);
			continue;
		}
		for (unsigned i = 0; i < 8 && c->up; i++, c->seq++) {
			size_t len = attack_image(i % 2 ? &bad : &k_probe,
						  c->peer.slot_size, c->seq);

			if (hconn_write(c, len, req_addr(c, c->seq),
					c->peer.inbox_key))
				break;
		}
		hconn_close(c); /* no shutdown, acks unread */
	}
	g_x.c = keep;
}

/* Injects one ring of requests from c->seq on; false once the hostile's
 * own core refuses more (it is not progressed: nothing is read). */
static bool stall_ring(struct hconn *c, unsigned *sent)
{
	for (unsigned i = 0; i < PMV_SLOTS; i++, c->seq++, (*sent)++) {
		size_t len = attack_image(&k_probe, c->peer.slot_size, c->seq);

		if (fi_inject_write(c->ep, g_x.wbuf, len, 0,
				    req_addr(c, c->seq), c->peer.inbox_key))
			return false;
	}
	return true;
}

/*
 * The tcp core's socket of the attack connection (the only one connected
 * to the target's port by then), with its receive buffer made small, so
 * that the target's acks back up quickly once nothing reads them; -1 if
 * not found.
 */
static int stall_socket(void)
{
	int small = 4096, type;
	socklen_t tl = sizeof(type);

	for (int fd = 3; fd < 4096; fd++) {
		struct sockaddr_in peer;
		socklen_t pl = sizeof(peer);

		if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) ||
		    type != SOCK_STREAM ||
		    getpeername(fd, (struct sockaddr *)&peer, &pl) ||
		    peer.sin_family != AF_INET ||
		    ntohs(peer.sin_port) != atoi(g_opt.port))
			continue;
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
		return fd;
	}
	return -1;
}

/* The highest seq acked in the hostile's inbox (0: none). */
static uint64_t highest_ack(void)
{
	uint64_t best = 0, seq;
	struct pmv_ack ack;

	for (unsigned i = 0; i < PMV_SLOTS; i++) {
		memcpy(&seq, g_x.inbox + i * sizeof(ack), sizeof(seq));
		seq = le64toh(seq);
		if (seq > best && pmv_ack_decode(g_x.inbox + i * sizeof(ack),
						 seq, &ack))
			best = seq;
	}
	return best;
}

/*
 * Injects requests one ring at a time (a pause between rings lets the
 * agent keep up) and never reads: the target's acks pile up in the sockets
 * and its core until its ack writes return -FI_EAGAIN.  The honest
 * initiator must keep committing meanwhile.  Then the acks are drained and
 * the connection replaced.
 */
static void group_stalled(void)
{
	struct timespec gap = { .tv_nsec = STALL_GAP_US * 1000 };
	struct hconn *c = &g_x.c;
	uint64_t mark = ctl_load(&g_x.ctl->honest_commits), first = c->seq;
	int64_t deadline = deadline_in(STEP_MS);
	int fd = stall_socket(), unread = -1;
	unsigned sent = 0;

	ctl_store(&g_x.ctl->attack_started, 1);
	while (sent < STALL_REQS && before(deadline) && stall_ring(c, &sent))
		nanosleep(&gap, NULL);
	if (fd >= 0 && ioctl(fd, FIONREAD, &unread))
		unread = -1;
	await_honest("stalled-reader", mark, false);
	deadline = deadline_in(2000);
	while (c->up && before(deadline) && highest_ack() + 1 < c->seq)
		hconn_progress(c, NULL, NULL, NULL);
	info("INFO stalled reader: %u requests injected without reading, %d "
	     "bytes of acks left unread in its socket; the agent acked %"
	     PRIu64 " of them", sent, unread,
	     highest_ack() >= first ? highest_ack() - first + 1 : 0);
	hostile_reconnect();
}

static void group_core(void)
{
	core_writes();
	run_attack(&k_probe);
}

/* One line: the refusals the hostile got, by code, and the rest. */
static void hostile_summary(void)
{
	char line[512];
	size_t at = 0;

	for (int i = 1; i < PMV_ERR_LAST - PMV_ERR_BASE; i++)
		if (g_x.refusals[i] && at < sizeof(line))
			at += (size_t)snprintf(line + at, sizeof(line) - at,
					       "%s%s x%u", at ? ", " : "",
					       status_name(PMV_ERR_BASE + i),
					       g_x.refusals[i]);
	info("SUMMARY refusals: %s; served %u valid requests; %u slots "
	     "without a valid request refused as PMV_ERR_BAD_REQUEST; %u "
	     "seqs left unwritten and not acked; %u refusals expected but "
	     "unanswered; %u connections, %u dropped by the target's core "
	     "after a refused write",
	     at ? line : "none", g_x.served, g_x.bad, g_x.ignored,
	     g_x.unanswered, g_x.conns, g_x.dropped);
}

static void hostile_close(void)
{
	hconn_close(&g_x.c);
	fi_close(&g_x.inbox_mr->fid);
	fi_close(&g_x.domain->fid);
	fi_close(&g_x.fabric->fid);
	fi_freeinfo(g_x.info);
	free(g_x.inbox);
}

static int hostile_main(void)
{
	g_role = "hostile";
	if (!g_opt.ctl || !g_opt.key)
		die("-c CTL and -x BASE:KEY are needed");
	g_x.ctl = ctl_map();
	hostile_open();
	hostile_reconnect();
	info("INFO hostile: target inbox 0x%" PRIx64 " key 0x%" PRIx64
	     ", %u-byte slots; own inbox 0x%" PRIx64 " key 0x%" PRIx64,
	     g_x.c.peer.inbox_addr, g_x.c.peer.inbox_key, g_x.c.peer.slot_size,
	     g_x.inbox_addr, g_x.inbox_key);
	group("valid", group_valid);
	group("refused", group_refused);
	group("bad-slots", group_bad);
	group("fuzz", group_fuzz);
	group("flood", group_flood);
	group("inbox-writes", group_inbox);
	group("headers", group_headers);
	group("churn", group_churn);
	group_stalled();
	group("core-writes", group_core);
	hostile_summary();
	hostile_close();
	return g_failed ? 1 : 0;
}

/* ------------------------------------------------------------------ */
/* Main                                                               */
/* ------------------------------------------------------------------ */

static noreturn void usage(void)
{
	fprintf(stderr,
		"usage: pmv_hostile -r target  -P PORT -f FILE [-a ADDR]\n"
		"       pmv_hostile -r honest  -P PORT -x BASE:KEY -c CTL -m MARKER [-n AFTER]\n"
		"       pmv_hostile -r hostile -P PORT -x BASE:KEY -c CTL [-F FUZZ] [-s SEED] [-v]\n");
	exit(2);
}

/* Parses -x BASE:KEY (the target's REGION line). */
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
	int ch;

	while ((ch = getopt(argc, argv, "r:a:P:f:x:c:m:n:F:s:v")) != -1) {
		switch (ch) {
		case 'r': g_opt.role = optarg; break;
		case 'a': g_opt.addr = optarg; break;
		case 'P': g_opt.port = optarg; break;
		case 'f': g_opt.file = optarg; break;
		case 'x': parse_region(optarg); break;
		case 'c': g_opt.ctl = optarg; break;
		case 'm': g_opt.marker = optarg; break;
		case 'n': g_opt.after = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'F': g_opt.fuzz = (unsigned)strtoul(optarg, NULL, 0); break;
		case 's': g_opt.seed = strtoull(optarg, NULL, 0); break;
		case 'v': g_opt.verbose = true; break;
		default: usage();
		}
	}
	if (!g_opt.role || !g_opt.port || optind != argc)
		usage();
}

int main(int argc, char **argv)
{
	parse_opts(argc, argv);
	if (!strcmp(g_opt.role, "target"))
		return target_main();
	if (!strcmp(g_opt.role, "honest"))
		return honest_main();
	if (!strcmp(g_opt.role, "hostile"))
		return hostile_main();
	usage();
}
