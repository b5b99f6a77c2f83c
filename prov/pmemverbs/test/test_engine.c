/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Unit tests: the initiator's commit engine (initiator/) against a fake
 * core endpoint that records what is posted and fails the N-th call on
 * demand (librpma's fault-injection pattern).  Completions and acks are
 * delivered by hand, so every path is driven without a network: a commit
 * is reported once, never before its ack (or flush op), with its own
 * context; a failure at any core call ends in an error return or an error
 * completion; a closed endpoint's late completions are dropped.
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "pmv.h"

/* The fake core endpoint. */
#define MAX_POSTS 64
struct post {
	bool read;
	uint64_t flags;
	uint64_t addr;
	size_t len;
	void *context;
	uint64_t data;              /* its remote CQ data */
	uint8_t bytes[256];
	size_t iov_count, rma_iov_count;
	struct fi_rma_iov last_rma; /* its last remote segment */
	struct fi_rma_iov rma[8];   /* its remote segments (8 at most) */
	uint8_t last_bytes[256];    /* and the bytes it carries */
	bool watched_held;          /* posted with g_watched held (by us) */
};
static struct post g_posts[MAX_POSTS];
static unsigned g_nposts;
static unsigned g_calls, g_fail_at; /* fail the g_fail_at-th call */
static ssize_t g_fail_ret = -FI_EIO;
static pthread_mutex_t *g_watched; /* a pmemverbs lock posts must not hold */

/* True if this thread holds g_watched (a default mutex: trylock fails). */
static bool watched_held(void)
{
	if (!g_watched || pthread_mutex_trylock(g_watched))
		return g_watched != NULL;
	pthread_mutex_unlock(g_watched);
	return false;
}

static ssize_t fake_post(const struct fi_msg_rma *msg, uint64_t flags,
			 bool read)
{
	struct post *p;

	if (++g_calls == g_fail_at)
		return g_fail_ret;
	cr_assert_lt(g_nposts, MAX_POSTS);
	p = &g_posts[g_nposts++];
	memset(p, 0, sizeof(*p));
	p->read = read;
	p->flags = flags;
	p->watched_held = watched_held();
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
static uint64_t g_control_flags;
static int g_control_ret;

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
static struct pmv_domain g_dom;
static struct pmv_cq *g_cq;
static struct pmv_ep *g_ep;

#define INBOX_KEY 0x77
#define REGION_KEY 0x1234
#define GATE_ID 0x0403

static struct pmv_ep *open_ep(void)
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
	pmv_hooks_add(&g_cq->hooks, &ep->hook);
	return ep;
}

static void close_ep(struct pmv_ep *ep)
{
	pmv_hooks_remove(&g_cq->hooks, &ep->hook);
	pmv_ini_close(ep);
	free(ep->inbox.mem);
	free(ep);
}

/* A fresh completion queue for the engine's operations. */
static void open_cq(void)
{
	g_cq = calloc(1, sizeof(*g_cq));
	pthread_mutex_init(&g_cq->lock, NULL);
	pthread_mutex_init(&g_cq->aux_lock, NULL);
	pmv_hooks_init(&g_cq->hooks);
	pmv_iop_pool_init(&g_cq->iops);
}

static void close_cq(void)
{
	pmv_iop_pool_fini(&g_cq->iops);
	free(g_cq->aux);
	free(g_cq);
}

/* The domain, the parameters and the fake endpoint's counters, fresh. */
static void setup_params(void)
{
	memset(&g_dom, 0, sizeof(g_dom));
	pthread_mutex_init(&g_dom.lock, NULL);
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
	g_nposts = g_calls = g_fail_at = 0;
	g_watched = NULL;
	g_fail_ret = -FI_EIO;
}

static void setup(void)
{
	setup_params();
	open_cq();
	g_ep = open_ep();
}

static bool g_cq_opened; /* by pmv_cq_open (setup_with_core_cq) */

/* Safe to run twice (a test's fini after its suite's). */
static void teardown(void)
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

TestSuite(engine, .init = setup, .fini = teardown);

/* Delivers the completion of post i (err 0: success). */
static void complete_post(unsigned i, int err)
{
	struct fi_cq_err_entry e = { .op_context = g_posts[i].context,
				     .err = err };
	struct pmv_iop *iop = pmv_iop_find(&g_cq->iops, g_posts[i].context);

	cr_assert_not_null(iop, "post %u has no internal context", i);
	pmv_iop_complete(&g_cq->iops, iop, err ? &e : NULL);
}

/* Every read-flush read lands the target's generation gen (as the core
 * would copy the word of the peer's inbox into the landing words). */
static void reads_bring(uint64_t gen)
{
	for (unsigned i = 0; i < PMV_SLOTS; i++)
		g_ep->inbox.flush_words[i] = gen;
}

/* Writes the ack of request seq into ep's inbox, as the agent would. */
static void ack(struct pmv_ep *ep, uint64_t seq, int status, uint8_t profile,
		uint32_t gen)
{
	struct pmv_ack a = { .seq = seq, .status = status, .profile = profile,
			     .mr_gen = gen };

	pmv_ack_encode(&a);
	memcpy(pmv_inbox_ack(&ep->inbox, seq), &a, sizeof(a));
	ep->hook.progress(ep->hook.arg);
}

/* Writes one ack for requests first .. first + covers - 1, the last one's
 * status, as the agent does for a batch. */
static void ack_covering(struct pmv_ep *ep, uint64_t first, uint16_t covers,
			 int status)
{
	struct pmv_ack a = { .seq = first, .covers = covers, .status = status,
			     .profile = FI_PMEM_PROFILE_PAGE };

	pmv_ack_encode(&a);
	memcpy(pmv_inbox_ack(&ep->inbox, first), &a, sizeof(a));
	ep->hook.progress(ep->hook.arg);
}

/* Pops one entry of the CQ's own queue; false if none. */
static bool pop(struct fi_cq_err_entry *out, bool *is_error)
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

static ssize_t commit(struct pmv_ep *ep, uint64_t off, size_t len,
		      uint64_t flags, void *ctx)
{
	static uint8_t buf[4096];
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct fi_rma_iov rma = { .addr = off, .len = len, .key = REGION_KEY };
	struct fi_msg_rma msg = { .msg_iov = &iov, .iov_count = len ? 1 : 0,
				  .rma_iov = &rma, .rma_iov_count = 1,
				  .context = ctx };

	return pmv_commit_writemsg(ep, &msg, FI_COMMIT_COMPLETE | flags);
}

Test(engine, agent_commit_completes_only_at_its_ack)
{
	struct fi_cq_err_entry e;
	bool err;
	int ctx;

	cr_assert_eq(commit(g_ep, 0, 1000, 0, &ctx), 0);
	cr_assert_eq(g_nposts, 2, "data write and request");
	cr_assert(!g_posts[0].read && g_posts[0].addr == 0);
	cr_assert_eq(g_posts[1].flags & FI_INJECT, FI_INJECT);
	complete_post(0, 0);
	complete_post(1, 0);
	g_ep->hook.progress(g_ep->hook.arg);
	cr_assert(!pop(&e, &err), "completed before the target's ack");
	ack(g_ep, 1, 0, FI_PMEM_PROFILE_PAGE, 0);
	cr_assert(pop(&e, &err));
	cr_assert(!err);
	cr_assert_eq(e.op_context, &ctx);
	cr_assert(!pop(&e, &err), "reported twice");
}

/* Three agent commits, their posts completed; returns nothing. */
static void three_commits(int ctx[3])
{
	for (int i = 0; i < 3; i++)
		cr_assert_eq(commit(g_ep, (uint64_t) i * 64, 64, 0, &ctx[i]), 0);
	for (unsigned i = 0; i < g_nposts; i++)
		complete_post(i, 0);
}

Test(engine, one_ack_covering_three_requests_completes_them_in_order)
{
	struct fi_cq_err_entry e;
	bool err;
	int ctx[3];

	three_commits(ctx);
	ack_covering(g_ep, 1, 3, -FI_EIO);
	for (int i = 0; i < 3; i++) {
		cr_assert(pop(&e, &err), "commit %d not completed", i);
		cr_assert_eq(e.op_context, &ctx[i]);
		cr_assert_eq(err, i == 2, "only the last carries the status");
	}
	cr_assert(!pop(&e, &err));
}

Test(engine, an_ack_covering_more_than_was_sent_ends_only_what_was_sent)
{
	struct fi_cq_err_entry e;
	bool err;
	int ctx[3], n = 0;

	three_commits(ctx);
	ack_covering(g_ep, 1, 60, 0);
	while (pop(&e, &err))
		cr_assert_eq(e.op_context, &ctx[n++]);
	cr_assert_eq(n, 3);
	cr_assert_eq(commit(g_ep, 192, 64, 0, &ctx[0]), 0, "the ring is "
		     "still usable");
}

Test(engine, ack_before_the_data_write_completes_waits_for_it)
{
	struct fi_cq_err_entry e;
	bool err;
	int ctx;

	cr_assert_eq(commit(g_ep, 0, 64, 0, &ctx), 0);
	ack(g_ep, 1, 0, FI_PMEM_PROFILE_DMP, 0);
	cr_assert(!pop(&e, &err), "completed with its data write in flight");
	complete_post(0, 0);
	complete_post(1, 0);
	cr_assert(pop(&e, &err) && !err && e.op_context == &ctx);
}

/* Every core call of an agent commit, failed in turn. */
Test(engine, a_failed_core_call_never_completes_a_commit)
{
	for (unsigned n = 1; n <= 2; n++) {
		struct fi_cq_err_entry e;
		bool err, reported = false;
		ssize_t ret;
		int ctx;

		close_ep(g_ep);
		g_nposts = g_calls = 0;
		g_fail_at = g_calls + n;
		g_ep = open_ep();
		ret = commit(g_ep, 0, 64, 0, &ctx);
		for (unsigned i = 0; i < g_nposts; i++)
			complete_post(i, 0);
		g_ep->hook.progress(g_ep->hook.arg);
		while (pop(&e, &err))
			if (e.op_context == &ctx) {
				cr_assert(err, "call %u failed, yet the commit "
					  "succeeded", n);
				reported = true;
			}
		cr_assert(ret < 0 || reported, "call %u failed: neither an "
			  "error return (%zd) nor an error completion", n, ret);
		cr_assert(ret != -FI_EAGAIN || g_nposts == 0,
			  "-FI_EAGAIN after something was sent");
	}
}

Test(engine, a_request_the_core_cannot_take_waits_in_the_ring)
{
	struct fi_cq_err_entry e;
	bool err;
	int ctx, ctx2;

	g_fail_at = 2; /* the request after the data */
	g_fail_ret = -FI_EAGAIN;
	cr_assert_eq(commit(g_ep, 0, 64, 0, &ctx), 0, "the data went");
	cr_assert_eq(g_nposts, 1);
	cr_assert_eq(commit(g_ep, 4096, 64, 0, &ctx2), -FI_EAGAIN,
		     "a later commit must not overtake the waiting request");
	g_ep->hook.progress(g_ep->hook.arg); /* the request goes now */
	cr_assert_eq(g_nposts, 2);
	cr_assert_eq(g_posts[1].addr, pmv_peer_req_addr(&g_ep->peer, 1));
	complete_post(0, 0);
	complete_post(1, 0);
	ack(g_ep, 1, 0, FI_PMEM_PROFILE_PAGE, 0);
	cr_assert(pop(&e, &err) && !err && e.op_context == &ctx);
}

Test(engine, an_internal_error_completes_the_commit_with_its_context)
{
	struct fi_cq_err_entry e;
	bool err;
	int ctx;

	cr_assert_eq(commit(g_ep, 0, 64, 0, &ctx), 0);
	complete_post(0, FI_ECONNRESET);
	cr_assert(pop(&e, &err));
	cr_assert(err);
	cr_assert_eq(e.op_context, &ctx);
	cr_assert_eq(e.err, FI_ECONNRESET);
	complete_post(1, FI_ECONNRESET);
	ack(g_ep, 1, 0, FI_PMEM_PROFILE_PAGE, 0);
	cr_assert(!pop(&e, &err), "reported twice");
}

/*
 * A closed endpoint's commit is canceled, and its late completions go to
 * its own engine: a new endpoint on the same CQ sees none of them.
 */
Test(engine, a_closed_endpoints_late_completions_are_dropped)
{
	struct fi_cq_err_entry e;
	struct pmv_ep *next;
	bool err;
	int ctx_old, ctx_new;

	cr_assert_eq(commit(g_ep, 0, 64, 0, &ctx_old), 0);
	close_ep(g_ep);
	g_ep = NULL;
	cr_assert(pop(&e, &err) && err && e.op_context == &ctx_old);
	cr_assert_eq(e.err, FI_ECANCELED);
	next = open_ep();
	cr_assert_eq(commit(next, 0, 64, 0, &ctx_new), 0);
	complete_post(0, FI_ECANCELED); /* the old endpoint's, late */
	complete_post(1, 0);
	cr_assert(!pop(&e, &err), "a stale completion reached the new "
		  "endpoint");
	complete_post(2, 0);
	complete_post(3, 0);
	ack(next, 1, 0, FI_PMEM_PROFILE_PAGE, 0);
	cr_assert(pop(&e, &err) && !err && e.op_context == &ctx_new);
	g_ep = next;
}

/* Over tcp toward a gated peer (FI_PMEMVERBS_JOIN_REQUEST): data and
 * request in one write. */
static void join_requests(void)
{
	pmv_params.join_request = 1;
}

/* Learns a key's profile (MHP) through an agent commit. */
static void learn_mhp(uint32_t gen)
{
	struct fi_cq_err_entry e;
	bool err;

	cr_assert_eq(commit(g_ep, 0, 8, 0, NULL), 0);
	complete_post(g_nposts - 2, 0);
	complete_post(g_nposts - 1, 0);
	ack(g_ep, 1, 0, FI_PMEM_PROFILE_MHP, gen);
	cr_assert(pop(&e, &err) && !err);
}

/* flush_ops counts flush reads (fi_ext_pmem.h): a fenced read-flush
 * commit sends two, its fence's and its own. */
Test(engine, a_fenced_read_flush_commit_counts_two_flush_reads)
{
	int ctx[2];

	learn_mhp(5);
	cr_assert_eq(commit(g_ep, 0, 64, 0, &ctx[0]), 0);
	cr_assert_eq(g_ep->counters.flush_ops, 1);
	cr_assert_eq(commit(g_ep, 64, 64, FI_FENCE, &ctx[1]), 0);
	cr_assert_eq(g_ep->counters.flush_ops, 3, "%llu flush reads",
		     (unsigned long long) g_ep->counters.flush_ops);
}

Test(engine, read_flush_completes_at_its_read)
{
	struct fi_cq_err_entry e;
	bool err;
	unsigned first;
	int ctx;

	learn_mhp(5);
	first = g_nposts;
	cr_assert_eq(commit(g_ep, 0, 64, 0, &ctx), 0);
	cr_assert_eq(g_nposts, first + 2);
	cr_assert(g_posts[first + 1].read, "a read follows the data");
	complete_post(first, 0);
	cr_assert(!pop(&e, &err), "completed before its read");
	reads_bring(5);
	complete_post(first + 1, 0);
	cr_assert(pop(&e, &err) && !err && e.op_context == &ctx);
}

/*
 * The target re-registered (generation 5 -> 6) while an ack of another key
 * arrived: the read-flush commit, decided in generation 5, goes to the
 * agent instead of completing.
 */
Test(engine, a_new_generation_sends_the_commit_to_the_agent)
{
	struct fi_cq_err_entry e;
	unsigned first;
	bool err;
	int ctx;

	learn_mhp(5);
	first = g_nposts;
	cr_assert_eq(commit(g_ep, 0, 64, 0, &ctx), 0);
	reads_bring(6);
	complete_post(first, 0);
	complete_post(first + 1, 0);
	cr_assert(!pop(&e, &err), "completed on a stale profile");
	cr_assert_eq(g_nposts, first + 3, "a request to the agent");
	cr_assert_eq(g_posts[first + 2].addr,
		     pmv_peer_req_addr(&g_ep->peer, 2));
	complete_post(first + 2, 0);
	ack(g_ep, 2, 0, FI_PMEM_PROFILE_PAGE, 6);
	cr_assert(pop(&e, &err) && !err && e.op_context == &ctx);
}

/* The target pushes its table into ep's inbox: REGION_KEY is profile, in
 * generation gen (as target/pmv_publish.c does). */
static void push_table(struct pmv_ep *ep, uint8_t profile, uint32_t gen)
{
	struct pmv_profiles t = { .mr_gen = gen, .count = 1 };
	size_t len;

	t.e[0] = (struct pmv_profile_entry) { .key = REGION_KEY,
					      .profile = profile };
	len = pmv_profiles_encode(&t, PMV_PROFILES_SIZE);
	cr_assert_gt(len, 0);
	memcpy(ep->inbox.profiles, &t, len);
}

/* Over tcp with joined requests a key the table names MHP goes to the
 * agent from its first commit: one joined write, no read. */
Test(engine, a_pushed_mhp_keys_first_commit_over_tcp_is_one_joined_write)
{
	join_requests();
	push_table(g_ep, FI_PMEM_PROFILE_MHP, 5);
	cr_assert_eq(commit(g_ep, 0, 64, 0, NULL), 0);
	cr_assert_eq(g_nposts, 1, "one write: data and request");
	cr_assert(!g_posts[0].read);
	cr_assert_eq(g_posts[0].flags & FI_DELIVERY_COMPLETE, 0);
	cr_assert_eq(g_posts[0].last_rma.addr,
		     pmv_peer_req_addr(&g_ep->peer, 1));
	cr_assert_eq(pmv_ini_method(g_ep, REGION_KEY), FI_PMEM_METHOD_AGENT);
}

/* Without joining, the table lets an MHP key's first commit take
 * read-flush (no agent), whose read still proves the generation. */
Test(engine, a_pushed_mhp_keys_first_commit_takes_read_flush_and_reads)
{
	struct fi_cq_err_entry e;
	bool err;
	int ctx;

	push_table(g_ep, FI_PMEM_PROFILE_MHP, 5);
	cr_assert_eq(commit(g_ep, 0, 64, 0, &ctx), 0);
	cr_assert_eq(g_nposts, 2, "the write and its read");
	cr_assert(g_posts[1].read);
	complete_post(0, 0);
	reads_bring(5);
	complete_post(1, 0);
	cr_assert(pop(&e, &err) && !err && e.op_context == &ctx);
	cr_assert_eq(g_ep->counters.requests_sent, 0);
}

/*
 * Writes posted before the table was read may have landed before a close
 * it reports, in memory that is gone: a key whose scope holds them is not
 * learned from the table, and its commit goes to the agent, which checks
 * their ranges against the region the key names now.
 */
Test(engine, a_key_with_earlier_writes_is_not_learned_from_the_table)
{
	join_requests();
	push_table(g_ep, FI_PMEM_PROFILE_MHP, 6);
	cr_assert_eq(pmv_ini_track(g_ep, REGION_KEY, 4096, 512), 0);
	cr_assert_eq(pmv_ini_peer_profile(g_ep, REGION_KEY),
		     FI_PMEM_PROFILE_UNKNOWN);
	cr_assert_eq(commit(g_ep, 0, 0, 0, NULL), 0);
	cr_assert_eq(g_nposts, 1);
	cr_assert_eq(g_posts[0].addr, pmv_peer_req_addr(&g_ep->peer, 1),
		     "the pure flush went to the agent");
	cr_assert_eq(g_ep->counters.requests_sent, 1);
}

/* The table names PAGE: the first commit goes to the agent at once, with
 * its request joined to the data, as with a key already learned. */
Test(engine, a_pushed_page_keys_first_commit_goes_to_the_agent)
{
	join_requests();
	push_table(g_ep, FI_PMEM_PROFILE_PAGE, 5);
	cr_assert_eq(commit(g_ep, 0, 64, 0, NULL), 0);
	cr_assert_eq(pmv_ini_peer_profile(g_ep, REGION_KEY),
		     FI_PMEM_PROFILE_PAGE);
	cr_assert_eq(pmv_ini_method(g_ep, REGION_KEY), FI_PMEM_METHOD_AGENT);
	cr_assert_eq(g_posts[0].flags & FI_DELIVERY_COMPLETE, 0);
}

/*
 * Issue 24, scenario 1: the target closed the MHP region of the key and
 * registered a PAGE one under it (its generation is 6), but the table it
 * pushed with that news is still queued behind its own writes (a tcp core
 * sends its delivery acks ahead of queued writes), so the table here
 * still says MHP in generation 5.  Nothing that arrives may complete the
 * commit on that table: it completes only on the target's word (6: the
 * agent then decides) or the agent's ack.  Seen failing on 03bf475: the
 * commit went as one FI_DELIVERY_COMPLETE write and completed, successfully,
 * at that write's completion.
 */
Test(engine, a_commit_never_completes_on_a_table_the_targets_acks_overtook)
{
	struct fi_cq_err_entry e;
	unsigned done = 0;
	bool err;
	int ctx;

	push_table(g_ep, FI_PMEM_PROFILE_MHP, 5);
	*g_ep->inbox.gen_word = 6;
	reads_bring(6);
	for (int join = 0; join < 2; join++) {
		pmv_params.join_request = join;
		cr_assert_eq(commit(g_ep, (uint64_t) join * 4096, 4096, 0,
				    &ctx), 0);
		while (done < g_nposts)
			complete_post(done++, 0);
		g_ep->hook.progress(g_ep->hook.arg);
		cr_assert(!pop(&e, &err), "completed on the stale table "
			  "(join %d)", join);
	}
}

/* The generation request seq carries, in the bytes of post i. */
static uint32_t posted_req_gen(unsigned i, uint64_t seq)
{
	uint64_t wire[256 / 8], host[256 / 8];
	struct pmv_req *req = (struct pmv_req *) host;

	memcpy(wire, g_posts[i].bytes, sizeof(wire));
	cr_assert_gt(pmv_req_decode(wire, sizeof(wire), seq, req), 0,
		     "post %u is not request %llu", i, (unsigned long long) seq);
	return req->gen;
}

/*
 * Issue 24, scenario 3: a write placed before the target re-registered
 * the key, then a commit decided after the initiator learned the new
 * generation: the request names the generation of that oldest write, so
 * the target refuses it rather than persisting the new region.  Seen
 * failing by mutation (the request carrying the generation known at the
 * commit instead): "gen 7, want 3".
 */
Test(engine, a_request_carries_the_generation_of_its_oldest_write)
{
	unsigned first;
	uint32_t gen;

	learn_mhp(3);
	pmv_params.method = FI_PMEM_METHOD_AGENT;
	cr_assert_eq(pmv_ini_track(g_ep, REGION_KEY, 4096, 512), 0);
	push_table(g_ep, FI_PMEM_PROFILE_PAGE, 7);
	(void) pmv_ini_peer_profile(g_ep, REGION_KEY + 1); /* reads it */
	first = g_nposts;
	cr_assert_eq(commit(g_ep, 0, 64, 0, NULL), 0);
	cr_assert_eq(g_nposts, first + 2, "data, then the request");
	gen = posted_req_gen(first + 1, 2);
	cr_assert_eq(gen, 3, "gen %u, want 3", gen);
	/* the next commit's writes are all of generation 7 */
	first = g_nposts;
	cr_assert_eq(commit(g_ep, 64, 64, 0, NULL), 0);
	gen = posted_req_gen(first + 1, 3);
	cr_assert_eq(gen, 7, "gen %u, want 7", gen);
}

/*
 * A read-flush whose read brings the generation its method was chosen in
 * proves nothing of a write posted before that generation: the commit
 * goes to the agent, whose request names the older generation.  Seen
 * failing on 03bf475: the commit completed at its read.
 */
Test(engine, a_read_flush_covering_an_older_write_goes_to_the_agent)
{
	struct fi_cq_err_entry e;
	unsigned first;
	bool err;

	learn_mhp(5);
	/* an FI_IMMED commit (the agent) in flight; a write posted in
	 * generation 5 behind it; its ack then teaches generation 6 (the
	 * target closed a region) and the key's profile in it */
	cr_assert_eq(commit(g_ep, 8192, 8, FI_IMMED, NULL), 0);
	complete_post(g_nposts - 2, 0);
	complete_post(g_nposts - 1, 0);
	cr_assert_eq(pmv_ini_track(g_ep, REGION_KEY, 4096, 512), 0);
	ack(g_ep, 2, 0, FI_PMEM_PROFILE_MHP, 6);
	cr_assert(pop(&e, &err) && !err);
	first = g_nposts;
	cr_assert_eq(commit(g_ep, 0, 64, 0, NULL), 0);
	cr_assert(g_posts[first + 1].read, "a read-flush commit");
	reads_bring(6);
	complete_post(first, 0);
	complete_post(first + 1, 0);
	cr_assert(!pop(&e, &err), "completed: nothing proves the write of "
		  "generation 5 landed in this registration");
	cr_assert_eq(g_nposts, first + 3, "a request to the agent");
	cr_assert_eq(posted_req_gen(first + 2, 3), 5);
}

/*
 * The completion method (WSP on ib/roce): the write's completion cannot
 * tell which registration it landed in, so a read of the generation word
 * follows it, and a new generation sends the commit to the agent.  Seen
 * failing on 03bf475: it completed at its write's completion.
 */
Test(engine, the_completion_method_reads_the_generation_behind_its_write)
{
	struct fi_cq_err_entry e;
	unsigned first;
	bool err;

	g_dom.transport = PMV_TRANSPORT_IB;
	cr_assert_eq(commit(g_ep, 0, 8, 0, NULL), 0);
	complete_post(0, 0);
	complete_post(1, 0);
	ack(g_ep, 1, 0, FI_PMEM_PROFILE_WSP, 5);
	cr_assert(pop(&e, &err) && !err);
	cr_assert_eq(pmv_ini_method(g_ep, REGION_KEY),
		     FI_PMEM_METHOD_COMPLETION);
	first = g_nposts;
	cr_assert_eq(commit(g_ep, 0, 64, 0, NULL), 0);
	cr_assert_eq(g_nposts, first + 2, "the write, then the read");
	cr_assert(g_posts[first + 1].read);
	reads_bring(6);
	complete_post(first, 0);
	complete_post(first + 1, 0);
	cr_assert(!pop(&e, &err), "completed in another generation");
	cr_assert_eq(g_nposts, first + 3, "a request to the agent");
}

/* Without a table (a peer that does not push), the read proves the
 * writes and brings the generation; fenced commits read too. */
Test(engine, without_a_pushed_table_read_flush_reads)
{
	unsigned first;

	learn_mhp(5);
	first = g_nposts;
	cr_assert_eq(commit(g_ep, 0, 64, 0, NULL), 0);
	cr_assert_eq(g_nposts, first + 2);
	cr_assert_eq(g_posts[first].flags & FI_DELIVERY_COMPLETE, 0);
	cr_assert(g_posts[first + 1].read, "a read follows the data");
	push_table(g_ep, FI_PMEM_PROFILE_MHP, 5);
	first = g_nposts;
	cr_assert_eq(commit(g_ep, 64, 64, FI_FENCE, NULL), 0);
	cr_assert_eq(g_nposts, first + 3, "fenced: read, data, read");
	cr_assert_eq(g_posts[first + 1].flags & FI_DELIVERY_COMPLETE, 0);
}

/*
 * FI_FENCE by send while a read-flush commit to the key is in flight: the
 * agent would place the fenced data before the earlier commit is durable,
 * so the fenced commit posts nothing (-FI_EAGAIN) until that one is done.
 */
Test(engine, a_fenced_send_commit_waits_for_read_flush_commits_to_its_key)
{
	struct fi_cq_err_entry e;
	unsigned first, posts;
	bool err;
	int ctx[2];

	learn_mhp(5);
	first = g_nposts;
	cr_assert_eq(commit(g_ep, 0, 64, 0, &ctx[0]), 0);
	cr_assert(g_posts[first + 1].read, "a read-flush commit");
	pmv_params.method = FI_PMEM_METHOD_SEND;
	posts = g_nposts;
	cr_assert_eq(commit(g_ep, 64, 8, FI_FENCE, &ctx[1]), -FI_EAGAIN);
	cr_assert_eq(g_nposts, posts, "the fenced commit posted while a "
		     "read-flush commit to its key was in flight");
	complete_post(first, 0);
	reads_bring(5);
	complete_post(first + 1, 0);
	cr_assert(pop(&e, &err) && !err && e.op_context == &ctx[0]);
	cr_assert_eq(commit(g_ep, 64, 8, FI_FENCE, &ctx[1]), 0);
	cr_assert_gt(g_nposts, posts, "the fenced commit went once the "
		     "key was idle");
}

/* The first commit of the endpoint, to REGION_KEY, refused by the agent. */
static void fail_first_commit(void)
{
	struct fi_cq_err_entry e;
	bool err;

	cr_assert_eq(commit(g_ep, 0, 64, 0, NULL), 0);
	complete_post(0, 0);
	complete_post(1, 0);
	ack(g_ep, 1, PMV_ERR_RANGE, 0, 0);
	cr_assert(pop(&e, &err) && err);
}

Test(engine, a_fence_after_a_failure_to_its_key_fails)
{
	fail_first_commit();
	cr_assert_eq(commit(g_ep, 0, 8, FI_FENCE, NULL), -FI_EIO);
}

Test(engine, a_failure_to_another_key_leaves_the_fence_alone)
{
	struct fi_cq_err_entry e;
	struct iovec iov = { .iov_base = &e, .iov_len = 8 };
	struct fi_rma_iov rma = { .addr = 0, .len = 8, .key = REGION_KEY + 1 };
	struct fi_msg_rma msg = { .msg_iov = &iov, .iov_count = 1,
				  .rma_iov = &rma, .rma_iov_count = 1 };
	bool err;

	cr_assert_eq(pmv_commit_writemsg(g_ep, &msg, FI_COMMIT_COMPLETE), 0);
	complete_post(0, 0);
	complete_post(1, 0);
	ack(g_ep, 1, PMV_ERR_NO_KEY, 0, 0);
	cr_assert(pop(&e, &err) && err);
	cr_assert_eq(commit(g_ep, 0, 8, FI_FENCE, NULL), 0);
}


/* A pure flush to key that the agent refuses (no such key): request seq. */
static void fail_flush(uint64_t key, uint64_t seq)
{
	struct fi_cq_err_entry e;
	struct fi_rma_iov rma = { .addr = 0, .len = 0, .key = key };
	struct fi_msg_rma msg = { .rma_iov = &rma, .rma_iov_count = 1 };
	bool err;

	cr_assert_eq(pmv_commit_writemsg(g_ep, &msg, FI_COMMIT_COMPLETE), 0);
	complete_post(g_nposts - 1, 0);
	ack(g_ep, seq, PMV_ERR_NO_KEY, 0, 0);
	cr_assert(pop(&e, &err) && err, "the flush to key %llu did not fail",
		  (unsigned long long) key);
	g_nposts = 0; /* every post completed: the fake core's log restarts */
}

/*
 * Issue 25 item 6: a commit to the key fails, then n commits to n other
 * keys fail; a fenced commit to the first key must still fail (-FI_EIO),
 * once: the failure is not forgotten however many keys fail in between.
 */
static void fence_after_failures(unsigned n)
{
	fail_first_commit();
	g_nposts = 0;
	for (unsigned i = 0; i < n; i++)
		fail_flush(REGION_KEY + 1 + i, 2 + i);
	cr_assert_eq(commit(g_ep, 0, 8, FI_FENCE, NULL), -FI_EIO,
		     "a fence after a failure to its key and %u failures to "
		     "other keys did not fail", n);
	cr_assert_eq(commit(g_ep, 0, 8, FI_FENCE, NULL), 0,
		     "the failure was reported by the fence: the next one "
		     "goes");
}

Test(engine, a_fence_fails_after_its_keys_failure_and_16_others)
{
	fence_after_failures(16);
}

Test(engine, a_fence_fails_after_its_keys_failure_and_100_others)
{
	fence_after_failures(100);
}

Test(engine, a_fence_fails_after_its_keys_failure_and_1000_others)
{
	fence_after_failures(1000);
}

/* A failure that cannot be remembered (no memory) fails every fence. */
Test(engine, a_failure_not_remembered_fails_every_later_fence)
{
	struct fi_cq_err_entry e;
	struct fi_rma_iov rma = { .addr = 0, .len = 0, .key = REGION_KEY + 1 };
	struct fi_msg_rma msg = { .rma_iov = &rma, .rma_iov_count = 1 };
	bool err;

	cr_assert_eq(pmv_commit_writemsg(g_ep, &msg, FI_COMMIT_COMPLETE), 0);
	complete_post(0, 0);
	pmv_fault_reset();
	pmv_params.fault_alloc = 1; /* the failure table's first allocation */
	ack(g_ep, 1, PMV_ERR_NO_KEY, 0, 0);
	pmv_params.fault_alloc = 0;
	cr_assert(pop(&e, &err) && err);
	cr_assert_eq(commit(g_ep, 0, 8, FI_FENCE, NULL), -FI_EIO,
		     "a fence after a failure that could not be remembered "
		     "did not fail");
	cr_assert_eq(commit(g_ep, 64, 8, FI_FENCE, NULL), -FI_EIO);
}

/*
 * Issue 25 item 7: the overlap rule.  A fenced 32-byte commit goes by
 * send to [1000, 1032) of the key (its data is placed by the target's
 * agent when it serves the request); then a later operation of the named
 * method overlapping it.
 */
static void earlier_send_in_flight(void)
{
	uint64_t sends = g_ep->counters.sends;

	pmv_params.method = FI_PMEM_METHOD_SEND;
	cr_assert_eq(commit(g_ep, 1000, 32, FI_FENCE, NULL), 0);
	cr_assert_eq(g_ep->counters.sends, sends + 1, "not by send");
	pmv_params.method = FI_PMEM_METHOD_NONE;
}

/* Learns the key's profile through an agent commit acked as request 1. */
static void learn_profile(uint8_t profile, uint32_t gen)
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
static void later_commit_waits(enum fi_pmem_method m, uint64_t off,
			       size_t len, uint64_t send_seq, uint8_t profile)
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

/* send x agent: the agent commit's data would land under the send's. */
Test(engine, an_agent_commit_over_send_data_in_flight_waits)
{
	earlier_send_in_flight();
	pmv_params.method = FI_PMEM_METHOD_AGENT;
	cr_assert_eq(commit(g_ep, 8192, 64, 0, NULL), 0,
		     "a commit beside the send's range need not wait");
	later_commit_waits(FI_PMEM_METHOD_AGENT, 0, 4096, 1,
			   FI_PMEM_PROFILE_PAGE);
}

/* send x agent, joined (over tcp data and request go as one write). */
Test(engine, a_joined_agent_commit_over_send_data_in_flight_waits)
{
	join_requests();
	earlier_send_in_flight();
	later_commit_waits(FI_PMEM_METHOD_AGENT, 1016, 8, 1,
			   FI_PMEM_PROFILE_PAGE);
}

/* send x send: the agent serves requests in order, so it goes after it. */
Test(engine, a_send_over_send_data_in_flight_goes_behind_it)
{
	uint64_t sends;

	earlier_send_in_flight();
	sends = g_ep->counters.sends;
	pmv_params.method = FI_PMEM_METHOD_SEND;
	cr_assert_eq(commit(g_ep, 1008, 32, 0, NULL), 0);
	cr_assert_eq(g_ep->counters.sends, sends + 1);
	cr_assert_eq(g_ep->counters.requests_sent, 2, "its request went "
		     "behind the first");
}

/* send x read_flush: its read proves placement, not the send's data. */
Test(engine, a_read_flush_commit_waits_for_a_send_to_its_key)
{
	learn_profile(FI_PMEM_PROFILE_MHP, 5);
	earlier_send_in_flight();
	cr_assert_eq(pmv_ini_method(g_ep, REGION_KEY),
		     FI_PMEM_METHOD_READ_FLUSH);
	later_commit_waits(FI_PMEM_METHOD_NONE, 16384, 64, 2,
			   FI_PMEM_PROFILE_MHP);
}

/* send x completion (WSP on ib/roce): the write's completion, likewise. */
Test(engine, a_completion_commit_waits_for_a_send_to_its_key)
{
	g_dom.transport = PMV_TRANSPORT_IB;
	learn_profile(FI_PMEM_PROFILE_WSP, 5);
	earlier_send_in_flight();
	cr_assert_eq(pmv_ini_method(g_ep, REGION_KEY),
		     FI_PMEM_METHOD_COMPLETION);
	later_commit_waits(FI_PMEM_METHOD_NONE, 1000, 64, 2,
			   FI_PMEM_PROFILE_WSP);
}

/* A plain fi_writemsg of 64 bytes at off (no commit flags). */
static ssize_t plain_write(uint64_t off)
{
	static uint8_t buf[64];
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct fi_rma_iov rma = { .addr = off, .len = sizeof(buf),
				  .key = REGION_KEY };
	struct fi_msg_rma msg = { .msg_iov = &iov, .iov_count = 1,
				  .rma_iov = &rma, .rma_iov_count = 1 };

	return pmv_rma_pmem_ops.writemsg(&g_ep->ep_fid, &msg, 0);
}

/* send x plain write: the write waits too (pmv_ep_ops.c). */
Test(engine, a_plain_write_over_send_data_in_flight_waits)
{
	earlier_send_in_flight();
	cr_assert_eq(plain_write(1024), -FI_EAGAIN);
	cr_assert_eq(plain_write(4096), 0,
		     "a write beside the send's range need not wait");
	ack(g_ep, 1, 0, FI_PMEM_PROFILE_PAGE, 5);
	cr_assert_eq(plain_write(1024), 0);
}

/*
 * FI_PMEMVERBS_DELIVERY_IS_COMMIT (issue 27 item 3): an FI_DELIVERY_COMPLETE
 * write on a pmem endpoint, by flag or by default op_flags, is a commit.
 */

/* fi_writemsg of 64 bytes at off with FI_DELIVERY_COMPLETE. */
static ssize_t delivery_writemsg(uint64_t off, void *ctx)
{
	static uint8_t buf[64];
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct fi_rma_iov rma = { .addr = off, .len = sizeof(buf),
				  .key = REGION_KEY };
	struct fi_msg_rma msg = { .msg_iov = &iov, .iov_count = 1,
				  .rma_iov = &rma, .rma_iov_count = 1,
				  .context = ctx };

	return pmv_rma_pmem_ops.writemsg(&g_ep->ep_fid, &msg,
					 FI_DELIVERY_COMPLETE | FI_COMPLETION);
}

/* fi_write of 64 bytes at off (the endpoint's default op_flags apply). */
static ssize_t default_write(uint64_t off, void *ctx)
{
	static uint8_t buf[64];

	return pmv_rma_pmem_ops.write(&g_ep->ep_fid, buf, sizeof(buf), NULL,
				      0, off, REGION_KEY, ctx);
}

/* The operation of context ctx went as an agent commit: its data write and
 * its request, and its completion only at the target's ack. */
static void assert_agent_commit(void *ctx)
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

/* The operation of context ctx went to the core in one call, as it is. */
static void assert_plain_write(void *ctx)
{
	cr_assert_eq(g_nposts, 1, "expected one core write, got %u posts",
		     g_nposts);
	cr_assert_eq(g_posts[0].context, ctx);
}

Test(engine, with_delivery_is_commit_a_delivery_complete_writemsg_commits)
{
	int ctx;

	pmv_params.delivery_is_commit = 1;
	pmv_ep_set_op_flags(g_ep, 0);
	cr_assert_eq(delivery_writemsg(0, &ctx), 0);
	assert_agent_commit(&ctx);
}

Test(engine, with_delivery_is_commit_a_delivery_complete_default_commits)
{
	int ctx;

	pmv_params.delivery_is_commit = 1;
	pmv_ep_set_op_flags(g_ep, FI_DELIVERY_COMPLETE);
	cr_assert_eq(default_write(0, &ctx), 0);
	assert_agent_commit(&ctx);
}

Test(engine, without_delivery_is_commit_delivery_complete_writes_are_plain)
{
	int ctx[2];

	pmv_ep_set_op_flags(g_ep, FI_DELIVERY_COMPLETE);
	cr_assert_eq(delivery_writemsg(0, &ctx[0]), 0);
	assert_plain_write(&ctx[0]);
	cr_assert_eq(g_posts[0].flags & FI_DELIVERY_COMPLETE,
		     FI_DELIVERY_COMPLETE, "the core got the flag");
	g_nposts = 0;
	cr_assert_eq(default_write(64, &ctx[1]), 0);
	assert_plain_write(&ctx[1]);
}

/* fi_control(FI_SETOPSFLAG) sets the default a later fi_write follows. */
static int setopsflag(uint64_t flags)
{
	return pmv_ep_setopsflag(g_ep, &flags);
}

Test(engine, setopsflag_delivery_complete_makes_fi_write_commit)
{
	int ctx;

	pmv_params.delivery_is_commit = 1;
	pmv_ep_set_op_flags(g_ep, 0);
	cr_assert_eq(setopsflag(FI_TRANSMIT | FI_DELIVERY_COMPLETE), 0);
	cr_assert_eq(default_write(0, &ctx), 0);
	assert_agent_commit(&ctx);
}

Test(engine, setopsflag_commit_complete_commits_and_never_reaches_the_core)
{
	int ctx;

	pmv_ep_set_op_flags(g_ep, 0);
	cr_assert_eq(setopsflag(FI_TRANSMIT | FI_COMMIT_COMPLETE), 0);
	cr_assert_eq(g_control_flags & FI_COMMIT_COMPLETE, 0, "the core's own "
		     "FI_COMMIT_COMPLETE knows nothing of persistence");
	cr_assert_eq(default_write(0, &ctx), 0);
	assert_agent_commit(&ctx);
}

Test(engine, setopsflag_the_core_refuses_leaves_the_default_alone)
{
	int ctx;

	pmv_params.delivery_is_commit = 1;
	pmv_ep_set_op_flags(g_ep, 0);
	g_control_ret = -FI_ENOSYS;
	cr_assert_eq(setopsflag(FI_TRANSMIT | FI_DELIVERY_COMPLETE),
		     -FI_ENOSYS);
	cr_assert_eq(default_write(0, &ctx), 0);
	assert_plain_write(&ctx);
}

Test(engine, delivery_is_commit_leaves_endpoints_without_pmem_alone)
{
	pmv_params.delivery_is_commit = 1;
	g_ep->pmem = false;
	pmv_ep_set_op_flags(g_ep, FI_DELIVERY_COMPLETE);
	cr_assert_eq(g_ep->tx_op_flags, FI_DELIVERY_COMPLETE,
		     "an endpoint without FI_RMA_PMEM cannot commit");
	g_ep->pmem = true;
}

Test(engine, a_null_msg_iov_is_refused)
{
	struct fi_rma_iov rma = { .addr = 0, .len = 8, .key = REGION_KEY };
	struct fi_msg_rma msg = { .iov_count = 1, .rma_iov = &rma,
				  .rma_iov_count = 1 };

	cr_assert_eq(pmv_commit_writemsg(g_ep, &msg, FI_COMMIT_COMPLETE),
		     -FI_EINVAL);
	cr_assert_eq(g_nposts, 0);
}

/* Runs the engine's progress for at least ms milliseconds. */
/*
 * Moves the engine's clock ms forward and runs its progress, so time-outs
 * are tested without waiting and without depending on the scheduler.
 */
static void progress_jump(int ms)
{
	g_ep->hook.progress(g_ep->hook.arg);
	__atomic_add_fetch(&pmv_clock_skew_ms, (uint64_t) ms, __ATOMIC_RELAXED);
	g_ep->hook.progress(g_ep->hook.arg);
}

/* Index of the first read posted at or after post from, or g_nposts. */
static unsigned find_read(unsigned from)
{
	while (from < g_nposts && !g_posts[from].read)
		from++;
	return from;
}

/*
 * A frozen target: commits wait, the probe read is never answered; after
 * FI_PMEMVERBS_PEER_TIMEOUT_MS the commit fails with FI_ETIMEDOUT and the
 * endpoint takes no more.
 */
Test(engine, a_silent_peer_fails_commits_after_the_timeout)
{
	struct fi_cq_err_entry e;
	bool err;
	int ctx, ctx2;

	pmv_params.peer_timeout_ms = 60000;
	pmv_params.peer_probe_ms = 10000;
	cr_assert_eq(commit(g_ep, 0, 64, 0, &ctx), 0);
	complete_post(0, 0);
	complete_post(1, 0);
	progress_jump(15000);
	cr_assert_lt(find_read(2), g_nposts, "no probe after the probe time");
	cr_assert_eq(g_posts[find_read(2)].addr, pmv_peer_gen_addr(&g_ep->peer));
	cr_assert(!pop(&e, &err), "failed before the timeout");
	progress_jump(50000);
	cr_assert(pop(&e, &err) && err && e.op_context == &ctx);
	cr_assert_eq(e.err, FI_ETIMEDOUT);
	cr_assert_eq(commit(g_ep, 4096, 64, 0, &ctx2), -FI_ETIMEDOUT);
	ack(g_ep, 1, 0, FI_PMEM_PROFILE_PAGE, 0); /* too late */
	cr_assert(!pop(&e, &err), "reported twice");
}

/* A dead connection: the probe fails, every waiting commit fails now. */
Test(engine, a_failed_probe_fails_every_waiting_commit)
{
	struct fi_cq_err_entry e;
	bool err;
	int ctx[2], ctx3;
	unsigned probe;

	pmv_params.peer_probe_ms = 10000;
	pmv_params.peer_timeout_ms = 60000;
	cr_assert_eq(commit(g_ep, 0, 64, 0, &ctx[0]), 0);
	cr_assert_eq(commit(g_ep, 4096, 64, 0, &ctx[1]), 0);
	progress_jump(15000);
	probe = find_read(0);
	cr_assert_lt(probe, g_nposts, "no probe");
	complete_post(probe, FI_EIO);
	for (int i = 0; i < 2; i++) {
		cr_assert(pop(&e, &err) && err, "commit %d not failed", i);
		cr_assert_eq(e.op_context, &ctx[i]);
	}
	cr_assert_eq(commit(g_ep, 8192, 64, 0, &ctx3), -FI_ENOTCONN);
}

/* A probe that is answered keeps the commits waiting: no false failure. */
Test(engine, an_answered_probe_keeps_the_commit_waiting)
{
	struct fi_cq_err_entry e;
	bool err;
	int ctx;
	unsigned probe;

	pmv_params.peer_timeout_ms = 40000;
	pmv_params.peer_probe_ms = 5000;
	cr_assert_eq(commit(g_ep, 0, 64, 0, &ctx), 0);
	complete_post(0, 0);
	complete_post(1, 0);
	for (int round = 0; round < 8; round++) { /* 8 x 10 s > timeout */
		progress_jump(10000);
		probe = find_read(2);
		while (probe < g_nposts) {
			complete_post(probe, 0);
			g_posts[probe].read = false; /* answered */
			probe = find_read(probe + 1);
		}
	}
	cr_assert(!pop(&e, &err), "a peer that answers was declared gone");
	ack(g_ep, 1, 0, FI_PMEM_PROFILE_PAGE, 0);
	cr_assert(pop(&e, &err) && !err && e.op_context == &ctx);
}

/* Completes every post and acks every request sent so far, in order. */
static void answer_everything(struct pmv_ep *ep)
{
	uint64_t seq = 1;

	for (unsigned i = 0; i < g_nposts; i++) {
		if (pmv_iop_find(&g_cq->iops, g_posts[i].context))
			complete_post(i, 0);
		if (!g_posts[i].read && g_posts[i].addr ==
		    pmv_peer_req_addr(&ep->peer, seq))
			ack(ep, seq++, 0, FI_PMEM_PROFILE_PAGE, 0);
	}
}

/* True if the requests posted so far name every byte of [addr, +len). */
static bool requests_cover(struct pmv_ep *ep, uint64_t addr, uint64_t len)
{
	uint64_t wire[256 / 8], host[256 / 8], seq = 1, at = addr;
	struct pmv_req *req = (struct pmv_req *) host;
	bool grew = true;

	while (grew && at < addr + len) {
		grew = false;
		seq = 1;
		for (unsigned i = 0; i < g_nposts; i++) {
			if (g_posts[i].read || g_posts[i].last_rma.addr !=
			    pmv_peer_req_addr(&ep->peer, seq))
				continue;
			memcpy(wire, g_posts[i].last_bytes, sizeof(wire));
			if (pmv_req_decode(wire, sizeof(wire), seq++, req) <= 0)
				continue;
			for (unsigned k = 0; k < req->nextents; k++)
				if (req->ext[k].addr <= at &&
				    at < req->ext[k].addr + req->ext[k].len) {
					at = req->ext[k].addr + req->ext[k].len;
					grew = true;
				}
		}
	}
	return at >= addr + len;
}

/*
 * librpma's pattern: each allocation of the engine (its state, the
 * internal operations' slabs, the scope, the CQ room of a completion)
 * fails in turn.  Every call then returns an error or succeeds, every
 * commit accepted completes exactly once (no crash, no lost completion),
 * and one that completes successfully had every byte of its scope (a plain
 * write before it, and its own data) named in a request to the agent.
 * Seen failing on the code before (issue 26's risk: a scope allocation
 * that failed after the write was posted): "fault at allocation N: a
 * commit completed whose scope no request named".
 */
Test(engine, every_allocation_failing_in_turn_loses_no_commit)
{
	struct fi_cq_err_entry e;
	bool err;
	int ctx[3];

	close_ep(g_ep);
	g_ep = NULL;
	for (int nth = 1; nth <= 16; nth++) {
		struct pmv_ep probe = { .domain = &g_dom }, *ep;
		unsigned accepted = 0, completed = 0;

		close_cq(); /* every allocation happens again */
		open_cq();
		pmv_fault_reset();
		pmv_params.fault_alloc = nth;
		g_nposts = 0;
		if (nth == 1) { /* the engine's own state */
			cr_assert_eq(pmv_ini_open(&probe), -FI_ENOMEM);
			continue;
		}
		ep = open_ep();
		for (int i = 0; i < 3; i++) {
			ssize_t ret;

			/* a plain write the core took, then the commit */
			(void) pmv_ini_track(ep, REGION_KEY,
					     (uint64_t) i * 4096 + 1024, 32);
			ret = commit(ep, (uint64_t) i * 4096, 64, 0, &ctx[i]);
			cr_assert(ret == 0 || ret == -FI_ENOMEM ||
				  ret == -FI_EAGAIN || ret == -FI_EIO,
				  "commit %d: %zd", i, ret);
			accepted += ret == 0;
		}
		answer_everything(ep);
		while (pop(&e, &err)) {
			int i = (int *) e.op_context - ctx;

			completed++;
			cr_assert(err || (requests_cover(ep, (uint64_t) i *
							 4096 + 1024, 32) &&
					  requests_cover(ep, (uint64_t) i *
							 4096, 64)),
				  "fault at allocation %d: a commit completed "
				  "whose scope no request named", nth);
		}
		cr_assert_eq(completed, accepted, "fault at allocation %d: %u "
			     "commits accepted, %u completed", nth, accepted,
			     completed);
		close_ep(ep);
	}
	pmv_params.fault_alloc = 0;
}

/*
 * An application about to sleep on the CQ's fd asks fi_trywait: an ack
 * that landed in memory (no core completion, no fd wake-up) must make it
 * read first, or it would sleep past a completed commit.
 */
Test(engine, trywait_sees_an_ack_that_landed_in_memory)
{
	int ctx;
	struct pmv_ack a = { .seq = 1, .profile = FI_PMEM_PROFILE_PAGE };

	cr_assert_eq(commit(g_ep, 0, 64, 0, &ctx), 0);
	complete_post(0, 0);
	complete_post(1, 0);
	cr_assert_not(pmv_cq_ready(g_cq), "ready before the ack");
	pmv_ack_encode(&a);
	memcpy(pmv_inbox_ack(&g_ep->inbox, 1), &a, sizeof(a)); /* no progress */
	cr_assert(pmv_cq_ready(g_cq), "the landed ack was not seen");
}

/* The request a post carries in its last segment, decoded into buf. */
static struct pmv_req *request_of(const struct post *p, uint64_t seq,
				  uint64_t buf[32])
{
	struct pmv_req *req = (struct pmv_req *) buf;

	cr_assert_gt(pmv_req_decode(p->last_bytes, p->last_rma.len, seq, req),
		     0, "the last segment is not request %llu",
		     (unsigned long long) seq);
	return req;
}

Test(engine, joined_agent_commit_is_one_write_with_the_request_last,
     .init = setup)
{
	struct fi_cq_err_entry e;
	uint64_t buf[32];
	struct pmv_req *req;
	bool err;
	int ctx;

	join_requests();
	cr_assert_eq(commit(g_ep, 0, 1000, 0, &ctx), 0);
	cr_assert_eq(g_nposts, 1, "data and request in one write");
	cr_assert_eq(g_posts[0].iov_count, 2);
	cr_assert_eq(g_posts[0].rma_iov_count, 2);
	cr_assert(g_posts[0].addr == 0 && g_posts[0].len == 1000,
		  "the data comes first");
	cr_assert_eq(g_posts[0].last_rma.addr, pmv_peer_req_addr(&g_ep->peer, 1));
	cr_assert_eq(g_posts[0].last_rma.key, INBOX_KEY);
	cr_assert_eq(g_posts[0].flags & (FI_INJECT | FI_MORE), 0);
	req = request_of(&g_posts[0], 1, buf);
	cr_assert_eq(req->nextents, 1);
	cr_assert(req->ext[0].addr == 0 && req->ext[0].len == 1000,
		  "the request names the commit's range");
	ack(g_ep, 1, 0, FI_PMEM_PROFILE_PAGE, 0);
	cr_assert(!pop(&e, &err), "completed with its write in flight");
	complete_post(0, 0);
	cr_assert(pop(&e, &err) && !err && e.op_context == &ctx);
	cr_assert(!pop(&e, &err), "reported twice");
}

/*
 * The weakest placement libfabric's rules allow a core: writes placed in
 * the order they were posted (FI_ORDER_WAW), the segments of one write in
 * any order ("RMA ordering applies between two operations, and not
 * within a single data transfer", fi_endpoint(3)).  g_placed marks the
 * region's bytes placed so far; a request that lands could be served at
 * once, so every byte it names must be placed by then.
 */
static uint8_t g_placed[16384];
static unsigned g_requests_landed;

/* The request slot seq that the inbox address addr names (0: none). */
static uint64_t slot_seq(uint64_t addr)
{
	for (uint64_t seq = 1; seq <= PMV_SLOTS; seq++)
		if (pmv_peer_req_addr(&g_ep->peer, seq) == addr)
			return seq;
	return 0;
}

/* Request post p carries in its last segment may be served: its ranges
 * placed? */
static void request_servable(const struct post *p)
{
	uint64_t buf[32], seq = slot_seq(p->last_rma.addr);
	struct pmv_req *req = request_of(p, seq, buf);
	const struct pmv_extent *e;

	for (unsigned i = 0; i < req->nextents; i++) {
		e = &req->ext[i];
		cr_assert_leq(e->addr + e->len, sizeof(g_placed));
		for (uint64_t b = e->addr; b < e->addr + e->len; b++)
			cr_assert(g_placed[b], "request %llu landed (and could "
				  "be served) before byte %llu of the data it "
				  "names was placed",
				  (unsigned long long) seq,
				  (unsigned long long) b);
	}
	g_requests_landed++;
}

/*
 * True if post p's request is gated: the target serves it only once p's
 * completion is read, which fi_cq(3) gives only when all of p's data is
 * available.  The request says so, and p carries the remote CQ data that
 * names the target's gate and the request's seq.
 */
static bool request_gated(const struct post *p)
{
	uint64_t buf[32], seq = slot_seq(p->last_rma.addr);
	struct pmv_req *req = request_of(p, seq, buf);

	return (req->flags & PMV_REQ_GATED) && (p->flags & FI_REMOTE_CQ_DATA) &&
	       (p->data >> 48) == PMV_GATE_MAGIC &&
	       ((p->data >> 32) & 0xffff) == GATE_ID &&
	       (uint32_t) p->data == (uint32_t) seq;
}

/* Places post i's remote segments last first; then its completion. */
static void place_last_first(unsigned i)
{
	const struct post *p = &g_posts[i];
	const struct fi_rma_iov *r;
	bool gated_request = false;

	for (size_t s = p->rma_iov_count; s-- > 0;) {
		r = &p->rma[s];
		if (r->key == INBOX_KEY && s + 1 == p->rma_iov_count &&
		    request_gated(p))
			gated_request = true; /* waits for the completion */
		else if (r->key == INBOX_KEY && s + 1 == p->rma_iov_count)
			request_servable(p);
		else if (r->key == REGION_KEY)
			memset(g_placed + r->addr, 1, r->len);
	}
	if (gated_request)
		request_servable(p); /* its write's completion is read */
}

/* Two agent commits placed in the weakest order the rules allow. */
static void commit_two_and_place_them(void)
{
	memset(g_placed, 0, sizeof(g_placed));
	g_requests_landed = 0;
	cr_assert_eq(commit(g_ep, 0, 1000, 0, NULL), 0);
	cr_assert_eq(commit(g_ep, 8192, 200, 0, NULL), 0);
	for (unsigned i = 0; i < g_nposts; i++)
		place_last_first(i);
	cr_assert_eq(g_requests_landed, 2, "two agent requests, %u landed",
		     g_requests_landed);
}

Test(engine, default_agent_commits_requests_land_after_their_data_in_any_segment_order,
     .init = setup)
{
	pmv_params.join_request = PMV_JOIN_REQUEST_DEFAULT;
	commit_two_and_place_them(); /* toward a gated peer: one write each */
	cr_assert_eq(g_nposts, 2, "not one write per commit");
	g_nposts = 0;
	g_ep->peer.gated = false;
	commit_two_and_place_them(); /* toward one without: two writes each */
	cr_assert_eq(g_nposts, 4, "not two writes per commit");
}

/*
 * Toward a peer that offered a gate, an agent commit is one write: its
 * data, then its request (marked gated), with remote CQ data naming the
 * peer's gate and the request's seq.
 */
Test(engine, a_gated_agent_commit_is_one_write_with_remote_cq_data,
     .init = setup)
{
	uint64_t buf[32];
	struct pmv_req *req;

	pmv_params.join_request = PMV_JOIN_REQUEST_DEFAULT;
	for (uint64_t seq = 1; seq <= 2; seq++) {
		cr_assert_eq(commit(g_ep, seq * 4096, 64, 0, NULL), 0);
		cr_assert_eq(g_nposts, seq, "not one write per commit");
		req = request_of(&g_posts[seq - 1], seq, buf);
		cr_assert(req->flags & PMV_REQ_GATED, "the request is not "
			  "marked gated");
		cr_assert(g_posts[seq - 1].flags & FI_REMOTE_CQ_DATA,
			  "the write carries no remote CQ data");
		cr_assert_eq(g_posts[seq - 1].data,
			     (uint64_t) PMV_GATE_MAGIC << 48 |
			     (uint64_t) GATE_ID << 32 | seq,
			     "remote CQ data 0x%llx",
			     (unsigned long long) g_posts[seq - 1].data);
	}
}

/* Toward a peer without a gate: two writes, neither with remote CQ data. */
Test(engine, toward_an_ungated_peer_an_agent_commit_is_two_writes,
     .init = setup)
{
	uint64_t buf[32];

	pmv_params.join_request = PMV_JOIN_REQUEST_DEFAULT;
	g_ep->peer.gated = false;
	cr_assert_eq(commit(g_ep, 0, 64, 0, NULL), 0);
	cr_assert_eq(g_nposts, 2, "data and request not in two writes");
	cr_assert_eq((g_posts[0].flags | g_posts[1].flags) & FI_REMOTE_CQ_DATA,
		     0, "remote CQ data toward a peer without a gate");
	cr_assert_not(request_of(&g_posts[1], 1, buf)->flags & PMV_REQ_GATED);
}

Test(engine, a_joined_write_the_core_refuses_sends_nothing_and_loses_no_range,
     .init = setup)
{
	uint64_t buf[32];
	struct pmv_req *req;
	int ctx, ctx2;

	join_requests();
	g_fail_at = 1;
	g_fail_ret = -FI_EAGAIN;
	cr_assert_eq(commit(g_ep, 0, 64, 0, &ctx), -FI_EAGAIN);
	cr_assert_eq(g_nposts, 0);
	cr_assert_eq(commit(g_ep, 4096, 64, 0, &ctx2), 0);
	cr_assert_eq(g_nposts, 1);
	req = request_of(&g_posts[0], 1, buf);
	cr_assert_eq(req->seq, 1, "the refused write took no request seq");
	cr_assert_eq(req->nextents, 2, "the refused commit's range went "
		     "missing from the key's scope");
	cr_assert(req->ext[0].addr == 0 && req->ext[1].addr == 4096);
}

Test(engine, a_failed_joined_write_fails_its_commit, .init = setup)
{
	struct fi_cq_err_entry e;
	bool err;
	int ctx;

	join_requests();
	cr_assert_eq(commit(g_ep, 0, 64, 0, &ctx), 0);
	ack(g_ep, 1, 0, FI_PMEM_PROFILE_PAGE, 0); /* a forged early ack */
	complete_post(0, FI_EIO);
	cr_assert(pop(&e, &err) && err && e.op_context == &ctx,
		  "the write failed, yet the commit succeeded");
	g_fail_at = g_calls + 1;
	g_fail_ret = -FI_EIO;
	cr_assert(commit(g_ep, 128, 64, 0, &ctx) < 0, "a failed post returns "
		  "an error");
}

Test(engine, inject_commits_and_full_iovs_keep_two_writes, .init = setup)
{
	static uint8_t buf[4][16];
	struct iovec iov[4];
	struct fi_rma_iov rma = { .addr = 0, .len = 64, .key = REGION_KEY };
	struct fi_msg_rma msg = { .msg_iov = iov, .iov_count = 4,
				  .rma_iov = &rma, .rma_iov_count = 1 };
	int ctx;

	join_requests();
	for (int i = 0; i < 4; i++)
		iov[i] = (struct iovec) { .iov_base = buf[i], .iov_len = 16 };
	cr_assert_eq(pmv_commit_writemsg(g_ep, &msg, FI_COMMIT_COMPLETE), 0);
	cr_assert_eq(g_nposts, 2, "no segment left for the request");
	cr_assert_eq(commit(g_ep, 128, 64, FI_INJECT, &ctx), 0);
	cr_assert_eq(g_nposts, 4, "an injected commit's request is its own "
		     "write");
}

/* A fake core CQ: hands out staged entries and counts its reads. */
static struct fi_cq_entry g_core_entries[4];
static unsigned g_core_staged, g_core_reads;

static ssize_t fake_cq_read(struct fid_cq *cq, void *buf, size_t count)
{
	size_t n = g_core_staged < count ? g_core_staged : count;

	(void) cq;
	g_core_reads++;
	if (!n)
		return -FI_EAGAIN;
	memcpy(buf, g_core_entries, n * sizeof(g_core_entries[0]));
	g_core_staged -= (unsigned) n;
	memmove(g_core_entries, g_core_entries + n,
		g_core_staged * sizeof(g_core_entries[0]));
	return (ssize_t) n;
}

static int fake_close(struct fid *fid)
{
	(void) fid;
	return 0;
}

/* With g_fake_pollfd, the core CQ waits on a list of fds: first a pipe
 * that stands for the core's signal (written by fi_cq_signal, drained only
 * by a wait in the core: fake_wait), then g_udp[0] if open. */
static bool g_fake_pollfd;
static int g_signal_pipe[2] = { -1, -1 };
/* A UDP socket on 127.0.0.1 stands for a connection's socket (its bytes a
 * commit request); [0] is in the core CQ's list, [1] sends. */
static int g_udp[2] = { -1, -1 };

static int fake_control(struct fid *fid, int command, void *arg)
{
	struct fi_wait_pollfd *list = arg;

	(void) fid;
	if (!g_fake_pollfd)
		return -FI_ENOSYS;
	if (command == FI_GETWAITOBJ) {
		*(enum fi_wait_obj *) arg = FI_WAIT_POLLFD;
		return 0;
	}
	if (command != FI_GETWAIT || list->nfds < 2)
		return -FI_ENOSYS;
	list->nfds = g_udp[0] >= 0 ? 2 : 1;
	list->fd[0] = (struct pollfd) { .fd = g_signal_pipe[0],
					.events = POLLIN };
	list->fd[1] = (struct pollfd) { .fd = g_udp[0], .events = POLLIN };
	return 0;
}

static struct fi_ops g_fake_fi_ops = {
	.size = sizeof(struct fi_ops), .close = fake_close,
	.control = fake_control,
};

/* The core's blocking read: waits (bounded) until the test releases it. */
static volatile int g_in_core_sread, g_release_core_sread;

static ssize_t fake_cq_sread(struct fid_cq *cq, void *buf, size_t count,
			     const void *cond, int timeout)
{
	(void) cq; (void) buf; (void) count; (void) cond; (void) timeout;
	__atomic_store_n(&g_in_core_sread, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < 5000 &&
	     !__atomic_load_n(&g_release_core_sread, __ATOMIC_ACQUIRE); i++)
		usleep(1000);
	return -FI_EAGAIN;
}

static int fake_cq_signal(struct fid_cq *cq)
{
	(void) cq;
	return write(g_signal_pipe[1], "s", 1) == 1 ? 0 : -FI_EIO;
}

static struct fi_ops_cq g_fake_cq_ops = {
	.size = sizeof(struct fi_ops_cq), .read = fake_cq_read,
	.sread = fake_cq_sread, .signal = fake_cq_signal,
};
static struct fid_cq g_fake_core_cq = {
	.fid = { .fclass = FI_CLASS_CQ, .ops = &g_fake_fi_ops },
	.ops = &g_fake_cq_ops,
};

static int fake_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr,
			struct fid_cq **cq, void *context)
{
	(void) domain; (void) attr; (void) context;
	*cq = &g_fake_core_cq;
	return 0;
}

static struct fi_ops_domain g_fake_dom_ops = {
	.size = sizeof(struct fi_ops_domain), .cq_open = fake_cq_open,
};
static struct fid_domain g_fake_core_dom = { .ops = &g_fake_dom_ops };

/* The core fabric's fi_trywait: nothing to wait for (the pipe says when). */
static int fake_trywait(struct fid_fabric *fabric, struct fid **fids,
			int count)
{
	(void) fabric; (void) fids; (void) count;
	return FI_SUCCESS;
}

static unsigned g_waits;

/* The core's fi_wait: drains its signal, waits for the socket (bounded). */
static int fake_wait(struct fid_wait *wait, int timeout)
{
	struct pollfd pfd = { .fd = g_udp[0], .events = POLLIN };
	char c;

	(void) wait;
	__atomic_add_fetch(&g_waits, 1, __ATOMIC_RELAXED);
	(void) !read(g_signal_pipe[0], &c, 1);
	if (g_udp[0] >= 0)
		(void) poll(&pfd, 1, timeout < 0 || timeout > 1000 ? 1000 :
				     timeout);
	return 0;
}

static struct fi_ops_wait g_fake_wait_ops = {
	.size = sizeof(struct fi_ops_wait), .wait = fake_wait,
};
static struct fid_wait g_fake_wait = {
	.fid = { .fclass = FI_CLASS_WAIT, .ops = &g_fake_fi_ops },
	.ops = &g_fake_wait_ops,
};

static int fake_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr,
			  struct fid_wait **waitset)
{
	(void) fabric; (void) attr;
	*waitset = &g_fake_wait;
	return 0;
}

static struct fi_ops_fabric g_fake_fabric_ops = {
	.size = sizeof(struct fi_ops_fabric), .trywait = fake_trywait,
	.wait_open = fake_wait_open,
};
static struct fid_fabric g_fake_core_fabric = { .ops = &g_fake_fabric_ops };
static struct pmv_fabric g_fabric = { .core = &g_fake_core_fabric };

/* As setup, with the engine's CQ opened by pmv_cq_open over the fake. */
static void setup_with_core_cq(void)
{
	struct fi_cq_attr attr = { .format = FI_CQ_FORMAT_CONTEXT,
				   .wait_obj = FI_WAIT_UNSPEC };
	struct fid_cq *cq;

	teardown(); /* what the suite's init opened, if it ran */
	setup_params();
	g_dom.core = &g_fake_core_dom;
	g_dom.fabric = g_fake_pollfd ? &g_fabric : NULL;
	cr_assert_eq(pmv_cq_open(&g_dom.domain_fid, &attr, &cq, NULL), 0);
	g_cq = pmv_container_of(cq, struct pmv_cq, cq_fid);
	g_cq_opened = true;
	g_core_staged = g_core_reads = 0;
	g_ep = open_ep();
}

/*
 * The application's fi_cq_read finds the core entry of a read-flush
 * commit's read: it returns the commit's completion without reading the
 * core a second time (over tcp each core read runs a progress pass).
 */
Test(engine, a_commit_finished_by_a_core_entry_returns_without_a_second_core_read,
     .init = setup_with_core_cq)
{
	struct fi_cq_entry out[4];
	unsigned first;
	int ctx;

	learn_mhp(5);
	reads_bring(5);
	first = g_nposts;
	cr_assert_eq(commit(g_ep, 0, 64, 0, &ctx), 0);
	cr_assert(g_posts[first + 1].read, "a read-flush commit");
	complete_post(first, 0);
	g_core_entries[0].op_context = g_posts[first + 1].context;
	g_core_staged = 1;
	cr_assert_eq(fi_cq_read(&g_cq->cq_fid, out, 4), 1);
	cr_assert_eq(out[0].op_context, &ctx);
	cr_assert_eq(g_core_reads, 1, "the core was read %u times",
		     g_core_reads);
}

/*
 * A read-flush read's completion, read from the core by the application,
 * finds a new generation: the commit's request to the agent is posted
 * after the CQ's lock is released (a completion callback that posts runs
 * outside it: no other reader of the CQ waits behind a core call).
 */
Test(engine, a_completion_read_from_the_core_posts_with_no_cq_lock_held,
     .init = setup_with_core_cq)
{
	struct fi_cq_entry out[4];
	unsigned first;
	int ctx;

	learn_mhp(5);
	reads_bring(6);
	first = g_nposts;
	cr_assert_eq(commit(g_ep, 0, 64, 0, &ctx), 0);
	complete_post(first, 0);
	g_core_entries[0].op_context = g_posts[first + 1].context;
	g_core_staged = 1;
	g_watched = &g_cq->lock;
	cr_assert_eq(fi_cq_read(&g_cq->cq_fid, out, 4), -FI_EAGAIN);
	g_watched = NULL;
	cr_assert_eq(g_nposts, first + 3, "the request to the agent");
	cr_assert_not(g_posts[first + 2].watched_held,
		      "the request was posted under the CQ's lock");
}

/*
 * A read-flush read the core refused at first (-FI_EAGAIN) is posted by
 * the engine's progress, which a CQ read runs as a hook: with no lock of
 * the hook list held (hooks persist and post; other readers of the CQ
 * and endpoint closes must not wait behind them).
 */
Test(engine, a_hook_runs_with_no_hook_list_lock_held,
     .init = setup_with_core_cq)
{
	struct fi_cq_entry out[4];
	unsigned first;

	learn_mhp(5);
	first = g_nposts;
	g_fail_at = g_calls + 2; /* the read */
	g_fail_ret = -FI_EAGAIN;
	cr_assert_eq(commit(g_ep, 0, 64, 0, NULL), 0);
	cr_assert_eq(g_nposts, first + 1, "the read waits");
	g_watched = &g_cq->hooks.lock;
	(void) fi_cq_read(&g_cq->cq_fid, out, 4);
	g_watched = NULL;
	cr_assert_eq(g_nposts, first + 2, "the read went from progress");
	cr_assert(g_posts[first + 1].read);
	cr_assert_not(g_posts[first + 1].watched_held,
		      "the hook ran under its list's lock");
}

static void *sread_thread(void *arg)
{
	uint64_t buf[8];

	(void) arg;
	(void) fi_cq_sread(&g_cq->cq_fid, buf, 1, NULL, 50);
	return NULL;
}

/*
 * While an application thread waits in the core's fi_cq_sread (which
 * progresses the CQ's endpoints itself), the agent's progress leaves the
 * core alone; once nobody waits there, it drives it again.
 */
Test(engine, the_agent_leaves_the_core_to_a_thread_waiting_in_it,
     .init = setup_with_core_cq)
{
	pthread_t t;
	unsigned reads;

	pmv_cq_ref_pmem(g_cq, 1); /* a pmem endpoint's CQ: pmemverbs's sread */
	g_in_core_sread = g_release_core_sread = 0;
	cr_assert_eq(pthread_create(&t, NULL, sread_thread, NULL), 0);
	for (int i = 0; i < 5000 &&
	     !__atomic_load_n(&g_in_core_sread, __ATOMIC_ACQUIRE); i++)
		usleep(1000);
	cr_assert(g_in_core_sread, "the reader never reached the core's sread");
	reads = g_core_reads;
	pmv_cq_progress_core(g_cq);
	cr_assert_eq(g_core_reads, reads, "the agent drove the core while an "
		     "application thread waited in it");
	__atomic_store_n(&g_release_core_sread, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	reads = g_core_reads;
	pmv_cq_progress_core(g_cq);
	cr_assert_eq(g_core_reads, reads + 1, "nobody waits: the agent must "
		     "drive the core");
	pmv_cq_ref_pmem(g_cq, -1);
}

/* As setup_with_core_cq, over a tcp-like core CQ that waits on its fds. */
static void setup_with_pollfd_core_cq(void)
{
	g_fake_pollfd = true;
	/* non-blocking: a core's fi_wait never blocks past its timeout */
	cr_assert_eq(pipe2(g_signal_pipe, O_NONBLOCK), 0);
	setup_with_core_cq();
	cr_assert(g_cq->wait_pollfd);
	pmv_cq_ref_pmem(g_cq, 1); /* a pmem endpoint's CQ: pmemverbs's sread */
	g_release_core_sread = 1; /* the core's sread returns at once */
}

static void teardown_pollfd_core_cq(void)
{
	pmv_cq_ref_pmem(g_cq, -1);
	teardown();
	g_fake_pollfd = false;
	close(g_signal_pipe[0]);
	close(g_signal_pipe[1]);
}

static ssize_t g_sread_ret;

static void *sread_forever_thread(void *arg)
{
	uint64_t buf[8];

	(void) arg;
	g_sread_ret = fi_cq_sread(&g_cq->cq_fid, buf, 1, NULL, -1);
	return NULL;
}

/* fi_cq_signal wakes a thread waiting without timeout: -FI_EAGAIN. */
Test(engine, fi_cq_signal_wakes_a_reader_that_waits_forever,
     .init = setup_with_pollfd_core_cq, .fini = teardown_pollfd_core_cq,
     .timeout = 20)
{
	pthread_t t;

	g_sread_ret = 0;
	cr_assert_eq(pthread_create(&t, NULL, sread_forever_thread, NULL), 0);
	usleep(20000);
	cr_assert_eq(fi_cq_signal(&g_cq->cq_fid), 0);
	pthread_join(t, NULL);
	cr_assert_eq(g_sread_ret, -FI_EAGAIN, "fi_cq_sread returned %zd",
		     g_sread_ret);
}

#if PMV_HAVE_WAIT_SETS /* libfabric 2.x: no wait set to drain the signal */
/* Opens g_udp: a socket bound to 127.0.0.1 and one connected to it. */
static void open_udp_pair(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);

	g_udp[0] = socket(AF_INET, SOCK_DGRAM, 0);
	g_udp[1] = socket(AF_INET, SOCK_DGRAM, 0);
	cr_assert(g_udp[0] >= 0 && g_udp[1] >= 0);
	cr_assert_eq(bind(g_udp[0], (struct sockaddr *) &a, sizeof(a)), 0);
	cr_assert_eq(getsockname(g_udp[0], (struct sockaddr *) &a, &len), 0);
	cr_assert_eq(connect(g_udp[1], (struct sockaddr *) &a, sizeof(a)), 0);
}

static void setup_with_socket(void)
{
	open_udp_pair();
	setup_with_pollfd_core_cq();
}

static void teardown_with_socket(void)
{
	teardown_pollfd_core_cq();
	close(g_udp[0]);
	close(g_udp[1]);
	g_udp[0] = g_udp[1] = -1;
}

/* A hook that serves what came on the socket, as the engine's serve a
 * request the core placed. */
static int g_served;

static void serve_socket(void *arg)
{
	char c;

	(void) arg;
	if (recv(g_udp[0], &c, 1, MSG_DONTWAIT) == 1)
		__atomic_store_n(&g_served, 1, __ATOMIC_RELEASE);
}

/*
 * A thread in fi_cq_sread woken by the core's signal alone (tcp's "fd list
 * changed", which only a wait in the core drains) must still come back to
 * serve a commit request whose bytes arrive next: the core's sread, where
 * it used to wait out its step, returns only for a completion.
 */
Test(engine, a_reader_woken_by_the_core_signal_serves_the_next_request,
     .init = setup_with_socket, .fini = teardown_with_socket, .timeout = 20)
{
	struct pmv_hook hook = { .progress = serve_socket };
	pthread_t t;

	pmv_hooks_add(&g_cq->hooks, &hook);
	g_release_core_sread = 0; /* the core's sread waits (up to 5 s) */
	g_served = 0;
	cr_assert_eq(write(g_signal_pipe[1], "c", 1), 1);
	cr_assert_eq(pthread_create(&t, NULL, sread_forever_thread, NULL), 0);
	usleep(20000);
	cr_assert_eq(send(g_udp[1], "r", 1, 0), 1);
	for (int i = 0; i < 2000 &&
	     !__atomic_load_n(&g_served, __ATOMIC_ACQUIRE); i++)
		usleep(1000);
	__atomic_store_n(&g_release_core_sread, 1, __ATOMIC_RELEASE);
	cr_assert_eq(fi_cq_signal(&g_cq->cq_fid), 0);
	pthread_join(t, NULL);
	pmv_hooks_remove(&g_cq->hooks, &hook);
	cr_assert(g_served, "the request was not served while the reader "
		  "waited in the core's sread");
	cr_assert_lt(g_waits, 100, "the reader spun: %u waits in the core",
		     g_waits);
}
#endif

/*
 * A send commit that ends without its ack (the connection gone) no longer
 * counts as in flight: plain writes and commits stop taking the slow
 * overlap path.  Before, only an ack decremented the count (issue 26's
 * risk list): seen failing with the decrement back in the ack path,
 * "1 sends still counted in flight".
 */
Test(engine, a_send_that_ends_without_its_ack_is_no_longer_in_flight)
{
	struct fi_cq_err_entry e;
	bool err;

	pmv_params.method = FI_PMEM_METHOD_SEND;
	cr_assert_eq(commit(g_ep, 0, 8, 0, NULL), 0);
	cr_assert_eq(pmv_ini_sends_busy(g_ep), 1);
	complete_post(0, FI_ECONNRESET); /* its request: the connection went */
	cr_assert(pop(&e, &err) && err);
	cr_assert_eq(pmv_ini_sends_busy(g_ep), 0, "%u sends still counted in "
		     "flight", pmv_ini_sends_busy(g_ep));
}

/*
 * Issue 25 item 2: sixteen 8-byte writes a MiB apart, then a commit.  The
 * requests (a slot of 128 bytes holds 5 extents) name every written byte
 * and no page nobody wrote: the extents that do not fit the commit's
 * request go ahead in internal ones.  Returns the number of requests;
 * their extents go to ext (*n of them).
 */
#define SCATTERED 16
static unsigned scattered_commit(int *ctx, struct pmv_extent *ext,
				 unsigned *n)
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

Test(engine, scattered_writes_reach_the_agent_exact)
{
	struct pmv_extent ext[64];
	struct fi_cq_err_entry e;
	unsigned n, nreq, i, j;
	bool err;
	int ctx;

	nreq = scattered_commit(&ctx, ext, &n);
	for (i = 0; i <= SCATTERED; i++) {
		uint64_t w = i * 1048576ULL + (i < SCATTERED ? 16 : 0);
		bool in = false;

		for (j = 0; j < n; j++)
			in |= ext[j].addr <= w && w + 8 <= ext[j].addr + ext[j].len;
		cr_assert(in, "the write at %#lx is in no request",
			  (unsigned long) w);
	}
	for (j = 0; j < n; j++)
		cr_assert_leq(ext[j].len, 4096, "extent %#lx+%lu covers pages "
			      "nobody wrote", (unsigned long) ext[j].addr,
			      (unsigned long) ext[j].len);
	for (i = 0; i < g_nposts; i++)
		complete_post(i, 0);
	for (i = 1; i < nreq; i++) {
		ack(g_ep, i, 0, FI_PMEM_PROFILE_PAGE, 0);
		cr_assert(!pop(&e, &err), "completed before its last request's "
			  "ack");
	}
	ack(g_ep, nreq, 0, FI_PMEM_PROFILE_PAGE, 0);
	cr_assert(pop(&e, &err) && !err && e.op_context == &ctx);
	cr_assert(!pop(&e, &err), "the spills raised completions");
}

Test(engine, a_failed_spill_fails_its_commit)
{
	struct pmv_extent ext[64];
	struct fi_cq_err_entry e;
	unsigned n, nreq, i;
	bool err;
	int ctx;

	nreq = scattered_commit(&ctx, ext, &n);
	cr_assert_gt(nreq, 1, "no spill: %u request", nreq);
	for (i = 0; i < g_nposts; i++)
		complete_post(i, 0);
	ack(g_ep, 1, -FI_EIO, FI_PMEM_PROFILE_PAGE, 0);
	for (i = 2; i <= nreq; i++)
		ack(g_ep, i, 0, FI_PMEM_PROFILE_PAGE, 0);
	cr_assert(pop(&e, &err), "the commit never completed");
	cr_assert(err && e.op_context == &ctx, "a spilled range failed, yet "
		  "the commit succeeded");
	cr_assert(!pop(&e, &err));
}

Test(engine, a_spill_failing_after_its_commit_dropped_fails_the_next_one)
{
	struct fi_cq_err_entry e;
	unsigned i, nreq;
	bool err;
	int ctx;

	join_requests();
	for (i = 0; i < SCATTERED; i++)
		pmv_ini_track(g_ep, REGION_KEY, i * 1048576ULL + 16, 8);
	g_fail_at = 4; /* three spills go, the joined write is refused */
	g_fail_ret = -FI_EAGAIN;
	cr_assert_eq(commit(g_ep, 0, 8, 0, &ctx), -FI_EAGAIN);
	nreq = g_nposts;
	cr_assert_eq(nreq, 3, "%u spills", nreq);
	for (i = 0; i < g_nposts; i++)
		complete_post(i, 0);
	ack(g_ep, 1, -FI_EIO, FI_PMEM_PROFILE_PAGE, 0);
	for (i = 2; i <= nreq; i++)
		ack(g_ep, i, 0, FI_PMEM_PROFILE_PAGE, 0);
	cr_assert(commit(g_ep, 0, 8, 0, &ctx) < 0, "the writes of a failed "
		  "spill were forgotten");
	cr_assert(!pop(&e, &err));
}

/*
 * A fenced commit by send behind spills: its request asks the agent to
 * check every spill ahead of it (fence_back), so its data is not placed
 * after one that failed.
 */
Test(engine, a_fenced_send_checks_the_spills_ahead_of_it)
{
	uint64_t buf[32];
	struct pmv_req *req = (struct pmv_req *) buf;
	unsigned i, nreq = 0;
	int ctx;

	push_table(g_ep, FI_PMEM_PROFILE_PAGE, 5);
	for (i = 0; i < SCATTERED; i++)
		pmv_ini_track(g_ep, REGION_KEY, i * 1048576ULL + 16, 8);
	cr_assert_eq(commit(g_ep, SCATTERED * 1048576ULL, 8, FI_FENCE, &ctx), 0);
	for (i = 0; i < g_nposts; i++) {
		if (g_posts[i].last_rma.key != INBOX_KEY)
			continue;
		nreq++;
		cr_assert_gt(pmv_req_decode(g_posts[i].bytes,
					    g_posts[i].last_rma.len, nreq,
					    req), 0);
	}
	cr_assert_gt(nreq, 1, "no spill: %u request", nreq);
	cr_assert(req->flags & PMV_REQ_INLINE, "the fenced commit went by "
		  "send");
	cr_assert(req->flags & PMV_REQ_FENCE);
	cr_assert_geq(req->fence_back, nreq - 1, "the fenced request checks "
		      "%u requests back, not its %u spills", req->fence_back,
		      nreq - 1);
}

/*
 * FI_WRITE and FI_READ counters of a pmem endpoint (pmv_ep_cntr.c): a
 * fake core counter records what pmemverbs adds to it.
 */
static uint64_t g_cnt, g_cnt_err;

static int fake_cntr_add(struct fid_cntr *c, uint64_t v)
{
	(void) c;
	g_cnt += v;
	return 0;
}

static int fake_cntr_adderr(struct fid_cntr *c, uint64_t v)
{
	(void) c;
	g_cnt_err += v;
	return 0;
}

static struct fi_ops_cntr g_fake_cntr_ops = {
	.size = sizeof(struct fi_ops_cntr),
	.add = fake_cntr_add,
	.adderr = fake_cntr_adderr,
};
static struct fid_cntr g_core_cntr = { .ops = &g_fake_cntr_ops };
static struct pmv_cntr g_cntr = { .core = &g_core_cntr };

/* g_ep counts its writes (or reads) in g_cntr, from zero. */
static void count_in_g_cntr(enum pmv_rma_cntr which)
{
	g_cnt = g_cnt_err = 0;
	g_cntr.refs = 1;
	g_ep->rma_cntr[which] = &g_cntr;
}

Test(engine, a_write_counter_counts_a_commit_at_its_ack_never_at_its_writes)
{
	struct fi_cq_err_entry e;
	bool err;
	int ctx;

	count_in_g_cntr(PMV_CNTR_WRITE);
	cr_assert_eq(commit(g_ep, 0, 1000, 0, &ctx), 0);
	complete_post(0, 0);
	complete_post(1, 0);
	g_ep->hook.progress(g_ep->hook.arg);
	cr_assert_eq(g_cnt, 0, "counted before the target's ack: its data "
		     "write and request are pmemverbs's own");
	ack(g_ep, 1, 0, FI_PMEM_PROFILE_PAGE, 0);
	cr_assert(pop(&e, &err));
	cr_assert_eq(g_cnt, 1, "the durable commit counted %" PRIu64 " times",
		     g_cnt);
	cr_assert_eq(g_cnt_err, 0);
}

Test(engine, a_failed_commit_counts_in_the_error_count_only)
{
	int ctx;

	count_in_g_cntr(PMV_CNTR_WRITE);
	cr_assert_eq(commit(g_ep, 0, 64, 0, &ctx), 0);
	complete_post(0, 0);
	complete_post(1, 0);
	ack(g_ep, 1, PMV_ERR_PERSIST, FI_PMEM_PROFILE_PAGE, 0);
	cr_assert_eq(g_cnt, 0, "a failed commit counted as a success");
	cr_assert_eq(g_cnt_err, 1);
}

Test(engine, a_commit_without_fi_completion_still_counts)
{
	struct fi_cq_err_entry e;
	bool err;
	int ctx;

	count_in_g_cntr(PMV_CNTR_WRITE);
	g_ep->tx_selective = true;
	cr_assert_eq(commit(g_ep, 0, 64, 0, &ctx), 0);
	complete_post(0, 0);
	complete_post(1, 0);
	ack(g_ep, 1, 0, FI_PMEM_PROFILE_PAGE, 0);
	cr_assert(!pop(&e, &err), "an entry that was not asked for");
	cr_assert_eq(g_cnt, 1);
}

/* A plain write (or read) of 64 bytes through the counted path. */
static ssize_t counted(bool read, uint64_t flags, void *ctx)
{
	static uint8_t buf[64];
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct fi_rma_iov rma = { .addr = 0, .len = sizeof(buf),
				  .key = REGION_KEY };
	struct fi_msg_rma msg = { .msg_iov = &iov, .iov_count = 1,
				  .rma_iov = &rma, .rma_iov_count = 1,
				  .context = ctx };

	return read ? pmv_counted_readmsg(g_ep, &msg, flags) :
		      pmv_counted_writemsg(g_ep, &msg, flags);
}

/*
 * Under FI_PMEMVERBS_DELIVERY_IS_COMMIT an FI_DELIVERY_COMPLETE write on
 * an endpoint with a write counter is a commit: it goes as one with the
 * application's context, and counts once, at its ack (not once more as a
 * plain write of the counted path).
 */
Test(engine, a_delivery_complete_commit_on_a_counted_endpoint_counts_once)
{
	int ctx;

	pmv_params.delivery_is_commit = 1;
	pmv_ep_set_op_flags(g_ep, 0);
	count_in_g_cntr(PMV_CNTR_WRITE);
	cr_assert_eq(counted(false, FI_DELIVERY_COMPLETE, &ctx), 0);
	cr_assert_eq(g_cnt, 0, "counted before it was posted");
	assert_agent_commit(&ctx);
	cr_assert_eq(g_cnt, 1, "the commit counted %" PRIu64 " times", g_cnt);
}

Test(engine, a_plain_write_counts_at_its_completion_asked_for_or_not)
{
	struct fi_cq_err_entry e;
	bool err;
	int ctx[3];

	count_in_g_cntr(PMV_CNTR_WRITE);
	g_ep->tx_selective = true;
	cr_assert_eq(counted(false, 0, &ctx[0]), 0);
	cr_assert_eq(counted(false, FI_COMPLETION, &ctx[1]), 0);
	cr_assert_eq(counted(false, FI_COMPLETION, &ctx[2]), 0);
	cr_assert_eq(g_nposts, 3);
	cr_assert(g_posts[0].flags & FI_COMPLETION, "the core must complete "
		  "it, or nothing counts it");
	cr_assert_eq(g_cnt, 0, "counted before the core completed it");
	complete_post(0, 0);
	cr_assert_eq(g_cnt, 1);
	cr_assert(!pop(&e, &err), "an entry without FI_COMPLETION");
	complete_post(1, 0);
	cr_assert(pop(&e, &err));
	cr_assert(!err);
	cr_assert_eq(e.op_context, &ctx[1], "the application's context");
	cr_assert_eq(e.flags, FI_RMA | FI_WRITE);
	complete_post(2, FI_ECONNRESET);
	cr_assert(pop(&e, &err));
	cr_assert(err);
	cr_assert_eq(e.op_context, &ctx[2]);
	cr_assert_eq(g_cnt, 2);
	cr_assert_eq(g_cnt_err, 1, "a failed write counts as an error");
	cr_assert_eq(g_cntr.refs, 1, "operations hold the counter until done");
}

Test(engine, a_read_counter_counts_the_applications_reads_not_read_flushes)
{
	struct fi_cq_err_entry e;
	unsigned first;
	bool err;
	int ctx;

	learn_mhp(5);
	count_in_g_cntr(PMV_CNTR_READ);
	first = g_nposts;
	cr_assert_eq(commit(g_ep, 0, 64, 0, &ctx), 0);
	cr_assert(g_posts[first + 1].read, "a read-flush follows the data");
	complete_post(first, 0);
	reads_bring(5);
	complete_post(first + 1, 0);
	cr_assert(pop(&e, &err) && !err);
	cr_assert_eq(g_cnt, 0, "pmemverbs's read-flush counted as a read");
	cr_assert_eq(counted(true, 0, &ctx), 0);
	complete_post(g_nposts - 1, 0);
	cr_assert_eq(g_cnt, 1, "the application's read");
	cr_assert(pop(&e, &err) && !err && e.op_context == &ctx &&
		  e.flags == (FI_RMA | FI_READ));
}
