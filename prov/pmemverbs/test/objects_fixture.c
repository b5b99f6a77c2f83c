/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The unit tests' pmemverbs objects over the tcp core on 127.0.0.1, in one
 * process: a fabric, domain and EQ, endpoints and a listener on them.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "objects_fixture.h"
#include "target/pmv_agent.h"

struct fi_provider *fi_prov_ini(void);

struct fixture fx;

/* Opens a pmemverbs fabric, domain and EQ on the tcp core. */
void open_fixture(void)
{
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_UNSPEC };

	setenv("FI_PMEMVERBS_CORE_PROV", "tcp", 1);
	fi_prov_ini();
	cr_assert_eq(pmv_getinfo(PMV_FI_VERSION, "127.0.0.1", NULL, 0, NULL,
				 &fx.info), 0);
	/* libfabric names the entries when it calls us; we called directly. */
	fx.info->fabric_attr->prov_name = strdup(PMV_PROV_NAME);
	cr_assert_eq(pmv_fabric_open(fx.info->fabric_attr, &fx.fabric, NULL), 0);
	cr_assert_eq(fi_domain(fx.fabric, fx.info, &fx.domain, NULL), 0);
	cr_assert_eq(fi_eq_open(fx.fabric, &eq_attr, &fx.eq, NULL), 0);
}

void close_fixture(void)
{
	cr_assert_eq(fi_close(&fx.eq->fid), 0);
	cr_assert_eq(fi_close(&fx.domain->fid), 0);
	cr_assert_eq(fi_close(&fx.fabric->fid), 0);
	fi_freeinfo(fx.info);
}

/* Opens an endpoint with a CQ and the fixture's EQ bound. */
struct fid_ep *open_bound_ep(struct fi_info *info, struct fid_cq *cq)
{
	struct fid_ep *ep;

	cr_assert_eq(fi_endpoint(fx.domain, info, &ep, NULL), 0);
	cr_assert_eq(fi_ep_bind(ep, &fx.eq->fid, 0), 0);
	cr_assert_eq(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV), 0);
	cr_assert_eq(fi_enable(ep), 0);
	return ep;
}

/* Reads one CM event, waiting at most 5 s. */
uint32_t read_cm_event(struct fi_eq_cm_entry *entry, size_t len)
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
struct fid_pep *listen_on_loopback(char *addr, size_t *addrlen)
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

void *map_temp_file(size_t len)
{
	char path[] = "/tmp/pmv_unit_XXXXXX";
	int fd = mkstemp(path);
	void *mem;

	cr_assert_geq(fd, 0);
	unlink(path);
	cr_assert_eq(ftruncate(fd, (off_t) len), 0);
	mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	cr_assert_neq(mem, MAP_FAILED);
	return mem;
}

struct pmv_domain *fixture_domain(void)
{
	return pmv_container_of(fx.domain, struct pmv_domain, domain_fid);
}

struct pmv_ep *open_pmem_ep(struct fid_ep **ep)
{
	cr_assert(fx.info->caps & FI_RMA_PMEM, "the fixture needs FI_RMA_PMEM");
	cr_assert_eq(fi_endpoint(fx.domain, fx.info, ep, NULL), 0);
	return pmv_container_of(*ep, struct pmv_ep, ep_fid);
}

void connect_pmem_pair(struct fid_cq *server_cq, struct fid_cq *client_cq,
		       struct fid_pep **pep, struct fid_ep **server,
		       struct fid_ep **client)
{
	struct { struct fi_eq_cm_entry e; char data[64]; } entry;
	char addr[128];
	size_t addrlen = sizeof(addr);

	*pep = listen_on_loopback(addr, &addrlen);
	*client = open_bound_ep(fx.info, client_cq);
	cr_assert_eq(fi_connect(*client, addr, NULL, 0), 0);
	cr_assert_eq(read_cm_event(&entry.e, sizeof(entry)), FI_CONNREQ);
	*server = open_bound_ep(entry.e.info, server_cq);
	fi_freeinfo(entry.e.info);
	cr_assert_eq(fi_accept(*server, NULL, 0), 0);
	cr_assert_eq(read_cm_event(&entry.e, sizeof(entry)), FI_CONNECTED);
	cr_assert_eq(read_cm_event(&entry.e, sizeof(entry)), FI_CONNECTED);
}

uint64_t agent_passes(struct pmv_domain *dom)
{
	return __atomic_load_n(&dom->agent->passes, __ATOMIC_RELAXED);
}

void sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000,
			       .tv_nsec = (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}
