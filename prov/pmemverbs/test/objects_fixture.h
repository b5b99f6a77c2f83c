/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* The unit tests' pmemverbs objects over the tcp core (objects_fixture.c),
 * shared by test_objects.c, test_connect.c, test_warnings.c, test_agent.c,
 * test_close.c. */
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
/* A MAP_SHARED mapping of len bytes of an unlinked temporary file (in the
 * page cache: a PAGE region); munmap it. */
void *map_temp_file(size_t len);

#endif
