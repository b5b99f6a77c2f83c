/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: a CQ's own queue of entries (commit completions, FI_IMMED
 * target completions, the application's entries taken from the core while
 * the provider read it for its own): room reserved before an entry is
 * raised, so raising never fails; grown as needed, never dropped; read
 * before the core's.  Callers hold the CQ's lock except where noted; the
 * queue's own lock is cq->aux_lock.  Split from pmv_cq.c.
 */
#include <stdlib.h>
#include <string.h>

#include "pmv_objects.h"

size_t pmv_cq_entry_size(enum fi_cq_format format)
{
	switch (format) {
	case FI_CQ_FORMAT_MSG:
		return sizeof(struct fi_cq_msg_entry);
	case FI_CQ_FORMAT_DATA:
		return sizeof(struct fi_cq_data_entry);
	case FI_CQ_FORMAT_TAGGED:
		return sizeof(struct fi_cq_tagged_entry);
	default:
		return sizeof(struct fi_cq_entry);
	}
}

/*
 * Makes room for one more entry beyond those queued and reserved;
 * aux_lock held.  False: no memory.
 */
static bool pmv_cq_aux_grow(struct pmv_cq *cq)
{
	size_t cap = cq->aux_cap ? cq->aux_cap * 2 : 64, i;
	struct pmv_cq_aux *aux;

	if (cq->aux_count + cq->aux_reserved < cq->aux_cap)
		return true;
	aux = pmv_fault(PMV_FAULT_ALLOC) ? NULL : malloc(cap * sizeof(*aux));
	if (!aux)
		return false;
	for (i = 0; i < cq->aux_count; i++)
		aux[i] = cq->aux[(cq->aux_head + i) % cq->aux_cap];
	free(cq->aux);
	cq->aux = aux;
	cq->aux_cap = cap;
	cq->aux_head = 0;
	return true;
}

/*
 * Reserves room for one entry pmemverbs will raise later (a commit's
 * completion, an FI_IMMED entry, a core error moved here), so that raising
 * it never needs memory and no completion is ever lost: 0, or -FI_ENOMEM
 * with nothing reserved (the caller then refuses or waits).
 */
int pmv_cq_reserve(struct pmv_cq *cq)
{
	bool ok;

	pmv_lock(&cq->aux_lock, PMV_LOCK_CQ_AUX);
	ok = pmv_cq_aux_grow(cq);
	cq->aux_reserved += ok;
	pmv_unlock(&cq->aux_lock, PMV_LOCK_CQ_AUX);
	if (ok)
		return 0;
	PMV_WARN(FI_LOG_CQ, "out of memory for a completion queue entry; the "
		 "operation is refused\n");
	return -FI_ENOMEM;
}

/* Gives back a reservation that raised nothing. */
void pmv_cq_unreserve(struct pmv_cq *cq)
{
	pmv_lock(&cq->aux_lock, PMV_LOCK_CQ_AUX);
	cq->aux_reserved--;
	pmv_unlock(&cq->aux_lock, PMV_LOCK_CQ_AUX);
}

/* Reserves room for up to want entries at once; how many (0: no memory). */
size_t pmv_cq_reserve_upto(struct pmv_cq *cq, size_t want)
{
	size_t n = 0;

	pmv_lock(&cq->aux_lock, PMV_LOCK_CQ_AUX);
	for (; n < want && pmv_cq_aux_grow(cq); n++)
		cq->aux_reserved++;
	pmv_unlock(&cq->aux_lock, PMV_LOCK_CQ_AUX);
	return n;
}

/* Gives back n reservations that raised nothing. */
void pmv_cq_unreserve_n(struct pmv_cq *cq, size_t n)
{
	pmv_lock(&cq->aux_lock, PMV_LOCK_CQ_AUX);
	cq->aux_reserved -= n;
	pmv_unlock(&cq->aux_lock, PMV_LOCK_CQ_AUX);
}

/* Queues an entry into room reserved for it (pmv_cq_reserve). */
void pmv_cq_push(struct pmv_cq *cq, const struct fi_cq_err_entry *entry,
		 bool is_error)
{
	struct pmv_cq_aux *a;

	pmv_lock(&cq->aux_lock, PMV_LOCK_CQ_AUX);
	cq->aux_reserved--;
	a = &cq->aux[(cq->aux_head + cq->aux_count) % cq->aux_cap];
	a->is_error = is_error;
	a->entry = *entry;
	a->src_addr = FI_ADDR_NOTAVAIL;
	__atomic_store_n(&cq->aux_count, cq->aux_count + 1, __ATOMIC_RELEASE);
	pmv_unlock(&cq->aux_lock, PMV_LOCK_CQ_AUX);
	/* a thread asleep on cq in pmemverbs's own poll sees no fd of the
	 * core's move for it (the agent queues FI_IMMED and commit entries) */
	pmv_wake_sleepers_on(cq->domain, cq);
}

/* Entries pmemverbs holds for the application (an FI_IMMED flood's size). */
size_t pmv_cq_backlog(struct pmv_cq *cq)
{
	return __atomic_load_n(&cq->aux_count, __ATOMIC_ACQUIRE);
}

/* Writes an entry in the CQ's format: the formats are prefixes of tagged. */
static void pmv_cq_copy_entry(struct pmv_cq *cq, void *dst,
			      const struct fi_cq_err_entry *src)
{
	struct fi_cq_tagged_entry t = {
		.op_context = src->op_context,
		.flags = src->flags,
		.len = src->len,
		.buf = src->buf,
		.data = src->data,
		.tag = src->tag,
	};

	memcpy(dst, &t, pmv_cq_entry_size(cq->format));
}

/* Pops queued entries; -FI_EAVAIL if an error is first, -FI_EAGAIN none. */
ssize_t pmv_cq_pop_aux(struct pmv_cq *cq, void *buf, size_t count,
		       fi_addr_t *src_addr)
{
	size_t size = pmv_cq_entry_size(cq->format), n = 0;
	struct pmv_cq_aux *a;

	/* nothing queued: no lock (pmv_cq_push stores the count last) */
	if (!__atomic_load_n(&cq->aux_count, __ATOMIC_ACQUIRE))
		return -FI_EAGAIN;
	pmv_lock(&cq->aux_lock, PMV_LOCK_CQ_AUX);
	while (n < count && cq->aux_count) {
		a = &cq->aux[cq->aux_head];
		if (a->is_error)
			break;
		pmv_cq_copy_entry(cq, (char *) buf + n * size, &a->entry);
		if (src_addr)
			src_addr[n] = a->src_addr;
		cq->aux_head = (cq->aux_head + 1) % cq->aux_cap;
		__atomic_store_n(&cq->aux_count, cq->aux_count - 1,
				 __ATOMIC_RELAXED);
		n++;
	}
	if (!n && cq->aux_count)
		n = (size_t) -FI_EAVAIL;
	pmv_unlock(&cq->aux_lock, PMV_LOCK_CQ_AUX);
	return n ? (ssize_t) n : -FI_EAGAIN;
}

/* An entry of the CQ's format as an aux entry (the formats are prefixes
 * of tagged, zero-filled past the format's size). */
static void pmv_cq_entry_to_aux(const struct fi_cq_tagged_entry *t,
				struct fi_cq_err_entry *out)
{
	*out = (struct fi_cq_err_entry) {
		.op_context = t->op_context, .flags = t->flags, .len = t->len,
		.buf = t->buf, .data = t->data, .tag = t->tag,
	};
}

/* Queues the application's entries among n read from the core (room was
 * reserved for them), in order. */
void pmv_cq_queue_core(struct pmv_cq *cq, const char *buf, ssize_t n)
{
	size_t size = pmv_cq_entry_size(cq->format);
	struct fi_cq_tagged_entry t;
	struct fi_cq_err_entry e;
	ssize_t i;

	for (i = 0; i < n; i++) {
		memset(&t, 0, sizeof(t));
		memcpy(&t, buf + (size_t) i * size, size);
		pmv_cq_entry_to_aux(&t, &e);
		pmv_cq_push(cq, &e, false);
	}
}
