/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: the RMA operations of an endpoint opened with FI_RMA_PMEM
 * (pmv_rma_pmem_ops), and its default op flags.  Split from pmv_ep_ops.c.
 */
#include "pmv_ep_ops.h"

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
	ssize_t ret;

	if (pmv_commits_by_default(ep))
		return pmv_write_as_commit(ep, &iov, &desc, 1, addr, key,
					   context, false);
	if (pmv_waits(ep, key, addr, len))
		return -FI_EAGAIN;
	if ((ret = pmv_ini_prepare(ep, key)))
		return ret;
	return pmv_track(ep, fi_write(ep->core, buf, len, desc, dest_addr,
				      addr, key, context), key, addr, len);
}

static ssize_t pmv_pmem_writev(struct fid_ep *ep_fid, const struct iovec *iov,
			       void **desc, size_t count, fi_addr_t dest_addr,
			       uint64_t addr, uint64_t key, void *context)
{
	struct pmv_ep *ep = pmv_ep(ep_fid);
	ssize_t ret;

	if (pmv_commits_by_default(ep))
		return pmv_write_as_commit(ep, iov, desc, count, addr, key,
					   context, false);
	if (pmv_waits(ep, key, addr, pmv_iov_len(iov, count)))
		return -FI_EAGAIN;
	if ((ret = pmv_ini_prepare(ep, key)))
		return ret;
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
	for (i = 0; i < msg->rma_iov_count; i++)
		if ((ret = pmv_ini_prepare(ep, msg->rma_iov[i].key)))
			return ret;
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
	ssize_t ret;

	if (pmv_commits_by_default(ep))
		return pmv_write_as_commit(ep, &iov, NULL, 1, addr, key, NULL,
					   true);
	if (pmv_waits(ep, key, addr, len))
		return -FI_EAGAIN;
	if ((ret = pmv_ini_prepare(ep, key)))
		return ret;
	return pmv_track(ep, fi_inject_write(ep->core, buf, len, dest_addr,
					     addr, key), key, addr, len);
}

static ssize_t pmv_pmem_writedata(struct fid_ep *ep_fid, const void *buf,
				  size_t len, void *desc, uint64_t data,
				  fi_addr_t dest_addr, uint64_t addr,
				  uint64_t key, void *context)
{
	struct pmv_ep *ep = pmv_ep(ep_fid);
	ssize_t ret;

	if (pmv_waits(ep, key, addr, len))
		return -FI_EAGAIN;
	if ((ret = pmv_ini_prepare(ep, key)))
		return ret;
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
	ssize_t ret;

	if (pmv_waits(ep, key, addr, len))
		return -FI_EAGAIN;
	if ((ret = pmv_ini_prepare(ep, key)))
		return ret;
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
