/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: what the endpoint operation files share (pmv_ep_ops.c:
 * messages and RMA; pmv_ep_atomic.c: atomics; pmv_ep_pmem.c: RMA of pmem
 * endpoints; pmv_ep_cm.c: connection management).
 */
#ifndef PMV_EP_OPS_H
#define PMV_EP_OPS_H

#include "pmv_objects.h"

/* The pmemverbs endpoint behind an application's fid_ep. */
static inline struct pmv_ep *pmv_ep(struct fid_ep *ep)
{
	return pmv_container_of(ep, struct pmv_ep, ep_fid);
}

/* The core endpoint it wraps. */
static inline struct fid_ep *core_ep(struct fid_ep *ep)
{
	return pmv_ep(ep)->core;
}

#endif /* PMV_EP_OPS_H */
