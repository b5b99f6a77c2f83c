/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: the target side (internal to target/): the agent thread
 * (pmv_agent.c), request serving (pmv_serve.c, from the application's
 * reads: pmv_serve_hooks.c) and its test hooks (pmv_oracle.c).
 */
#ifndef PMV_TARGET_H
#define PMV_TARGET_H

#include "pmv.h"

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

/* pmv_serve_gate.c */
bool pmv_serve_gate_shut(const struct pmv_ep *ep, const struct pmv_req *req);

/* pmv_publish.c */
void pmv_publish_profiles(struct pmv_ep *ep);
bool pmv_publish_wanted(const struct pmv_ep *ep);
size_t pmv_publish_table(struct pmv_domain *dom, struct pmv_profiles *t);
void pmv_publish_send(struct pmv_ep *ep, const struct pmv_profiles *t,
		      size_t len);

#endif /* PMV_TARGET_H */
