/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: the target side (internal to target/): persistence of a
 * region (pmv_profile.c, pmv_file.c, pmv_holes.c), the agent thread
 * (pmv_agent.c), request serving (pmv_serve.c, from the application's
 * reads: pmv_serve_hooks.c) and its test hooks (pmv_oracle.c).
 */
#ifndef PMV_TARGET_H
#define PMV_TARGET_H

#include "pmv.h"

/* pmv_profile.c */
enum fi_pmem_profile pmv_profile_decide(int granularity, bool cpu_flush_ok);
/*
 * Allocates the holes of [off, off + len) of the region's file fd
 * (pmv_holes.c): 0, or -FI_ENOSPC if the file system cannot hold them.
 */
int pmv_fill_holes(int fd, uint64_t off, uint64_t len);
int pmv_persist(const struct pmv_persistence *p, const void *addr,
		size_t len);
int pmv_place(const struct pmv_persistence *p, void *dst, const void *src,
	      size_t len, bool uncached);

/* pmv_file.c: what pmemverbs knows of a region's file */
void pmv_file_attach(struct pmv_persistence *p, int fd);
void pmv_file_detach(struct pmv_persistence *p);
int pmv_file_check(const struct pmv_persistence *p, const void *addr,
		   size_t len);
int pmv_file_wb_check(const struct pmv_persistence *p, const void *addr,
		      size_t len);
void pmv_file_failed(const struct pmv_persistence *p);

/* pmv_oracle.c: test hooks of serving */
void pmv_serve_init(void);
void pmv_oracle_record(uint64_t key, uint64_t addr, uint64_t len);
bool pmv_oracle_skip_extent(void);

/* pmv_serve.c */
int pmv_serve_ep(struct pmv_domain *dom, struct pmv_ep *ep);
bool pmv_serve_pending(struct pmv_ep *ep);
int pmv_serve_try(struct pmv_domain *dom, struct pmv_ep *ep);
/* The application read ep's CQ this recently (ms): it serves ep itself. */
#define PMV_SERVE_DEFER_MS 2
bool pmv_serve_by_app(struct pmv_ep *ep, uint64_t now_ms);
void pmv_serve_detach(struct pmv_ep *ep);

/* pmv_serve_commit.c: one request on its region (0 or a PMV_ERR_* code);
 * the region is held while it is served */
int pmv_agent_commit(struct pmv_domain *dom, struct pmv_ep *ep,
		     struct pmv_req *req);
struct pmv_mr *pmv_domain_get_mr(struct pmv_domain *dom, uint64_t key);
void pmv_mr_put(struct pmv_mr *mr);

/* pmv_serve_gate.c */
bool pmv_serve_gate_shut(const struct pmv_ep *ep, const struct pmv_req *req);

/* pmv_publish.c */
void pmv_publish_profiles(struct pmv_ep *ep);
bool pmv_publish_wanted(const struct pmv_ep *ep);
size_t pmv_publish_table(struct pmv_domain *dom, struct pmv_profiles *t);
void pmv_publish_send(struct pmv_ep *ep, const struct pmv_profiles *t,
		      size_t len);

#endif /* PMV_TARGET_H */
