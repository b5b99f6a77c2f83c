/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: the domain of FI_EP_RDM endpoints with FI_RMA_PMEM, a thin
 * wrapper of an ofi_rxm domain over pmemverbs MSG (pmv_rdm.h).  Only
 * fi_endpoint is pmemverbs's own; every other object (AV, CQ, counter,
 * memory region) is rxm's, returned as it is.
 */
#include <stdlib.h>

#include <rdma/fi_cm.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>

#include "pmv_objects.h"
#include "pmv_rdm.h"

struct pmv_rdm_domain {
	struct fid_domain domain_fid;
	struct fid_fabric *rxm_fabric; /* this domain's own */
	struct fid_domain *rxm;
};

static struct fid_domain *pmv_rdm_inner(struct fid_domain *domain)
{
	return pmv_container_of(domain, struct pmv_rdm_domain,
				domain_fid)->rxm;
}

static struct fid_domain *pmv_rdm_inner_fid(struct fid *fid)
{
	return pmv_rdm_inner(pmv_container_of(fid, struct fid_domain, fid));
}

/* True for an fi_info of pmemverbs's RDM entries (fi_domain's argument). */
bool pmv_rdm_info_is_rdm(const struct fi_info *info)
{
	return info && info->ep_attr && info->ep_attr->type == FI_EP_RDM;
}

static int pmv_rdm_domain_close(struct fid *fid)
{
	struct pmv_rdm_domain *dom = pmv_container_of(fid,
		struct pmv_rdm_domain, domain_fid.fid);
	int ret = fi_close(&dom->rxm->fid);

	if (ret) {
		PMV_WARN(FI_LOG_DOMAIN, "RDM domain: ofi_rxm refused to close "
			 "its domain: %s; close its endpoints, regions, AVs "
			 "and CQs first\n", fi_strerror(-ret));
		return ret;
	}
	ret = fi_close(&dom->rxm_fabric->fid);
	if (ret)
		PMV_WARN(FI_LOG_DOMAIN, "RDM domain: closing ofi_rxm's fabric "
			 "failed: %s\n", fi_strerror(-ret));
	free(dom);
	return 0;
}

/* rxm would take a pmemverbs EQ for one of its own: refused. */
static int pmv_rdm_domain_bind(struct fid *fid, struct fid *bfid,
			       uint64_t flags)
{
	if (pmv_fid_is_ours(bfid)) {
		PMV_WARN(FI_LOG_DOMAIN, "RDM domain: fi_domain_bind of a "
			 "pmemverbs MSG object (class %zu) is not supported\n",
			 bfid->fclass);
		return -FI_EINVAL;
	}
	return fi_domain_bind(pmv_rdm_inner_fid(fid), bfid, flags);
}

static int pmv_rdm_domain_control(struct fid *fid, int command, void *arg)
{
	return fi_control(&pmv_rdm_inner_fid(fid)->fid, command, arg);
}

static int pmv_rdm_domain_ops_open(struct fid *fid, const char *name,
				   uint64_t flags, void **ops, void *context)
{
	return fi_open_ops(&pmv_rdm_inner_fid(fid)->fid, name, flags, ops,
			   context);
}

static struct fi_ops pmv_rdm_domain_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = pmv_rdm_domain_close,
	.bind = pmv_rdm_domain_bind,
	.control = pmv_rdm_domain_control,
	.ops_open = pmv_rdm_domain_ops_open,
};

static int pmv_rdm_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
			   struct fid_av **av, void *context)
{
	return fi_av_open(pmv_rdm_inner(domain), attr, av, context);
}

static int pmv_rdm_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr,
			   struct fid_cq **cq, void *context)
{
	return fi_cq_open(pmv_rdm_inner(domain), attr, cq, context);
}

static int pmv_rdm_endpoint(struct fid_domain *domain, struct fi_info *info,
			    struct fid_ep **ep, void *context)
{
	return pmv_rdm_ep_open(pmv_rdm_inner(domain), info, ep, context);
}

static int pmv_rdm_endpoint2(struct fid_domain *domain, struct fi_info *info,
			     struct fid_ep **ep, uint64_t flags, void *context)
{
	if (flags) {
		PMV_WARN(FI_LOG_DOMAIN, "fi_endpoint2 on an RDM domain: flags "
			 "0x%llx are not supported; pass 0\n",
			 (unsigned long long) flags);
		return -FI_EBADFLAGS;
	}
	return pmv_rdm_endpoint(domain, info, ep, context);
}

static int pmv_rdm_scalable_ep(struct fid_domain *domain, struct fi_info *info,
			       struct fid_ep **sep, void *context)
{
	(void) domain; (void) info; (void) sep; (void) context;
	PMV_WARN(FI_LOG_DOMAIN, "scalable endpoints are not offered with "
		 "FI_EP_RDM and FI_RMA_PMEM; open plain endpoints\n");
	return -FI_ENOSYS;
}

static int pmv_rdm_cntr_open(struct fid_domain *domain,
			     struct fi_cntr_attr *attr, struct fid_cntr **cntr,
			     void *context)
{
	return fi_cntr_open(pmv_rdm_inner(domain), attr, cntr, context);
}

/* fi_poll_open is deprecated in libfabric 2.x: rxm's op is called direct. */
static int pmv_rdm_poll_open(struct fid_domain *domain,
			     struct fi_poll_attr *attr, struct fid_poll **poll)
{
	struct fid_domain *rxm = pmv_rdm_inner(domain);

	return rxm->ops->poll_open ? rxm->ops->poll_open(rxm, attr, poll) :
				     -FI_ENOSYS;
}

static int pmv_rdm_stx_ctx(struct fid_domain *domain, struct fi_tx_attr *attr,
			   struct fid_stx **stx, void *context)
{
	return fi_stx_context(pmv_rdm_inner(domain), attr, stx, context);
}

static int pmv_rdm_srx_ctx(struct fid_domain *domain, struct fi_rx_attr *attr,
			   struct fid_ep **rx_ep, void *context)
{
	return fi_srx_context(pmv_rdm_inner(domain), attr, rx_ep, context);
}

static int pmv_rdm_query_atomic(struct fid_domain *domain,
				enum fi_datatype datatype, enum fi_op op,
				struct fi_atomic_attr *attr, uint64_t flags)
{
	return fi_query_atomic(pmv_rdm_inner(domain), datatype, op, attr,
			       flags);
}

static int pmv_rdm_query_collective(struct fid_domain *domain,
				    enum fi_collective_op coll,
				    struct fi_collective_attr *attr,
				    uint64_t flags)
{
	return fi_query_collective(pmv_rdm_inner(domain), coll, attr, flags);
}

static struct fi_ops_domain pmv_rdm_domain_ops = {
	.size = sizeof(struct fi_ops_domain),
	.av_open = pmv_rdm_av_open,
	.cq_open = pmv_rdm_cq_open,
	.endpoint = pmv_rdm_endpoint,
	.scalable_ep = pmv_rdm_scalable_ep,
	.cntr_open = pmv_rdm_cntr_open,
	.poll_open = pmv_rdm_poll_open,
	.stx_ctx = pmv_rdm_stx_ctx,
	.srx_ctx = pmv_rdm_srx_ctx,
	.query_atomic = pmv_rdm_query_atomic,
	.query_collective = pmv_rdm_query_collective,
	.endpoint2 = pmv_rdm_endpoint2,
};

static int pmv_rdm_mr_reg(struct fid *fid, const void *buf, size_t len,
			  uint64_t access, uint64_t offset, uint64_t requested_key,
			  uint64_t flags, struct fid_mr **mr, void *context)
{
	return fi_mr_reg(pmv_rdm_inner_fid(fid), buf, len, access, offset,
			 requested_key, flags, mr, context);
}

static int pmv_rdm_mr_regv(struct fid *fid, const struct iovec *iov,
			   size_t count, uint64_t access, uint64_t offset,
			   uint64_t requested_key, uint64_t flags,
			   struct fid_mr **mr, void *context)
{
	return fi_mr_regv(pmv_rdm_inner_fid(fid), iov, count, access, offset,
			  requested_key, flags, mr, context);
}

/* FI_RMA_PMEM in flags reaches pmemverbs MSG: ofi_rxm passes them down. */
static int pmv_rdm_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr,
			      uint64_t flags, struct fid_mr **mr)
{
	return fi_mr_regattr(pmv_rdm_inner_fid(fid), attr, flags, mr);
}

static struct fi_ops_mr pmv_rdm_mr_ops = {
	.size = sizeof(struct fi_ops_mr),
	.reg = pmv_rdm_mr_reg,
	.regv = pmv_rdm_mr_regv,
	.regattr = pmv_rdm_mr_regattr,
};

/* Opens ofi_rxm's fabric and domain for a pmemverbs RDM fi_info. */
static int pmv_rdm_open_rxm(struct pmv_rdm_domain *dom, struct fi_info *info)
{
	struct fi_info *rxm_info = pmv_rdm_info_to_rxm(info);
	int ret;

	if (!rxm_info)
		return -FI_ENOMEM;
	ret = fi_fabric(rxm_info->fabric_attr, &dom->rxm_fabric, dom);
	if (ret) {
		PMV_WARN(FI_LOG_DOMAIN, "RDM domain: %s could not open fabric "
			 "%s: %s; pass an fi_info from fi_getinfo for "
			 "pmemverbs FI_EP_RDM\n", PMV_RDM_STACK,
			 rxm_info->fabric_attr->name, fi_strerror(-ret));
		goto out;
	}
	ret = fi_domain(dom->rxm_fabric, rxm_info, &dom->rxm, dom);
	if (ret) {
		PMV_WARN(FI_LOG_DOMAIN, "RDM domain: %s could not open domain "
			 "%s: %s; FI_LOG_LEVEL=warn shows ofi_rxm's reason\n",
			 PMV_RDM_STACK, rxm_info->domain_attr->name,
			 fi_strerror(-ret));
		fi_close(&dom->rxm_fabric->fid);
	}
out:
	fi_freeinfo(rxm_info);
	return ret;
}

int pmv_rdm_domain_open(struct fid_fabric *fabric, struct fi_info *info,
			struct fid_domain **domain, void *context)
{
	struct pmv_rdm_domain *dom = calloc(1, sizeof(*dom));
	int ret;

	(void) fabric; /* the wrapper opens its own rxm fabric */
	if (!dom)
		return -FI_ENOMEM;
	ret = pmv_rdm_open_rxm(dom, info);
	if (ret) {
		free(dom);
		return ret;
	}
	dom->domain_fid.fid.fclass = FI_CLASS_DOMAIN;
	dom->domain_fid.fid.context = context;
	dom->domain_fid.fid.ops = &pmv_rdm_domain_fi_ops;
	dom->domain_fid.ops = &pmv_rdm_domain_ops;
	dom->domain_fid.mr = &pmv_rdm_mr_ops;
	*domain = &dom->domain_fid;
	return 0;
}
