/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: data-path operations of an endpoint.
 *
 * Those with nothing to do with persistence forward to the core endpoint in
 * one call: no lock, no allocation, no logging (atomics first read one
 * word, see below).  Endpoints opened with FI_RMA_PMEM have their own RMA
 * table at the end of this file.
 * Memory descriptors and fi_addr_t values need no translation (a pmemverbs
 * MR's desc is the core MR's desc), and contexts pass through untouched, so
 * completions carry the application's own contexts.
 */
#include "pmv.h"

static inline struct pmv_ep *pmv_ep(struct fid_ep *ep)
{
	return pmv_container_of(ep, struct pmv_ep, ep_fid);
}

static inline struct fid_ep *core_ep(struct fid_ep *ep)
{
	return pmv_ep(ep)->core;
}


/* Messages. */

static ssize_t pmv_recv(struct fid_ep *ep, void *buf, size_t len, void *desc,
			fi_addr_t src_addr, void *context)
{
	return fi_recv(core_ep(ep), buf, len, desc, src_addr, context);
}

static ssize_t pmv_recvv(struct fid_ep *ep, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t src_addr,
			 void *context)
{
	return fi_recvv(core_ep(ep), iov, desc, count, src_addr, context);
}

static ssize_t pmv_recvmsg(struct fid_ep *ep, const struct fi_msg *msg,
			   uint64_t flags)
{
	return fi_recvmsg(core_ep(ep), msg, flags);
}

static ssize_t pmv_send(struct fid_ep *ep, const void *buf, size_t len,
			void *desc, fi_addr_t dest_addr, void *context)
{
	return fi_send(core_ep(ep), buf, len, desc, dest_addr, context);
}

static ssize_t pmv_sendv(struct fid_ep *ep, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t dest_addr,
			 void *context)
{
	return fi_sendv(core_ep(ep), iov, desc, count, dest_addr, context);
}

static ssize_t pmv_sendmsg(struct fid_ep *ep, const struct fi_msg *msg,
			   uint64_t flags)
{
	return fi_sendmsg(core_ep(ep), msg, flags);
}

static ssize_t pmv_inject(struct fid_ep *ep, const void *buf, size_t len,
			  fi_addr_t dest_addr)
{
	return fi_inject(core_ep(ep), buf, len, dest_addr);
}

static ssize_t pmv_senddata(struct fid_ep *ep, const void *buf, size_t len,
			    void *desc, uint64_t data, fi_addr_t dest_addr,
			    void *context)
{
	return fi_senddata(core_ep(ep), buf, len, desc, data, dest_addr,
			   context);
}

static ssize_t pmv_injectdata(struct fid_ep *ep, const void *buf, size_t len,
			      uint64_t data, fi_addr_t dest_addr)
{
	return fi_injectdata(core_ep(ep), buf, len, data, dest_addr);
}

struct fi_ops_msg pmv_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = pmv_recv,
	.recvv = pmv_recvv,
	.recvmsg = pmv_recvmsg,
	.send = pmv_send,
	.sendv = pmv_sendv,
	.sendmsg = pmv_sendmsg,
	.inject = pmv_inject,
	.senddata = pmv_senddata,
	.injectdata = pmv_injectdata,
};

/* Tagged messages. */

static ssize_t pmv_trecv(struct fid_ep *ep, void *buf, size_t len, void *desc,
			 fi_addr_t src_addr, uint64_t tag, uint64_t ignore,
			 void *context)
{
	return fi_trecv(core_ep(ep), buf, len, desc, src_addr, tag, ignore,
			context);
}

static ssize_t pmv_trecvv(struct fid_ep *ep, const struct iovec *iov,
			  void **desc, size_t count, fi_addr_t src_addr,
			  uint64_t tag, uint64_t ignore, void *context)
{
	return fi_trecvv(core_ep(ep), iov, desc, count, src_addr, tag, ignore,
			 context);
}

static ssize_t pmv_trecvmsg(struct fid_ep *ep, const struct fi_msg_tagged *msg,
			    uint64_t flags)
{
	return fi_trecvmsg(core_ep(ep), msg, flags);
}

static ssize_t pmv_tsend(struct fid_ep *ep, const void *buf, size_t len,
			 void *desc, fi_addr_t dest_addr, uint64_t tag,
			 void *context)
{
	return fi_tsend(core_ep(ep), buf, len, desc, dest_addr, tag, context);
}

static ssize_t pmv_tsendv(struct fid_ep *ep, const struct iovec *iov,
			  void **desc, size_t count, fi_addr_t dest_addr,
			  uint64_t tag, void *context)
{
	return fi_tsendv(core_ep(ep), iov, desc, count, dest_addr, tag,
			 context);
}

static ssize_t pmv_tsendmsg(struct fid_ep *ep, const struct fi_msg_tagged *msg,
			    uint64_t flags)
{
	return fi_tsendmsg(core_ep(ep), msg, flags);
}

static ssize_t pmv_tinject(struct fid_ep *ep, const void *buf, size_t len,
			   fi_addr_t dest_addr, uint64_t tag)
{
	return fi_tinject(core_ep(ep), buf, len, dest_addr, tag);
}

static ssize_t pmv_tsenddata(struct fid_ep *ep, const void *buf, size_t len,
			     void *desc, uint64_t data, fi_addr_t dest_addr,
			     uint64_t tag, void *context)
{
	return fi_tsenddata(core_ep(ep), buf, len, desc, data, dest_addr, tag,
			    context);
}

static ssize_t pmv_tinjectdata(struct fid_ep *ep, const void *buf, size_t len,
			       uint64_t data, fi_addr_t dest_addr, uint64_t tag)
{
	return fi_tinjectdata(core_ep(ep), buf, len, data, dest_addr, tag);
}

struct fi_ops_tagged pmv_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = pmv_trecv,
	.recvv = pmv_trecvv,
	.recvmsg = pmv_trecvmsg,
	.send = pmv_tsend,
	.sendv = pmv_tsendv,
	.sendmsg = pmv_tsendmsg,
	.inject = pmv_tinject,
	.senddata = pmv_tsenddata,
	.injectdata = pmv_tinjectdata,
};

/* RMA. */

static ssize_t pmv_read(struct fid_ep *ep, void *buf, size_t len, void *desc,
			fi_addr_t src_addr, uint64_t addr, uint64_t key,
			void *context)
{
	return fi_read(core_ep(ep), buf, len, desc, src_addr, addr, key,
		       context);
}

static ssize_t pmv_readv(struct fid_ep *ep, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t src_addr,
			 uint64_t addr, uint64_t key, void *context)
{
	return fi_readv(core_ep(ep), iov, desc, count, src_addr, addr, key,
			context);
}

static ssize_t pmv_readmsg(struct fid_ep *ep, const struct fi_msg_rma *msg,
			   uint64_t flags)
{
	return fi_readmsg(core_ep(ep), msg, flags);
}

static ssize_t pmv_write(struct fid_ep *ep, const void *buf, size_t len,
			 void *desc, fi_addr_t dest_addr, uint64_t addr,
			 uint64_t key, void *context)
{
	return fi_write(core_ep(ep), buf, len, desc, dest_addr, addr, key,
			context);
}

static ssize_t pmv_writev(struct fid_ep *ep, const struct iovec *iov,
			  void **desc, size_t count, fi_addr_t dest_addr,
			  uint64_t addr, uint64_t key, void *context)
{
	return fi_writev(core_ep(ep), iov, desc, count, dest_addr, addr, key,
			 context);
}

/*
 * Flags only a pmem endpoint accepts: FI_COMMIT_COMPLETE (pmemverbs makes
 * commits durable only there; the core's own FI_COMMIT_COMPLETE knows
 * nothing of the target's persistence), FI_IMMED and unknown provider bits.
 */
#define PMV_PMEM_ONLY_FLAGS (FI_COMMIT_COMPLETE | FI_IMMED | PMV_UNKNOWN_PROV_BITS)

static ssize_t pmv_writemsg(struct fid_ep *ep, const struct fi_msg_rma *msg,
			    uint64_t flags)
{
	if (flags & PMV_PMEM_ONLY_FLAGS) {
		PMV_WARN(FI_LOG_EP_DATA, "fi_writemsg: FI_COMMIT_COMPLETE, "
			 "FI_IMMED and provider flag bits need an endpoint "
			 "opened with FI_RMA_PMEM in its caps\n");
		return (flags & PMV_UNKNOWN_PROV_BITS) ? -FI_EBADFLAGS :
		       (flags & FI_IMMED) ? -FI_EINVAL : -FI_EOPNOTSUPP;
	}
	return fi_writemsg(core_ep(ep), msg, flags);
}

static ssize_t pmv_inject_write(struct fid_ep *ep, const void *buf, size_t len,
				fi_addr_t dest_addr, uint64_t addr,
				uint64_t key)
{
	return fi_inject_write(core_ep(ep), buf, len, dest_addr, addr, key);
}

static ssize_t pmv_writedata(struct fid_ep *ep, const void *buf, size_t len,
			     void *desc, uint64_t data, fi_addr_t dest_addr,
			     uint64_t addr, uint64_t key, void *context)
{
	return fi_writedata(core_ep(ep), buf, len, desc, data, dest_addr, addr,
			    key, context);
}

static ssize_t pmv_inject_writedata(struct fid_ep *ep, const void *buf,
				    size_t len, uint64_t data,
				    fi_addr_t dest_addr, uint64_t addr,
				    uint64_t key)
{
	return fi_inject_writedata(core_ep(ep), buf, len, data, dest_addr,
				   addr, key);
}

struct fi_ops_rma pmv_rma_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = pmv_read,
	.readv = pmv_readv,
	.readmsg = pmv_readmsg,
	.write = pmv_write,
	.writev = pmv_writev,
	.writemsg = pmv_writemsg,
	.inject = pmv_inject_write,
	.writedata = pmv_writedata,
	.injectdata = pmv_inject_writedata,
};

/*
 * Atomics.  Each checks one word first: an atomic on a pmem endpoint waits
 * (-FI_EAGAIN) while a send commit to its key is in flight (pmv_send.c);
 * on other endpoints no send is ever in flight.
 */

static inline bool pmv_atomic_waits(struct fid_ep *ep, uint64_t key)
{
	return pmv_send_conflict(pmv_ep(ep), key, 0, 0);
}

static inline bool pmv_atomicmsg_waits(struct fid_ep *ep,
				       const struct fi_msg_atomic *msg)
{
	return msg && msg->rma_iov_count &&
	       pmv_atomic_waits(ep, msg->rma_iov[0].key);
}

static ssize_t pmv_atomic(struct fid_ep *ep, const void *buf, size_t count,
			  void *desc, fi_addr_t dest_addr, uint64_t addr,
			  uint64_t key, enum fi_datatype datatype,
			  enum fi_op op, void *context)
{
	if (pmv_atomic_waits(ep, key))
		return -FI_EAGAIN;
	return fi_atomic(core_ep(ep), buf, count, desc, dest_addr, addr, key,
			 datatype, op, context);
}

static ssize_t pmv_atomicv(struct fid_ep *ep, const struct fi_ioc *iov,
			   void **desc, size_t count, fi_addr_t dest_addr,
			   uint64_t addr, uint64_t key,
			   enum fi_datatype datatype, enum fi_op op,
			   void *context)
{
	if (pmv_atomic_waits(ep, key))
		return -FI_EAGAIN;
	return fi_atomicv(core_ep(ep), iov, desc, count, dest_addr, addr, key,
			  datatype, op, context);
}

static ssize_t pmv_atomicmsg(struct fid_ep *ep,
			     const struct fi_msg_atomic *msg, uint64_t flags)
{
	if (pmv_atomicmsg_waits(ep, msg))
		return -FI_EAGAIN;
	return fi_atomicmsg(core_ep(ep), msg, flags);
}

static ssize_t pmv_inject_atomic(struct fid_ep *ep, const void *buf,
				 size_t count, fi_addr_t dest_addr,
				 uint64_t addr, uint64_t key,
				 enum fi_datatype datatype, enum fi_op op)
{
	if (pmv_atomic_waits(ep, key))
		return -FI_EAGAIN;
	return fi_inject_atomic(core_ep(ep), buf, count, dest_addr, addr, key,
				datatype, op);
}

static ssize_t pmv_fetch_atomic(struct fid_ep *ep, const void *buf,
				size_t count, void *desc, void *result,
				void *result_desc, fi_addr_t dest_addr,
				uint64_t addr, uint64_t key,
				enum fi_datatype datatype, enum fi_op op,
				void *context)
{
	if (pmv_atomic_waits(ep, key))
		return -FI_EAGAIN;
	return fi_fetch_atomic(core_ep(ep), buf, count, desc, result,
			       result_desc, dest_addr, addr, key, datatype, op,
			       context);
}

static ssize_t pmv_fetch_atomicv(struct fid_ep *ep, const struct fi_ioc *iov,
				 void **desc, size_t count,
				 struct fi_ioc *resultv, void **result_desc,
				 size_t result_count, fi_addr_t dest_addr,
				 uint64_t addr, uint64_t key,
				 enum fi_datatype datatype, enum fi_op op,
				 void *context)
{
	if (pmv_atomic_waits(ep, key))
		return -FI_EAGAIN;
	return fi_fetch_atomicv(core_ep(ep), iov, desc, count, resultv,
				result_desc, result_count, dest_addr, addr,
				key, datatype, op, context);
}

static ssize_t pmv_fetch_atomicmsg(struct fid_ep *ep,
				   const struct fi_msg_atomic *msg,
				   struct fi_ioc *resultv, void **result_desc,
				   size_t result_count, uint64_t flags)
{
	if (pmv_atomicmsg_waits(ep, msg))
		return -FI_EAGAIN;
	return fi_fetch_atomicmsg(core_ep(ep), msg, resultv, result_desc,
				  result_count, flags);
}

static ssize_t pmv_compare_atomic(struct fid_ep *ep, const void *buf,
				  size_t count, void *desc,
				  const void *compare, void *compare_desc,
				  void *result, void *result_desc,
				  fi_addr_t dest_addr, uint64_t addr,
				  uint64_t key, enum fi_datatype datatype,
				  enum fi_op op, void *context)
{
	if (pmv_atomic_waits(ep, key))
		return -FI_EAGAIN;
	return fi_compare_atomic(core_ep(ep), buf, count, desc, compare,
				 compare_desc, result, result_desc, dest_addr,
				 addr, key, datatype, op, context);
}

static ssize_t pmv_compare_atomicv(struct fid_ep *ep,
				   const struct fi_ioc *iov, void **desc,
				   size_t count, const struct fi_ioc *comparev,
				   void **compare_desc, size_t compare_count,
				   struct fi_ioc *resultv, void **result_desc,
				   size_t result_count, fi_addr_t dest_addr,
				   uint64_t addr, uint64_t key,
				   enum fi_datatype datatype, enum fi_op op,
				   void *context)
{
	if (pmv_atomic_waits(ep, key))
		return -FI_EAGAIN;
	return fi_compare_atomicv(core_ep(ep), iov, desc, count, comparev,
				  compare_desc, compare_count, resultv,
				  result_desc, result_count, dest_addr, addr,
				  key, datatype, op, context);
}

static ssize_t pmv_compare_atomicmsg(struct fid_ep *ep,
				     const struct fi_msg_atomic *msg,
				     const struct fi_ioc *comparev,
				     void **compare_desc, size_t compare_count,
				     struct fi_ioc *resultv,
				     void **result_desc, size_t result_count,
				     uint64_t flags)
{
	if (pmv_atomicmsg_waits(ep, msg))
		return -FI_EAGAIN;
	return fi_compare_atomicmsg(core_ep(ep), msg, comparev, compare_desc,
				    compare_count, resultv, result_desc,
				    result_count, flags);
}

static int pmv_atomic_valid(struct fid_ep *ep, enum fi_datatype datatype,
			    enum fi_op op, size_t *count)
{
	return fi_atomicvalid(core_ep(ep), datatype, op, count);
}

static int pmv_fetch_atomic_valid(struct fid_ep *ep,
				  enum fi_datatype datatype, enum fi_op op,
				  size_t *count)
{
	return fi_fetch_atomicvalid(core_ep(ep), datatype, op, count);
}

static int pmv_compare_atomic_valid(struct fid_ep *ep,
				    enum fi_datatype datatype, enum fi_op op,
				    size_t *count)
{
	return fi_compare_atomicvalid(core_ep(ep), datatype, op, count);
}

struct fi_ops_atomic pmv_atomic_ops = {
	.size = sizeof(struct fi_ops_atomic),
	.write = pmv_atomic,
	.writev = pmv_atomicv,
	.writemsg = pmv_atomicmsg,
	.inject = pmv_inject_atomic,
	.readwrite = pmv_fetch_atomic,
	.readwritev = pmv_fetch_atomicv,
	.readwritemsg = pmv_fetch_atomicmsg,
	.compwrite = pmv_compare_atomic,
	.compwritev = pmv_compare_atomicv,
	.compwritemsg = pmv_compare_atomicmsg,
	.writevalid = pmv_atomic_valid,
	.readwritevalid = pmv_fetch_atomic_valid,
	.compwritevalid = pmv_compare_atomic_valid,
};

/*
 * RMA on an endpoint opened with FI_RMA_PMEM: every successful write joins
 * its key's commit scope, fi_writemsg with FI_COMMIT_COMPLETE or FI_IMMED is
 * a commit, and with FI_COMMIT_COMPLETE in the endpoint's default op_flags
 * every write is one (so is FI_DELIVERY_COMPLETE, as a flag or a default,
 * under FI_PMEMVERBS_DELIVERY_IS_COMMIT).
 */

static size_t pmv_iov_len(const struct iovec *iov, size_t count)
{
	size_t len = 0, i;

	for (i = 0; i < count; i++)
		len += iov[i].iov_len;
	return len;
}

/*
 * While a send commit is in flight, a write, read or atomic touching its
 * range waits (-FI_EAGAIN, pmv_send.c): one load when none is.
 */
static inline bool pmv_waits(struct pmv_ep *ep, uint64_t key, uint64_t addr,
			     uint64_t len)
{
	return pmv_send_conflict(ep, key, addr, len ? len : 1);
}

/* True if an operation on a remote segment of msg must wait. */
static bool pmv_msg_waits(struct pmv_ep *ep, const struct fi_msg_rma *msg)
{
	size_t i;

	for (i = 0; i < msg->rma_iov_count; i++)
		if (pmv_waits(ep, msg->rma_iov[i].key, msg->rma_iov[i].addr,
			      msg->rma_iov[i].len))
			return true;
	return false;
}

static ssize_t pmv_pmem_read(struct fid_ep *ep_fid, void *buf, size_t len,
			     void *desc, fi_addr_t src_addr, uint64_t addr,
			     uint64_t key, void *context)
{
	struct pmv_ep *ep = pmv_ep(ep_fid);

	if (pmv_waits(ep, key, addr, len))
		return -FI_EAGAIN;
	return fi_read(ep->core, buf, len, desc, src_addr, addr, key, context);
}

static ssize_t pmv_pmem_readv(struct fid_ep *ep_fid, const struct iovec *iov,
			      void **desc, size_t count, fi_addr_t src_addr,
			      uint64_t addr, uint64_t key, void *context)
{
	struct pmv_ep *ep = pmv_ep(ep_fid);

	if (pmv_waits(ep, key, addr, pmv_iov_len(iov, count)))
		return -FI_EAGAIN;
	return fi_readv(ep->core, iov, desc, count, src_addr, addr, key,
			context);
}

static ssize_t pmv_pmem_readmsg(struct fid_ep *ep_fid,
				const struct fi_msg_rma *msg, uint64_t flags)
{
	struct pmv_ep *ep = pmv_ep(ep_fid);

	if (msg && pmv_msg_waits(ep, msg))
		return -FI_EAGAIN;
	return fi_readmsg(ep->core, msg, flags);
}

/* Adds a posted write to its key's scope; passes the core's return on. */
static ssize_t pmv_track(struct pmv_ep *ep, ssize_t ret, uint64_t key,
			 uint64_t addr, uint64_t len)
{
	return ret ? ret : pmv_ini_track(ep, key, addr, len);
}

/*
 * A write issued as a commit, for endpoints whose default op_flags hold
 * FI_COMMIT_COMPLETE; an inject call's commit raises no completion.
 */
static ssize_t pmv_write_as_commit(struct pmv_ep *ep, const struct iovec *iov,
				   void **desc, size_t count, uint64_t addr,
				   uint64_t key, void *context, bool inject)
{
	struct fi_rma_iov rma = {
		.addr = addr, .len = pmv_iov_len(iov, count), .key = key,
	};
	struct fi_msg_rma msg = {
		.msg_iov = iov, .desc = desc, .iov_count = count,
		.rma_iov = &rma, .rma_iov_count = 1, .context = context,
	};

	return inject ? pmv_commit_inject(ep, &msg, ep->tx_op_flags) :
			pmv_commit_writemsg(ep, &msg, ep->tx_op_flags);
}

/*
 * Takes an endpoint's default op_flags.  With FI_PMEMVERBS_DELIVERY_IS_COMMIT,
 * FI_DELIVERY_COMPLETE on a pmem endpoint means a commit: by default, and
 * as a flag of fi_writemsg (ep->delivery_commit).
 */
void pmv_ep_set_op_flags(struct pmv_ep *ep, uint64_t op_flags)
{
	ep->delivery_commit = (ep->pmem && pmv_params.delivery_is_commit) ?
			      FI_DELIVERY_COMPLETE : 0;
	if (op_flags & ep->delivery_commit)
		op_flags |= FI_COMMIT_COMPLETE;
	ep->tx_op_flags = op_flags;
}

/*
 * fi_control(FI_SETOPSFLAG): the core gets the flags without
 * FI_COMMIT_COMPLETE (its own knows nothing of the target's persistence);
 * a transmit default the core took becomes the endpoint's, so commits by
 * default follow it.  A core that refuses the command changes nothing.
 */
int pmv_ep_setopsflag(struct pmv_ep *ep, uint64_t *flags)
{
	uint64_t core_flags = *flags & ~FI_COMMIT_COMPLETE;
	int ret;

	if ((*flags & FI_COMMIT_COMPLETE) && !ep->pmem) {
		PMV_WARN(FI_LOG_EP_CTRL, "FI_SETOPSFLAG: FI_COMMIT_COMPLETE on "
			 "an endpoint opened without FI_RMA_PMEM; add "
			 "FI_RMA_PMEM to the caps\n");
		return -FI_EOPNOTSUPP;
	}
	ret = ep->core->fid.ops->control(&ep->core->fid, FI_SETOPSFLAG,
					 &core_flags);
	if (!ret && (*flags & FI_TRANSMIT))
		pmv_ep_set_op_flags(ep, *flags & ~FI_TRANSMIT);
	return ret;
}

static bool pmv_commits_by_default(const struct pmv_ep *ep)
{
	return ep->tx_op_flags & FI_COMMIT_COMPLETE;
}

static ssize_t pmv_pmem_write(struct fid_ep *ep_fid, const void *buf,
			      size_t len, void *desc, fi_addr_t dest_addr,
			      uint64_t addr, uint64_t key, void *context)
{
	struct pmv_ep *ep = pmv_ep(ep_fid);
	struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };

	if (pmv_commits_by_default(ep))
		return pmv_write_as_commit(ep, &iov, &desc, 1, addr, key,
					   context, false);
	if (pmv_waits(ep, key, addr, len))
		return -FI_EAGAIN;
	return pmv_track(ep, fi_write(ep->core, buf, len, desc, dest_addr,
				      addr, key, context), key, addr, len);
}

static ssize_t pmv_pmem_writev(struct fid_ep *ep_fid, const struct iovec *iov,
			       void **desc, size_t count, fi_addr_t dest_addr,
			       uint64_t addr, uint64_t key, void *context)
{
	struct pmv_ep *ep = pmv_ep(ep_fid);

	if (pmv_commits_by_default(ep))
		return pmv_write_as_commit(ep, iov, desc, count, addr, key,
					   context, false);
	if (pmv_waits(ep, key, addr, pmv_iov_len(iov, count)))
		return -FI_EAGAIN;
	return pmv_track(ep, fi_writev(ep->core, iov, desc, count, dest_addr,
				       addr, key, context),
			 key, addr, pmv_iov_len(iov, count));
}

static ssize_t pmv_pmem_writemsg(struct fid_ep *ep_fid,
				 const struct fi_msg_rma *msg, uint64_t flags)
{
	struct pmv_ep *ep = pmv_ep(ep_fid);
	ssize_t ret;
	size_t i;

	if (flags & ep->delivery_commit)
		flags |= FI_COMMIT_COMPLETE;
	if (flags & (PMV_COMMIT_FLAGS | PMV_UNKNOWN_PROV_BITS))
		return pmv_commit_writemsg(ep, msg, flags);
	if (msg && pmv_msg_waits(ep, msg))
		return -FI_EAGAIN;
	ret = fi_writemsg(ep->core, msg, flags);
	for (i = 0; !ret && i < msg->rma_iov_count; i++)
		ret = pmv_track(ep, 0, msg->rma_iov[i].key,
				msg->rma_iov[i].addr, msg->rma_iov[i].len);
	return ret;
}

static ssize_t pmv_pmem_inject_write(struct fid_ep *ep_fid, const void *buf,
				     size_t len, fi_addr_t dest_addr,
				     uint64_t addr, uint64_t key)
{
	struct pmv_ep *ep = pmv_ep(ep_fid);
	struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };

	if (pmv_commits_by_default(ep))
		return pmv_write_as_commit(ep, &iov, NULL, 1, addr, key, NULL,
					   true);
	if (pmv_waits(ep, key, addr, len))
		return -FI_EAGAIN;
	return pmv_track(ep, fi_inject_write(ep->core, buf, len, dest_addr,
					     addr, key), key, addr, len);
}

static ssize_t pmv_pmem_writedata(struct fid_ep *ep_fid, const void *buf,
				  size_t len, void *desc, uint64_t data,
				  fi_addr_t dest_addr, uint64_t addr,
				  uint64_t key, void *context)
{
	struct pmv_ep *ep = pmv_ep(ep_fid);

	if (pmv_waits(ep, key, addr, len))
		return -FI_EAGAIN;
	return pmv_track(ep, fi_writedata(ep->core, buf, len, desc, data,
					  dest_addr, addr, key, context),
			 key, addr, len);
}

static ssize_t pmv_pmem_inject_writedata(struct fid_ep *ep_fid,
					 const void *buf, size_t len,
					 uint64_t data, fi_addr_t dest_addr,
					 uint64_t addr, uint64_t key)
{
	struct pmv_ep *ep = pmv_ep(ep_fid);

	if (pmv_waits(ep, key, addr, len))
		return -FI_EAGAIN;
	return pmv_track(ep, fi_inject_writedata(ep->core, buf, len, data,
						 dest_addr, addr, key),
			 key, addr, len);
}

struct fi_ops_rma pmv_rma_pmem_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = pmv_pmem_read,
	.readv = pmv_pmem_readv,
	.readmsg = pmv_pmem_readmsg,
	.write = pmv_pmem_write,
	.writev = pmv_pmem_writev,
	.writemsg = pmv_pmem_writemsg,
	.inject = pmv_pmem_inject_write,
	.writedata = pmv_pmem_writedata,
	.injectdata = pmv_pmem_inject_writedata,
};
