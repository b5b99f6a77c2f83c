/*
 * pmemverbs: completion queue.
 *
 * The application reads its completions from a pmemverbs CQ; today every
 * entry comes straight from the core CQ, whose entries already carry the
 * application's own contexts.
 */
#include <stdlib.h>

#include "pmv.h"

static inline struct fid_cq *core_cq(struct fid_cq *cq)
{
	return pmv_container_of(cq, struct pmv_cq, cq_fid)->core;
}

static ssize_t pmv_cq_read(struct fid_cq *cq, void *buf, size_t count)
{
	return fi_cq_read(core_cq(cq), buf, count);
}

static ssize_t pmv_cq_readfrom(struct fid_cq *cq, void *buf, size_t count,
			       fi_addr_t *src_addr)
{
	return fi_cq_readfrom(core_cq(cq), buf, count, src_addr);
}

static ssize_t pmv_cq_readerr(struct fid_cq *cq, struct fi_cq_err_entry *buf,
			      uint64_t flags)
{
	return fi_cq_readerr(core_cq(cq), buf, flags);
}

static ssize_t pmv_cq_sread(struct fid_cq *cq, void *buf, size_t count,
			    const void *cond, int timeout)
{
	return fi_cq_sread(core_cq(cq), buf, count, cond, timeout);
}

static ssize_t pmv_cq_sreadfrom(struct fid_cq *cq, void *buf, size_t count,
				fi_addr_t *src_addr, const void *cond,
				int timeout)
{
	return fi_cq_sreadfrom(core_cq(cq), buf, count, src_addr, cond,
			       timeout);
}

static int pmv_cq_signal(struct fid_cq *cq)
{
	return fi_cq_signal(core_cq(cq));
}

static const char *pmv_cq_strerror(struct fid_cq *cq, int prov_errno,
				   const void *err_data, char *buf, size_t len)
{
	return fi_cq_strerror(core_cq(cq), prov_errno, err_data, buf, len);
}

static struct fi_ops_cq pmv_cq_ops = {
	.size = sizeof(struct fi_ops_cq),
	.read = pmv_cq_read,
	.readfrom = pmv_cq_readfrom,
	.readerr = pmv_cq_readerr,
	.sread = pmv_cq_sread,
	.sreadfrom = pmv_cq_sreadfrom,
	.signal = pmv_cq_signal,
	.strerror = pmv_cq_strerror,
};

static int pmv_cq_close(struct fid *fid)
{
	struct pmv_cq *cq = pmv_container_of(fid, struct pmv_cq, cq_fid.fid);
	int ret = pmv_close_core(&cq->core->fid, "completion queue");

	if (ret)
		return ret;
	free(cq);
	return 0;
}

static struct fi_ops pmv_cq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = pmv_cq_close,
	.bind = pmv_no_bind,
	.control = pmv_control_core,
	.ops_open = pmv_ops_open_core,
	.ops_set = pmv_no_ops_set,
};

int pmv_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr,
		struct fid_cq **cq_fid, void *context)
{
	struct pmv_domain *dom = pmv_container_of(domain, struct pmv_domain,
						  domain_fid);
	struct fi_cq_attr core_attr = *attr;
	struct pmv_cq *cq;
	int ret;

	ret = pmv_core_wait_set(attr->wait_set, &core_attr.wait_set);
	if (ret)
		return ret;
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -FI_ENOMEM;
	ret = fi_cq_open(dom->core, &core_attr, &cq->core, cq);
	if (ret) {
		free(cq);
		return ret;
	}
	cq->cq_fid.fid.fclass = FI_CLASS_CQ;
	cq->cq_fid.fid.context = context;
	cq->cq_fid.fid.ops = &pmv_cq_fi_ops;
	cq->cq_fid.ops = &pmv_cq_ops;
	*cq_fid = &cq->cq_fid;
	return 0;
}
