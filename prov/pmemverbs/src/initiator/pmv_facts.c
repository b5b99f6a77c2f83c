/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: what the initiator knows of its peer's regions.
 *
 * A key's profile and the target's flags come from the agent's acks, or
 * from the profile table the target pushes into this endpoint's inbox
 * (target/pmv_publish.c, layout in proto/pmv_proto.h), each with the
 * registration generation it held in: what was learned in an older
 * generation may name other memory and is forgotten.  The table is a hint
 * for choosing a method, never a proof: nothing orders its inject writes
 * with the core's own acknowledgements of our writes, so no commit's
 * durability depends on when it arrives (a read-flush reads the generation
 * behind its writes; the agent checks the request's).  Every function here
 * runs with the engine's lock held.
 */
#include "pmv_initiator.h"

/* The fact known for key; NULL if none. */
static struct pmv_key_fact *pmv_ini_known_fact(struct pmv_ini *ini,
					       uint64_t key)
{
	for (unsigned i = 0; i < PMV_PEER_KEYS; i++)
		if (ini->facts[i].known && ini->facts[i].key == key)
			return &ini->facts[i];
	return NULL;
}

/* Remembers what the peer reported for key, in generation gen. */
void pmv_ini_remember_fact(struct pmv_ini *ini, uint64_t key, uint8_t profile,
			   uint8_t target_flags, uint32_t gen)
{
	struct pmv_key_fact *slot = pmv_ini_known_fact(ini, key);

	if (!slot)
		slot = &ini->facts[ini->facts_next++ % PMV_PEER_KEYS];
	*slot = (struct pmv_key_fact) {
		.known = true, .key = key, .profile = profile,
		.target_flags = target_flags, .gen = gen,
	};
	/* what was learned in an older generation may name other memory */
	pmv_ini_forget_facts(ini, gen);
}

/* Forgets what the peer reported in another generation than gen. */
void pmv_ini_forget_facts(struct pmv_ini *ini, uint32_t gen)
{
	for (unsigned i = 0; i < PMV_PEER_KEYS; i++)
		if (ini->facts[i].gen != gen)
			ini->facts[i].known = false;
}

/* True if a fact learned in a generation after gen is known. */
static bool pmv_ini_knows_newer(const struct pmv_ini *ini, uint32_t gen)
{
	for (unsigned i = 0; i < PMV_PEER_KEYS; i++)
		if (ini->facts[i].known &&
		    (int32_t) (ini->facts[i].gen - gen) > 0)
			return true;
	return false;
}

/*
 * Copies the table the peer pushed out of the inbox; false if there is no
 * whole one (never pushed, or a newer push being placed).  The first whole
 * table says that the peer pushes: it pushes every change after it.
 */
static bool pmv_ini_read_pushed(struct pmv_ini *ini, struct pmv_profiles *t)
{
	struct pmv_ep *ep = ini->ep;

	if (!pmv_params.push_profiles || !ep->inbox.profiles ||
	    !pmv_profiles_decode(ep->inbox.profiles, PMV_PROFILES_SIZE, t))
		return false;
	pmv_ini_learn_gen(ini, t->mr_gen);
	return true;
}

/*
 * Learns key's profile from the peer's table, as the key's first ack would
 * teach it; false if no whole table of a generation at least as new as
 * what is known names key.  Not while the key's scope holds writes: they
 * were posted before this table was read and may have been placed before
 * a close it reports, in memory that is gone; the agent checks them.
 */
static bool pmv_ini_learn_pushed(struct pmv_ini *ini, uint64_t key)
{
	struct pmv_profiles t;

	if (!pmv_scope_empty(&ini->scope, key) ||
	    !pmv_ini_read_pushed(ini, &t) || pmv_ini_knows_newer(ini, t.mr_gen))
		return false;
	for (unsigned i = 0; i < t.count; i++) {
		if (t.e[i].key == key) {
			pmv_ini_remember_fact(ini, key, t.e[i].profile,
					      t.e[i].target_flags, t.mr_gen);
			return true;
		}
	}
	return false;
}

/* What the peer reported for key, from its acks or its table; NULL if not. */
const struct pmv_key_fact *pmv_ini_fact(struct pmv_ini *ini, uint64_t key)
{
	const struct pmv_key_fact *f = pmv_ini_known_fact(ini, key);

	if (!f && pmv_ini_learn_pushed(ini, key))
		f = pmv_ini_known_fact(ini, key);
	return f;
}

/*
 * The peer's generation seen now (an ack's, a read word's or a pushed
 * table's): the target had closed at least that many regions, so a write
 * posted from now on cannot land in a region closed before.
 */
void pmv_ini_learn_gen(struct pmv_ini *ini, uint32_t gen)
{
	if (pmv_gen_before(ini->scope.gen, gen))
		ini->scope.gen = gen;
}

/* c covers the key's scope too: its floor is the oldest write's. */
void pmv_ini_cover_floor(struct pmv_ini *ini, struct pmv_commit *c)
{
	uint32_t gen;

	if (pmv_scope_gen(&ini->scope, c->key, &gen))
		c->floor = pmv_gen_older(c->floor, gen);
}
