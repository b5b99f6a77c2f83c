/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: opening and closing a completion queue, and its ops table.
 *
 * The reads are pmv_cq.c's, the blocking reads and waits pmv_cq_wait.c's;
 * this file ties them to the CQ the application opens (no file below it
 * calls into it).
 */
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pmv_objects.h"

static const char *pmv_cq_strerror(struct fid_cq *cq, int prov_errno,
				   const void *err_data, char *buf, size_t len)
{
	const char *msg = pmv_strerror(prov_errno);

	if (!msg)
		return fi_cq_strerror(pmv_cq(cq)->core, prov_errno, err_data,
				      buf, len);
	if (buf && len) {
		strncpy(buf, msg, len - 1);
		buf[len - 1] = '\0';
	}
	return msg;
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

/*
 * Counts the pmem endpoints bound; the first one makes the CQ filter for
 * good (pmv_cq_plain): their context-less acks may fail after they closed.
 */
void pmv_cq_ref_pmem(struct pmv_cq *cq, int delta)
{
	if (delta > 0)
		__atomic_store_n(&cq->pmem_once, true, __ATOMIC_RELAXED);
	__atomic_fetch_add(&cq->pmem_refs, delta, __ATOMIC_RELAXED);
}

static int pmv_cq_close(struct fid *fid)
{
	struct pmv_cq *cq = pmv_container_of(fid, struct pmv_cq, cq_fid.fid);
	int ret = pmv_close_core(&cq->core->fid, "completion queue");

	if (ret)
		return ret;
	pmv_wait_leave(cq->app_set, cq);
	if (cq->core_wait)
		(void) pmv_close_core(&cq->core_wait->fid, "wait set");
	pmv_iop_pool_fini(&cq->iops);
	while (cq->aux_count) {
		if (cq->aux[cq->aux_head].is_error)
			free(cq->aux[cq->aux_head].entry.err_data);
		cq->aux_head = (cq->aux_head + 1) % cq->aux_cap;
		cq->aux_count--;
	}
	free(cq->aux);
	pthread_mutex_destroy(&cq->lock);
	pthread_mutex_destroy(&cq->aux_lock);
	pmv_hooks_fini(&cq->hooks);
	pmv_domain_release(cq->domain, PMV_DOM_CQ);
	free(cq);
	return 0;
}

/*
 * The core CQ's one fd as the list FI_GETWAIT gives for FI_WAIT_POLLFD
 * (fi_poll(3), struct fi_wait_pollfd): the list never changes; with no
 * room (nfds 0 asks for the change index) -FI_ETOOSMALL and the room it
 * needs.
 */
static int pmv_cq_fd_as_list(const struct pmv_cq *cq,
			     struct fi_wait_pollfd *list)
{
	size_t room = list->nfds;

	list->change_index = 0;
	list->nfds = 1;
	if (!room)
		return -FI_ETOOSMALL;
	list->fd[0] = (struct pollfd) { .fd = cq->wait_fd, .events = POLLIN };
	return 0;
}

/*
 * fi_control: the core's, except that a CQ opened with FI_WAIT_NONE has
 * no wait object for the application even though its core CQ has one,
 * and that a core CQ on a wait set of ours still has the list of fds the
 * application asked for (the set answers FI_GETWAIT, not FI_GETWAITOBJ).
 */
static int pmv_cq_control(struct fid *fid, int command, void *arg)
{
	struct pmv_cq *cq = pmv_container_of(fid, struct pmv_cq, cq_fid.fid);

	if (cq->app_wait_none && command == FI_GETWAIT)
		return -FI_ENOSYS;
	if ((cq->core_wait || cq->app_pollfd_of_fd) &&
	    command == FI_GETWAITOBJ) {
		*(enum fi_wait_obj *) arg = FI_WAIT_POLLFD;
		return 0;
	}
	if (cq->app_pollfd_of_fd && command == FI_GETWAIT)
		return pmv_cq_fd_as_list(cq, arg);
	return pmv_control_core(fid, command, arg);
}

static struct fi_ops pmv_cq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = pmv_cq_close,
	.bind = pmv_no_bind,
	.control = pmv_cq_control,
	.ops_open = pmv_ops_open_core,
	.ops_set = pmv_no_ops_set,
};

/*
 * A pmem CQ over tcp that waits on a list of fds gets its core CQ on a
 * wait set of its own (the same list), so that fi_cq_sread can wait in
 * fi_wait, which returns when any fd fires (see pmv_cq_wait_signal).
 * Without one (the core refuses) it waits as before.
 */
static void pmv_cq_open_wait_set(const struct pmv_domain *dom,
				 struct fi_cq_attr *core_attr, struct pmv_cq *cq)
{
	struct fi_wait_attr wait_attr = { .wait_obj = FI_WAIT_POLLFD };
	struct fid_fabric *fabric = dom->fabric ? dom->fabric->core : NULL;
	int ret = -FI_ENOSYS;

	if (!fabric || !fabric->ops->wait_open)
		return;
#if PMV_HAVE_WAIT_SETS /* libfabric 2.x deprecated them: its sread instead */
	ret = fi_wait_open(fabric, &wait_attr, &cq->core_wait);
#else
	(void) wait_attr;
#endif
	if (ret) {
		PMV_INFO(FI_LOG_CQ, "the core opened no wait set (%s): "
			 "fi_cq_sread waits in the core's sread\n",
			 fi_strerror(-ret));
		cq->core_wait = NULL;
		return;
	}
	core_attr->wait_obj = FI_WAIT_SET;
	core_attr->wait_set = cq->core_wait;
}

/*
 * The agent of a pmem domain over tcp sleeps on its endpoints' core CQ
 * fds, which the tcp core makes readable when bytes arrive for a bound
 * endpoint (a commit request is a plain RMA write: no completion).  Such
 * a domain's core CQs get an fd when the application asked for none (it
 * never waits on them; the agent does).  Other wait objects stay the
 * application's choice: an fd on a CQ the application waits on in
 * fi_cq_sread cost a send commit about 25 us here (tcp signals it on every
 * completion), and tcp's FI_WAIT_UNSPEC (a list of sockets) cannot be
 * slept on, so there the agent naps; that list (FI_WAIT_UNSPEC or
 * FI_WAIT_POLLFD) is kept on a wait set of ours.  Where there is none
 * (libfabric 2.x), a FI_WAIT_POLLFD CQ gets a core CQ of FI_WAIT_FD and
 * that fd is its list (pmv_cq_fd_as_list): on 2.1's list a look after a
 * wake found fds that only the core's sread drains, which returns only
 * for a completion, not for an ack's bytes: an initiator in fi_cq_sread
 * had a commit p99 of 1.1 ms back to back, p50 1.3-4.0 read round trips
 * after 2 ms idle.
 */
static void pmv_cq_choose_wait(const struct pmv_domain *dom,
			       const struct fi_cq_attr *attr,
			       struct fi_cq_attr *core_attr, struct pmv_cq *cq)
{
	if (!(dom->caps & FI_RMA_PMEM) || dom->transport != PMV_TRANSPORT_TCP)
		return;
	if (attr->wait_obj == FI_WAIT_NONE) {
		core_attr->wait_obj = FI_WAIT_FD;
		cq->app_wait_none = true;
	} else if (attr->wait_obj == FI_WAIT_UNSPEC ||
		   attr->wait_obj == FI_WAIT_POLLFD) {
		pmv_cq_open_wait_set(dom, core_attr, cq);
		if (!cq->core_wait && attr->wait_obj == FI_WAIT_POLLFD) {
			core_attr->wait_obj = FI_WAIT_FD;
			cq->app_pollfd_of_fd = true;
		}
	}
}

/* The core CQ's fd if its wait object is one, else -1 (notes a list). */
static int pmv_cq_core_fd(struct pmv_cq *cq)
{
	enum fi_wait_obj obj = FI_WAIT_NONE;
	int fd = -1;

	if (cq->core_wait) {
		cq->wait_pollfd = true;
		return -1;
	}
	if (fi_control(&cq->core->fid, FI_GETWAITOBJ, &obj))
		return -1;
	cq->wait_pollfd = obj == FI_WAIT_POLLFD;
	if (obj != FI_WAIT_FD || fi_control(&cq->core->fid, FI_GETWAIT, &fd))
		return -1;
	return fd;
}

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
	cq->domain = dom;
	cq->core_used = true; /* the agent's first sleep asks it */
	pmv_cq_choose_wait(dom, attr, &core_attr, cq);
	ret = fi_cq_open(dom->core, &core_attr, &cq->core, cq);
	if (ret) {
		if (cq->core_wait)
			(void) fi_close(&cq->core_wait->fid);
		free(cq);
		return ret;
	}
	pmv_domain_hold(dom, PMV_DOM_CQ); /* pmv_cq_close releases it */
	cq->wait_fd = pmv_cq_core_fd(cq);
	pthread_mutex_init(&cq->lock, NULL);
	pthread_mutex_init(&cq->aux_lock, NULL);
	pmv_hooks_init(&cq->hooks, dom);
	pmv_iop_pool_init(&cq->iops);
	cq->format = attr->format ? attr->format : FI_CQ_FORMAT_CONTEXT;
	cq->cq_fid.fid.fclass = FI_CLASS_CQ;
	cq->cq_fid.fid.context = context;
	cq->cq_fid.fid.ops = &pmv_cq_fi_ops;
	cq->cq_fid.ops = &pmv_cq_ops;
	/* last: fi_wait on the set may look at it from now on */
	ret = pmv_wait_join(attr->wait_obj == FI_WAIT_SET ? attr->wait_set :
			    NULL, cq, NULL, &cq->app_set);
	if (ret) {
		(void) pmv_cq_close(&cq->cq_fid.fid);
		return ret;
	}
	*cq_fid = &cq->cq_fid;
	return 0;
}
