/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: FI_EP_RDM endpoints with FI_RMA_PMEM (fi_pmemverbs(7), RDM).
 *
 * libfabric's ofi_rxm, layered on pmemverbs MSG ("pmemverbs;ofi_rxm"),
 * provides the reliable datagram endpoint: one MSG connection per peer.
 * ofi_rxm drops FI_RMA_PMEM from the caps it asks of its core, so the
 * outer objects pmemverbs hands out (domain and endpoint, thin wrappers)
 * open rxm's with a domain name carrying PMV_RDM_MARK; when rxm asks
 * pmemverbs for its MSG core with that name, the entries pmemverbs returns
 * carry FI_RMA_PMEM, and every MSG endpoint rxm opens is a pmem endpoint.
 */
#ifndef PMV_RDM_H
#define PMV_RDM_H

#include <stdbool.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>

/* The domain name prefix that tells pmemverbs MSG "rxm wants pmem". */
#define PMV_RDM_MARK "pmemverbs-pmem:"
/* The stack the outer RDM objects are built on. */
#define PMV_RDM_STACK "pmemverbs;ofi_rxm"

/* pmv_rdm_info.c */
bool pmv_rdm_hints_want_pmem(const struct fi_info *hints);
int pmv_rdm_getinfo(uint32_t version, const char *node, const char *service,
		    uint64_t flags, const struct fi_info *hints,
		    struct fi_info **info);
struct fi_info *pmv_rdm_info_to_rxm(const struct fi_info *info);
int pmv_rdm_unmark(struct fi_info *info);
int pmv_rdm_unmark_hints(const struct fi_info *hints, struct fi_info **out);
int pmv_rdm_mark_entries(struct fi_info *list);

/* pmv_rdm_domain.c */
bool pmv_rdm_info_is_rdm(const struct fi_info *info);
int pmv_rdm_domain_open(struct fid_fabric *fabric, struct fi_info *info,
			struct fid_domain **domain, void *context);

/* An RDM endpoint: ofi_rxm's, with the commit rules pmemverbs adds. */
struct pmv_rdm_ep {
	struct fid_ep ep_fid;
	struct fid_ep *rxm;
	uint64_t tx_op_flags; /* the application's, FI_COMMIT_COMPLETE too */
};

static inline struct fid_ep *pmv_rdm_ep_inner(struct fid_ep *ep)
{
	return ((struct pmv_rdm_ep *) ep)->rxm; /* ep_fid comes first */
}

/* pmv_rdm_ep_fwd.c: messages, tagged messages and atomics, forwarded */
extern struct fi_ops_msg pmv_rdm_msg_ops;
extern struct fi_ops_tagged pmv_rdm_tagged_ops;
extern struct fi_ops_atomic pmv_rdm_atomic_ops;

/* pmv_rdm_ep.c */
int pmv_rdm_ep_open(struct fid_domain *rxm_domain, struct fi_info *info,
		    struct fid_ep **ep, void *context);

/* pmv_fid.c */
bool pmv_info_complete(struct fi_info *info);

#endif /* PMV_RDM_H */
