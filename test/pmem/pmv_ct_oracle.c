/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_ct_oracle.c - Initiator: checking each completed commit against the
 * persistence oracle, or (commits made without the agent) against the target's
 * file, and that it took the method the matrix (k_method_matrix) gives; the
 * workload's final verdicts (commits, counters, method, FI_IMMED timing).
 */

#include "pmv_ct.h"

/* ================================================================== */
/* Initiator: the oracle                                              */
/* ================================================================== */

struct ival {
	uint64_t lo, hi;
};

static int ival_cmp(const void *a, const void *b)
{
	const struct ival *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Complete records of key in [from, to) that touch [lo, hi), clipped. */
static struct ival *oracle_hits(uint64_t key, uint64_t lo, uint64_t hi,
				uint64_t from, uint64_t to, size_t *n)
{
	static struct ival *v;
	static size_t cap;

	*n = 0;
	for (uint64_t i = from; i < to; i++) {
		const struct pmv_oracle_rec *r = &g_log->rec[i];
		uint64_t rlo, rhi;

		if (__atomic_load_n(&r->valid, __ATOMIC_ACQUIRE) != 1 ||
		    r->key != key)
			continue;
		rlo = r->addr;
		rhi = r->addr + r->len;
		if (rhi <= lo || rlo >= hi || rhi < rlo)
			continue;
		v = grow(v, *n, &cap, sizeof(*v));
		v[(*n)++] = (struct ival){ rlo > lo ? rlo : lo,
					   rhi < hi ? rhi : hi };
	}
	return v;
}

/*
 * First byte of [addr, addr+len) that no complete record of key in
 * [from, to) covers; addr+len if every byte is covered.
 */
uint64_t oracle_first_hole(uint64_t key, uint64_t addr, uint64_t len,
				  uint64_t from, uint64_t to)
{
	size_t n;
	struct ival *v = oracle_hits(key, addr, addr + len, from, to, &n);
	uint64_t cur = addr;

	if (n) /* v is NULL when no record hits: qsort's is declared nonnull */
		qsort(v, n, sizeof(*v), ival_cmp);
	for (size_t i = 0; i < n && cur < addr + len; i++) {
		if (v[i].lo > cur)
			break;
		if (v[i].hi > cur)
			cur = v[i].hi;
	}
	return cur;
}

/* Index of the first complete record of key in [from, to) touching p. */
static uint64_t oracle_first_record(uint64_t key, const struct pend *p,
				    uint64_t to)
{
	for (uint64_t i = p->mark; i < to; i++) {
		const struct pmv_oracle_rec *r = &g_log->rec[i];

		if (__atomic_load_n(&r->valid, __ATOMIC_ACQUIRE) == 1 &&
		    r->key == key && r->addr < p->addr + p->len &&
		    r->addr + r->len > p->addr)
			return i;
	}
	return to;
}

/* Prints the records of key since from, for a failure's details. */
static void oracle_dump(uint64_t key, uint64_t from, uint64_t to)
{
	unsigned shown = 0;

	fprintf(stderr, "oracle records of key 0x%" PRIx64 " from #%" PRIu64
		" to #%" PRIu64 ":\n", key, from, to);
	for (uint64_t i = from; i < to && shown < 16; i++) {
		const struct pmv_oracle_rec *r = &g_log->rec[i];

		if (r->key != key)
			continue;
		fprintf(stderr, "  #%" PRIu64 " [0x%" PRIx64 ", +%" PRIu64
			") valid=%" PRIu64 "\n", i, r->addr, r->len, r->valid);
		shown++;
	}
}

struct commit_rec g_commit;

/* A completion outran persistence: report and stop with EXIT_UNCOVERED. */
static noreturn void oracle_violation(const struct pend *p, uint64_t hole,
				      uint64_t count, const char *why)
{
	uint64_t key = g_s.reg[g_commit.region].key;

	printf("%s %s: commit #%u (%s) to key 0x%" PRIx64 " completed, but "
	       "byte 0x%" PRIx64 " of range [0x%" PRIx64 ", +%" PRIu64 ") "
	       "written after oracle record #%" PRIu64 " %s (log has %"
	       PRIu64 " records)\n",
	       g_opt.test == TEST_FAULT ? "DETECTED" : "FAIL",
	       check_name("oracle"), g_commit.index, g_commit.what, key, hole,
	       p->addr, p->len, p->mark, why, count);
	oracle_dump(key, p->mark, count);
	fflush(stdout);
	exit(EXIT_UNCOVERED);
}

/*
 * At a commit's completion: every byte written to the key since its last
 * commit must be covered by records appended after the byte was posted.
 * With FI_FENCE, the earlier writes must be covered by records that come
 * before any record of the commit's own write.
 */
static void oracle_check_ranges(size_t from, size_t to, uint64_t count)
{
	const struct pend_list *pl = &g_s.pending[g_commit.region];
	uint64_t key = g_s.reg[g_commit.region].key;

	for (size_t i = from; i < to; i++) {
		const struct pend *p = &pl->v[i];
		uint64_t hole = oracle_first_hole(key, p->addr, p->len,
						  p->mark, count);

		if (hole < p->addr + p->len)
			oracle_violation(p, hole, count, "is not covered by "
					 "any persisted extent");
	}
	g_s.ranges_checked += (unsigned)(to - from);
}

static void oracle_check_commit(void)
{
	const struct pend_list *pl = &g_s.pending[g_commit.region];
	uint64_t key = g_s.reg[g_commit.region].key;
	uint64_t count = oracle_count(), fence_end = count;

	oracle_check_ranges(0, pl->n, count);
	if (!g_commit.fence || !g_commit.npre || !g_commit.nown)
		return;
	for (size_t i = g_commit.npre; i < pl->n; i++) {
		uint64_t first = oracle_first_record(key, &pl->v[i], count);

		fence_end = first < fence_end ? first : fence_end;
	}
	for (size_t i = 0; i < g_commit.npre; i++) {
		const struct pend *p = &pl->v[i];
		uint64_t hole = oracle_first_hole(key, p->addr, p->len,
						  p->mark, fence_end);

		if (hole < p->addr + p->len)
			oracle_violation(p, hole, count, "(before the fence) "
					 "was not persisted before the fenced "
					 "write's own extents");
	}
	g_s.fences_checked++;
}

/* ================================================================== */
/* Initiator: commits made without the agent                          */
/* ================================================================== */

/*
 * Read-flush and completion commits leave no oracle record.  They are
 * correct only where placed bytes are durable (MHP, WSP, VOLATILE), and
 * there the check is that every byte of the commit's scope is in the
 * target's memory when the commit completes: the initiator maps the
 * target's region file (-F) and compares it with a shadow of what it wrote.
 */
static void visibility_violation(const struct pend *p, uint64_t at,
				 uint8_t got, uint8_t want)
{
	printf("%s %s: commit #%u (%s) completed by %s, but byte 0x%" PRIx64
	       " of range [0x%" PRIx64 ", +%" PRIu64 ") holds 0x%02x in the "
	       "target's file, expected 0x%02x\n", "FAIL",
	       check_name("oracle"), g_commit.index, g_commit.what,
	       fi_pmem_method_str(g_commit.announced), at, p->addr, p->len,
	       got, want);
	fflush(stdout);
	exit(EXIT_UNCOVERED);
}

static void visibility_check_commit(void)
{
	const struct pend_list *pl = &g_s.pending[g_commit.region];
	const uint8_t *file = g_target_map + region_file_off(g_commit.region);
	const uint8_t *want = g_shadow[g_commit.region];
	uint64_t base = rma_addr(g_commit.region, 0);

	for (size_t i = 0; i < pl->n; i++) {
		const struct pend *p = &pl->v[i];

		for (uint64_t off = p->addr - base; off < p->addr - base + p->len;
		     off++)
			if (file[off] != want[off])
				visibility_violation(p, base + off, file[off],
						     want[off]);
	}
	g_s.ranges_visible += (unsigned)pl->n;
}

/*
 * The method the provider must use for a key whose profile is known:
 * pmv_method.c's matrix, restated as a table, one row per profile (a
 * profile not in it goes to the agent and has no flush method).  Columns:
 * FI_PMEMVERBS_METHOD auto over the tcp core and over verbs, then forced
 * read_flush, then forced completion over tcp and over verbs; NONE: the
 * forced method cannot serve the profile (the commit must fail).
 */
struct method_row {
	uint32_t profile;
	enum fi_pmem_method auto_tcp, auto_verbs, read_flush;
	enum fi_pmem_method completion_tcp, completion_verbs;
};

#define M_AG FI_PMEM_METHOD_AGENT
#define M_RF FI_PMEM_METHOD_READ_FLUSH
#define M_CM FI_PMEM_METHOD_COMPLETION
#define M_NO FI_PMEM_METHOD_NONE

static const struct method_row k_method_matrix[] = {
	/* profile                 auto tcp, verbs  read_flush  completion */
	{ FI_PMEM_PROFILE_PAGE,     M_AG, M_AG,     M_NO,       M_NO, M_NO },
	{ FI_PMEM_PROFILE_DMP,      M_AG, M_AG,     M_NO,       M_NO, M_NO },
	{ FI_PMEM_PROFILE_MHP,      M_RF, M_RF,     M_RF,       M_NO, M_NO },
	{ FI_PMEM_PROFILE_WSP,      M_RF, M_CM,     M_RF,       M_NO, M_CM },
	{ FI_PMEM_PROFILE_VOLATILE, M_RF, M_RF,     M_RF,       M_NO, M_NO },
};

static const struct method_row k_method_other = {
	FI_PMEM_PROFILE_UNKNOWN, M_AG, M_AG, M_NO, M_NO, M_NO
};

#undef M_AG
#undef M_RF
#undef M_CM
#undef M_NO

/* The row of k_method_matrix for profile. */
static const struct method_row *method_row(uint32_t profile)
{
	for (size_t i = 0; i < ARRAY_LEN(k_method_matrix); i++)
		if (k_method_matrix[i].profile == profile)
			return &k_method_matrix[i];
	return &k_method_other;
}

/*
 * The method a commit must take: forced send always; the agent while the
 * key's profile is unknown, for FI_IMMED, when forced, and over tcp with
 * joined requests (the fastest for every profile there); otherwise the
 * table's cell.
 */
enum fi_pmem_method expected_method(uint32_t profile, bool known,
				    bool immed)
{
	const char *forced = getenv("FI_PMEMVERBS_METHOD");
	bool verbs = !strcmp(g_net.pmem->core_prov(g_net.domain), "verbs");
	const struct method_row *row = method_row(profile);

	if (forced && !strcmp(forced, "send"))
		return FI_PMEM_METHOD_SEND;
	if (!known || immed)
		return FI_PMEM_METHOD_AGENT;
	if (forced && *forced && strcmp(forced, "auto")) {
		if (!strcmp(forced, "agent"))
			return FI_PMEM_METHOD_AGENT;
		if (!strcmp(forced, "read_flush"))
			return row->read_flush;
		return verbs ? row->completion_verbs : row->completion_tcp;
	}
	if (!verbs && join_request_on())
		return FI_PMEM_METHOD_AGENT;
	return verbs ? row->auto_verbs : row->auto_tcp;
}

/*
 * Whether a commit of len bytes, fenced or not, to a key whose scope holds
 * earlier writes (scoped) must travel by send: the matrix gives the agent
 * (send when forced) and a fence turns it into send (unless the agent is
 * forced), when the request slot holds the header, the data's extent, the
 * data and one extent of the scope (pmv_proto.h, restated).
 */
bool expected_send(enum fi_pmem_method m, bool fence, size_t len,
			  bool scoped)
{
	const char *forced = getenv("FI_PMEMVERBS_METHOD");
	bool auto_mode = !forced || !*forced || !strcmp(forced, "auto");
	size_t slot = (g_net.inject_size < 256 ? g_net.inject_size : 256) &
		      ~(size_t)15;
	size_t need = 40 + 16 + len + (scoped ? 16 : 0);

	if (!len || need > slot)
		return false;
	return m == FI_PMEM_METHOD_SEND ||
	       (m == FI_PMEM_METHOD_AGENT && fence && auto_mode);
}

/* The commit used (flushed: no agent) the method the matrix gives. */
static void check_commit_method(bool flushed)
{
	uint32_t profile = g_s.reg[g_commit.region].profile;
	enum fi_pmem_method want = expected_method(profile,
						   g_commit.profile_known,
						   g_commit.immed);
	enum fi_pmem_method said = expected_method(profile,
						   g_commit.profile_known,
						   false);

	bool want_flush = want == FI_PMEM_METHOD_READ_FLUSH ||
			  want == FI_PMEM_METHOD_COMPLETION;

	g_s.flush_commits += flushed;
	if (flushed == want_flush && g_commit.announced == said)
		return;
	if (g_s.method_errors++)
		return;
	snprintf(g_s.method_detail, sizeof(g_s.method_detail), "commit #%u "
		 "(%s) to a %s region: expected method %s (announced %s) got "
		 "%s (announced %s)", g_commit.index, g_commit.what,
		 profile_name(profile), fi_pmem_method_str(want),
		 fi_pmem_method_str(said),
		 flushed ? "read_flush or completion" : "agent",
		 fi_pmem_method_str(g_commit.announced));
}

/* Checks a completed commit by the evidence its method leaves. */
void check_commit_durable(void)
{
	bool flushed = main_counters().flush_ops > g_commit.flush_before;

	check_commit_method(flushed);
	if (!flushed) {
		if (g_log)
			oracle_check_commit();
		return;
	}
	if (!g_target_map || !g_shadow[g_commit.region])
		die("commit #%u (%s) completed without the agent: pass -F "
		    "(the target's region file) to check it", g_commit.index,
		    g_commit.what);
	/* with FI_FENCE too: the earlier writes' ranges are in the list */
	visibility_check_commit();
}

/* ---- the workload's final verdicts (run_workload) ---- */

/* Every commit completed once, with flags FI_RMA|FI_WRITE; no stray. */
void check_commits(void)
{
	bool ok = !g_s.bad_commit_flags && !g_unexpected;

	if (ok)
		verdict(true, check_name("commits"), "%u commits completed "
			"once each, flags FI_RMA|FI_WRITE", g_s.commits);
	else if (g_s.bad_commit_flags)
		verdict(false, check_name("commits"), "expected flags 0x%llx "
			"got 0x%" PRIx64 " (%u commits)",
			(unsigned long long)COMMIT_FLAGS, g_s.first_bad_flags,
			g_s.bad_commit_flags);
	else
		verdict(false, check_name("commits"), "expected no stray "
			"completion got %u (%s)", g_unexpected,
			g_unexpected_what);
}

/* The endpoint's counters must agree with what the test saw. */
void check_counters(void)
{
	struct fi_pmem_ep_counters c = { 0 };
	int ret = g_net.pmem->ep_counters(g_s.main.ep, &c);
	bool ok = !ret && c.commits == g_s.commits && !c.commit_errors &&
		  c.requests_sent + c.flush_ops >= g_s.commits &&
		  c.flush_ops >= g_s.flush_commits;

	if (ok)
		verdict(true, check_name("counters"), "commits=%" PRIu64
			" commit_errors=0 requests_sent=%" PRIu64 " flush_ops=%"
			PRIu64 ", as the test saw", c.commits, c.requests_sent,
			c.flush_ops);
	else
		verdict(false, check_name("counters"), "expected commits=%u "
			"commit_errors=0 requests_sent+flush_ops>=%u flush_ops>="
			"%u got commits=%" PRIu64 " commit_errors=%" PRIu64
			" requests_sent=%" PRIu64 " flush_ops=%" PRIu64 "%s",
			g_s.commits, g_s.commits, g_s.flush_commits, c.commits,
			c.commit_errors, c.requests_sent, c.flush_ops,
			ret ? " (ep_counters failed)" : "");
}

/* Before a key's first commit: the agent (send when forced), or with the
 * target's table read, the method of the profile it names. */
void check_method(void)
{
	expect_u64("method",
		   g_net.pmem->method(g_s.main.ep, g_s.reg[REG_A].key),
		   expected_method(g_s.reg[REG_A].profile, pushes_on(), false),
		   "method before the first commit (FI_PMEM_METHOD_AGENT is "
		   "1, FI_PMEM_METHOD_READ_FLUSH 2, FI_PMEM_METHOD_SEND 4)");
}

/*
 * Each FI_IMMED completion must come after durability: the ranges of its
 * commit must be covered by records the log already had when the target
 * read the completion.  (Reading late can only hide, never invent, a
 * violation.)
 */
void check_immed_timing(const struct report *rep)
{
	size_t n = rep->nimmed < MAX_IMMED ? rep->nimmed : MAX_IMMED;

	for (size_t i = 0; i < g_s.n_immed_scopes; i++) {
		const struct immed_scope *sc = &g_s.immed_scopes[i];
		uint64_t key = g_s.reg[sc->region].key, at, hole;

		if (sc->index >= n)
			continue; /* count mismatch: reported by "immed" */
		at = rep->immed[sc->index].log_count;
		hole = oracle_first_hole(key, sc->p.addr, sc->p.len, sc->p.mark,
					 at);
		if (hole < sc->p.addr + sc->p.len) {
			verdict(false, check_name("immed-after-durability"),
				"expected FI_IMMED #%zu to reach the target "
				"after its commit was durable got byte 0x%"
				PRIx64 " of [0x%" PRIx64 ", +%" PRIu64 ") not "
				"persisted when the target read it (log had %"
				PRIu64 " records)", sc->index, hole, sc->p.addr,
				sc->p.len, at);
			return;
		}
	}
	verdict(true, check_name("immed-after-durability"), "all %zu ranges "
		"of FI_IMMED commits were persisted before the target read "
		"the completion", g_s.n_immed_scopes);
}
