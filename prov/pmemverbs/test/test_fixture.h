/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Unit tests: the fixture of the suites that need real pmemverbs objects
 * over tcp on 127.0.0.1 (test_objects.c defines it).
 */
#ifndef TEST_FIXTURE_H
#define TEST_FIXTURE_H

#include "pmv.h"

struct fixture {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *eq;
};

extern struct fixture fx;

/* Opens a pmemverbs fabric, domain and EQ on the tcp core (fx). */
void open_fixture(void);
void close_fixture(void);

#endif /* TEST_FIXTURE_H */
