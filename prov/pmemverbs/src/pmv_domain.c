/*
 * pmemverbs: domain object.
 */
#include <stdlib.h>

#include "pmv.h"

static int pmv_domain_close(struct fid *fid)
{
	struct pmv_domain *dom = pmv_container_of(fid, struct pmv_domain,
						  domain_fid.fid);
	int ret = pmv_close_core(&dom->core->fid, "domain");

	if (ret)
		return ret;
	free(dom);
	return 0;
}

/* Binds the domain to an EQ (asynchronous memory registration events). */
static int pmv_domain_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct pmv_domain *dom = pmv_container_of(fid, struct pmv_domain,
						  domain_fid.fid);

	return pmv_bind_core(&dom->core->fid, bfid, flags);
}

static struct fi_ops pmv_domain_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = pmv_domain_close,
	.bind = pmv_domain_bind,
	.control = pmv_control_core,
	.ops_open = pmv_ops_open_core,
	.ops_set = pmv_no_ops_set,
};

static int pmv_query_atomic(struct fid_domain *domain, enum fi_datatype datatype,
			    enum fi_op op, struct fi_atomic_attr *attr,
			    uint64_t flags)
{
	struct pmv_domain *dom = pmv_container_of(domain, struct pmv_domain,
						  domain_fid);

	return fi_query_atomic(dom->core, datatype, op, attr, flags);
}

static int pmv_scalable_ep(struct fid_domain *domain, struct fi_info *info,
			   struct fid_ep **sep, void *context)
{
	(void) domain; (void) info; (void) sep; (void) context;
	PMV_WARN(FI_LOG_DOMAIN, "scalable endpoints are not supported; open "
		 "one endpoint per context with fi_endpoint\n");
	return -FI_ENOSYS;
}

static int pmv_stx_ctx(struct fid_domain *domain, struct fi_tx_attr *attr,
		       struct fid_stx **stx, void *context)
{
	(void) domain; (void) attr; (void) stx; (void) context;
	PMV_WARN(FI_LOG_DOMAIN, "shared transmit contexts are not supported\n");
	return -FI_ENOSYS;
}

static int pmv_query_collective(struct fid_domain *domain,
				enum fi_collective_op coll,
				struct fi_collective_attr *attr, uint64_t flags)
{
	(void) domain; (void) coll; (void) attr; (void) flags;
	return -FI_ENOSYS;
}

static int pmv_endpoint2(struct fid_domain *domain, struct fi_info *info,
			 struct fid_ep **ep, uint64_t flags, void *context)
{
	if (flags) {
		PMV_WARN(FI_LOG_DOMAIN, "fi_endpoint2: flags 0x%llx are not "
			 "supported; pass 0\n", (unsigned long long) flags);
		return -FI_EBADFLAGS;
	}
	return pmv_endpoint(domain, info, ep, context);
}

static struct fi_ops_domain pmv_domain_ops = {
	.size = sizeof(struct fi_ops_domain),
	.av_open = pmv_av_open,
	.cq_open = pmv_cq_open,
	.endpoint = pmv_endpoint,
	.scalable_ep = pmv_scalable_ep,
	.cntr_open = pmv_cntr_open,
	.poll_open = pmv_poll_open,
	.stx_ctx = pmv_stx_ctx,
	.srx_ctx = pmv_srx_context,
	.query_atomic = pmv_query_atomic,
	.query_collective = pmv_query_collective,
	.endpoint2 = pmv_endpoint2,
};

int pmv_domain_open(struct fid_fabric *fabric, struct fi_info *info,
		    struct fid_domain **domain, void *context)
{
	struct pmv_fabric *fab = pmv_container_of(fabric, struct pmv_fabric,
						  fabric_fid);
	struct fi_info *core_info = pmv_info_to_core(info);
	struct pmv_domain *dom = calloc(1, sizeof(*dom));
	int ret = -FI_ENOMEM;

	if (!dom || !core_info)
		goto err;
	ret = fi_domain(fab->core, core_info, &dom->core, dom);
	if (ret) {
		PMV_WARN(FI_LOG_DOMAIN, "opening core domain %s: %s\n",
			 core_info->domain_attr->name, fi_strerror(-ret));
		goto err;
	}
	fi_freeinfo(core_info);
	dom->fabric = fab;
	dom->domain_fid.fid.fclass = FI_CLASS_DOMAIN;
	dom->domain_fid.fid.context = context;
	dom->domain_fid.fid.ops = &pmv_domain_fi_ops;
	dom->domain_fid.ops = &pmv_domain_ops;
	dom->domain_fid.mr = &pmv_mr_ops;
	*domain = &dom->domain_fid;
	return 0;
err:
	fi_freeinfo(core_info);
	free(dom);
	return ret;
}
