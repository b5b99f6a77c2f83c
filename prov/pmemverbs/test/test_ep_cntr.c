/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Unit tests: the FI_WRITE and FI_READ counters of a pmem endpoint
 * (pmv_ep_cntr.c) over the fake core: a commit counts once, at its ack,
 * never at pmemverbs's own writes and reads.
 */
#include <inttypes.h>

#include "cq_fixture.h"

TestSuite(ep_cntr, .init = setup, .fini = teardown);

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

Test(ep_cntr, a_write_counter_counts_a_commit_at_its_ack_never_at_its_writes)
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

/* The transmit CQ's progress read, which a counter's hook makes (count
 * 0): it runs the engine, as pmemverbs's CQ read runs its hooks. */
static ssize_t engine_read(struct fid_cq *cq, void *buf, size_t count)
{
	(void) cq; (void) buf; (void) count;
	g_ep->hook.progress(g_ep->hook.arg);
	return -FI_EAGAIN;
}

static struct fi_ops_cq g_engine_cq_ops = {
	.size = sizeof(struct fi_ops_cq), .read = engine_read,
};

/*
 * fi_trywait on a counter must not let the application sleep while a
 * commit on its endpoint is in flight: pmemverbs counts it from a read's
 * progress, and its ack lands in memory, which no core wait object shows.
 */
Test(ep_cntr, trywait_refuses_while_a_counted_commit_is_in_flight)
{
	struct pmv_cntr cntr = { .core = &g_core_cntr };
	int ctx;

	g_cnt = g_cnt_err = 0;
	g_cq->cq_fid.ops = &g_engine_cq_ops;
	pmv_hooks_init(&cntr.hooks, NULL);
	cr_assert_eq(pmv_ep_cntr_bind(g_ep, &cntr, FI_WRITE), 0);
	cr_assert_not(pmv_cntr_trywait_busy(&cntr), "refused with nothing in "
		      "flight");
	cr_assert_eq(commit(g_ep, 0, 64, 0, &ctx), 0);
	complete_post(0, 0);
	complete_post(1, 0);
	cr_assert(pmv_cntr_trywait_busy(&cntr), "a commit in flight let the "
		  "application sleep on the counter");
	ack_lands(g_ep, 1, 0, FI_PMEM_PROFILE_PAGE, 0);
	cr_assert_not(pmv_cntr_trywait_busy(&cntr), "refused once the ack "
		      "was there to count");
	cr_assert_eq(g_cnt, 1, "trywait's progress counted %" PRIu64 " "
		     "commits, not the one acknowledged", g_cnt);
	pmv_ep_cntr_unbind(g_ep);
	pmv_hooks_fini(&cntr.hooks);
}

Test(ep_cntr, a_failed_commit_counts_in_the_error_count_only)
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

Test(ep_cntr, a_commit_without_fi_completion_still_counts)
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
Test(ep_cntr, a_delivery_complete_commit_on_a_counted_endpoint_counts_once)
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

Test(ep_cntr, a_plain_write_counts_at_its_completion_asked_for_or_not)
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

Test(ep_cntr, a_read_counter_counts_the_applications_reads_not_read_flushes)
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

/*
 * Three endpoints of one transmit CQ count their writes in one counter:
 * a read of the counter (or a wait's pass) reads that CQ, which runs the
 * domain's one progress, once, not once per endpoint.
 */
Test(ep_cntr, a_counter_pass_reads_a_transmit_cq_its_endpoints_share_once,
     .init = setup_with_core_cq)
{
	struct pmv_ep *more[2] = { open_ep(), open_ep() };
	struct pmv_cntr cntr = { .core = &g_core_cntr };

	pmv_hooks_init(&cntr.hooks, NULL);
	cr_assert_eq(pmv_ep_cntr_bind(g_ep, &cntr, FI_WRITE), 0);
	for (int i = 0; i < 2; i++)
		cr_assert_eq(pmv_ep_cntr_bind(more[i], &cntr, FI_WRITE), 0);
	pmv_cq_ref_pmem(g_cq, 1);
	for (int before_wait = 0; before_wait < 2; before_wait++) {
		g_core_reads = 0;
		pmv_cntr_run(&cntr, before_wait);
		cr_assert_eq(g_core_reads, 1, "a counter pass (before a wait: "
			     "%d) read the transmit CQ of its three endpoints "
			     "%u times", before_wait, g_core_reads);
	}
	pmv_cq_ref_pmem(g_cq, -1);
	pmv_ep_cntr_pause(g_ep);
	for (int i = 0; i < 2; i++) {
		pmv_ep_cntr_pause(more[i]);
		close_ep(more[i]);
	}
	pmv_hooks_fini(&cntr.hooks);
}
