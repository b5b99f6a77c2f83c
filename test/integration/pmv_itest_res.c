/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_itest_res.c - the event queue, the resources a test
 * opens and closes, and posting.
 */
#include "pmv_itest.h"

/* ------------------------------------------------------------------ */
/* Event queue                                                        */
/* ------------------------------------------------------------------ */

/* Fetches the EQ error entry, with err_data copied into our own buffer. */
static void read_eq_error(const struct ctx *c, struct eq_error *err,
			  const char *what)
{
	ssize_t ret;

	memset(err, 0, sizeof(*err));
	err->e.err_data = err->data;
	err->e.err_data_size = sizeof(err->data);
	ret = fi_eq_readerr(c->eq, &err->e, 0);
	if (ret < 0)
		die("waiting for %s: fi_eq_readerr: %s", what,
		    fi_strerror((int)-ret));
}

/* Next EQ event within the step deadline: bytes read, or -FI_EAVAIL
 * with the error entry in *err. CQs are polled meanwhile: the tcp core
 * reports a peer's disconnect (FI_SHUTDOWN) only from data progress. */
static ssize_t next_eq_event(const struct ctx *c, uint32_t *event,
			     union cm_event *ev, struct eq_error *err,
			     const char *what)
{
	int64_t deadline = deadline_in(STEP_TIMEOUT_MS);
	ssize_t ret;

	for (;;) {
		if (c->use_wait)
			ret = fi_eq_sread(c->eq, event, ev, sizeof(*ev),
					  (int)min_size((size_t)ms_left(deadline),
							SREAD_TIMEOUT_MS), 0);
		else
			ret = fi_eq_read(c->eq, event, ev, sizeof(*ev), 0);
		if (ret > 0)
			return ret;
		if (ret == -FI_EAVAIL)
			break;
		if (ret != -FI_EAGAIN)
			die("waiting for %s: fi_eq_%sread: %s (%zd)", what,
			    c->use_wait ? "s" : "", fi_strerror((int)-ret), ret);
		if (!ms_left(deadline))
			die("timeout after %d ms waiting for %s",
			    STEP_TIMEOUT_MS, what);
		if (!c->use_wait)
			drive_progress(c);
	}
	read_eq_error(c, err, what);
	return -FI_EAVAIL;
}

/* Waits for event `want` from fid; returns the private data length. */
size_t await_cm_event(const struct ctx *c, uint32_t want, fid_t fid,
		      union cm_event *ev, const char *what)
{
	struct eq_error err;
	uint32_t event = 0;
	char buf[64];
	ssize_t n;

	n = next_eq_event(c, &event, ev, &err, what);
	if (n < 0)
		die("waiting for %s: EQ error %s (%d), prov_errno %d", what,
		    fi_strerror(err.e.err), err.e.err, err.e.prov_errno);
	if (event != want)
		die("waiting for %s: got EQ event %s", what,
		    tostr(buf, sizeof(buf), &event, FI_TYPE_EQ_EVENT));
	if ((size_t)n < sizeof(ev->entry))
		die("%s: EQ entry of %zd bytes is too short", what, n);
	if (ev->entry.fid != fid)
		die("%s: event fid %p is not the expected fid %p", what,
		    (void *)ev->entry.fid, (void *)fid);
	return (size_t)n - sizeof(ev->entry);
}

/* Waits for an EQ error entry with error code want_err on the endpoint. */
void await_eq_error(const struct ctx *c, int want_err,
		    struct eq_error *err, const char *what)
{
	union cm_event ev;
	uint32_t event = 0;
	char buf[64];

	if (next_eq_event(c, &event, &ev, err, what) != -FI_EAVAIL)
		die("%s: got EQ event %s instead of an error", what,
		    tostr(buf, sizeof(buf), &event, FI_TYPE_EQ_EVENT));
	if (err->e.err != want_err)
		die("%s: EQ error %d (%s), expected %d (%s)", what, err->e.err,
		    fi_strerror(err->e.err), want_err, fi_strerror(want_err));
	if (err->e.fid != &c->ep->fid)
		die("%s: error fid %p is not the endpoint %p", what,
		    (void *)err->e.fid, (void *)&c->ep->fid);
}

void store_cm_data(struct cm_data *dst, const union cm_event *ev,
		   size_t len)
{
	dst->len = min_size(len, sizeof(dst->bytes));
	memcpy(dst->bytes, ev->entry.data, dst->len);
}

const void *cm_out_ptr(const struct ctx *c)
{
	return c->cm_out.len ? c->cm_out.bytes : NULL;
}

/* FI_OPT_CM_DATA_SIZE: the CM data the endpoint can carry. */
size_t cm_data_size(const struct ctx *c)
{
	size_t size = 0, len = sizeof(size);

	CHECK(fi_getopt(&c->ep->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE,
			&size, &len));
	return size;
}

/* Caps cm_out at FI_OPT_CM_DATA_SIZE (a layered provider's own CM header
 * takes part of its core's room); the peer, on the same provider, caps
 * what it expects alike. */
void cap_cm_out(struct ctx *c)
{
	if (c->cm_out.len)
		c->cm_out.len = min_size(c->cm_out.len, cm_data_size(c));
}

/* ------------------------------------------------------------------ */
/* Resources                                                          */
/* ------------------------------------------------------------------ */

void close_fid(struct fid *fid, const char *name)
{
	int ret;

	if (!fid)
		return;
	ret = fi_close(fid);
	if (ret)
		die("fi_close(%s): %s (%d)", name, fi_strerror(-ret), ret);
}

static struct fid_eq *open_eq(const struct ctx *c)
{
	struct fi_eq_attr attr = {
		.size = 32,
		.wait_obj = c->use_wait ? FI_WAIT_UNSPEC : FI_WAIT_NONE,
	};
	struct fid_eq *eq;

	CHECK(fi_eq_open(c->fabric, &attr, &eq, NULL));
	return eq;
}

/* Fabric plus, for MSG endpoints or blocking-wait runs, an event queue. */
void open_fabric(struct ctx *c)
{
	CHECK(fi_fabric(c->info->fabric_attr, &c->fabric, NULL));
	if (is_msg(c) || c->use_wait)
		c->eq = open_eq(c);
}

/* One fi_cq_open in format, with this run's size and wait object. */
static int try_open_cq(const struct ctx *c, struct fid_domain *dom,
		       enum fi_cq_format format, struct fid_cq **cq)
{
	struct fi_cq_attr attr = {
		.size = 128,
		.format = format,
		.wait_obj = c->use_wait ? FI_WAIT_UNSPEC : FI_WAIT_NONE,
	};

	return fi_cq_open(dom, &attr, cq, NULL);
}

/* How fi_cq_open may refuse a format it does not support (the verbs core
 * says -FI_ENOSYS to FI_CQ_FORMAT_TAGGED, the util CQ -FI_EINVAL). */
static bool format_refused(int ret)
{
	return ret == -FI_ENOSYS || ret == -FI_EINVAL || ret == -FI_EOPNOTSUPP;
}

/* Every format the test can read was refused: a skip if a CQ with the same
 * attributes opens in FI_CQ_FORMAT_CONTEXT (so only the formats are
 * refused), a failure otherwise. */
static noreturn void explain_cq_refusal(const struct ctx *c,
					struct fid_domain *dom, int ret)
{
	struct fid_cq *cq;
	char fmt[64];
	int ctx_ret = try_open_cq(c, dom, FI_CQ_FORMAT_CONTEXT, &cq);

	tostr(fmt, sizeof(fmt), &c->cq_format, FI_TYPE_CQ_FORMAT);
	if (ctx_ret)
		die("fi_cq_open refuses %s and every richer format (%s), and "
		    "FI_CQ_FORMAT_CONTEXT too: %s (%d)", fmt, fi_strerror(-ret),
		    fi_strerror(-ctx_ret), ctx_ret);
	close_fid(&cq->fid, "FI_CQ_FORMAT_CONTEXT CQ");
	skip("CQs of this provider refuse %s and every richer format "
	     "(fi_cq_open: %s), and the test reads fields only they carry",
	     fmt, fi_strerror(-ret));
}

/* Opens a CQ in c->cq_format, the least detailed format the test can read,
 * or else in the first richer one the provider accepts (each format
 * extends the one before it), which becomes c->cq_format. */
static struct fid_cq *open_cq(struct ctx *c, struct fid_domain *dom)
{
	enum fi_cq_format f;
	struct fid_cq *cq;
	char fmt[64];
	int ret = 0;

	for (f = c->cq_format; f <= FI_CQ_FORMAT_TAGGED; f++) {
		ret = try_open_cq(c, dom, f, &cq);
		if (!ret) {
			c->cq_format = f;
			return cq;
		}
		if (!format_refused(ret))
			die("fi_cq_open(%s): %s (%d)",
			    tostr(fmt, sizeof(fmt), &f, FI_TYPE_CQ_FORMAT),
			    fi_strerror(-ret), ret);
	}
	explain_cq_refusal(c, dom, ret);
}

/* MSG server: settles the CQ format on a scratch domain before listening,
 * so that if the provider refuses it both sides skip (the server would
 * otherwise wait in vain for the client's connection request). */
void settle_cq_format(struct ctx *c)
{
	struct fid_domain *dom;
	struct fid_cq *cq;

	CHECK(fi_domain(c->fabric, c->info, &dom, NULL));
	cq = open_cq(c, dom);
	close_fid(&cq->fid, "format probe CQ");
	close_fid(&dom->fid, "format probe domain");
}

static void open_cntrs(struct ctx *c)
{
	struct fi_cntr_attr attr = { .events = FI_CNTR_EVENTS_COMP,
				     .wait_obj = FI_WAIT_UNSPEC };

	for (int i = 0; i < CNTR_COUNT; i++)
		CHECK(fi_cntr_open(c->domain, &attr, &c->cntr[i], NULL));
}

static void open_av(struct ctx *c, const struct fi_info *info)
{
	enum fi_av_type type = info->domain_attr->av_type;
	struct fi_av_attr attr = {
		.type = type == FI_AV_UNSPEC ? FI_AV_MAP : type,
		.count = 4,
	};

	CHECK(fi_av_open(c->domain, &attr, &c->av, NULL));
}

/* Domain plus the CQs, counters and AV the endpoint will be bound to. */
void open_domain_res(struct ctx *c, struct fi_info *info)
{
	c->ep_info = info;
	CHECK(fi_domain(c->fabric, info, &c->domain, NULL));
	c->txcq = open_cq(c, c->domain);
	c->rxcq = open_cq(c, c->domain);
	if (c->use_cntrs)
		open_cntrs(c);
	if (!is_msg(c))
		open_av(c, info);
}

/* Creates, binds and enables the active endpoint. */
void open_endpoint(struct ctx *c)
{
	CHECK(fi_endpoint(c->domain, c->ep_info, &c->ep, NULL));
	if (is_msg(c))
		CHECK(fi_ep_bind(c->ep, &c->eq->fid, 0));
	if (c->av)
		CHECK(fi_ep_bind(c->ep, &c->av->fid, 0));
	CHECK(fi_ep_bind(c->ep, &c->txcq->fid, FI_TRANSMIT));
	CHECK(fi_ep_bind(c->ep, &c->rxcq->fid, FI_RECV));
	for (int i = 0; c->use_cntrs && i < CNTR_COUNT; i++)
		CHECK(fi_ep_bind(c->ep, &c->cntr[i]->fid, k_cntr_flags[i]));
	CHECK(fi_enable(c->ep));
}

/* Access flags for every region: remote access only with RMA/atomics. */
static uint64_t mr_access(const struct ctx *c)
{
	uint64_t access = FI_SEND | FI_RECV;

	if (c->ep_info->caps & (FI_RMA | FI_ATOMIC))
		access |= FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
	return access;
}

/* Allocates a zeroed buffer and registers it as the domain's mr_mode
 * demands (requested vs provider key, FI_MR_ENDPOINT binding, local desc).
 * Released in teardown. */
struct mreg *mreg_alloc(struct ctx *c, size_t len)
{
	int mode = c->ep_info->domain_attr->mr_mode;
	struct mreg *m;

	if (c->n_mrs == MAX_MRS)
		die("internal: too many memory regions");
	m = &c->mrs[c->n_mrs++];
	m->len = len;
	m->buf = calloc(1, len);
	if (!m->buf)
		die("out of memory");
	CHECK(fi_mr_reg(c->domain, m->buf, len, mr_access(c), 0,
			(mode & FI_MR_PROV_KEY) ? 0 : c->next_key++, 0, &m->mr,
			NULL));
	if (mode & FI_MR_ENDPOINT) {
		CHECK(fi_mr_bind(m->mr, &c->ep->fid, 0));
		CHECK(fi_mr_enable(m->mr));
	}
	m->desc = (mode & FI_MR_LOCAL) ? fi_mr_desc(m->mr) : NULL;
	return m;
}

/* Closes everything in dependency order; a failing close fails the test. */
void teardown(struct ctx *c)
{
	while (c->n_mrs) {
		struct mreg *m = &c->mrs[--c->n_mrs];

		CLOSE(m->mr);
		free(m->buf);
	}
	CLOSE(c->ep);
	CLOSE(c->pep);
	CLOSE(c->av);
	for (int i = 0; i < CNTR_COUNT; i++)
		CLOSE(c->cntr[i]);
	CLOSE(c->rxcq);
	CLOSE(c->txcq);
	CLOSE(c->domain);
	CLOSE(c->eq);
	CLOSE(c->fabric);
	if (c->ep_info != c->info)
		fi_freeinfo(c->ep_info);
	fi_freeinfo(c->info);
}

/* ------------------------------------------------------------------ */
/* Posting                                                            */
/* ------------------------------------------------------------------ */

/* Guards against the test itself addressing outside the peer's region. */
void check_remote_range(const struct remote *r, size_t off, size_t len)
{
	if (off + len > r->len)
		die("internal: remote access [%zu, %zu) beyond %" PRIu64, off,
		    off + len, r->len);
}

void post_send(struct ctx *c, struct mreg *m, size_t off, size_t len,
	       void *ctx)
{
	POST_RETRY(c, "fi_send",
		   fi_send(c->ep, m->buf + off, len, m->desc, c->peer, ctx));
	c->posted[CNTR_SEND]++;
}

void post_recv(struct ctx *c, struct mreg *m, size_t off, size_t len,
	       void *ctx)
{
	POST_RETRY(c, "fi_recv",
		   fi_recv(c->ep, m->buf + off, len, m->desc, FI_ADDR_UNSPEC,
			   ctx));
	c->posted[CNTR_RECV]++;
}

void post_write(struct ctx *c, struct mreg *m, size_t off, size_t len,
		const struct remote *r, size_t roff, void *ctx)
{
	check_remote_range(r, roff, len);
	POST_RETRY(c, "fi_write",
		   fi_write(c->ep, m->buf + off, len, m->desc, c->peer,
			    r->base + roff, r->key, ctx));
	c->posted[CNTR_WRITE]++;
}

void post_read(struct ctx *c, struct mreg *m, size_t off, size_t len,
	       const struct remote *r, size_t roff, void *ctx)
{
	check_remote_range(r, roff, len);
	POST_RETRY(c, "fi_read",
		   fi_read(c->ep, m->buf + off, len, m->desc, c->peer,
			   r->base + roff, r->key, ctx));
	c->posted[CNTR_READ]++;
}
