/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_threads_check.c - the initiator's checks: the target's file and the
 * oracle log mapped, each commit checked at its completion, and reaping.
 */
#include "pmv_threads.h"

/* ================================================================== */
/* Initiator: operations and the oracle                               */
/* ================================================================== */

struct worker g_w[MAX_THREADS];
struct conn g_conns[MAX_CONNS];
unsigned g_nconns;
struct fid_cq *g_cqs[MAX_CONNS];
unsigned g_ncqs;
const uint8_t *g_file;    /* the target's file, read-only */
const struct pmv_oracle_log *g_log;
static size_t g_log_cap;
bool g_need_oracle;       /* the agent persists every commit */
static unsigned g_checked_commits; /* atomic: for -X corrupt */
static unsigned g_strays;        /* atomic */
unsigned g_op_errors;     /* atomic: -X faults, error completions */
unsigned g_post_errors;   /* atomic: -X faults, refused posts */
unsigned g_foreign;       /* atomic: completions read by a thread
				  * other than their operation's owner */
_Thread_local const struct worker *t_self; /* the reading thread */

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

uint64_t slice_off(const struct worker *w)
{
	return (uint64_t)w->id * SLICE_LEN;
}

uint64_t rma_addr(uint64_t off)
{
	return g_opt.base + off;
}

/* An operation, described for a failure's message. */
const char *op_str(const struct op *op, char *buf, size_t len)
{
	snprintf(buf, len, "%s of %" PRIu32 " bytes at region offset %" PRIu64
		 " (thread %u, %s batch)",
		 op->kind == OP_COMMIT ? op->r.len ? "commit" : "pure flush" :
		 "write", op->r.len, op->r.off, op->batch->w->id,
		 op->post_flags & FI_FENCE ? "fenced" : "plain");
	return buf;
}

/* Maps the target's region file read-only (the initiator's view). */
void map_target_file(void)
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
void map_oracle(void)
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
uint64_t oracle_count(void)
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
bool reap(struct fid_cq *cq)
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
