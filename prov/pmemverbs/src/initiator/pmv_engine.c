/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: the commit engine of an endpoint as a whole: its life (open,
 * close, failure of the connection) and its progress, which every read and
 * wait of its domain's CQs runs (the domain's list of engines,
 * pmv_hooks.c; counters read their endpoints' transmit CQs): acks are
 * read, and the operations that wait for room in the core are posted, in
 * ring order.
 */
#include <inttypes.h>
#include <stdlib.h>

#include "pmv_initiator.h"

/*
 * Watches a peer while commits wait on it: after FI_PMEMVERBS_PEER_PROBE_MS
 * without any answer (ack or completion) a probe read goes out (a dead
 * connection fails it at once); after FI_PMEMVERBS_PEER_TIMEOUT_MS every
 * commit fails with FI_ETIMEDOUT and the endpoint takes no more (a frozen
 * or unreachable peer).  Lock held.
 */
static void pmv_ini_watch_peer(struct pmv_ini *ini)
{
	uint64_t now, quiet;
	int ret;

	if (ini->head == ini->tail || ini->error) {
		ini->quiet_since = 0;
		return;
	}
	now = pmv_ms_now();
	if (!ini->quiet_since) {
		ini->quiet_since = now;
		return;
	}
	quiet = now - ini->quiet_since;
	if (pmv_params.peer_timeout_ms > 0 &&
	    quiet >= (uint64_t) pmv_params.peer_timeout_ms) {
		PMV_WARN(FI_LOG_EP_DATA, "the target has not answered for "
			 "%" PRIu64 " ms (frozen or unreachable): every commit "
			 "in flight on this endpoint fails; close it and "
			 "connect again (FI_PMEMVERBS_PEER_TIMEOUT_MS sets "
			 "the limit)\n", quiet);
		pmv_ini_set_error(ini, -FI_ETIMEDOUT);
		pmv_ini_fail_ring(ini, PMV_ERR_PEER_TIMEOUT, FI_ETIMEDOUT);
	} else if (!ini->probing && pmv_params.peer_probe_ms > 0 &&
		   quiet >= (uint64_t) pmv_params.peer_probe_ms) {
		ret = pmv_ini_probe(ini); /* -FI_EAGAIN: next pass */
		if (ret && ret != -FI_EAGAIN)
			pmv_ini_conn_failed(ini, -ret);
	}
}

/* Runs the engine: acks, then the ops that wait for room, in ring order. */
static void pmv_ini_progress_locked(struct pmv_ini *ini)
{
	struct pmv_commit *c;
	uint64_t s;

	if (!ini->ep)
		return;
	pmv_ini_poll_acks(ini);
	pmv_ini_watch_peer(ini);
	for (s = ini->head; ini->deferred && s < ini->tail; s++) {
		c = &ini->ring[s % PMV_RING];
		if (c->state != PMV_C_DEFERRED)
			continue;
		if (c->m->resume(ini, c) == -FI_EAGAIN)
			return; /* later ones must not overtake it */
		ini->deferred--;
		c->state = PMV_C_POSTED;
		pmv_ini_try_done(ini, c);
	}
}

/* True while commits are in the ring: their acks land in memory. */
static bool pmv_ini_busy(void *arg)
{
	struct pmv_ini *ini = arg;

	return __atomic_load_n(&ini->head, __ATOMIC_RELAXED) !=
	       __atomic_load_n(&ini->tail, __ATOMIC_RELAXED);
}

/*
 * The progress hook of a pmem endpoint's engine.  With no commit in the
 * ring it has nothing to do (no ack to wait for, no peer to watch, no op
 * deferred) and takes no lock: every read of a CQ shared by 1024 idle
 * connections took 1024 engine locks.  A commit posted meanwhile is
 * progressed by the next read.
 */
static void pmv_ini_progress(void *arg)
{
	struct pmv_ini *ini = arg;

	if (!pmv_ini_busy(ini))
		return;
	pmv_lock(&ini->lock, PMV_LOCK_INI);
	pmv_ini_progress_locked(ini);
	pmv_unlock(&ini->lock, PMV_LOCK_INI);
}

/*
 * The engine's progress run by a read of another CQ of its domain: only if
 * no thread holds the engine (its own thread posting or progressing it
 * goes on undisturbed; its own CQ's reads progress it anyway).
 */
static void pmv_ini_help(void *arg)
{
	struct pmv_ini *ini = arg;

	if (!pmv_ini_busy(ini) || !pmv_trylock(&ini->lock, PMV_LOCK_INI))
		return;
	pmv_ini_progress_locked(ini);
	pmv_unlock(&ini->lock, PMV_LOCK_INI);
}

int pmv_ini_open(struct pmv_ep *ep)
{
	struct pmv_ini *ini = pmv_fault(PMV_FAULT_ALLOC) ? NULL :
			      calloc(1, sizeof(*ini));

	if (!ini)
		return -FI_ENOMEM;
	pthread_mutex_init(&ini->lock, NULL);
	pmv_scope_init(&ini->scope, pmv_params.extent_limit);
	ini->refs = 1;
	ini->ep = ep;
	ini->next_req = 1;
	ep->ini = ini;
	ep->hook.progress = pmv_ini_progress;
	ep->hook.busy = pmv_ini_busy;
	ep->hook.help = pmv_ini_help;
	ep->hook.arg = ini;
	ep->hook.park_idle = true;
	return 0;
}

/*
 * The endpoint is closing (its core endpoint is closed): unreported
 * commits complete as canceled, what arrives later is dropped, and the
 * engine lives on until its last internal operation's completion.
 */
void pmv_ini_close(struct pmv_ep *ep)
{
	struct pmv_ini *ini = ep->ini;

	if (!ini)
		return;
	pmv_lock(&ini->lock, PMV_LOCK_INI);
	pmv_ini_fail_ring(ini, PMV_ERR_CLOSED, 0);
	ini->ep = NULL;
	pmv_unlock(&ini->lock, PMV_LOCK_INI);
	ep->ini = NULL;
	pmv_ini_unref(ini);
}

void pmv_ini_fail_all(struct pmv_ep *ep, int err)
{
	struct pmv_ini *ini = ep->ini;

	if (!ini)
		return;
	pmv_lock(&ini->lock, PMV_LOCK_INI);
	pmv_ini_set_error(ini, err);
	pmv_ini_fail_ring(ini, PMV_ERR_PEER_GONE, 0);
	pmv_unlock(&ini->lock, PMV_LOCK_INI);
}

/*
 * Copies the endpoint's counters: the initiator's under its lock, the
 * agent's (it updates them atomically on its own thread, without that
 * lock) each with an atomic load, never by copying the struct.
 */
void pmv_ini_counters(struct pmv_ep *ep, struct fi_pmem_ep_counters *out)
{
	const struct fi_pmem_ep_counters *c = &ep->counters;

	*out = (struct fi_pmem_ep_counters) { 0 };
	if (ep->ini)
		pmv_lock(&ep->ini->lock, PMV_LOCK_INI);
	out->commits = c->commits;
	out->commit_errors = c->commit_errors;
	out->requests_sent = c->requests_sent;
	out->flush_ops = c->flush_ops;
	out->sends = c->sends;
	if (ep->ini)
		pmv_unlock(&ep->ini->lock, PMV_LOCK_INI);
	out->requests_served = __atomic_load_n(&c->requests_served,
					       __ATOMIC_RELAXED);
	out->bytes_persisted = __atomic_load_n(&c->bytes_persisted,
					       __ATOMIC_RELAXED);
}
