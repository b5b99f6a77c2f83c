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
 * A CQ of another domain is refused on an FI_RMA_PMEM endpoint, with
 * nothing bound: a CQ's reads run its own domain's commit engines, so the
 * endpoint's commits would never complete.  Its own domain's CQ binds.
 */
Test(objects, a_cq_of_another_domain_is_refused_on_a_pmem_endpoint)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_CONTEXT };
	struct fid_domain *other;
	struct fid_cq *cq, *own;
	struct fid_ep *ep;

	cr_assert_eq(fi_domain(fx.fabric, fx.info, &other, NULL), 0);
	cr_assert_eq(fi_cq_open(other, &cq_attr, &cq, NULL), 0);
	cr_assert_eq(fi_cq_open(fx.domain, &cq_attr, &own, NULL), 0);
	cr_assert_eq(fi_endpoint(fx.domain, fx.info, &ep, NULL), 0);
	cr_assert_eq(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT), -FI_EINVAL);
	cr_assert_null(pmv_container_of(ep, struct pmv_ep, ep_fid)->tx_cq);
	cr_assert_eq(fi_ep_bind(ep, &own->fid, FI_TRANSMIT), 0);
	cr_assert_eq(fi_close(&ep->fid), 0);
	cr_assert_eq(fi_close(&own->fid), 0);
	cr_assert_eq(fi_close(&cq->fid), 0, "the refused bind held the CQ");
	cr_assert_eq(fi_close(&other->fid), 0);
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
