/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The fixture of the unit tests on pmemverbs objects (test_objects.c,
 * test_warnings.c, test_agent.c): a pmemverbs fabric, domain and EQ on
 * the tcp core in one process, and helpers to open, connect and read CM
 * events on them.
 */
#ifndef OBJECTS_FIXTURE_H
#define OBJECTS_FIXTURE_H

#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "pmv.h"

struct fixture {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *eq;
};

/* Defined in test_objects.c, shared by every suite on real objects. */
extern struct fixture fx;

/* Opens a pmemverbs fabric, domain and EQ on the tcp core (fx). */
void open_fixture(void);
void close_fixture(void);

/* Opens an endpoint with a CQ and the fixture's EQ bound. */
static inline struct fid_ep *open_bound_ep(struct fi_info *info, struct fid_cq *cq)
{
	struct fid_ep *ep;

	cr_assert_eq(fi_endpoint(fx.domain, info, &ep, NULL), 0);
	cr_assert_eq(fi_ep_bind(ep, &fx.eq->fid, 0), 0);
	cr_assert_eq(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV), 0);
	cr_assert_eq(fi_enable(ep), 0);
	return ep;
}

/* Reads one CM event, waiting at most 5 s. */
static inline uint32_t read_cm_event(struct fi_eq_cm_entry *entry, size_t len)
{
	struct fi_eq_err_entry err = { 0 };
	uint32_t event = 0;
	ssize_t ret = fi_eq_sread(fx.eq, &event, entry, len, 5000, 0);

	if (ret == -FI_EAVAIL && fi_eq_readerr(fx.eq, &err, 0) > 0)
		cr_assert_fail("EQ error: %s", fi_strerror(err.err));
	cr_assert_geq(ret, (ssize_t) sizeof(*entry), "fi_eq_sread: %zd", ret);
	return event;
}

/* A pmemverbs passive endpoint listening on 127.0.0.1; its name in addr. */
static inline struct fid_pep *listen_on_loopback(char *addr, size_t *addrlen)
{
	struct fi_info *pep_info;
	struct fid_pep *pep;

	cr_assert_eq(pmv_getinfo(PMV_FI_VERSION, "127.0.0.1", NULL, FI_SOURCE,
				 NULL, &pep_info), 0);
	pep_info->fabric_attr->prov_name = strdup(PMV_PROV_NAME);
	cr_assert_eq(fi_passive_ep(fx.fabric, pep_info, &pep, NULL), 0);
	fi_freeinfo(pep_info);
	cr_assert_eq(fi_pep_bind(pep, &fx.eq->fid, 0), 0);
	cr_assert_eq(fi_listen(pep), 0);
	cr_assert_eq(fi_getname(&pep->fid, addr, addrlen), 0);
	return pep;
}

#endif /* OBJECTS_FIXTURE_H */
