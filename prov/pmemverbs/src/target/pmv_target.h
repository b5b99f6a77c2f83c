/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: the target side (internal to target/): persistence of a
 * region (pmv_profile.c, pmv_file.c, pmv_holes.c), the agent thread
 * (pmv_agent.c), request serving (pmv_serve.c, from the application's
 * reads: pmv_serve_hooks.c) and its test hooks (pmv_oracle.c).
 */
#ifndef PMV_TARGET_H
#define PMV_TARGET_H

#include <sys/queue.h>

#include "pmv.h"

/*
 * A pmem endpoint's target state (pmv_tgt.c): what its agent and its
 * serving passes keep, beside the initiator's struct pmv_ini.  Opened with
 * the endpoint's inbox; counted (refs): the endpoint's own reference, and
 * one per agent pass, hook read, counter wait or profile push holding it
 * (pmv_tgt_hold).  An endpoint's close drops its reference once no pass
 * holds it (pmv_agent_remove waits for that) and ep goes NULL under
 * serve_lock; the last reference frees the state.
 */
struct pmv_tgt {
	int refs;                  /* the endpoint's, one per hold (atomic) */
	pthread_mutex_t serve_lock; /* one server at a time: agent or app */
	uint64_t agent_seq;        /* next request our agent expects */
	uint64_t agent_unacked;    /* last served request, ack not sent yet */
	uint64_t agent_acked;      /* last request acked (0: none) */
	int agent_status;          /* ... and its status */
	uint8_t agent_profile;
	uint32_t agent_gen;        /* registration generation it validated in */
	uint32_t open_gen;         /* the domain's generation when the endpoint
				    * opened: the oldest a request of its peer
				    * can mean (pmv_serve.c) */
	uint64_t bad_seq;          /* seq whose slot holds no valid request */
	uint64_t bad_since_ms;     /* ... since then (FI_PMEMVERBS_BAD_REQUEST_MS) */
	uint64_t bad_refused;      /* requests refused that way, for warnings */
	uint32_t slot_sum[PMV_SLOTS]; /* checksum field each slot held when
				    * served or refused: with the previous
				    * lap's seq, the slot is empty */
	struct pmv_agent_hist {    /* served requests: key and status by seq */
		uint64_t seq, key;
		int status;
	} agent_hist[PMV_SLOTS];
	bool in_agent;             /* on the agent's list (domain lock) */
	LIST_ENTRY(pmv_ep) agent_link; /* domain agent list: its close
				    * unlinks it in O(1) */
	unsigned push_failed;      /* pushes the core refused (push lock) */
	uint64_t pushed;           /* the last domain push it was held for
				    * (domain lock; pmv_publish.c) */
	struct pmv_hook serve_hook[PMV_SERVE_OBJS]; /* inline serving, on
				    * the lists of its CQs, EQ and counters
				    * (how each serves it: pmv_serve_how) */
	struct pmv_hooks *serve_on[PMV_SERVE_OBJS]; /* lists holding them */
	struct pmv_hook served_hook; /* an endpoint without a gate: its inbox
				    * looked into by the reads of its domain's
				    * CQs that serve no endpoint of their own
				    * (on dom->served if on_served) */
	bool on_served;
};

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
/*
 * A view: pmemverbs's mapping, with no access, of a range of a file
 * through its record's descriptor.  The regions that lie in its range
 * share it (a heap's subranges registered as many keys), so that views
 * add a mapping per application mapping, not per region (each counts
 * against vm.max_map_count).
 */
struct pmv_view {
	struct pmv_view *next;
	char *addr;
	uint64_t offset;   /* of its first byte in the file */
	uint64_t len;
	unsigned refs;     /* regions persisted through it (its file's lock) */
};

void pmv_file_attach(struct pmv_persistence *p, int fd);
void pmv_file_detach(struct pmv_persistence *p);
int pmv_file_check(const struct pmv_persistence *p, const void *addr,
		   size_t len);
int pmv_file_view_map(struct pmv_persistence *p, const void *addr,
		      size_t len);
int pmv_file_view_sync(const struct pmv_persistence *p, const void *addr,
		       size_t len);
void pmv_file_failed(const struct pmv_persistence *p, bool writeback);
int pmv_file_read_back(const struct pmv_persistence *p, const void *addr,
		       size_t len);

/* pmv_oracle.c: test hooks of serving */
void pmv_serve_init(void);
void pmv_oracle_record(uint64_t key, uint64_t addr, uint64_t len);
bool pmv_oracle_skip_extent(void);

/* pmv_serve.c */
int pmv_serve_ep(struct pmv_domain *dom, struct pmv_ep *ep);
bool pmv_serve_pending(struct pmv_ep *ep);
int pmv_serve_try(struct pmv_domain *dom, struct pmv_ep *ep);

/* pmv_serve_hooks.c */
struct pmv_hooks *pmv_serve_app_list(struct pmv_ep *ep, uint64_t now_ms);
struct pmv_hooks *pmv_serve_wait_list(struct pmv_ep *ep);
int pmv_serve_marked(struct pmv_domain *dom, uint64_t now_ms);
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

/* pmv_serve_hooks.c: something that decides who serves an endpoint
 * changed */
void pmv_agent_eps_changed(struct pmv_domain *dom);

#endif /* PMV_TARGET_H */
