/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_crashlog_append.c - connecting to the target (its offer) and
 * the append role: records and tails posted, ACK lines.
 */
#include "pmv_crashlog.h"

/* -------------------------------------------------------- connecting */

void client_close(struct client *c)
{
	if (c->ep)
		fi_close(&c->ep->fid);
	if (c->av)
		fi_close(&c->av->fid);
	if (c->cq)
		fi_close(&c->cq->fid);
	c->ep = NULL;
	c->av = NULL;
	c->cq = NULL;
}

/* Closes the connection and everything client_connect opened. */
void client_free(struct client *c)
{
	client_close(c);
	if (c->wire_mr)
		fi_close(&c->wire_mr->fid);
	if (c->hello_mr)
		fi_close(&c->hello_mr->fid);
	c->wire_mr = NULL;
	c->hello_mr = NULL;
	fab_close(&c->f);
}

/* Decodes the offer that landed in c->wire; false if it is not one. */
static bool offer_decode(struct client *c)
{
	uint64_t *w = (uint64_t *)&c->off;

	memcpy(&c->off, &c->wire, sizeof(c->off));
	for (size_t i = 0; i < sizeof(c->off) / 8; i++)
		w[i] = le64toh(w[i]);
	return c->off.magic == OFFER_MAGIC;
}

/* Waits (bounded) for the target's offer, received on c->recv_ctx. */
int client_offer(struct client *c, int64_t end)
{
	struct fi_cq_entry e;
	struct fi_cq_err_entry err = { 0 };
	ssize_t n;

	while (before(end)) {
		n = fi_cq_sread(c->cq, &e, 1, NULL, 100);
		if (n == 1 && e.op_context == &c->recv_ctx)
			return offer_decode(c) ? 0 : -FI_EOTHER;
		if (n == -FI_EAVAIL) {
			fi_cq_readerr(c->cq, &err, 0);
			return -(err.err ? err.err : FI_EOTHER);
		}
	}
	return -FI_ETIMEDOUT;
}

/* One attempt; -FI_ECONNREFUSED while nobody listens. */
static int client_try(struct client *c)
{
	struct cm_event ev;
	int64_t end = deadline_in(STEP_MS);
	void *desc = c->wire_mr ? fi_mr_desc(c->wire_mr) : NULL;

	c->cq = cq_open(&c->f);
	c->ep = ep_open(&c->f, c->f.info, c->cq);
	CHECK(fi_recv(c->ep, &c->wire, sizeof(c->wire), desc, 0,
		      &c->recv_ctx));
	if (fi_connect(c->ep, c->f.info->dest_addr, NULL, 0))
		return -FI_ECONNREFUSED;
	while (before(end)) {
		if (!eq_wait(c->f.eq, 100, &ev))
			continue;
		if (ev.err)
			return -ev.err;
		if (ev.event == FI_CONNECTED) {
			c->connected = ev;
			return client_offer(c, end);
		}
	}
	return -FI_ETIMEDOUT;
}

/* Connects, retrying while refused, for up to seconds; the target's offer
 * is in c->off. */
int client_connect(struct client *c, const char *prov,
		   const char *addr, const char *port, long seconds)
{
	int64_t end = deadline_in((int)(seconds * 1000));
	int ret;

	*c = (struct client){ 0 };
	fab_open(&c->f, prov, addr, port, false, false);
	if (c->f.info->domain_attr->mr_mode & FI_MR_LOCAL)
		c->wire_mr = mr_register(&c->f, &c->wire, sizeof(c->wire),
					 FI_RECV, 0, false);
	for (;;) {
		ret = client_try(c);
		if (!ret)
			return 0;
		client_close(c);
		if (!before(end) || (ret != -FI_ECONNREFUSED &&
				     ret != -FI_ETIMEDOUT))
			return ret;
		usleep(50 * 1000);
	}
}

/* ------------------------------------------------------------ append */

static void app_stop(struct app *a, const char *reason)
{
	if (!a->stop) {
		a->stop = true;
		a->reason = reason;
	}
}

static void app_error(struct app *a, const char *what, int err,
		      const char *detail)
{
	a->errors++;
	if (!a->first_error[0])
		snprintf(a->first_error, sizeof(a->first_error), "%s: %s%s%s",
			 what, fi_strerror(err), detail ? " - " : "",
			 detail ? detail : "");
	app_stop(a, "error");
}

static void app_ack(struct app *a, uint64_t seq)
{
	printf("ACK %016" PRIx64 " %" PRIu64 " %04x\n", a->l.log_id, seq,
	       ack_check(a->l.log_id, seq));
	fflush(stdout);
	a->acked++;
}

/* Takes the log's parameters from the target's offer: the appends go on
 * where its recovery found the log's end. */
static void app_take_offer(struct app *a)
{
	a->off = a->c.off;
	a->l = (struct log){ .mode = (uint32_t)a->off.mode,
			     .log_id = a->off.log_id,
			     .capacity = a->off.capacity,
			     .max_record = (uint32_t)a->off.max_record };
	a->post_seq = a->off.next_seq;
	a->post_pos = a->off.next_pos;
}

/* Connects and takes the target's offer. */
static void app_connect(struct app *a)
{
	const struct opts *o = a->o;
	int ret = o->rdm ? client_connect_rdm(&a->c, o->addr, o->port,
					      o->connect_wait) :
			   client_connect(&a->c, "pmemverbs", o->addr, o->port,
					  o->connect_wait);

	if (ret) {
		say("connecting to %s port %s: %s", o->addr, o->port,
		    fi_strerror(-ret));
		exit(3);
	}
	app_take_offer(a);
}

/* -R over RDM: after an error ended the appends (the target died) and
 * every operation drained, the next target process's offer through the
 * same endpoint and AV entry (ofi_rxm connects again); false: exit. */
static bool app_reconnect(struct app *a)
{
	int ret;

	if (!a->o->rdm || a->reconnects_left == 0 || a->violation ||
	    strcmp(a->reason, "error"))
		return false;
	a->reconnects_left--;
	ret = client_rdm_reoffer(&a->c, a->o->connect_wait);
	if (ret) {
		say("no new target's offer at %s port %s: %s", a->o->addr,
		    a->o->port, fi_strerror(-ret));
		return false;
	}
	app_take_offer(a);
	a->stop = false;
	a->reason = NULL;
	a->first_error[0] = 0;
	a->tail_next = false;
	for (unsigned i = 0; i < a->depth; i++)
		a->slots[i].busy = false; /* drained: nothing in flight */
	return true;
}

/* Local memory: one record buffer and one tail word per slot. */
static void app_memory(struct app *a)
{
	size_t rec = a->l.max_record, len = (rec + LINE) * a->depth;

	if (posix_memalign((void **)&a->mem, 4096, len))
		die("out of memory");
	memset(a->mem, 0, len);
	for (unsigned i = 0; i < a->depth; i++) {
		a->slots[i].buf = a->mem + i * (rec + LINE);
		a->slots[i].tail_word = (uint64_t *)(a->slots[i].buf + rec);
		a->slots[i].ops[OP_RECORD].kind = OP_RECORD;
		a->slots[i].ops[OP_TAIL].kind = OP_TAIL;
	}
	if (a->c.f.info->domain_attr->mr_mode & FI_MR_LOCAL) {
		a->local_mr = mr_register(&a->c.f, a->mem, len,
					  FI_WRITE | FI_READ, 0, false);
		a->desc = fi_mr_desc(a->local_mr);
	}
}

/* Posts one write of len bytes to log offset off with flags. */
static ssize_t app_write(struct app *a, void *buf, size_t len, uint64_t off,
			 uint64_t flags, struct op *op)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct fi_rma_iov rma = { .addr = a->off.addr + off, .len = len,
				  .key = a->off.key };
	struct fi_msg_rma msg = { .msg_iov = &iov, .desc = &a->desc,
				  .iov_count = 1, .addr = a->c.peer,
				  .rma_iov = &rma, .rma_iov_count = 1,
				  .context = &op->ctx };

	return fi_writemsg(a->c.ep, &msg, flags);
}

/* A record's or tail's write flags: a commit (fenced for the tail), or
 * with -u visible a plain write acknowledged once placed. */
static uint64_t app_flags(const struct app *a, bool fence)
{
	if (a->o->unsafe == UNSAFE_VISIBLE)
		return FI_DELIVERY_COMPLETE | FI_COMPLETION;
	return FI_COMMIT_COMPLETE | FI_COMPLETION | (fence ? FI_FENCE : 0);
}

/* After a post: an error stops the appends (-FI_EAGAIN: try later). */
static bool app_posted(struct app *a, ssize_t ret, struct op *op)
{
	if (ret == -FI_EAGAIN)
		return false;
	if (ret) {
		app_error(a, "posting", (int)-ret, NULL);
		return false;
	}
	*op = (struct op){ .kind = op->kind, .busy = true };
	a->pending++;
	return true;
}

/* The slot of an append whose every operation is posted: ACK now? */
static void app_fully_posted(struct app *a, struct slot *s)
{
	s->all_posted = true;
	a->posted++;
	a->post_seq++;
	a->tail_next = false;
	if (a->o->unsafe == UNSAFE_EARLY)
		app_ack(a, s->seq);
}

/* Posts the next record; false if it cannot go now. */
static bool app_post_record(struct app *a)
{
	struct slot *s = &a->slots[a->post_seq % a->depth];
	uint32_t len = payload_len(&a->l, a->post_seq);
	uint64_t space = space_of(len);

	if (s->busy)
		return false; /* append post_seq - depth is still in flight */
	if (a->post_pos + space > a->l.capacity) {
		app_stop(a, "full");
		return false;
	}
	s->seq = a->post_seq;
	s->all_posted = false;
	build_record(&a->l, s->seq, s->buf);
	s->ops[OP_TAIL] = (struct op){ .kind = OP_TAIL };
	if (!app_posted(a, app_write(a, s->buf, space, HEADER_SIZE +
				     a->post_pos, app_flags(a, false),
				     &s->ops[OP_RECORD]),
			&s->ops[OP_RECORD]))
		return false;
	s->busy = true;
	a->post_pos += space;
	if (a->l.mode == MODE_COMPOUND)
		a->tail_next = true;
	else
		app_fully_posted(a, s);
	return true;
}

/* Posts the tail pointer of the last record posted (compound mode). */
static bool app_post_tail(struct app *a)
{
	struct slot *s = &a->slots[a->post_seq % a->depth];

	if (a->o->unsafe == UNSAFE_VISIBLE && !s->ops[OP_RECORD].done)
		return false; /* no fence without commits: wait for it */
	*s->tail_word = htole64(a->post_pos);
	if (!app_posted(a, app_write(a, s->tail_word, 8, TAIL_OFF,
				     app_flags(a, true), &s->ops[OP_TAIL]),
			&s->ops[OP_TAIL]))
		return false;
	app_fully_posted(a, s);
	return true;
}

static bool app_post_next(struct app *a)
{
	if (a->stop)
		return false;
	if (a->o->records && !a->tail_next &&
	    a->posted >= (uint64_t)a->o->records) {
		app_stop(a, "records");
		return false;
	}
	return a->tail_next ? app_post_tail(a) : app_post_record(a);
}

/* The slot an operation belongs to, NULL if it is none of ours. */
static struct slot *app_slot_of(struct app *a, const struct op *op)
{
	for (unsigned i = 0; i < a->depth; i++)
		if (op == &a->slots[i].ops[OP_RECORD] ||
		    op == &a->slots[i].ops[OP_TAIL])
			return &a->slots[i];
	return NULL;
}

/* An operation ended: once the append's last one has, it is acknowledged
 * (every operation of it posted and successful) and its slot freed. */
static void app_op_ended(struct app *a, struct op *op, bool failed)
{
	struct slot *s = app_slot_of(a, op);

	if (!s || !op->busy) {
		say("a completion for no operation in flight (context %p)",
		    (void *)op);
		a->violation = true;
		app_stop(a, "violation");
		return;
	}
	op->busy = false;
	op->done = true;
	op->failed = failed;
	a->pending--;
	if (s->ops[OP_RECORD].busy || s->ops[OP_TAIL].busy || !s->all_posted)
		return;
	if (!s->ops[OP_RECORD].failed && !s->ops[OP_TAIL].failed &&
	    a->o->unsafe != UNSAFE_EARLY)
		app_ack(a, s->seq);
	s->busy = false;
}

/* Reads the CQ once (waiting up to ms); false if nothing was there. */
static bool app_poll_cq(struct app *a, int ms)
{
	struct fi_cq_entry e[16];
	struct fi_cq_err_entry err = { 0 };
	char text[160];
	ssize_t n = ms ? fi_cq_sread(a->c.cq, e, 16, NULL, ms)
		       : fi_cq_read(a->c.cq, e, 16);

	if (n == -FI_EAVAIL) {
		if (fi_cq_readerr(a->c.cq, &err, 0) != 1)
			return false;
		fi_cq_strerror(a->c.cq, err.prov_errno, err.err_data, text,
			       sizeof(text));
		app_error(a, "commit", err.err ? err.err : FI_EOTHER, text);
		if (err.op_context)
			app_op_ended(a, err.op_context, true);
		else
			a->anonymous++;
		return true;
	}
	for (ssize_t i = 0; i < n; i++)
		app_op_ended(a, e[i].op_context, false);
	return n > 0;
}

/* Notes a shutdown or error event of the connection. */
static void app_poll_eq(struct app *a)
{
	struct cm_event ev;

	if (eq_wait(a->c.f.eq, 0, &ev) &&
	    (ev.err || ev.event == FI_SHUTDOWN))
		app_error(a, "connection", ev.err ? ev.err : FI_ECONNRESET,
			  ev.err ? "EQ error" : "FI_SHUTDOWN");
}

/* Appends until a stop (error, full, -n, -t), then waits (bounded) for
 * every operation in flight. */
static void app_run(struct app *a)
{
	int64_t end = deadline_in((int)(a->o->seconds * 1000)), drain;

	while (!a->stop) {
		bool posted = false;

		while (app_post_next(a))
			posted = true;
		app_poll_cq(a, posted ? 0 : 1);
		app_poll_eq(a);
		if (!before(end))
			app_stop(a, "deadline");
	}
	drain = deadline_in(DRAIN_MS);
	while (a->pending && before(drain)) {
		app_poll_cq(a, 10);
		app_poll_eq(a);
	}
	if (a->pending) {
		say("%u operations still in flight %d s after the stop: the "
		    "initiator would hang", a->pending, DRAIN_MS / 1000);
		a->violation = true;
	}
}

/* With -g, waits (bounded by -w) until the go file exists. */
static void app_await_go(struct app *a)
{
	int64_t end = deadline_in((int)(a->o->connect_wait * 1000));

	while (a->o->go_file && access(a->o->go_file, F_OK) && before(end)) {
		app_poll_eq(a);
		usleep(20 * 1000);
	}
}

static void app_print_start(const struct app *a)
{
	printf("START %016" PRIx64 " seq %" PRIu64 " pos %" PRIu64 " %s %s "
	       "depth %u method %s\n", a->l.log_id, a->post_seq, a->post_pos,
	       a->l.mode == MODE_SINGLETON ? "singleton" : "compound",
	       fi_pmem_profile_str(a->off.profile), a->depth,
	       a->c.f.pmem ? fi_pmem_method_str(a->c.f.pmem_ops->method(
				    a->c.ep, a->off.key)) : "rdm");
	fflush(stdout);
}

static void app_print_end(const struct app *a)
{
	printf("END %s acked %" PRIu64 " posted %" PRIu64 " errors %" PRIu64
	       " anonymous %" PRIu64 "%s%s\n", a->violation ? "violation" :
	       a->reason, a->acked, a->posted, a->errors, a->anonymous,
	       a->first_error[0] ? " first: " : "", a->first_error);
	fflush(stdout);
}

/* The initiator role: one START and END per target served (-R: more). */
int role_append(const struct opts *o)
{
	static struct app a;

	a.o = o;
	a.depth = o->unsafe == UNSAFE_VISIBLE ? 1 : o->depth;
	a.reconnects_left = o->reconnects;
	setvbuf(stdout, NULL, _IOLBF, 0);
	app_connect(&a);
	app_memory(&a);
	do {
		app_print_start(&a);
		app_await_go(&a);
		app_run(&a);
		app_print_end(&a);
	} while (app_reconnect(&a));
	if (a.violation)
		_exit(1); /* operations in flight: do not close */
	client_close(&a.c);
	if (a.local_mr)
		fi_close(&a.local_mr->fid);
	client_free(&a.c);
	free(a.mem);
	return 0;
}
