/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_ct_target.c - Target: connections, the initiator's requests (resize,
 * idle, finish), the final report (guards, contents) and the target's main
 * loop.
 */

#include "pmv_ct.h"

/*
 * Keeps an FI_IMMED completion's data, whether its flags were right, and
 * the oracle's length when it was read: records after that point cannot
 * be what made the commit durable.
 */
static void target_on_immed(const struct fi_cq_data_entry *e)
{
	if (e->flags != IMMED_FLAGS && !g_t.immed_bad_flags++)
		g_t.first_bad_flags = e->flags;
	if (g_t.nimmed < MAX_IMMED)
		g_t.immed[g_t.nimmed] = (struct immed_seen){
			.data = e->data,
			.log_count = g_t.log ? __atomic_load_n(&g_t.log->count,
							       __ATOMIC_ACQUIRE) : 0,
		};
	g_t.nimmed++;
	g_t.immed_all = grow(g_t.immed_all, g_t.nimmed_all,
			     &g_t.cap_immed_all, sizeof(*g_t.immed_all));
	g_t.immed_all[g_t.nimmed_all++] = e->data;
}

static struct conn *target_conn_of(struct fid *fid)
{
	for (size_t i = 0; i < g_t.nconns; i++)
		if (g_t.conns[i].ep && &g_t.conns[i].ep->fid == fid)
			return &g_t.conns[i];
	return NULL;
}

/* KIND_MANY: every such endpoint reports to one pair of CQs. */
static void target_open_many(struct conn *c, struct fi_info *info)
{
	if (!g_t.many_tx) {
		g_t.many_tx = open_cq_sized(4096, true);
		g_t.many_rx = open_cq_sized(4096, true);
	}
	conn_open_on(c, info, g_t.eq, g_t.many_tx, g_t.many_rx);
	CHECK(fi_enable(c->ep));
}

/*
 * KIND_CNTR: binds an FI_REMOTE_WRITE counter to the (FI_RMA_PMEM)
 * endpoint before enabling it, and keeps fi_ep_bind's answer for the
 * initiator (scenario counters); a refused counter is closed.
 */
static void target_open_cntr(struct conn *c, struct fi_info *info)
{
	struct fi_cntr_attr attr = { .events = FI_CNTR_EVENTS_COMP,
				     .wait_obj = FI_WAIT_NONE };

	/* remote RMA events are counted only with FI_RMA_EVENT */
	info->caps |= FI_RMA_EVENT;
	info->rx_attr->caps |= FI_RMA_EVENT;
	/* opened first, so closed after the endpoint (close_all_fids) */
	CHECK(fi_cntr_open(g_net.domain, &attr, &g_t.rw_cntr, NULL));
	track_fid(&g_t.rw_cntr->fid);
	conn_open_on(c, info, g_t.eq, open_cq(), open_cq());
	g_t.rw_tried = true;
	g_t.rw_bind_ret = fi_ep_bind(c->ep, &g_t.rw_cntr->fid,
				     FI_REMOTE_WRITE);
	if (g_t.rw_bind_ret) {
		close_fid(&g_t.rw_cntr->fid);
		g_t.rw_cntr = NULL;
	}
	CHECK(fi_enable(c->ep));
}

/* Accepts a connection; its kind (CM data) says how to open the endpoint. */
static void target_on_connreq(struct cm_event *ev)
{
	char kind = ev->datalen ? (char)ev->data[0] : '?';
	struct conn *c;

	if (g_t.nconns == MAX_CONNS)
		die("too many connections");
	c = &g_t.conns[g_t.nconns++];
	c->kind = kind;
	if (kind == KIND_PLAIN_PEER)
		info_without_pmem(ev->info);
	if (kind == KIND_MANY)
		target_open_many(c, ev->info);
	else if (kind == KIND_CNTR)
		target_open_cntr(c, ev->info);
	else if (kind >= KIND_WAIT && kind < KIND_WAIT + WM_COUNT)
		target_open_wait(c, ev->info, (enum wait_mode)(kind - KIND_WAIT));
	else if (kind == KIND_LATE)
		target_open_late(c, ev->info);
	else
		conn_open(c, ev->info, g_t.eq);
	fi_freeinfo(ev->info);
	if (kind == KIND_MAIN) {
		g_t.main = c;
		ctl_init(c);
	}

	CHECK(fi_accept(c->ep, NULL, 0));
}

static void target_on_shutdown(struct conn *c)
{
	c->shut_down = true;
	if (c != g_t.main)
		return;
	if (g_opt.test == TEST_EXIT)
		exit(EXIT_PASS); /* with everything open: the exit test */
	if (!g_t.finished)
		die("the initiator went away before asking for the report");
	g_t.done = true;
}

/* Handles one EQ event, if any; true if there was one. */
static bool target_poll_eq(void)
{
	struct cm_event ev;
	struct conn *c;

	if (!eq_poll(g_t.eq, &ev))
		return false;
	if (ev.event == FI_CONNREQ) {
		target_on_connreq(&ev);
		return true;
	}
	c = target_conn_of(ev.fid);
	if (!c)
		die("EQ event %u for an unknown fid", ev.event);
	if (ev.event == FI_CONNECTED)
		c->connected = true;
	else if (ev.event == FI_SHUTDOWN)
		target_on_shutdown(c);
	else
		die("unexpected EQ event %u", ev.event);
	return true;
}

static struct conn *target_conn_of_kind(char kind)
{
	for (size_t i = 0; i < g_t.nconns; i++)
		if (g_t.conns[i].kind == kind && !g_t.conns[i].shut_down)
			return &g_t.conns[i];
	return NULL;
}

static void target_on_ranges(const void *payload, size_t len)
{
	const struct range_desc *r = payload;

	if (len % sizeof(*r))
		die("RANGES message of %zu bytes", len);
	for (size_t i = 0; i < len / sizeof(*r); i++)
		range_add(&g_t.ranges, &r[i]);
}

/* Shuts the KIND_SHUT connection down (the initiator then sees FI_SHUTDOWN). */
static void target_on_shut(void)
{
	struct conn *c = target_conn_of_kind(KIND_SHUT);

	if (!c)
		die("SHUT: no such connection");
	CHECK(fi_shutdown(c->ep, 0));
	c->shut_down = true;
}

/*
 * Re-registers a region under the same key with a new length, and with a
 * new granularity forced (libpmem2 reads PMEM2_FORCE_GRANULARITY when
 * pmemverbs maps the file at fi_mr_reg), so with another profile.
 */
void target_resize(const struct resize_req *req,
			  struct status_rsp *rsp)
{
	struct region *r;

	if (req->region >= REG_COUNT || req->gran >= GRAN_COUNT ||
	    req->len > k_regions[req->region].len || !req->len ||
	    req->onto > REG_COUNT ||
	    (req->onto && req->len > k_regions[req->onto - 1].len))
		die("RESIZE: bad request (region %u, len %" PRIu64 ")",
		    req->region, req->len);
	r = &g_t.reg[req->region];
	if (!close_fid(&r->mr->fid))
		die("RESIZE: closing the region's MR failed");
	r->len = req->len;
	if (req->gran != GRAN_KEEP &&
	    setenv("PMEM2_FORCE_GRANULARITY", k_gran_names[req->gran], 1))
		die("RESIZE: setenv: %s", strerror(errno));
	*rsp = (struct status_rsp){ 0 };
	rsp->status = req->onto ?
		      target_register_at((enum region_id)req->region,
					 g_t.reg[req->onto - 1].addr) :
		      target_register((enum region_id)req->region);
	rsp->key = r->key;
	rsp->profile = rsp->status ? FI_PMEM_PROFILE_UNKNOWN : r->profile;
	/* A requested key must be kept; a provider's key (FI_MR_PROV_KEY,
	 * the verbs core) is new with every registration. */
	if (!rsp->status && !(g_net.mr_mode & FI_MR_PROV_KEY) &&
	    r->key != region_key((enum region_id)req->region))
		snprintf(rsp->detail, sizeof(rsp->detail), "key changed to "
			 "0x%" PRIx64 " (FI_MR_PROV_KEY)", r->key);
}

/* MSG_RESIZE: target_resize, answered by RESIZED. */
static void target_on_resize(const struct resize_req *req)
{
	struct status_rsp rsp;

	target_resize(req, &rsp);
	ctl_send(MSG_RESIZED, &rsp, sizeof(rsp));
}

/*
 * Told to pause: says so, then calls nothing (libfabric included) for
 * pause_ms, and answers with when it calls libfabric again.  Without an
 * agent thread nothing serves a commit meanwhile.
 */
static void target_pause(const struct idle_req *req)
{
	struct timespec ts = { .tv_sec = (time_t)(req->pause_ms / 1000),
			       .tv_nsec = (long)(req->pause_ms % 1000) *
					  1000000 };
	struct status_rsp rsp = { 0 };

	ctl_send(MSG_IDLE_BEGUN, NULL, 0);
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
	rsp.at_us = now_us();
	ctl_send(MSG_IDLE_DONE, &rsp, sizeof(rsp));
}

/*
 * Stops calling libfabric until the initiator writes the flag: commits
 * must complete meanwhile (the agent runs by itself).
 * Told to pause (pause_ms): target_pause.
 */
static void target_on_idle(const struct idle_req *req)
{
	uint8_t *vol = g_t.reg[REG_VOL].addr;
	uint64_t *marker = (uint64_t *)(void *)(vol + req->marker_off);
	uint64_t *flag = (uint64_t *)(void *)(vol + req->flag_off);
	int64_t deadline = deadline_in(IDLE_MS);
	struct status_rsp rsp = { 0 };

	if (req->pause_ms) {
		target_pause(req);
		return;
	}
	__atomic_store_n(marker, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(flag, __ATOMIC_ACQUIRE) != req->flag_value &&
	       before(deadline))
		pause_briefly();
	__atomic_store_n(marker, 0, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(flag, __ATOMIC_ACQUIRE) != req->flag_value) {
		rsp.status = -FI_ETIMEDOUT;
		snprintf(rsp.detail, sizeof(rsp.detail), "the flag did not "
			 "arrive within %d ms while the target did not poll",
			 IDLE_MS);
	}
	ctl_send(MSG_IDLE_DONE, &rsp, sizeof(rsp));
}

/* Keeps the first problem found in the report's detail text. */
void report_problem(struct report *rep, const char *fmt, ...)
{
	va_list ap;

	if (rep->detail[0])
		return;
	va_start(ap, fmt);
	vsnprintf(rep->detail, sizeof(rep->detail), fmt, ap);
	va_end(ap);
}

/* Closes the MRs, unmaps the file, and maps it afresh from its path. */
static const uint8_t *target_remap(void)
{
	for (int i = 0; i < REG_COUNT; i++)
		if (g_t.reg[i].mr && !close_fid(&g_t.reg[i].mr->fid))
			die("closing the MR of %s failed", k_regions[i].name);
	if (munmap(g_t.map, g_t.size))
		die("munmap: %s", strerror(errno));
	close(g_t.fd);
	g_t.fd = open(g_opt.file, O_RDONLY);
	if (g_t.fd < 0)
		die("re-opening %s: %s", g_opt.file, strerror(errno));
	g_t.map = map_file(g_t.fd, g_t.size, false);
	return g_t.map;
}

static bool check_guards(const uint8_t *file, struct report *rep)
{
	for (size_t off = 0; off < g_t.size; off++) {
		if (in_guard(off) && file[off] != guard_byte(off)) {
			report_problem(rep, "guard byte at file offset %zu is "
				       "0x%02x, expected 0x%02x: something "
				       "wrote outside the regions", off,
				       file[off], guard_byte(off));
			return false;
		}
	}
	return true;
}

/* The bytes region id must hold: zero, then every range in order. */
static uint8_t *expected_region(enum region_id id, struct report *rep)
{
	size_t len = k_regions[id].len;
	uint8_t *want = calloc(1, len);

	if (!want)
		die("out of memory");
	for (size_t i = 0; i < g_t.ranges.n; i++) {
		const struct range_desc *r = &g_t.ranges.v[i];

		if (r->region != (uint32_t)id)
			continue;
		if (r->off > len || r->len > len - r->off) {
			report_problem(rep, "initiator named range [%" PRIu64
				       ", +%" PRIu64 ") outside region %s",
				       r->off, r->len, k_regions[id].name);
			continue;
		}
		gen_fill(want + r->off, r->len, r->seed, r->off);
	}
	return want;
}

static bool check_region(const uint8_t *file, enum region_id id,
			 struct report *rep)
{
	const uint8_t *got = file + g_t.reg[id].file_off;
	uint8_t *want = expected_region(id, rep);
	size_t len = k_regions[id].len, bad = 0, first = 0;

	for (size_t i = 0; i < len; i++)
		if (got[i] != want[i] && !bad++)
			first = i;
	if (bad)
		report_problem(rep, "region %s: %zu bytes differ; first at "
			       "offset %zu: 0x%02x, expected 0x%02x",
			       k_regions[id].name, bad, first, got[first],
			       want[first]);
	free(want);
	return bad == 0;
}

/* Checks the re-mapped file and sends the report (with FI_IMMED data). */
static void target_on_finish(const struct finish_req *req)
{
	size_t n = g_t.nimmed < MAX_IMMED ? g_t.nimmed : MAX_IMMED;
	size_t size = sizeof(struct report) + n * sizeof(struct immed_seen);
	struct report *rep = calloc(1, size);
	const uint8_t *file = target_remap();

	if (!rep)
		die("out of memory");
	rep->guards_ok = check_guards(file, rep);
	rep->contents_checked = req->check_contents;
	rep->contents_ok = 1;
	for (int i = 0; req->check_contents && i < REG_COUNT; i++)
		rep->contents_ok &= check_region(file, (enum region_id)i, rep);
	rep->nimmed = g_t.nimmed;
	rep->immed_bad_flags = g_t.immed_bad_flags;
	rep->first_bad_flags = g_t.first_bad_flags;
	rep->unexpected = g_unexpected;
	if (g_unexpected)
		report_problem(rep, "target: %s", g_unexpected_what);
	rep->immed_log_counted = g_t.log != NULL;
	memcpy(rep->immed, g_t.immed, n * sizeof(struct immed_seen));
	ctl_send(MSG_REPORT, rep, size);
	free(rep);
	g_t.finished = true;
	g_t.linger_deadline = deadline_in(LINGER_MS);
}

/* Handles the oldest control message, if any; true if there was one. */
static bool target_handle_message(void)
{
	struct op *op = ctl_peek();
	const struct msg_hdr *h;
	const void *p;

	if (!op)
		return false;
	h = msg_hdr(op);
	p = h + 1;
	switch (h->type) {
	case MSG_RANGES: target_on_ranges(p, h->len); break;
	case MSG_FINISH: target_on_finish(p); break;
	case MSG_SHUT: target_on_shut(); break;
	case MSG_RESIZE: target_on_resize(p); break;
	case MSG_IDLE: target_on_idle(p); break;
	case MSG_FLOOD_CHECK: target_on_flood_check(p); break;
	case MSG_CNTR_WATCH: target_on_cntr_watch(p); break;
	case MSG_WAIT: target_on_wait(p); break;
	case MSG_OVERTAKE: target_on_overtake(p); break;
	case MSG_LATE: target_on_late(p); break;
	case MSG_WBERR: target_on_wberr(p); break;
	default: die("unexpected control message %u", h->type);
	}
	if (g_t.finished)
		ctl_release_last(); /* the report is sent: the initiator may go */
	else
		ctl_release();
	return true;
}

/*
 * Opens the domain and registers the regions, then listens.  Registering
 * takes seconds in an emulated guest (verbs pins every page): done while a
 * connection request waits, it can outlast the RDMA CM's response timeout.
 */
static void target_listen(void)
{
	g_net.info = query_info(FI_SOURCE);
	open_fabric(g_net.info);
	open_domain(g_net.info);
	target_register_all();
	g_t.eq = open_eq();
	CHECK(fi_passive_ep(g_net.fabric, g_net.info, &g_t.pep, NULL));
	track_fid(&g_t.pep->fid);
	CHECK(fi_pep_bind(g_t.pep, &g_t.eq->fid, 0));
	CHECK(fi_listen(g_t.pep));
	printf("READY %s:%s\n", g_opt.addr, g_opt.port);
	fflush(stdout);
}

/* Serves connections and messages until the report is sent and read. */
static void target_serve(void)
{
	int64_t life = deadline_in(TARGET_LIFE_MS);

	while (!g_t.done) {
		bool busy = target_poll_eq();

		if (!before(life))
			die("no FINISH within %d ms", TARGET_LIFE_MS);
		busy |= progress();
		if (g_t.main && g_t.main->connected && !g_t.regions_sent)
			target_send_regions();
		busy |= target_handle_message();
		if (g_t.finished && !before(g_t.linger_deadline))
			g_t.done = true;
		if (!busy)
			pause_briefly();
	}
}

static void target_close(void)
{
	close_all_fids();
	fi_freeinfo(g_net.info);
	munmap(g_t.map, g_t.size);
	close(g_t.fd);
	free(g_ctl.sbuf);
	free(g_ctl.rbuf);
	free(g_t.ranges.v);
	free(g_t.immed_all);
}

/*
 * mrreg: maps the region file as the target does, opens a domain for
 * addr:port and registers pmem-a with FI_RMA_PMEM.  Prints
 * "MRREG <code> <profile> domain <name>"; exit 0 if registered, 4 if not.
 */
static int target_mrreg(void)
{
	int ret;

	target_create_file();
	g_net.info = query_info(FI_SOURCE);
	open_fabric(g_net.info);
	open_domain(g_net.info);
	ret = target_register(REG_A);
	printf("MRREG %s (%d) %s domain %s\n", ret ? errname(ret) : "0", ret,
	       ret ? "-" : fi_pmem_profile_str(g_t.reg[REG_A].profile),
	       g_net.info->domain_attr->name ? g_net.info->domain_attr->name :
					       "?");
	close_all_fids();
	fi_freeinfo(g_net.info);
	munmap(g_t.map, g_t.size);
	close(g_t.fd);
	return ret ? 4 : EXIT_PASS;
}

int target_main(void)
{
	const char *oracle = getenv("FI_PMEMVERBS_ORACLE");

	g_role = "target";
	if (g_opt.test == TEST_MRREG)
		return target_mrreg();
	if (oracle && *oracle)
		oracle_create(oracle);
	target_create_file();
	g_on_immed = target_on_immed;
	target_listen();
	target_serve();
	target_close();
	return EXIT_PASS;
}
