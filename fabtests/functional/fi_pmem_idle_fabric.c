/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * fi_pmem_idle: one side's fabric objects (see fi_pmem_idle.c): buffers,
 * file limits, fabric/domain/endpoints, bounded waits and control messages.
 */
#include "fi_pmem_idle.h"

/* ------------------------------------------------------------- helpers */

static struct op *send_op(struct side *s)
{
	return &s->ops[s->o->conns];
}

static struct op *recv_op(struct side *s, int i)
{
	return &s->ops[s->o->conns + 1 + i];
}

static char *rx_slot(struct side *s, int i)
{
	return s->buf + (1 + i) * SLOT;
}

char *src_buf(struct side *s)
{
	return s->buf + (1 + NRECV) * SLOT;
}

void *desc(const struct side *s)
{
	return s->local_mr ? fi_mr_desc(s->local_mr) : NULL;
}

static int64_t min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

/* Raises the soft limit of open files to the hard one (1 socket a conn). */
void raise_fd_limit(long conns)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl)) {
		pm_complain("getrlimit(RLIMIT_NOFILE): %s", strerror(errno));
		return;
	}
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl))
		pm_complain("setrlimit(RLIMIT_NOFILE, %llu): %s",
			    (unsigned long long) rl.rlim_max, strerror(errno));
	else
		pm_say("open files limit: %llu",
		       (unsigned long long) rl.rlim_cur);
	if (rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < (rlim_t) conns + FD_SLACK)
		pm_say("warning: %ld connections need about %ld open files, "
		       "more than the limit of %llu", conns, conns + FD_SLACK,
		       (unsigned long long) rl.rlim_cur);
}

/* Open files now, and the limit: what a failing connect may run out of. */
void report_fds(void)
{
	DIR *dir = opendir("/proc/self/fd");
	struct rlimit rl;
	long n = 0;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		rl.rlim_cur = 0;
	if (!dir) {
		pm_complain("open files: limit %llu, /proc/self/fd: %s",
			    (unsigned long long) rl.rlim_cur, strerror(errno));
		return;
	}
	while (readdir(dir))
		n++;
	closedir(dir);
	pm_complain("open files: %ld (limit %llu)", n - 2,
		    (unsigned long long) rl.rlim_cur);
}

const char *event_name(uint32_t event)
{
	switch (event) {
	case FI_CONNREQ: return "FI_CONNREQ";
	case FI_CONNECTED: return "FI_CONNECTED";
	case FI_SHUTDOWN: return "FI_SHUTDOWN";
	default: return "an unexpected event";
	}
}

/* ------------------------------------------------------ fabric, domain */

/* MSG endpoints with small queues; one region serves every endpoint, so
 * no FI_MR_ENDPOINT. */
static struct fi_info *make_hints(const struct options *o)
{
	struct fi_info *h = fi_allocinfo();

	if (!h)
		return NULL;
	h->caps = FI_MSG | FI_RMA |
		  (pm_is_pmemverbs(o->prov) ? FI_RMA_PMEM : 0);
	h->mode = FI_CONTEXT | FI_CONTEXT2;
	h->ep_attr->type = FI_EP_MSG;
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				  FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	h->tx_attr->size = QUEUE_SIZE;
	h->rx_attr->size = QUEUE_SIZE;
	h->fabric_attr->prov_name = strdup(o->prov);
	if (!h->fabric_attr->prov_name) {
		fi_freeinfo(h);
		return NULL;
	}
	return h;
}

static int find_provider(struct side *s)
{
	const char *node = s->o->server ? s->o->server : PM_LISTEN_ADDR;
	struct fi_info *hints = make_hints(s->o);
	int ret;

	if (!hints)
		return pm_check(-FI_ENOMEM, "allocating fi_info hints");
	ret = fi_getinfo(PM_FI_VERSION, node, s->o->port,
			 s->o->server ? 0 : FI_SOURCE, hints, &s->res.info);
	fi_freeinfo(hints);
	if (ret)
		pm_complain("fi_getinfo found no %s FI_EP_MSG endpoint with RMA "
			    "(tx/rx size %d) for %s port %s: %s (for pmemverbs, "
			    "does FI_PROVIDER_PATH hold libpmemverbs-fi.so?)",
			    s->o->prov, QUEUE_SIZE, node, s->o->port,
			    fi_strerror(-ret));
	return ret;
}

/* The attributes of a CQ of size entries. */
static struct fi_cq_attr cq_attr_of(const struct side *s, size_t size)
{
	/* -m none: an application that never waits on its CQ (it polls
	 * while it has work); -m sread: one that waits in fi_cq_sread;
	 * -m unspec: a CQ with a wait object that the application neither
	 * waits on nor reads while idle (only the agent works); -m poll: an
	 * application that busy-reads its CQ (no wait object); -m sleep: as
	 * none, then one read every SLEEP_READ_GAP_MS (only the agent works);
	 * -m sread-sleep: as sread while idle, then as sleep; -m cntr: as
	 * poll, reading a counter that every endpoint's writes count in; -m
	 * eq: as poll, reading the EQ every endpoint is bound to; -q: no
	 * remote CQ data (FI_CQ_FORMAT_CONTEXT), the target's endpoints then
	 * take no gate, as over verbs */
	struct fi_cq_attr attr = {
		.size = size,
		.format = s->o->cq_per_conn && !s->o->server ?
			  FI_CQ_FORMAT_CONTEXT : FI_CQ_FORMAT_DATA,
		.wait_obj = mode_cq_without_wait(s->o->mode) ?
			    FI_WAIT_NONE : FI_WAIT_UNSPEC,
	};

	return attr;
}

/* Fabric, EQ, domain, pmemverbs's ops, the CQ and, for -m cntr, the
 * counter. */
static int open_domain(struct side *s)
{
	struct fi_eq_attr eq_attr = {
		.size = (size_t) (2 * s->o->conns + 16),
		.wait_obj = FI_WAIT_UNSPEC,
	};
	struct fi_cq_attr cq_attr = cq_attr_of(s, (size_t) (2 * s->o->conns +
							     64));
	struct fi_cntr_attr cntr_attr = { .events = FI_CNTR_EVENTS_COMP,
					  .wait_obj = FI_WAIT_NONE };
	int ret = pm_check(fi_fabric(s->res.info->fabric_attr, &s->res.fabric,
				     NULL), "fi_fabric");

	if (!ret)
		ret = pm_check(fi_eq_open(s->res.fabric, &eq_attr, &s->res.eq,
					  NULL), "fi_eq_open");
	if (!ret)
		ret = pm_check(fi_domain(s->res.fabric, s->res.info,
					 &s->res.domain, NULL), "fi_domain");
	if (!ret && pm_is_pmemverbs(s->o->prov))
		ret = pm_check(fi_open_ops(&s->res.domain->fid,
					   FI_PMEM_DOMAIN_OPS, 0,
					   (void **) &s->res.pmem_ops, NULL),
			       "fi_open_ops(" FI_PMEM_DOMAIN_OPS ")");
	if (!ret)
		ret = pm_check(fi_cq_open(s->res.domain, &cq_attr, &s->cq,
					  NULL), "fi_cq_open");
	if (!ret && !s->o->server && s->o->mode == MODE_CNTR)
		ret = pm_check(fi_cntr_open(s->res.domain, &cntr_attr,
					    &s->cntr, NULL), "fi_cntr_open");
	return ret;
}

/* Arrays of endpoints and operations, the buffer and its registration. */
static int alloc_side(struct side *s)
{
	s->nops = s->o->conns + 1 + NRECV;
	s->eps = calloc((size_t) s->o->conns, sizeof(*s->eps));
	s->own_cq = calloc((size_t) s->o->conns, sizeof(*s->own_cq));
	s->ops = calloc((size_t) s->nops, sizeof(*s->ops));
	if (posix_memalign((void **) &s->buf, 4096, BUF_LEN))
		s->buf = NULL;
	if (!s->eps || !s->own_cq || !s->ops || !s->buf)
		return pm_check(-FI_ENOMEM, "allocating endpoints and buffers");
	memset(s->buf, 0xa5, BUF_LEN);
	if (!pm_has_mr_mode(&s->res, FI_MR_LOCAL))
		return 0;
	return pm_register(&s->res, NULL, s->buf, BUF_LEN,
			   FI_SEND | FI_RECV | FI_READ | FI_WRITE,
			   PM_LOCAL_MR_KEY, 0, &s->local_mr);
}

int open_side(struct side *s)
{
	int ret = find_provider(s);

	if (!ret)
		ret = open_domain(s);
	if (!ret)
		ret = alloc_side(s);
	if (!ret)
		pm_say("%s over %s, domain %s, tx/rx size %zu/%zu, %ld "
		       "connections", s->res.info->fabric_attr->prov_name,
		       s->res.info->fabric_attr->name,
		       s->res.info->domain_attr->name,
		       s->res.info->tx_attr->size, s->res.info->rx_attr->size,
		       s->o->conns);
	return ret;
}

void close_side(struct side *s)
{
	long i;

	for (i = 0; i < s->neps; i++)
		pm_close_fid(s->eps[i] ? &s->eps[i]->fid : NULL,
			     "closing an endpoint");
	for (i = 0; s->own_cq && i < s->neps; i++)
		pm_close_fid(s->own_cq[i] ? &s->own_cq[i]->fid : NULL,
			     "closing a connection's CQ");
	pm_close_fid(s->region_mr ? &s->region_mr->fid : NULL,
		     "closing the region");
	pm_close_fid(s->local_mr ? &s->local_mr->fid : NULL,
		     "closing the local memory region");
	pm_close_fid(s->pep ? &s->pep->fid : NULL,
		     "closing the passive endpoint");
	pm_close_fid(s->cq ? &s->cq->fid : NULL, "closing the CQ");
	pm_close_fid(s->cntr ? &s->cntr->fid : NULL, "closing the counter");
	pm_close_fabric(&s->res);
	pm_unmap_file(&s->file);
	free(s->eps);
	free(s->own_cq);
	free(s->ops);
	free(s->buf);
}

/* The CQ of connection i: the one CQ, or with -q (target) one of its own
 * for each connection after the first (opened here). */
static int conn_cq(struct side *s, long i, struct fid_cq **cq)
{
	struct fi_cq_attr attr = cq_attr_of(s, 64);
	int ret;

	*cq = s->cq;
	if (!s->o->cq_per_conn || s->o->server || !i)
		return 0;
	ret = pm_check(fi_cq_open(s->res.domain, &attr, &s->own_cq[i], NULL),
		       "fi_cq_open of a connection's CQ");
	*cq = s->own_cq[i];
	return ret;
}

/* Opens endpoint i from info on the domain, bound to its CQ and the EQ
 * (and the counter, for FI_WRITE). */
int open_ep(struct side *s, struct fi_info *info, long i)
{
	int ret = pm_check(fi_endpoint(s->res.domain, info, &s->eps[i], NULL),
			   "fi_endpoint");
	struct fid_cq *cq;

	if (ret)
		return ret;
	s->neps = i + 1;
	ret = conn_cq(s, i, &cq);
	if (!ret)
		ret = pm_check(fi_ep_bind(s->eps[i], &cq->fid,
					  FI_TRANSMIT | FI_RECV),
			       "binding the CQ");
	if (!ret)
		ret = pm_check(fi_ep_bind(s->eps[i], &s->res.eq->fid, 0),
			       "binding the EQ");
	if (!ret && s->cntr)
		ret = pm_check(fi_ep_bind(s->eps[i], &s->cntr->fid, FI_WRITE),
			       "binding the counter");
	return ret ? ret : pm_check(fi_enable(s->eps[i]), "fi_enable");
}

/* Posts the NRECV control receives on the first endpoint. */
int post_recvs(struct side *s)
{
	int i, ret = 0;

	for (i = 0; i < NRECV && !ret; i++)
		ret = pm_check(fi_recv(s->eps[0], rx_slot(s, i), SLOT, desc(s),
				       0, &recv_op(s, i)->ctx), "fi_recv");
	return ret;
}

/* --------------------------------------------------- bounded waiting */

/*
 * Waits until the deadline for one connection event; an error entry is
 * reported unless it is quiet_err.
 */
int read_cm(struct side *s, int64_t deadline, int quiet_err,
	    uint32_t *event, struct fi_eq_cm_entry *entry)
{
	ssize_t ret;

	do {
		ret = fi_eq_sread(s->res.eq, event, entry, sizeof(*entry),
				  PM_POLL_INTERVAL_MS, 0);
	} while ((ret == -FI_EAGAIN || ret == -FI_EINTR) && !pm_past(deadline));
	if (ret == -FI_EAGAIN || ret == -FI_EINTR) {
		pm_complain("no connection event within the time limit");
		return -FI_ETIMEDOUT;
	}
	if (ret == -FI_EAVAIL)
		return pm_report_eq_error(s->res.eq, "connection", quiet_err);
	return ret < 0 ? pm_check(ret, "fi_eq_sread") : 0;
}

/* Once all are connected, any connection event means the peer failed. */
static bool peer_gone(struct side *s)
{
	struct fi_eq_cm_entry entry;
	uint32_t event;
	ssize_t ret = fi_eq_read(s->res.eq, &event, &entry, sizeof(entry), 0);

	if (ret == -FI_EAVAIL)
		pm_report_eq_error(s->res.eq, "connection", 0);
	else if (ret >= 0 && event == FI_SHUTDOWN)
		pm_complain("the peer shut a connection down");
	else if (ret >= 0)
		pm_complain("unexpected connection event %s",
			    event_name(event));
	return ret >= 0 || ret == -FI_EAVAIL;
}

/* Marks the operation of a CQ entry done; an unknown context fails. */
static int mark_done(struct side *s, void *ctx, const char *what)
{
	uintptr_t p = (uintptr_t) ctx, first = (uintptr_t) s->ops;

	if (p < first || p >= (uintptr_t) (s->ops + s->nops) ||
	    (p - first) % sizeof(*s->ops)) {
		pm_complain("%s: a completion with an unknown context %p", what,
			    ctx);
		return -FI_EOTHER;
	}
	((struct op *) ctx)->done = true;
	return 0;
}

/* Busy-polls the CQ for one entry until the deadline. */
static int spin_read(struct fid_cq *cq, int64_t deadline, const char *what,
		     struct fi_cq_data_entry *entry)
{
	ssize_t ret;

	do {
		ret = fi_cq_read(cq, entry, 1);
	} while (ret == -FI_EAGAIN && !pm_past(deadline));
	if (ret == -FI_EAGAIN)
		return -FI_ETIMEDOUT;
	if (ret == -FI_EAVAIL)
		return pm_report_cq_error(cq, what);
	return ret < 0 ? pm_check(ret, what) : 0;
}

/*
 * Reads CQ entries (busy-polling with spin, else in fi_cq_sread) until op
 * completed or the deadline passed, checking the peer between slices.
 */
int wait_op(struct side *s, struct op *op, int64_t deadline,
	    bool spin, const char *what)
{
	struct fi_cq_data_entry e;
	int64_t slice;
	int ret = 0;

	while (!op->done && !ret) {
		slice = min64(deadline, pm_now_ns() + SLICE_NS);
		ret = spin ? spin_read(s->cq, slice, what, &e) :
		      pm_read_one_before(s->cq, slice, what, &e);
		if (!ret)
			ret = mark_done(s, e.op_context, what);
		else if (ret == -FI_ETIMEDOUT && peer_gone(s))
			ret = -FI_ECONNRESET;
		else if (ret == -FI_ETIMEDOUT && !pm_past(deadline))
			ret = 0;
	}
	if (ret == -FI_ETIMEDOUT)
		pm_complain("%s: timed out", what);
	return ret;
}

/* Drives the core's progress while a post returns -FI_EAGAIN. */
void nudge(struct side *s)
{
	(void) fi_cq_read(s->cq, NULL, 0);
}

/* ------------------------------------------------------------- control */

/* Sends a control message on the first connection and waits for it. */
int send_ctrl(struct side *s, const struct ctrl_msg *msg,
	      const char *what)
{
	int64_t deadline = pm_now_ns() + PM_OP_TIMEOUT_NS;
	struct op *op = send_op(s);
	ssize_t ret;

	memcpy(s->buf, msg, sizeof(*msg));
	op->done = false;
	while ((ret = fi_send(s->eps[0], s->buf, sizeof(*msg), desc(s), 0,
			      &op->ctx)) == -FI_EAGAIN && !pm_past(deadline))
		nudge(s);
	ret = pm_check(ret, what);
	return ret ? (int) ret : wait_op(s, op, deadline, false, what);
}

int send_type(struct side *s, enum msg_type type, const char *what)
{
	struct ctrl_msg msg = { .type = htole64(type) };

	return send_ctrl(s, &msg, what);
}

/* Waits for control receive i, which must hold a message of type. */
int recv_ctrl(struct side *s, int i, enum msg_type type,
	      int64_t timeout_ns, const char *what, struct ctrl_msg *out)
{
	int ret = wait_op(s, recv_op(s, i), pm_now_ns() + timeout_ns, false,
			  what);
	struct ctrl_msg msg;

	if (ret)
		return ret;
	memcpy(&msg, rx_slot(s, i), sizeof(msg));
	if (le64toh(msg.type) != type) {
		pm_complain("%s: message of type %" PRIu64 ", expected %d",
			    what, le64toh(msg.type), (int) type);
		return -FI_EOTHER;
	}
	if (out) {
		out->type = type;
		out->addr = le64toh(msg.addr);
		out->key = le64toh(msg.key);
		out->len = le64toh(msg.len);
		out->profile = le64toh(msg.profile);
	}
	return 0;
}
