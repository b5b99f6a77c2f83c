/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: internal definitions shared by the provider's objects: the
 * pass-through layer (src/), the initiator (initiator/) and the target
 * (target/).  What only one folder uses is in its own header:
 * pmv_objects.h (src/), initiator/pmv_initiator.h, target/pmv_target.h.
 * The completion objects (CQ, EQ, counter) are in pmv_queues.h, the hook
 * lists their reads run in pmv_hooks.h.
 *
 * Every pmemverbs object wraps one object of the core provider (verbs or
 * tcp).  Each wrapper starts with its public fid structure, and the core
 * object is always opened with the wrapper as its context, so that a core
 * fid found in an event maps back to the wrapper through fid->context.
 */
#ifndef PMV_H
#define PMV_H

#include <pthread.h>
#include <unistd.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <errno.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>
#include <rdma/fi_ext_pmem.h>

#include "proto/pmv_proto.h"
#include "pmv_hooks.h"
#include "pmv_iop.h"
#include "pmv_lock.h" /* after libfabric's: it checks their calls */
#include "pmv_wake.h"

#define PMV_PROV_NAME "pmemverbs"
#define PMV_PROV_VERSION FI_VERSION(0, 1)
/*
 * The API version of the headers built against: libfabric 2.x hides a
 * provider announcing an older version from every application asking for
 * its own (fi_getinfo -FI_ENODATA, "fi_version 1.17 < requested 2.1").
 */
#define PMV_FI_VERSION FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION)

#define pmv_container_of(ptr, type, field) \
	((type *) ((char *) (ptr) - offsetof(type, field)))

extern struct fi_provider pmv_prov;

#define PMV_WARN(subsys, ...) FI_WARN(&pmv_prov, subsys, __VA_ARGS__)
#define PMV_INFO(subsys, ...) FI_INFO(&pmv_prov, subsys, __VA_ARGS__)

/* Provider parameters, read once at fi_prov_ini. */
struct pmv_params {
	char *core_prov;      /* FI_PMEMVERBS_CORE_PROV, NULL = auto */
	int wsp;              /* FI_PMEMVERBS_WSP: target declares WSP */
	int ddio;             /* FI_PMEMVERBS_DDIO: inbound DMA is cached */
	enum fi_pmem_method method; /* FI_PMEMVERBS_METHOD, NONE = auto */
	int extent_limit;     /* FI_PMEMVERBS_EXTENT_LIMIT */
	int scope_gap;        /* FI_PMEMVERBS_SCOPE_GAP */
	int fill_holes;       /* FI_PMEMVERBS_FILL_HOLES */
	int agent_spin_us;    /* FI_PMEMVERBS_AGENT_SPIN_US */
	int agent_thread;     /* FI_PMEMVERBS_AGENT_THREAD */
	int sread_spin_us;    /* FI_PMEMVERBS_SREAD_SPIN_US */
	char *oracle;         /* FI_PMEMVERBS_ORACLE (test only) */
	int fault_skip;       /* FI_PMEMVERBS_FAULT_SKIP_EXTENT (test only) */
	int fault_core;       /* FI_PMEMVERBS_FAULT_CORE_OP (test only) */
	int fault_core_full;  /* FI_PMEMVERBS_FAULT_CORE_FULL (test only) */
	int fault_persist;    /* FI_PMEMVERBS_FAULT_PERSIST (test only) */
	int fault_alloc;      /* FI_PMEMVERBS_FAULT_ALLOC (test only) */
	int fault_mr_reg;     /* FI_PMEMVERBS_FAULT_MR_REG (test only) */
	int fault_push;       /* FI_PMEMVERBS_FAULT_PUSH (test only) */
	int fault_close;      /* FI_PMEMVERBS_FAULT_CLOSE (test only) */
	int peer_timeout_ms;  /* FI_PMEMVERBS_PEER_TIMEOUT_MS */
	int bad_request_ms;   /* FI_PMEMVERBS_BAD_REQUEST_MS */
	int peer_probe_ms;    /* FI_PMEMVERBS_PEER_PROBE_MS */
	int join_request;     /* FI_PMEMVERBS_JOIN_REQUEST */
	int push_profiles;    /* FI_PMEMVERBS_PUSH_PROFILES */
	int config_error;     /* -FI_EINVAL: a value above is invalid */
	int delivery_is_commit; /* FI_PMEMVERBS_DELIVERY_IS_COMMIT */
};
extern struct pmv_params pmv_params;

/*
 * FI_PMEMVERBS_JOIN_REQUEST's default: on.  Joined, an agent commit's
 * request is the last segment of its data's write, which carries remote
 * CQ data: only toward a peer that offered a gate (pmv_gate.c), which
 * serves the request once that write's completion is read (fi_cq(3),
 * TARGET COMPLETION SEMANTICS); elsewhere two writes, ordered by
 * FI_ORDER_WAW.
 */
#define PMV_JOIN_REQUEST_DEFAULT 1

/* The smaller of pmemverbs's limit and the core's (0: the core says none). */
static inline size_t pmv_limit(size_t own, size_t core)
{
	return core && core < own ? core : own;
}

/* Provider-specific flag bits pmemverbs does not define. */
#define PMV_UNKNOWN_PROV_BITS ((1ULL << 61) | (1ULL << 62) | (1ULL << 63))

/* How the agent makes a region's bytes durable (target/pmv_profile.c). */
enum pmv_persist_kind {
	PMV_PERSIST_NONE,  /* VOLATILE, WSP: visible is all there is */
	PMV_PERSIST_MSYNC, /* PAGE: msync, whose errors fail the commit */
	PMV_PERSIST_CPU,   /* DMP, MHP: libpmem2's flush and drain */
};

struct pmem2_map;
struct pmv_file;
struct pmv_view;
struct pmv_persistence {
	enum fi_pmem_profile profile;
	enum pmv_persist_kind kind;
	void (*cpu_persist)(const void *ptr, size_t size);    /* libpmem2's */
	bool writable; /* the mapping is writable: msync may dirty its pages */
	bool cpu_written; /* every write lands by a CPU store (the tcp core's
			   * recv): pages are dirtied by it, not re-dirtied */
	/* the file behind the region (target/pmv_file.c), or NULL */
	struct pmv_file *file;
	uint64_t file_errors;  /* its persist errors when registered */
	uintptr_t map_start;   /* the mapping's first address */
	uint64_t map_offset;   /* and its offset in the file */
	size_t map_len;        /* and its length */
	/* PAGE on a regular file: pmemverbs's own mapping, with no access,
	 * of the application's mapping's range of the file through the
	 * record's descriptor, which its msync persists; shared by the
	 * regions in that range (target/pmv_file.c); else NULL */
	struct pmv_view *view;
};

/* Registration generations count closes and may wrap: true if a is older. */
static inline bool pmv_gen_before(uint32_t a, uint32_t b)
{
	return (int32_t) (a - b) < 0;
}

/* This side's inbox: acks from the peer's agent, requests to our agent. */
struct pmv_inbox {
	void *mem;
	size_t size;
	struct fid_mr *mr;
	uint64_t rma_addr; /* address the peer names it by */
	uint64_t *gen_word;   /* our domain's registration generation */
	uint64_t *flush_words; /* where read-flush reads land, one per slot */
	uint64_t *probe_word;  /* where the peer probe's read lands */
	void *profiles;        /* where the peer pushes its profile table */
	uint32_t slot_size;
};

/* What the peer told us in its CM header. */
struct pmv_peer {
	bool known;
	bool has_inbox;
	uint64_t inbox_addr, inbox_key;
	uint32_t slots, slot_size;
	uint8_t transport;
	bool gated;                /* takes gated requests at gate_id */
	uint16_t gate_id;
};

struct pmv_fabric {
	struct fid_fabric fabric_fid;
	struct fid_fabric *core;
	char *core_name;
};

struct pmv_agent;

/* Gates a domain keeps (pmv_gate.c): a power of two below 65536. */
#define PMV_GATES 1024u

/* Kinds of object opened on a domain, counted while open (pmv_domain_hold). */
enum pmv_dom_obj { PMV_DOM_EP, PMV_DOM_SRX, PMV_DOM_CQ, PMV_DOM_CNTR,
		   PMV_DOM_AV, PMV_DOM_MR, PMV_DOM_POLL, PMV_DOM_OBJS };

/*
 * Locks.  Each is taken with pmv_lock(&lock, class) (pmv_lock.h), and a
 * thread nests them only in this order, outer first:
 *   dom->push_lock  profile pushes, one at a time (a peer never gets an
 *                   older table after a newer one); held across their
 *                   fi_inject_write calls, with nothing else held
 *   tgt->serve_lock the one server of an inbox (struct pmv_tgt, an
 *                   endpoint's target state): the agent, or an
 *                   application thread whose read serves it (application
 *                   threads only try it; an endpoint's close waits for
 *                   it); held across persists, ack posts and the read of
 *                   a gated write's completion
 *   dom->lock       the MR table and the agent's endpoint list; memory
 *                   only (holders copy or hold what they need, then let go)
 *   cq->lock        one reader of the core CQ at a time (the application's
 *                   entries stay in order); held across the core's
 *                   fi_cq_read*; the internal completions read under it
 *                   run after it is released (they post)
 *   ini->lock       an initiator's commit engine; held across posting its
 *                   operations, which go in ring order
 *   hooks->lock     a hook list's links; hooks run without it, each held
 *                   by a count its removal waits on
 *   cq->aux_lock, the iop pool lock, pmv_files_lock, pmv_agents_lock,
 *   pmv_wake_key_lock, dom->wakes.lock (pmv_wake.c; the last writes
 *   eventfds, which never block): leaves, memory only (ep->lock /
 *   srx->lock is never taken).
 * Never under any pmemverbs lock: a wait (sread, fi_cntr_wait, fi_wait, a
 * poll with a timeout, a yield until something closes), fi_trywait, a
 * control call of the core (fi_close, fi_mr_reg, fi_control).  Posts
 * (fi_write*, fi_read*, fi_send*, fi_inject*) only under ini->lock,
 * serve_lock or push_lock, core reads only under cq->lock or serve_lock,
 * persists only under serve_lock: posts and reads never block
 * (-FI_EAGAIN), the core calls nothing of ours back (its locks are
 * always innermost), and of application threads only an endpoint's
 * close waits for its serve_lock (its server must finish first).  Test
 * builds abort on any breach (pmv_lock.c).
 */
struct pmv_domain {
	struct fid_domain domain_fid;
	struct fid_domain *core;
	struct pmv_fabric *fabric;
	uint64_t caps;            /* the fi_info's: FI_RMA_PMEM or not */
	uint64_t mr_mode;
	size_t inject_size;
	size_t iov_limit;         /* the core's tx iov_limit and rma_iov_limit */
	size_t rma_iov_limit;
	uint8_t transport;
	uint64_t mr_gen;          /* regions closed so far, counted once each
				   * core registration is gone (under lock) */
	pthread_mutex_t lock;     /* MR table and agent endpoint list */
	pthread_mutex_t push_lock; /* profile pushes, one at a time */
	uint64_t pushes;           /* domain pushes begun (push_lock) */
	struct pmv_mr *mrs;       /* registered regions, for walks */
	void *mr_by_key;          /* and indexed (pmv_mr_index.c) */
	void *mr_by_desc;
	struct pmv_agent *agent;  /* started with the first pmem endpoint */
	struct pmv_eq *eq;        /* bound EQ (pmv_bind_core_eq) */
	int open_objs[PMV_DOM_OBJS]; /* open, by kind (atomic): it refuses
				      * to close (pmv_domain_close) */
	struct pmv_wakes wakes;   /* application threads asleep on its
				   * objects (pmv_wake.c) */
	/* its commit engines, each on the read list while commits are in its
	 * ring (parked otherwise): every read and wait of the domain's CQs
	 * that pmem endpoints use runs them (pmv_hooks_run_domain), whichever
	 * CQ the engine completes in */
	struct pmv_hooks engines;
	/* the endpoints without a gate whose CQs are the domain's, one hook
	 * each (pmv_serve_attach): every read and wait of a CQ of the domain
	 * that serves no endpoint of its own looks into their inboxes
	 * (pmv_hooks_run_domain); their own CQs' read lists do otherwise */
	struct pmv_hooks served;
	/* endpoints served on their gates' events (their receive CQs'
	 * evented hooks, pmv_hooks_add_evented; atomic): while there are
	 * any, every read and wait of a CQ of the domain runs serve_gates
	 * (pmv_hooks_run_domain), which serves the confirmed gates */
	int gates_served;
	void (*serve_gates)(struct pmv_domain *dom, uint64_t now_ms);
	int agent_wake_fd;        /* the agent's eventfd (-1: no agent) */
	bool agent_sleeping;      /* the agent sleeps on fds (atomic) */
	uint64_t agent_eps_ver;   /* bumped when an endpoint joins or leaves
				   * the agent or changes the lists whose
				   * reads serve it (atomic) */
	/* gates (pmv_gate.c): words read and set atomically, no lock */
	uint64_t gate[PMV_GATES];
	struct pmv_ep *gate_owner[PMV_GATES]; /* claimed by compare-exchange */
	uint16_t gate_last_id[PMV_GATES];     /* its owner's */
	unsigned gate_next;                   /* where the next claim looks */
	/* gates that confirmed requests nobody looked at since: one bit per
	 * gate, set by pmv_gate_confirm, taken by pmv_serve_gates */
	uint64_t gate_ready[PMV_GATES / 64];
	/* the words of gate_ready that may have a bit set (bit w: word w): a
	 * read of a CQ with no gate marked looks at this word alone */
	uint64_t gate_ready_words;
	struct pmv_ep *gate_server[PMV_GATES]; /* served on its events */
	int gate_serving;                      /* pmv_serve_gates running */
	uint64_t gate_swept_ms;   /* when a word of gates was last marked
				   * (atomic) */
	unsigned gate_swept_word; /* the word marked next, in turn (atomic) */
};

struct pmv_cq;
struct pmv_eq;
struct pmv_cntr;
struct pmv_ini;
struct pmv_tgt;

/* The RMA counters of a pmem endpoint pmemverbs counts itself (pmv_ep_cntr.c). */
enum pmv_rma_cntr { PMV_CNTR_WRITE, PMV_CNTR_READ, PMV_CNTR_REMOTE_WRITE,
		    PMV_RMA_CNTRS };

/* Objects whose reads serve a pmem endpoint's commit requests: its receive
 * and transmit CQs, its EQ, its FI_SEND and FI_RECV counters. */
enum { PMV_SERVE_RX_CQ, PMV_SERVE_TX_CQ, PMV_SERVE_EQ, PMV_SERVE_SEND_CNTR,
       PMV_SERVE_RECV_CNTR, PMV_SERVE_OBJS };

/* An active endpoint, or a shared receive context (same wrapper). */
struct pmv_ep {
	struct fid_ep ep_fid;
	struct fid_ep *core;
	struct pmv_domain *domain;
	bool pmem;                 /* FI_RMA_PMEM: commits handled here */
	uint64_t tx_op_flags;      /* default op flags (FI_COMMIT_COMPLETE?) */
	uint64_t delivery_commit;  /* FI_DELIVERY_COMPLETE if it commits, or 0 */
	struct pmv_cq *tx_cq, *rx_cq;
	bool tx_selective;         /* tx CQ bound with FI_SELECTIVE_COMPLETION */
	struct pmv_inbox inbox;
	struct pmv_peer peer;
	bool gated;                /* takes gated requests (pmv_gate.c) */
	uint16_t gate_id;          /* ... at this gate */
	pthread_mutex_t lock;      /* srx contexts only; never taken */
	struct pmv_ini *ini;       /* initiator commit engine (initiator/) */
	bool raw_ordered;          /* the core orders reads after writes */
	struct pmv_tgt *tgt;       /* target state (target/), pmem only */
	bool connected;            /* FI_CONNECTED was read (domain lock) */
	struct pmv_eq *eq;         /* bound EQ (pmv_bind_core_eq); a pmem
				    * endpoint's reads of it serve it */
	struct pmv_cntr *cntr[2];  /* bound FI_SEND and FI_RECV counters */
	struct pmv_cntr *rma_cntr[PMV_RMA_CNTRS]; /* counted here, not bound
				    * to the core (pmv_ep_cntr.c) */
	struct pmv_hook cntr_hook[PMV_RMA_CNTRS]; /* their reads progress it */
	struct pmv_hook hook;      /* engine progress, run by the tx CQ */
	struct fi_pmem_ep_counters counters;
	bool unusable_warned;      /* "endpoint unusable" logged (atomic) */
	uint32_t warned;           /* PMV_WARNED_* bits logged (atomic) */
};

/* Warnings of failures an application may retry, logged once per endpoint:
 * a refused commit's PMV_ERR_* code each has a bit of its own. */
#define PMV_WARNED_NOT_CONNECTED 1u
#define PMV_WARNED_ACK           2u
#define PMV_WARNED_ERR(code)     (1u << (8 + ((code) - PMV_ERR_BASE) % 24))

/* True the first time the bit is set on ep: that warning is logged once. */
static inline bool pmv_ep_first_warning(struct pmv_ep *ep, uint32_t bit)
{
	return !(__atomic_fetch_or(&ep->warned, bit, __ATOMIC_RELAXED) & bit);
}

#include "pmv_queues.h"

struct pmv_mr {
	struct fid_mr mr_fid;
	struct fid_mr *core;
	struct pmv_domain *domain;
	struct pmv_mr *next;      /* domain MR list (dom->mrs) */
	struct pmv_mr **pprev;    /* the link to it, for an O(1) unlink */
	uint64_t access;
	uint64_t flags;
	void *base;               /* single-iov regions only */
	size_t len;
	size_t iov_count;
	uint64_t rma_base;        /* RMA address of base (virtual or offset) */
	struct pmv_persistence persistence;
	int refs;                 /* requests being served on it (atomic) */
	uint32_t reg_gen;         /* the domain's generation at registration */
	enum fi_hmem_iface iface; /* FI_HMEM_SYSTEM: host memory */
};

/* pmv_fault.c: fault injection at every failure point (test only). */
enum pmv_fault_point {
	PMV_FAULT_CORE_OP, /* an operation the engine posts to the core */
	PMV_FAULT_CORE_FULL, /* the same, refused as if the core were full */
	PMV_FAULT_PERSIST, /* a persist call of the agent (msync, flush) */
	PMV_FAULT_ALLOC,   /* an allocation of the commit machinery */
	PMV_FAULT_MR_REG,  /* a registration with the core (inbox, region) */
	PMV_FAULT_PUSH,    /* a push of the profile table to a peer */
	PMV_FAULT_CLOSE,   /* a close of a core object (it stays open) */
	PMV_FAULT_POINTS,
};
bool pmv_fault(enum pmv_fault_point point);

/* target/pmv_profile.c, as pmv_mr.c uses it */
int pmv_persistence_detect(const void *addr, size_t len,
			   struct pmv_persistence *p);
int pmv_persistence_from_map(struct pmem2_map *map,
			     struct pmv_persistence *p);
void pmv_persistence_release(struct pmv_persistence *p);
void pmv_persistence_volatile(struct pmv_persistence *p);
/* pmv_inbox.c: CM header and inbox of a pmem endpoint. */
struct pmv_ack *pmv_inbox_ack(struct pmv_inbox *inbox, uint64_t seq);
struct pmv_req *pmv_inbox_req(struct pmv_inbox *inbox, uint64_t seq);
uint64_t pmv_peer_ack_addr(const struct pmv_peer *peer, uint64_t seq);
uint64_t pmv_peer_req_addr(const struct pmv_peer *peer, uint64_t seq);
uint64_t pmv_peer_gen_addr(const struct pmv_peer *peer);
uint64_t pmv_peer_profiles_addr(const struct pmv_peer *peer);
uint32_t pmv_ep_slot_bytes(const struct pmv_ep *ep);
unsigned pmv_req_max_extents(uint32_t slot_size);

/* initiator/: the commit engine, as the pass-through objects use it. */
int pmv_ini_open(struct pmv_ep *ep);
void pmv_ini_close(struct pmv_ep *ep);
ssize_t pmv_commit_writemsg(struct pmv_ep *ep, const struct fi_msg_rma *msg,
			    uint64_t flags);
ssize_t pmv_commit_inject(struct pmv_ep *ep, const struct fi_msg_rma *msg,
			  uint64_t flags);
int pmv_ini_prepare(struct pmv_ep *ep, uint64_t key);
ssize_t pmv_ini_track(struct pmv_ep *ep, uint64_t key, uint64_t addr,
		      uint64_t len);
void pmv_ini_fail_all(struct pmv_ep *ep, int err);
enum fi_pmem_method pmv_ini_method(struct pmv_ep *ep, uint64_t key);
enum fi_pmem_profile pmv_ini_peer_profile(struct pmv_ep *ep, uint64_t key);
void pmv_ini_counters(struct pmv_ep *ep, struct fi_pmem_ep_counters *out);
/*
 * True if an operation on [addr, addr + len) of key (len 0: the whole key)
 * must wait for a send commit in flight; one load while none is
 * (pmv_m_send.c).
 */
bool pmv_send_conflict(struct pmv_ep *ep, uint64_t key, uint64_t addr,
		       uint64_t len);

/* pmv_fault.c: milliseconds on CLOCK_MONOTONIC. */
uint64_t pmv_ms_now(void);
/* Milliseconds left until deadline (pmv_ms_now's clock), at least 0. */
int pmv_ms_until(uint64_t deadline);
/* Microseconds on CLOCK_MONOTONIC (no test skew). */
uint64_t pmv_us_now(void);
extern uint64_t pmv_clock_skew_ms; /* unit tests only: time jumps forward */
/* Reads of either clock by this thread so far (0 outside test builds). */
unsigned long pmv_clock_reads(void);

/*
 * True for a core error that means the connection itself is gone (the
 * core cancels what was in flight when its connection breaks, and may
 * report it after the endpoint closed).
 */
static inline bool pmv_err_conn_lost(int err)
{
	switch (err) {
	case FI_ECANCELED:
	case FI_ECONNRESET:
	case FI_ECONNABORTED:
	case FI_ECONNREFUSED:
	case FI_ENOTCONN:
	case FI_ESHUTDOWN:
	case FI_ETIMEDOUT:
	case FI_EHOSTUNREACH:
	case FI_ENETDOWN:
	case EPIPE:
		return true;
	default:
		return false;
	}
}

/* target/: the agent and serving, as the pass-through objects use them
 * (pmv_agent.c; pmv_serve_attach: pmv_serve_hooks.c; pmv_tgt_*:
 * pmv_tgt.c, a pmem endpoint's target state, struct pmv_tgt). */
int pmv_tgt_open(struct pmv_ep *ep);
void pmv_tgt_close(struct pmv_ep *ep);
void pmv_tgt_hold(struct pmv_ep *ep);
void pmv_tgt_release(struct pmv_ep *ep);
bool pmv_tgt_in_agent(const struct pmv_ep *ep);
void pmv_agent_serve_again(struct pmv_ep *ep, bool in_agent);
int pmv_agent_add(struct pmv_domain *dom, struct pmv_ep *ep);
void pmv_agent_remove(struct pmv_domain *dom, struct pmv_ep *ep);
void pmv_agent_stop(struct pmv_domain *dom);
void pmv_serve_attach(struct pmv_ep *ep);
void pmv_agent_stop_all(void);
void pmv_domain_publish_gen(struct pmv_domain *dom);
void pmv_domain_publish_profiles(struct pmv_domain *dom);
void pmv_ep_connected(struct pmv_ep *ep);


/* pmv_gate.c */
bool pmv_gate_passed(const struct pmv_ep *ep, uint64_t seq);
void pmv_gate_serve_on(struct pmv_ep *ep);
void pmv_gate_serve_off(struct pmv_ep *ep);
bool pmv_gate_serves(const struct pmv_ep *ep);
uint64_t pmv_gate_take_marked_words(struct pmv_domain *dom);
uint64_t pmv_gate_take_marks(struct pmv_domain *dom, unsigned word);
void pmv_gate_put_marks(struct pmv_domain *dom, unsigned word, uint64_t bits);
void pmv_gate_sweep(struct pmv_domain *dom, uint64_t now_ms);
struct pmv_ep *pmv_gate_server(struct pmv_domain *dom, unsigned idx);
void pmv_gate_server_done(struct pmv_domain *dom);
/* pmv_mr_index.c: regions by key and by descriptor; domain lock held */
struct pmv_mr *pmv_mr_index_key(struct pmv_domain *dom, uint64_t key);
bool pmv_mr_index_desc(struct pmv_domain *dom, void *desc);
/* pmv_err.c: the one table of PMV_ERR_* codes */
const char *pmv_strerror(int prov_errno);
int pmv_err_to_fi(int prov_errno);

/* pmv_ep_cntr.c: counts one success (or, err, one error) in ep's counter
 * of which, if any. */
void pmv_ep_cntr_count(struct pmv_ep *ep, enum pmv_rma_cntr which, bool err);

#endif /* PMV_H */
