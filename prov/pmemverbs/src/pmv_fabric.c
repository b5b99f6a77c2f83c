/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: fabric object.
 */
#include <stdlib.h>
#include <string.h>

#include "pmv_objects.h"

static int pmv_fabric_close(struct fid *fid)
{
	struct pmv_fabric *fab = pmv_container_of(fid, struct pmv_fabric,
						  fabric_fid.fid);
	int ret = pmv_close_core(&fab->core->fid, "fabric");

	if (ret)
		return ret;
	free(fab->core_name);
	free(fab);
	return 0;
}

static struct fi_ops pmv_fabric_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = pmv_fabric_close,
	.bind = pmv_no_bind,
	.control = pmv_control_core,
	.ops_open = pmv_ops_open_core,
	.ops_set = pmv_no_ops_set,
};

static int pmv_domain2(struct fid_fabric *fabric, struct fi_info *info,
		       struct fid_domain **domain, uint64_t flags, void *context)
{
	if (flags) {
		PMV_WARN(FI_LOG_FABRIC, "fi_domain2: flags 0x%llx are not "
			 "supported; pass 0\n", (unsigned long long) flags);
		return -FI_EBADFLAGS;
	}
	return pmv_domain_open(fabric, info, domain, context);
}

static struct fi_ops_fabric pmv_fabric_ops = {
	.size = sizeof(struct fi_ops_fabric),
	.domain = pmv_domain_open,
	.passive_ep = pmv_passive_ep,
	.eq_open = pmv_eq_open,
	.wait_open = pmv_wait_open,
	.trywait = pmv_trywait,
	.domain2 = pmv_domain2,
};

/* Opens the core fabric named like ours, under the core provider's name. */
static int pmv_open_core_fabric(struct pmv_fabric *fab,
				const struct fi_fabric_attr *attr)
{
	struct fi_fabric_attr core_attr = *attr;

	fab->core_name = strdup(pmv_core_name() ? pmv_core_name() : "");
	if (!fab->core_name)
		return -FI_ENOMEM;
	if (!*fab->core_name) {
		PMV_WARN(FI_LOG_FABRIC, "no usable core provider; check "
			 "FI_PMEMVERBS_CORE_PROV\n");
		return -FI_ENODEV;
	}
	core_attr.prov_name = fab->core_name;
	core_attr.fabric = NULL;
	return fi_fabric(&core_attr, &fab->core, fab);
}

int pmv_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
		    void *context)
{
	struct pmv_fabric *fab = calloc(1, sizeof(*fab));
	int ret;

	if (!fab)
		return -FI_ENOMEM;
	ret = pmv_open_core_fabric(fab, attr);
	if (ret) {
		PMV_WARN(FI_LOG_FABRIC, "the %s core could not open fabric "
			 "%s: %s (%d). Pass a fabric_attr from fi_getinfo for "
			 "pmemverbs; the core's own warning says more\n",
			 fab->core_name ? fab->core_name : "?", attr->name,
			 fi_strerror(-ret), ret);
		free(fab->core_name);
		free(fab);
		return ret;
	}
	fab->fabric_fid.fid.fclass = FI_CLASS_FABRIC;
	fab->fabric_fid.fid.context = context;
	fab->fabric_fid.fid.ops = &pmv_fabric_fi_ops;
	fab->fabric_fid.ops = &pmv_fabric_ops;
	fab->fabric_fid.api_version = attr->api_version;
	*fabric = &fab->fabric_fid;
	return 0;
}

/* Core fids fi_trywait asks the core about at once (a bounded stack array). */
#define PMV_TRYWAIT_CHUNK 64

/*
 * The core fids of count pmemverbs objects from fids, into core_fids; their
 * CQs are armed first: the application may sleep on their fds from the
 * core's trywait on, and the agent wakes it after its own progress of them
 * (pmv_cq_wake_waiters) until it reads them again.
 */
static int pmv_trywait_core_fids(struct fid **fids, int count,
				 struct fid **core_fids)
{
	for (int i = 0; i < count; i++) {
		core_fids[i] = pmv_core_fid(fids[i]);
		if (!core_fids[i]) {
			PMV_WARN(FI_LOG_FABRIC, "fi_trywait: a fid was not "
				 "opened through pmemverbs; pass pmemverbs "
				 "objects only\n");
			return -FI_EINVAL;
		}
		if (fids[i]->fclass == FI_CLASS_CQ)
			__atomic_store_n(&pmv_container_of(fids[i],
				struct pmv_cq, cq_fid.fid)->app_armed, true,
				__ATOMIC_SEQ_CST);
	}
	return 0;
}

/* Notes the core's fi_trywait of count pmemverbs objects in their CQs (a
 * wait set's: its members), for the agent (pmv_cq_core_used). */
static void pmv_trywait_note_used(struct fid **fids, int count)
{
	for (int i = 0; i < count; i++) {
		if (fids[i]->fclass == FI_CLASS_CQ)
			pmv_cq_core_used(pmv_container_of(fids[i],
				struct pmv_cq, cq_fid.fid));
#if PMV_HAVE_WAIT_SETS
		else if (fids[i]->fclass == FI_CLASS_WAIT)
			pmv_members_note_used(&pmv_container_of(fids[i],
				struct pmv_wait, wait_fid.fid)->members);
#endif
	}
}

/*
 * After the core's trywait said yes (its progress may have placed acks
 * and requests): -FI_EAGAIN if the application must read one of count
 * pmemverbs objects first, as pmemverbs completes commits and counts them
 * from reads, which no core wait object wakes (pmv_cq_trywait_busy).
 */
static int pmv_trywait_ours(struct fid **fids, int count)
{
	for (int i = 0; i < count; i++) {
		if (fids[i]->fclass == FI_CLASS_CQ &&
		    pmv_cq_trywait_busy(pmv_container_of(fids[i],
			    struct pmv_cq, cq_fid.fid)))
			return -FI_EAGAIN;
		if (fids[i]->fclass == FI_CLASS_CNTR &&
		    pmv_cntr_trywait_busy(pmv_container_of(fids[i],
			    struct pmv_cntr, cntr_fid.fid)))
			return -FI_EAGAIN;
	}
	return 0;
}

/*
 * fi_trywait over pmemverbs objects: the core's, PMV_TRYWAIT_CHUNK at a
 * time (any count; all must be ready to wait), then pmemverbs's own look,
 * after it, as the core's progress may have placed what it completes.
 */
int pmv_trywait(struct fid_fabric *fabric, struct fid **fids, int count)
{
	struct pmv_fabric *fab = pmv_container_of(fabric, struct pmv_fabric,
						  fabric_fid);
	struct fid *core_fids[PMV_TRYWAIT_CHUNK];
	int i, n, ret = 0;

	if (count <= 0)
		return fi_trywait(fab->core, core_fids, count);
	for (i = 0; i < count && !ret; i += n) {
		n = count - i < PMV_TRYWAIT_CHUNK ? count - i :
						    PMV_TRYWAIT_CHUNK;
		ret = pmv_trywait_core_fids(fids + i, n, core_fids);
		if (!ret) {
			ret = fi_trywait(fab->core, core_fids, n);
			pmv_trywait_note_used(fids + i, n);
		}
		if (!ret)
			ret = pmv_trywait_ours(fids + i, n);
	}
	return ret;
}
