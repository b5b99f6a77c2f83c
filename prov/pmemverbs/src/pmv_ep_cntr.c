/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: FI_WRITE, FI_READ and FI_REMOTE_WRITE counters of an
 * FI_RMA_PMEM endpoint.  They are never bound to the core endpoint (its
 * counters would count pmemverbs's own writes and reads: commit data,
 * requests, read-flushes, acks): pmemverbs counts into the core counter
 * itself (fi_cntr_add), at the point where the CQ entry is raised:
 *  - FI_WRITE: a commit when it is durable (or its error, in the error
 *    count), pmv_ini_report; a plain write when the core completes it;
 *  - FI_READ: the application's reads when the core completes them;
 *  - FI_REMOTE_WRITE: an FI_IMMED commit served, at its FI_IMMED entry.
 * Plain writes and reads go to the core with an internal context and
 * FI_COMPLETION (pmv_iop.h), so they count even when the application
 * asked no completion (FI_SELECTIVE_COMPLETION); their CQ entries, when
 * asked, are raised from that completion.
 */
#include <stdlib.h>

#include "pmv_objects.h"

/* An application write or read posted so that its completion counts. */
struct pmv_counted_op {
	void *context;          /* the application's */
	struct pmv_cntr *cntr;  /* held: cntr_refs */
	struct pmv_cq *cq;      /* room reserved in it for the entry */
	uint64_t flags;         /* FI_RMA | FI_WRITE or FI_READ */
	size_t len;
	bool entry;             /* the application asked a completion */
};

/* Adds one to cntr's success or error count (err). */
static void pmv_cntr_count(struct pmv_cntr *cntr, bool err)
{
	if (err)
		(void) fi_cntr_adderr(cntr->core, 1);
	else
		(void) fi_cntr_add(cntr->core, 1);
}

void pmv_ep_cntr_count(struct pmv_ep *ep, enum pmv_rma_cntr which, bool err)
{
	struct pmv_cntr *cntr = ep ? __atomic_load_n(&ep->rma_cntr[which],
						     __ATOMIC_ACQUIRE) : NULL;

	if (cntr)
		pmv_cntr_count(cntr, err);
}

/* Counter passes named so far (pmv_cntr_run), and the one this thread
 * runs (0: none). */
static uint64_t pmv_cntr_passes;
static __thread uint64_t pmv_cntr_pass;

/*
 * The counter hook: a read or wait of the counter progresses the
 * endpoint's transmit CQ, whose read runs its domain's one progress
 * (pmv_hooks_run_domain) and takes the internal completions that count.
 * Once per CQ in a pass: 1024 endpoints sharing one transmit CQ cost a
 * counter read one CQ read, not 1024.
 */
static void pmv_ep_cntr_progress(void *arg)
{
	struct pmv_ep *ep = arg;
	struct pmv_cq *cq = __atomic_load_n(&ep->tx_cq, __ATOMIC_ACQUIRE);
	uint64_t pass = pmv_cntr_pass;

	if (cq && (!pass || __atomic_exchange_n(&cq->cntr_pass, pass,
						__ATOMIC_RELAXED) != pass))
		(void) fi_cq_read(&cq->cq_fid, NULL, 0);
}

/*
 * What every read and wait of a counter runs: its hooks (before a wait
 * that request bytes do not end: before_wait, pmv_hooks_run_before_wait)
 * in one pass with a number no other pass has, which reads each transmit
 * CQ once.
 */
void pmv_cntr_run(struct pmv_cntr *cntr, bool before_wait)
{
	uint64_t outer = pmv_cntr_pass;

	/* a plain counter's reads number no pass (no atomic add) */
	if (__atomic_load_n(&cntr->hooks.head, __ATOMIC_ACQUIRE))
		pmv_cntr_pass = __atomic_add_fetch(&pmv_cntr_passes, 1,
						   __ATOMIC_RELAXED);
	if (before_wait)
		pmv_hooks_run_before_wait(&cntr->hooks);
	else
		pmv_hooks_run(&cntr->hooks);
	pmv_cntr_pass = outer;
}

/* True while the endpoint has commits or counted operations in flight. */
static bool pmv_ep_cntr_busy(void *arg)
{
	struct pmv_ep *ep = arg;
	struct pmv_cq *cq = __atomic_load_n(&ep->tx_cq, __ATOMIC_ACQUIRE);

	return cq && (pmv_cq_hooks_busy(cq) ||
		      __atomic_load_n(&cq->iops.outstanding, __ATOMIC_RELAXED));
}

/*
 * fi_trywait on a counter (or fi_wait on its wait set), asked after the
 * core's said yes: true if the application must read it before it sleeps
 * on its wait object.  So while its endpoints have commits or counted
 * operations in flight (pmv_ep_cntr_busy): pmemverbs counts them
 * (fi_cntr_add) only from a read's progress, which this runs, never the
 * core's wait object, and their acks land in memory.
 */
bool pmv_cntr_trywait_busy(struct pmv_cntr *cntr)
{
	pmv_cntr_run(cntr, false);
	return pmv_hooks_busy(&cntr->hooks);
}

/*
 * fi_ep_bind of a counter for RMA events on a pmem endpoint: remembered
 * (and held) per event, its reads made to progress ep, ep's RMA calls
 * made counted ones; nothing is bound to the core.  FI_REMOTE_READ and a
 * second counter of an event are refused, with nothing bound.
 */
int pmv_ep_cntr_bind(struct pmv_ep *ep, struct pmv_cntr *cntr, uint64_t flags)
{
	static const uint64_t events[PMV_RMA_CNTRS] = {
		[PMV_CNTR_WRITE] = FI_WRITE, [PMV_CNTR_READ] = FI_READ,
		[PMV_CNTR_REMOTE_WRITE] = FI_REMOTE_WRITE,
	};

	if (flags & FI_REMOTE_READ) {
		PMV_WARN(FI_LOG_EP_CTRL, "fi_ep_bind: an FI_REMOTE_READ counter "
			 "on an FI_RMA_PMEM endpoint would count its peer's "
			 "read-flushes, which the target cannot tell from the "
			 "application's reads; bind it without FI_REMOTE_READ "
			 "(FI_WRITE, FI_READ and FI_REMOTE_WRITE are counted)\n");
		return -FI_EOPNOTSUPP;
	}
	for (int i = 0; i < PMV_RMA_CNTRS; i++) {
		if ((flags & events[i]) && ep->rma_cntr[i]) {
			PMV_WARN(FI_LOG_EP_CTRL, "fi_ep_bind: a counter of "
				 "these events is bound already; bind one "
				 "counter per event\n");
			return -FI_EINVAL;
		}
	}
	for (int i = 0; i < PMV_RMA_CNTRS; i++) {
		if (!(flags & events[i]))
			continue;
		__atomic_add_fetch(&cntr->refs, 1, __ATOMIC_ACQ_REL);
		ep->rma_cntr[i] = cntr;
		ep->cntr_hook[i] = (struct pmv_hook) {
			.progress = pmv_ep_cntr_progress,
			.busy = pmv_ep_cntr_busy, .arg = ep, .ep = ep };
		pmv_hooks_add(&cntr->hooks, &ep->cntr_hook[i]);
	}
	if (ep->rma_cntr[PMV_CNTR_WRITE] || ep->rma_cntr[PMV_CNTR_READ])
		ep->ep_fid.rma = &pmv_rma_pmem_cntr_ops;
	return 0;
}

/* Takes ep's hooks off its counters (fi_close, before the core's close):
 * a counter's read or wait no longer serves it. */
void pmv_ep_cntr_pause(struct pmv_ep *ep)
{
	for (int i = 0; i < PMV_RMA_CNTRS; i++)
		if (ep->rma_cntr[i])
			pmv_hooks_remove(&ep->rma_cntr[i]->hooks,
					 &ep->cntr_hook[i]);
}

/* Puts them back: the core refused to close ep, which works on. */
void pmv_ep_cntr_resume(struct pmv_ep *ep)
{
	for (int i = 0; i < PMV_RMA_CNTRS; i++)
		if (ep->rma_cntr[i])
			pmv_hooks_add(&ep->rma_cntr[i]->hooks,
				      &ep->cntr_hook[i]);
}

/* Drops ep's RMA counters and their hooks (ep closes). */
void pmv_ep_cntr_unbind(struct pmv_ep *ep)
{
	for (int i = 0; i < PMV_RMA_CNTRS; i++) {
		if (!ep->rma_cntr[i])
			continue;
		pmv_hooks_remove(&ep->rma_cntr[i]->hooks, &ep->cntr_hook[i]);
		__atomic_sub_fetch(&ep->rma_cntr[i]->refs, 1, __ATOMIC_ACQ_REL);
		/* the agent may be counting an FI_IMMED commit: atomic */
		__atomic_store_n(&ep->rma_cntr[i], NULL, __ATOMIC_RELEASE);
	}
}

/* The core completed a counted operation: its entry, then its count. */
static void pmv_counted_done(struct pmv_iop *iop,
			     const struct fi_cq_err_entry *err)
{
	struct pmv_counted_op *op = iop->owner;
	struct fi_cq_err_entry e = {
		.op_context = op->context, .flags = op->flags, .len = op->len,
	};

	if (err) {
		e.err = err->err ? err->err : FI_EIO;
		e.prov_errno = err->prov_errno;
	}
	if (err || op->entry)
		pmv_cq_push(op->cq, &e, err != NULL);
	else
		pmv_cq_unreserve(op->cq);
	pmv_cntr_count(op->cntr, err != NULL);
	__atomic_sub_fetch(&op->cntr->refs, 1, __ATOMIC_ACQ_REL);
	free(op);
}

static void pmv_counted_no_memory(void)
{
	PMV_WARN(FI_LOG_EP_DATA, "out of memory for a write or read counted "
		 "by an FI_WRITE or FI_READ counter; the call is refused: "
		 "retry it once memory is freed\n");
}

/*
 * The internal context a counted write or read of msg goes with, room
 * for its entry reserved in the transmit CQ: 0, or a negative code with
 * nothing held.
 */
static int pmv_counted_begin(struct pmv_ep *ep, enum pmv_rma_cntr which,
			     const struct fi_msg_rma *msg, bool entry,
			     struct pmv_iop **iop)
{
	struct pmv_cq *cq = __atomic_load_n(&ep->tx_cq, __ATOMIC_ACQUIRE);
	struct pmv_counted_op *op;
	size_t i;

	if (!cq) {
		PMV_WARN(FI_LOG_EP_DATA, "an FI_WRITE or FI_READ counter of "
			 "an FI_RMA_PMEM endpoint counts through its transmit "
			 "CQ: bind one (FI_TRANSMIT, FI_SELECTIVE_COMPLETION "
			 "if no entries are wanted)\n");
		return -FI_ENOCQ;
	}
	op = pmv_fault(PMV_FAULT_ALLOC) ? NULL : calloc(1, sizeof(*op));
	if (!op || pmv_cq_reserve(cq)) {
		if (!op)
			pmv_counted_no_memory();
		free(op);
		return -FI_ENOMEM;
	}
	*op = (struct pmv_counted_op) {
		.context = msg->context, .cntr = ep->rma_cntr[which], .cq = cq,
		.flags = FI_RMA | (which == PMV_CNTR_WRITE ? FI_WRITE : FI_READ),
		.entry = entry };
	for (i = 0; i < msg->rma_iov_count; i++)
		op->len += msg->rma_iov[i].len;
	*iop = pmv_iop_get(&cq->iops, pmv_counted_done, op, PMV_IOP_DATA, 0);
	if (!*iop) {
		pmv_counted_no_memory();
		pmv_cq_unreserve(cq);
		free(op);
		return -FI_ENOMEM;
	}
	__atomic_add_fetch(&op->cntr->refs, 1, __ATOMIC_ACQ_REL);
	return 0;
}

/* Undoes pmv_counted_begin for an operation the core refused. */
static void pmv_counted_cancel(struct pmv_iop *iop)
{
	struct pmv_counted_op *op = iop->owner;

	__atomic_sub_fetch(&op->cntr->refs, 1, __ATOMIC_ACQ_REL);
	pmv_cq_unreserve(op->cq);
	pmv_iop_put(&op->cq->iops, iop);
	free(op);
}

/* True if an operation with flags raises an entry in the application's CQ. */
static bool pmv_counted_entry(const struct pmv_ep *ep, uint64_t flags)
{
	return !(flags & FI_INJECT) &&
	       (!ep->tx_selective || (flags & FI_COMPLETION));
}

/* Posts msg through post (the pmem write or read path) so that it counts. */
static ssize_t pmv_counted_post(struct pmv_ep *ep, enum pmv_rma_cntr which,
				const struct fi_msg_rma *msg, uint64_t flags,
				ssize_t (*post)(struct fid_ep *,
						const struct fi_msg_rma *,
						uint64_t))
{
	struct fi_msg_rma m = *msg;
	struct pmv_iop *iop;
	ssize_t ret;

	ret = pmv_counted_begin(ep, which, msg, pmv_counted_entry(ep, flags),
				&iop);
	if (ret)
		return ret;
	m.context = iop;
	ret = post(&ep->ep_fid, &m, flags | FI_COMPLETION);
	if (ret)
		pmv_counted_cancel(iop);
	return ret;
}

/* A write counted: a commit (FI_DELIVERY_COMPLETE too, under
 * FI_PMEMVERBS_DELIVERY_IS_COMMIT) goes its own way (pmv_ini_report
 * counts it). */
ssize_t pmv_counted_writemsg(struct pmv_ep *ep, const struct fi_msg_rma *msg,
			     uint64_t flags)
{
	if (!ep->rma_cntr[PMV_CNTR_WRITE] ||
	    (flags & (PMV_COMMIT_FLAGS | PMV_UNKNOWN_PROV_BITS |
		      ep->delivery_commit)))
		return pmv_rma_pmem_ops.writemsg(&ep->ep_fid, msg, flags);
	return pmv_counted_post(ep, PMV_CNTR_WRITE, msg, flags,
				pmv_rma_pmem_ops.writemsg);
}

ssize_t pmv_counted_readmsg(struct pmv_ep *ep, const struct fi_msg_rma *msg,
			    uint64_t flags)
{
	if (!ep->rma_cntr[PMV_CNTR_READ])
		return pmv_rma_pmem_ops.readmsg(&ep->ep_fid, msg, flags);
	return pmv_counted_post(ep, PMV_CNTR_READ, msg, flags,
				pmv_rma_pmem_ops.readmsg);
}

/*
 * The RMA calls of an endpoint with an FI_WRITE or FI_READ counter: each
 * is made an fi_msg_rma and goes through pmv_counted_writemsg or
 * pmv_counted_readmsg, except where default op_flags make every write a
 * commit (then the pmem path's own call, whose commit counts).
 */
static inline struct pmv_ep *pmv_cntr_ep(struct fid_ep *ep)
{
	return pmv_container_of(ep, struct pmv_ep, ep_fid);
}

/* The flags a call without flags takes from the endpoint's op_flags. */
static uint64_t pmv_call_flags(const struct pmv_ep *ep)
{
	return ep->tx_op_flags & FI_COMPLETION;
}

static bool pmv_write_commits(const struct pmv_ep *ep)
{
	return ep->tx_op_flags & FI_COMMIT_COMPLETE;
}

static ssize_t pmv_c_rma(struct fid_ep *ep_fid, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t peer,
			 uint64_t addr, uint64_t key, void *context,
			 uint64_t data, uint64_t flags, bool read)
{
	struct pmv_ep *ep = pmv_cntr_ep(ep_fid);
	struct fi_rma_iov rma = { .addr = addr, .key = key };
	struct fi_msg_rma msg = {
		.msg_iov = iov, .desc = desc, .iov_count = count,
		.addr = peer, .rma_iov = &rma, .rma_iov_count = 1,
		.context = context, .data = data,
	};
	size_t i;

	for (i = 0; i < count; i++)
		rma.len += iov[i].iov_len;
	flags |= pmv_call_flags(ep);
	return read ? pmv_counted_readmsg(ep, &msg, flags) :
		      pmv_counted_writemsg(ep, &msg, flags);
}

static ssize_t pmv_c_read(struct fid_ep *ep, void *buf, size_t len,
			  void *desc, fi_addr_t src_addr, uint64_t addr,
			  uint64_t key, void *context)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	return pmv_c_rma(ep, &iov, &desc, 1, src_addr, addr, key, context,
			 0, 0, true);
}

static ssize_t pmv_c_readv(struct fid_ep *ep, const struct iovec *iov,
			   void **desc, size_t count, fi_addr_t src_addr,
			   uint64_t addr, uint64_t key, void *context)
{
	return pmv_c_rma(ep, iov, desc, count, src_addr, addr, key, context,
			 0, 0, true);
}

static ssize_t pmv_c_readmsg(struct fid_ep *ep, const struct fi_msg_rma *msg,
			     uint64_t flags)
{
	return pmv_counted_readmsg(pmv_cntr_ep(ep), msg, flags);
}

static ssize_t pmv_c_write(struct fid_ep *ep, const void *buf, size_t len,
			   void *desc, fi_addr_t dest_addr, uint64_t addr,
			   uint64_t key, void *context)
{
	struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };

	if (pmv_write_commits(pmv_cntr_ep(ep)))
		return pmv_rma_pmem_ops.write(ep, buf, len, desc, dest_addr,
					      addr, key, context);
	return pmv_c_rma(ep, &iov, &desc, 1, dest_addr, addr, key, context,
			 0, 0, false);
}

static ssize_t pmv_c_writev(struct fid_ep *ep, const struct iovec *iov,
			    void **desc, size_t count, fi_addr_t dest_addr,
			    uint64_t addr, uint64_t key, void *context)
{
	if (pmv_write_commits(pmv_cntr_ep(ep)))
		return pmv_rma_pmem_ops.writev(ep, iov, desc, count, dest_addr,
					       addr, key, context);
	return pmv_c_rma(ep, iov, desc, count, dest_addr, addr, key, context,
			 0, 0, false);
}

static ssize_t pmv_c_writemsg(struct fid_ep *ep, const struct fi_msg_rma *msg,
			      uint64_t flags)
{
	return pmv_counted_writemsg(pmv_cntr_ep(ep), msg, flags);
}

static ssize_t pmv_c_inject_write(struct fid_ep *ep, const void *buf,
				  size_t len, fi_addr_t dest_addr,
				  uint64_t addr, uint64_t key)
{
	struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };

	if (pmv_write_commits(pmv_cntr_ep(ep)))
		return pmv_rma_pmem_ops.inject(ep, buf, len, dest_addr, addr,
					       key);
	return pmv_c_rma(ep, &iov, NULL, 1, dest_addr, addr, key, NULL, 0,
			 FI_INJECT, false);
}

static ssize_t pmv_c_writedata(struct fid_ep *ep, const void *buf, size_t len,
			       void *desc, uint64_t data, fi_addr_t dest_addr,
			       uint64_t addr, uint64_t key, void *context)
{
	struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };

	return pmv_c_rma(ep, &iov, &desc, 1, dest_addr, addr, key, context,
			 data, FI_REMOTE_CQ_DATA, false);
}

static ssize_t pmv_c_inject_writedata(struct fid_ep *ep, const void *buf,
				      size_t len, uint64_t data,
				      fi_addr_t dest_addr, uint64_t addr,
				      uint64_t key)
{
	struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };

	return pmv_c_rma(ep, &iov, NULL, 1, dest_addr, addr, key, NULL, data,
			 FI_REMOTE_CQ_DATA | FI_INJECT, false);
}

struct fi_ops_rma pmv_rma_pmem_cntr_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = pmv_c_read,
	.readv = pmv_c_readv,
	.readmsg = pmv_c_readmsg,
	.write = pmv_c_write,
	.writev = pmv_c_writev,
	.writemsg = pmv_c_writemsg,
	.inject = pmv_c_inject_write,
	.writedata = pmv_c_writedata,
	.injectdata = pmv_c_inject_writedata,
};
