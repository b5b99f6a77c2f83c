/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: data-path operations of an endpoint, messages and RMA.
 *
 * Those with nothing to do with persistence forward to the core endpoint in
 * one call: no lock, no allocation, no logging.  Atomics are in
 * pmv_ep_atomic.c; endpoints opened with FI_RMA_PMEM have their own RMA
 * table (pmv_ep_pmem.c).
 * Memory descriptors and fi_addr_t values need no translation (a pmemverbs
 * MR's desc is the core MR's desc), and contexts pass through untouched, so
 * completions carry the application's own contexts.
 */
#include "pmv_ep_ops.h"

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
