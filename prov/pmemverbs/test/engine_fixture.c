/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The initiator's unit tests' fixture (engine_fixture.h): a fake core
 * endpoint that records what is posted (librpma's pattern: its calls fail
 * through the provider's fault points, armed by fail_core_call), and the
 * pmemverbs objects and hands around it.  Completions and acks are
 * delivered by hand, so every path is driven without a network.
 */
#include <stdlib.h>
#include <string.h>

#include "engine_fixture.h"

/* The fake core endpoint. */
struct post g_posts[MAX_POSTS];
unsigned g_nposts;
pthread_mutex_t *g_watched;

/* True if this thread holds g_watched (a default mutex: trylock fails). */
static bool watched_held(void)
{
	if (!g_watched || pthread_mutex_trylock(g_watched))
		return g_watched != NULL;
	pthread_mutex_unlock(g_watched);
	return false;
}

/* Records one call of the core. */
static ssize_t fake_post(const struct fi_msg_rma *msg, uint64_t flags,
			 bool read)
{
	struct post *p;

	cr_assert_lt(g_nposts, MAX_POSTS);
	p = &g_posts[g_nposts++];
	memset(p, 0, sizeof(*p));
	p->read = read;
	p->watched_held = watched_held();
	p->flags = flags;
	p->addr = msg->rma_iov[0].addr;
	p->len = msg->rma_iov[0].len;
	p->context = msg->context;
	p->data = msg->data;
	if (!read && msg->iov_count && msg->msg_iov[0].iov_len <= sizeof(p->bytes))
		memcpy(p->bytes, msg->msg_iov[0].iov_base, msg->msg_iov[0].iov_len);
	p->iov_count = msg->iov_count;
	p->rma_iov_count = msg->rma_iov_count;
	p->last_rma = msg->rma_iov[msg->rma_iov_count - 1];
	cr_assert_leq(msg->rma_iov_count, 8);
	memcpy(p->rma, msg->rma_iov, msg->rma_iov_count * sizeof(p->rma[0]));
	if (!read && msg->iov_count &&
	    msg->msg_iov[msg->iov_count - 1].iov_len <= sizeof(p->last_bytes))
		memcpy(p->last_bytes, msg->msg_iov[msg->iov_count - 1].iov_base,
		       msg->msg_iov[msg->iov_count - 1].iov_len);
	return 0;
}

static ssize_t fake_writemsg(struct fid_ep *ep, const struct fi_msg_rma *msg,
			     uint64_t flags)
{
	(void) ep;
	return fake_post(msg, flags, false);
}

static ssize_t fake_readmsg(struct fid_ep *ep, const struct fi_msg_rma *msg,
			    uint64_t flags)
{
	(void) ep;
	return fake_post(msg, flags, true);
}

/* The core's fi_write, recorded as the fi_writemsg it amounts to. */
static ssize_t fake_write(struct fid_ep *ep, const void *buf, size_t len,
			  void *desc, fi_addr_t dest_addr, uint64_t addr,
			  uint64_t key, void *context)
{
	struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };
	struct fi_rma_iov rma = { .addr = addr, .len = len, .key = key };
	struct fi_msg_rma msg = { .msg_iov = &iov, .desc = &desc,
				  .iov_count = 1, .addr = dest_addr,
				  .rma_iov = &rma, .rma_iov_count = 1,
				  .context = context };

	(void) ep;
	return fake_post(&msg, 0, false);
}

static struct fi_ops_rma g_fake_rma = {
	.size = sizeof(struct fi_ops_rma),
	.write = fake_write,
	.writemsg = fake_writemsg,
	.readmsg = fake_readmsg,
};
/* The core's fi_control: records FI_SETOPSFLAG's flags, answers
 * g_control_ret. */
uint64_t g_control_flags;
int g_control_ret;

static int fake_ep_control(struct fid *fid, int command, void *arg)
{
	(void) fid;
	if (command == FI_SETOPSFLAG)
		g_control_flags = *(uint64_t *) arg;
	return g_control_ret;
}

static struct fi_ops g_fake_ep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.control = fake_ep_control,
};
static struct fid_ep g_core_ep = { .fid = { .ops = &g_fake_ep_fi_ops },
				   .rma = &g_fake_rma };
static struct fid_mr g_inbox_mr;

/* The pmemverbs objects around it. */
struct pmv_domain g_dom;
struct pmv_cq *g_cq;
struct pmv_ep *g_ep;
bool g_cq_opened;


struct pmv_ep *open_ep(void)
{
	struct pmv_ep *ep = calloc(1, sizeof(*ep));

	ep->core = &g_core_ep;
	ep->domain = &g_dom;
	ep->pmem = true;
	ep->tx_cq = g_cq;
	ep->raw_ordered = true;
	ep->inbox.slot_size = 128;
	ep->inbox.size = 64 * sizeof(struct pmv_ack) + 64 * 128 + 64 + 65 * 8 +
			 PMV_PROFILES_SIZE;
	ep->inbox.mem = calloc(1, ep->inbox.size);
	ep->inbox.gen_word = (uint64_t *) ((char *) ep->inbox.mem +
					   64 * sizeof(struct pmv_ack) + 64 * 128);
	ep->inbox.flush_words = ep->inbox.gen_word + 8;
	ep->inbox.probe_word = ep->inbox.flush_words + 64;
	ep->inbox.profiles = ep->inbox.probe_word + 1; /* nothing pushed */
	ep->inbox.mr = &g_inbox_mr;
	ep->peer = (struct pmv_peer) {
		.known = true, .has_inbox = true, .inbox_key = INBOX_KEY,
		.slots = PMV_SLOTS, .slot_size = 128,
		.transport = PMV_TRANSPORT_TCP,
		.gated = true, .gate_id = GATE_ID, /* a tcp peer's, DATA CQ */
	};
	cr_assert_eq(pmv_ini_open(ep), 0);
	ep->hook.busy_for = &g_cq->hooks; /* as a tx CQ bind */
	pmv_hooks_add(&g_dom.engines, &ep->hook);
	return ep;
}

void close_ep(struct pmv_ep *ep)
{
	pmv_hooks_remove(&g_dom.engines, &ep->hook);
	pmv_ini_close(ep);
	free(ep->inbox.mem);
	free(ep);
}

/* A fresh completion queue for the engine's operations. */
void open_cq(void)
{
	g_cq = calloc(1, sizeof(*g_cq));
	pthread_mutex_init(&g_cq->lock, NULL);
	pthread_mutex_init(&g_cq->aux_lock, NULL);
	g_cq->domain = &g_dom;
	pmv_hooks_init(&g_cq->hooks, &g_dom);
	pmv_iop_pool_init(&g_cq->iops);
}

void close_cq(void)
{
	pmv_iop_pool_fini(&g_cq->iops);
	free(g_cq->aux);
	free(g_cq);
}

/* The domain, the parameters, the fault points and the fake core's log,
 * fresh. */
void setup_params(void)
{
	memset(&g_dom, 0, sizeof(g_dom));
	pthread_mutex_init(&g_dom.lock, NULL);
	pmv_hooks_init(&g_dom.engines, NULL);
	pmv_hooks_init(&g_dom.served, NULL);
	g_watched = NULL;
	g_dom.inject_size = 128;
	g_dom.caps = FI_RMA_PMEM;
	g_dom.transport = PMV_TRANSPORT_TCP;
	pmv_params.extent_limit = 4;
	pmv_params.method = FI_PMEM_METHOD_NONE;
	pmv_params.peer_timeout_ms = 10000;
	pmv_params.peer_probe_ms = 100;
	pmv_params.join_request = 0; /* the two-write path, as over RDMA */
	pmv_params.push_profiles = 1;
	pmv_params.delivery_is_commit = 0;
	g_control_flags = 0;
	g_control_ret = 0;
	g_nposts = 0;
	pmv_params.fault_core = pmv_params.fault_core_full = 0;
	pmv_params.fault_alloc = 0;
	pmv_fault_reset();
}

void setup(void)
{
	setup_params();
	open_cq();
	g_ep = open_ep();
}

/* Safe to run twice (a test's fini after its suite's). */
void teardown(void)
{
	if (g_ep)
		close_ep(g_ep);
	g_ep = NULL;
	if (g_cq && g_cq_opened)
		cr_assert_eq(fi_close(&g_cq->cq_fid.fid), 0);
	else if (g_cq)
		close_cq();
	g_cq = NULL;
	g_cq_opened = false;
}

/* The nth core call of the engine from now fails with err, through the
 * fault point that stands in front of the core (pmv_ring.c). */
void fail_core_call(unsigned nth, int err)
{
	pmv_fault_reset();
	pmv_params.fault_core = err == -FI_EAGAIN ? 0 : (int) nth;
	pmv_params.fault_core_full = err == -FI_EAGAIN ? (int) nth : 0;
}

/* Delivers the completion of post i (err 0: success). */
void complete_post(unsigned i, int err)
{
	struct fi_cq_err_entry e = { .op_context = g_posts[i].context,
				     .err = err };
	struct pmv_iop *iop = pmv_iop_find(&g_cq->iops, g_posts[i].context);

	cr_assert_not_null(iop, "post %u has no internal context", i);
	pmv_iop_complete(&g_cq->iops, iop, err ? &e : NULL);
}

/* Every read-flush read lands the target's generation gen (as the core
 * would copy the word of the peer's inbox into the landing words). */
void reads_bring(uint64_t gen)
{
	for (unsigned i = 0; i < PMV_SLOTS; i++)
		g_ep->inbox.flush_words[i] = gen;
}

/* Writes the ack of request seq into ep's inbox, as the agent would. */
void ack_lands(struct pmv_ep *ep, uint64_t seq, int status, uint8_t profile,
	       uint32_t gen)
{
	struct pmv_ack a = { .seq = seq, .status = status, .profile = profile,
			     .mr_gen = gen };

	pmv_ack_encode(&a);
	memcpy(pmv_inbox_ack(&ep->inbox, seq), &a, sizeof(a));
}

void ack(struct pmv_ep *ep, uint64_t seq, int status, uint8_t profile,
	 uint32_t gen)
{
	ack_lands(ep, seq, status, profile, gen);
	ep->hook.progress(ep->hook.arg);
}

/* Writes one ack for requests first .. first + covers - 1, the last one's
 * status, as the agent does for a batch. */
void ack_covering(struct pmv_ep *ep, uint64_t first, uint16_t covers,
		  int status)
{
	struct pmv_ack a = { .seq = first, .covers = covers, .status = status,
			     .profile = FI_PMEM_PROFILE_PAGE };

	pmv_ack_encode(&a);
	memcpy(pmv_inbox_ack(&ep->inbox, first), &a, sizeof(a));
	ep->hook.progress(ep->hook.arg);
}

/* Pops one entry of the CQ's own queue; false if none. */
bool pop(struct fi_cq_err_entry *out, bool *is_error)
{
	struct pmv_cq_aux *a;

	if (!g_cq->aux_count)
		return false;
	a = &g_cq->aux[g_cq->aux_head];
	*out = a->entry;
	*is_error = a->is_error;
	g_cq->aux_head = (g_cq->aux_head + 1) % g_cq->aux_cap;
	g_cq->aux_count--;
	return true;
}

ssize_t commit(struct pmv_ep *ep, uint64_t off, size_t len, uint64_t flags,
	       void *ctx)
{
	static uint8_t buf[4096];
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct fi_rma_iov rma = { .addr = off, .len = len, .key = REGION_KEY };
	struct fi_msg_rma msg = { .msg_iov = &iov, .iov_count = len ? 1 : 0,
				  .rma_iov = &rma, .rma_iov_count = 1,
				  .context = ctx };

	return pmv_commit_writemsg(ep, &msg, FI_COMMIT_COMPLETE | flags);
}

/* Over tcp toward a gated peer (FI_PMEMVERBS_JOIN_REQUEST): data and
 * request in one write. */
void join_requests(void)
{
	pmv_params.join_request = 1;
}

/* Learns a key's profile (MHP) through an agent commit. */
void learn_mhp(uint32_t gen)
{
	struct fi_cq_err_entry e;
	bool err;

	cr_assert_eq(commit(g_ep, 0, 8, 0, NULL), 0);
	complete_post(g_nposts - 2, 0);
	complete_post(g_nposts - 1, 0);
	ack(g_ep, 1, 0, FI_PMEM_PROFILE_MHP, gen);
	cr_assert(pop(&e, &err) && !err);
}

/* The target pushes its table into ep's inbox: REGION_KEY is profile, in
 * generation gen (as target/pmv_publish.c does). */
void push_table(struct pmv_ep *ep, uint8_t profile, uint32_t gen)
{
	struct pmv_profiles t = { .mr_gen = gen, .count = 1 };
	size_t len;

	t.e[0] = (struct pmv_profile_entry) { .key = REGION_KEY,
					      .profile = profile };
	len = pmv_profiles_encode(&t, PMV_PROFILES_SIZE);
	cr_assert_gt(len, 0);
	memcpy(ep->inbox.profiles, &t, len);
}

/* The generation request seq carries, in the bytes of post i. */
uint32_t posted_req_gen(unsigned i, uint64_t seq)
{
	uint64_t wire[256 / 8], host[256 / 8];
	struct pmv_req *req = (struct pmv_req *) host;

	memcpy(wire, g_posts[i].bytes, sizeof(wire));
	cr_assert_gt(pmv_req_decode(wire, sizeof(wire), seq, req), 0,
		     "post %u is not request %llu", i, (unsigned long long) seq);
	return req->gen;
}

/* The first commit of the endpoint, to REGION_KEY, refused by the agent. */
void fail_first_commit(void)
{
	struct fi_cq_err_entry e;
	bool err;

	cr_assert_eq(commit(g_ep, 0, 64, 0, NULL), 0);
	complete_post(0, 0);
	complete_post(1, 0);
	ack(g_ep, 1, PMV_ERR_RANGE, 0, 0);
	cr_assert(pop(&e, &err) && err);
}

/*
 * Issue 25 item 7: the overlap rule.  A fenced 32-byte commit goes by
 * send to [1000, 1032) of the key (its data is placed by the target's
 * agent when it serves the request); then a later operation of the named
 * method overlapping it.
 */
void earlier_send_in_flight(void)
{
	uint64_t sends = g_ep->counters.sends;

	pmv_params.method = FI_PMEM_METHOD_SEND;
	cr_assert_eq(commit(g_ep, 1000, 32, FI_FENCE, NULL), 0);
	cr_assert_eq(g_ep->counters.sends, sends + 1, "not by send");
	pmv_params.method = FI_PMEM_METHOD_NONE;
}

/* Learns the key's profile through an agent commit acked as request 1. */
void learn_profile(uint8_t profile, uint32_t gen)
{
	struct fi_cq_err_entry e;
	bool err;

	pmv_params.method = FI_PMEM_METHOD_AGENT;
	cr_assert_eq(commit(g_ep, 8192, 8, 0, NULL), 0);
	pmv_params.method = FI_PMEM_METHOD_NONE;
	complete_post(g_nposts - 2, 0);
	complete_post(g_nposts - 1, 0);
	ack(g_ep, 1, 0, profile, gen);
	cr_assert(pop(&e, &err) && !err);
}

/*
 * The later commit (of method m, by choice or override) must post nothing
 * (-FI_EAGAIN) while the send at seq is not acked, then go once it is.
 */
void later_commit_waits(enum fi_pmem_method m, uint64_t off, size_t len,
			uint64_t send_seq, uint8_t profile)
{
	unsigned posts = g_nposts;

	pmv_params.method = m;
	cr_assert_eq(commit(g_ep, off, len, 0, NULL), -FI_EAGAIN,
		     "a %zu-byte commit (method %d) over an earlier send in "
		     "flight was posted", len, m);
	cr_assert_eq(g_nposts, posts, "the waiting commit posted something");
	ack(g_ep, send_seq, 0, profile, 5);
	cr_assert_eq(commit(g_ep, off, len, 0, NULL), 0,
		     "the commit did not go once the send was acked");
	pmv_params.method = FI_PMEM_METHOD_NONE;
}

/*
 * Issue 25 item 2: sixteen 8-byte writes a MiB apart, then a commit.  The
 * requests (a slot of 128 bytes holds 5 extents) name every written byte
 * and no page nobody wrote: the extents that do not fit the commit's
 * request go ahead in internal ones.  Returns the number of requests;
 * their extents go to ext (*n of them).
 */
unsigned scattered_commit(int *ctx, struct pmv_extent *ext, unsigned *n)
{
	uint64_t buf[32];
	struct pmv_req *req;
	unsigned i, nreq = 0;

	for (i = 0; i < SCATTERED; i++)
		cr_assert_eq(pmv_ini_track(g_ep, REGION_KEY,
					   i * 1048576ULL + 16, 8), 0);
	cr_assert_eq(commit(g_ep, SCATTERED * 1048576ULL, 8, 0, ctx), 0);
	*n = 0;
	for (i = 0; i < g_nposts; i++) {
		if (g_posts[i].last_rma.key != INBOX_KEY)
			continue;
		req = (struct pmv_req *) buf;
		cr_assert_gt(pmv_req_decode(g_posts[i].bytes,
					    g_posts[i].last_rma.len,
					    nreq + 1, req), 0);
		memcpy(ext + *n, req->ext, req->nextents * sizeof(*ext));
		*n += req->nextents;
		nreq++;
	}
	return nreq;
}

/* fi_write of 64 bytes at off (the endpoint's default op_flags apply). */
ssize_t default_write(uint64_t off, void *ctx)
{
	static uint8_t buf[64];

	return pmv_rma_pmem_ops.write(&g_ep->ep_fid, buf, sizeof(buf), NULL,
				      0, off, REGION_KEY, ctx);
}

/* The operation of context ctx went as an agent commit: its data write and
 * its request, and its completion only at the target's ack. */
void assert_agent_commit(void *ctx)
{
	struct fi_cq_err_entry e;
	bool err;

	cr_assert_eq(g_nposts, 2, "expected a data write and a commit "
		     "request, got %u core posts", g_nposts);
	cr_assert_neq(g_posts[0].context, ctx, "the write went to the core "
		      "as the application's own, a plain write");
	complete_post(0, 0);
	complete_post(1, 0);
	g_ep->hook.progress(g_ep->hook.arg);
	cr_assert(!pop(&e, &err), "completed before the target's ack");
	ack(g_ep, 1, 0, FI_PMEM_PROFILE_PAGE, 0);
	cr_assert(pop(&e, &err), "no completion at the target's ack");
	cr_assert(!err);
	cr_assert_eq(e.op_context, ctx);
}

/* The request a post carries in its last segment, decoded into buf. */
struct pmv_req *request_of(const struct post *p, uint64_t seq,
			   uint64_t buf[32])
{
	struct pmv_req *req = (struct pmv_req *) buf;

	cr_assert_gt(pmv_req_decode(p->last_bytes, p->last_rma.len, seq, req),
		     0, "the last segment is not request %llu",
		     (unsigned long long) seq);
	return req;
}
