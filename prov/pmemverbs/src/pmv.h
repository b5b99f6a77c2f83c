/*
 * pmemverbs: internal definitions shared by the provider's objects.
 *
 * Every pmemverbs object wraps one object of the core provider (verbs or
 * tcp).  Each wrapper starts with its public fid structure, and the core
 * object is always opened with the wrapper as its context, so that a core
 * fid found in an event maps back to the wrapper through fid->context.
 */
#ifndef PMV_H
#define PMV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>

#define PMV_PROV_NAME "pmemverbs"
#define PMV_PROV_VERSION FI_VERSION(0, 1)
#define PMV_FI_VERSION FI_VERSION(1, 17)

/*
 * libfabric's private getinfo flags (include/ofi.h, not installed).  A
 * provider hidden by FI_PROVIDER is only reachable with OFI_GETINFO_HIDDEN;
 * OFI_CORE_PROV_ONLY keeps utility providers out of a core query.  These
 * values have been stable since libfabric 1.10.
 */
#define PMV_OFI_CORE_PROV_ONLY (1ULL << 59)
#define PMV_OFI_GETINFO_HIDDEN (1ULL << 60)

#define pmv_container_of(ptr, type, field) \
	((type *) ((char *) (ptr) - offsetof(type, field)))

extern struct fi_provider pmv_prov;

#define PMV_WARN(subsys, ...) FI_WARN(&pmv_prov, subsys, __VA_ARGS__)
#define PMV_INFO(subsys, ...) FI_INFO(&pmv_prov, subsys, __VA_ARGS__)

/* Provider parameters, read once at fi_prov_ini. */
struct pmv_params {
	char *core_prov; /* FI_PMEMVERBS_CORE_PROV, NULL = auto */
};
extern struct pmv_params pmv_params;

struct pmv_fabric {
	struct fid_fabric fabric_fid;
	struct fid_fabric *core;
	char *core_name;
};

struct pmv_domain {
	struct fid_domain domain_fid;
	struct fid_domain *core;
	struct pmv_fabric *fabric;
};

struct pmv_pep {
	struct fid_pep pep_fid;
	struct fid_pep *core;
};

/* An active endpoint, or a shared receive context (same wrapper). */
struct pmv_ep {
	struct fid_ep ep_fid;
	struct fid_ep *core;
	struct pmv_domain *domain;
};

struct pmv_cq {
	struct fid_cq cq_fid;
	struct fid_cq *core;
};

struct pmv_eq {
	struct fid_eq eq_fid;
	struct fid_eq *core;
};

struct pmv_cntr {
	struct fid_cntr cntr_fid;
	struct fid_cntr *core;
};

struct pmv_av {
	struct fid_av av_fid;
	struct fid_av *core;
};

struct pmv_mr {
	struct fid_mr mr_fid;
	struct fid_mr *core;
	struct pmv_domain *domain;
};

struct pmv_wait {
	struct fid_wait wait_fid;
	struct fid_wait *core;
};

struct pmv_poll {
	struct fid_poll poll_fid;
	struct fid_poll *core;
};

/* Connection request handed to the application in an FI_CONNREQ event. */
struct pmv_connreq {
	struct fid fid;
	struct fi_info *core_info;
};

/* pmv_info.c: fi_info translation between pmemverbs and its core. */
const char *pmv_core_name(void);
int pmv_getinfo(uint32_t version, const char *node, const char *service,
		uint64_t flags, const struct fi_info *hints,
		struct fi_info **info);
int pmv_info_from_core(struct fi_info *info);
struct fi_info *pmv_info_to_core(const struct fi_info *info);
struct fi_info *pmv_hints_to_core(const struct fi_info *hints,
				  const char *core_name);

/* pmv_fid.c: mapping between pmemverbs fids and core fids. */
struct fid *pmv_core_fid(struct fid *fid);
struct fid *pmv_app_fid(struct fid *core_fid);
int pmv_close_core(struct fid *core_fid, const char *what);
int pmv_bind_core(struct fid *core, struct fid *bfid, uint64_t flags);
int pmv_control_core(struct fid *fid, int command, void *arg);
int pmv_ops_open_core(struct fid *fid, const char *name, uint64_t flags,
		      void **ops, void *context);
int pmv_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags);
int pmv_no_ops_set(struct fid *fid, const char *name, uint64_t flags,
		   void *ops, void *context);
extern struct fi_ops pmv_connreq_fi_ops;
int pmv_core_wait_set(struct fid_wait *wait_set, struct fid_wait **core_set);

/* Object constructors, one file each. */
int pmv_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
		    void *context);
int pmv_domain_open(struct fid_fabric *fabric, struct fi_info *info,
		    struct fid_domain **domain, void *context);
int pmv_passive_ep(struct fid_fabric *fabric, struct fi_info *info,
		   struct fid_pep **pep, void *context);
int pmv_endpoint(struct fid_domain *domain, struct fi_info *info,
		 struct fid_ep **ep, void *context);
int pmv_srx_context(struct fid_domain *domain, struct fi_rx_attr *attr,
		    struct fid_ep **rx_ep, void *context);
int pmv_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr,
		struct fid_eq **eq, void *context);
int pmv_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr,
		struct fid_cq **cq, void *context);
int pmv_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr,
		  struct fid_cntr **cntr, void *context);
int pmv_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
		struct fid_av **av, void *context);
int pmv_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr,
		  struct fid_wait **waitset);
int pmv_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr,
		  struct fid_poll **pollset);
int pmv_trywait(struct fid_fabric *fabric, struct fid **fids, int count);
extern struct fi_ops_mr pmv_mr_ops;

/* Data-path operation tables (pmv_ep_ops.c). */
extern struct fi_ops_msg pmv_msg_ops;
extern struct fi_ops_tagged pmv_tagged_ops;
extern struct fi_ops_rma pmv_rma_ops;
extern struct fi_ops_atomic pmv_atomic_ops;

#endif /* PMV_H */
