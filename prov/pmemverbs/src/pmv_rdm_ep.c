/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: FI_EP_RDM endpoints with FI_RMA_PMEM, thin wrappers of
 * ofi_rxm endpoints over pmemverbs MSG (pmv_rdm.h).  Everything is
 * forwarded, except two rules of the commits:
 * - a commit never takes ofi_rxm's inject path, where it would become a
 *   plain fi_inject_write on the MSG endpoint (its flags lost):
 *   FI_COMMIT_COMPLETE with FI_INJECT is refused with -FI_EINVAL;
 * - FI_COMMIT_COMPLETE in the application's tx op_flags (which ofi_rxm does
 *   not know) makes fi_write, fi_writev and fi_writedata commits.
 */
#include <stdlib.h>

#include <rdma/fi_cm.h>
#include <rdma/fi_rma.h>

#include "pmv_objects.h"
#include "pmv_rdm.h"

#define IN(ep) pmv_rdm_ep_inner(ep)

static struct pmv_rdm_ep *pmv_rdm_ep_of(struct fid *fid)
{
	return pmv_container_of(fid, struct pmv_rdm_ep, ep_fid.fid);
}

static int pmv_rdm_ep_close(struct fid *fid)
{
	struct pmv_rdm_ep *ep = pmv_rdm_ep_of(fid);
	int ret = fi_close(&ep->rxm->fid);

	if (ret) {
		PMV_WARN(FI_LOG_EP_CTRL, "RDM endpoint: ofi_rxm refused to "
			 "close it: %s\n", fi_strerror(-ret));
		return ret;
	}
	free(ep);
	return 0;
}

/*
 * Binds rxm's own objects (from the RDM domain); a pmemverbs MSG object,
 * an EQ of the pmemverbs fabric for instance, would be taken by rxm for
 * one of its own.
 */
static int pmv_rdm_ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	if (pmv_fid_is_ours(bfid)) {
		PMV_WARN(FI_LOG_EP_CTRL, "RDM endpoint: fi_ep_bind of a "
			 "pmemverbs MSG object (class %zu); bind the AV, CQs "
			 "and counters opened on the RDM endpoint's domain\n",
			 bfid->fclass);
		return -FI_EINVAL;
	}
	return fi_ep_bind(pmv_rdm_ep_of(fid)->rxm, bfid, flags);
}

/* FI_SETOPSFLAG on the transmit side updates the commit default too. */
static int pmv_rdm_ep_control(struct fid *fid, int command, void *arg)
{
	struct pmv_rdm_ep *ep = pmv_rdm_ep_of(fid);
	uint64_t *flags = arg;
	uint64_t keep;
	int ret;

	if (command != FI_SETOPSFLAG || !(*flags & FI_TRANSMIT))
		return fi_control(&ep->rxm->fid, command, arg);
	keep = *flags;
	*flags &= ~FI_COMMIT_COMPLETE;
	ret = fi_control(&ep->rxm->fid, command, arg);
	*flags = keep;
	if (!ret)
		ep->tx_op_flags = keep & ~(FI_TRANSMIT | FI_RECV);
	return ret;
}

static int pmv_rdm_ep_ops_open(struct fid *fid, const char *name,
			       uint64_t flags, void **ops, void *context)
{
	return fi_open_ops(&pmv_rdm_ep_of(fid)->rxm->fid, name, flags, ops,
			   context);
}

static struct fi_ops pmv_rdm_ep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = pmv_rdm_ep_close,
	.bind = pmv_rdm_ep_bind,
	.control = pmv_rdm_ep_control,
	.ops_open = pmv_rdm_ep_ops_open,
};

static ssize_t rdm_cancel(fid_t fid, void *context)
{
	return fi_cancel(&pmv_rdm_ep_of(fid)->rxm->fid, context);
}

static int rdm_getopt(fid_t fid, int level, int name, void *val, size_t *len)
{
	return fi_getopt(&pmv_rdm_ep_of(fid)->rxm->fid, level, name, val, len);
}

static int rdm_setopt(fid_t fid, int level, int name, const void *val,
		      size_t len)
{
	return fi_setopt(&pmv_rdm_ep_of(fid)->rxm->fid, level, name, val, len);
}

static int rdm_tx_ctx(struct fid_ep *sep, int index, struct fi_tx_attr *attr,
		      struct fid_ep **tx_ep, void *context)
{
	return fi_tx_context(IN(sep), index, attr, tx_ep, context);
}

static int rdm_rx_ctx(struct fid_ep *sep, int index, struct fi_rx_attr *attr,
		      struct fid_ep **rx_ep, void *context)
{
	return fi_rx_context(IN(sep), index, attr, rx_ep, context);
}

/* fi_rx_size_left and fi_tx_size_left are deprecated; still forwarded. */
static ssize_t rdm_rx_size_left(struct fid_ep *ep)
{
	struct fid_ep *rxm = IN(ep);

	return rxm->ops->rx_size_left ? rxm->ops->rx_size_left(rxm) :
					-FI_ENOSYS;
}

static ssize_t rdm_tx_size_left(struct fid_ep *ep)
{
	struct fid_ep *rxm = IN(ep);

	return rxm->ops->tx_size_left ? rxm->ops->tx_size_left(rxm) :
					-FI_ENOSYS;
}

static struct fi_ops_ep pmv_rdm_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = rdm_cancel,
	.getopt = rdm_getopt,
	.setopt = rdm_setopt,
	.tx_ctx = rdm_tx_ctx,
	.rx_ctx = rdm_rx_ctx,
	.rx_size_left = rdm_rx_size_left,
	.tx_size_left = rdm_tx_size_left,
};

static int rdm_setname(fid_t fid, void *addr, size_t len)
{
	return fi_setname(&pmv_rdm_ep_of(fid)->rxm->fid, addr, len);
}

static int rdm_getname(fid_t fid, void *addr, size_t *len)
{
	return fi_getname(&pmv_rdm_ep_of(fid)->rxm->fid, addr, len);
}

static int rdm_getpeer(struct fid_ep *ep, void *addr, size_t *len)
{
	return fi_getpeer(IN(ep), addr, len);
}

static int rdm_connect(struct fid_ep *ep, const void *addr,
		       const void *param, size_t len)
{
	return fi_connect(IN(ep), addr, param, len);
}

static int rdm_listen(struct fid_pep *pep)
{
	(void) pep;
	return -FI_ENOSYS; /* an RDM endpoint is never a passive one */
}

static int rdm_accept(struct fid_ep *ep, const void *param, size_t len)
{
	return fi_accept(IN(ep), param, len);
}

static int rdm_reject(struct fid_pep *pep, fid_t handle, const void *param,
		      size_t len)
{
	(void) pep; (void) handle; (void) param; (void) len;
	return -FI_ENOSYS;
}

static int rdm_shutdown(struct fid_ep *ep, uint64_t flags)
{
	return fi_shutdown(IN(ep), flags);
}

static int rdm_join(struct fid_ep *ep, const void *addr, uint64_t flags,
		    struct fid_mc **mc, void *context)
{
	return fi_join(IN(ep), addr, flags, mc, context);
}

static struct fi_ops_cm pmv_rdm_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = rdm_setname,
	.getname = rdm_getname,
	.getpeer = rdm_getpeer,
	.connect = rdm_connect,
	.listen = rdm_listen,
	.accept = rdm_accept,
	.reject = rdm_reject,
	.shutdown = rdm_shutdown,
	.join = rdm_join,
};

static ssize_t rdm_read(struct fid_ep *ep, void *buf, size_t len, void *desc,
			fi_addr_t src, uint64_t addr, uint64_t key, void *ctx)
{
	return fi_read(IN(ep), buf, len, desc, src, addr, key, ctx);
}

static ssize_t rdm_readv(struct fid_ep *ep, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t src,
			 uint64_t addr, uint64_t key, void *ctx)
{
	return fi_readv(IN(ep), iov, desc, count, src, addr, key, ctx);
}

static ssize_t rdm_readmsg(struct fid_ep *ep, const struct fi_msg_rma *msg,
			   uint64_t flags)
{
	return fi_readmsg(IN(ep), msg, flags);
}

/*
 * fi_writemsg: a commit with FI_INJECT would go down ofi_rxm's inject path
 * (fi_inject_write on the MSG endpoint when no completion is asked for),
 * where FI_COMMIT_COMPLETE, FI_FENCE and FI_IMMED are lost.
 */
static ssize_t rdm_writemsg(struct fid_ep *ep, const struct fi_msg_rma *msg,
			    uint64_t flags)
{
	if ((flags & FI_COMMIT_COMPLETE) && (flags & FI_INJECT)) {
		PMV_WARN(FI_LOG_EP_DATA, "fi_writemsg on an RDM endpoint: "
			 "FI_COMMIT_COMPLETE with FI_INJECT is refused "
			 "(ofi_rxm's inject path drops the commit); pass the "
			 "commit without FI_INJECT\n");
		return -FI_EINVAL;
	}
	return fi_writemsg(IN(ep), msg, flags);
}

/* A write with the application's op_flags: a commit if they ask one. */
static ssize_t rdm_write_op(struct fid_ep *ep, const struct iovec *iov,
			    void **desc, size_t count, fi_addr_t dest,
			    uint64_t addr, uint64_t key, void *ctx,
			    uint64_t data, uint64_t flags)
{
	struct fi_rma_iov rma = { .addr = addr, .key = key };
	struct fi_msg_rma msg = {
		.msg_iov = iov, .desc = desc, .iov_count = count,
		.addr = dest, .rma_iov = &rma, .rma_iov_count = 1,
		.context = ctx, .data = data,
	};

	for (size_t i = 0; i < count; i++)
		rma.len += iov[i].iov_len;
	return rdm_writemsg(ep, &msg, flags |
			    ((struct pmv_rdm_ep *) ep)->tx_op_flags);
}

static bool rdm_commit_default(struct fid_ep *ep)
{
	return ((struct pmv_rdm_ep *) ep)->tx_op_flags & FI_COMMIT_COMPLETE;
}

static ssize_t rdm_write(struct fid_ep *ep, const void *buf, size_t len,
			 void *desc, fi_addr_t dest, uint64_t addr,
			 uint64_t key, void *ctx)
{
	struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };

	if (rdm_commit_default(ep))
		return rdm_write_op(ep, &iov, &desc, 1, dest, addr, key, ctx,
				    0, 0);
	return fi_write(IN(ep), buf, len, desc, dest, addr, key, ctx);
}

static ssize_t rdm_writev(struct fid_ep *ep, const struct iovec *iov,
			  void **desc, size_t count, fi_addr_t dest,
			  uint64_t addr, uint64_t key, void *ctx)
{
	if (rdm_commit_default(ep))
		return rdm_write_op(ep, iov, desc, count, dest, addr, key, ctx,
				    0, 0);
	return fi_writev(IN(ep), iov, desc, count, dest, addr, key, ctx);
}

static ssize_t rdm_writedata(struct fid_ep *ep, const void *buf, size_t len,
			     void *desc, uint64_t data, fi_addr_t dest,
			     uint64_t addr, uint64_t key, void *ctx)
{
	struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };

	if (rdm_commit_default(ep))
		return rdm_write_op(ep, &iov, &desc, 1, dest, addr, key, ctx,
				    data, FI_REMOTE_CQ_DATA);
	return fi_writedata(IN(ep), buf, len, desc, data, dest, addr, key,
			    ctx);
}

/* fi_inject_write cannot ask a commit; a later commit covers it. */
static ssize_t rdm_inject_write(struct fid_ep *ep, const void *buf,
				size_t len, fi_addr_t dest, uint64_t addr,
				uint64_t key)
{
	return fi_inject_write(IN(ep), buf, len, dest, addr, key);
}

static ssize_t rdm_inject_writedata(struct fid_ep *ep, const void *buf,
				    size_t len, uint64_t data,
				    fi_addr_t dest, uint64_t addr,
				    uint64_t key)
{
	return fi_inject_writedata(IN(ep), buf, len, data, dest, addr, key);
}

static struct fi_ops_rma pmv_rdm_rma_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = rdm_read,
	.readv = rdm_readv,
	.readmsg = rdm_readmsg,
	.write = rdm_write,
	.writev = rdm_writev,
	.writemsg = rdm_writemsg,
	.inject = rdm_inject_write,
	.writedata = rdm_writedata,
	.injectdata = rdm_inject_writedata,
};

int pmv_rdm_ep_open(struct fid_domain *rxm_domain, struct fi_info *info,
		    struct fid_ep **ep_fid, void *context)
{
	struct fi_info *rxm_info = pmv_rdm_info_to_rxm(info);
	struct pmv_rdm_ep *ep = calloc(1, sizeof(*ep));
	int ret = -FI_ENOMEM;

	if (!ep || !rxm_info)
		goto out;
	ret = fi_endpoint(rxm_domain, rxm_info, &ep->rxm, context);
	if (ret) {
		PMV_WARN(FI_LOG_EP_CTRL, "RDM endpoint: %s could not open it: "
			 "%s; FI_LOG_LEVEL=warn shows ofi_rxm's reason\n",
			 PMV_RDM_STACK, fi_strerror(-ret));
		goto out;
	}
	ep->tx_op_flags = info->tx_attr ? info->tx_attr->op_flags : 0;
	ep->ep_fid.fid.fclass = FI_CLASS_EP;
	ep->ep_fid.fid.context = context;
	ep->ep_fid.fid.ops = &pmv_rdm_ep_fi_ops;
	ep->ep_fid.ops = &pmv_rdm_ep_ops;
	ep->ep_fid.cm = &pmv_rdm_cm_ops;
	ep->ep_fid.msg = &pmv_rdm_msg_ops;
	ep->ep_fid.rma = &pmv_rdm_rma_ops;
	ep->ep_fid.tagged = &pmv_rdm_tagged_ops;
	ep->ep_fid.atomic = &pmv_rdm_atomic_ops;
	*ep_fid = &ep->ep_fid;
	ep = NULL;
out:
	fi_freeinfo(rxm_info);
	free(ep);
	return ret;
}
