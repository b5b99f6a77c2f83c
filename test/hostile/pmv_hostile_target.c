/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_hostile_target.c - the target role: the region, its
 * connections (the hostile's too), and the verdicts on every byte.
 */
#include "pmv_hostile.h"

/* ------------------------------------------------------------------ */
/* Target                                                             */
/* ------------------------------------------------------------------ */

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
static void target_on_connreq(struct pmv_cm_event *ev)
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
	struct pmv_cm_event ev;

	if (!pmv_test_eq_poll(g_t.eq, &ev))
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

int target_main(void)
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
