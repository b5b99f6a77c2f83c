/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: the initiator's commit engine (internal to initiator/).
 *
 * One commit ring per endpoint, one sequence space for every method.  A
 * commit records the method chosen for it and the registration generation
 * of the profile that choice was made under.  Methods are objects behind
 * one ops table (pmv_m_*.c).  The engine state (struct pmv_ini) is
 * reference counted: the endpoint holds one reference, every internal
 * operation in flight another, so a completion that arrives after the
 * endpoint closed finds its engine and is dropped there.
 */
#ifndef PMV_INITIATOR_H
#define PMV_INITIATOR_H

#include "pmv.h"
#include "pmv_iop.h"

#define PMV_RING 64 /* commits in flight per endpoint */
#define PMV_REQ_BUF_WORDS (256 / sizeof(uint64_t)) /* the largest slot */

/* Ranges written to one key since its last commit (pmv_scope.c). */
#define PMV_MAX_EXTENTS 16
/* Extents kept per key at most; past it the closest merge, holes or not */
#define PMV_SCOPE_CAP 1024
struct pmv_key_scope {
	uint64_t key;
	unsigned count, cap;
	uint32_t gen;   /* generation known at its oldest write (count > 0) */
	struct pmv_extent *ext; /* sorted by address, disjoint, not touching */
};

struct pmv_scope {
	struct pmv_key_scope *keys;
	size_t nkeys, cap;
	unsigned limit; /* extents kept per key before neighbours coalesce */
	uint64_t gap;   /* unwritten bytes two extents may merge over */
	uint64_t page;  /* pages no write touched are never covered */
	uint32_t gen;   /* the peer's generation known now (pmv_scope_add) */
};

#define PMV_MAX_IOV 4

/* What decides the commit method for a key (pmv_method.c). */
struct pmv_key_facts {
	uint8_t profile;   /* enum fi_pmem_profile the target reported */
	uint8_t transport; /* enum pmv_transport */
	bool ddio_off;     /* the target declared DDIO off */
	bool raw_ordered;  /* the core orders reads after writes */
	bool gated;        /* the peer offered a gate: one-write agent */
};

/* The older of two generations. */
static inline uint32_t pmv_gen_older(uint32_t a, uint32_t b)
{
	return pmv_gen_before(a, b) ? a : b;
}

enum pmv_commit_state {
	PMV_C_FREE,
	PMV_C_POSTED,   /* its operations are with the core */
	PMV_C_DEFERRED, /* data posted; the op that follows waits for room */
	PMV_C_DONE,     /* reported (or internal and finished) */
};

struct pmv_method_ops;

struct pmv_commit {
	enum pmv_commit_state state;
	uint64_t cseq;       /* its number in the ring */
	const struct pmv_method_ops *m;
	void *context;
	uint64_t key, flags, len, data;
	uint32_t gen;        /* registration generation of the method choice */
	uint32_t floor;      /* generation known at the oldest write it
			      * covers: its request carries it, and a
			      * read-flush proves nothing older */
	bool internal;       /* a fence's flush: reports nothing */
	bool spill;          /* internal: extents a commit's request could
			      * not carry (pmv_request.c) */
	bool silent;         /* an inject call's: no completion on success */
	unsigned iops;       /* internal operations not completed yet */
	bool answered;       /* the ack, or the flush op's completion, came */
	bool reported;       /* the application was told */
	struct pmv_cq *room; /* CQ with room reserved for its completion */
	int status;          /* 0 or a PMV_ERR_* code */
	int core_err;        /* an internal op's fi_errno, if one failed */
	uint64_t req_seq;    /* its request (agent, send), 0: none */
	struct pmv_extent inl; /* send: where the data goes */
	unsigned next;       /* ranges it covers, for a fallback to the agent */
	struct pmv_extent ext[PMV_MAX_EXTENTS];
	/* its request, when it travels in the data's write (not cleared) */
	uint64_t req_buf[PMV_REQ_BUF_WORDS];
};

/* What the peer reported for a key, and the generation it held in. */
#define PMV_PEER_KEYS 16
struct pmv_key_fact {
	bool known;
	uint8_t profile;
	uint8_t target_flags;
	uint32_t gen;
	uint64_t key;
};

/* Keys with a commit failed since their last fenced commit (pmv_fence.c). */
struct pmv_fence_key {
	uint64_t key;
	bool used;
};

struct pmv_fence_set {
	struct pmv_fence_key *slots; /* open addressing, at most half full */
	size_t cap, count;
	bool lost;  /* a failure could not be remembered: every fence fails */
};

struct pmv_ini {
	pthread_mutex_t lock;
	int refs;              /* the endpoint's, one per iop in flight */
	struct pmv_ep *ep;     /* NULL once the endpoint closed */
	int error;             /* sticky: peer gone (-FI_ENOTCONN, -FI_ETIMEDOUT) */
	uint64_t quiet_since;  /* ms: commits wait and the peer said nothing */
	bool probing;          /* a probe read is with the core */
	struct pmv_scope scope;
	uint64_t head, tail;   /* commits [head, tail) are in the ring */
	struct pmv_commit ring[PMV_RING];
	uint64_t next_req, acked_req; /* request seqs (from 1) */
	uint64_t req_commit[PMV_SLOTS]; /* request seq -> commit seq */
	unsigned deferred;     /* commits in PMV_C_DEFERRED */
	unsigned sends_busy;   /* send commits not acked (read without lock) */
	struct pmv_key_fact facts[PMV_PEER_KEYS];
	unsigned facts_next;
	struct pmv_fence_set fence_failed; /* keys whose next fence fails */
	/* keys whose next commit fails: an earlier write's range could not
	 * be recorded, or a spill naming it failed with no commit left to
	 * tell (the same never-forgetting set as fences) */
	struct pmv_fence_set scope_lost;
};

/* A commit method (librpma's flush object: one implementation each). */
/* Which side proves a commit durable (FI_FENCE's rule, the overlap rule). */
enum pmv_method_family {
	PMV_FAMILY_AGENT, /* the target's agent persists what a request names */
	PMV_FAMILY_FLUSH, /* an operation behind the data proves it placed */
};

/* What a commit must wait for while send commits are in flight. */
enum pmv_overlap_rule {
	PMV_OVERLAP_NONE,   /* nothing: the agent serves requests in order */
	PMV_OVERLAP_RANGES, /* a send whose range its data meets */
	PMV_OVERLAP_KEY,    /* every send to the key (placement != durable) */
};

/*
 * A method: its behaviour is all here, and pmv_commit.c reads nothing
 * else; no method names another (fallback, fenced and takeover are ids,
 * resolved by pmv_method_ops()).
 */
struct pmv_method_ops {
	enum fi_pmem_method id;
	enum pmv_method_family family;
	enum pmv_overlap_rule overlap;
	/* false if msg cannot go by this method (NULL: any can) */
	bool (*fits)(const struct pmv_ini *ini, const struct fi_msg_rma *msg);
	/* the method a commit that does not fit takes */
	enum fi_pmem_method fallback;
	/* FI_FENCE's rule before anything is posted (NULL: the method
	 * fences in its own post): 0, -FI_EAGAIN or a PMV_ERR_*; may move
	 * the commit to the fenced method (*m); lock held */
	int (*fence)(struct pmv_ini *ini, const struct pmv_method_ops **m,
		     const struct fi_msg_rma *msg);
	/* the method a fenced commit takes when its data fits it, once the
	 * fence rule passed (one round trip; NONE: this one) */
	enum fi_pmem_method fenced;
	/* the method that takes over a commit this one cannot finish (its
	 * data already placed): its takeover op resends c */
	enum fi_pmem_method takeover;
	/* makes c this method's, its data placed: 0 (sent or deferred) */
	int (*take_over)(struct pmv_ini *ini, struct pmv_commit *c);
	/* 0 if the commit can be posted now, else -FI_EAGAIN; lock held */
	int (*can_post)(struct pmv_ini *ini, const struct fi_msg_rma *msg,
			uint64_t flags);
	/* posts c's operations: 0, -FI_EAGAIN (nothing sent) or PMV_ERR_* */
	int (*post)(struct pmv_ini *ini, struct pmv_commit *c,
		    const struct fi_msg_rma *msg);
	/* posts what waits behind posted data: 0 or -FI_EAGAIN */
	int (*resume)(struct pmv_ini *ini, struct pmv_commit *c);
	/* the flush op (read-flush, completion write) of c completed */
	void (*op_done)(struct pmv_ini *ini, struct pmv_commit *c);
};

extern const struct pmv_method_ops pmv_m_agent;
extern const struct pmv_method_ops pmv_m_send;
extern const struct pmv_method_ops pmv_m_read_flush;
extern const struct pmv_method_ops pmv_m_completion;

/* pmv_method.c */
const struct pmv_method_ops *pmv_method_ops(enum fi_pmem_method id);
const struct pmv_method_ops *pmv_method_fit(const struct pmv_ini *ini,
					    const struct pmv_method_ops *m,
					    const struct fi_msg_rma *msg);
int pmv_method_take_over(struct pmv_ini *ini, struct pmv_commit *c);
bool pmv_method_correct(enum fi_pmem_method method,
			const struct pmv_key_facts *k);
enum fi_pmem_method pmv_method_fastest(const struct pmv_key_facts *k);
enum fi_pmem_method pmv_method_select(const struct pmv_key_facts *k,
				      uint64_t flags);
bool pmv_method_may_take(enum fi_pmem_method id);

/* pmv_scope.c */
void pmv_scope_init(struct pmv_scope *scope, unsigned limit);
void pmv_scope_fini(struct pmv_scope *scope);
int pmv_scope_prepare(struct pmv_scope *scope, uint64_t key);
int pmv_scope_add(struct pmv_scope *scope, uint64_t key, uint64_t addr,
		  uint64_t len);
int pmv_scope_add_gen(struct pmv_scope *scope, uint64_t key, uint64_t addr,
		      uint64_t len, uint32_t gen);
bool pmv_scope_empty(const struct pmv_scope *scope, uint64_t key);
bool pmv_scope_gen(const struct pmv_scope *scope, uint64_t key,
		   uint32_t *gen);
unsigned pmv_scope_count(const struct pmv_scope *scope, uint64_t key);
unsigned pmv_scope_take(struct pmv_scope *scope, uint64_t key,
			struct pmv_extent *out, unsigned max);
unsigned pmv_scope_fit(struct pmv_scope *scope, uint64_t key, unsigned max,
		       bool any);
unsigned pmv_scope_take_all(struct pmv_scope *scope, uint64_t key,
			    struct pmv_extent *out, unsigned max);

bool pmv_send_conflict_locked(struct pmv_ep *ep, uint64_t key, uint64_t addr,
			      uint64_t len);
/* pmv_m_send.c: send commits in flight on ep (one load). */
unsigned pmv_ini_sends_busy(const struct pmv_ep *ep);

/* pmv_ring.c */
void pmv_ini_unref(struct pmv_ini *ini);
void pmv_ini_report(struct pmv_ini *ini, struct pmv_commit *c);
void pmv_ini_try_done(struct pmv_ini *ini, struct pmv_commit *c);
struct pmv_commit *pmv_ini_commit(struct pmv_ini *ini, uint64_t cseq);
bool pmv_ini_ring_full(const struct pmv_ini *ini);
struct pmv_commit *pmv_ini_commit_new(struct pmv_ini *ini,
				      const struct fi_msg_rma *msg,
				      uint64_t flags);
void pmv_ini_commit_drop(struct pmv_ini *ini, struct pmv_commit *c);
int pmv_ini_post_op(struct pmv_ini *ini, struct pmv_commit *c,
		    enum pmv_iop_kind kind, const struct fi_msg_rma *msg,
		    uint64_t flags, bool read);
void pmv_ini_finish(struct pmv_ini *ini, struct pmv_commit *c, int status);
void pmv_ini_fail_ring(struct pmv_ini *ini, int status, int core_err);
int pmv_ini_read_gen(struct pmv_ini *ini, struct pmv_commit *c,
		     enum pmv_iop_kind kind, uint64_t *landing, uint64_t flags);
int pmv_ini_probe(struct pmv_ini *ini);
void pmv_ini_conn_failed(struct pmv_ini *ini, int err);
void pmv_ini_take_scope(struct pmv_ini *ini, struct pmv_commit *c,
			unsigned max);
bool pmv_ini_key_busy(const struct pmv_ini *ini, uint64_t key,
		      const struct pmv_commit *upto, bool agent_family);
/* A spill failed: the commits to its key not yet answered fail with it. */
void pmv_ini_spill_failed(struct pmv_ini *ini, const struct pmv_commit *f);

/* pmv_fence.c: keys whose next fence, or next commit, must fail */
void pmv_fence_note_failure(struct pmv_fence_set *set, uint64_t key);
bool pmv_fence_failed(struct pmv_fence_set *set, uint64_t key, bool clear);
void pmv_fence_fini(struct pmv_fence_set *set);
/* True (once) if key's scope lost a range: its next commit fails. */
bool pmv_ini_scope_lost(struct pmv_ini *ini, uint64_t key);
void pmv_ini_scope_add(struct pmv_ini *ini, uint64_t key, uint64_t addr,
		       uint64_t len, uint32_t gen);
void pmv_commit_scope_add(struct pmv_ini *ini, struct pmv_commit *c,
			  uint64_t addr, uint64_t len, uint32_t gen);

/* pmv_request.c: requests and acks */
uint64_t pmv_send_bytes(const struct fi_msg_rma *msg);
unsigned pmv_send_scope_room(const struct pmv_ini *ini,
			     const struct fi_msg_rma *msg);
void pmv_send_fill(struct pmv_req *req, const struct fi_msg_rma *msg);
/*
 * Sends ahead, in internal requests, the key's extents that commit c's
 * request (room extents beside its data) cannot carry; a fenced c's
 * fence_back grows to cover them.  0, -FI_EAGAIN or the core's error.
 */
int pmv_req_spill(struct pmv_ini *ini, struct pmv_commit *c, unsigned room,
		  uint32_t *fence_back);
int pmv_req_send(struct pmv_ini *ini, struct pmv_commit *c,
		 const struct fi_msg_rma *inl, uint32_t fence_back);
bool pmv_req_room(const struct pmv_ini *ini);
bool pmv_req_can_join(const struct pmv_ini *ini, const struct pmv_commit *c,
		      const struct fi_msg_rma *msg);
int pmv_req_send_joined(struct pmv_ini *ini, struct pmv_commit *c,
			const struct fi_msg_rma *msg);
void pmv_ini_poll_acks(struct pmv_ini *ini);

/* pmv_facts.c: what the peer reported of its regions */
void pmv_ini_remember_fact(struct pmv_ini *ini, uint64_t key, uint8_t profile,
			   uint8_t target_flags, uint32_t gen);
void pmv_ini_forget_facts(struct pmv_ini *ini, uint32_t gen);
const struct pmv_key_fact *pmv_ini_fact(struct pmv_ini *ini, uint64_t key);
void pmv_ini_learn_gen(struct pmv_ini *ini, uint32_t gen);
void pmv_ini_cover_floor(struct pmv_ini *ini, struct pmv_commit *c);


/* pmv_m_send.c */
bool pmv_send_fits(const struct pmv_ini *ini, const struct fi_msg_rma *msg);
uint32_t pmv_send_fence_back(struct pmv_ini *ini, uint64_t key);
bool pmv_send_overlaps(const struct pmv_ini *ini, uint64_t key,
		       uint64_t addr, uint64_t len);

/* pmv_m_read_flush.c */
ssize_t pmv_flush_read(struct pmv_ini *ini, struct pmv_commit *c,
		       enum pmv_iop_kind kind, uint64_t flags);
int pmv_flush_status(ssize_t ret);
int pmv_flush_can_post(struct pmv_ini *ini, const struct fi_msg_rma *msg,
		       uint64_t flags);
int pmv_flush_post_data(struct pmv_ini *ini, struct pmv_commit *c,
			const struct fi_msg_rma *msg,
			enum pmv_iop_kind data_kind, uint64_t flags);
int pmv_read_flush_post(struct pmv_ini *ini, struct pmv_commit *c,
			const struct fi_msg_rma *msg);
int pmv_read_flush_resume(struct pmv_ini *ini, struct pmv_commit *c);
void pmv_read_flush_op_done(struct pmv_ini *ini, struct pmv_commit *c);

/* The endpoint's sticky error: set under ini->lock, read without it by
 * posting threads (pmv_commit_check). */
static inline int pmv_ini_error(const struct pmv_ini *ini)
{
	return __atomic_load_n(&ini->error, __ATOMIC_ACQUIRE);
}

static inline void pmv_ini_set_error(struct pmv_ini *ini, int err)
{
	__atomic_store_n(&ini->error, err, __ATOMIC_RELEASE);
}

#endif /* PMV_INITIATOR_H */
