/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: address vectors, forwarded to the core's.  fi_addr_t values
 * are the core's own, so endpoints pass them through untranslated.
 */
#include <stdlib.h>

#include "pmv_objects.h"

static inline struct fid_av *core_av(struct fid_av *av)
{
	return pmv_container_of(av, struct pmv_av, av_fid)->core;
}

static int pmv_av_insert(struct fid_av *av, const void *addr, size_t count,
			 fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	return fi_av_insert(core_av(av), addr, count, fi_addr, flags, context);
}

static int pmv_av_insertsvc(struct fid_av *av, const char *node,
			    const char *service, fi_addr_t *fi_addr,
			    uint64_t flags, void *context)
{
	return fi_av_insertsvc(core_av(av), node, service, fi_addr, flags,
			       context);
}

static int pmv_av_insertsym(struct fid_av *av, const char *node,
			    size_t nodecnt, const char *service, size_t svccnt,
			    fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	return fi_av_insertsym(core_av(av), node, nodecnt, service, svccnt,
			       fi_addr, flags, context);
}

static int pmv_av_remove(struct fid_av *av, fi_addr_t *fi_addr, size_t count,
			 uint64_t flags)
{
	return fi_av_remove(core_av(av), fi_addr, count, flags);
}

static int pmv_av_lookup(struct fid_av *av, fi_addr_t fi_addr, void *addr,
			 size_t *addrlen)
{
	return fi_av_lookup(core_av(av), fi_addr, addr, addrlen);
}

static const char *pmv_av_straddr(struct fid_av *av, const void *addr,
				  char *buf, size_t *len)
{
	return fi_av_straddr(core_av(av), addr, buf, len);
}

static int pmv_av_set(struct fid_av *av, struct fi_av_set_attr *attr,
		      struct fid_av_set **av_set, void *context)
{
	(void) av; (void) attr; (void) av_set; (void) context;
	return -FI_ENOSYS;
}

static struct fi_ops_av pmv_av_ops = {
	.size = sizeof(struct fi_ops_av),
	.insert = pmv_av_insert,
	.insertsvc = pmv_av_insertsvc,
	.insertsym = pmv_av_insertsym,
	.remove = pmv_av_remove,
	.lookup = pmv_av_lookup,
	.straddr = pmv_av_straddr,
	.av_set = pmv_av_set,
};

static int pmv_av_close(struct fid *fid)
{
	struct pmv_av *av = pmv_container_of(fid, struct pmv_av, av_fid.fid);
	struct pmv_domain *dom = av->domain;
	int ret = pmv_close_wrapper_eq(&av->core->fid, "address vector", av,
				       av->eq);

	if (!ret)
		pmv_domain_release(dom, PMV_DOM_AV);
	return ret;
}

/* Binds the AV to an EQ for asynchronous insertion events. */
static int pmv_av_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct pmv_av *av = pmv_container_of(fid, struct pmv_av, av_fid.fid);

	return pmv_bind_core_eq(&av->core->fid, bfid, flags, &av->eq);
}

static struct fi_ops pmv_av_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = pmv_av_close,
	.bind = pmv_av_bind,
	.control = pmv_control_core,
	.ops_open = pmv_ops_open_core,
	.ops_set = pmv_no_ops_set,
};

int pmv_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
		struct fid_av **av_fid, void *context)
{
	struct pmv_domain *dom = pmv_container_of(domain, struct pmv_domain,
						  domain_fid);
	struct pmv_av *av = calloc(1, sizeof(*av));
	int ret;

	if (!av)
		return -FI_ENOMEM;
	ret = fi_av_open(dom->core, attr, &av->core, av);
	if (ret) {
		free(av);
		return ret;
	}
	av->core->fid.context = av; /* not every core stores the context */
	av->domain = dom;
	pmv_domain_hold(dom, PMV_DOM_AV);
	av->av_fid.fid.fclass = FI_CLASS_AV;
	av->av_fid.fid.context = context;
	av->av_fid.fid.ops = &pmv_av_fi_ops;
	av->av_fid.ops = &pmv_av_ops;
	*av_fid = &av->av_fid;
	return 0;
}
