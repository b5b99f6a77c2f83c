/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Unit tests: the send method (initiator/pmv_m_send.c) over the fake
 * core: data in flight inside a request holds back overlapping plain
 * writes, a send ends its in-flight count with or without its ack, and a
 * fenced send checks the spills ahead of it.
 */
#include "engine_fixture.h"

TestSuite(m_send, .init = setup, .fini = teardown);

/* send x send: the agent serves requests in order, so it goes after it. */
Test(m_send, a_send_over_send_data_in_flight_goes_behind_it)
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
Test(m_send, a_plain_write_over_send_data_in_flight_waits)
{
	earlier_send_in_flight();
	cr_assert_eq(plain_write(1024), -FI_EAGAIN);
	cr_assert_eq(plain_write(4096), 0,
		     "a write beside the send's range need not wait");
	ack(g_ep, 1, 0, FI_PMEM_PROFILE_PAGE, 5);
	cr_assert_eq(plain_write(1024), 0);
}

/*
 * A send commit that ends without its ack (the connection gone) no longer
 * counts as in flight: plain writes and commits stop taking the slow
 * overlap path.  Before, only an ack decremented the count (issue 26's
 * risk list): seen failing with the decrement back in the ack path,
 * "1 sends still counted in flight".
 */
Test(m_send, a_send_that_ends_without_its_ack_is_no_longer_in_flight)
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
 * A fenced commit by send behind spills: its request asks the agent to
 * check every spill ahead of it (fence_back), so its data is not placed
 * after one that failed.
 */
Test(m_send, a_fenced_send_checks_the_spills_ahead_of_it)
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
