/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: extents a commit's request cannot carry.
 *
 * A key's scope keeps distant writes apart (pmv_scope.c), so it may hold
 * more extents than one request slot does.  Before a commit's own request,
 * the extents that do not fit go ahead in internal requests ("spills") on
 * the same connection: they are placed behind the writes they name and
 * the agent serves them in order, before the commit's request.  A spill
 * that fails fails every commit to its key not yet answered (and, when
 * none is left, the key's next commit), so a commit never completes with
 * a spilled range of its scope not durable.  A fenced commit's request
 * also asks the agent to check the spills (fence_back), so its data is not
 * placed after a failed one.
 */
#include "pmv_initiator.h"

/*
 * Spill requests per commit at most: the ring keeps the commit, which
 * cannot retire before its spills, and them.  Past this, the scope's
 * closest extents merge whatever lies between them.
 */
#define PMV_SPILL_MAX (PMV_RING / 4)

/* Room in the peer's slots for n more requests. */
static bool pmv_req_room_n(const struct pmv_ini *ini, uint64_t n)
{
	return ini->next_req + n - 1 - ini->acked_req <= PMV_SLOTS;
}

/* Sends one spill of key's first extents (room left for one more). */
static int pmv_spill_one(struct pmv_ini *ini, uint64_t key)
{
	struct pmv_commit *f;
	int ret;

	if (pmv_ini_ring_full(ini) || !pmv_req_room_n(ini, 2))
		return -FI_EAGAIN;
	f = pmv_ini_commit_new(ini, NULL, 0);
	f->key = key;
	f->internal = true;
	f->spill = true;
	f->m = &pmv_m_agent;
	ret = pmv_req_send(ini, f, NULL, 0);
	if (ret)
		pmv_ini_commit_drop(ini, f);
	return ret;
}

int pmv_req_spill(struct pmv_ini *ini, struct pmv_commit *c, unsigned room,
		  uint32_t *fence_back)
{
	unsigned max = pmv_req_max_extents(pmv_ep_slot_bytes(ini->ep));
	uint64_t first = ini->next_req;
	int ret = 0;

	if (c->spill)
		return 0;
	pmv_scope_fit(&ini->scope, c->key, room + PMV_SPILL_MAX * max, true);
	while (!ret && pmv_scope_fit(&ini->scope, c->key, room, false) > room)
		ret = pmv_spill_one(ini, c->key);
	if ((c->flags & FI_FENCE) && ini->next_req - first > *fence_back)
		*fence_back = (uint32_t) (ini->next_req - first);
	return ret;
}

void pmv_ini_spill_failed(struct pmv_ini *ini, const struct pmv_commit *f)
{
	struct pmv_commit *c;
	bool told = false;
	uint64_t s;

	for (s = ini->head; s < ini->tail; s++) {
		c = &ini->ring[s % PMV_RING];
		if (c == f || c->internal || c->reported || c->key != f->key ||
		    c->state == PMV_C_DONE || c->state == PMV_C_FREE ||
		    (c->req_seq && c->req_seq < f->req_seq))
			continue;
		if (!c->status)
			c->status = f->status;
		pmv_ini_try_done(ini, c);
		told = true;
	}
	if (!told) /* the key's next commit fails */
		pmv_fence_note_failure(&ini->scope_lost, f->key);
}

bool pmv_ini_scope_lost(struct pmv_ini *ini, uint64_t key)
{
	return pmv_fence_failed(&ini->scope_lost, key, true);
}

/*
 * Adds a posted write's range (known generation gen) to the key's scope.
 * If it cannot be recorded (no memory), no commit may claim the key's
 * writes durable: its next commit fails with PMV_ERR_SCOPE_LOST.
 */
void pmv_ini_scope_add(struct pmv_ini *ini, uint64_t key, uint64_t addr,
		       uint64_t len, uint32_t gen)
{
	if (!pmv_scope_add_gen(&ini->scope, key, addr, len, gen))
		return;
	PMV_WARN(FI_LOG_EP_DATA, "no memory to record a write's range (key "
		 "0x%llx): the key's next commit fails (FI_EIO); free memory, "
		 "then write the data again and commit\n",
		 (unsigned long long) key);
	pmv_fence_note_failure(&ini->scope_lost, key);
}

/* As pmv_ini_scope_add for a range of commit c itself: c fails instead. */
void pmv_commit_scope_add(struct pmv_ini *ini, struct pmv_commit *c,
			  uint64_t addr, uint64_t len, uint32_t gen)
{
	if (pmv_scope_add_gen(&ini->scope, c->key, addr, len, gen) &&
	    !c->status) {
		PMV_WARN(FI_LOG_EP_DATA, "no memory to record a commit's "
			 "range: the commit fails (FI_EIO); free memory, then "
			 "write the data again and commit\n");
		c->status = PMV_ERR_SCOPE_LOST;
	}
}
