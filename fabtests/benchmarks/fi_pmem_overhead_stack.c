/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * fi_pmem_overhead: one stack (see fi_pmem_overhead.c): its fabric
 * objects, connection or RDM setup, and the ping-pong it times.
 */
#include "fi_pmem_overhead.h"

/* The stack block b runs on: core, pmemverbs, pmemverbs, core, ... */
int stack_of_block(long b)
{
	return (int) (((b + 1) / 2) % 2);
}

/* fi_getinfo for one stack: the client names the server, the server its
 * port. */
static int stack_getinfo(struct stack *s, const struct options *o,
			 const char *port)
{
	struct fi_info *hints = fi_allocinfo();
	int ret;

	if (!hints)
		return -FI_ENOMEM;
	hints->ep_attr->type = o->ep_type;
	hints->caps = FI_MSG;
	hints->mode = FI_CONTEXT | FI_CONTEXT2;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_ALLOCATED |
				      FI_MR_PROV_KEY | FI_MR_VIRT_ADDR;
	hints->domain_attr->threading = FI_THREAD_DOMAIN;
	hints->fabric_attr->prov_name = strdup(s->prov);
	ret = fi_getinfo(PM_FI_VERSION, o->server ? o->server : o->listen,
			 port, o->server ? 0 : FI_SOURCE, hints, &s->info);
	fi_freeinfo(hints);
	if (ret)
		pm_complain("fi_getinfo(%s, %s): %s", s->prov,
			    fi_tostr(&o->ep_type, FI_TYPE_EP_TYPE),
			    fi_strerror(-ret));
	return ret;
}

/* Fabric, domain, CQ and (MSG) EQ or (RDM) AV, and the message buffers. */
int stack_open(struct stack *s, const struct options *o,
	       const char *port)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_CONTEXT,
				      .wait_obj = FI_WAIT_NONE, .size = 64 };
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_UNSPEC };
	struct fi_av_attr av_attr = { .type = FI_AV_MAP };
	size_t len = 4096;
	int i, ret;

	for (i = 0; i < o->nsizes; i++)
		len = o->sizes[i] + 4096 > len ? o->sizes[i] + 4096 : len;
	s->rx_len = len;
	len *= 2;

	if ((ret = stack_getinfo(s, o, port)) ||
	    (ret = fi_fabric(s->info->fabric_attr, &s->fabric, NULL)) ||
	    (ret = fi_domain(s->fabric, s->info, &s->domain, NULL)) ||
	    (ret = fi_cq_open(s->domain, &cq_attr, &s->cq, NULL)))
		return pm_check(ret, "opening a stack");
	ret = o->ep_type == FI_EP_MSG ?
	      fi_eq_open(s->fabric, &eq_attr, &s->eq, NULL) :
	      fi_av_open(s->domain, &av_attr, &s->av, NULL);
	if (ret)
		return pm_check(ret, "opening the EQ or AV");
	s->inject_size = s->info->tx_attr->inject_size;
	s->tx = aligned_alloc(4096, len);
	if (!s->tx)
		return pm_check(-FI_ENOMEM, "allocating buffers");
	memset(s->tx, 0xa5, len);
	s->rx = s->tx + s->rx_len;
	if (!(s->info->domain_attr->mr_mode & FI_MR_LOCAL))
		return 0;
	ret = fi_mr_reg(s->domain, s->tx, len, FI_SEND | FI_RECV, 0,
			PM_LOCAL_MR_KEY, 0, &s->mr, NULL);
	s->desc = ret ? NULL : fi_mr_desc(s->mr);
	return pm_check(ret, "registering the buffers");
}

/* Opens the endpoint from info, binds it and enables it. */
static int stack_endpoint(struct stack *s, struct fi_info *info)
{
	int ret = fi_endpoint(s->domain, info, &s->ep, NULL);

	if (!ret)
		ret = fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV);
	if (!ret)
		ret = s->eq ? fi_ep_bind(s->ep, &s->eq->fid, 0) :
			      fi_ep_bind(s->ep, &s->av->fid, 0);
	if (!ret)
		ret = fi_enable(s->ep);
	return pm_check(ret, "opening the endpoint");
}

static int post_recv(struct stack *s)
{
	return pm_check(fi_recv(s->ep, s->rx, s->rx_len, s->desc, s->peer,
				&s->rx_ctx), "fi_recv");
}

/* Reads one CQ entry, if any: notes a completed receive or send. */
static int poll_once(struct stack *s)
{
	struct fi_cq_entry e;
	ssize_t n = fi_cq_read(s->cq, &e, 1);

	if (n == 1) {
		s->rx_done |= e.op_context == &s->rx_ctx;
		s->tx_busy &= e.op_context != &s->tx_ctx;
		return 0;
	}
	if (n == -FI_EAVAIL)
		return pm_report_cq_error(s->cq, "ping-pong");
	return n == -FI_EAGAIN ? 0 : pm_check(n, "fi_cq_read");
}

/* True (after a message) once the deadline passed; checked every 1024. */
static bool expired(struct stack *s, unsigned *spins, int64_t deadline)
{
	if ((++*spins & 1023) || !pm_past(deadline))
		return false;
	pm_complain("%s: no progress within 10 s", s->prov);
	return true;
}

/*
 * Sends size bytes: fi_inject up to the inject size, else fi_send, once
 * the stack's previous send completed; while the provider says -FI_EAGAIN
 * (ofi_rxm connecting), its CQ is read.
 */
static int post_send(struct stack *s, size_t size)
{
	int64_t deadline = pm_now_ns() + PM_OP_TIMEOUT_NS;
	unsigned spins = 0;
	ssize_t ret;

	if (s->tx_busy && (ret = wait_cq(s, false)))
		return (int) ret;
	s->tx_busy = size > s->inject_size;
	for (;;) {
		ret = s->tx_busy ?
		      fi_send(s->ep, s->tx, size, s->desc, s->peer, &s->tx_ctx) :
		      fi_inject(s->ep, s->tx, size, s->peer);
		if (ret != -FI_EAGAIN)
			return pm_check(ret, "sending");
		if ((ret = poll_once(s)))
			return (int) ret;
		if (expired(s, &spins, deadline))
			return -FI_ETIMEDOUT;
	}
}

/*
 * Spins on the CQ until the receive (want_rx; its completion is consumed)
 * or else the send completed.  While setting up it sleeps between polls: a process running SCHED_FIFO
 * on one CPU would otherwise starve the provider's own threads (ofi_rxm's
 * connection setup).
 */
int wait_cq(struct stack *s, bool want_rx)
{
	int64_t deadline = pm_now_ns() + PM_OP_TIMEOUT_NS;
	unsigned spins = 0;
	int ret;

	while (want_rx ? !s->rx_done : s->tx_busy) {
		if ((ret = poll_once(s)))
			return ret;
		if (expired(s, &spins, deadline))
			return -FI_ETIMEDOUT;
		if (s->setting_up)
			usleep(100);
	}
	s->rx_done &= !want_rx;
	return 0;
}

/* MSG server: listen, accept one connection. */
static int msg_accept(struct stack *s)
{
	struct fi_eq_cm_entry entry;
	int ret;

	if ((ret = fi_passive_ep(s->fabric, s->info, &s->pep, NULL)) ||
	    (ret = fi_pep_bind(s->pep, &s->eq->fid, 0)) ||
	    (ret = fi_listen(s->pep)))
		return pm_check(ret, "listening");
	ret = pm_wait_for_cm_event(s->eq, FI_CONNREQ, PM_CM_TIMEOUT_NS * 3,
				   "connection request", &entry, 0);
	if (ret)
		return ret;
	ret = stack_endpoint(s, entry.info);
	fi_freeinfo(entry.info);
	if (ret || (ret = post_recv(s)))
		return ret;
	if ((ret = fi_accept(s->ep, NULL, 0)))
		return pm_check(ret, "fi_accept");
	return pm_wait_for_cm_event(s->eq, FI_CONNECTED, PM_CM_TIMEOUT_NS,
				    "connection", &entry, 0);
}

/* MSG client: connect, retrying while the server is not listening. */
static int msg_connect(struct stack *s)
{
	int64_t deadline = pm_now_ns() + PM_CM_TIMEOUT_NS;
	struct fi_eq_cm_entry entry;
	int ret;

	for (;;) {
		if ((ret = stack_endpoint(s, s->info)))
			return ret;
		ret = fi_connect(s->ep, s->info->dest_addr, NULL, 0);
		if (!ret)
			ret = pm_wait_for_cm_event(s->eq, FI_CONNECTED,
						   PM_CM_TIMEOUT_NS, "connection",
						   &entry, FI_ECONNREFUSED);
		/* the receive goes on the endpoint that connected: a refused
		 * one's would leave a canceled entry in the CQ */
		if (!ret)
			return post_recv(s);
		if (pm_past(deadline))
			return pm_check(ret, "connecting");
		fi_close(&s->ep->fid);
		s->ep = NULL;
		pm_sleep_ms(PM_RETRY_INTERVAL_MS);
	}
}

/*
 * RDM: the client sends its address, the server inserts it and answers, so
 * that each stack's connection is up before the next stack is set up.
 */
static int rdm_setup(struct stack *s, bool client)
{
	size_t len = 256;
	int ret;

	s->peer = FI_ADDR_UNSPEC;
	s->setting_up = true;
	if ((ret = stack_endpoint(s, s->info)) || (ret = post_recv(s)))
		return ret;
	if (!client) {
		if ((ret = wait_cq(s, true)))
			return ret;
		if (fi_av_insert(s->av, s->rx, 1, &s->peer, 0, NULL) != 1)
			return pm_check(-FI_EINVAL, "inserting the client");
		if ((ret = post_recv(s)) || (ret = post_send(s, 8)) ||
		    (ret = wait_cq(s, false)))
			return ret;
		s->setting_up = false;
		return 0;
	}
	if (fi_av_insert(s->av, s->info->dest_addr, 1, &s->peer, 0, NULL) != 1)
		return pm_check(-FI_EINVAL, "inserting the server");
	if ((ret = fi_getname(&s->ep->fid, s->tx, &len)))
		return pm_check(ret, "fi_getname");
	if ((ret = post_send(s, len)) || (ret = wait_cq(s, true)))
		return ret;
	s->setting_up = false;
	return post_recv(s);
}

int stack_connect(struct stack *s, const struct options *o)
{
	if (o->ep_type == FI_EP_RDM)
		return rdm_setup(s, o->server != NULL);
	return o->server ? msg_connect(s) : msg_accept(s);
}

void stack_close(struct stack *s)
{
	pm_close_fid(s->ep ? &s->ep->fid : NULL, "endpoint");
	pm_close_fid(s->pep ? &s->pep->fid : NULL, "passive endpoint");
	pm_close_fid(s->mr ? &s->mr->fid : NULL, "memory region");
	pm_close_fid(s->av ? &s->av->fid : NULL, "address vector");
	pm_close_fid(s->cq ? &s->cq->fid : NULL, "CQ");
	pm_close_fid(s->eq ? &s->eq->fid : NULL, "EQ");
	pm_close_fid(s->domain ? &s->domain->fid : NULL, "domain");
	pm_close_fid(s->fabric ? &s->fabric->fid : NULL, "fabric");
	fi_freeinfo(s->info);
	free(s->tx);
}

/* One round trip on the client (its time in *ns), one echo on the server. */
int ping(struct stack *s, size_t size, bool client, int64_t *ns)
{
	int64_t start = pm_now_ns();
	int ret;

	if (client && (ret = post_send(s, size)))
		return ret;
	if ((ret = wait_cq(s, true)) || (ret = post_recv(s)))
		return ret;
	if (!client)
		return post_send(s, size);
	*ns = pm_now_ns() - start;
	return 0;
}
