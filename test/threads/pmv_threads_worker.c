/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_threads_worker.c - the initiator's worker threads: batches of plain
 * writes and a commit, posted, collected and drained.
 */
#include "pmv_threads.h"

static bool collect(struct worker *w);

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

pthread_barrier_t g_start;
bool g_running; /* the threads started together, not joined yet */

/* A thread: registers its buffer, starts with the others, runs. */
void *worker_main(void *arg)
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
