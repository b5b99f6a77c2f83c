/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: fi_writemsg(FI_COMMIT_COMPLETE) on a pmem endpoint.
 *
 * Checks the request, chooses the key's method (pmv_method.c, from what the
 * peer reported for the key), applies FI_FENCE's one rule and hands the
 * commit to its method (pmv_m_*.c).  No call waits: a commit that cannot
 * be posted now returns -FI_EAGAIN with nothing of it sent, and the
 * application's CQ reads make the progress it waits for.
 *
 * FI_FENCE: every older commit to the key is done, with status 0, before
 * the fenced data is placed.  A commit to the key that failed since its
 * last fence fails the fence (-FI_EIO).  Agent keys ship small fenced data
 * inside the request (send: the agent persists first, and refuses if an
 * earlier request to the key failed); larger fenced data first has the
 * key's scope flushed by an internal request and returns -FI_EAGAIN until
 * every older commit to the key has completed.  Flush keys read first and
 * post the data with the core's FI_FENCE.
 */
#include <string.h>

#include "pmv_initiator.h"
#include "pmv_timeline.h"

/* The method for a commit to key with these flags (NONE: refused). */
static const struct pmv_method_ops *pmv_ini_choose(struct pmv_ini *ini,
						   uint64_t key,
						   uint64_t flags,
						   uint32_t *gen)
{
	struct pmv_key_facts facts = {
		.profile = FI_PMEM_PROFILE_UNKNOWN,
		/* this side's own transport: the peer's CM header could claim
		 * one whose completions mean more than they do here */
		.transport = ini->ep->domain->transport,
		.raw_ordered = ini->ep->raw_ordered,
		.gated = ini->ep->peer.gated,
	};
	const struct pmv_key_fact *f = pmv_ini_fact(ini, key);

	*gen = f ? f->gen : 0;
	if (f) {
		facts.profile = f->profile;
		facts.ddio_off = f->target_flags & PMV_ACK_DDIO_OFF;
	}
	return pmv_method_ops(pmv_method_select(&facts, flags));
}

/*
 * FI_FENCE's rule before anything is posted, the method's own (its fence
 * op; none for a method that fences in its post): 0 to go on, -FI_EAGAIN
 * to wait, PMV_ERR_FENCE when an earlier commit to the key failed.
 */
static int pmv_fence_check(struct pmv_ini *ini,
			   const struct pmv_method_ops **m,
			   const struct fi_msg_rma *msg)
{
	*m = pmv_method_fit(ini, *m, msg);
	return (*m)->fence ? (*m)->fence(ini, m, msg) : 0;
}

/*
 * The overlap rule, one for every method: the data of a send commit in
 * flight is placed by the target's agent when it serves the request, so
 * a later commit must not place bytes of that range before it, nor claim
 * durability of the key before its ack.  A send goes behind it (the agent
 * serves requests in order); an agent commit whose data meets the range
 * waits (its data the core places at once); a read-flush or completion
 * commit to the key waits (its flush op proves placement, not the send's
 * durability).  -FI_EAGAIN to wait, 0 to go.  One load while no send is
 * in flight; plain writes apply it in pmv_ep_ops.c.
 */
static int pmv_overlap_check(struct pmv_ini *ini,
			     const struct pmv_method_ops *m,
			     const struct fi_msg_rma *msg)
{
	uint64_t key = msg->rma_iov[0].key;
	size_t i;

	if (!ini->sends_busy || m->overlap == PMV_OVERLAP_NONE)
		return 0;
	if (m->overlap == PMV_OVERLAP_KEY)
		return pmv_send_overlaps(ini, key, 0, 0) ? -FI_EAGAIN : 0;
	for (i = 0; i < msg->rma_iov_count; i++)
		if (msg->rma_iov[i].len &&
		    pmv_send_overlaps(ini, key, msg->rma_iov[i].addr,
				      msg->rma_iov[i].len))
			return -FI_EAGAIN;
	return 0;
}

/* Posts one checked commit; lock held.  0, -FI_EAGAIN or a PMV_ERR_*. */
static int pmv_commit_post(struct pmv_ini *ini, const struct fi_msg_rma *msg,
			   uint64_t flags, bool silent)
{
	const struct pmv_method_ops *m;
	struct pmv_commit *c;
	uint32_t gen;
	int ret;

	pmv_ini_poll_acks(ini);
	if (ini->deferred || pmv_ini_ring_full(ini))
		return -FI_EAGAIN; /* nothing overtakes a waiting commit */
	if (pmv_ini_scope_lost(ini, msg->rma_iov[0].key))
		return PMV_ERR_SCOPE_LOST; /* earlier writes are not durable */
	m = pmv_ini_choose(ini, msg->rma_iov[0].key, flags, &gen);
	if (!m)
		return PMV_ERR_METHOD;
	if ((flags & FI_FENCE) && (ret = pmv_fence_check(ini, &m, msg)))
		return ret;
	m = pmv_method_fit(ini, m, msg);
	if ((ret = pmv_overlap_check(ini, m, msg)) ||
	    (ret = m->can_post(ini, msg, flags)))
		return ret;
	if ((flags & FI_FENCE) &&
	    pmv_fence_failed(&ini->fence_failed, msg->rma_iov[0].key, true))
		return PMV_ERR_FENCE;
	/* room for its completion now, so reporting it never fails */
	if (pmv_cq_reserve(ini->ep->tx_cq))
		return -FI_ENOMEM;
	c = pmv_ini_commit_new(ini, msg, flags);
	c->room = ini->ep->tx_cq;
	c->m = m;
	c->gen = gen;
	c->silent = silent;
	ret = m->post(ini, c, msg);
	if (ret)
		pmv_ini_commit_drop(ini, c);
	return ret;
}

static uint64_t pmv_msg_len(const struct fi_msg_rma *msg)
{
	uint64_t len = 0;
	size_t i;

	for (i = 0; i < msg->rma_iov_count; i++)
		len += msg->rma_iov[i].len;
	return len;
}

/* True if desc belongs to a memory region of this domain. */
static bool pmv_desc_known(struct pmv_domain *dom, void *desc)
{
	bool found;

	pmv_lock(&dom->lock, PMV_LOCK_DOMAIN);
	found = pmv_mr_index_desc(dom, desc);
	pmv_unlock(&dom->lock, PMV_LOCK_DOMAIN);
	return found;
}

/* FI_MR_LOCAL cores need a desc per local segment, unless they copy it. */
static int pmv_check_descs(struct pmv_ep *ep, const struct fi_msg_rma *msg,
			   uint64_t flags)
{
	size_t i;

	for (i = 0; i < msg->iov_count; i++) {
		if ((ep->domain->mr_mode & FI_MR_LOCAL) && !(flags & FI_INJECT) &&
		    (!msg->desc || !msg->desc[i])) {
			PMV_WARN(FI_LOG_EP_DATA, "commit: the core needs "
				 "FI_MR_LOCAL; pass desc[%zu]\n", i);
			return -FI_EINVAL;
		}
		if (msg->desc && msg->desc[i] &&
		    !pmv_desc_known(ep->domain, msg->desc[i])) {
			PMV_WARN(FI_LOG_EP_DATA, "commit: desc[%zu] is not from "
				 "a memory region of this domain\n", i);
			return -FI_EINVAL;
		}
	}
	return 0;
}

/*
 * Segments the core cannot carry are refused: the verbs core, for one,
 * allows a single remote segment and would place the data elsewhere.
 */
static int pmv_check_iovs(struct pmv_ep *ep, const struct fi_msg_rma *msg,
			  uint64_t flags)
{
	uint64_t local = 0;
	size_t i;

	if (msg->iov_count > pmv_limit(PMV_MAX_IOV, ep->domain->iov_limit) ||
	    msg->rma_iov_count > pmv_limit(PMV_MAX_IOV,
					   ep->domain->rma_iov_limit)) {
		PMV_WARN(FI_LOG_EP_DATA, "commit: iov_count %zu / rma_iov_count "
			 "%zu over the limits %zu / %zu (pmemverbs's and the "
			 "core's)\n", msg->iov_count, msg->rma_iov_count,
			 pmv_limit(PMV_MAX_IOV, ep->domain->iov_limit),
			 pmv_limit(PMV_MAX_IOV, ep->domain->rma_iov_limit));
		return -FI_EINVAL;
	}
	for (i = 0; i < msg->rma_iov_count; i++) {
		if (msg->rma_iov[i].key != msg->rma_iov[0].key) {
			PMV_WARN(FI_LOG_EP_DATA, "commit: rma_iov[%zu] names "
				 "another key; a commit covers one key\n", i);
			return -FI_EINVAL;
		}
	}
	for (i = 0; i < msg->iov_count; i++)
		local += msg->msg_iov[i].iov_len;
	if (local != pmv_msg_len(msg)) {
		PMV_WARN(FI_LOG_EP_DATA, "commit: %llu local bytes for %llu "
			 "remote ones (a pure flush names length 0)\n",
			 (unsigned long long) local,
			 (unsigned long long) pmv_msg_len(msg));
		return -FI_EINVAL;
	}
	return pmv_check_descs(ep, msg, flags);
}

/* FI_INJECT data is copied by the core: it must fit its inject size. */
static int pmv_check_inject(struct pmv_ep *ep, const struct fi_msg_rma *msg,
			    uint64_t flags)
{
	if (!(flags & FI_INJECT) || pmv_msg_len(msg) <= ep->domain->inject_size)
		return 0;
	PMV_WARN(FI_LOG_EP_DATA, "commit: FI_INJECT of %llu bytes is over the "
		 "inject size %zu\n", (unsigned long long) pmv_msg_len(msg),
		 ep->domain->inject_size);
	return -FI_EINVAL;
}

/* Checks a commit request from the application before anything is sent. */
static int pmv_commit_check(struct pmv_ep *ep, const struct fi_msg_rma *msg,
			    uint64_t flags)
{
	if (flags & PMV_UNKNOWN_PROV_BITS) {
		PMV_WARN(FI_LOG_EP_DATA, "fi_writemsg: unknown provider flag "
			 "bits 0x%llx; pmemverbs defines only FI_IMMED (bit 60)\n",
			 (unsigned long long) (flags & PMV_UNKNOWN_PROV_BITS));
		return -FI_EBADFLAGS;
	}
	if ((flags & FI_IMMED) && !(flags & FI_COMMIT_COMPLETE)) {
		PMV_WARN(FI_LOG_EP_DATA, "fi_writemsg: FI_IMMED needs "
			 "FI_COMMIT_COMPLETE\n");
		return -FI_EINVAL;
	}
	if (!msg || !msg->rma_iov || msg->rma_iov_count < 1) {
		PMV_WARN(FI_LOG_EP_DATA, "commit: name the key in rma_iov[0] "
			 "(len 0 for a pure flush)\n");
		return -FI_EINVAL;
	}
	if (msg->iov_count && !msg->msg_iov) {
		PMV_WARN(FI_LOG_EP_DATA, "commit: iov_count %zu with msg_iov "
			 "NULL\n", msg->iov_count);
		return -FI_EINVAL;
	}
	if (pmv_ini_error(ep->ini)) {
		/* once per endpoint: an application may retry in a loop */
		if (!__atomic_exchange_n(&ep->unusable_warned, true,
					 __ATOMIC_RELAXED))
			PMV_WARN(FI_LOG_EP_DATA, "commit: endpoint unusable "
				 "(%s): its connection failed or its target "
				 "stopped answering; close it and connect "
				 "again (warned once per endpoint)\n",
				 fi_strerror(-pmv_ini_error(ep->ini)));
		return pmv_ini_error(ep->ini);
	}
	if (!ep->tx_cq) {
		PMV_WARN(FI_LOG_EP_DATA, "commit: bind a transmit CQ to the "
			 "endpoint; commits complete there\n");
		return -FI_ENOCQ;
	}
	if (!ep->peer.known) {
		if (pmv_ep_first_warning(ep, PMV_WARNED_NOT_CONNECTED))
			PMV_WARN(FI_LOG_EP_DATA, "commit: endpoint is not "
				 "connected: wait for its FI_CONNECTED event "
				 "before committing (warned once per "
				 "endpoint)\n");
		return -FI_ENOTCONN;
	}
	if (!ep->peer.has_inbox) {
		PMV_WARN(FI_LOG_EP_DATA, "commit: the peer endpoint was opened "
			 "without FI_RMA_PMEM; it cannot serve commits\n");
		return -FI_EOPNOTSUPP;
	}
	return pmv_check_iovs(ep, msg, flags) ? -FI_EINVAL :
	       pmv_check_inject(ep, msg, flags);
}

/* Checks and posts a commit; silent for commits made by an inject call. */
static ssize_t pmv_commit(struct pmv_ep *ep, const struct fi_msg_rma *msg,
			  uint64_t flags, bool silent)
{
	int ret;

	pmv_mark(PMV_MARK_COMMIT);
	ret = pmv_commit_check(ep, msg, flags);
	if (ret)
		return ret;
	pmv_lock(&ep->ini->lock, PMV_LOCK_INI);
	ret = pmv_commit_post(ep->ini, msg, flags, silent);
	pmv_unlock(&ep->ini->lock, PMV_LOCK_INI);
	pmv_mark(PMV_MARK_POSTED);
	if (ret > 0) {
		if (pmv_ep_first_warning(ep, PMV_WARNED_ERR(ret)))
			PMV_WARN(FI_LOG_EP_DATA, "commit refused: %s (warned "
				 "once per endpoint)\n", pmv_strerror(ret));
		return -pmv_err_to_fi(ret);
	}
	return ret;
}

ssize_t pmv_commit_writemsg(struct pmv_ep *ep, const struct fi_msg_rma *msg,
			    uint64_t flags)
{
	return pmv_commit(ep, msg, flags, false);
}

ssize_t pmv_commit_inject(struct pmv_ep *ep, const struct fi_msg_rma *msg,
			  uint64_t flags)
{
	return pmv_commit(ep, msg, flags | FI_INJECT, true);
}

/*
 * A write posted on a pmem endpoint joins its key's scope.  The core took
 * it, so it succeeds whatever: a range that cannot be recorded fails the
 * key's next commit instead (pmv_ini_scope_add).
 */
/*
 * Before a plain write to key is posted: its scope must be able to record
 * the write's range (no memory: -FI_ENOMEM, and nothing is posted, as a
 * range lost after the post would leave a later commit to the key, of any
 * thread, claiming bytes it never named).
 */
int pmv_ini_prepare(struct pmv_ep *ep, uint64_t key)
{
	struct pmv_ini *ini = ep->ini;
	int ret;

	pmv_lock(&ini->lock, PMV_LOCK_INI);
	ret = pmv_scope_prepare(&ini->scope, key);
	pmv_unlock(&ini->lock, PMV_LOCK_INI);
	if (ret)
		PMV_WARN(FI_LOG_EP_DATA, "no memory to record a write's range "
			 "(key 0x%llx): the write is refused (-FI_ENOMEM); "
			 "free memory and post it again\n",
			 (unsigned long long) key);
	return ret;
}

ssize_t pmv_ini_track(struct pmv_ep *ep, uint64_t key, uint64_t addr,
		      uint64_t len)
{
	struct pmv_ini *ini = ep->ini;

	pmv_lock(&ini->lock, PMV_LOCK_INI);
	pmv_ini_scope_add(ini, key, addr, len, ini->scope.gen);
	pmv_unlock(&ini->lock, PMV_LOCK_INI);
	return 0;
}

enum fi_pmem_method pmv_ini_method(struct pmv_ep *ep, uint64_t key)
{
	const struct pmv_method_ops *m;
	uint32_t gen;

	if (!ep->ini || !ep->peer.has_inbox)
		return FI_PMEM_METHOD_NONE;
	pmv_lock(&ep->ini->lock, PMV_LOCK_INI);
	m = pmv_ini_choose(ep->ini, key, 0, &gen);
	pmv_unlock(&ep->ini->lock, PMV_LOCK_INI);
	return m ? m->id : FI_PMEM_METHOD_NONE;
}

enum fi_pmem_profile pmv_ini_peer_profile(struct pmv_ep *ep, uint64_t key)
{
	enum fi_pmem_profile profile = FI_PMEM_PROFILE_UNKNOWN;
	const struct pmv_key_fact *f;

	if (!ep->ini)
		return profile;
	pmv_lock(&ep->ini->lock, PMV_LOCK_INI);
	f = ep->ini->ep ? pmv_ini_fact(ep->ini, key) : NULL;
	if (f)
		profile = f->profile;
	pmv_unlock(&ep->ini->lock, PMV_LOCK_INI);
	return profile;
}
