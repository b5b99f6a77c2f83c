/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Unit tests: pmemverbs objects wrap the core's, over tcp on 127.0.0.1 in
 * one process (the two-process behaviour is in test/integration).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <libpmem2.h>

#include "objects_fixture.h"

TestSuite(objects, .init = open_fixture, .fini = close_fixture);


Test(objects, every_wrapper_maps_to_its_core_object)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_CONTEXT };
	struct fi_cntr_attr cntr_attr = { .events = FI_CNTR_EVENTS_COMP };
	struct fi_av_attr av_attr = { .type = FI_AV_MAP };
	struct fid_cq *cq;
	struct fid_cntr *cntr;
	struct fid_av *av;
	int ctx;

	cr_assert_eq(fi_cq_open(fx.domain, &cq_attr, &cq, &ctx), 0);
	cr_assert_eq(fi_cntr_open(fx.domain, &cntr_attr, &cntr, &ctx), 0);
	cr_assert_eq(fi_av_open(fx.domain, &av_attr, &av, &ctx), 0);
	cr_assert_eq(cq->fid.context, &ctx);
	cr_assert_eq(pmv_app_fid(pmv_core_fid(&cq->fid)), &cq->fid);
	cr_assert_eq(pmv_app_fid(pmv_core_fid(&cntr->fid)), &cntr->fid);
	cr_assert_eq(pmv_app_fid(pmv_core_fid(&av->fid)), &av->fid);
	cr_assert_eq(pmv_app_fid(pmv_core_fid(&fx.eq->fid)), &fx.eq->fid);
	cr_assert_eq(fi_close(&av->fid), 0);
	cr_assert_eq(fi_close(&cntr->fid), 0);
	cr_assert_eq(fi_close(&cq->fid), 0);
}

/*
 * An FI_RMA_PMEM endpoint on a domain opened without FI_RMA_PMEM is
 * refused: that core domain was not made thread-safe, and a pmem endpoint
 * brings an agent thread that would call into it beside the application.
 */
Test(objects, a_pmem_endpoint_on_a_domain_opened_without_fi_rma_pmem_is_refused)
{
	struct fi_info *hints = fi_allocinfo(), *plain;
	struct fid_domain *domain;
	struct fid_ep *ep = NULL;

	cr_assert(fx.info->caps & FI_RMA_PMEM);
	hints->caps = FI_MSG | FI_RMA;
	hints->ep_attr->type = FI_EP_MSG;
	cr_assert_eq(pmv_getinfo(PMV_FI_VERSION, "127.0.0.1", NULL, 0, hints,
				 &plain), 0);
	cr_assert(!(plain->caps & FI_RMA_PMEM));
	cr_assert_eq(fi_domain(fx.fabric, plain, &domain, NULL), 0);
	cr_assert_eq(fi_endpoint(domain, fx.info, &ep, NULL), -FI_EOPNOTSUPP);
	cr_assert_null(pmv_container_of(domain, struct pmv_domain,
					domain_fid)->agent,
		       "an agent thread on a domain that is not thread-safe");
	cr_assert_eq(fi_close(&domain->fid), 0);
	fi_freeinfo(plain);
	fi_freeinfo(hints);
}

Test(objects, a_foreign_fid_is_refused)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_CONTEXT };
	struct pmv_domain *dom = pmv_container_of(fx.domain, struct pmv_domain,
						  domain_fid);
	struct fid_cq *core_cq;
	struct fid_ep *ep;

	cr_assert_eq(fi_cq_open(dom->core, &cq_attr, &core_cq, NULL), 0);
	cr_assert_null(pmv_core_fid(&core_cq->fid));
	cr_assert_eq(fi_endpoint(fx.domain, fx.info, &ep, NULL), 0);
	cr_assert_eq(fi_ep_bind(ep, &core_cq->fid, FI_TRANSMIT), -FI_EINVAL);
	cr_assert_eq(fi_close(&ep->fid), 0);
	cr_assert_eq(fi_close(&core_cq->fid), 0);
}

/*
 * The core's extension ops would be handed pmemverbs's fids (ofi_rxm's
 * flow control over verbs corrupted the heap that way): refused; pmemverbs's
 * own domain ops are there.
 */
Test(objects, core_extension_ops_are_not_passed_through)
{
	struct fi_pmem_ops_domain *pmem = NULL;
	void *ops = NULL;

	cr_assert_eq(fi_open_ops(&fx.domain->fid, "ofix_flow_ctrl_v1", 0, &ops,
				 NULL), -FI_ENOSYS);
	cr_assert_null(ops);
	cr_assert_eq(fi_open_ops(&fx.eq->fid, "ofix_dynamic_rbuf_v2", 0, &ops,
				 NULL), -FI_ENOSYS);
	cr_assert_eq(fi_open_ops(&fx.domain->fid, FI_PMEM_DOMAIN_OPS, 0,
				 (void **) &pmem, NULL), 0);
	cr_assert_not_null(pmem);
}

Test(objects, mr_publishes_the_core_key_and_desc)
{
	static char buf[4096];
	struct pmv_mr *pmr;
	struct fid_mr *mr;

	cr_assert_eq(fi_mr_reg(fx.domain, buf, sizeof(buf),
			       FI_REMOTE_WRITE | FI_REMOTE_READ, 0, 7, 0, &mr,
			       buf), 0);
	pmr = pmv_container_of(mr, struct pmv_mr, mr_fid);
	cr_assert_eq(fi_mr_key(mr), fi_mr_key(pmr->core));
	cr_assert_eq(fi_mr_desc(mr), fi_mr_desc(pmr->core));
	cr_assert_eq(mr->fid.context, buf);
	cr_assert_eq(fi_close(&mr->fid), 0);
}

/* A libpmem2 map of a fresh 1 MiB file under a forced granularity. */
static struct pmem2_map *pmem2_map_of_temp_file(const char *granularity,
						int *fd)
{
	char path[] = "/tmp/pmv_objects_XXXXXX";
	struct pmem2_config *cfg;
	struct pmem2_source *src;
	struct pmem2_map *map;

	setenv("PMEM2_FORCE_GRANULARITY", granularity, 1);
	*fd = mkstemp(path);
	cr_assert_geq(*fd, 0);
	unlink(path);
	cr_assert_eq(ftruncate(*fd, 1 << 20), 0);
	cr_assert_eq(pmem2_config_new(&cfg), 0);
	cr_assert_eq(pmem2_source_from_fd(&src, *fd), 0);
	cr_assert_eq(pmem2_config_set_required_store_granularity(cfg,
				PMEM2_GRANULARITY_PAGE), 0);
	cr_assert_eq(pmem2_map_new(&map, cfg, src), 0, "%s", pmem2_errormsg());
	pmem2_source_delete(&src);
	pmem2_config_delete(&cfg);
	return map;
}

Test(objects, an_applications_pmem2_map_registers_with_its_granularity)
{
	struct fi_pmem_ops_domain *pmem;
	struct pmem2_map *map;
	struct fid_mr *mr;
	int fd;

	cr_assert_eq(fi_open_ops(&fx.domain->fid, FI_PMEM_DOMAIN_OPS, 0,
				 (void **) &pmem, NULL), 0);
	map = pmem2_map_of_temp_file("cache_line", &fd);
	cr_assert_eq(pmem->mr_reg_pmem2(fx.domain, map, 4096, 65536,
					FI_REMOTE_WRITE, 11, 0, &mr, NULL), 0);
	cr_assert_eq(pmem->mr_profile(mr), FI_PMEM_PROFILE_DMP);
	cr_assert_eq(fi_close(&mr->fid), 0);
	/* past the map's end, or on another provider's domain: refused */
	cr_assert_eq(pmem->mr_reg_pmem2(fx.domain, map, 1 << 20, 1,
					FI_REMOTE_WRITE, 12, 0, &mr, NULL),
		     -FI_EINVAL);
	cr_assert_eq(pmem->mr_reg_pmem2((struct fid_domain *) &fx.eq->fid,
					map, 0, 64, FI_REMOTE_WRITE, 13, 0,
					&mr, NULL), -FI_EINVAL);
	pmem2_map_delete(&map);
	close(fd);
	unsetenv("PMEM2_FORCE_GRANULARITY");
}

/* fi_endpoint with the fixture's info: 0, or the error of its open. */
static int try_open_ep(void)
{
	struct fid_ep *ep;
	int ret = fi_endpoint(fx.domain, fx.info, &ep, NULL);

	if (!ret)
		cr_assert_eq(fi_close(&ep->fid), 0);
	return ret;
}

/*
 * Fault injection at the endpoint's and the region's failure points: the
 * engine's state and inbox allocations, the inbox registration, the
 * application's registration.  Each fails its call with -FI_ENOMEM and
 * leaves the domain working.
 */
Test(objects, a_failed_allocation_or_registration_fails_its_call_only)
{
	static char buf[4096];
	struct fid_mr *mr;

	cr_assert(fx.info->caps & FI_RMA_PMEM, "the fixture needs FI_RMA_PMEM");
	for (int nth = 1; nth <= 2; nth++) { /* engine state, inbox memory */
		pmv_fault_reset();
		pmv_params.fault_alloc = nth;
		cr_assert_eq(try_open_ep(), -FI_ENOMEM, "allocation %d", nth);
		pmv_params.fault_alloc = 0;
		cr_assert_eq(try_open_ep(), 0);
	}
	pmv_fault_reset();
	pmv_params.fault_mr_reg = 1; /* the inbox */
	cr_assert_eq(try_open_ep(), -FI_ENOMEM);
	pmv_params.fault_mr_reg = 2; /* the application's region */
	cr_assert_eq(fi_mr_reg(fx.domain, buf, sizeof(buf), FI_REMOTE_WRITE, 0,
			       21, 0, &mr, NULL), -FI_ENOMEM);
	pmv_params.fault_mr_reg = 0;
	cr_assert_eq(fi_mr_reg(fx.domain, buf, sizeof(buf), FI_REMOTE_WRITE, 0,
			       21, 0, &mr, NULL), 0);
	cr_assert_eq(fi_close(&mr->fid), 0);
	cr_assert_eq(try_open_ep(), 0);
}

/* The key of a new FI_RMA_PMEM endpoint's inbox (closed again). */
static uint64_t inbox_key_of_new_ep(void)
{
	struct fid_ep *ep;
	uint64_t key;

	cr_assert_eq(fi_endpoint(fx.domain, fx.info, &ep, NULL), 0);
	key = fi_mr_key(pmv_container_of(ep, struct pmv_ep, ep_fid)->inbox.mr);
	cr_assert_eq(fi_close(&ep->fid), 0);
	return key;
}

/*
 * Every connection of a domain can write every region whose key it knows:
 * inbox keys must not be guessable from another one (they were
 * consecutive).
 */
Test(objects, inbox_keys_are_unpredictable)
{
	uint64_t a = inbox_key_of_new_ep(), b = inbox_key_of_new_ep();
	uint64_t diff = a > b ? a - b : b - a;

	cr_assert_neq(a, b);
	cr_assert_gt(diff, 1ULL << 20, "inbox keys %llx and %llx are close",
		     (unsigned long long) a, (unsigned long long) b);
}

Test(objects, device_memory_is_refused_as_persistent_memory)
{
	static char buf[4096];
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct fi_mr_attr attr = { .mr_iov = &iov, .iov_count = 1,
				   .access = FI_REMOTE_WRITE,
				   .requested_key = 31,
				   .iface = FI_HMEM_CUDA };
	struct fid_mr *mr;

	cr_assert_eq(fi_mr_regattr(fx.domain, &attr, FI_RMA_PMEM, &mr),
		     -FI_EOPNOTSUPP);
}

Test(objects, application_events_pass_through_untouched)
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


Test(objects, cm_events_name_pmemverbs_fids_and_info)
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
	return pmv_container_of(ep, struct pmv_ep, ep_fid)->serve_on;
}

/*
 * Once connected, a target endpoint's requests are served by reads of its
 * CQ, its EQ and its FI_SEND|FI_RECV counter (one hook each), through the
 * real fi_ep_bind; bound objects refuse to close while it is open, and
 * its close takes every hook off.
 */
Test(objects, a_connected_endpoint_is_served_by_its_cq_eq_and_counter_reads)
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
Test(objects, rma_counters_bind_to_a_pmem_endpoint_and_are_counted_here)
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
Test(objects, connreq_from_a_foreign_peer_is_delivered)
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
