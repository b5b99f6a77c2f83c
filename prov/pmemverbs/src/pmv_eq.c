/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: event queue.
 *
 * Events come from the core EQ.  Before the application sees one, the core
 * fids it names are replaced by the pmemverbs fids wrapping them, and an
 * FI_CONNREQ's fi_info is rewritten into a pmemverbs fi_info whose handle
 * is a pmemverbs connection request.
 */
#include <stdlib.h>
#include <string.h>

#include "pmv_objects.h"

static struct fid_eq *pmv_core_eq(struct fid_eq *eq)
{
	return pmv_container_of(eq, struct pmv_eq, eq_fid)->core;
}

/* True for events whose fid the core filled in (not fi_eq_write's). */
static bool pmv_event_from_core(uint32_t event)
{
	switch (event) {
	case FI_CONNREQ:
	case FI_CONNECTED:
	case FI_SHUTDOWN:
	case FI_MR_COMPLETE:
	case FI_AV_COMPLETE:
	case FI_JOIN_COMPLETE:
		return true;
	default:
		return false;
	}
}

/* Replaces a core fid by the pmemverbs fid wrapping it; ours stay as they are. */
static struct fid *pmv_event_fid(struct fid *fid)
{
	if (!fid || pmv_fid_is_ours(fid))
		return fid;
	return pmv_app_fid(fid);
}

/* Wraps the core's connection request info into a pmemverbs one. */
static struct fi_info *pmv_connreq_info(struct fi_info *core_info)
{
	struct pmv_connreq *creq = calloc(1, sizeof(*creq));
	struct fi_info *info = fi_dupinfo(core_info);

	if (!creq || !info)
		goto err;
	free(info->fabric_attr->prov_name);
	info->fabric_attr->prov_name = strdup(PMV_PROV_NAME);
	if (!info->fabric_attr->prov_name)
		goto err;
	info->fabric_attr->prov_version = PMV_PROV_VERSION;
	creq->fid.fclass = FI_CLASS_CONNREQ;
	creq->fid.ops = &pmv_connreq_fi_ops;
	creq->core_info = core_info;
	info->handle = &creq->fid;
	return info;
err:
	fi_freeinfo(info);
	free(creq);
	return NULL;
}

/* The pmemverbs endpoint an event names, or NULL. */
static struct pmv_ep *pmv_event_ep(struct fid *fid)
{
	if (!fid || fid->fclass != FI_CLASS_EP || !pmv_core_fid(fid))
		return NULL;
	return pmv_container_of(fid, struct pmv_ep, ep_fid.fid);
}

/* Takes the peer's pmemverbs header off CM data; returns the new length. */
static ssize_t pmv_strip_cm_hdr(struct fi_eq_cm_entry *entry, ssize_t len,
				struct pmv_peer *peer)
{
	size_t data_len = (size_t) len - sizeof(*entry);

	if (!pmv_cm_hdr_parse(entry->data, data_len, peer))
		return len;
	memmove(entry->data, entry->data + PMV_CM_HDR_SIZE,
		data_len - PMV_CM_HDR_SIZE);
	return len - PMV_CM_HDR_SIZE;
}

/* A connection request inherits FI_RMA_PMEM from the passive endpoint. */
static void pmv_connreq_caps(struct fi_info *info, struct fid *pep_fid)
{
	struct pmv_pep *pep;

	if (!pep_fid || pep_fid->fclass != FI_CLASS_PEP || !pmv_core_fid(pep_fid))
		return;
	pep = pmv_container_of(pep_fid, struct pmv_pep, pep_fid.fid);
	info->caps |= pep->pmem_caps;
	if (info->tx_attr)
		info->tx_attr->caps |= pep->pmem_caps;
	if (info->rx_attr)
		info->rx_attr->caps |= pep->pmem_caps;
}

static ssize_t pmv_eq_connreq(struct fi_eq_cm_entry *entry, ssize_t len)
{
	struct pmv_connreq *creq;

	entry->info = pmv_connreq_info(entry->info);
	if (entry->info)
		pmv_connreq_caps(entry->info, entry->fid);
	if (!entry->info) {
		PMV_WARN(FI_LOG_EQ, "out of memory translating a connection "
			 "request; it is dropped\n");
		return -FI_ENOMEM;
	}
	creq = pmv_container_of(entry->info->handle, struct pmv_connreq, fid);
	return pmv_strip_cm_hdr(entry, len, &creq->peer);
}

static ssize_t pmv_eq_connected(struct fi_eq_cm_entry *entry, ssize_t len)
{
	struct pmv_ep *ep = pmv_event_ep(entry->fid);
	struct pmv_peer peer = { 0 };
	int ret;

	len = pmv_strip_cm_hdr(entry, len, &peer);
	if (ep && peer.known && !ep->peer.known &&
	    (ret = pmv_ep_peer_connected(ep, &peer)))
		PMV_WARN(FI_LOG_EP_CTRL, "could not start the commit agent: "
			 "%s (%d); this endpoint cannot serve its peer's "
			 "commits (they fail at the peer's "
			 "FI_PMEMVERBS_PEER_TIMEOUT_MS). Free memory or "
			 "threads, close the endpoint and connect again\n",
			 fi_strerror(-ret), ret);
	if (ep && ep->pmem)
		pmv_ep_connected(ep);
	return len;
}

/* Rewrites an event read from the core in place for the application. */
static ssize_t pmv_eq_translate(uint32_t event, void *buf, ssize_t len)
{
	struct fi_eq_cm_entry *entry = buf;
	struct pmv_ep *ep;

	if (!pmv_event_from_core(event) || len < (ssize_t) sizeof(entry->fid))
		return len;
	entry->fid = pmv_event_fid(entry->fid);
	if (len < (ssize_t) sizeof(*entry))
		return len;
	switch (event) {
	case FI_CONNREQ:
		return pmv_eq_connreq(entry, len);
	case FI_CONNECTED:
		return pmv_eq_connected(entry, len);
	case FI_SHUTDOWN:
		ep = pmv_event_ep(entry->fid);
		if (ep && ep->pmem)
			pmv_ini_fail_all(ep, -FI_ENOTCONN);
		return len;
	default:
		return len;
	}
}

/*
 * The length to deliver an event that does not fit the application's
 * buffer: it has been read from the core already, so a CM event keeps its
 * entry and loses the CM data that does not fit (as the core truncates);
 * only a buffer too small for the entry itself gets -FI_ETOOSMALL.
 */
static ssize_t pmv_eq_fit(uint32_t event, size_t len)
{
	if (pmv_event_from_core(event) && len >= sizeof(struct fi_eq_cm_entry))
		return (ssize_t) len;
	PMV_WARN(FI_LOG_EQ, "an EQ event does not fit the %zu-byte buffer "
		 "and is lost; read the EQ with room for a struct "
		 "fi_eq_cm_entry and the CM data\n", len);
	return -FI_ETOOSMALL;
}

/*
 * Bytes of an EQ read kept on the stack: a CM entry with the CM data of
 * any core (tcp and verbs allow at most a few hundred bytes) and our CM
 * header.  A read for a larger buffer goes straight into it.
 */
#define PMV_EQ_STACK_BYTES 2048

/*
 * Reads one event from the core into a buffer with room for the peer's
 * pmemverbs CM header, translates it, and hands it to the application.
 * No allocation: the room is on the stack, or, for a buffer too large
 * for it, the application's own buffer (any CM data then fits in it).
 */
static ssize_t pmv_eq_read_event(struct fid_eq *core, uint32_t *event,
				 void *buf, size_t len, int timeout,
				 uint64_t flags)
{
	uint64_t room[PMV_EQ_STACK_BYTES / sizeof(uint64_t)];
	bool on_stack = len <= sizeof(room) - PMV_CM_HDR_SIZE;
	size_t tmp_len = on_stack ? len + PMV_CM_HDR_SIZE : len;
	void *tmp = on_stack ? (void *) room : buf;
	ssize_t ret;

	ret = timeout == INT32_MIN ?
	      fi_eq_read(core, event, tmp, tmp_len, flags) :
	      fi_eq_sread(core, event, tmp, tmp_len, timeout, flags);
	if (ret > 0)
		ret = pmv_eq_translate(*event, tmp, ret);
	if (ret > (ssize_t) len)
		ret = pmv_eq_fit(*event, len);
	if (ret > 0 && on_stack)
		memcpy(buf, tmp, ret);
	return ret;
}

static ssize_t pmv_eq_read(struct fid_eq *eq, uint32_t *event, void *buf,
			   size_t len, uint64_t flags)
{
	pmv_hooks_run(&pmv_container_of(eq, struct pmv_eq, eq_fid)->hooks);
	return pmv_eq_read_event(pmv_core_eq(eq), event, buf, len, INT32_MIN,
				 flags);
}

/*
 * Longest slice of a core EQ wait while pmem endpoints are bound to the EQ:
 * a core whose EQ wait drives its data progress (libfabric 2.x's tcp) may
 * place a commit request there, which raises no EQ event; before each
 * slice the endpoints' waiting requests are served (the agent may have
 * found the bytes taken), and the agent is woken once, not every slice.
 */
#define PMV_EQ_SLICE_MS 10

static ssize_t pmv_eq_sread(struct fid_eq *eq, uint32_t *event, void *buf,
			    size_t len, int timeout, uint64_t flags)
{
	struct pmv_hooks *hooks = &pmv_container_of(eq, struct pmv_eq,
						    eq_fid)->hooks;
	uint64_t deadline = pmv_ms_now() + (uint64_t) (timeout < 0 ? 0 :
							timeout);
	ssize_t ret;
	int slice;

	for (;;) {
		pmv_hooks_run_before_wait(hooks);
		slice = timeout;
		if (__atomic_load_n(&hooks->head, __ATOMIC_ACQUIRE))
			slice = timeout < 0 ? PMV_EQ_SLICE_MS :
				(int) (deadline > pmv_ms_now() ?
				       deadline - pmv_ms_now() : 0);
		if (slice > PMV_EQ_SLICE_MS)
			slice = PMV_EQ_SLICE_MS;
		ret = pmv_eq_read_event(pmv_core_eq(eq), event, buf, len,
					slice, flags);
		if ((ret != -FI_EAGAIN && ret != -FI_ETIMEDOUT) ||
		    slice == timeout ||
		    (timeout >= 0 && pmv_ms_now() >= deadline))
			return ret;
	}
}

static ssize_t pmv_eq_readerr(struct fid_eq *eq, struct fi_eq_err_entry *buf,
			      uint64_t flags)
{
	ssize_t ret = fi_eq_readerr(pmv_core_eq(eq), buf, flags);

	if (ret > 0)
		buf->fid = pmv_event_fid(buf->fid);
	return ret;
}

static ssize_t pmv_eq_write(struct fid_eq *eq, uint32_t event, const void *buf,
			    size_t len, uint64_t flags)
{
	return fi_eq_write(pmv_core_eq(eq), event, buf, len, flags);
}

static const char *pmv_eq_strerror(struct fid_eq *eq, int prov_errno,
				   const void *err_data, char *buf, size_t len)
{
	return fi_eq_strerror(pmv_core_eq(eq), prov_errno, err_data, buf, len);
}

static struct fi_ops_eq pmv_eq_ops = {
	.size = sizeof(struct fi_ops_eq),
	.read = pmv_eq_read,
	.readerr = pmv_eq_readerr,
	.write = pmv_eq_write,
	.sread = pmv_eq_sread,
	.strerror = pmv_eq_strerror,
};

/* Refused (-FI_EBUSY) while objects bound to it are open, before the
 * core's close is called (pmv_bind_core_eq says why). */
static int pmv_eq_close(struct fid *fid)
{
	struct pmv_eq *eq = pmv_container_of(fid, struct pmv_eq, eq_fid.fid);

	if (__atomic_load_n(&eq->binds, __ATOMIC_ACQUIRE)) {
		PMV_WARN(FI_LOG_EQ, "fi_close: endpoints, passive endpoints, "
			 "domains or address vectors bound to this event "
			 "queue are still open; close them first\n");
		return -FI_EBUSY;
	}
	return pmv_hooks_close_wrapper(&eq->core->fid, "event queue",
				       &eq->hooks, eq);
}

static struct fi_ops pmv_eq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = pmv_eq_close,
	.bind = pmv_no_bind,
	.control = pmv_control_core,
	.ops_open = pmv_ops_open_core,
	.ops_set = pmv_no_ops_set,
};

int pmv_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr,
		struct fid_eq **eq_fid, void *context)
{
	struct pmv_fabric *fab = pmv_container_of(fabric, struct pmv_fabric,
						  fabric_fid);
	struct fi_eq_attr core_attr = *attr;
	struct pmv_eq *eq;
	int ret;

	ret = pmv_core_wait_set(attr->wait_set, &core_attr.wait_set);
	if (ret)
		return ret;
	eq = calloc(1, sizeof(*eq));
	if (!eq)
		return -FI_ENOMEM;
	ret = fi_eq_open(fab->core, &core_attr, &eq->core, eq);
	if (ret) {
		free(eq);
		return ret;
	}
	pmv_hooks_init(&eq->hooks, NULL); /* of the fabric: no domain */
	eq->eq_fid.fid.fclass = FI_CLASS_EQ;
	eq->eq_fid.fid.context = context;
	eq->eq_fid.fid.ops = &pmv_eq_fi_ops;
	eq->eq_fid.ops = &pmv_eq_ops;
	*eq_fid = &eq->eq_fid;
	return 0;
}
