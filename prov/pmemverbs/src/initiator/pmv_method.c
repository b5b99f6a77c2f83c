/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: the method matrix (fi_pmemverbs(7), "Methods").
 *
 * Which ways of making a commit durable are correct for a key depends on
 * the profile its target reported, on whether the target declared that
 * inbound DMA bypasses its CPU caches (DDIO off), and on the transport's
 * completion meaning:
 *
 *   agent       every profile (the target persists what the request names);
 *   read_flush  an 8-byte read behind the writes, on the same connection:
 *               its completion proves the writes are placed in the
 *               target's memory hierarchy, which is durable for MHP, WSP
 *               and (visibility only) VOLATILE, and for DMP when DDIO is
 *               off on an RDMA transport (the NIC's writes then reach the
 *               memory controller).  Over tcp the target's CPU copies the
 *               data, so it sits in the CPU caches: DMP needs the agent;
 *   completion  the write's own completion: on ib/roce it means the
 *               responder NIC has the data, durable only for WSP (the
 *               generation is read behind it, as read_flush does, so it
 *               needs FI_ORDER_RAW too);
 *   send        every profile: the data travels inside the agent's request
 *               and the agent places and persists it.  Chosen for fenced
 *               commits on agent keys (the agent persists the earlier scope,
 *               then places the fenced data: one round trip, not two); a
 *               commit whose data does not fit a request takes the agent.
 *
 * Read-flush also needs the core to order reads after writes (FI_ORDER_RAW).
 *
 * Over tcp, toward a gated peer (FI_PMEMVERBS_JOIN_REQUEST, default on:
 * the request joins its data's write, which carries remote CQ data, and
 * the target serves it once that completion is read), an agent commit is
 * one message each way, and the target's own CQ reads serve it: the
 * target's CPU handles every message
 * anyway, so there is no one-sided operation to save.  Read-flush is two
 * operations the target handles in turn (the write, then the read of the
 * generation word that proves which registration the write landed in;
 * measured, ./run bench of f50b99e, MHP, 64 B-4 KiB, commit / 8-byte
 * read: agent 0.96-1.08, read-flush 1.21-1.46), so the agent is the
 * fastest everywhere over tcp.  Toward a peer without a gate, an agent
 * commit is two writes as well, and read-flush stays the choice, as over
 * RDMA.
 * Read-flush can always be forced.
 */
#include "pmv_initiator.h"

static bool pmv_read_flush_correct(const struct pmv_key_facts *k)
{
	switch (k->profile) {
	case FI_PMEM_PROFILE_VOLATILE:
	case FI_PMEM_PROFILE_MHP:
	case FI_PMEM_PROFILE_WSP:
		return true;
	case FI_PMEM_PROFILE_DMP:
		return k->ddio_off && k->transport != PMV_TRANSPORT_TCP;
	default:
		return false;
	}
}

/* True if method makes a commit to a key with these facts durable. */
bool pmv_method_correct(enum fi_pmem_method method,
			const struct pmv_key_facts *k)
{
	switch (method) {
	case FI_PMEM_METHOD_AGENT:
	case FI_PMEM_METHOD_SEND:
		return true;
	case FI_PMEM_METHOD_READ_FLUSH:
		return k->raw_ordered && pmv_read_flush_correct(k);
	case FI_PMEM_METHOD_COMPLETION: /* its generation read too */
		return k->raw_ordered && k->profile == FI_PMEM_PROFILE_WSP &&
		       k->transport == PMV_TRANSPORT_IB;
	default:
		return false;
	}
}

/*
 * The fastest correct method: no round trip beats one, no thread beats
 * one, and over tcp one message beats two (a joined agent commit, above).
 */
enum fi_pmem_method pmv_method_fastest(const struct pmv_key_facts *k)
{
	if (k->transport == PMV_TRANSPORT_TCP && k->gated &&
	    pmv_params.join_request)
		return FI_PMEM_METHOD_AGENT;
	if (pmv_method_correct(FI_PMEM_METHOD_COMPLETION, k))
		return FI_PMEM_METHOD_COMPLETION;
	if (pmv_method_correct(FI_PMEM_METHOD_READ_FLUSH, k))
		return FI_PMEM_METHOD_READ_FLUSH;
	return FI_PMEM_METHOD_AGENT;
}

/* The method without an override: a fence turns the agent into send. */
static enum fi_pmem_method pmv_method_auto(const struct pmv_key_facts *k,
					   uint64_t flags)
{
	enum fi_pmem_method m = FI_PMEM_METHOD_AGENT;

	if (k->profile != FI_PMEM_PROFILE_UNKNOWN && !(flags & FI_IMMED))
		m = pmv_method_fastest(k);
	return m == FI_PMEM_METHOD_AGENT && (flags & FI_FENCE) ?
	       FI_PMEM_METHOD_SEND : m;
}

/*
 * The method for a commit: one through the agent (agent or send) while the
 * key's profile is unknown (its first commit learns it) and for FI_IMMED
 * (the target raises that completion); otherwise the override or the
 * fastest.  An override that is incorrect for the profile gives NONE: the
 * caller refuses the commit.
 */
enum fi_pmem_method pmv_method_select(const struct pmv_key_facts *k,
				      uint64_t flags)
{
	enum fi_pmem_method m = pmv_params.method;

	if (m == FI_PMEM_METHOD_NONE)
		return pmv_method_auto(k, flags);
	if (k->profile == FI_PMEM_PROFILE_UNKNOWN || (flags & FI_IMMED))
		return m == FI_PMEM_METHOD_SEND ? m : FI_PMEM_METHOD_AGENT;
	return pmv_method_correct(m, k) ? m : FI_PMEM_METHOD_NONE;
}

/* True unless an override (FI_PMEMVERBS_METHOD) keeps commits off id. */
bool pmv_method_may_take(enum fi_pmem_method id)
{
	return pmv_params.method == FI_PMEM_METHOD_NONE ||
	       pmv_params.method == id;
}

/* The ops of a method, or NULL for NONE and unknown ids: the registry. */
const struct pmv_method_ops *pmv_method_ops(enum fi_pmem_method id)
{
	static const struct pmv_method_ops *const methods[] = {
		[FI_PMEM_METHOD_AGENT] = &pmv_m_agent,
		[FI_PMEM_METHOD_READ_FLUSH] = &pmv_m_read_flush,
		[FI_PMEM_METHOD_COMPLETION] = &pmv_m_completion,
		[FI_PMEM_METHOD_SEND] = &pmv_m_send,
	};

	return (unsigned) id < sizeof(methods) / sizeof(methods[0]) ?
	       methods[id] : NULL;
}

/* m, or its fallback when msg does not fit it. */
const struct pmv_method_ops *pmv_method_fit(const struct pmv_ini *ini,
					    const struct pmv_method_ops *m,
					    const struct fi_msg_rma *msg)
{
	return !m->fits || m->fits(ini, msg) ? m :
	       pmv_method_ops(m->fallback);
}

/* c's method cannot finish it (its data placed): its takeover does. */
int pmv_method_take_over(struct pmv_ini *ini, struct pmv_commit *c)
{
	return pmv_method_ops(c->m->takeover)->take_over(ini, c);
}
