/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_ct_ops.c - Operations in flight: their contexts, CQ dispatch and
 * progress, and the control channel the two roles talk over.
 */

#include "pmv_ct.h"

struct op g_ops[MAX_OPS];

/* The first stray completion, and how many there were. */
unsigned g_unexpected;
char g_unexpected_what[256];

/* Called for an FI_REMOTE_CQ_DATA entry (target only). */
void (*g_on_immed)(const struct fi_cq_data_entry *e);

/* Received control messages, in arrival order. */
static struct op *g_rxq[CTL_RECVS];
size_t g_rxq_head, g_rxq_count;

struct op *op_alloc(enum op_kind kind, struct conn *c)
{
	for (size_t i = 0; i < MAX_OPS; i++) {
		if (g_ops[i].kind == OP_FREE) {
			g_ops[i] = (struct op){ .kind = kind, .busy = true,
						.conn = c };
			return &g_ops[i];
		}
	}
	die("internal: more than %d operations in flight", MAX_OPS);
}

void op_free(struct op *op)
{
	op->kind = OP_FREE;
	op->busy = false;
}

/* The op a completion names, or NULL if it names none of ours. */
static struct op *op_of(void *context)
{
	uintptr_t p = (uintptr_t)context, base = (uintptr_t)g_ops;

	if (p < base || p >= base + sizeof(g_ops) ||
	    (p - base) % sizeof(struct op))
		return NULL;
	return (struct op *)context;
}

const char *g_case = "-"; /* the bad-input case running */

/* Records a completion nobody asked for (the first one is kept). */
void note_unexpected(const char *fmt, ...)
{
	va_list ap;
	int n;

	if (g_unexpected++)
		return;
	n = snprintf(g_unexpected_what, sizeof(g_unexpected_what),
		     "during %s: ", g_case);
	va_start(ap, fmt);
	vsnprintf(g_unexpected_what + n, sizeof(g_unexpected_what) - (size_t) n,
		  fmt, ap);
	va_end(ap);
	fprintf(stderr, "unexpected completion: %s\n", g_unexpected_what);
}

/* Marks op complete (once) and runs what waits for it. */
static void op_complete(struct op *op, uint64_t flags, size_t len)
{
	if (!op->busy) {
		note_unexpected("op %p (kind %d) completed twice", (void *)op,
				op->kind);
		return;
	}
	op->busy = false;
	op->flags = flags;
	op->len = len;
	if (op->kind == OP_RECV && op->err == FI_ECANCELED)
		return; /* the endpoint is closing: not a message */
	if (op->kind == OP_RECV) {
		if (g_rxq_count == CTL_RECVS)
			die("internal: control receive queue overflow");
		g_rxq[(g_rxq_head + g_rxq_count++) % CTL_RECVS] = op;
	}
	if (op->on_done)
		op->on_done(op);
	if (op->autofree)
		op_free(op);
}

static void dispatch(const struct fi_cq_data_entry *e)
{
	struct op *op = op_of(e->op_context);
	struct sop *s = sop_of(e->op_context);

	if (!e->op_context && (e->flags & FI_REMOTE_CQ_DATA) && g_on_immed) {
		g_on_immed(e);
		return;
	}
	if (s) {
		sop_complete(s, e->flags, 0, NULL);
		return;
	}
	if (!op || op->kind == OP_FREE) {
		note_unexpected("context %p flags 0x%" PRIx64 " data 0x%" PRIx64,
				e->op_context, e->flags, e->data);
		return;
	}
	op_complete(op, e->flags, e->len);
}

/*
 * Reads one error entry; the op it names completes with the error.  False
 * if there was none, though fi_cq_read said -FI_EAVAIL (a stray, noted).
 */
static bool dispatch_error(struct fid_cq *cq)
{
	struct fi_cq_err_entry err = { 0 };
	const char *text;
	struct op *op;
	ssize_t ret = fi_cq_readerr(cq, &err, 0);

	if (ret != 1) {
		note_unexpected("fi_cq_read said -FI_EAVAIL but fi_cq_readerr "
				"returned %s", errname(ret));
		return false;
	}
	op = op_of(err.op_context);
	text = fi_cq_strerror(cq, err.prov_errno, err.err_data, NULL, 0);
	if (sop_of(err.op_context)) {
		sop_complete(sop_of(err.op_context), err.flags,
			     err.err ? err.err : -1, text ? text : "");
		return true;
	}
	if (!op || op->kind == OP_FREE || !op->busy) {
		note_unexpected("error entry for context %p: %s (%s)",
				err.op_context, errname(err.err),
				text ? text : "no text");
		return true;
	}
	op->err = err.err ? err.err : -1;
	op->prov_errno = err.prov_errno;
	snprintf(op->errtext, sizeof(op->errtext), "%s", text ? text : "");
	op_complete(op, err.flags, err.len);
	return true;
}

/*
 * Hands what a read or wait of cq returned (n, the n entries in e) to the
 * operations; true if it had anything.  Nothing yet (-FI_EAGAIN, a wait's
 * -FI_ETIMEDOUT or -FI_EINTR): false; another error ends the run.
 */
bool dispatch_read(struct fid_cq *cq, ssize_t n,
		   const struct fi_cq_data_entry *e)
{
	if (n == -FI_EAGAIN || n == -FI_ETIMEDOUT || n == -FI_EINTR)
		return false;
	if (n == -FI_EAVAIL)
		return dispatch_error(cq);
	if (n < 0)
		die("reading a CQ: %s", errname(n));
	for (ssize_t i = 0; i < n; i++)
		dispatch(&e[i]);
	return true;
}

/* Reads what one CQ has; true if it had anything. */
bool progress_cq(struct fid_cq *cq)
{
	struct fi_cq_data_entry e[16];

	return dispatch_read(cq, fi_cq_read(cq, e, ARRAY_LEN(e)), e);
}

/* Polls every CQ and watched EQ once; true if anything happened. */
bool progress(void)
{
	bool any = poll_watched_eqs();

	for (size_t i = 0; i < g_ncqs; i++)
		any |= progress_cq(g_cqs[i]);
	return any;
}

/* Progresses until *flag is set (bounded); what names it for the error. */
void wait_flag(const bool *flag, const char *what)
{
	int64_t deadline = deadline_in(STEP_MS);

	while (!*flag) {
		if (progress())
			continue;
		if (!before(deadline))
			die("%s: nothing within %d ms", what, STEP_MS);
		pause_briefly();
	}
}

/* Progresses until op completes or STEP_MS passes; false on timeout. */
bool op_wait(struct op *op)
{
	int64_t deadline = deadline_in(STEP_MS);

	while (op->busy) {
		if (progress())
			continue;
		if (!before(deadline))
			return false;
		pause_briefly();
	}
	return true;
}

void op_wait_or_die(struct op *op, const char *what)
{
	if (!op_wait(op))
		die("%s: no completion within %d ms", what, STEP_MS);
}

/* Reads the CQs for a moment, so that stray entries are noticed. */
void drain_cqs(void)
{
	int64_t deadline = deadline_in(DRAIN_MS);

	while (before(deadline))
		if (!progress())
			pause_briefly();
}

struct ctl g_ctl;

static void ctl_post_recv(struct op *op)
{
	ssize_t ret;

	op->busy = true;
	POST(ret, fi_recv(g_ctl.c->ep, op->buf, CTL_SIZE, g_ctl.rdesc, 0,
			  &op->fictx));
	if (ret)
		die("fi_recv: %s", errname(ret));
}

/* Sets up c as the control connection and posts its receives. */
void ctl_init(struct conn *c)
{
	g_ctl.c = c;
	g_ctl.sbuf = calloc(1, CTL_SIZE);
	g_ctl.rbuf = calloc(CTL_RECVS, CTL_SIZE);
	if (!g_ctl.sbuf || !g_ctl.rbuf)
		die("out of memory");
	g_ctl.sdesc = local_desc(g_ctl.sbuf, CTL_SIZE, &g_ctl.smr);
	g_ctl.rdesc = local_desc(g_ctl.rbuf, (size_t)CTL_RECVS * CTL_SIZE,
				 &g_ctl.rmr);
	for (size_t i = 0; i < CTL_RECVS; i++) {
		struct op *op = op_alloc(OP_RECV, c);

		op->buf = g_ctl.rbuf + i * CTL_SIZE;
		ctl_post_recv(op);
	}
}

/* Sends one message and waits for its send completion. */
void ctl_send(uint32_t type, const void *payload, size_t len)
{
	struct msg_hdr hdr = { .magic = CTL_MAGIC, .type = type,
			       .len = (uint32_t)len };
	struct op *op = op_alloc(OP_SEND, g_ctl.c);
	ssize_t ret;

	if (len + sizeof(hdr) > CTL_SIZE)
		die("internal: message of %zu bytes is too large", len);
	memcpy(g_ctl.sbuf, &hdr, sizeof(hdr));
	if (len)
		memcpy(g_ctl.sbuf + sizeof(hdr), payload, len);
	POST(ret, fi_send(g_ctl.c->ep, g_ctl.sbuf, sizeof(hdr) + len,
			  g_ctl.sdesc, 0, &op->fictx));
	if (ret)
		die("fi_send(message %u): %s", type, errname(ret));
	op_wait_or_die(op, "sending a control message");
	if (op->err)
		die("sending message %u: %s (%s)", type, errname(op->err),
		    op->errtext);
	op_free(op);
}

/* The oldest received message, or NULL; release it with ctl_release. */
struct op *ctl_peek(void)
{
	if (!g_rxq_count)
		return NULL;
	return g_rxq[g_rxq_head];
}

const struct msg_hdr *msg_hdr(const struct op *op)
{
	const struct msg_hdr *h = (const void *)op->buf;

	if (op->err)
		die("control receive failed: %s (%s)", errname(op->err),
		    op->errtext);
	if (op->len < sizeof(*h) || h->magic != CTL_MAGIC ||
	    h->len + sizeof(*h) != op->len)
		die("malformed control message (%zu bytes)", op->len);
	return h;
}

/* Gives the oldest message's buffer back to the receive queue. */
void ctl_release(void)
{
	struct op *op = g_rxq[g_rxq_head];

	g_rxq_head = (g_rxq_head + 1) % CTL_RECVS;
	g_rxq_count--;
	ctl_post_recv(op);
}

/*
 * Drops the oldest message without posting its buffer again: after the
 * last message of a session, whose peer may close at once.  libfabric
 * 2.x's tcp does not give back the receives it flushes at disconnection,
 * so a receive posted then is -FI_EAGAIN for good.
 */
void ctl_release_last(void)
{
	g_rxq_head = (g_rxq_head + 1) % CTL_RECVS;
	g_rxq_count--;
}

/* Waits (bounded) for the next message, which must be of this type. */
const void *ctl_expect(uint32_t type, size_t min_len, size_t *len)
{
	int64_t deadline = deadline_in(STEP_MS);
	const struct msg_hdr *h;
	struct op *op;

	while (!(op = ctl_peek())) {
		if (!progress() && !before(deadline))
			die("no control message %u within %d ms", type, STEP_MS);
		pause_briefly();
	}
	h = msg_hdr(op);
	if (h->type != type || h->len < min_len)
		die("expected control message %u (>= %zu bytes), got %u (%u)",
		    type, min_len, h->type, h->len);
	if (len)
		*len = h->len;
	return h + 1;
}
