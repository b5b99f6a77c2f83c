/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_ct_initiator.c - Initiator: the session (connection, regions, profiles),
 * the oracle log and target file mappings, and the target's report.
 */

#include "pmv_ct.h"

struct session g_s;

struct fi_pmem_ep_counters main_counters(void)
{
	struct fi_pmem_ep_counters c = { 0 };

	if (g_net.pmem->ep_counters(g_s.main.ep, &c))
		die("ep_counters failed on the main endpoint");
	return c;
}

/* The target's region file, read-only, and what each region must hold
 * (NULL: not checking commits made without the agent). */
const uint8_t *g_target_map;
uint8_t *g_shadow[REG_COUNT];

void target_file_map(const char *path)
{
	size_t size = region_file_off(REG_COUNT);
	size_t align = (size_t)sysconf(_SC_PAGESIZE);
	struct stat st;
	void *p;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || fstat(fd, &st))
		die("opening the target's file %s: %s", path, strerror(errno));
	if (S_ISCHR(st.st_mode))
		align = chardev_alignment(&st);
	size = (size + align - 1) / align * align;
	p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		die("mapping the target's file %s: %s", path, strerror(errno));
	close(fd);
	g_target_map = p;
	g_shadow[REG_A] = calloc(1, k_regions[REG_A].len);
	g_shadow[REG_B] = calloc(1, k_regions[REG_B].len);
	if (!g_shadow[REG_A] || !g_shadow[REG_B])
		die("out of memory");
}

/* Oracle log as the initiator maps it (NULL: not checking). */
struct pmv_oracle_log *g_log;
size_t g_log_cap;

void oracle_map(const char *path)
{
	struct stat st;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || fstat(fd, &st))
		die("opening oracle log %s: %s", path, strerror(errno));
	if ((size_t)st.st_size < sizeof(struct pmv_oracle_log))
		die("oracle log %s is too small", path);
	g_log = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (g_log == MAP_FAILED)
		die("mapping oracle log %s: %s", path, strerror(errno));
	if (__atomic_load_n(&g_log->magic, __ATOMIC_ACQUIRE) != PMV_ORACLE_MAGIC)
		die("oracle log %s has no magic: did the target create it?",
		    path);
	g_log_cap = pmv_oracle_capacity((size_t)st.st_size);
}

/* Records claimed so far; a full log ends the run (it cannot prove). */
uint64_t oracle_count(void)
{
	uint64_t n;

	if (!g_log)
		return 0;
	n = __atomic_load_n(&g_log->count, __ATOMIC_ACQUIRE);
	if (n > g_log_cap)
		die("oracle log full (%" PRIu64 " records, capacity %zu)", n,
		    g_log_cap);
	return n;
}

const char *profile_name(uint32_t p)
{
	return fi_pmem_profile_str((enum fi_pmem_profile)p);
}

/* Verdict on a profile the provider reported; when says what preceded. */
void expect_profile(const char *name, uint32_t got, uint32_t want,
			   const char *when)
{
	if (got == want)
		verdict(true, check_name(name), "%s %s", profile_name(got), when);
	else
		verdict(false, check_name(name), "expected %s got %s %s",
			profile_name(want), profile_name(got), when);
}

bool gran_auto(void)
{
	return !strcmp(g_opt.gran, "auto");
}

/*
 * The profile PMEM2_FORCE_GRANULARITY=gran makes the target detect; with
 * "auto", the one the target reports for pmem-a (check_profiles judges it).
 */
static enum fi_pmem_profile profile_for_granularity(const char *gran)
{
	if (!strcmp(gran, "auto"))
		return (enum fi_pmem_profile)g_s.reg[REG_A].profile;
	if (!strcmp(gran, "page"))
		return FI_PMEM_PROFILE_PAGE;
	if (!strcmp(gran, "cache_line"))
		return FI_PMEM_PROFILE_DMP;
	if (!strcmp(gran, "byte"))
		return FI_PMEM_PROFILE_MHP;
	usage();
}

uint64_t rma_addr(enum region_id id, uint64_t off)
{
	return g_s.reg[id].rma_base + off;
}

/* Builds "<test>/<granularity>/<check>" for verdict lines. */
const char *check_name(const char *check)
{
	static char buf[128];

	if (g_opt.test == TEST_BADINPUT)
		snprintf(buf, sizeof(buf), "badinput/%s", check);
	else
		snprintf(buf, sizeof(buf), "%s/%s/%s",
			 k_test_names[g_opt.test], g_opt.gran, check);
	return buf;
}

/* Whether a boolean parameter (default yes) is on, as libfabric reads it. */
static bool param_on(const char *var)
{
	const char *v = getenv(var);

	return !v || !(!strcmp(v, "0") || !strcasecmp(v, "no") ||
		       !strcasecmp(v, "false") || !strcasecmp(v, "off"));
}

/* FI_PMEMVERBS_JOIN_REQUEST: on unless set off (every target here reads
 * a FI_CQ_FORMAT_DATA receive CQ, so over tcp it offers a gate). */
bool join_request_on(void)
{
	return param_on("FI_PMEMVERBS_JOIN_REQUEST");
}

/* The initiator reads the profile table the target pushes. */
bool pushes_on(void)
{
	return param_on("FI_PMEMVERBS_PUSH_PROFILES");
}

/* PMV_TARGET_AGENT_THREAD (set by run_pmem_tests.sh): the
 * FI_PMEMVERBS_AGENT_THREAD the target was given, off in the threadless
 * suite.  Without the thread only the target's own reads serve it. */
bool target_agent_thread_on(void)
{
	return param_on("PMV_TARGET_AGENT_THREAD");
}

/* True if progress() reads cq. */
static bool progressed(const struct fid_cq *cq)
{
	for (size_t i = 0; i < g_ncqs; i++)
		if (g_cqs[i] == cq)
			return true;
	return false;
}

/*
 * With pushes on, waits (bounded) until the table the target pushes when
 * it reads FI_CONNECTED has reached c: then the initiator knows REG_A's
 * profile before any commit, and every later check can say which method
 * a commit takes.  A table that never comes is a failure.  Scenario
 * connections, whose CQs the scenario reads itself, do not wait: their
 * checks do not depend on the method.
 */
static void wait_table(struct conn *c)
{
	int64_t deadline = deadline_in(STEP_MS);

	if (!pushes_on() || !progressed(c->txcq))
		return;
	while (g_net.pmem->peer_profile(c->ep, g_s.reg[REG_A].key) ==
	       FI_PMEM_PROFILE_UNKNOWN) {
		if (progress())
			continue;
		if (!before(deadline))
			die("the target's profile table did not arrive within "
			    "%d ms of FI_CONNECTED", STEP_MS);
		pause_briefly();
	}
}

/* Connects c (already opened) to the target, telling it what c is for. */
void conn_connect(struct conn *c, char kind)
{
	c->kind = kind;
	CHECK(fi_connect(c->ep, g_net.info->dest_addr, &kind, 1));
	wait_flag(&c->connected, "connecting (FI_CONNECTED)");
	if (kind != KIND_MAIN && kind != KIND_PLAIN_PEER)
		wait_table(c);
}

/* Opens an endpoint in the session's domain; pmem selects FI_RMA_PMEM;
 * op_flags: its default transmit op_flags (fi_info tx_attr). */
void initiator_open_conn_flags(struct conn *c, bool pmem,
				      uint64_t op_flags)
{
	struct fi_info *info = fi_dupinfo(g_net.info);

	*c = (struct conn){ 0 }; /* a connection struct used before starts anew */
	if (!info)
		die("out of memory");
	if (!pmem)
		info_without_pmem(info);
	info->tx_attr->op_flags |= op_flags;
	conn_open(c, info, NULL);
	fi_freeinfo(info);
	watch_conn(c, true);
}

void initiator_open_conn(struct conn *c, bool pmem)
{
	initiator_open_conn_flags(c, pmem, 0);
}

/* Closes an extra connection's endpoint and EQ (its CQs close at exit). */
void initiator_close_conn(struct conn *c)
{
	watch_conn(c, false);
	if (!close_fid(&c->ep->fid) || !close_fid(&c->eq->fid))
		die("closing an extra endpoint failed");
}

void initiator_setup(void)
{
	const struct region_desc *d;

	g_net.info = query_info(0);
	open_fabric(g_net.info);
	open_domain(g_net.info);
	initiator_open_conn(&g_s.main, true);
	ctl_init(&g_s.main);
	conn_connect(&g_s.main, KIND_MAIN);
	d = ctl_expect(MSG_REGIONS, sizeof(g_s.reg), NULL);
	memcpy(g_s.reg, d, sizeof(g_s.reg));
	ctl_release();
	wait_table(&g_s.main);
	g_s.src = calloc(LOCAL_SLOTS, LOCAL_STRIDE);
	if (!g_s.src)
		die("out of memory");
	g_s.src_desc = local_desc(g_s.src, (size_t)LOCAL_SLOTS * LOCAL_STRIDE,
				  &g_s.src_mr);
	g_s.want_profile = profile_for_granularity(g_opt.gran);
	g_rng ^= mix64(g_opt.seed);
}

/*
 * With -g auto: true if the profile is one -E allows (by default any
 * profile of persistent memory or page cache, not VOLATILE or UNKNOWN).
 */
static bool profile_allowed(uint32_t p)
{
	const char *name = profile_name(p), *list = g_opt.expect;
	size_t n = strlen(name);

	if (!list)
		return p >= FI_PMEM_PROFILE_PAGE && p <= FI_PMEM_PROFILE_WSP;
	while (*list) {
		size_t len = strcspn(list, ",");

		if (len == n && !strncasecmp(list, name, n))
			return true;
		list += len + (list[len] == ',');
	}
	return false;
}

/* The profile each region must report: the forced one (or with -g auto,
 * one allowed, the same for every FI_RMA_PMEM region), VOLATILE without
 * FI_RMA_PMEM. */
void check_profiles(void)
{
	char got[160] = "";
	bool ok = true;

	for (int i = 0; i < REG_COUNT; i++) {
		uint32_t want = k_regions[i].flags & FI_RMA_PMEM ?
				g_s.want_profile : FI_PMEM_PROFILE_VOLATILE;
		size_t n = strlen(got);

		if (g_s.reg[i].reg_status)
			continue; /* refused registration: case offset-nonzero */
		ok &= g_s.reg[i].profile == want;
		snprintf(got + n, sizeof(got) - n, "%s%s=%s", i ? " " : "",
			 k_regions[i].name, profile_name(g_s.reg[i].profile));
	}
	if (gran_auto() && !profile_allowed(g_s.want_profile))
		verdict(false, check_name("profile"), "expected %s (the "
			"target's own, none forced) got %s",
			g_opt.expect ? g_opt.expect : "a persistent profile",
			got);
	else if (ok)
		verdict(true, check_name("profile"), "%s (granularity %s%s%s)",
			got, g_opt.gran, g_opt.expect ? ", allowed " : "",
			g_opt.expect ? g_opt.expect : "");
	else
		verdict(false, check_name("profile"), "expected %s for the "
			"FI_RMA_PMEM regions (granularity %s), VOLATILE for "
			"the other got %s", profile_name(g_s.want_profile),
			g_opt.gran, got);
}

/* Sends every placed range to the target, then FINISH; returns REPORT. */
struct report *initiator_finish(bool check_contents)
{
	const size_t per_msg = (CTL_SIZE - sizeof(struct msg_hdr)) /
			       sizeof(struct range_desc);
	struct finish_req req = { .check_contents = check_contents };
	struct report *rep;
	const void *p;
	size_t len;

	for (size_t i = 0; i < g_s.placed.n; i += per_msg) {
		size_t n = g_s.placed.n - i < per_msg ? g_s.placed.n - i :
							per_msg;

		ctl_send(MSG_RANGES, g_s.placed.v + i, n * sizeof(*g_s.placed.v));
	}
	ctl_send(MSG_FINISH, &req, sizeof(req));
	p = ctl_expect(MSG_REPORT, sizeof(*rep), &len);
	rep = malloc(len);
	if (!rep)
		die("out of memory");
	memcpy(rep, p, len);
	ctl_release();
	return rep;
}

/* The target's own checks: guards, contents, stray completions. */
void check_report_file(const struct report *rep)
{
	verdict(rep->guards_ok, check_name("guards"), "%s",
		rep->guards_ok ? "no byte outside the regions changed" :
				 rep->detail);
	if (rep->contents_checked)
		verdict(rep->contents_ok, check_name("contents"), "%s%s",
			rep->contents_ok ? "the re-mapped file holds exactly "
					   "the placed ranges, zero elsewhere" :
					   "",
			rep->contents_ok ? "" : rep->detail);
	if (rep->unexpected)
		verdict(false, check_name("target-completions"),
			"expected no stray entry got %u (%s)", rep->unexpected,
			rep->detail);
}

/* FI_IMMED data the target saw must be exactly what was sent, in order. */
void check_report_immed(const struct report *rep)
{
	size_t n = rep->nimmed < MAX_IMMED ? rep->nimmed : MAX_IMMED;
	bool ok = rep->nimmed == g_s.nimmed && !rep->immed_bad_flags;
	size_t i;

	for (i = 0; ok && i < n; i++)
		ok = rep->immed[i].data == g_s.immed[i];
	if (ok) {
		verdict(true, check_name("immed"), "%zu FI_IMMED completions "
			"with the sent data, in order, flags FI_RMA|"
			"FI_REMOTE_WRITE|FI_REMOTE_CQ_DATA", g_s.nimmed);
	} else if (rep->nimmed != g_s.nimmed) {
		verdict(false, check_name("immed"), "expected %zu target "
			"completions got %u", g_s.nimmed, rep->nimmed);
	} else if (rep->immed_bad_flags) {
		verdict(false, check_name("immed"), "expected flags 0x%llx "
			"got 0x%" PRIx64 " (%u entries)",
			(unsigned long long)IMMED_FLAGS, rep->first_bad_flags,
			rep->immed_bad_flags);
	} else {
		verdict(false, check_name("immed"), "expected data 0x%" PRIx64
			" at #%zu got 0x%" PRIx64, g_s.immed[i - 1], i - 1,
			rep->immed[i - 1].data);
	}
}

void initiator_close(void)
{
	fi_shutdown(g_s.main.ep, 0);
	drain_cqs();
	watch_conn(&g_s.main, false);
	close_all_fids();
	fi_freeinfo(g_net.info);
	for (int i = 0; i < REG_COUNT; i++)
		free(g_s.pending[i].v);
	free(g_s.placed.v);
	free(g_s.immed_scopes);
	free(g_s.src);
	free(g_ctl.sbuf);
	free(g_ctl.rbuf);
}
