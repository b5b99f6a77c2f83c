/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: active endpoints, shared receive contexts, and their control
 * operations (connection management: pmv_ep_cm.c; passive endpoints:
 * pmv_pep.c).
 */
#include <stdlib.h>

#include "pmv_objects.h"

static struct fid_ep *pmv_core_ep(struct fid_ep *ep)
{
	return pmv_container_of(ep, struct pmv_ep, ep_fid)->core;
}

static bool pmv_ep_pmem_fini(struct pmv_ep *ep);

/*
 * Stops the agent and the CQ's hooks from serving or progressing ep (they
 * post on its core endpoint); true if the agent served it.
 */
static bool pmv_ep_stop_serving(struct pmv_ep *ep)
{
	bool in_agent;

	pmv_lock(&ep->domain->lock, PMV_LOCK_DOMAIN);
	in_agent = pmv_tgt_in_agent(ep);
	pmv_unlock(&ep->domain->lock, PMV_LOCK_DOMAIN);
	pmv_ep_cntr_pause(ep); /* a counter's wait serves ep through it */
	pmv_agent_remove(ep->domain, ep);
	if (ep->tx_cq)
		pmv_hooks_remove(&ep->domain->engines, &ep->hook);
	return in_agent;
}

/*
 * The core endpoint did not close, so it is still connected: its CQ's
 * hooks and the agent serve it again (pmv_agent_serve_again).
 */
static void pmv_ep_serve_again(struct pmv_ep *ep, bool in_agent)
{
	if (ep->tx_cq)
		pmv_hooks_add(&ep->domain->engines, &ep->hook);
	pmv_ep_cntr_resume(ep);
	pmv_agent_serve_again(ep, in_agent);
}

/*
 * Closes the core endpoint first, with serving stopped (it posts on the
 * core endpoint); if that fails, everything is as before the call.
 */
static int pmv_ep_close(struct fid *fid)
{
	struct pmv_ep *ep = pmv_container_of(fid, struct pmv_ep, ep_fid.fid);
	bool in_agent = ep->pmem && pmv_ep_stop_serving(ep);
	int ret = pmv_close_core(&ep->core->fid, "endpoint");

	if (ret) {
		if (ep->pmem)
			pmv_ep_serve_again(ep, in_agent);
		return ret;
	}
	if (ep->pmem) {
		pmv_gate_close(ep);
		pmv_ep_cntr_unbind(ep);
		if (ep->tx_cq)
			pmv_cq_ref_pmem(ep->tx_cq, -1);
		if (ep->rx_cq)
			pmv_cq_ref_pmem(ep->rx_cq, -1);
	}
	pmv_eq_unbind(&ep->eq);
	if (pmv_ep_pmem_fini(ep))
		pmv_domain_release(ep->domain, fid->fclass == FI_CLASS_SRX_CTX ?
				   PMV_DOM_SRX : PMV_DOM_EP);
	free(ep);
	return 0;
}

/*
 * Remembers the CQs pmemverbs raises commit and FI_IMMED entries in.  A CQ
 * of another domain is refused: reads of a CQ run its own domain's commit
 * engines, and this endpoint's would never run.
 */
static int pmv_ep_bind_cq(struct pmv_ep *ep, struct fid *bfid, uint64_t flags)
{
	struct pmv_cq *cq = pmv_container_of(bfid, struct pmv_cq, cq_fid.fid);
	int ret;

	if (cq->domain != ep->domain) {
		PMV_WARN(FI_LOG_EP_CTRL, "fi_ep_bind: the CQ was opened on "
			 "another domain than this FI_RMA_PMEM endpoint; open "
			 "it on the endpoint's domain (nothing is bound)\n");
		return -FI_EINVAL;
	}
	ret = pmv_bind_core(&ep->core->fid, bfid, flags);
	if (ret)
		return ret;
	/* The agent thread reads these: stored atomically. */
	if (flags & FI_TRANSMIT) {
		__atomic_store_n(&ep->tx_cq, cq, __ATOMIC_RELEASE);
		ep->tx_selective = flags & FI_SELECTIVE_COMPLETION;
		ep->hook.busy_for = &cq->hooks;
		pmv_hooks_add(&ep->domain->engines, &ep->hook);
		pmv_cq_ref_pmem(cq, 1);
	}
	if (flags & FI_RECV) {
		__atomic_store_n(&ep->rx_cq, cq, __ATOMIC_RELEASE);
		pmv_cq_ref_pmem(cq, 1);
	}
	/* an accepting endpoint joined its agent before its CQs were bound */
	if (ep->pmem && pmv_tgt_in_agent(ep))
		pmv_serve_attach(ep);
	return 0;
}

/* Counter events pmemverbs counts itself on a pmem endpoint (pmv_ep_cntr.c). */
#define PMV_CNTR_OWN (FI_WRITE | FI_READ | FI_REMOTE_WRITE | FI_REMOTE_READ)

/*
 * Remembers the EQ and the FI_SEND and FI_RECV counters of a pmem endpoint:
 * the application's reads of them serve its commit requests too.
 */
static int pmv_ep_bind_serving(struct pmv_ep *ep, struct fid *bfid,
			       uint64_t flags)
{
	int ret = pmv_bind_core_eq(&ep->core->fid, bfid, flags, &ep->eq);

	if (ret)
		return ret;
	if (bfid->fclass == FI_CLASS_CNTR && (flags & FI_SEND))
		ep->cntr[0] = pmv_container_of(bfid, struct pmv_cntr,
					       cntr_fid.fid);
	if (bfid->fclass == FI_CLASS_CNTR && (flags & FI_RECV))
		ep->cntr[1] = pmv_container_of(bfid, struct pmv_cntr,
					       cntr_fid.fid);
	if (pmv_tgt_in_agent(ep))
		pmv_serve_attach(ep);
	return 0;
}

static int pmv_ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct pmv_ep *ep = pmv_container_of(fid, struct pmv_ep, ep_fid.fid);
	int ret;

	if (!ep->pmem || !bfid)
		return pmv_bind_core_eq(&ep->core->fid, bfid, flags, &ep->eq);
	if (bfid->fclass == FI_CLASS_CNTR && (flags & PMV_CNTR_OWN) &&
	    pmv_core_fid(bfid)) {
		ret = pmv_ep_cntr_bind(ep, pmv_container_of(bfid,
				struct pmv_cntr, cntr_fid.fid), flags);
		if (ret || !(flags & (FI_SEND | FI_RECV)))
			return ret;
		flags &= ~PMV_CNTR_OWN; /* the core counts sends, receives */
	}
	if (!pmv_core_fid(bfid))
		return pmv_bind_core(&ep->core->fid, bfid, flags);
	if (bfid->fclass == FI_CLASS_CQ)
		return pmv_ep_bind_cq(ep, bfid, flags);
	if (bfid->fclass == FI_CLASS_EQ || bfid->fclass == FI_CLASS_CNTR)
		return pmv_ep_bind_serving(ep, bfid, flags);
	return pmv_bind_core(&ep->core->fid, bfid, flags);
}

static int pmv_ep_control(struct fid *fid, int command, void *arg)
{
	if (command == FI_ALIAS) {
		PMV_WARN(FI_LOG_EP_CTRL, "FI_ALIAS is not supported; open a "
			 "second endpoint instead\n");
		return -FI_ENOSYS;
	}
	if (command == FI_SETOPSFLAG && arg)
		return pmv_ep_setopsflag(pmv_container_of(fid, struct pmv_ep,
							  ep_fid.fid), arg);
	return pmv_control_core(fid, command, arg);
}

static struct fi_ops pmv_ep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = pmv_ep_close,
	.bind = pmv_ep_bind,
	.control = pmv_ep_control,
	.ops_open = pmv_ops_open_core,
	.ops_set = pmv_no_ops_set,
};

static ssize_t pmv_ep_cancel(fid_t fid, void *context)
{
	return fi_cancel(pmv_core_fid(fid), context);
}

static int pmv_ep_no_tx_ctx(struct fid_ep *sep, int index,
			    struct fi_tx_attr *attr, struct fid_ep **tx_ep,
			    void *context)
{
	(void) sep; (void) index; (void) attr; (void) tx_ep; (void) context;
	return -FI_ENOSYS;
}

static int pmv_ep_no_rx_ctx(struct fid_ep *sep, int index,
			    struct fi_rx_attr *attr, struct fid_ep **rx_ep,
			    void *context)
{
	(void) sep; (void) index; (void) attr; (void) rx_ep; (void) context;
	return -FI_ENOSYS;
}

/* fi_rx_size_left and fi_tx_size_left are deprecated; still forwarded. */
static ssize_t pmv_ep_rx_size_left(struct fid_ep *ep)
{
	struct fid_ep *core = pmv_core_ep(ep);

	return core->ops->rx_size_left ? core->ops->rx_size_left(core) :
					 -FI_ENOSYS;
}

static ssize_t pmv_ep_tx_size_left(struct fid_ep *ep)
{
	struct fid_ep *core = pmv_core_ep(ep);

	return core->ops->tx_size_left ? core->ops->tx_size_left(core) :
					 -FI_ENOSYS;
}

static struct fi_ops_ep pmv_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = pmv_ep_cancel,
	.getopt = pmv_ep_getopt,
	.setopt = pmv_ep_setopt,
	.tx_ctx = pmv_ep_no_tx_ctx,
	.rx_ctx = pmv_ep_no_rx_ctx,
	.rx_size_left = pmv_ep_rx_size_left,
	.tx_size_left = pmv_ep_tx_size_left,
};

/* Fills the public part of an endpoint wrapper of the given class. */
static void pmv_ep_init_fid(struct pmv_ep *ep, size_t fclass, void *context)
{
	ep->ep_fid.fid.fclass = fclass;
	ep->ep_fid.fid.context = context;
	ep->ep_fid.fid.ops = &pmv_ep_fi_ops;
	ep->ep_fid.ops = &pmv_ep_ops;
	ep->ep_fid.cm = &pmv_ep_cm_ops;
	ep->ep_fid.msg = &pmv_msg_ops;
	ep->ep_fid.rma = ep->pmem ? &pmv_rma_pmem_ops : &pmv_rma_ops;
	ep->ep_fid.tagged = &pmv_tagged_ops;
	ep->ep_fid.atomic = &pmv_atomic_ops;
	ep->ep_fid.collective = NULL;
}

/*
 * Takes the peer's CM header from the connreq, then releases the connreq.
 * If this endpoint could not serve the peer's commits, fails and keeps the
 * connreq: the application rejects it (fi_reject), and the peer learns at
 * once instead of at its commits' timeout.
 */
static int pmv_take_connreq(struct pmv_ep *ep, struct fi_info *info)
{
	struct pmv_connreq *creq;
	int ret;

	if (!info->handle || info->handle->fclass != FI_CLASS_CONNREQ)
		return 0;
	creq = pmv_container_of(info->handle, struct pmv_connreq, fid);
	if (creq->peer.known && (ret = pmv_ep_peer_connected(ep, &creq->peer))) {
		PMV_WARN(FI_LOG_EP_CTRL, "fi_endpoint: could not start the "
			 "commit agent: %s (%d), so this endpoint could not "
			 "serve its peer's commits; reject the connection "
			 "request (fi_reject), free memory or threads, and "
			 "let the peer connect again\n", fi_strerror(-ret),
			 ret);
		return ret;
	}
	fi_close(info->handle);
	info->handle = NULL;
	return 0;
}

/*
 * Commit requests must be placed after the writes they cover: the core must
 * promise write-after-write ordering on the connection.
 */
static int pmv_check_core_order(const struct fi_info *core_info)
{
	uint64_t order = core_info->tx_attr->msg_order;

	if (order & (FI_ORDER_WAW | FI_ORDER_RMA_WAW))
		return 0;
	PMV_WARN(FI_LOG_EP_CTRL, "FI_RMA_PMEM: the core does not order "
		 "writes after writes (FI_ORDER_WAW), so a commit request "
		 "could overtake the data it covers; pmemverbs refuses\n");
	return -FI_EOPNOTSUPP;
}

/* Releases what pmv_ep_pmem_init set up (after the core endpoint closed);
 * false if the inbox's registration stays open on the core domain. */
static bool pmv_ep_pmem_fini(struct pmv_ep *ep)
{
	bool closed = true;

	pmv_ini_close(ep);
	/* the endpoint is gone either way; memory the core may still write
	 * into is not freed */
	if (pmv_inbox_close(ep)) {
		PMV_WARN(FI_LOG_EP_CTRL, "the endpoint is closed, but its "
			 "commit inbox's registration did not close: its %zu "
			 "bytes stay allocated, and the domain cannot close\n",
			 ep->inbox.size);
		closed = false;
	}
	pmv_tgt_close(ep);
	pthread_mutex_destroy(&ep->lock);
	return closed;
}

/* Sets up the durability engine of an endpoint opened with FI_RMA_PMEM. */
static int pmv_ep_pmem_init(struct pmv_ep *ep, const struct fi_info *info,
			    const struct fi_info *core_info)
{
	pthread_mutex_init(&ep->lock, NULL);
	ep->pmem = info->caps & FI_RMA_PMEM;
	pmv_ep_set_op_flags(ep, info->tx_attr ? info->tx_attr->op_flags : 0);
	if (!ep->pmem && (ep->tx_op_flags & FI_COMMIT_COMPLETE)) {
		PMV_WARN(FI_LOG_EP_CTRL, "FI_COMMIT_COMPLETE in op_flags of an "
			 "endpoint opened without FI_RMA_PMEM: pmemverbs makes "
			 "commits durable only on FI_RMA_PMEM endpoints; add "
			 "FI_RMA_PMEM to the caps\n");
		return -FI_EOPNOTSUPP;
	}
	if (!ep->pmem)
		return 0;
	if (pmv_check_core_order(core_info))
		return -FI_EOPNOTSUPP;
	ep->raw_ordered = core_info->tx_attr->msg_order &
			  (FI_ORDER_RAW | FI_ORDER_RMA_RAW);
	if (!(ep->domain->caps & FI_RMA_PMEM)) {
		PMV_WARN(FI_LOG_EP_CTRL, "FI_RMA_PMEM endpoint on a domain "
			 "opened without FI_RMA_PMEM in its caps; open the "
			 "domain from an fi_info that has it\n");
		return -FI_EOPNOTSUPP;
	}
	return pmv_ini_open(ep) || pmv_tgt_open(ep) ? -FI_ENOMEM :
	       pmv_inbox_open(ep);
}

int pmv_endpoint(struct fid_domain *domain, struct fi_info *info,
		 struct fid_ep **ep_fid, void *context)
{
	struct pmv_domain *dom = pmv_container_of(domain, struct pmv_domain,
						  domain_fid);
	struct fi_info *core_info = pmv_info_to_core(info);
	struct pmv_ep *ep = calloc(1, sizeof(*ep));
	int ret = -FI_ENOMEM;

	if (!ep || !core_info)
		goto out;
	ret = fi_endpoint(dom->core, core_info, &ep->core, ep);
	if (ret) {
		PMV_WARN(FI_LOG_EP_CTRL, "the %s core could not open an "
			 "endpoint: %s (%d). Check the fi_info the endpoint "
			 "was opened with (it must come from fi_getinfo for "
			 "pmemverbs) and the core's own warning\n",
			 dom->fabric->core_name, fi_strerror(-ret), ret);
		goto out;
	}
	ep->domain = dom;
	ret = pmv_ep_pmem_init(ep, info, core_info);
	if (ret) {
		fi_close(&ep->core->fid);
		pmv_ep_pmem_fini(ep);
		goto out;
	}
	pmv_ep_init_fid(ep, FI_CLASS_EP, context);
	ret = pmv_take_connreq(ep, info);
	if (ret) {
		fi_close(&ep->core->fid);
		pmv_ep_pmem_fini(ep);
		goto out;
	}
	pmv_domain_hold(dom, PMV_DOM_EP);
	*ep_fid = &ep->ep_fid;
	ep = NULL;
out:
	fi_freeinfo(core_info);
	free(ep);
	return ret;
}

int pmv_srx_context(struct fid_domain *domain, struct fi_rx_attr *attr,
		    struct fid_ep **rx_ep, void *context)
{
	struct pmv_domain *dom = pmv_container_of(domain, struct pmv_domain,
						  domain_fid);
	struct pmv_ep *srx = calloc(1, sizeof(*srx));
	int ret;

	if (!srx)
		return -FI_ENOMEM;
	ret = fi_srx_context(dom->core, attr, &srx->core, srx);
	if (ret) {
		free(srx);
		return ret;
	}
	srx->domain = dom;
	pthread_mutex_init(&srx->lock, NULL);
	pmv_ep_init_fid(srx, FI_CLASS_SRX_CTX, context);
	pmv_domain_hold(dom, PMV_DOM_SRX);
	*rx_ep = &srx->ep_fid;
	return 0;
}
