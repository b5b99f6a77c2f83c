/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_ct_bi_util.c - Bad-input tests: posting a commit and judging its outcome,
 * messages, placing data and reading it back.
 */

#include "pmv_ct.h"

/* Posts a commit on c; NULL if fi_writemsg refused it (*ret says why). */
struct op *post_commit(struct conn *c, struct fi_msg_rma *msg,
			      uint64_t flags, ssize_t *ret)
{
	struct op *op = op_alloc(OP_COMMIT, c);

	msg->context = &op->fictx;
	/* -FI_EAGAIN: the provider waits for progress (a fence), as any
	 * libfabric application must handle */
	POST(*ret, fi_writemsg(c->ep, msg, flags));
	if (!*ret)
		return op;
	op_free(op);
	return NULL;
}

/* Waits (bounded) for a posted commit and describes how it ended. */
struct outcome commit_outcome(struct op *op)
{
	struct outcome o = { .completed = op_wait(op) };

	if (!o.completed)
		return o; /* op stays busy: a late completion is noticed */
	o.err = op->err;
	o.prov_errno = op->prov_errno;
	o.flags = op->flags;
	snprintf(o.text, sizeof(o.text), "%s", op->errtext);
	op_free(op);
	return o;
}

/*
 * Posts a commit on c, runs after_post (if any) once it is accepted, and
 * waits (bounded) for its completion.
 */
struct outcome try_commit_then(struct conn *c, struct fi_msg_rma *msg,
				      uint64_t flags, void (*after_post)(void))
{
	ssize_t ret;
	struct op *op = post_commit(c, msg, flags, &ret);
	struct outcome o = { .ret = ret };

	if (!op)
		return o;
	if (after_post)
		after_post();
	return commit_outcome(op);
}

struct outcome try_commit(struct conn *c, struct fi_msg_rma *msg,
				 uint64_t flags)
{
	return try_commit_then(c, msg, flags, NULL);
}

/* Overwrites the start of the source buffer (FI_INJECT: it is ours again). */
void scribble_source(void)
{
	memset(g_s.src, 0xee, 256);
}

/* The call must fail at once with want. */
void expect_ret(const char *name, ssize_t got, int want)
{
	verdict(got == want, check_name(name), "%s%s got %s (%zd)",
		got == want ? "" : "expected ", errname(want), errname(got),
		got);
}

void expect_refused(const char *name, const struct outcome *o,
			   int want)
{
	if (o->ret || !o->completed)
		expect_ret(name, o->ret, want);
	else
		verdict(false, check_name(name), "expected %s got the commit "
			"accepted and completed with %s", errname(want),
			errname(o->err));
}

/* The commit must be accepted, then complete with a CQ error want. */
void expect_cq_error(const char *name, const struct outcome *o,
			    int want)
{
	if (o->ret)
		verdict(false, check_name(name), "expected CQ error %s got "
			"fi_writemsg %s", errname(want), errname(o->ret));
	else if (!o->completed)
		verdict(false, check_name(name), "expected CQ error %s got no "
			"completion within %d ms", errname(want), STEP_MS);
	else if (o->err != want)
		verdict(false, check_name(name), "expected CQ error %s got %s "
			"(%s)", errname(want), errname(o->err), o->text);
	else if (!readable(o->text))
		verdict(false, check_name(name), "expected readable "
			"fi_cq_strerror text got \"%s\"", o->text);
	else
		verdict(true, check_name(name), "CQ error %s: \"%s\"",
			errname(o->err), o->text);
}

void expect_success(const char *name, const struct outcome *o)
{
	bool ok = !o->ret && o->completed && !o->err &&
		  (o->flags & OP_CLASS_FLAGS) == COMMIT_FLAGS;

	if (ok)
		verdict(true, check_name(name), "completed, flags FI_RMA|"
			"FI_WRITE");
	else if (o->ret)
		verdict(false, check_name(name), "expected success got %s",
			errname(o->ret));
	else if (!o->completed)
		verdict(false, check_name(name), "expected a completion got "
			"none within %d ms", STEP_MS);
	else if (o->err)
		verdict(false, check_name(name), "expected success got CQ "
			"error %s (%s)", errname(o->err), o->text);
	else
		verdict(false, check_name(name), "expected flags 0x%llx got "
			"0x%" PRIx64, (unsigned long long)COMMIT_FLAGS, o->flags);
}

struct fi_msg_rma *cmsg_make(struct cmsg *m, enum region_id region,
				    uint64_t off, size_t len)
{
	for (size_t i = 0; i < ARRAY_LEN(m->iov); i++) {
		m->iov[i] = (struct iovec){ g_s.src + i * 16, 1 };
		m->desc[i] = g_s.src_desc;
		m->rma[i] = (struct fi_rma_iov){ rma_addr(region, off + i * 16),
						 1, g_s.reg[region].key };
	}
	m->iov[0].iov_len = len;
	m->rma[0].len = len;
	m->msg = (struct fi_msg_rma){ .msg_iov = m->iov, .desc = m->desc,
				      .iov_count = len ? 1 : 0, .rma_iov = m->rma,
				      .rma_iov_count = 1 };
	return &m->msg;
}

/* A pure flush of key (iov_count 0, rma_iov {addr, 0, key}). */
struct fi_msg_rma *cmsg_flush(struct cmsg *m, enum region_id region,
				     uint64_t key)
{
	struct fi_msg_rma *msg = cmsg_make(m, region, 0, 0);

	m->rma[0].key = key;
	return msg;
}

/* Records a range the target must hold, for the contents check. */
void note_placed(enum region_id region, uint64_t off, size_t len,
			uint64_t seed)
{
	struct range_desc r = { .region = region, .off = off, .len = len,
				.seed = seed };

	range_add(&g_s.placed, &r);
}

/* Generates a badinput write's data at the source buffer's start. */
void place(enum region_id region, uint64_t off, size_t len,
		  uint64_t seed)
{
	gen_fill(g_s.src, len, seed, off);
	note_placed(region, off, len, seed);
}

/* Reads len bytes of a region into dst (registered memory); 0 or err. */
int rma_read(enum region_id region, uint64_t off, void *dst,
		    size_t len)
{
	return rma_read_on(&g_s.main, region, off, dst, len);
}

/* As rma_read, over connection c. */
int rma_read_on(struct conn *c, enum region_id region, uint64_t off,
		void *dst, size_t len)
{
	struct op *op = op_alloc(OP_READ, c);
	ssize_t ret;
	int err;

	POST(ret, fi_read(c->ep, dst, len, g_s.src_desc, 0,
			  rma_addr(region, off), g_s.reg[region].key,
			  &op->fictx));
	if (ret) {
		op_free(op);
		return (int)ret;
	}
	if (!op_wait(op))
		die("fi_read: no completion within %d ms", STEP_MS);
	err = op->err;
	op_free(op);
	return err;
}

/* Plain write to region (tracked in the key's scope), waited for. */
int plain_write_wait(enum region_id region, uint64_t off, size_t len,
			    uint64_t seed)
{
	return plain_write_wait_on(&g_s.main, region, off, len, seed);
}

/* As plain_write_wait, over connection c. */
int plain_write_wait_on(struct conn *c, enum region_id region, uint64_t off,
			size_t len, uint64_t seed)
{
	struct op *op = op_alloc(OP_WRITE, c);
	ssize_t ret;
	int err;

	gen_fill(g_s.src, len, seed, off);
	POST(ret, fi_write(c->ep, g_s.src, len, g_s.src_desc, 0,
			   rma_addr(region, off), g_s.reg[region].key,
			   &op->fictx));
	if (ret) {
		op_free(op);
		return (int)ret;
	}
	op_wait_or_die(op, "plain write");
	err = op->err;
	op_free(op);
	if (!err)
		place(region, off, len, seed);
	return err;
}

/* Asks the target to re-register a region under its key with len bytes. */
void resize_region(enum region_id region, uint64_t len)
{
	struct resize_req req = { .region = region, .len = len };
	const struct status_rsp *rsp;

	ctl_send(MSG_RESIZE, &req, sizeof(req));
	rsp = ctl_expect(MSG_RESIZED, sizeof(*rsp), NULL);
	if (rsp->status || rsp->detail[0])
		die("target could not resize %s: %s %s", k_regions[region].name,
		    errname(rsp->status), rsp->detail);
	g_s.reg[region].key = rsp->key;
	g_s.reg[region].len = len;
	ctl_release();
}
