/*
 * pmemverbs: the initiator side of durable commits (the "agent" method).
 *
 * fi_writemsg(FI_COMMIT_COMPLETE) on a pmem endpoint:
 *   1. the write's data goes to the core as a plain write, with no
 *      completion of its own;
 *   2. a commit request naming every range written to the key since its
 *      last commit follows on the same connection (fi_inject_write into the
 *      peer's inbox), so the core places it behind those writes;
 *   3. the target's agent persists the ranges and writes an ack back into
 *      this endpoint's inbox;
 *   4. the ack, found while the application reads its CQ, completes the
 *      commit with the application's context.
 * Commits are queued in order.  A fenced commit first makes the key's
 * earlier writes durable (a flush-only request) and is placed only once
 * that request is acked.
 */
#include <string.h>

#include "pmv.h"

/*
 * Contexts of the commits' data writes.  Such a write completes only when
 * the application did not bind its CQ with FI_SELECTIVE_COMPLETION; its
 * entry is then dropped by the CQ, recognised by one range check.  A row
 * per pmem endpoint, a context per request slot.
 */
#define PMV_MAX_PMEM_EPS 256
static struct fi_context2 pmv_ictx[PMV_MAX_PMEM_EPS][PMV_SLOTS];
static struct pmv_ep *pmv_ictx_owner[PMV_MAX_PMEM_EPS];
static pthread_mutex_t pmv_ictx_lock = PTHREAD_MUTEX_INITIALIZER;

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

static struct fi_context2 *pmv_data_context(struct pmv_ep *ep, uint64_t seq)
{
	return &pmv_ictx[ep->ictx_index][(seq - 1) % PMV_SLOTS];
}

static void pmv_cq_entry_init(struct fi_cq_err_entry *e, void *context,
			      uint64_t flags, size_t len)
{
	memset(e, 0, sizeof(*e));
	e->op_context = context;
	e->flags = flags;
	e->len = len;
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
		return FI_EOPNOTSUPP;
	case PMV_ERR_PEER_GONE:
		return FI_ENOTCONN;
	default:
		return FI_EINVAL;
	}
}

/*
 * True if a successful commit raises no completion: issued as an inject,
 * or without FI_COMPLETION on a CQ bound with FI_SELECTIVE_COMPLETION.
 * Errors are always reported.
 */
static bool pmv_commit_silent(const struct pmv_ep *ep, uint64_t flags)
{
	return (flags & FI_INJECT) ||
	       (ep->tx_selective && !(flags & FI_COMPLETION));
}

/* Reports a commit's outcome in the application's transmit CQ. */
static void pmv_commit_report(struct pmv_ep *ep, void *context, size_t len,
			      uint64_t flags, int prov_errno)
{
	struct fi_cq_err_entry e;

	if (prov_errno)
		ep->counters.commit_errors++;
	else
		ep->counters.commits++;
	if (!ep->tx_cq || (!prov_errno && pmv_commit_silent(ep, flags)))
		return;
	pmv_cq_entry_init(&e, context, FI_RMA | FI_WRITE, len);
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

static unsigned pmv_request_extents(const struct pmv_ep *ep)
{
	uint32_t slot = ep->peer.slot_size < ep->inbox.slot_size ?
			ep->peer.slot_size : ep->inbox.slot_size;

	return pmv_req_max_extents(slot);
}

/* Sends the commit request for the key's scope as the next seq. */
static int pmv_send_request(struct pmv_ep *ep, uint64_t key, uint64_t flags,
			    uint64_t data)
{
	uint64_t buf[256 / sizeof(uint64_t)];
	struct pmv_req *req = (struct pmv_req *) buf;
	uint64_t seq = ep->next_seq;
	size_t size;
	unsigned i;
	int ret;

	if (seq - ep->acked_seq > PMV_SLOTS)
		return -FI_EAGAIN;
	memset(buf, 0, sizeof(buf));
	req->seq = seq;
	req->key = key;
	req->data = data;
	req->flags = (flags & FI_IMMED) ? PMV_REQ_IMMED : 0;
	req->nextents = pmv_scope_take(&ep->scope, key, req->ext,
				       pmv_request_extents(ep));
	size = sizeof(*req) + req->nextents * sizeof(struct pmv_extent);
	req->checksum = pmv_checksum(req, size);
	ret = fi_inject_write(ep->core, req, size, 0,
			      pmv_peer_req_addr(&ep->peer, seq),
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

/* Posts a commit's data to the core as a plain write without completion. */
static ssize_t pmv_post_data(struct pmv_ep *ep, const struct pmv_deferred *d)
{
	uint64_t core_flags = d->flags & ~(PMV_COMMIT_FLAGS | FI_FENCE |
					   FI_COMPLETION | FI_REMOTE_CQ_DATA);
	struct fi_msg_rma msg = d->msg;
	ssize_t ret;
	size_t i;

	msg.context = pmv_data_context(ep, ep->next_seq);
	ret = fi_writemsg(ep->core, &msg, core_flags);
	if (ret)
		return ret;
	for (i = 0; i < d->msg.rma_iov_count; i++)
		pmv_scope_add(&ep->scope, d->msg.rma_iov[i].key,
			      d->msg.rma_iov[i].addr, d->msg.rma_iov[i].len);
	return 0;
}

static struct pmv_deferred *pmv_deferred_head(struct pmv_ep *ep)
{
	return ep->deferred_count ? &ep->deferred[ep->deferred_head] : NULL;
}

static void pmv_deferred_pop(struct pmv_ep *ep)
{
	ep->deferred_head = (ep->deferred_head + 1) % PMV_MAX_DEFERRED;
	ep->deferred_count--;
}

/*
 * Starts a fence: the earlier writes to the key must be durable first.  If
 * anything is outstanding, a flush-only request is sent (or the last one
 * reused) and the commit waits for its ack.
 */
static int pmv_start_fence(struct pmv_ep *ep, struct pmv_deferred *d)
{
	uint64_t key = d->msg.rma_iov[0].key;
	int ret;

	d->flags &= ~FI_FENCE;
	if (pmv_scope_empty(&ep->scope, key)) {
		d->wait_seq = ep->next_seq - 1;
		return 0;
	}
	ret = pmv_send_request(ep, key, 0, 0);
	if (ret) {
		d->flags |= FI_FENCE;
		return ret;
	}
	d->wait_seq = ep->next_seq - 1;
	ep->pend[(d->wait_seq - 1) % PMV_SLOTS] = (struct pmv_pending) {
		.key = key,
		.internal = true,
	};
	return 0;
}

/* Advances the head commit as far as it can go; -FI_EAGAIN if blocked. */
static int pmv_advance_head(struct pmv_ep *ep, struct pmv_deferred *d)
{
	struct pmv_pending *pend;
	int ret;

	if ((d->flags & FI_FENCE) && (ret = pmv_start_fence(ep, d)))
		return ret == -FI_EAGAIN ? ret : PMV_ERR_PEER_GONE;
	if (d->wait_seq > ep->acked_seq)
		return -FI_EAGAIN;
	if (d->wait_seq && ep->pend[(d->wait_seq - 1) % PMV_SLOTS].status)
		return PMV_ERR_FENCE;
	if (ep->next_seq - ep->acked_seq > PMV_SLOTS)
		return -FI_EAGAIN;
	if (!d->data_posted) {
		pend = &ep->pend[(ep->next_seq - 1) % PMV_SLOTS];
		*pend = (struct pmv_pending) {
			.context = d->msg.context,
			.key = d->msg.rma_iov[0].key,
			.flags = d->flags,
			.len = pmv_msg_len(&d->msg),
		};
		ret = d->msg.iov_count ? (int) pmv_post_data(ep, d) : 0;
		if (ret)
			return ret == -FI_EAGAIN ? ret : PMV_ERR_PEER_GONE;
		d->data_posted = true;
	}
	ret = pmv_send_request(ep, d->msg.rma_iov[0].key, d->flags,
			       d->msg.data);
	if (ret)
		return ret == -FI_EAGAIN ? ret : PMV_ERR_PEER_GONE;
	return 0;
}

/*
 * A commit's data write failed (the core reported it with our context):
 * the commit completes now, with the core's error, and its ack is ignored.
 */
void pmv_commit_data_error(const struct fi_cq_err_entry *core_err,
			   struct fi_cq_err_entry *out)
{
	size_t i = (size_t) ((const struct fi_context2 *) core_err->op_context -
			     &pmv_ictx[0][0]);
	struct pmv_ep *ep = pmv_ictx_owner[i / PMV_SLOTS];
	struct pmv_pending *pend;

	*out = *core_err;
	if (!ep)
		return;
	pthread_mutex_lock(&ep->lock);
	pend = &ep->pend[i % PMV_SLOTS];
	out->op_context = pend->context;
	out->flags = FI_RMA | FI_WRITE;
	out->len = pend->len;
	pend->reported = true;
	ep->counters.commit_errors++;
	pthread_mutex_unlock(&ep->lock);
}

/* Sends every queued commit that may go now, in order. */
static void pmv_drain_deferred(struct pmv_ep *ep)
{
	struct pmv_deferred *d;
	int ret;

	while ((d = pmv_deferred_head(ep))) {
		ret = pmv_advance_head(ep, d);
		if (ret == -FI_EAGAIN)
			return;
		if (ret)
			pmv_commit_report(ep, d->msg.context,
					  pmv_msg_len(&d->msg), d->flags, ret);
		pmv_deferred_pop(ep);
	}
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

/* Completes every commit whose ack has arrived, in seq order. */
static void pmv_poll_acks(struct pmv_ep *ep)
{
	struct pmv_pending *pend;
	struct pmv_ack ack;
	uint64_t seq;

	while (ep->acked_seq + 1 < ep->next_seq) {
		seq = ep->acked_seq + 1;
		if (!pmv_read_ack(ep, seq, &ack))
			return;
		pend = &ep->pend[(seq - 1) % PMV_SLOTS];
		pend->status = ack.status;
		ep->peer_profile = ack.profile;
		ep->peer_profile_key = pend->key;
		if (!pend->internal && !pend->reported)
			pmv_commit_report(ep, pend->context, pend->len,
					  pend->flags, ack.status);
		ep->acked_seq = seq;
	}
}

void pmv_commit_progress(struct pmv_ep *ep)
{
	pthread_mutex_lock(&ep->lock);
	pmv_poll_acks(ep);
	pmv_drain_deferred(ep);
	pthread_mutex_unlock(&ep->lock);
}

/* Fails every queued and in-flight commit, e.g. when the peer is gone. */
void pmv_commit_fail_all(struct pmv_ep *ep, int err)
{
	struct pmv_deferred *d;
	uint64_t seq;

	pthread_mutex_lock(&ep->lock);
	ep->error = err;
	for (seq = ep->acked_seq + 1; seq < ep->next_seq; seq++)
		if (!ep->pend[(seq - 1) % PMV_SLOTS].internal &&
		    !ep->pend[(seq - 1) % PMV_SLOTS].reported)
			pmv_commit_report(ep, ep->pend[(seq - 1) % PMV_SLOTS].context,
					  ep->pend[(seq - 1) % PMV_SLOTS].len,
					  ep->pend[(seq - 1) % PMV_SLOTS].flags,
					  PMV_ERR_PEER_GONE);
	ep->acked_seq = ep->next_seq - 1;
	while ((d = pmv_deferred_head(ep))) {
		pmv_commit_report(ep, d->msg.context, pmv_msg_len(&d->msg),
				  d->flags, PMV_ERR_PEER_GONE);
		pmv_deferred_pop(ep);
	}
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

static int pmv_check_iovs(struct pmv_ep *ep, const struct fi_msg_rma *msg)
{
	uint64_t len = 0;
	size_t i;

	if (msg->iov_count > PMV_MAX_IOV || msg->rma_iov_count > PMV_MAX_IOV) {
		PMV_WARN(FI_LOG_EP_DATA, "commit: iov_count %zu / rma_iov_count "
			 "%zu over the limit of %d\n", msg->iov_count,
			 msg->rma_iov_count, PMV_MAX_IOV);
		return -FI_EINVAL;
	}
	for (i = 0; i < msg->rma_iov_count; i++) {
		if (msg->rma_iov[i].key != msg->rma_iov[0].key) {
			PMV_WARN(FI_LOG_EP_DATA, "commit: rma_iov[%zu] names "
				 "another key; a commit covers one key\n", i);
			return -FI_EINVAL;
		}
		len += msg->rma_iov[i].len;
	}
	for (i = 0; i < msg->iov_count; i++) {
		len -= msg->msg_iov[i].iov_len;
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
	if (msg->iov_count && len) {
		PMV_WARN(FI_LOG_EP_DATA, "commit: local and remote lengths "
			 "differ\n");
		return -FI_EINVAL;
	}
	return 0;
}

/* FI_INJECT commits are copied; they must fit the copy and the core. */
static int pmv_check_inject(struct pmv_ep *ep, const struct fi_msg_rma *msg,
			    uint64_t flags)
{
	size_t len = 0, i, max = sizeof(((struct pmv_deferred *) 0)->inject_buf);

	if (!(flags & FI_INJECT))
		return 0;
	for (i = 0; i < msg->iov_count; i++)
		len += msg->msg_iov[i].iov_len;
	if (max > ep->domain->inject_size)
		max = ep->domain->inject_size;
	if (len <= max)
		return 0;
	PMV_WARN(FI_LOG_EP_DATA, "commit: FI_INJECT of %zu bytes is over the "
		 "inject size %zu\n", len, max);
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

/* Copies FI_INJECT data: the caller may reuse its buffer on return. */
static void pmv_defer_inject_data(struct pmv_deferred *d)
{
	char *dst = (char *) d->inject_buf;
	size_t i;

	for (i = 0; i < d->msg.iov_count; i++) {
		memcpy(dst, d->iov[i].iov_base, d->iov[i].iov_len);
		d->iov[i].iov_base = dst;
		dst += d->iov[i].iov_len;
	}
}

/* Queues a copy of the application's commit (its arrays may not outlive us). */
static void pmv_defer(struct pmv_ep *ep, const struct fi_msg_rma *msg,
		      uint64_t flags)
{
	unsigned tail = (ep->deferred_head + ep->deferred_count) %
			PMV_MAX_DEFERRED;
	struct pmv_deferred *d = &ep->deferred[tail];

	memset(d, 0, sizeof(*d));
	d->flags = flags;
	d->msg = *msg;
	memcpy(d->iov, msg->msg_iov, msg->iov_count * sizeof(*d->iov));
	memcpy(d->rma_iov, msg->rma_iov, msg->rma_iov_count * sizeof(*d->rma_iov));
	if (msg->desc)
		memcpy(d->desc, msg->desc, msg->iov_count * sizeof(*d->desc));
	d->msg.msg_iov = d->iov;
	d->msg.desc = msg->desc ? d->desc : NULL;
	d->msg.rma_iov = d->rma_iov;
	if (flags & FI_INJECT)
		pmv_defer_inject_data(d);
	ep->deferred_count++;
}

ssize_t pmv_commit_writemsg(struct pmv_ep *ep, const struct fi_msg_rma *msg,
			    uint64_t flags)
{
	int ret = pmv_commit_check(ep, msg, flags);

	if (ret)
		return ret;
	pthread_mutex_lock(&ep->lock);
	if (ep->deferred_count == PMV_MAX_DEFERRED) {
		pmv_poll_acks(ep);
		pmv_drain_deferred(ep);
	}
	if (ep->deferred_count == PMV_MAX_DEFERRED) {
		ret = -FI_EAGAIN;
	} else {
		pmv_defer(ep, msg, flags);
		pmv_drain_deferred(ep);
	}
	pthread_mutex_unlock(&ep->lock);
	return ret;
}

void pmv_ep_peer_connected(struct pmv_ep *ep, const struct pmv_peer *peer)
{
	ep->peer = *peer;
	if (ep->pmem && ep->inbox.mem && pmv_agent_add(ep->domain, ep))
		PMV_WARN(FI_LOG_EP_CTRL, "could not start the commit agent; "
			 "this endpoint cannot serve commits\n");
}
