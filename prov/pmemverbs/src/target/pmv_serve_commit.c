/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: serving one commit request on its region (pmv_agent_commit):
 * holds the region against its close, validates the request with proto/
 * against it, persists each extent (target/pmv_profile.c) and records it
 * for the oracle, places and persists the data a send request carries.
 * pmv_serve.c reads requests, calls it, and acks.  Split from pmv_serve.c.
 */
#include <string.h>

#include "pmv.h"
#include "target/pmv_target.h"
#include "pmv_timeline.h"

/*
 * The region registered under key, held against its close until
 * pmv_mr_put (persisting runs with no lock held); NULL if none.
 */
struct pmv_mr *pmv_domain_get_mr(struct pmv_domain *dom, uint64_t key)
{
	struct pmv_mr *mr;

	pmv_lock(&dom->lock, PMV_LOCK_DOMAIN);
	mr = pmv_mr_index_key(dom, key);
	if (mr)
		__atomic_add_fetch(&mr->refs, 1, __ATOMIC_ACQ_REL);
	pmv_unlock(&dom->lock, PMV_LOCK_DOMAIN);
	return mr;
}

void pmv_mr_put(struct pmv_mr *mr)
{
	if (mr)
		__atomic_sub_fetch(&mr->refs, 1, __ATOMIC_ACQ_REL);
}

/* What the validator needs of a region (NULL: no region). */
static const struct pmv_region *pmv_region_of(const struct pmv_mr *mr,
					      struct pmv_region *r)
{
	if (!mr)
		return NULL;
	*r = (struct pmv_region) {
		.rma_base = mr->rma_base, .len = mr->len,
		.remote_write = mr->access & FI_REMOTE_WRITE,
		.single_iov = mr->iov_count == 1,
	};
	return r;
}

/* Persists one range of a region and records it for the oracle. */
static int pmv_agent_persist_range(struct pmv_mr *mr, uint64_t key,
				   uint64_t addr, uint64_t len)
{
	int ret;

	if (pmv_oracle_skip_extent())
		return 0;
	pmv_mark(PMV_MARK_PERSIST);
	ret = pmv_persist(&mr->persistence, (char *) mr->base +
			  (addr - mr->rma_base), len);
	pmv_mark(PMV_MARK_PERSISTED);
	if (!ret)
		pmv_oracle_record(key, addr, len);
	return ret;
}

/* Places a send request's data in the region and persists it. */
static int pmv_agent_place(struct pmv_mr *mr, struct pmv_req *req)
{
	const struct pmv_extent *e = pmv_req_inline(req);
	uint8_t *dst = (uint8_t *) mr->base + (e->addr - mr->rma_base);

	int ret = pmv_place(&mr->persistence, dst, pmv_req_inline_data(req),
			    e->len, mr->flags & FI_UNCACHED);

	return ret ? ret : pmv_agent_persist_range(mr, req->key, e->addr,
						   e->len);
}

/* Persists the request's extents; 0 or the first persist error. */
static int pmv_agent_persist(struct pmv_mr *mr, const struct pmv_req *req,
			     uint64_t *bytes)
{
	const struct pmv_extent *e;
	unsigned i;
	int ret;

	for (i = 0; i < req->nextents; i++) {
		e = &req->ext[i];
		ret = pmv_agent_persist_range(mr, req->key, e->addr, e->len);
		if (ret)
			return ret;
		*bytes += e->len;
	}
	return 0;
}

/*
 * True if mr was registered after the generation the request's writes
 * were posted in: a region closed since may hold them (closed regions
 * count once their core registration is gone, pmv_mr.c), so persisting
 * mr would say nothing of them.  A peer cannot know of a generation older
 * than the endpoint's opening, and none of its writes landed before it.
 */
static bool pmv_agent_reregistered(const struct pmv_ep *ep,
				   const struct pmv_mr *mr,
				   const struct pmv_req *req)
{
	uint32_t posted = pmv_gen_before(req->gen, ep->tgt->open_gen) ?
			  ep->tgt->open_gen : req->gen;

	return pmv_gen_before(posted, mr->reg_gen);
}

/*
 * Checks a request against mr (NULL: no region): the validator's refusals
 * first, then the generation; 0 or a PMV_ERR_* code.
 */
static int pmv_agent_check(const struct pmv_ep *ep, const struct pmv_mr *mr,
			   const struct pmv_req *req)
{
	struct pmv_region region;
	int status = pmv_req_check(req, pmv_region_of(mr, &region));

	if (status) {
		PMV_INFO(FI_LOG_DOMAIN, "agent: commit request %llu refused: "
			 "%s\n", (unsigned long long) req->seq,
			 pmv_strerror(status));
		return status;
	}
	if ((req->flags & PMV_REQ_GATED) && !ep->gated) {
		PMV_WARN(FI_LOG_DOMAIN, "agent: commit request %llu refused: "
			 "it is gated, and this endpoint offered no gate; "
			 "run the same pmemverbs on both sides\n",
			 (unsigned long long) req->seq);
		return PMV_ERR_BAD_REQUEST;
	}
	if ((req->flags & PMV_REQ_INLINE) && mr->iface != FI_HMEM_SYSTEM) {
		PMV_WARN(FI_LOG_DOMAIN, "agent: commit request %llu refused: "
			 "it carries data for key 0x%llx, device memory "
			 "(FI_HMEM interface %d) the agent cannot store into "
			 "with the CPU; commit to device memory without "
			 "FI_FENCE or FI_PMEMVERBS_METHOD=send (they carry the "
			 "data in the request)\n",
			 (unsigned long long) req->seq,
			 (unsigned long long) req->key, (int) mr->iface);
		return PMV_ERR_METHOD;
	}
	if (pmv_agent_reregistered(ep, mr, req)) {
		PMV_INFO(FI_LOG_DOMAIN, "agent: commit request %llu refused: "
			 "key 0x%llx was registered again (generation %u) "
			 "after its writes were posted (%u)\n",
			 (unsigned long long) req->seq,
			 (unsigned long long) req->key, mr->reg_gen, req->gen);
		return PMV_ERR_REREGISTERED;
	}
	return 0;
}

/* Serves one request on mr (NULL: no region); 0 or a PMV_ERR_* code. */
static int pmv_agent_commit_on(struct pmv_ep *ep, struct pmv_mr *mr,
			       struct pmv_req *req)
{
	uint64_t bytes;
	int status = pmv_agent_check(ep, mr, req);

	ep->tgt->agent_profile = mr && !status ? mr->persistence.profile :
				 FI_PMEM_PROFILE_UNKNOWN;
	if (status)
		return status;
	bytes = 0;
	if (pmv_agent_persist(mr, req, &bytes) ||
	    ((req->flags & PMV_REQ_INLINE) && pmv_agent_place(mr, req)))
		return PMV_ERR_PERSIST;
	if (req->flags & PMV_REQ_INLINE)
		bytes += pmv_req_inline(req)->len;
	/* The application reads these under ep->lock; the agent does not
	 * take it, so it updates them atomically. */
	__atomic_fetch_add(&ep->counters.bytes_persisted, bytes,
			   __ATOMIC_RELAXED);
	__atomic_fetch_add(&ep->counters.requests_served, 1, __ATOMIC_RELAXED);
	return 0;
}

/*
 * Serves one request on the region its key names, held (not locked) while
 * it is persisted; returns 0 or a PMV_ERR_* code for the ack.
 */
int pmv_agent_commit(struct pmv_domain *dom, struct pmv_ep *ep,
		     struct pmv_req *req)
{
	/* read before the lookup: a region closed after it shows a newer one */
	uint32_t gen = (uint32_t) __atomic_load_n(&dom->mr_gen, __ATOMIC_ACQUIRE);
	struct pmv_mr *mr = pmv_domain_get_mr(dom, req->key);
	int status;

	ep->tgt->agent_gen = gen;
	status = pmv_agent_commit_on(ep, mr, req);
	pmv_mr_put(mr);
	return status;
}
