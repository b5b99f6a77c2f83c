/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: mapping between the application's pmemverbs fids and the core
 * provider's fids, and the small generic fid operations every object shares
 * (and pmv_info_complete, which pmv_info.c and pmv_rdm_info.c share, and
 * the counts of objects open on a domain).
 */
#include <stdlib.h>

#include "pmv_objects.h"
#include "pmv_rdm.h"

/* True for a fid pmemverbs opened (every pmemverbs fi_ops has this ops_set). */
bool pmv_fid_is_ours(const struct fid *fid)
{
	return fid && fid->ops && fid->ops->ops_set == pmv_no_ops_set;
}

/* Returns the core object a pmemverbs fid wraps, or NULL if not ours. */
struct fid *pmv_core_fid(struct fid *fid)
{
	if (!pmv_fid_is_ours(fid))
		return NULL;

	switch (fid->fclass) {
	case FI_CLASS_FABRIC:
		return &pmv_container_of(fid, struct pmv_fabric, fabric_fid.fid)->core->fid;
	case FI_CLASS_DOMAIN:
		return &pmv_container_of(fid, struct pmv_domain, domain_fid.fid)->core->fid;
	case FI_CLASS_EP:
	case FI_CLASS_SRX_CTX:
		return &pmv_container_of(fid, struct pmv_ep, ep_fid.fid)->core->fid;
	case FI_CLASS_PEP:
		return &pmv_container_of(fid, struct pmv_pep, pep_fid.fid)->core->fid;
	case FI_CLASS_CQ:
		return &pmv_container_of(fid, struct pmv_cq, cq_fid.fid)->core->fid;
	case FI_CLASS_EQ:
		return &pmv_container_of(fid, struct pmv_eq, eq_fid.fid)->core->fid;
	case FI_CLASS_CNTR:
		return &pmv_container_of(fid, struct pmv_cntr, cntr_fid.fid)->core->fid;
	case FI_CLASS_AV:
		return &pmv_container_of(fid, struct pmv_av, av_fid.fid)->core->fid;
	case FI_CLASS_MR:
		return &pmv_container_of(fid, struct pmv_mr, mr_fid.fid)->core->fid;
	case FI_CLASS_WAIT:
		return &pmv_container_of(fid, struct pmv_wait, wait_fid.fid)->core->fid;
	case FI_CLASS_POLL:
		return &pmv_container_of(fid, struct pmv_poll, poll_fid.fid)->core->fid;
	case FI_CLASS_CONNREQ:
		return pmv_container_of(fid, struct pmv_connreq, fid)->core_info->handle;
	default:
		return NULL;
	}
}

/* Maps a core fid seen in an event back to the pmemverbs fid wrapping it. */
struct fid *pmv_app_fid(struct fid *core_fid)
{
	return core_fid ? core_fid->context : NULL;
}

/* Binds the core object of a wrapper to the core object behind bfid. */
int pmv_bind_core(struct fid *core, struct fid *bfid, uint64_t flags)
{
	struct fid *core_bfid = pmv_core_fid(bfid);

	if (!core_bfid) {
		PMV_WARN(FI_LOG_CORE, "fi_bind: object (class %zu) was not "
			 "opened through pmemverbs; open it on the pmemverbs "
			 "fabric or domain\n", bfid ? bfid->fclass : 0);
		return -FI_EINVAL;
	}
	return core->ops->bind(core, core_bfid, flags);
}

/*
 * pmv_bind_core, noting an EQ it bound in *eq (one per object): until the
 * object closes (pmv_eq_unbind), fi_close of that EQ says -FI_EBUSY
 * without calling the core's close.  libfabric 2.1's tcp EQ tears itself
 * down before its own busy check, so closing it again once its objects
 * were closed freed it twice (the process aborted).
 */
int pmv_bind_core_eq(struct fid *core, struct fid *bfid, uint64_t flags,
		     struct pmv_eq **eq)
{
	int ret = pmv_bind_core(core, bfid, flags);

	/* ret is an error for a NULL bfid (pmv_core_fid) */
	if (!ret && bfid->fclass == FI_CLASS_EQ && !*eq) {
		*eq = pmv_container_of(bfid, struct pmv_eq, eq_fid.fid);
		__atomic_add_fetch(&(*eq)->binds, 1, __ATOMIC_ACQ_REL);
	}
	return ret;
}

/* The object that bound *eq closed (its core object did): the EQ may. */
void pmv_eq_unbind(struct pmv_eq **eq)
{
	if (*eq)
		__atomic_sub_fetch(&(*eq)->binds, 1, __ATOMIC_ACQ_REL);
	*eq = NULL;
}

/* pmv_close_wrapper for a wrapper that may have bound eq (its own field,
 * read before the wrapper is freed): the EQ may close once it closed. */
int pmv_close_wrapper_eq(struct fid *core_fid, const char *what,
			 void *wrapper, struct pmv_eq *eq)
{
	int ret = pmv_close_wrapper(core_fid, what, wrapper);

	if (!ret)
		pmv_eq_unbind(&eq);
	return ret;
}

/*
 * Closes a core object, logging which wrapper it belonged to on failure
 * (a failed close leaves the core object open, fault point included).
 */
int pmv_close_core(struct fid *core_fid, const char *what)
{
	int ret = pmv_fault(PMV_FAULT_CLOSE) ? -FI_EBUSY : fi_close(core_fid);

	if (ret)
		PMV_WARN(FI_LOG_CORE, "closing the core %s failed: %s (%d); "
			 "close what was opened on it or bound to it first, "
			 "then close it again\n", what, fi_strerror(-ret), ret);
	return ret;
}

/* Closes a wrapper that owns nothing but its core object. */
int pmv_close_wrapper(struct fid *core_fid, const char *what, void *wrapper)
{
	int ret = pmv_close_core(core_fid, what);

	if (!ret)
		free(wrapper);
	return ret;
}

/* Forwards fi_control on a wrapper to its core object. */
int pmv_control_core(struct fid *fid, int command, void *arg)
{
	struct fid *core = pmv_core_fid(fid);

	return core->ops->control(core, command, arg);
}

/*
 * fi_open_ops on a wrapper: the core's extension operations are not passed
 * through.  Their functions take fids and would be handed pmemverbs's
 * wrappers where they expect their own objects: ofi_rxm's
 * OFI_OPS_FLOW_CTRL, forwarded to the verbs core, had verbs write its
 * credit handler into a pmemverbs domain as if it were a verbs domain,
 * corrupting the heap.  Without the ops, ofi_rxm works as over tcp.
 */
int pmv_ops_open_core(struct fid *fid, const char *name, uint64_t flags,
		      void **ops, void *context)
{
	(void) fid; (void) flags; (void) ops; (void) context;
	PMV_INFO(FI_LOG_CORE, "fi_open_ops(\"%s\"): the core's extension "
		 "operations are not available through pmemverbs\n",
		 name ? name : "(null)");
	return -FI_ENOSYS;
}

int pmv_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	(void) fid; (void) bfid; (void) flags;
	return -FI_ENOSYS;
}

/*
 * fi_set_ops is refused on every pmemverbs object: a peer provider that
 * installed callbacks in the core (ofi_rxm's dynamic receive buffers) would
 * see core fids where it expects ours.  This function also marks a fid as
 * ours (see pmv_core_fid).
 */
int pmv_no_ops_set(struct fid *fid, const char *name, uint64_t flags,
		   void *ops, void *context)
{
	(void) fid; (void) name; (void) flags; (void) ops; (void) context;
	return -FI_ENOSYS;
}

static int pmv_connreq_close(struct fid *fid)
{
	struct pmv_connreq *creq = pmv_container_of(fid, struct pmv_connreq, fid);

	fi_freeinfo(creq->core_info);
	free(creq);
	return 0;
}

struct fi_ops pmv_connreq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = pmv_connreq_close,
	.bind = pmv_no_bind,
	.control = NULL,
	.ops_open = NULL,
	.ops_set = pmv_no_ops_set,
};

/* Gives a partial fi_info (hints may omit attributes) every attribute. */
bool pmv_info_complete(struct fi_info *info)
{
	if (!info->fabric_attr)
		info->fabric_attr = calloc(1, sizeof(*info->fabric_attr));
	if (!info->domain_attr)
		info->domain_attr = calloc(1, sizeof(*info->domain_attr));
	if (!info->ep_attr)
		info->ep_attr = calloc(1, sizeof(*info->ep_attr));
	if (!info->tx_attr)
		info->tx_attr = calloc(1, sizeof(*info->tx_attr));
	if (!info->rx_attr)
		info->rx_attr = calloc(1, sizeof(*info->rx_attr));
	return info->fabric_attr && info->domain_attr && info->ep_attr &&
	       info->tx_attr && info->rx_attr;
}

/*
 * An object of this kind opened on dom (its core object did): until it
 * closes (pmv_domain_release), fi_close of dom says -FI_EBUSY without
 * calling the core's close.  libfabric 2.1's tcp domain unhooks itself
 * from its EQs before its own busy check, so after a refused close the
 * EQ no longer progressed it: its endpoints' connection events never came.
 */
void pmv_domain_hold(struct pmv_domain *dom, enum pmv_dom_obj kind)
{
	__atomic_add_fetch(&dom->open_objs[kind], 1, __ATOMIC_ACQ_REL);
}

/* The object's core object closed: dom may close once no other is open. */
void pmv_domain_release(struct pmv_domain *dom, enum pmv_dom_obj kind)
{
	__atomic_sub_fetch(&dom->open_objs[kind], 1, __ATOMIC_ACQ_REL);
}
