/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: the pass-through objects' own definitions (internal to src/
 * and the unit tests; initiator/ and target/ see pmv.h only): the wrappers
 * only src/ touches (passive endpoint, AV, wait and poll sets, connreq),
 * the constructors and operation tables, and the src/ functions only src/
 * calls.
 */
#ifndef PMV_OBJECTS_H
#define PMV_OBJECTS_H

#include "pmv.h"

/*
 * libfabric 2.0 deprecated wait sets and poll sets (fi_wait_open, fi_wait,
 * fi_poll_open, fi_poll*): built against 2.x, pmemverbs neither offers nor
 * uses them; against 1.x, applications may still hand it theirs.
 */
#define PMV_HAVE_WAIT_SETS (FI_MAJOR_VERSION < 2)

/*
 * libfabric's private getinfo flags (include/ofi.h, not installed).  A
 * provider hidden by FI_PROVIDER is only reachable with OFI_GETINFO_HIDDEN;
 * OFI_CORE_PROV_ONLY keeps utility providers out of a core query.  These
 * values have been stable since libfabric 1.10.
 */
#define PMV_OFI_CORE_PROV_ONLY (1ULL << 59)
#define PMV_OFI_GETINFO_HIDDEN (1ULL << 60)

/* Flags pmemverbs owns on fi_writemsg. */
#define PMV_COMMIT_FLAGS (FI_COMMIT_COMPLETE | FI_IMMED)

/* Largest atomically durable unit on x86-64 and aarch64. */
#define PMV_ATOMICITY_CHUNK 8

/* Bytes of remote CQ data an FI_RMA_PMEM application may send: the rest
 * marks gated writes (PMV_GATE_MAGIC). */
#define PMV_APP_CQ_DATA_MAX 4

struct pmv_pep {
	struct fid_pep pep_fid;
	struct fid_pep *core;
	uint64_t pmem_caps; /* FI_RMA_PMEM if opened with it, for connreqs */
	struct pmv_eq *eq;  /* bound EQ (pmv_bind_core_eq) */
};

/* pmv_hooks.c */
void pmv_hooks_init(struct pmv_hooks *hooks, struct pmv_domain *progress);
void pmv_hooks_fini(struct pmv_hooks *hooks);
int pmv_hooks_close_wrapper(struct fid *core_fid, const char *what,
			    struct pmv_hooks *hooks, void *wrapper);
void pmv_hooks_run(struct pmv_hooks *hooks);
void pmv_hooks_run_before_wait(struct pmv_hooks *hooks);
bool pmv_hooks_busy(struct pmv_hooks *hooks);
unsigned pmv_hooks_hold_eps(struct pmv_hooks *hooks, struct pmv_ep **eps,
			    unsigned max);

/* pmv_hooks_agent.c */
void pmv_hooks_note_read(struct pmv_hooks *hooks, uint64_t now);
void pmv_hooks_wake_agents(struct pmv_hooks *hooks);

/* pmv_cq_queue.c: the CQ's own queue (see pmv.h for reserve and push) */
size_t pmv_cq_entry_size(enum fi_cq_format format);
size_t pmv_cq_reserve_upto(struct pmv_cq *cq, size_t want);
void pmv_cq_unreserve_n(struct pmv_cq *cq, size_t n);
ssize_t pmv_cq_pop_aux(struct pmv_cq *cq, void *buf, size_t count,
		       fi_addr_t *src_addr);
void pmv_cq_queue_core(struct pmv_cq *cq, const char *buf, ssize_t n);

/* pmv_cq.c, for pmv_cq_wait.c: reads; pmv_cq_wait.c: waits. */
bool pmv_cq_plain(struct pmv_cq *cq);
bool pmv_cq_hooks_busy(struct pmv_cq *cq);
ssize_t pmv_cq_filter_internal(struct pmv_cq *cq, void *buf,
			       fi_addr_t *src_addr, ssize_t n);
ssize_t pmv_cq_read(struct fid_cq *cq, void *buf, size_t count);
ssize_t pmv_cq_readerr(struct fid_cq *cq_fid, struct fi_cq_err_entry *buf,
		       uint64_t flags);
ssize_t pmv_cq_readfrom(struct fid_cq *cq_fid, void *buf, size_t count,
			fi_addr_t *src_addr);
ssize_t pmv_cq_sreadfrom(struct fid_cq *cq_fid, void *buf, size_t count,
			 fi_addr_t *src_addr, const void *cond, int timeout);
ssize_t pmv_cq_sread(struct fid_cq *cq, void *buf, size_t count,
		     const void *cond, int timeout);
int pmv_cq_signal(struct fid_cq *cq_fid);

struct pmv_av {
	struct fid_av av_fid;
	struct fid_av *core;
	struct pmv_domain *domain;
	struct pmv_eq *eq;  /* bound EQ (pmv_bind_core_eq) */
};

/* A CQ or counter of a pmemverbs wait set or poll set (one of the two). */
struct pmv_member {
	struct pmv_cq *cq;
	struct pmv_cntr *cntr;
};

/* The CQs and counters of a wait set or poll set (pmv_members.c). */
struct pmv_members {
	pthread_mutex_t lock;       /* the list, and looks: a leaf */
	struct pmv_member *m;
	size_t n, cap;
	int looks;                  /* calls looking at members: one leaves
				     * (closes) once none does */
};

struct pmv_wait {
	struct fid_wait wait_fid;
	struct fid_wait *core;
	struct pmv_members members; /* fi_wait runs their progress first */
	int sleepers;               /* threads in its fi_wait (atomic): to
				     * the agent, sleepers of every member
				     * CQ (pmv_cq_sleepers) */
};

struct pmv_poll {
	struct fid_poll poll_fid;
	struct fid_poll *core;
	struct pmv_domain *domain;
	struct pmv_members members; /* fi_poll runs their progress first */
};

/* pmv_members.c (libfabric 1.x): what one member has once its progress
 * ran, by rank. */
enum pmv_member_state {
	PMV_MEMBER_IDLE,
	PMV_MEMBER_PMEM,  /* pmem endpoints bound: another thread may start
			   * a commit, whose end wakes no wait object */
	PMV_MEMBER_BUSY,  /* work in flight whose end lands in memory */
	PMV_MEMBER_READY, /* entries of pmemverbs's: no core wait object or
			   * poll set shows them */
};
void pmv_members_init(struct pmv_members *ms);
void pmv_members_fini(struct pmv_members *ms);
int pmv_members_add(struct pmv_members *ms, struct pmv_cq *cq,
		    struct pmv_cntr *cntr);
void pmv_members_remove(struct pmv_members *ms, const void *obj);
enum pmv_member_state pmv_members_look(struct pmv_members *ms,
	bool (*on_ready)(void *arg, const struct pmv_member *m), void *arg);
struct pmv_cntr *pmv_members_hold_lone_cntr(struct pmv_members *ms);
void pmv_members_release(struct pmv_members *ms);
void pmv_members_note_used(struct pmv_members *ms);
/* pmv_cntr_wait.c */
bool pmv_cntr_take_gates(struct pmv_cntr *cntr);
int pmv_cntr_wait_from(struct pmv_cntr *cntr, uint64_t threshold,
		       uint64_t errs, int timeout);

/* Connection request handed to the application in an FI_CONNREQ event. */
struct pmv_connreq {
	struct fid fid;
	struct fi_info *core_info;
	struct pmv_peer peer;
};

/* pmv_fault.c */
void pmv_fault_reset(void);
void pmv_fault_define_params(void);
void pmv_fault_read_params(void);

/* pmv_inbox.c: CM header and inbox of a pmem endpoint. */
int pmv_inbox_open(struct pmv_ep *ep);
int pmv_inbox_close(struct pmv_ep *ep);
bool pmv_cm_hdr_parse(const void *data, size_t len, struct pmv_peer *peer);
void *pmv_cm_data_with_hdr(struct pmv_ep *ep, const void *param,
			   size_t paramlen, size_t *total);

/*
 * Wakes the domain's agent if it sleeps on its fds: an application's CQ
 * read drives the core too, and may move a commit request into an inbox
 * without leaving the socket readable for the agent.
 */
static inline void pmv_domain_nudge_agent(struct pmv_domain *dom)
{
	uint64_t one = 1;

	if (__atomic_load_n(&dom->agent_sleeping, __ATOMIC_RELAXED) &&
	    __atomic_exchange_n(&dom->agent_sleeping, false, __ATOMIC_SEQ_CST))
		(void) !write(dom->agent_wake_fd, &one, sizeof(one));
}

/* pmv_cq.c: entries to read; pmv_cq_open.c: pmem endpoints bound */
bool pmv_cq_ready(struct pmv_cq *cq);
bool pmv_cq_trywait_busy(struct pmv_cq *cq);
/* pmv_ep_cntr.c: what a counter's reads and waits run; fi_trywait on a
 * counter must say -FI_EAGAIN */
void pmv_cntr_run(struct pmv_cntr *cntr, bool before_wait);
bool pmv_cntr_trywait_busy(struct pmv_cntr *cntr);
void pmv_cq_ref_pmem(struct pmv_cq *cq, int delta);

/* pmv_gate.c */
bool pmv_gate_open(struct pmv_ep *ep);
void pmv_gate_close(struct pmv_ep *ep);
void pmv_gate_confirm(struct pmv_domain *dom, uint16_t id, uint32_t seq32);
bool pmv_gate_take_entry(struct pmv_domain *dom, const void *entry);

/* pmv_info.c: fi_info translation between pmemverbs and its core. */
const char *pmv_core_name(void);
int pmv_getinfo(uint32_t version, const char *node, const char *service,
		uint64_t flags, const struct fi_info *hints,
		struct fi_info **info);
int pmv_info_from_core(struct fi_info *info, const struct fi_info *hints);
struct fi_info *pmv_info_to_core(const struct fi_info *info);
struct fi_info *pmv_hints_to_core(const struct fi_info *hints,
				  const char *core_name);

/* pmv_fid.c: mapping between pmemverbs fids and core fids. */
bool pmv_fid_is_ours(const struct fid *fid);
struct fid *pmv_core_fid(struct fid *fid);
struct fid *pmv_app_fid(struct fid *core_fid);
int pmv_close_core(struct fid *core_fid, const char *what);
int pmv_close_wrapper(struct fid *core_fid, const char *what, void *wrapper);
int pmv_bind_core(struct fid *core, struct fid *bfid, uint64_t flags);
int pmv_bind_core_eq(struct fid *core, struct fid *bfid, uint64_t flags,
		     struct pmv_eq **eq);
void pmv_eq_unbind(struct pmv_eq **eq);
void pmv_domain_hold(struct pmv_domain *dom, enum pmv_dom_obj kind);
void pmv_domain_release(struct pmv_domain *dom, enum pmv_dom_obj kind);
int pmv_close_wrapper_eq(struct fid *core_fid, const char *what,
			 void *wrapper, struct pmv_eq *eq);
int pmv_control_core(struct fid *fid, int command, void *arg);
int pmv_ops_open_core(struct fid *fid, const char *name, uint64_t flags,
		      void **ops, void *context);
int pmv_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags);
int pmv_no_ops_set(struct fid *fid, const char *name, uint64_t flags,
		   void *ops, void *context);
extern struct fi_ops pmv_connreq_fi_ops;
int pmv_core_wait_set(struct fid_wait *wait_set, struct fid_wait **core_set);
int pmv_wait_join(struct fid_wait *app_set, struct pmv_cq *cq,
		  struct pmv_cntr *cntr, struct pmv_wait **set);
void pmv_wait_leave(struct pmv_wait *wait, const void *obj);

/* pmv_ep_cm.c: the endpoint options and names passive endpoints share,
 * and an active endpoint's CM operations. */
int pmv_ep_getopt(fid_t fid, int level, int optname, void *optval,
		  size_t *optlen);
int pmv_ep_setopt(fid_t fid, int level, int optname, const void *optval,
		  size_t optlen);
int pmv_cm_setname(fid_t fid, void *addr, size_t addrlen);
int pmv_cm_getname(fid_t fid, void *addr, size_t *addrlen);
extern struct fi_ops_cm pmv_ep_cm_ops;
/* pmv_ep_cm.c: the peer's CM header was read (FI_CONNREQ, FI_CONNECTED). */
int pmv_ep_peer_connected(struct pmv_ep *ep, const struct pmv_peer *peer);

/* Object constructors, one file each. */
int pmv_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
		    void *context);
int pmv_domain_open(struct fid_fabric *fabric, struct fi_info *info,
		    struct fid_domain **domain, void *context);
int pmv_passive_ep(struct fid_fabric *fabric, struct fi_info *info,
		   struct fid_pep **pep, void *context);
int pmv_endpoint(struct fid_domain *domain, struct fi_info *info,
		 struct fid_ep **ep, void *context);
int pmv_srx_context(struct fid_domain *domain, struct fi_rx_attr *attr,
		    struct fid_ep **rx_ep, void *context);
int pmv_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr,
		struct fid_eq **eq, void *context);
int pmv_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr,
		struct fid_cq **cq, void *context);
int pmv_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr,
		  struct fid_cntr **cntr, void *context);
int pmv_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
		struct fid_av **av, void *context);
int pmv_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr,
		  struct fid_wait **waitset);
int pmv_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr,
		  struct fid_poll **pollset);
int pmv_trywait(struct fid_fabric *fabric, struct fid **fids, int count);
/* pmv_mr_index.c (domain lock held) */
int pmv_mr_index_add(struct pmv_domain *dom, struct pmv_mr *mr);
void pmv_mr_index_remove(struct pmv_domain *dom, struct pmv_mr *mr);
void pmv_mr_index_fini(struct pmv_domain *dom);
extern struct fi_ops_mr pmv_mr_ops;
int pmv_mr_reg_pmem2(struct fid_domain *domain, struct pmem2_map *map,
		     size_t offset, size_t len, uint64_t access,
		     uint64_t requested_key, uint64_t flags,
		     struct fid_mr **mr, void *context);

/* Data-path operation tables (pmv_ep_ops.c; pmem RMA: pmv_ep_pmem.c). */
extern struct fi_ops_msg pmv_msg_ops;
extern struct fi_ops_tagged pmv_tagged_ops;
extern struct fi_ops_rma pmv_rma_ops;
extern struct fi_ops_rma pmv_rma_pmem_ops;

/* pmv_ep_cntr.c: FI_WRITE, FI_READ, FI_REMOTE_WRITE counters of pmem eps */
extern struct fi_ops_rma pmv_rma_pmem_cntr_ops;
int pmv_ep_cntr_bind(struct pmv_ep *ep, struct pmv_cntr *cntr, uint64_t flags);
void pmv_ep_cntr_unbind(struct pmv_ep *ep);
void pmv_ep_cntr_pause(struct pmv_ep *ep);
void pmv_ep_cntr_resume(struct pmv_ep *ep);
ssize_t pmv_counted_writemsg(struct pmv_ep *ep, const struct fi_msg_rma *msg,
			     uint64_t flags);
ssize_t pmv_counted_readmsg(struct pmv_ep *ep, const struct fi_msg_rma *msg,
			    uint64_t flags);
/* pmv_ep_pmem.c: default op flags */
void pmv_ep_set_op_flags(struct pmv_ep *ep, uint64_t op_flags);
int pmv_ep_setopsflag(struct pmv_ep *ep, uint64_t *flags);
/* pmv_ep_atomic.c */
extern struct fi_ops_atomic pmv_atomic_ops;

#endif /* PMV_OBJECTS_H */
