/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: messages, tagged messages and atomics of an FI_EP_RDM
 * endpoint with FI_RMA_PMEM, forwarded to its ofi_rxm endpoint unchanged.
 */
#include <rdma/fi_atomic.h>
#include <rdma/fi_tagged.h>

#include "pmv_objects.h"
#include "pmv_rdm.h"

#define IN(ep) pmv_rdm_ep_inner(ep)

static ssize_t rdm_recv(struct fid_ep *ep, void *buf, size_t len, void *desc,
			fi_addr_t src, void *ctx)
{
	return fi_recv(IN(ep), buf, len, desc, src, ctx);
}

static ssize_t rdm_recvv(struct fid_ep *ep, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t src, void *ctx)
{
	return fi_recvv(IN(ep), iov, desc, count, src, ctx);
}

static ssize_t rdm_recvmsg(struct fid_ep *ep, const struct fi_msg *msg,
			   uint64_t flags)
{
	return fi_recvmsg(IN(ep), msg, flags);
}

static ssize_t rdm_send(struct fid_ep *ep, const void *buf, size_t len,
			void *desc, fi_addr_t dest, void *ctx)
{
	return fi_send(IN(ep), buf, len, desc, dest, ctx);
}

static ssize_t rdm_sendv(struct fid_ep *ep, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t dest, void *ctx)
{
	return fi_sendv(IN(ep), iov, desc, count, dest, ctx);
}

static ssize_t rdm_sendmsg(struct fid_ep *ep, const struct fi_msg *msg,
			   uint64_t flags)
{
	return fi_sendmsg(IN(ep), msg, flags);
}

static ssize_t rdm_inject(struct fid_ep *ep, const void *buf, size_t len,
			  fi_addr_t dest)
{
	return fi_inject(IN(ep), buf, len, dest);
}

static ssize_t rdm_senddata(struct fid_ep *ep, const void *buf, size_t len,
			    void *desc, uint64_t data, fi_addr_t dest,
			    void *ctx)
{
	return fi_senddata(IN(ep), buf, len, desc, data, dest, ctx);
}

static ssize_t rdm_injectdata(struct fid_ep *ep, const void *buf, size_t len,
			      uint64_t data, fi_addr_t dest)
{
	return fi_injectdata(IN(ep), buf, len, data, dest);
}

struct fi_ops_msg pmv_rdm_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = rdm_recv,
	.recvv = rdm_recvv,
	.recvmsg = rdm_recvmsg,
	.send = rdm_send,
	.sendv = rdm_sendv,
	.sendmsg = rdm_sendmsg,
	.inject = rdm_inject,
	.senddata = rdm_senddata,
	.injectdata = rdm_injectdata,
};

static ssize_t rdm_trecv(struct fid_ep *ep, void *buf, size_t len, void *desc,
			 fi_addr_t src, uint64_t tag, uint64_t ignore,
			 void *ctx)
{
	return fi_trecv(IN(ep), buf, len, desc, src, tag, ignore, ctx);
}

static ssize_t rdm_trecvv(struct fid_ep *ep, const struct iovec *iov,
			  void **desc, size_t count, fi_addr_t src,
			  uint64_t tag, uint64_t ignore, void *ctx)
{
	return fi_trecvv(IN(ep), iov, desc, count, src, tag, ignore, ctx);
}

static ssize_t rdm_trecvmsg(struct fid_ep *ep, const struct fi_msg_tagged *msg,
			    uint64_t flags)
{
	return fi_trecvmsg(IN(ep), msg, flags);
}

static ssize_t rdm_tsend(struct fid_ep *ep, const void *buf, size_t len,
			 void *desc, fi_addr_t dest, uint64_t tag, void *ctx)
{
	return fi_tsend(IN(ep), buf, len, desc, dest, tag, ctx);
}

static ssize_t rdm_tsendv(struct fid_ep *ep, const struct iovec *iov,
			  void **desc, size_t count, fi_addr_t dest,
			  uint64_t tag, void *ctx)
{
	return fi_tsendv(IN(ep), iov, desc, count, dest, tag, ctx);
}

static ssize_t rdm_tsendmsg(struct fid_ep *ep, const struct fi_msg_tagged *msg,
			    uint64_t flags)
{
	return fi_tsendmsg(IN(ep), msg, flags);
}

static ssize_t rdm_tinject(struct fid_ep *ep, const void *buf, size_t len,
			   fi_addr_t dest, uint64_t tag)
{
	return fi_tinject(IN(ep), buf, len, dest, tag);
}

static ssize_t rdm_tsenddata(struct fid_ep *ep, const void *buf, size_t len,
			     void *desc, uint64_t data, fi_addr_t dest,
			     uint64_t tag, void *ctx)
{
	return fi_tsenddata(IN(ep), buf, len, desc, data, dest, tag, ctx);
}

static ssize_t rdm_tinjectdata(struct fid_ep *ep, const void *buf, size_t len,
			       uint64_t data, fi_addr_t dest, uint64_t tag)
{
	return fi_tinjectdata(IN(ep), buf, len, data, dest, tag);
}

struct fi_ops_tagged pmv_rdm_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = rdm_trecv,
	.recvv = rdm_trecvv,
	.recvmsg = rdm_trecvmsg,
	.send = rdm_tsend,
	.sendv = rdm_tsendv,
	.sendmsg = rdm_tsendmsg,
	.inject = rdm_tinject,
	.senddata = rdm_tsenddata,
	.injectdata = rdm_tinjectdata,
};

static ssize_t rdm_atomic(struct fid_ep *ep, const void *buf, size_t count,
			  void *desc, fi_addr_t dest, uint64_t addr,
			  uint64_t key, enum fi_datatype dt, enum fi_op op,
			  void *ctx)
{
	return fi_atomic(IN(ep), buf, count, desc, dest, addr, key, dt, op,
			 ctx);
}

static ssize_t rdm_atomicv(struct fid_ep *ep, const struct fi_ioc *iov,
			   void **desc, size_t count, fi_addr_t dest,
			   uint64_t addr, uint64_t key, enum fi_datatype dt,
			   enum fi_op op, void *ctx)
{
	return fi_atomicv(IN(ep), iov, desc, count, dest, addr, key, dt, op,
			  ctx);
}

static ssize_t rdm_atomicmsg(struct fid_ep *ep, const struct fi_msg_atomic *msg,
			     uint64_t flags)
{
	return fi_atomicmsg(IN(ep), msg, flags);
}

static ssize_t rdm_inject_atomic(struct fid_ep *ep, const void *buf,
				 size_t count, fi_addr_t dest, uint64_t addr,
				 uint64_t key, enum fi_datatype dt,
				 enum fi_op op)
{
	return fi_inject_atomic(IN(ep), buf, count, dest, addr, key, dt, op);
}

static ssize_t rdm_fetch_atomic(struct fid_ep *ep, const void *buf,
				size_t count, void *desc, void *res,
				void *res_desc, fi_addr_t dest, uint64_t addr,
				uint64_t key, enum fi_datatype dt,
				enum fi_op op, void *ctx)
{
	return fi_fetch_atomic(IN(ep), buf, count, desc, res, res_desc, dest,
			       addr, key, dt, op, ctx);
}

static ssize_t rdm_fetch_atomicv(struct fid_ep *ep, const struct fi_ioc *iov,
				 void **desc, size_t count,
				 struct fi_ioc *resv, void **res_desc,
				 size_t res_count, fi_addr_t dest,
				 uint64_t addr, uint64_t key,
				 enum fi_datatype dt, enum fi_op op, void *ctx)
{
	return fi_fetch_atomicv(IN(ep), iov, desc, count, resv, res_desc,
				res_count, dest, addr, key, dt, op, ctx);
}

static ssize_t rdm_fetch_atomicmsg(struct fid_ep *ep,
				   const struct fi_msg_atomic *msg,
				   struct fi_ioc *resv, void **res_desc,
				   size_t res_count, uint64_t flags)
{
	return fi_fetch_atomicmsg(IN(ep), msg, resv, res_desc, res_count,
				  flags);
}

static ssize_t rdm_compare_atomic(struct fid_ep *ep, const void *buf,
				  size_t count, void *desc,
				  const void *compare, void *compare_desc,
				  void *res, void *res_desc, fi_addr_t dest,
				  uint64_t addr, uint64_t key,
				  enum fi_datatype dt, enum fi_op op,
				  void *ctx)
{
	return fi_compare_atomic(IN(ep), buf, count, desc, compare,
				 compare_desc, res, res_desc, dest, addr, key,
				 dt, op, ctx);
}

static ssize_t rdm_compare_atomicv(struct fid_ep *ep, const struct fi_ioc *iov,
				   void **desc, size_t count,
				   const struct fi_ioc *comparev,
				   void **compare_desc, size_t compare_count,
				   struct fi_ioc *resv, void **res_desc,
				   size_t res_count, fi_addr_t dest,
				   uint64_t addr, uint64_t key,
				   enum fi_datatype dt, enum fi_op op,
				   void *ctx)
{
	return fi_compare_atomicv(IN(ep), iov, desc, count, comparev,
				  compare_desc, compare_count, resv, res_desc,
				  res_count, dest, addr, key, dt, op, ctx);
}

static ssize_t rdm_compare_atomicmsg(struct fid_ep *ep,
				     const struct fi_msg_atomic *msg,
				     const struct fi_ioc *comparev,
				     void **compare_desc, size_t compare_count,
				     struct fi_ioc *resv, void **res_desc,
				     size_t res_count, uint64_t flags)
{
	return fi_compare_atomicmsg(IN(ep), msg, comparev, compare_desc,
				    compare_count, resv, res_desc, res_count,
				    flags);
}

static int rdm_atomicvalid(struct fid_ep *ep, enum fi_datatype dt,
			   enum fi_op op, size_t *count)
{
	return fi_atomicvalid(IN(ep), dt, op, count);
}

static int rdm_fetch_atomicvalid(struct fid_ep *ep, enum fi_datatype dt,
				 enum fi_op op, size_t *count)
{
	return fi_fetch_atomicvalid(IN(ep), dt, op, count);
}

static int rdm_compare_atomicvalid(struct fid_ep *ep, enum fi_datatype dt,
				   enum fi_op op, size_t *count)
{
	return fi_compare_atomicvalid(IN(ep), dt, op, count);
}

struct fi_ops_atomic pmv_rdm_atomic_ops = {
	.size = sizeof(struct fi_ops_atomic),
	.write = rdm_atomic,
	.writev = rdm_atomicv,
	.writemsg = rdm_atomicmsg,
	.inject = rdm_inject_atomic,
	.readwrite = rdm_fetch_atomic,
	.readwritev = rdm_fetch_atomicv,
	.readwritemsg = rdm_fetch_atomicmsg,
	.compwrite = rdm_compare_atomic,
	.compwritev = rdm_compare_atomicv,
	.compwritemsg = rdm_compare_atomicmsg,
	.writevalid = rdm_atomicvalid,
	.readwritevalid = rdm_fetch_atomicvalid,
	.compwritevalid = rdm_compare_atomicvalid,
};
