/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: atomic operations of an endpoint, forwarded to the core
 * endpoint in one call after one check (below).  Split from pmv_ep_ops.c.
 */
#include "pmv_ep_ops.h"

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
