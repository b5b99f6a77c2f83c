/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: the pool of internal operations of a completion queue
 * (pmv_iop.h).  Iops live in slabs that stay until the CQ closes, so an
 * application context is told from an iop by address ranges alone, without
 * ever reading the memory an application context points to.
 */
#include <stdlib.h>

#include "pmv.h"

#define PMV_IOP_SLAB 256

struct pmv_iop_slab {
	struct pmv_iop_slab *next;
	struct pmv_iop iops[PMV_IOP_SLAB];
};

void pmv_iop_pool_init(struct pmv_iop_pool *pool)
{
	pthread_mutex_init(&pool->lock, NULL);
	pool->slabs = NULL;
	pool->free = NULL;
	pool->outstanding = 0;
}

/*
 * Hands every iop still outstanding to its owner as canceled (the core can
 * no longer complete it), then frees the slabs.
 */
void pmv_iop_pool_fini(struct pmv_iop_pool *pool)
{
	struct fi_cq_err_entry canceled = { .err = FI_ECANCELED };
	struct pmv_iop_slab *slab;
	size_t i;

	for (slab = pool->slabs; slab; slab = slab->next)
		for (i = 0; i < PMV_IOP_SLAB; i++)
			if (slab->iops[i].done) {
				canceled.op_context = &slab->iops[i];
				slab->iops[i].done(&slab->iops[i], &canceled);
			}
	while ((slab = pool->slabs)) {
		pool->slabs = slab->next;
		free(slab);
	}
	pthread_mutex_destroy(&pool->lock);
}

/* Adds a slab to the free list; lock held.  False when out of memory. */
static bool pmv_iop_grow(struct pmv_iop_pool *pool)
{
	struct pmv_iop_slab *slab = pmv_fault(PMV_FAULT_ALLOC) ? NULL :
				    calloc(1, sizeof(*slab));
	size_t i;

	if (!slab)
		return false;
	for (i = 0; i < PMV_IOP_SLAB; i++) {
		slab->iops[i].next = pool->free;
		pool->free = &slab->iops[i];
	}
	slab->next = pool->slabs;
	/* pmv_iop_find peeks at slabs before taking the lock */
	__atomic_store_n(&pool->slabs, slab, __ATOMIC_RELEASE);
	return true;
}

struct pmv_iop *pmv_iop_get(struct pmv_iop_pool *pool, pmv_iop_done_fn done,
			    void *owner, enum pmv_iop_kind kind, uint64_t cseq)
{
	struct pmv_iop *iop = NULL;

	pmv_lock(&pool->lock, PMV_LOCK_IOPS);
	if (pool->free || pmv_iop_grow(pool)) {
		iop = pool->free;
		pool->free = iop->next;
		__atomic_add_fetch(&pool->outstanding, 1, __ATOMIC_RELAXED);
		iop->done = done;
		iop->owner = owner;
		iop->kind = kind;
		iop->cseq = cseq;
	}
	pmv_unlock(&pool->lock, PMV_LOCK_IOPS);
	return iop;
}

void pmv_iop_put(struct pmv_iop_pool *pool, struct pmv_iop *iop)
{
	pmv_lock(&pool->lock, PMV_LOCK_IOPS);
	iop->done = NULL;
	iop->owner = NULL;
	iop->next = pool->free;
	pool->free = iop;
	__atomic_sub_fetch(&pool->outstanding, 1, __ATOMIC_RELAXED);
	pmv_unlock(&pool->lock, PMV_LOCK_IOPS);
}

/* The iop a completion's context names, or NULL for the application's. */
struct pmv_iop *pmv_iop_find(struct pmv_iop_pool *pool, const void *context)
{
	const char *c = context;
	struct pmv_iop_slab *slab;
	struct pmv_iop *found = NULL;

	if (!__atomic_load_n(&pool->slabs, __ATOMIC_ACQUIRE))
		return NULL;
	pmv_lock(&pool->lock, PMV_LOCK_IOPS);
	for (slab = pool->slabs; slab && !found; slab = slab->next)
		if (c >= (const char *) slab->iops &&
		    c < (const char *) (slab->iops + PMV_IOP_SLAB))
			found = (struct pmv_iop *) context;
	if (found && !found->done)
		found = NULL; /* not posted: cannot be a completion of ours */
	pmv_unlock(&pool->lock, PMV_LOCK_IOPS);
	return found;
}

/* Runs the iop's completion, then frees it: the completion owned it. */
void pmv_iop_complete(struct pmv_iop_pool *pool, struct pmv_iop *iop,
		      const struct fi_cq_err_entry *err)
{
	iop->done(iop, err);
	pmv_iop_put(pool, iop);
}

/* Keeps a completion for later (room checked by the caller). */
void pmv_iop_batch_add(struct pmv_iop_batch *b, struct pmv_iop *iop,
		       const struct fi_cq_err_entry *err)
{
	b->e[b->n].iop = iop;
	b->e[b->n].failed = err != NULL;
	if (err) {
		b->e[b->n].err = *err;
		b->e[b->n].err.err_data = NULL; /* the core's, gone by then */
		b->e[b->n].err.err_data_size = 0;
	}
	b->n++;
}

/* Runs the completions kept, in the order they were read; no lock held. */
void pmv_iop_batch_run(struct pmv_iop_pool *pool, struct pmv_iop_batch *b)
{
	for (unsigned i = 0; i < b->n; i++)
		pmv_iop_complete(pool, b->e[i].iop,
				 b->e[i].failed ? &b->e[i].err : NULL);
	b->n = 0;
}
