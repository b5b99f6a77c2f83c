/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_itest_info.c - fi_getinfo for a run's role, and the
 * completions a test expects (matching, checking, awaiting).
 */
#include "pmv_itest.h"

/* ------------------------------------------------------------------ */
/* fi_getinfo                                                         */
/* ------------------------------------------------------------------ */

/* Hints for one query: ep type, caps, and every mode/MR mode we honour. */
struct fi_info *make_hints(const char *prov, enum fi_ep_type type,
			   uint64_t caps, uint64_t msg_order)
{
	struct fi_info *h = fi_allocinfo();

	if (!h)
		die("fi_allocinfo failed");
	h->ep_attr->type = type;
	h->caps = caps;
	h->mode = FI_CONTEXT | FI_CONTEXT2;
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				  FI_MR_ALLOCATED | FI_MR_PROV_KEY |
				  FI_MR_ENDPOINT;
	h->tx_attr->msg_order = msg_order;
	if (prov && !(h->fabric_attr->prov_name = strdup(prov)))
		die("out of memory");
	return h;
}

const char *ep_type_name(enum fi_ep_type type)
{
	return type == FI_EP_MSG ? "msg" : "rdm";
}

/* True if got names want, or has want as one of its ';' layers. */
static bool prov_name_matches(const char *got, const char *want)
{
	size_t n = strlen(want);

	for (const char *p = got; p; p = strchr(p, ';')) {
		if (*p == ';')
			p++;
		if (!strncmp(p, want, n) && (p[n] == '\0' || p[n] == ';'))
			return true;
	}
	return false;
}

/* Fails unless the chosen provider is the one asked for (-p or FI_PROVIDER). */
static void check_prov_name(const struct opts *o, const struct fi_info *info)
{
	const char *want = o->prov ? o->prov : getenv("FI_PROVIDER");
	const char *got = info->fabric_attr->prov_name;

	if (!want || !*want || strpbrk(want, ",^"))
		return;
	if (!got || !prov_name_matches(got, want))
		die("fi_getinfo chose provider '%s', asked for '%s'",
		    got ? got : "(null)", want);
}

/* Makes hints accept any mode, MR mode and ordering, keeping ep type,
 * provider name and caps: "does the provider have this at all?". */
static void relax_hints(struct fi_info *hints)
{
	hints->mode = ~UINT64_C(0);
	hints->domain_attr->mr_mode |= FI_MR_RAW | FI_MR_MMU_NOTIFY |
				       FI_MR_RMA_EVENT;
	hints->tx_attr->msg_order = 0;
}

static int probe_getinfo(const struct opts *o, const char *node,
			 uint64_t flags, struct fi_info *hints)
{
	struct fi_info *any = NULL;
	int ret = fi_getinfo(PMV_FI_VERSION, node, o->port, flags, hints, &any);

	fi_freeinfo(any);
	return ret;
}

/* After -FI_ENODATA, decides skip or fail with relaxed queries:
 *  - no endpoint of this type at all (provider missing or not loaded): fail;
 *  - none with the caps either: the caps are genuinely absent, skip;
 *  - the caps exist, so our mode/MR mode/ordering hints failed: fail.
 * Frees hints before exiting so sanitizer leak checks stay quiet. */
static noreturn void explain_enodata(const struct opts *o, const char *node,
				     uint64_t flags, struct fi_info *hints)
{
	uint64_t msg_order = hints->tx_attr->msg_order, caps = hints->caps;
	uint64_t extra = caps & ~FI_MSG;
	const char *ep = ep_type_name(o->ep_type);
	char buf[256], order[256];
	int base_ret, caps_ret;

	relax_hints(hints);
	caps_ret = probe_getinfo(o, node, flags, hints);
	hints->caps = 0;
	base_ret = probe_getinfo(o, node, flags, hints);
	fi_freeinfo(hints);
	if (base_ret)
		die("provider '%s' offers no %s endpoint at all (fi_getinfo: "
		    "%s); is it installed and loadable?",
		    o->prov ? o->prov : "(FI_PROVIDER)", ep, fi_strerror(-base_ret));
	if (caps_ret == -FI_ENODATA)
		skip("%s endpoints of this provider do not advertise %s "
		     "(with FI_MSG)", ep,
		     tostr(buf, sizeof(buf), extra ? &extra : &caps,
			   FI_TYPE_CAPS));
	die("%s endpoints offer %s, but not with the modes/MR modes we honour "
	    "or msg_order [%s] (fi_getinfo: -FI_ENODATA; relaxed: %d)", ep,
	    tostr(buf, sizeof(buf), &caps, FI_TYPE_CAPS),
	    tostr(order, sizeof(order), &msg_order, FI_TYPE_MSG_ORDER),
	    caps_ret);
}

/* fi_getinfo for this run's role; exits 77 if caps are genuinely absent. */
struct fi_info *resolve_info(const struct opts *o, uint64_t caps,
			     uint64_t msg_order)
{
	uint64_t flags = o->role == ROLE_SERVER ? FI_SOURCE : 0;
	struct fi_info *hints = make_hints(o->prov, o->ep_type, caps, msg_order);
	struct fi_info *info = NULL;
	char buf[256];
	int ret;

	ret = fi_getinfo(PMV_FI_VERSION, o->addr, o->port, flags, hints, &info);
	if (ret == -FI_ENODATA)
		explain_enodata(o, o->addr, flags, hints);
	if (ret)
		die("fi_getinfo: %s (%d)", fi_strerror(-ret), ret);
	fi_freeinfo(hints);
	check_prov_name(o, info);
	if ((info->caps & caps) != caps)
		die("fi_getinfo returned caps %s, missing requested ones",
		    tostr(buf, sizeof(buf), &info->caps, FI_TYPE_CAPS));
	return info;
}

/* One stdout line describing what the provider handed us. */
void describe_info(const struct fi_info *info)
{
	char caps[512], mr[128];
	int mr_mode = info->domain_attr->mr_mode;

	printf("info: prov=%s fabric=%s domain=%s caps=%s mr_mode=%s "
	       "inject=%zu max_msg=%zu cq_data=%zu\n",
	       info->fabric_attr->prov_name, info->fabric_attr->name,
	       info->domain_attr->name,
	       tostr(caps, sizeof(caps), &info->caps, FI_TYPE_CAPS),
	       tostr(mr, sizeof(mr), &mr_mode, FI_TYPE_MR_MODE),
	       info->tx_attr->inject_size, info->ep_attr->max_msg_size,
	       info->domain_attr->cq_data_size);
	fflush(stdout);
}

/* Tells the runner the server is listening. */
void announce_ready(void)
{
	printf("READY\n");
	fflush(stdout);
}

/* ------------------------------------------------------------------ */
/* Completions                                                        */
/* ------------------------------------------------------------------ */

struct expect expect_op(const char *what, void *ctx, uint64_t flags)
{
	return (struct expect){ .what = what, .ctx = ctx, .flags = flags };
}

struct expect expect_recv(const char *what, void *ctx, uint64_t flags,
			  size_t len)
{
	struct expect x = expect_op(what, ctx, flags);

	x.checks = CHECK_LEN;
	x.len = len;
	return x;
}

/* Remote-write completion carrying CQ data (no op_context to match).
 * fi_cq(3) says FI_REMOTE_WRITE "may be combined with" FI_RMA; the tcp and
 * tcp;ofi_rxm cores leave FI_RMA out, so it is accepted but not required. */
struct expect expect_remote_write(const char *what, uint64_t data)
{
	struct expect x = expect_op(what, NULL,
				    FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA);

	x.optional = FI_RMA;
	x.checks = CHECK_DATA;
	x.data = data;
	return x;
}

/* Reads the pending error entry and dies describing it. */
static noreturn void die_cq_error(struct fid_cq *cq,
				  const struct fi_cq_err_entry *err,
				  const char *what)
{
	char buf[256];

	die("waiting for %s: completion error %s (%d), prov_errno %d: %s",
	    what, fi_strerror(err->err), err->err, err->prov_errno,
	    fi_cq_strerror(cq, err->prov_errno, err->err_data, buf,
			   sizeof(buf)));
}

/* Fetches the error entry after -FI_EAVAIL. */
static void read_cq_error(struct fid_cq *cq, struct fi_cq_err_entry *err,
			  const char *what)
{
	ssize_t ret;

	memset(err, 0, sizeof(*err));
	ret = fi_cq_readerr(cq, err, 0);
	if (ret != 1)
		die("waiting for %s: fi_cq_readerr returned %zd", what, ret);
}

/* Next completion within the step deadline; false if it was an error
 * entry (stored in *err). Timeouts and read failures are fatal. */
static bool next_comp(const struct ctx *c, struct fid_cq *cq,
		      struct fi_cq_tagged_entry *e, struct fi_cq_err_entry *err,
		      const char *what)
{
	int64_t deadline = deadline_in(STEP_TIMEOUT_MS);
	ssize_t ret;

	memset(e, 0, sizeof(*e)); /* fields beyond the CQ's format stay 0 */
	for (;;) {
		if (c->use_wait)
			ret = fi_cq_sread(cq, e, 1, NULL,
					  (int)min_size((size_t)ms_left(deadline),
							SREAD_TIMEOUT_MS));
		else
			ret = fi_cq_read(cq, e, 1);
		if (ret == 1)
			return true;
		if (ret == -FI_EAVAIL) {
			read_cq_error(cq, err, what);
			return false;
		}
		if (ret != -FI_EAGAIN)
			die("waiting for %s: fi_cq_%sread: %s (%zd)", what,
			    c->use_wait ? "s" : "", fi_strerror((int)-ret), ret);
		if (!ms_left(deadline))
			die("timeout after %d ms waiting for %s",
			    STEP_TIMEOUT_MS, what);
		if (!c->use_wait)
			poll_pause();
	}
}

static struct expect *first_pending(struct expect *ex, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!ex[i].seen)
			return &ex[i];
	return NULL;
}

/* The unmet expectation this completion belongs to, or NULL. */
static struct expect *match_expect(struct expect *ex, size_t n,
				   const struct fi_cq_tagged_entry *e)
{
	for (size_t i = 0; i < n; i++) {
		if (ex[i].seen)
			continue;
		if (ex[i].ctx ? e->op_context == ex[i].ctx
			      : (e->flags & FI_REMOTE_WRITE) != 0)
			return &ex[i];
	}
	return NULL;
}

/* A check may only read fields the CQ's format carries. */
static void check_format_carries(const struct ctx *c, const struct expect *x)
{
	char fmt[64];

	if (((x->checks & CHECK_TAG) && c->cq_format < FI_CQ_FORMAT_TAGGED) ||
	    ((x->checks & CHECK_DATA) && c->cq_format < FI_CQ_FORMAT_DATA))
		die("internal: %s checks a field that %s completions lack",
		    x->what, tostr(fmt, sizeof(fmt), &c->cq_format,
				   FI_TYPE_CQ_FORMAT));
}

/* Checks flags (exactly, up to the optional bits), and length, tag and
 * CQ data where asked. */
static void check_expect(const struct ctx *c, const struct expect *x,
			 const struct fi_cq_tagged_entry *e)
{
	uint64_t got = e->flags & OP_CLASS_FLAGS, mask = cq_data_mask(c);
	char gbuf[256], wbuf[256];

	check_format_carries(c, x);
	if ((got & ~x->optional) != x->flags)
		die("%s: completion flags [%s], expected [%s]", x->what,
		    tostr(gbuf, sizeof(gbuf), &got, FI_TYPE_CQ_EVENT_FLAGS),
		    tostr(wbuf, sizeof(wbuf), &x->flags,
			  FI_TYPE_CQ_EVENT_FLAGS));
	if ((x->checks & CHECK_LEN) && e->len != x->len)
		die("%s: completion len %zu, expected %zu", x->what, e->len,
		    x->len);
	if ((x->checks & CHECK_TAG) && e->tag != x->tag)
		die("%s: completion tag 0x%" PRIx64 ", expected 0x%" PRIx64,
		    x->what, e->tag, x->tag);
	if ((x->checks & CHECK_DATA) && (e->data & mask) != (x->data & mask))
		die("%s: completion data 0x%" PRIx64 ", expected 0x%" PRIx64,
		    x->what, e->data, x->data & mask);
}

/* Reads completions until every expectation is met, in any order; each
 * completion must carry the exact op_context of one of them. */
void await_all(const struct ctx *c, struct fid_cq *cq,
	       struct expect *ex, size_t n)
{
	for (size_t done = 0; done < n; done++) {
		const char *what = first_pending(ex, n)->what;
		struct fi_cq_tagged_entry e;
		struct fi_cq_err_entry err;
		struct expect *x;
		char fbuf[256];

		if (!next_comp(c, cq, &e, &err, what))
			die_cq_error(cq, &err, what);
		x = match_expect(ex, n, &e);
		if (!x)
			die("waiting for %s: completion with unknown op_context "
			    "%p, flags [%s]", what, e.op_context,
			    tostr(fbuf, sizeof(fbuf), &e.flags,
				  FI_TYPE_CQ_EVENT_FLAGS));
		check_expect(c, x, &e);
		x->seen = true;
	}
}

void await_one(const struct ctx *c, struct fid_cq *cq, struct expect x)
{
	await_all(c, cq, &x, 1);
}

/* A queue with nothing outstanding must hold no completion. */
void expect_cq_empty(struct fid_cq *cq, const char *name)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	ssize_t ret = fi_cq_read(cq, &e, 1);

	if (ret == 1)
		die("%s: stray completion, op_context %p flags 0x%" PRIx64,
		    name, e.op_context, e.flags);
	if (ret == -FI_EAVAIL) {
		read_cq_error(cq, &err, name);
		die_cq_error(cq, &err, name);
	}
	if (ret != -FI_EAGAIN)
		die("%s: fi_cq_read on an idle CQ: %s", name,
		    fi_strerror((int)-ret));
}

/* Cancels a posted receive; the CQ must report FI_ECANCELED for exactly
 * that context through -FI_EAVAIL / fi_cq_readerr. */
void cancel_and_expect(const struct ctx *c, void *ctx, const char *what)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;

	CHECK(fi_cancel(&c->ep->fid, ctx));
	if (next_comp(c, c->rxcq, &e, &err, what))
		die("%s: got a successful completion (op_context %p) instead "
		    "of FI_ECANCELED", what, e.op_context);
	if (err.err != FI_ECANCELED)
		die("%s: error entry has err %d (%s), expected FI_ECANCELED",
		    what, err.err, fi_strerror(err.err));
	if (err.op_context != ctx)
		die("%s: error entry op_context %p, expected %p", what,
		    err.op_context, ctx);
}

/* Drives provider progress without consuming completions. */
void drive_progress(const struct ctx *c)
{
	if (c->txcq)
		(void)fi_cq_read(c->txcq, NULL, 0);
	if (c->rxcq)
		(void)fi_cq_read(c->rxcq, NULL, 0);
	poll_pause();
}
