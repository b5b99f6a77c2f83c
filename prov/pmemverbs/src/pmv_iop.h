/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: internal operations.
 *
 * Every operation pmemverbs posts to the core for its own purposes (a
 * commit's data write, a read-flush read, a commit request, an ack) carries
 * a struct pmv_iop as its context and asks for a completion.  The iop comes
 * from the pool of the completion queue its completion will arrive in (the
 * endpoint's transmit CQ), and is owned by that completion: it is freed when
 * the completion is read, or when the CQ closes, never when the endpoint
 * closes.  Its owner is kept alive by a reference until then, so a stale
 * completion is handed to the owner that posted it, which drops it, and is
 * never attributed to another endpoint.
 */
#ifndef PMV_IOP_H
#define PMV_IOP_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <rdma/fi_eq.h>

struct pmv_iop;

/* Called once per iop: err NULL on success, else the core's error entry. */
typedef void (*pmv_iop_done_fn)(struct pmv_iop *iop,
				const struct fi_cq_err_entry *err);

enum pmv_iop_kind {
	PMV_IOP_DATA,  /* a commit's data write */
	PMV_IOP_FLUSH, /* a read-flush (or completion-method) read */
	PMV_IOP_FENCE, /* the read in front of a fenced flush commit */
	PMV_IOP_REQ,   /* a commit request into the peer's inbox */
	PMV_IOP_PROBE, /* a read asking whether the peer still answers */
};

struct pmv_iop {
	struct fi_context2 ctx; /* first: the core hands this pointer back */
	pmv_iop_done_fn done;
	void *owner;
	uint64_t cseq;          /* the commit it serves */
	enum pmv_iop_kind kind;
	struct pmv_iop *next;   /* free list */
};

struct pmv_iop_slab;

struct pmv_iop_pool {
	pthread_mutex_t lock;
	struct pmv_iop_slab *slabs;
	struct pmv_iop *free;
	size_t outstanding;
};

void pmv_iop_pool_init(struct pmv_iop_pool *pool);
void pmv_iop_pool_fini(struct pmv_iop_pool *pool);
struct pmv_iop *pmv_iop_get(struct pmv_iop_pool *pool, pmv_iop_done_fn done,
			    void *owner, enum pmv_iop_kind kind, uint64_t cseq);
void pmv_iop_put(struct pmv_iop_pool *pool, struct pmv_iop *iop);
struct pmv_iop *pmv_iop_find(struct pmv_iop_pool *pool, const void *context);
void pmv_iop_complete(struct pmv_iop_pool *pool, struct pmv_iop *iop,
		      const struct fi_cq_err_entry *err);

/*
 * Completions taken under a CQ's lock, run once it is released: their
 * owners post to the core (a commit's next operation, its request), which
 * no reader of that CQ must wait behind.
 */
#define PMV_IOP_BATCH 32
struct pmv_iop_batch {
	unsigned n;
	struct {
		struct pmv_iop *iop;
		bool failed;
		struct fi_cq_err_entry err; /* err_data not kept */
	} e[PMV_IOP_BATCH];
};

static inline unsigned pmv_iop_batch_room(const struct pmv_iop_batch *b)
{
	return PMV_IOP_BATCH - b->n;
}

void pmv_iop_batch_add(struct pmv_iop_batch *b, struct pmv_iop *iop,
		       const struct fi_cq_err_entry *err);
void pmv_iop_batch_run(struct pmv_iop_pool *pool, struct pmv_iop_batch *b);

#endif /* PMV_IOP_H */
