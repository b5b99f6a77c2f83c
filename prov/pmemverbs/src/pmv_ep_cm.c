/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: connection management of an active endpoint (the CM header
 * rides in front of the application's connect and accept data), the
 * options and names passive endpoints share, and the arrival of the
 * peer's CM header.  Split from pmv_ep.c.
 */
#include <stdlib.h>

#include "pmv_ep_ops.h"

/* FI_OPT_CM_DATA_SIZE is the core's less the pmemverbs CM header. */
int pmv_ep_getopt(fid_t fid, int level, int optname, void *optval,
		  size_t *optlen)
{
	int ret = fi_getopt(pmv_core_fid(fid), level, optname, optval, optlen);
	size_t *size = optval;

	if (!ret && level == FI_OPT_ENDPOINT && optname == FI_OPT_CM_DATA_SIZE)
		*size = *size > PMV_CM_HDR_SIZE ?
			*size - PMV_CM_HDR_SIZE : 0;
	return ret;
}

int pmv_ep_setopt(fid_t fid, int level, int optname, const void *optval,
		  size_t optlen)
{
	return fi_setopt(pmv_core_fid(fid), level, optname, optval, optlen);
}

int pmv_cm_setname(fid_t fid, void *addr, size_t addrlen)
{
	return fi_setname(pmv_core_fid(fid), addr, addrlen);
}

int pmv_cm_getname(fid_t fid, void *addr, size_t *addrlen)
{
	return fi_getname(pmv_core_fid(fid), addr, addrlen);
}

static int pmv_cm_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen)
{
	return fi_getpeer(core_ep(ep), addr, addrlen);
}

static int pmv_cm_connect(struct fid_ep *ep_fid, const void *addr,
			  const void *param, size_t paramlen)
{
	struct pmv_ep *ep = pmv_container_of(ep_fid, struct pmv_ep, ep_fid);
	size_t len;
	void *data = pmv_cm_data_with_hdr(ep, param, paramlen, &len);
	int ret;

	if (!data)
		return -FI_ENOMEM;
	ret = fi_connect(ep->core, addr, data, len);
	free(data);
	return ret;
}

static int pmv_cm_accept(struct fid_ep *ep_fid, const void *param,
			 size_t paramlen)
{
	struct pmv_ep *ep = pmv_container_of(ep_fid, struct pmv_ep, ep_fid);
	size_t len;
	void *data = pmv_cm_data_with_hdr(ep, param, paramlen, &len);
	int ret;

	if (!data)
		return -FI_ENOMEM;
	ret = fi_accept(ep->core, data, len);
	free(data);
	/* its gate opened with the header: it joined its agent before */
	if (!ret && ep->gated && pmv_tgt_in_agent(ep))
		pmv_serve_attach(ep);
	return ret;
}

static int pmv_cm_shutdown(struct fid_ep *ep, uint64_t flags)
{
	return fi_shutdown(core_ep(ep), flags);
}

static int pmv_cm_join(struct fid_ep *ep, const void *addr, uint64_t flags,
		       struct fid_mc **mc, void *context)
{
	(void) ep; (void) addr; (void) flags; (void) mc; (void) context;
	return -FI_ENOSYS;
}

static int pmv_cm_no_listen(struct fid_pep *pep)
{
	(void) pep;
	return -FI_ENOSYS;
}

static int pmv_cm_no_reject(struct fid_pep *pep, fid_t handle,
			    const void *param, size_t paramlen)
{
	(void) pep; (void) handle; (void) param; (void) paramlen;
	return -FI_ENOSYS;
}

struct fi_ops_cm pmv_ep_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = pmv_cm_setname,
	.getname = pmv_cm_getname,
	.getpeer = pmv_cm_getpeer,
	.connect = pmv_cm_connect,
	.listen = pmv_cm_no_listen,
	.accept = pmv_cm_accept,
	.reject = pmv_cm_no_reject,
	.shutdown = pmv_cm_shutdown,
	.join = pmv_cm_join,
};

/*
 * The peer's CM header arrived: commits go to it, and its requests are
 * served.  A negative libfabric code if they cannot be (the agent could
 * not start).
 */
int pmv_ep_peer_connected(struct pmv_ep *ep, const struct pmv_peer *peer)
{
	int ret;

	ep->peer = *peer;
	if (!ep->pmem || !ep->inbox.mem)
		return 0;
	ret = pmv_agent_add(ep->domain, ep);
	return ret > 0 ? -ret : ret;
}
