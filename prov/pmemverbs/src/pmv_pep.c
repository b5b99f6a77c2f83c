/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: passive endpoints (listening, rejecting connection requests).
 */
#include <stdlib.h>

#include "pmv_objects.h"

static int pmv_pep_close(struct fid *fid)
{
	struct pmv_pep *pep = pmv_container_of(fid, struct pmv_pep, pep_fid.fid);
	return pmv_close_wrapper_eq(&pep->core->fid, "passive endpoint", pep,
				    pep->eq);
}

static int pmv_pep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct pmv_pep *pep = pmv_container_of(fid, struct pmv_pep, pep_fid.fid);

	return pmv_bind_core_eq(&pep->core->fid, bfid, flags, &pep->eq);
}

static struct fi_ops pmv_pep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = pmv_pep_close,
	.bind = pmv_pep_bind,
	.control = pmv_control_core,
	.ops_open = pmv_ops_open_core,
	.ops_set = pmv_no_ops_set,
};

static int pmv_pep_listen(struct fid_pep *pep)
{
	return fi_listen(pmv_container_of(pep, struct pmv_pep, pep_fid)->core);
}

static int pmv_pep_reject(struct fid_pep *pep_fid, fid_t handle,
			  const void *param, size_t paramlen)
{
	struct pmv_pep *pep = pmv_container_of(pep_fid, struct pmv_pep, pep_fid);
	struct fid *core_handle = pmv_core_fid(handle);
	int ret;

	if (!core_handle || handle->fclass != FI_CLASS_CONNREQ) {
		PMV_WARN(FI_LOG_EP_CTRL, "fi_reject: handle is not a "
			 "connection request from a pmemverbs FI_CONNREQ event\n");
		return -FI_EINVAL;
	}
	ret = fi_reject(pep->core, core_handle, param, paramlen);
	if (!ret)
		fi_close(handle);
	return ret;
}

static struct fi_ops_cm pmv_pep_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = pmv_cm_setname,
	.getname = pmv_cm_getname,
	.getpeer = NULL,
	.connect = NULL,
	.listen = pmv_pep_listen,
	.accept = NULL,
	.reject = pmv_pep_reject,
	.shutdown = NULL,
	.join = NULL,
};

static struct fi_ops_ep pmv_pep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.getopt = pmv_ep_getopt,
	.setopt = pmv_ep_setopt,
};

int pmv_passive_ep(struct fid_fabric *fabric, struct fi_info *info,
		   struct fid_pep **pep_fid, void *context)
{
	struct pmv_fabric *fab = pmv_container_of(fabric, struct pmv_fabric,
						  fabric_fid);
	struct fi_info *core_info = pmv_info_to_core(info);
	struct pmv_pep *pep = calloc(1, sizeof(*pep));
	int ret = -FI_ENOMEM;

	if (!pep || !core_info)
		goto err;
	ret = fi_passive_ep(fab->core, core_info, &pep->core, pep);
	if (ret) {
		PMV_WARN(FI_LOG_EP_CTRL, "the core could not open a passive "
			 "endpoint: %s (%d). Check the fi_info (from fi_getinfo "
			 "for pmemverbs, with the address to listen on) and the "
			 "core's own warning\n", fi_strerror(-ret), ret);
		goto err;
	}
	fi_freeinfo(core_info);
	pep->pmem_caps = info->caps & FI_RMA_PMEM;
	pep->pep_fid.fid.fclass = FI_CLASS_PEP;
	pep->pep_fid.fid.context = context;
	pep->pep_fid.fid.ops = &pmv_pep_fi_ops;
	pep->pep_fid.ops = &pmv_pep_ops;
	pep->pep_fid.cm = &pmv_pep_cm_ops;
	*pep_fid = &pep->pep_fid;
	return 0;
err:
	fi_freeinfo(core_info);
	free(pep);
	return ret;
}
