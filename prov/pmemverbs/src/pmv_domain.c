/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: domain object.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_ext_pmem.h>

#include "pmv_objects.h"
#include "pmv_rdm.h"

/* Says in buf what is open on dom ("2 endpoints, 1 memory regions");
 * false if nothing is. */
static bool pmv_domain_busy(struct pmv_domain *dom, char *buf, size_t len)
{
	static const char *const names[PMV_DOM_OBJS] = {
		"endpoints", "shared receive contexts", "completion queues",
		"counters", "address vectors", "memory regions", "poll sets" };
	size_t at = 0;
	int n;

	for (int kind = 0; kind < PMV_DOM_OBJS; kind++) {
		n = __atomic_load_n(&dom->open_objs[kind], __ATOMIC_ACQUIRE);
		if (n && at < len)
			at += (size_t) snprintf(buf + at, len - at, "%s%d %s",
						at ? ", " : "", n, names[kind]);
	}
	return at;
}

/* Refused (-FI_EBUSY) while objects opened on it are open, before the
 * core's close is called (pmv_domain_hold says why). */
static int pmv_domain_close(struct fid *fid)
{
	struct pmv_domain *dom = pmv_container_of(fid, struct pmv_domain,
						  domain_fid.fid);
	char open[200];
	int ret;

	if (pmv_domain_busy(dom, open, sizeof(open))) {
		PMV_WARN(FI_LOG_DOMAIN, "fi_close: the domain still has %s "
			 "open; close them first, then the domain (it is left "
			 "as it was)\n", open);
		return -FI_EBUSY;
	}
	/* the core may still refuse (an endpoint's inbox registration that
	 * did not close): then the agent must keep serving */
	ret = pmv_close_core(&dom->core->fid, "domain");
	if (ret)
		return ret;
	pmv_eq_unbind(&dom->eq);
	pmv_agent_stop(dom);
	pmv_mr_index_fini(dom);
	pthread_mutex_destroy(&dom->lock);
	pthread_mutex_destroy(&dom->push_lock);
	pmv_wakes_fini(&dom->wakes);
	pmv_hooks_fini(&dom->engines);
	pmv_hooks_fini(&dom->served);
	free(dom);
	return 0;
}

/* Binds the domain to an EQ (asynchronous memory registration events). */
static int pmv_domain_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct pmv_domain *dom = pmv_container_of(fid, struct pmv_domain,
						  domain_fid.fid);

	return pmv_bind_core_eq(&dom->core->fid, bfid, flags, &dom->eq);
}

static const char *pmv_domain_core_prov(struct fid_domain *domain)
{
	struct pmv_domain *dom = pmv_container_of(domain, struct pmv_domain,
						  domain_fid);

	return dom->fabric->core_name;
}

static enum fi_pmem_profile pmv_ext_mr_profile(struct fid_mr *mr_fid)
{
	struct pmv_mr *mr = pmv_container_of(mr_fid, struct pmv_mr, mr_fid);

	return pmv_core_fid(&mr_fid->fid) ? mr->persistence.profile :
					    FI_PMEM_PROFILE_UNKNOWN;
}

/* The endpoint behind an application fid, or NULL if it is not ours. */
static struct pmv_ep *pmv_ext_ep(struct fid_ep *ep_fid)
{
	if (!ep_fid || ep_fid->fid.fclass != FI_CLASS_EP ||
	    !pmv_core_fid(&ep_fid->fid))
		return NULL;
	return pmv_container_of(ep_fid, struct pmv_ep, ep_fid);
}

static enum fi_pmem_profile pmv_ext_peer_profile(struct fid_ep *ep_fid,
						 uint64_t key)
{
	struct pmv_ep *ep = pmv_ext_ep(ep_fid);

	return ep ? pmv_ini_peer_profile(ep, key) : FI_PMEM_PROFILE_UNKNOWN;
}

static enum fi_pmem_method pmv_ext_method(struct fid_ep *ep_fid, uint64_t key)
{
	struct pmv_ep *ep = pmv_ext_ep(ep_fid);

	return ep ? pmv_ini_method(ep, key) : FI_PMEM_METHOD_NONE;
}

static size_t pmv_ext_atomicity_chunk(struct fid_domain *domain)
{
	(void) domain;
	return PMV_ATOMICITY_CHUNK;
}

static int pmv_ext_ep_counters(struct fid_ep *ep_fid,
			       struct fi_pmem_ep_counters *out)
{
	struct pmv_ep *ep = pmv_ext_ep(ep_fid);

	if (!ep || !out)
		return -FI_EINVAL;
	pmv_ini_counters(ep, out);
	return 0;
}

static struct fi_pmem_ops_domain pmv_pmem_domain_ops = {
	.size = sizeof(struct fi_pmem_ops_domain),
	.core_prov = pmv_domain_core_prov,
	.mr_profile = pmv_ext_mr_profile,
	.peer_profile = pmv_ext_peer_profile,
	.method = pmv_ext_method,
	.atomicity_chunk = pmv_ext_atomicity_chunk,
	.ep_counters = pmv_ext_ep_counters,
	.mr_reg_pmem2 = pmv_mr_reg_pmem2,
};

/* fi_open_ops: pmemverbs's own extension, or the core domain's. */
static int pmv_domain_ops_open(struct fid *fid, const char *name,
			       uint64_t flags, void **ops, void *context)
{
	if (!strcmp(name, FI_PMEM_DOMAIN_OPS)) {
		*ops = &pmv_pmem_domain_ops;
		return 0;
	}
	return pmv_ops_open_core(fid, name, flags, ops, context);
}

static struct fi_ops pmv_domain_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = pmv_domain_close,
	.bind = pmv_domain_bind,
	.control = pmv_control_core,
	.ops_open = pmv_domain_ops_open,
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

/* Completion meaning of the core's transport (see fi_pmemverbs(7)). */
static uint8_t pmv_transport_of(const char *core_name,
				const struct fi_info *info)
{
	if (strcasecmp(core_name, "verbs"))
		return PMV_TRANSPORT_TCP;
	return info->ep_attr->protocol == FI_PROTO_IWARP ?
	       PMV_TRANSPORT_IWARP : PMV_TRANSPORT_IB;
}

/* Records what the durability engine needs to know about the core domain. */
static void pmv_domain_init_pmem(struct pmv_domain *dom,
				 const struct fi_info *info,
				 const struct fi_info *core_info)
{
	pthread_mutex_init(&dom->lock, NULL);
	pthread_mutex_init(&dom->push_lock, NULL);
	pmv_wakes_init(&dom->wakes);
	pmv_hooks_init(&dom->engines, NULL);
	pmv_hooks_init(&dom->served, NULL);
	dom->mr_mode = core_info->domain_attr->mr_mode;
	dom->caps = info->caps | (info->domain_attr ? info->domain_attr->caps : 0);
	dom->inject_size = core_info->tx_attr->inject_size;
	dom->iov_limit = core_info->tx_attr->iov_limit;
	dom->rma_iov_limit = core_info->tx_attr->rma_iov_limit;
	dom->transport = pmv_transport_of(dom->fabric->core_name, core_info);
}

int pmv_domain_open(struct fid_fabric *fabric, struct fi_info *info,
		    struct fid_domain **domain, void *context)
{
	struct pmv_fabric *fab = pmv_container_of(fabric, struct pmv_fabric,
						  fabric_fid);
	struct fi_info *core_info;
	struct pmv_domain *dom;
	int ret = -FI_ENOMEM;

	if (pmv_rdm_info_is_rdm(info))
		return pmv_rdm_domain_open(fabric, info, domain, context);
	core_info = pmv_info_to_core(info);
	dom = calloc(1, sizeof(*dom));
	if (!dom || !core_info)
		goto err;
	ret = fi_domain(fab->core, core_info, &dom->core, dom);
	if (ret) {
		PMV_WARN(FI_LOG_DOMAIN, "the %s core could not open domain "
			 "%s: %s (%d). Check that `fi_info -p %s` lists it "
			 "(FI_LOG_LEVEL=warn shows the core's own reason), or "
			 "choose the core with FI_PMEMVERBS_CORE_PROV\n",
			 fab->core_name, core_info->domain_attr->name,
			 fi_strerror(-ret), ret, fab->core_name);
		goto err;
	}
	dom->fabric = fab;
	dom->agent_wake_fd = -1; /* no agent yet */
	pmv_domain_init_pmem(dom, info, core_info);
	fi_freeinfo(core_info);
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
