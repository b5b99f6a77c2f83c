/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Unit tests: events and connections of pmemverbs objects over tcp on
 * 127.0.0.1 in one process (objects_fixture.h): application events pass
 * through, CM events name pmemverbs fids, a connected endpoint is served
 * by its CQ, EQ and counter reads, RMA counters bind to it, and a
 * connection request from a foreign (plain tcp) peer is delivered.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "objects_fixture.h"
#include "target/pmv_target.h"

TestSuite(connect, .init = open_fixture, .fini = close_fixture);

Test(connect, application_events_pass_through_untouched)
{
	struct fi_eq_entry in = { .fid = &fx.domain->fid, .context = &fx }, out;
	uint32_t event;

	cr_assert_eq(fi_eq_write(fx.eq, FI_NOTIFY, &in, sizeof(in), 0),
		     (ssize_t) sizeof(in));
	cr_assert_eq(fi_eq_read(fx.eq, &event, &out, sizeof(out), 0),
		     (ssize_t) sizeof(out));
	cr_assert_eq(event, FI_NOTIFY);
	cr_assert_eq(out.fid, &fx.domain->fid);
	cr_assert_eq(out.context, &fx);
}

Test(connect, cm_events_name_pmemverbs_fids_and_info)
{
	struct { struct fi_eq_cm_entry e; char data[64]; } entry;
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_CONTEXT };
	struct fid_cq *cq;
	struct fid_pep *pep;
	struct fid_ep *client, *server;
	char addr[128];
	size_t addrlen = sizeof(addr);

	pep = listen_on_loopback(addr, &addrlen);

	cr_assert_eq(fi_cq_open(fx.domain, &cq_attr, &cq, NULL), 0);
	client = open_bound_ep(fx.info, cq);
	cr_assert_eq(fi_connect(client, addr, "hello", 6), 0);

	cr_assert_eq(read_cm_event(&entry.e, sizeof(entry)), FI_CONNREQ);
	cr_assert_eq(entry.e.fid, &pep->fid);
	cr_assert_str_eq(entry.e.info->fabric_attr->prov_name, PMV_PROV_NAME);
	cr_assert_eq(entry.e.info->handle->fclass, FI_CLASS_CONNREQ);
	cr_assert_str_eq((const char *) entry.e.data, "hello");

	server = open_bound_ep(entry.e.info, cq);
	fi_freeinfo(entry.e.info);
	cr_assert_eq(fi_accept(server, NULL, 0), 0);

	cr_assert_eq(read_cm_event(&entry.e, sizeof(entry)), FI_CONNECTED);
	cr_assert(entry.e.fid == &server->fid || entry.e.fid == &client->fid);
	cr_assert_eq(read_cm_event(&entry.e, sizeof(entry)), FI_CONNECTED);
	cr_assert(entry.e.fid == &server->fid || entry.e.fid == &client->fid);

	/* endpoints open: the domain stays, its agent with it (it was
	 * stopped first, and the endpoints' close then crashed) */
	cr_assert_eq(fi_close(&fx.domain->fid), -FI_EBUSY);
	cr_assert_eq(fi_close(&client->fid), 0);
	cr_assert_eq(fi_close(&server->fid), 0);
	cr_assert_eq(fi_close(&pep->fid), 0);
	cr_assert_eq(fi_close(&cq->fid), 0);
}

/* The hook lists whose reads serve a pmem endpoint's requests. */
static struct pmv_hooks **serve_lists(struct fid_ep *ep)
{
	return pmv_container_of(ep, struct pmv_ep, ep_fid)->tgt->serve_on;
}

/*
 * Once connected, a target endpoint's requests are served by reads of its
 * CQ, its EQ and its FI_SEND|FI_RECV counter (one hook each), through the
 * real fi_ep_bind; bound objects refuse to close while it is open, and
 * its close takes every hook off.
 */
Test(connect, a_connected_endpoint_is_served_by_its_cq_eq_and_counter_reads)
{
	struct { struct fi_eq_cm_entry e; char data[64]; } entry;
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_CONTEXT };
	struct fi_cntr_attr cntr_attr = { .events = FI_CNTR_EVENTS_COMP,
					  .wait_obj = FI_WAIT_UNSPEC };
	struct fid_cntr *cntr;
	struct fid_cq *cq;
	struct fid_pep *pep;
	struct fid_ep *client, *server;
	struct pmv_hooks **lists;
	char addr[128];
	size_t addrlen = sizeof(addr);

	pep = listen_on_loopback(addr, &addrlen);
	cr_assert_eq(fi_cq_open(fx.domain, &cq_attr, &cq, NULL), 0);
	cr_assert_eq(fi_cntr_open(fx.domain, &cntr_attr, &cntr, NULL), 0);
	client = open_bound_ep(fx.info, cq);
	cr_assert_eq(fi_connect(client, addr, NULL, 0), 0);
	cr_assert_eq(read_cm_event(&entry.e, sizeof(entry)), FI_CONNREQ);
	cr_assert_eq(fi_endpoint(fx.domain, entry.e.info, &server, NULL), 0);
	fi_freeinfo(entry.e.info);
	cr_assert_eq(fi_ep_bind(server, &fx.eq->fid, 0), 0);
	cr_assert_eq(fi_ep_bind(server, &cq->fid, FI_TRANSMIT | FI_RECV), 0);
	cr_assert_eq(fi_ep_bind(server, &cntr->fid, FI_SEND | FI_RECV), 0);
	cr_assert_eq(fi_enable(server), 0);
	cr_assert_eq(fi_accept(server, NULL, 0), 0);
	cr_assert_eq(read_cm_event(&entry.e, sizeof(entry)), FI_CONNECTED);
	cr_assert_eq(read_cm_event(&entry.e, sizeof(entry)), FI_CONNECTED);

	lists = serve_lists(server);
	cr_assert_eq(lists[PMV_SERVE_RX_CQ],
		     &pmv_container_of(cq, struct pmv_cq, cq_fid)->hooks);
	cr_assert_null(lists[PMV_SERVE_TX_CQ], "one CQ, one hook");
	cr_assert_eq(lists[PMV_SERVE_EQ],
		     &pmv_container_of(fx.eq, struct pmv_eq, eq_fid)->hooks);
	cr_assert_eq(lists[PMV_SERVE_SEND_CNTR],
		     &pmv_container_of(cntr, struct pmv_cntr, cntr_fid)->hooks);
	cr_assert_null(lists[PMV_SERVE_RECV_CNTR], "one counter, one hook");
	cr_assert_eq(fi_close(&cntr->fid), -FI_EBUSY);
	cr_assert_eq(fi_close(&fx.eq->fid), -FI_EBUSY);

	cr_assert_eq(fi_close(&server->fid), 0);
	cr_assert_null(pmv_container_of(cntr, struct pmv_cntr,
					cntr_fid)->hooks.head);
	cr_assert_eq(fi_close(&client->fid), 0);
	cr_assert_null(pmv_container_of(fx.eq, struct pmv_eq,
					eq_fid)->hooks.head);
	cr_assert_eq(fi_close(&cntr->fid), 0);
	cr_assert_eq(fi_close(&pep->fid), 0);
	cr_assert_eq(fi_close(&cq->fid), 0);
}

/*
 * FI_WRITE, FI_READ and FI_REMOTE_WRITE counters bind to a pmem endpoint
 * and are counted by pmemverbs (its hook on the counter, the counted RMA
 * calls), never by the core; FI_REMOTE_READ is refused; the counter
 * cannot close under the endpoint.
 */
Test(connect, rma_counters_bind_to_a_pmem_endpoint_and_are_counted_here)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_CONTEXT };
	struct fi_cntr_attr cntr_attr = { .events = FI_CNTR_EVENTS_COMP };
	struct fid_cntr *cntr, *rread;
	struct fid_cq *cq;
	struct fid_ep *ep;
	struct pmv_ep *pep;

	cr_assert(fx.info->caps & FI_RMA_PMEM);
	cr_assert_eq(fi_cq_open(fx.domain, &cq_attr, &cq, NULL), 0);
	cr_assert_eq(fi_cntr_open(fx.domain, &cntr_attr, &cntr, NULL), 0);
	cr_assert_eq(fi_cntr_open(fx.domain, &cntr_attr, &rread, NULL), 0);
	cr_assert_eq(fi_endpoint(fx.domain, fx.info, &ep, NULL), 0);
	cr_assert_eq(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV), 0);
	cr_assert_eq(fi_ep_bind(ep, &cntr->fid,
				FI_WRITE | FI_READ | FI_REMOTE_WRITE), 0);
	cr_assert_eq(fi_ep_bind(ep, &rread->fid, FI_REMOTE_READ),
		     -FI_EOPNOTSUPP);
	cr_assert_eq(fi_ep_bind(ep, &rread->fid, FI_SEND | FI_WRITE),
		     -FI_EINVAL, "a second FI_WRITE counter");
	cr_assert_eq(fi_close(&rread->fid), 0, "refused binds hold nothing");
	pep = pmv_container_of(ep, struct pmv_ep, ep_fid);
	cr_assert_eq(pep->ep_fid.rma, &pmv_rma_pmem_cntr_ops);
	cr_assert_not_null(pmv_container_of(cntr, struct pmv_cntr,
					    cntr_fid)->hooks.head);
	cr_assert_eq(fi_close(&cntr->fid), -FI_EBUSY);
	cr_assert_eq(fi_close(&ep->fid), 0);
	cr_assert_null(pmv_container_of(cntr, struct pmv_cntr,
					cntr_fid)->hooks.head);
	cr_assert_eq(fi_close(&cntr->fid), 0);
	cr_assert_eq(fi_close(&cq->fid), 0);
}

/* A plain tcp-core client (no pmemverbs CM header) connecting to pep. */
struct foreign_client {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *eq;
	struct fid_cq *cq;
	struct fid_ep *ep;
};

static void foreign_connect(struct foreign_client *fc, const void *addr,
			    const void *data, size_t len)
{
	struct fi_info *hints = fi_allocinfo();
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_UNSPEC };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_CONTEXT };

	hints->ep_attr->type = FI_EP_MSG;
	hints->caps = FI_MSG;
	hints->fabric_attr->prov_name = strdup("tcp");
	cr_assert_eq(fi_getinfo(PMV_FI_VERSION, "127.0.0.1", NULL, 0, hints,
				&fc->info), 0);
	fi_freeinfo(hints);
	cr_assert_eq(fi_fabric(fc->info->fabric_attr, &fc->fabric, NULL), 0);
	cr_assert_eq(fi_domain(fc->fabric, fc->info, &fc->domain, NULL), 0);
	cr_assert_eq(fi_eq_open(fc->fabric, &eq_attr, &fc->eq, NULL), 0);
	cr_assert_eq(fi_cq_open(fc->domain, &cq_attr, &fc->cq, NULL), 0);
	cr_assert_eq(fi_endpoint(fc->domain, fc->info, &fc->ep, NULL), 0);
	cr_assert_eq(fi_ep_bind(fc->ep, &fc->eq->fid, 0), 0);
	cr_assert_eq(fi_ep_bind(fc->ep, &fc->cq->fid, FI_TRANSMIT | FI_RECV), 0);
	cr_assert_eq(fi_enable(fc->ep), 0);
	cr_assert_eq(fi_connect(fc->ep, addr, data, len), 0);
}

static void foreign_close(struct foreign_client *fc)
{
	cr_assert_eq(fi_close(&fc->ep->fid), 0);
	cr_assert_eq(fi_close(&fc->cq->fid), 0);
	cr_assert_eq(fi_close(&fc->eq->fid), 0);
	cr_assert_eq(fi_close(&fc->domain->fid), 0);
	cr_assert_eq(fi_close(&fc->fabric->fid), 0);
	fi_freeinfo(fc->info);
}

/*
 * Reads the fixture's EQ with a buffer of exactly one CM entry (no room
 * for CM data) while progressing the client's EQ; at most about 5 s.
 */
static ssize_t read_bare_cm_event(struct foreign_client *fc,
				  struct fi_eq_cm_entry *entry, uint32_t *event)
{
	struct fi_eq_cm_entry client_entry;
	uint32_t client_event;
	ssize_t ret = -FI_EAGAIN;
	int i;

	for (i = 0; i < 5000 && ret == -FI_EAGAIN; i++) {
		(void) fi_eq_read(fc->eq, &client_event, &client_entry,
				  sizeof(client_entry), 0);
		ret = fi_eq_read(fx.eq, event, entry, sizeof(*entry), 0);
		if (ret == -FI_EAGAIN)
			usleep(1000);
	}
	return ret;
}

/* Issue 13 #1: the CM data of a peer that is not pmemverbs does not fit a
 * bare CM entry; the request must still be delivered (data truncated, as
 * the core does), never consumed and lost. */
Test(connect, connreq_from_a_foreign_peer_is_delivered)
{
	static const char junk[20] = "not a pmemverbs hdr";
	struct fi_eq_cm_entry entry;
	struct foreign_client fc;
	struct fid_pep *pep;
	uint32_t event = 0;
	char addr[128];
	size_t addrlen = sizeof(addr);
	ssize_t ret;

	pep = listen_on_loopback(addr, &addrlen);

	foreign_connect(&fc, addr, junk, sizeof(junk));
	ret = read_bare_cm_event(&fc, &entry, &event);
	cr_assert_eq(ret, (ssize_t) sizeof(entry), "fi_eq_read: %zd (%s)", ret,
		     fi_strerror((int) -ret));
	cr_assert_eq(event, FI_CONNREQ);
	cr_assert_eq(entry.fid, &pep->fid);
	cr_assert_eq(fi_reject(pep, entry.info->handle, NULL, 0), 0);
	fi_freeinfo(entry.info);
	foreign_close(&fc);
	cr_assert_eq(fi_close(&pep->fid), 0);
}
