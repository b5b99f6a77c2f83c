/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: gates, the target side of gated requests (PMV_REQ_GATED).
 *
 * An initiator whose peer advertised a gate sends an agent commit's data
 * and request as one core write carrying remote CQ data (magic, the
 * target endpoint's gate id, the request's seq).  fi_cq(3), TARGET
 * COMPLETION SEMANTICS: the completion that write generates at the target
 * means its data is available in the target buffer.  So the agent serves
 * a gated request only once that completion was read: pmemverbs's CQ
 * reads (the application's and the agent's) take it, never pass it on,
 * and record here the newest seq confirmed for the gate.
 *
 * The domain keeps PMV_GATES words, one per gate: bit 48 open, bits 32-47
 * the gate id (slot index in the low bits, a reuse count above, so that a
 * closed endpoint's late completion does not confirm its successor's
 * requests), bits 0-31 the newest seq confirmed.  Read and updated
 * atomically, without a lock: a CQ read never touches an endpoint.
 */
#include <sched.h>

#include "pmv_objects.h"

#define PMV_GATE_OPEN (1ull << 48)

static uint64_t pmv_gate_word(uint16_t id, uint32_t seq32)
{
	return PMV_GATE_OPEN | (uint64_t) id << 32 | seq32;
}

/* True if word w is the open gate id. */
static bool pmv_gate_is(uint64_t w, uint16_t id)
{
	return (w & PMV_GATE_OPEN) && (uint16_t) (w >> 32) == id;
}

/*
 * Takes slot idx for ep if free: its id counts the slot's reuses in the
 * bits above the index, the newest seq confirmed starts at 0 (seqs start
 * at 1).  False if another endpoint holds it.
 */
static bool pmv_gate_claim(struct pmv_domain *dom, unsigned idx,
			   struct pmv_ep *ep)
{
	struct pmv_ep *none = NULL;
	uint16_t id;

	if (!__atomic_compare_exchange_n(&dom->gate_owner[idx], &none, ep,
					 false, __ATOMIC_ACQ_REL,
					 __ATOMIC_RELAXED))
		return false;
	id = (uint16_t) (dom->gate_last_id[idx] + PMV_GATES);
	id = (uint16_t) ((id & ~(PMV_GATES - 1)) | idx);
	dom->gate_last_id[idx] = id;
	__atomic_store_n(&dom->gate[idx], pmv_gate_word(id, 0),
			 __ATOMIC_RELEASE);
	/* atomic: the agent's plan reads them while fi_accept gives the gate
	 * to an endpoint that joined it (pmv_gate_serves) */
	__atomic_store_n(&ep->gate_id, id, __ATOMIC_RELAXED);
	__atomic_store_n(&ep->gated, true, __ATOMIC_RELEASE);
	return true;
}

/*
 * Gives ep a gate if it can take gated requests: over tcp, with a receive
 * CQ whose format carries remote CQ data (pmemverbs opens the core CQ in
 * the application's format).  An endpoint whose receive CQ is bound later
 * is not gated.  False: no gate (its peer sends two writes).
 */
bool pmv_gate_open(struct pmv_ep *ep)
{
	struct pmv_domain *dom = ep->domain;
	struct pmv_cq *rx = __atomic_load_n(&ep->rx_cq, __ATOMIC_ACQUIRE);
	unsigned i, idx;

	if (ep->gated)
		return true;
	if (dom->transport != PMV_TRANSPORT_TCP || !rx ||
	    rx->format < FI_CQ_FORMAT_DATA)
		return false;
	for (i = 0; i < PMV_GATES; i++) {
		idx = __atomic_fetch_add(&dom->gate_next, 1, __ATOMIC_RELAXED) %
		      PMV_GATES;
		if (pmv_gate_claim(dom, idx, ep)) {
			__atomic_fetch_add(&rx->gated_refs, 1, __ATOMIC_RELEASE);
			return true;
		}
	}
	return false;
}

/* Closes ep's gate (endpoint close, before it is freed). */
void pmv_gate_close(struct pmv_ep *ep)
{
	struct pmv_domain *dom = ep->domain;
	unsigned idx = ep->gate_id % PMV_GATES;

	if (!ep->gated)
		return;
	__atomic_store_n(&dom->gate[idx], 0, __ATOMIC_RELEASE);
	__atomic_store_n(&dom->gate_owner[idx], NULL, __ATOMIC_RELEASE);
	if (ep->rx_cq)
		__atomic_fetch_sub(&ep->rx_cq->gated_refs, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&ep->gated, false, __ATOMIC_RELEASE);
}

_Static_assert(PMV_GATES / 64 <= 64, "one bit per word of gate marks");

/* Sets bits in *w unless they all are; true if it did (one load if so). */
static bool pmv_gate_bits_set(uint64_t *w, uint64_t bits)
{
	if ((__atomic_load_n(w, __ATOMIC_SEQ_CST) & bits) == bits)
		return false;
	(void) __atomic_fetch_or(w, bits, __ATOMIC_SEQ_CST);
	return true;
}

/* Takes the bits of *w, leaving 0 (one load if there are none). */
static uint64_t pmv_gate_bits_take(uint64_t *w)
{
	if (!__atomic_load_n(w, __ATOMIC_RELAXED))
		return 0;
	return __atomic_exchange_n(w, 0, __ATOMIC_SEQ_CST);
}

/*
 * Notes that word w of gate_ready has marks, after they were set.  A taker
 * clears this bit before it takes the word (pmv_serve_gates): a mark that
 * finds the bit set was set before that take, which gets it.  Sequentially
 * consistent, word and bit alike, for that "before".
 */
static void pmv_gate_note_word(struct pmv_domain *dom, unsigned w)
{
	(void) pmv_gate_bits_set(&dom->gate_ready_words, 1ull << w);
}

/* Marks gate idx as having confirmed requests (pmv_serve_gates looks). */
static void pmv_gate_mark(struct pmv_domain *dom, unsigned idx)
{
	if (pmv_gate_bits_set(&dom->gate_ready[idx / 64], 1ull << (idx % 64)))
		pmv_gate_note_word(dom, idx / 64);
}

/*
 * Records that gate id's request seq32 (and those before it) landed whole,
 * and marks the gate for pmv_serve_gates.
 */
void pmv_gate_confirm(struct pmv_domain *dom, uint16_t id, uint32_t seq32)
{
	uint64_t *word = &dom->gate[id % PMV_GATES];
	uint64_t w = __atomic_load_n(word, __ATOMIC_ACQUIRE);

	while (pmv_gate_is(w, id) && !pmv_seq32_reached((uint32_t) w, seq32)) {
		if (__atomic_compare_exchange_n(word, &w,
						pmv_gate_word(id, seq32), false,
						__ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE)) {
			pmv_gate_mark(dom, id % PMV_GATES);
			break;
		}
	}
}

/*
 * From now on ep's requests are served when its gate confirms them
 * (pmv_serve_gates); the gate is marked once, for what came before.
 */
void pmv_gate_serve_on(struct pmv_ep *ep)
{
	unsigned idx = ep->gate_id % PMV_GATES;

	__atomic_store_n(&ep->domain->gate_server[idx], ep, __ATOMIC_SEQ_CST);
	pmv_gate_mark(ep->domain, idx);
}

/*
 * Stops serving ep on its gate's events; returns once no pmv_serve_gates
 * that may have found it runs (each counts itself in gate_serving before
 * it looks, so one that starts later finds none).
 */
void pmv_gate_serve_off(struct pmv_ep *ep)
{
	struct pmv_domain *dom = ep->domain;
	unsigned idx = ep->gate_id % PMV_GATES;

	if (__atomic_load_n(&dom->gate_server[idx], __ATOMIC_ACQUIRE) != ep)
		return;
	__atomic_store_n(&dom->gate_server[idx], NULL, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&dom->gate_serving, __ATOMIC_SEQ_CST))
		sched_yield();
}

/* True while ep is served on its gate's events (pmv_gate_serve_on); any
 * thread, while ep is open. */
bool pmv_gate_serves(const struct pmv_ep *ep)
{
	unsigned idx;

	if (!__atomic_load_n(&ep->gated, __ATOMIC_ACQUIRE))
		return false;
	/* stored before gated (release): its value goes with gated's */
	idx = __atomic_load_n(&ep->gate_id, __ATOMIC_RELAXED) % PMV_GATES;
	return __atomic_load_n(&ep->domain->gate_server[idx],
			       __ATOMIC_ACQUIRE) == ep;
}

/* Takes the bits of the words of gate marks that may have marks (bit w:
 * word w; pmv_gate_take_marks then takes each). */
uint64_t pmv_gate_take_marked_words(struct pmv_domain *dom)
{
	return pmv_gate_bits_take(&dom->gate_ready_words);
}

/* Takes the marks of one word of gates (gates word * 64 to + 63). */
uint64_t pmv_gate_take_marks(struct pmv_domain *dom, unsigned word)
{
	return pmv_gate_bits_take(&dom->gate_ready[word]);
}

/*
 * How often one word of gates (64) is marked, events or not (ms): bytes
 * written into a gated inbox without remote CQ data (a peer that is not
 * pmemverbs, a hostile one) are looked at within PMV_GATES / 64 such
 * periods (160 ms).  Marking every gate each time made the read that took
 * the marks look into 1024 inboxes every 10 ms: 9% of the CPU of a target
 * whose one busy connection shared its CQ with 1024 idle ones (perf,
 * libfabric 2.1), for requests no pmemverbs peer sends.
 */
#define PMV_GATE_SWEEP_MS 10

/* Marks the served gates of the next word once per PMV_GATE_SWEEP_MS (one
 * thread does), the words in turn; now: the caller's pmv_ms_now. */
void pmv_gate_sweep(struct pmv_domain *dom, uint64_t now)
{
	uint64_t last = __atomic_load_n(&dom->gate_swept_ms, __ATOMIC_RELAXED);
	unsigned w, first;

	if (now < last + PMV_GATE_SWEEP_MS ||
	    !__atomic_compare_exchange_n(&dom->gate_swept_ms, &last, now, false,
					 __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		return;
	w = __atomic_fetch_add(&dom->gate_swept_word, 1, __ATOMIC_RELAXED) %
	    (PMV_GATES / 64);
	first = w * 64;
	for (unsigned i = first; i < first + 64; i++)
		if (__atomic_load_n(&dom->gate_server[i], __ATOMIC_RELAXED))
			pmv_gate_mark(dom, i);
}

/* Marks gates again (their endpoints still have requests to serve). */
void pmv_gate_put_marks(struct pmv_domain *dom, unsigned word, uint64_t bits)
{
	if (!bits)
		return;
	(void) __atomic_fetch_or(&dom->gate_ready[word], bits,
				 __ATOMIC_SEQ_CST);
	pmv_gate_note_word(dom, word);
}

/*
 * The endpoint served on gate idx's events, counted in gate_serving until
 * pmv_gate_server_done (its close waits for that); NULL if none.
 */
struct pmv_ep *pmv_gate_server(struct pmv_domain *dom, unsigned idx)
{
	struct pmv_ep *ep;

	__atomic_add_fetch(&dom->gate_serving, 1, __ATOMIC_SEQ_CST);
	ep = __atomic_load_n(&dom->gate_server[idx], __ATOMIC_SEQ_CST);
	if (!ep)
		__atomic_sub_fetch(&dom->gate_serving, 1, __ATOMIC_RELEASE);
	return ep;
}

void pmv_gate_server_done(struct pmv_domain *dom)
{
	__atomic_sub_fetch(&dom->gate_serving, 1, __ATOMIC_RELEASE);
}

/* True if ep's gated request seq was confirmed (its write completed). */
bool pmv_gate_passed(const struct pmv_ep *ep, uint64_t seq)
{
	uint64_t w = __atomic_load_n(&ep->domain->gate[ep->gate_id % PMV_GATES],
				     __ATOMIC_ACQUIRE);

	return ep->gated && pmv_gate_is(w, ep->gate_id) &&
	       pmv_seq32_reached((uint32_t) w, (uint32_t) seq);
}

/*
 * True if a core CQ entry (format >= FI_CQ_FORMAT_DATA) is a gated write's
 * completion: then it is recorded, and never passed to the application.
 */
bool pmv_gate_take_entry(struct pmv_domain *dom, const void *entry)
{
	const struct fi_cq_data_entry *d = entry;
	uint32_t seq32;
	uint16_t id;

	if (!(d->flags & FI_REMOTE_CQ_DATA) || !(d->flags & FI_REMOTE_WRITE) ||
	    !pmv_gate_parse(d->data, &id, &seq32))
		return false;
	pmv_gate_confirm(dom, id, seq32);
	return true;
}
