/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* The unit tests' pmemverbs objects over the tcp core (objects_fixture.c),
 * shared by test_objects.c, test_connect.c, test_warnings.c, test_agent.c,
 * test_agent_sleep.c, test_close.c. */
#ifndef PMV_OBJECTS_FIXTURE_H
#define PMV_OBJECTS_FIXTURE_H

#include "pmv_objects.h"

struct fixture {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *eq;
};
extern struct fixture fx;

/* Opens a pmemverbs fabric, domain and EQ on the tcp core. */
void open_fixture(void);
void close_fixture(void);
/* Opens an endpoint with a CQ and the fixture's EQ bound. */
struct fid_ep *open_bound_ep(struct fi_info *info, struct fid_cq *cq);
/* Reads one CM event, waiting at most 5 s. */
uint32_t read_cm_event(struct fi_eq_cm_entry *entry, size_t len);
/* A pmemverbs passive endpoint listening on 127.0.0.1; its name in addr. */
struct fid_pep *listen_on_loopback(char *addr, size_t *addrlen);
/* The fixture's domain, as pmemverbs's. */
struct pmv_domain *fixture_domain(void);
/* An FI_RMA_PMEM endpoint of the fixture's domain (not connected). */
struct pmv_ep *open_pmem_ep(struct fid_ep **ep);
/* A connected pair of pmem endpoints of the fixture's domain, through a
 * listener it opens: the server (the target: the agent serves it) on
 * server_cq, the client on client_cq; closes nothing. */
void connect_pmem_pair(struct fid_cq *server_cq, struct fid_cq *client_cq,
		       struct fid_pep **pep, struct fid_ep **server,
		       struct fid_ep **client);
/* The passes of the fixture domain's agent so far (dom: its domain). */
uint64_t agent_passes(struct pmv_domain *dom);
void sleep_ms(long ms);
/* A MAP_SHARED mapping of len bytes of an unlinked temporary file (in the
 * page cache: a PAGE region); munmap it. */
void *map_temp_file(size_t len);

#endif
