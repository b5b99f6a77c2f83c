/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_ct_sc.c - Scenarios: the shared harness (scenario operations, their
 * posting, completion and verdicts).
 */

#include "pmv_ct.h"

/* Kinds whose completion is checked as a commit's (visible, oracle). */
static bool sop_checked(enum sop_kind kind)
{
	return kind == SOP_COMMIT || kind == SOP_DELIVERY ||
	       kind == SOP_DEFAULT;
}

/* What a completion showed (bits of sop.bad). */
enum { BAD_DUP = 1, BAD_FLAGS = 2, BAD_NOT_VISIBLE = 4, BAD_NOT_COVERED = 8,
       BAD_NOT_POSTED = 16 };

struct sc_state g_sc;

struct sop *sop_of(void *context)
{
	uintptr_t p = (uintptr_t)context, base = (uintptr_t)g_sc.ops;

	if (!g_sc.ops || p < base || p >= base + g_sc.cap * sizeof(struct sop) ||
	    (p - base) % sizeof(struct sop))
		return NULL;
	return (struct sop *)context;
}

/* Room for nops operations and buf_len bytes of data (FI_MR_LOCAL). */
void sc_setup(size_t nops, size_t buf_len)
{
	g_sc.ops = calloc(nops, sizeof(*g_sc.ops));
	g_sc.cap = nops;
	g_sc.buf_len = buf_len;
	if (!g_sc.ops || posix_memalign((void **)&g_sc.buf, 4096, buf_len))
		die("out of memory");
	memset(g_sc.buf, 0, buf_len);
	g_sc.desc = local_desc(g_sc.buf, buf_len, &g_sc.mr);
	if (!g_target_map)
		die("scenarios check the target's file: pass -F");
}

/* Takes len bytes of the data buffer (4 KiB aligned). */
uint8_t *sc_bytes(size_t len)
{
	uint8_t *p = g_sc.buf + g_sc.buf_used;

	g_sc.buf_used += (len + 4095) & ~(size_t)4095;
	if (g_sc.buf_used > g_sc.buf_len)
		die("internal: scenario buffer too small");
	return p;
}

/* A new operation; a commit's data is generated into data now. */
struct sop *sop_new(enum sop_kind kind, unsigned owner,
			   enum region_id region, uint64_t off, size_t len,
			   uint8_t *data)
{
	struct sop *s;

	if (g_sc.nops == g_sc.cap)
		die("internal: more than %zu scenario operations", g_sc.cap);
	s = &g_sc.ops[g_sc.nops++];
	*s = (struct sop){ .kind = kind, .owner = owner, .round = g_sc.round,
			   .region = region, .off = off, .len = len,
			   .data = data };
	if (kind != SOP_READ)
		gen_fill(data, len, (g_opt.seed << 40) ^ (uint64_t)g_sc.nops *
				    0x9e3779b1u, off);
	return s;
}

const char *sop_str(const struct sop *s)
{
	static char buf[160];

	snprintf(buf, sizeof(buf), "%s #%zu (endpoint %u) of %zu bytes %s %s "
		 "at offset %" PRIu64, s->kind == SOP_COMMIT ? "commit" :
		 s->kind == SOP_WRITE ? "write" :
		 s->kind == SOP_DELIVERY ? "FI_DELIVERY_COMPLETE write" :
		 s->kind == SOP_DEFAULT ? "default-op_flags write" : "read",
		 (size_t)(s - g_sc.ops), s->owner, s->len,
		 s->kind == SOP_COMMIT ? "to" : "from", k_regions[s->region].name,
		 s->off);
	return buf;
}

/* True if the oracle has records, appended since s was posted, covering
 * every byte of s (the agent persisted them); *hole: first byte not. */
bool sop_covered(const struct sop *s, uint64_t *hole)
{
	uint64_t addr = rma_addr(s->region, s->off);
	uint64_t h;

	if (!g_log)
		die("this scenario checks the persistence oracle: pass -o, "
		    "and FI_PMEMVERBS_ORACLE to the target");
	h = oracle_first_hole(g_s.reg[s->region].key, addr, s->len, s->mark,
			      oracle_count());

	if (hole)
		*hole = h;
	return h >= addr + s->len;
}

/*
 * At a commit's completion: flags FI_RMA|FI_WRITE, its bytes in the
 * target's file (unless a later round rewrote them: late) and, for agent
 * profiles, in the oracle.
 */
static void sop_check_commit(struct sop *s)
{
	const uint8_t *file = g_target_map + region_file_off(s->region) + s->off;
	uint64_t addr = rma_addr(s->region, s->off);

	if ((s->flags & OP_CLASS_FLAGS) != COMMIT_FLAGS)
		s->bad |= BAD_FLAGS;
	s->late = s->round != g_sc.round;
	if (!s->late && memcmp(file, s->data, s->len)) {
		size_t i = 0;

		while (i < s->len && file[i] == s->data[i])
			i++;
		s->bad |= BAD_NOT_VISIBLE;
		s->hole = addr + i;
	}
	if (s->oracle && !sop_covered(s, s->bad ? NULL : &s->hole))
		s->bad |= BAD_NOT_COVERED;
}

void sop_complete(struct sop *s, uint64_t flags, int err,
			 const char *text)
{
	if (!s->posted)
		s->bad |= BAD_NOT_POSTED;
	if (s->ncomp++) {
		s->bad |= BAD_DUP;
		return;
	}
	g_sc.ndone++;
	s->flags = flags;
	s->err = err;
	if (err)
		snprintf(s->errtext, sizeof(s->errtext), "%s", text ? text : "");
	else if (sop_checked(s->kind))
		sop_check_commit(s);
	if (g_sc.on_done)
		g_sc.on_done(s);
}

/* Posts s on ep (a commit with FI_COMMIT_COMPLETE | flags); 0 or error. */
ssize_t sop_post(struct fid_ep *ep, struct sop *s, uint64_t flags,
			uint64_t data)
{
	struct iovec iov = { s->data, s->len };
	void *desc = g_sc.desc;
	struct fi_rma_iov rma = { rma_addr(s->region, s->off), s->len,
				  g_s.reg[s->region].key };
	struct fi_msg_rma msg = { .msg_iov = &iov, .desc = &desc,
				  .iov_count = 1, .rma_iov = &rma,
				  .rma_iov_count = 1, .context = &s->fictx,
				  .data = data };
	ssize_t ret;

	s->mark = oracle_count();
	if (s->kind == SOP_COMMIT)
		ret = fi_writemsg(ep, &msg, FI_COMMIT_COMPLETE | flags);
	else if (s->kind == SOP_WRITE || s->kind == SOP_DELIVERY)
		ret = fi_writemsg(ep, &msg, FI_COMPLETION | /* placed */
				  FI_DELIVERY_COMPLETE | flags);
	else if (s->kind == SOP_DEFAULT)
		ret = fi_write(ep, s->data, s->len, desc, 0, rma.addr, rma.key,
			       &s->fictx);
	else
		ret = fi_readmsg(ep, &msg, FI_COMPLETION);
	if (!ret) {
		s->posted = true;
		g_sc.nposted++;
	}
	return ret;
}

/* Reads the main CQs and cq (if any) once; true if anything came. */
static bool sc_poll(struct fid_cq *cq)
{
	bool any = progress();

	if (cq)
		any |= progress_cq(cq);
	return any;
}

/* Posts s, retrying (bounded) while the provider says -FI_EAGAIN, with the
 * CQs read meanwhile: back-pressure, not an error. */
void sop_post_retry(struct fid_ep *ep, struct sop *s, uint64_t flags,
			   uint64_t data, struct fid_cq *cq)
{
	int64_t deadline = deadline_in(STEP_MS);
	ssize_t ret;

	while ((ret = sop_post(ep, s, flags, data)) == -FI_EAGAIN &&
	       before(deadline)) {
		g_sc.eagain++;
		if (!sc_poll(cq))
			pause_briefly();
	}
	if (ret)
		die("posting %s: %s (%zd)", sop_str(s), errname(ret), ret);
}

/* Operations in [from, to) posted and not completed yet. */
static size_t sc_pending(size_t from, size_t to)
{
	size_t n = 0;

	for (size_t i = from; i < to; i++)
		n += g_sc.ops[i].posted && !g_sc.ops[i].ncomp;
	return n;
}

/* Reads the CQs until every operation in [from, nops) completed or ms
 * pass; returns how many did not. */
size_t sc_wait(size_t from, struct fid_cq *cq, int ms)
{
	int64_t deadline = deadline_in(ms);
	size_t left = sc_pending(from, g_sc.nops);

	while (left && before(deadline)) {
		if (sc_poll(cq))
			left = sc_pending(from, g_sc.nops);
		else
			pause_briefly();
	}
	return left;
}

/* Reads the CQs for a moment: late or duplicate entries show up. */
void sc_drain(struct fid_cq *cq)
{
	int64_t deadline = deadline_in(DRAIN_MS);

	while (before(deadline))
		if (!sc_poll(cq))
			pause_briefly();
}

/* Opens c on the given CQs with an EQ of its own, enabled and watched. */
void sc_conn_open(struct conn *c, struct fid_cq *tx, struct fid_cq *rx)
{
	*c = (struct conn){ 0 };
	conn_open_on(c, g_net.info, open_eq(), tx, rx);
	CHECK(fi_enable(c->ep));
	watch_conn(c, true);
}

/* The agent persists commits to regions of this profile (the oracle
 * records them); MHP commits may use read_flush (over verbs, or over tcp
 * without joined requests), which it does not. */
bool agent_profile(uint32_t profile)
{
	return profile == FI_PMEM_PROFILE_PAGE ||
	       profile == FI_PMEM_PROFILE_DMP;
}

struct sc_sum sc_sum(bool (*pick)(const struct sop *s))
{
	struct sc_sum m = { 0 };

	for (size_t i = 0; i < g_sc.nops; i++) {
		const struct sop *s = &g_sc.ops[i];

		if (!pick(s))
			continue;
		m.n++;
		m.posted += s->posted;
		if (s->posted && !s->ncomp && !m.lost++)
			m.first_lost = s;
		if (s->ncomp && s->err && !m.errors++)
			m.first_err = s;
		m.ok += s->ncomp && !s->err;
		m.dups += !!(s->bad & BAD_DUP);
		m.bad_flags += !!(s->bad & BAD_FLAGS);
		m.not_posted += !!(s->bad & BAD_NOT_POSTED);
		m.not_visible += !!(s->bad & BAD_NOT_VISIBLE);
		m.not_covered += !!(s->bad & BAD_NOT_COVERED);
		m.covered += s->oracle && s->ncomp && !s->err &&
			     !(s->bad & BAD_NOT_COVERED);
		m.late += s->late;
		if (s->bad && !m.first_bad)
			m.first_bad = s;
	}
	return m;
}

/* Text for the first problem of a sum, for a FAIL line. */
const char *sc_problem(const struct sc_sum *m)
{
	static char buf[400];
	const struct sop *s = m->first_bad;

	if (s && (s->bad & (BAD_DUP | BAD_NOT_POSTED)))
		snprintf(buf, sizeof(buf), "%s completed %u times%s", sop_str(s),
			 s->ncomp, s->posted ? "" : " without being posted");
	else if (s && (s->bad & BAD_FLAGS))
		snprintf(buf, sizeof(buf), "%s completed with flags 0x%" PRIx64
			 ", expected FI_RMA|FI_WRITE", sop_str(s), s->flags);
	else if (s && (s->bad & BAD_NOT_VISIBLE))
		snprintf(buf, sizeof(buf), "%s completed while byte 0x%" PRIx64
			 " was not yet in the target's file", sop_str(s),
			 s->hole);
	else if (s)
		snprintf(buf, sizeof(buf), "%s completed while byte 0x%" PRIx64
			 " was not covered by any oracle record (the agent had "
			 "not persisted it)", sop_str(s), s->hole);
	else if (m->first_err)
		snprintf(buf, sizeof(buf), "%s failed: %s (%s)",
			 sop_str(m->first_err), errname(m->first_err->err),
			 m->first_err->errtext);
	else if (m->first_lost)
		snprintf(buf, sizeof(buf), "%s never completed",
			 sop_str(m->first_lost));
	else
		snprintf(buf, sizeof(buf), "no problem");
	return buf;
}

/* Every picked operation completed exactly once, successfully, with the
 * right flags (errors_ok: or with an error). */
void sc_verdict_once(const char *check, const struct sc_sum *m,
			    bool errors_ok)
{
	bool ok = !m->lost && !m->dups && !m->not_posted && !m->bad_flags &&
		  (errors_ok || !m->errors);

	if (ok)
		verdict(true, check_name(check), "%u operations, each completed "
			"exactly once with its own context%s (%u retried posts "
			"after -FI_EAGAIN)", m->posted,
			errors_ok ? "" : ", successfully", g_sc.eagain);
	else
		verdict(false, check_name(check), "expected each of %u "
			"operations to complete exactly once%s got %u lost, %u "
			"duplicated, %u failed, %u with wrong flags; first: %s",
			m->posted, errors_ok ? "" : " successfully", m->lost,
			m->dups, m->errors, m->bad_flags, sc_problem(m));
}

/* Every picked commit was durable (visible, covered) when read. */
void sc_verdict_durable(const char *check, const struct sc_sum *m)
{
	if (!m->not_visible && !m->not_covered)
		verdict(true, check_name(check), "%u completions read, each "
			"with its bytes in the target's file%s (%u covered by "
			"the oracle)", m->ok, m->covered ? " and persisted" : "",
			m->covered);
	else
		verdict(false, check_name(check), "expected every completion "
			"to follow durability got %u not in the target's file, "
			"%u not persisted; first: %s", m->not_visible,
			m->not_covered, sc_problem(m));
}

/* No completion named a context that is none of ours (or none at all). */
void sc_verdict_strays(const char *check)
{
	verdict(!g_unexpected, check_name(check), "%s%u%s%s",
		g_unexpected ? "expected no entry without one of our contexts "
			       "got " : "", g_unexpected,
		g_unexpected ? ": " : " entries with a context not ours or "
				      "NULL",
		g_unexpected ? g_unexpected_what : "");
}

/* Idle gaps before the timed commits of a wait scenario, and how many
 * commits follow each (SC_GAPPED_COMMITS in all). */
static const int k_gap_idle_ms[] = { 0, 2, 100, 1000 };
static const unsigned k_gap_commits[] = { 12, 12, 4, 1 };

/* A commit of a wait scenario, i of them: 64 B (even i) or 4 KiB in a
 * slot of pmem-a of its own, checked by the oracle where the agent
 * persists; made after sleeping idle_ms. */
struct sop *sc_gapped_sop(unsigned i, int idle_ms)
{
	size_t len = i % 2 ? 4096 : 64;
	struct sop *s;

	s = sop_new(SOP_COMMIT, 0, REG_A, (uint64_t)g_sc.nops * 8192 + 8 * (i % 8),
		    len, sc_bytes(len));
	s->oracle = agent_profile(g_s.want_profile);
	sleep_ms(idle_ms);
	return s;
}

static int cmp_us(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/*
 * Verdict check on n timed commits of a wait scenario (us, their times,
 * sorted here; idle_ms, the idle gap before each, or NULL): at most
 * SC_GAPPED_SLOW_OK over SC_GAPPED_BOUND_MS (a watchdog, not a timing
 * goal), with the median and the slowest; what says which commits.
 */
void sc_gapped_verdict(const char *check, const char *what, int64_t *us,
		       const int *idle_ms, unsigned n)
{
	unsigned slow = 0, worst = 0;
	char after[40] = "";
	int64_t worst_us;

	for (unsigned i = 0; i < n; i++) {
		slow += us[i] > SC_GAPPED_BOUND_MS * 1000;
		worst = us[i] > us[worst] ? i : worst;
	}
	worst_us = us[worst];
	if (idle_ms)
		snprintf(after, sizeof(after), " (after %d ms idle)",
			 idle_ms[worst]);
	qsort(us, n, sizeof(us[0]), cmp_us);
	verdict(slow <= SC_GAPPED_SLOW_OK, check_name(check), "%s%u of %u "
		"commits (%s) took over %d ms; median %.2f ms, the slowest "
		"%.1f ms%s", slow <= SC_GAPPED_SLOW_OK ? "" :
		"expected at most 1 got ", slow, n, what, SC_GAPPED_BOUND_MS,
		(double)us[n / 2] / 1000, (double)worst_us / 1000, after);
}

/*
 * The timed commits of one mode of a wait scenario: commit(arg, i,
 * idle_ms) makes commit i (from 1) after idle_ms and returns its time in
 * us; then sc_gapped_verdict on them.
 */
void sc_gapped_commits(const char *check, const char *mode,
		       int64_t (*commit)(void *arg, unsigned i, int idle_ms),
		       void *arg)
{
	int64_t us[SC_GAPPED_COMMITS];
	int idle[SC_GAPPED_COMMITS];
	unsigned n = 0;

	for (size_t k = 0; k < ARRAY_LEN(k_gap_idle_ms); k++)
		for (unsigned j = 0; j < k_gap_commits[k]; j++, n++) {
			idle[n] = k_gap_idle_ms[k];
			us[n] = commit(arg, n + 1, idle[n]);
		}
	sc_gapped_verdict(check, mode, us, idle, n);
}
