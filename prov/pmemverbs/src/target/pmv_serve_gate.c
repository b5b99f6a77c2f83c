/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: holding a gated request until its write's target completion
 * was read (fi_cq(3), target completion semantics; pmv_gate.c keeps the
 * newest confirmed seq per endpoint).
 */
#include "target/pmv_target.h"

/*
 * True if req is gated and its write's completion was not read yet: its
 * bytes may be there before the rest of its data (no rule orders one
 * write's segments), so it waits, as a request not yet whole does.
 */
bool pmv_serve_gate_shut(const struct pmv_ep *ep, const struct pmv_req *req)
{
	struct pmv_cq *rx;

	if (!(req->flags & PMV_REQ_GATED) || !ep->gated ||
	    pmv_gate_passed(ep, req->seq))
		return false;
	/* the completion may wait in a core CQ nobody reads (a target
	 * polling a counter), or one a thread sleeps in (its bytes placed by
	 * another; or this thread, in fi_cntr_wait): read it here, and wake
	 * a sleeper, whose entries may now be queued */
	rx = __atomic_load_n(&ep->rx_cq, __ATOMIC_ACQUIRE);
	if (!rx)
		return true;
	pmv_cq_take_core(rx);
	if (pmv_cq_sleepers(rx) > (pmv_cq_waited_here == rx ? 1 : 0))
		pmv_cq_wake(rx); /* its entries may be queued */
	return !pmv_gate_passed(ep, req->seq);
}
