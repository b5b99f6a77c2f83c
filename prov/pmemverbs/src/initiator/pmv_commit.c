/*
 * pmemverbs: the initiator side of durable commits, and the agent method.
 *
 * Each commit takes the method pmv_method.c selects for its key: read-flush
 * and completion live in pmv_flush.c, the send method's data in
 * pmv_send.c; the agent method and the requests both send are here.
 *
 * fi_writemsg(FI_COMMIT_COMPLETE) with the agent method:
 *   1. the write's data goes to the core as a plain write, with no
 *      completion of its own;
 *   2. a commit request naming every range written to the key since its
 *      last commit follows on the same connection (fi_inject_write into the
 *      peer's inbox), so the core places it behind those writes;
 *   3. the target's agent persists the ranges and writes an ack back into
 *      this endpoint's inbox;
 *   4. the ack, found while the application reads its CQ, completes the
 *      commit with the application's context.
 * Nothing is queued inside pmemverbs, so no later operation can overtake a
 * commit: a commit that cannot be posted now returns -FI_EAGAIN before
 * anything is sent.  A fenced commit whose data fits a request travels by
 * send (pmv_send.c): one request, the scope's extents then the data, which
 * the agent places only after persisting them.  A larger fenced commit
 * first makes the key's earlier writes durable (a flush-only request) and
 * waits for its ack within the call, one round trip, before its own data
 * is posted.
 */
#include <string.h>
#include <time.h>

#include "pmv.h"

/*
 * Contexts of the operations pmemverbs posts for commits, recognised in a
 * CQ by one range check.  A data write completes only when the application
 * did not bind its CQ with FI_SELECTIVE_COMPLETION, and its entry is then
 * dropped; a flush op's entry becomes the commit's completion.  A row per
 * pmem endpoint, a context per kind and slot.
 */
#define PMV_MAX_PMEM_EPS 256
static struct fi_context2 pmv_ictx[PMV_MAX_PMEM_EPS][PMV_ICTX_KINDS][PMV_SLOTS];
static struct pmv_ep *pmv_ictx_owner[PMV_MAX_PMEM_EPS];
static pthread_mutex_t pmv_ictx_lock = PTHREAD_MUTEX_INITIALIZER;

/* A fence waits this long for the earlier scope to be acked. */
#define PMV_FENCE_TIMEOUT_MS 30000

int pmv_ictx_reserve(struct pmv_ep *ep)
{
	int i;

	pthread_mutex_lock(&pmv_ictx_lock);
	for (i = 0; i < PMV_MAX_PMEM_EPS && pmv_ictx_owner[i]; i++)
		;
	if (i < PMV_MAX_PMEM_EPS)
		pmv_ictx_owner[i] = ep;
	pthread_mutex_unlock(&pmv_ictx_lock);
	ep->ictx_index = i;
	if (i < PMV_MAX_PMEM_EPS)
		return 0;
	PMV_WARN(FI_LOG_EP_CTRL, "more than %d FI_RMA_PMEM endpoints in one "
		 "process; close some first\n", PMV_MAX_PMEM_EPS);
	return -FI_ENOSPC;
}

void pmv_ictx_release(struct pmv_ep *ep)
{
	if (!ep->pmem || ep->ictx_index < 0 ||
	    ep->ictx_index >= PMV_MAX_PMEM_EPS)
		return;
	pthread_mutex_lock(&pmv_ictx_lock);
	pmv_ictx_owner[ep->ictx_index] = NULL;
	pthread_mutex_unlock(&pmv_ictx_lock);
	ep->ictx_index = -1;
}

bool pmv_ictx_is_internal(const void *context)
{
	return (const char *) context >= (const char *) pmv_ictx &&
	       (const char *) context < (const char *) (pmv_ictx + PMV_MAX_PMEM_EPS);
}

struct fi_context2 *pmv_ictx_get(struct pmv_ep *ep, enum pmv_ictx_kind kind,
				 unsigned slot)
{
	return &pmv_ictx[ep->ictx_index][kind][slot % PMV_SLOTS];
}

/* The endpoint, kind and slot of an internal context (NULL: none now). */
struct pmv_ep *pmv_ictx_decode(const void *context, enum pmv_ictx_kind *kind,
			       unsigned *slot)
{
	size_t i = (size_t) ((const struct fi_context2 *) context -
			     &pmv_ictx[0][0][0]);

	*slot = (unsigned) (i % PMV_SLOTS);
	*kind = (enum pmv_ictx_kind) (i / PMV_SLOTS % PMV_ICTX_KINDS);
	return pmv_ictx_owner[i / (PMV_SLOTS * PMV_ICTX_KINDS)];
}

static struct pmv_pending *pmv_pending_of(struct pmv_ep *ep, uint64_t seq)
{
	return &ep->pend[(seq - 1) % PMV_SLOTS];
}

/* fi_errno for one of pmemverbs's prov_errno values. */
static int pmv_err_to_fi(int prov_errno)
{
	switch (prov_errno) {
	case PMV_ERR_NO_KEY:
		return FI_ENOKEY;
	case PMV_ERR_ACCESS:
		return FI_EACCES;
	case PMV_ERR_MULTI_IOV:
	case PMV_ERR_METHOD:
		return FI_EOPNOTSUPP;
	case PMV_ERR_PEER_GONE:
		return FI_ENOTCONN;
	case PMV_ERR_REREGISTERED:
		return FI_ECANCELED;
	default:
		return FI_EINVAL;
	}
}

/*
 * True if a successful commit raises no completion: issued by an inject
 * call (fi_inject_write), or without FI_COMPLETION on a CQ bound with
 * FI_SELECTIVE_COMPLETION.  Errors are always reported.
 */
bool pmv_commit_silent(const struct pmv_ep *ep,
		       const struct pmv_pending *pend)
{
	return pend->silent ||
	       (ep->tx_selective && !(pend->flags & FI_COMPLETION));
}

/* Reports a commit's outcome in the application's transmit CQ. */
void pmv_commit_report(struct pmv_ep *ep, struct pmv_pending *pend,
		       int prov_errno)
{
	struct fi_cq_err_entry e = {
		.op_context = pend->context,
		.flags = FI_RMA | FI_WRITE,
		.len = pend->len,
	};

	pend->reported = true;
	if (prov_errno)
		ep->counters.commit_errors++;
	else
		ep->counters.commits++;
	if (!ep->tx_cq || (!prov_errno && pmv_commit_silent(ep, pend)))
		return;
	if (prov_errno) {
		e.err = pmv_err_to_fi(prov_errno);
		e.prov_errno = prov_errno;
	}
	pmv_cq_push(ep->tx_cq, &e, prov_errno != 0);
}

static uint64_t pmv_msg_len(const struct fi_msg_rma *msg)
{
	uint64_t len = 0;
	size_t i;

	for (i = 0; i < msg->rma_iov_count; i++)
		len += msg->rma_iov[i].len;
	return len;
}

/* Extents of the key's scope the request can name (send: beside msg). */
static unsigned pmv_request_extents(const struct pmv_ep *ep,
				    const struct fi_msg_rma *inl)
{
	return inl ? pmv_send_scope_room(ep, inl) :
		     pmv_req_max_extents(pmv_ep_slot_bytes(ep));
}

static bool pmv_ring_full(const struct pmv_ep *ep)
{
	return ep->next_seq - ep->acked_seq > PMV_SLOTS;
}

/*
 * Sends the commit request for the key's scope as the next seq; a send
 * commit's request (inl) carries inl's data too.
 */
static int pmv_send_request(struct pmv_ep *ep, uint64_t key, uint64_t flags,
			    uint64_t data, const struct fi_msg_rma *inl)
{
	uint64_t buf[256 / sizeof(uint64_t)];
	struct pmv_req *req = (struct pmv_req *) buf;
	size_t size;
	unsigned i;
	int ret;

	memset(buf, 0, sizeof(buf));
	req->seq = ep->next_seq;
	req->key = key;
	req->data = data;
	req->flags = (flags & FI_IMMED) ? PMV_REQ_IMMED : 0;
	req->nextents = pmv_scope_take(&ep->scope, key, req->ext,
				       pmv_request_extents(ep, inl));
	if (inl)
		pmv_send_fill(req, inl);
	size = pmv_req_size(req, sizeof(buf));
	req->checksum = pmv_checksum(req, size);
	ret = fi_inject_write(ep->core, req, size, 0,
			      pmv_peer_req_addr(&ep->peer, req->seq),
			      ep->peer.inbox_key);
	if (ret) {
		for (i = 0; i < req->nextents; i++)
			pmv_scope_add(&ep->scope, key, req->ext[i].addr,
				      req->ext[i].len);
		return ret;
	}
	ep->next_seq++;
	ep->counters.requests_sent++;
	return 0;
}

/* Copies an ack out of the inbox; false if it is not (yet) seq's ack. */
static bool pmv_read_ack(struct pmv_ep *ep, uint64_t seq, struct pmv_ack *out)
{
	struct pmv_ack *slot = pmv_inbox_ack(&ep->inbox, seq);
	uint32_t sum;

	if (__atomic_load_n(&slot->seq, __ATOMIC_ACQUIRE) != seq)
		return false;
	memcpy(out, slot, sizeof(*out));
	sum = out->checksum;
	out->checksum = 0;
	return out->seq == seq && pmv_checksum(out, sizeof(*out)) == sum;
}

/* Forgets every cached profile: they predate registration generation gen. */
void pmv_forget_profiles(struct pmv_ep *ep, uint32_t gen)
{
	unsigned i;

	for (i = 0; i < PMV_PEER_PROFILES; i++)
		ep->peer_profiles[i].known = false;
	ep->peer_gen = gen;
}

/* Remembers the profile the peer reported for a key (a few keys kept). */
static void pmv_remember_profile(struct pmv_ep *ep, uint64_t key,
				 const struct pmv_ack *ack)
{
	unsigned i, slot = ep->peer_profiles_next % PMV_PEER_PROFILES;

	if (ack->mr_gen != ep->peer_gen)
		pmv_forget_profiles(ep, ack->mr_gen);
	for (i = 0; i < PMV_PEER_PROFILES; i++) {
		if (ep->peer_profiles[i].known &&
		    ep->peer_profiles[i].key == key) {
			slot = i;
			break;
		}
	}
	if (i == PMV_PEER_PROFILES)
		ep->peer_profiles_next++;
	ep->peer_profiles[slot].known = true;
	ep->peer_profiles[slot].key = key;
	ep->peer_profiles[slot].profile = ack->profile;
	ep->peer_profiles[slot].target_flags = ack->target_flags;
}

/* The method for a commit to key with these flags (NONE: refused). */
enum fi_pmem_method pmv_ep_method(struct pmv_ep *ep, uint64_t key,
				  uint64_t flags)
{
	struct pmv_key_facts facts = {
		.profile = FI_PMEM_PROFILE_UNKNOWN,
		.transport = ep->peer.transport,
		.raw_ordered = ep->raw_ordered,
	};
	unsigned i;

	for (i = 0; i < PMV_PEER_PROFILES; i++) {
		if (ep->peer_profiles[i].known &&
		    ep->peer_profiles[i].key == key) {
			facts.profile = ep->peer_profiles[i].profile;
			facts.ddio_off = ep->peer_profiles[i].target_flags &
					 PMV_ACK_DDIO_OFF;
		}
	}
	return pmv_method_select(&facts, flags);
}

/* Completes every commit whose ack has arrived, in seq order; lock held. */
void pmv_poll_acks(struct pmv_ep *ep)
{
	struct pmv_pending *pend;
	struct pmv_ack ack;
	uint64_t seq;

	while (ep->acked_seq + 1 < ep->next_seq) {
		seq = ep->acked_seq + 1;
		if (!pmv_read_ack(ep, seq, &ack))
			return;
		pend = pmv_pending_of(ep, seq);
		pend->status = ack.status;
		if (pend->inl.len)
			__atomic_fetch_sub(&ep->sends_busy, 1, __ATOMIC_RELEASE);
		if (!ack.status)
			pmv_remember_profile(ep, pend->key, &ack);
		if (!pend->internal && !pend->reported)
			pmv_commit_report(ep, pend, ack.status);
		ep->acked_seq = seq;
	}
}

void pmv_commit_progress(struct pmv_ep *ep)
{
	pthread_mutex_lock(&ep->lock);
	pmv_poll_acks(ep);
	pthread_mutex_unlock(&ep->lock);
}

uint64_t pmv_ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits (bounded) until every request up to seq is acked; lock held. */
static int pmv_wait_acked(struct pmv_ep *ep, uint64_t seq)
{
	uint64_t deadline = pmv_ms_now() + PMV_FENCE_TIMEOUT_MS;

	for (;;) {
		pmv_poll_acks(ep);
		if (ep->acked_seq >= seq)
			return pmv_pending_of(ep, seq)->status ? PMV_ERR_FENCE : 0;
		if (ep->error)
			return PMV_ERR_PEER_GONE;
		if (pmv_ms_now() > deadline) {
			PMV_WARN(FI_LOG_EP_DATA, "fenced commit: no ack from "
				 "the target for %d ms\n", PMV_FENCE_TIMEOUT_MS);
			return PMV_ERR_FENCE;
		}
		pmv_cq_progress_core(ep);
	}
}

/*
 * The fence of a fenced commit: the key's earlier writes are made durable
 * (a flush-only request, unless nothing was written since the last one)
 * and acked before the fenced data is posted.  Returns 0, -FI_EAGAIN
 * (nothing sent), or a PMV_ERR_* code.
 */
static int pmv_fence(struct pmv_ep *ep, uint64_t key)
{
	int ret;

	if (!pmv_scope_empty(&ep->scope, key)) {
		if (pmv_ring_full(ep))
			return -FI_EAGAIN;
		*pmv_pending_of(ep, ep->next_seq) = (struct pmv_pending) {
			.key = key, .internal = true,
		};
		ret = pmv_send_request(ep, key, 0, 0, NULL);
		if (ret)
			return ret == -FI_EAGAIN ? ret : PMV_ERR_PEER_GONE;
	}
	return ep->next_seq > 1 ? pmv_wait_acked(ep, ep->next_seq - 1) : 0;
}

/*
 * Posts a commit's data to the core as a plain write with an internal
 * context, without completion unless extra_flags asks for one, and adds it
 * to the key's scope.  The durability decision never goes to the core.
 */
ssize_t pmv_post_data(struct pmv_ep *ep, const struct fi_msg_rma *msg,
		      uint64_t flags, void *context, uint64_t extra_flags)
{
	uint64_t core_flags = (flags & ~(PMV_COMMIT_FLAGS | FI_FENCE |
					 FI_COMPLETION | FI_REMOTE_CQ_DATA)) |
			      extra_flags;
	struct fi_msg_rma core_msg = *msg;
	ssize_t ret;
	size_t i;

	core_msg.context = context;
	ret = fi_writemsg(ep->core, &core_msg, core_flags);
	if (ret)
		return ret;
	for (i = 0; i < msg->rma_iov_count; i++)
		pmv_scope_add(&ep->scope, msg->rma_iov[i].key,
			      msg->rma_iov[i].addr, msg->rma_iov[i].len);
	return 0;
}

/*
 * Sends the request that follows posted data.  Giving up is no option (the
 * data is on its way), so a busy core is waited for, bounded.
 */
static int pmv_send_request_after_data(struct pmv_ep *ep, uint64_t key,
				       uint64_t flags, uint64_t data)
{
	uint64_t deadline = pmv_ms_now() + PMV_FENCE_TIMEOUT_MS;
	int ret;

	while ((ret = pmv_send_request(ep, key, flags, data, NULL)) == -FI_EAGAIN &&
	       pmv_ms_now() < deadline)
		pmv_cq_progress_core(ep);
	return ret;
}

/* True if msg's data would land on a send commit's range in flight. */
static bool pmv_commit_meets_send(const struct pmv_ep *ep,
				  const struct fi_msg_rma *msg)
{
	size_t i;

	for (i = 0; i < msg->rma_iov_count; i++)
		if (msg->rma_iov[i].len &&
		    pmv_send_overlaps(ep, msg->rma_iov[i].key,
				      msg->rma_iov[i].addr, msg->rma_iov[i].len))
			return true;
	return false;
}

/*
 * Whether a commit must wait (-FI_EAGAIN): its ring is full; it is an
 * agent commit fenced behind flush commits still in flight (their
 * completions come through the application's CQ, which only the
 * application reads, so the fence cannot wait for them in the call); its
 * data would land on a send commit's range in flight; or it is a flush
 * commit to a key with a send commit in flight (pmv_send.c).
 */
static bool pmv_commit_must_wait(const struct pmv_ep *ep,
				 enum fi_pmem_method method,
				 const struct fi_msg_rma *msg, uint64_t flags)
{
	switch (method) {
	case FI_PMEM_METHOD_SEND:
		return pmv_ring_full(ep);
	case FI_PMEM_METHOD_AGENT:
		return pmv_ring_full(ep) ||
		       ((flags & FI_FENCE) && ep->flush_busy) ||
		       pmv_commit_meets_send(ep, msg);
	default:
		return !pmv_flush_can_post(ep, flags) ||
		       pmv_send_overlaps(ep, msg->rma_iov[0].key, 0, 0);
	}
}

/* Fills the pending entry of the next request for a commit. */
static struct pmv_pending *pmv_pending_next(struct pmv_ep *ep,
					    const struct fi_msg_rma *msg,
					    uint64_t flags, bool silent)
{
	struct pmv_pending *pend = pmv_pending_of(ep, ep->next_seq);

	*pend = (struct pmv_pending) {
		.context = msg->context, .key = msg->rma_iov[0].key,
		.flags = flags, .len = pmv_msg_len(msg), .silent = silent,
	};
	return pend;
}

/*
 * Posts a send commit: its data inside the request, no data write.  Only
 * -FI_EAGAIN can fail it (the core's inject queue is full): nothing is
 * sent then, and the scope is as it was.
 */
static int pmv_send_post(struct pmv_ep *ep, const struct fi_msg_rma *msg,
			 uint64_t flags, bool silent)
{
	struct pmv_pending *pend = pmv_pending_next(ep, msg, flags, silent);
	int ret;

	pend->inl = (struct pmv_extent) {
		.addr = msg->rma_iov[0].addr, .len = msg->rma_iov[0].len,
	};
	ret = pmv_send_request(ep, pend->key, flags, msg->data, msg);
	if (ret) {
		pend->inl.len = 0;
		return ret == -FI_EAGAIN ? ret : PMV_ERR_PEER_GONE;
	}
	__atomic_fetch_add(&ep->sends_busy, 1, __ATOMIC_RELEASE);
	ep->counters.sends++;
	return 0;
}

/* Posts one checked commit; lock held.  0, -FI_EAGAIN or a PMV_ERR_*. */
static int pmv_commit_post(struct pmv_ep *ep, const struct fi_msg_rma *msg,
			   uint64_t flags, bool silent)
{
	uint64_t key = msg->rma_iov[0].key;
	enum fi_pmem_method method;
	struct pmv_pending *pend;
	ssize_t ret;

	pmv_poll_acks(ep);
	method = pmv_ep_method(ep, key, flags);
	if (method == FI_PMEM_METHOD_NONE)
		return PMV_ERR_METHOD;
	if (method == FI_PMEM_METHOD_SEND && !pmv_send_fits(ep, msg))
		method = FI_PMEM_METHOD_AGENT;
	if (pmv_commit_must_wait(ep, method, msg, flags))
		return -FI_EAGAIN;
	if (method == FI_PMEM_METHOD_SEND)
		return pmv_send_post(ep, msg, flags, silent);
	if (method != FI_PMEM_METHOD_AGENT)
		return pmv_flush_post(ep, msg, flags, silent, method);
	if ((flags & FI_FENCE) && (ret = pmv_fence(ep, key)))
		return (int) ret;
	pend = pmv_pending_next(ep, msg, flags, silent);
	if (msg->iov_count) {
		/* FI_MORE: the request follows at once (tcp sends both) */
		ret = pmv_post_data(ep, msg, flags,
				    pmv_ictx_get(ep, PMV_ICTX_AGENT_DATA,
						 (unsigned) (ep->next_seq - 1)),
				    FI_MORE);
		if (ret)
			return ret == -FI_EAGAIN ? -FI_EAGAIN : PMV_ERR_PEER_GONE;
	}
	ret = pmv_send_request_after_data(ep, key, flags, msg->data);
	if (ret && !pend->reported)
		pmv_commit_report(ep, pend, PMV_ERR_PEER_GONE);
	return 0;
}

/*
 * Sends a flush commit again as an agent commit over the ranges it covered
 * (its flush op found the target's regions changed); lock held.  The data
 * is already placed.  False if the request cannot go now (the ranges then
 * stay in the key's scope, for its next commit).
 */
bool pmv_commit_resend(struct pmv_ep *ep, const struct pmv_pending *pend,
		       const struct pmv_extent *ext, unsigned count)
{
	struct pmv_pending *p;
	unsigned i;

	for (i = 0; i < count; i++)
		pmv_scope_add(&ep->scope, pend->key, ext[i].addr, ext[i].len);
	if (pmv_ring_full(ep) || ep->error)
		return false;
	p = pmv_pending_of(ep, ep->next_seq);
	*p = *pend;
	p->busy = false;
	p->gen_read = false;
	p->inl.len = 0;
	return pmv_send_request(ep, pend->key, pend->flags, 0, NULL) == 0;
}

/*
 * An operation posted for a commit failed (the core reported it with our
 * context): the commit completes now, with the core's error; its ack or
 * flush op is then ignored.  False if the commit already completed.
 */
bool pmv_commit_data_error(const struct fi_cq_err_entry *core_err,
			   struct fi_cq_err_entry *out)
{
	enum pmv_ictx_kind kind;
	unsigned slot;
	struct pmv_ep *ep = pmv_ictx_decode(core_err->op_context, &kind, &slot);
	struct pmv_pending *pend;
	bool first;

	*out = *core_err;
	if (!ep)
		return false;
	pthread_mutex_lock(&ep->lock);
	pend = kind == PMV_ICTX_AGENT_DATA ? &ep->pend[slot] : &ep->fpend[slot];
	if (kind == PMV_ICTX_FLUSH_OP && pend->busy) {
		pend->busy = false;
		ep->flush_busy--;
	}
	first = !pend->reported && !pend->internal;
	out->op_context = pend->context;
	out->flags = FI_RMA | FI_WRITE;
	out->len = pend->len;
	pend->reported = true;
	if (first)
		ep->counters.commit_errors++;
	pthread_mutex_unlock(&ep->lock);
	return first;
}

/* Fails every in-flight commit, e.g. when the peer is gone. */
void pmv_commit_fail_all(struct pmv_ep *ep, int err)
{
	struct pmv_pending *pend;
	uint64_t seq;

	pthread_mutex_lock(&ep->lock);
	ep->error = err;
	for (seq = ep->acked_seq + 1; seq < ep->next_seq; seq++) {
		pend = pmv_pending_of(ep, seq);
		if (!pend->internal && !pend->reported)
			pmv_commit_report(ep, pend, PMV_ERR_PEER_GONE);
	}
	ep->acked_seq = ep->next_seq - 1;
	__atomic_store_n(&ep->sends_busy, 0, __ATOMIC_RELEASE);
	pmv_flush_fail_all(ep);
	pthread_mutex_unlock(&ep->lock);
}

/* True if desc belongs to a memory region of this domain. */
static bool pmv_desc_known(struct pmv_domain *dom, void *desc)
{
	struct pmv_mr *mr;
	bool found = false;

	pthread_mutex_lock(&dom->lock);
	for (mr = dom->mrs; mr && !found; mr = mr->next)
		found = mr->mr_fid.mem_desc == desc;
	pthread_mutex_unlock(&dom->lock);
	return found;
}

static int pmv_check_descs(struct pmv_ep *ep, const struct fi_msg_rma *msg)
{
	size_t i;

	for (i = 0; i < msg->iov_count; i++) {
		if ((ep->domain->mr_mode & FI_MR_LOCAL) &&
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

/* The smaller of pmemverbs's limit and the core's (0: the core says none). */
static size_t pmv_limit(size_t own, size_t core)
{
	return core && core < own ? core : own;
}

/*
 * Segments the core cannot carry are refused: the verbs core, for one,
 * allows a single remote segment and would place the data elsewhere.
 */
static int pmv_check_iovs(struct pmv_ep *ep, const struct fi_msg_rma *msg)
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
	return pmv_check_descs(ep, msg);
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
	if (ep->error) {
		PMV_WARN(FI_LOG_EP_DATA, "commit: endpoint unusable (%s)\n",
			 fi_strerror(-ep->error));
		return ep->error;
	}
	if (!ep->peer.known) {
		PMV_WARN(FI_LOG_EP_DATA, "commit: endpoint is not connected\n");
		return -FI_ENOTCONN;
	}
	if (!ep->peer.has_inbox) {
		PMV_WARN(FI_LOG_EP_DATA, "commit: the peer endpoint was opened "
			 "without FI_RMA_PMEM; it cannot serve commits\n");
		return -FI_EOPNOTSUPP;
	}
	return pmv_check_iovs(ep, msg) ? -FI_EINVAL :
	       pmv_check_inject(ep, msg, flags);
}

/* Checks and posts a commit; silent for commits made by an inject call. */
static ssize_t pmv_commit(struct pmv_ep *ep, const struct fi_msg_rma *msg,
			  uint64_t flags, bool silent)
{
	int ret = pmv_commit_check(ep, msg, flags);

	if (ret)
		return ret;
	pthread_mutex_lock(&ep->lock);
	ret = pmv_commit_post(ep, msg, flags, silent);
	pthread_mutex_unlock(&ep->lock);
	if (ret > 0) {
		PMV_WARN(FI_LOG_EP_DATA, "commit: %s\n", pmv_strerror(ret));
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

void pmv_ep_peer_connected(struct pmv_ep *ep, const struct pmv_peer *peer)
{
	ep->peer = *peer;
	if (ep->pmem && ep->inbox.mem && pmv_agent_add(ep->domain, ep))
		PMV_WARN(FI_LOG_EP_CTRL, "could not start the commit agent; "
			 "this endpoint cannot serve commits\n");
}
