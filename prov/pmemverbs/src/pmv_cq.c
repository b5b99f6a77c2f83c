/*
 * pmemverbs: completion queue.
 *
 * Ordinary completions come straight from the core CQ; their contexts are
 * the application's own.  pmemverbs raises some entries itself: commit
 * completions (once the target's ack arrives) and FI_IMMED target
 * completions (from the agent thread).  Those wait in a small queue of
 * their own, read before the core's.  Reading a CQ also progresses the
 * commits of the pmem endpoints that report to it.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pmv.h"

static inline struct pmv_cq *pmv_cq(struct fid_cq *cq)
{
	return pmv_container_of(cq, struct pmv_cq, cq_fid);
}

static size_t pmv_cq_entry_size(enum fi_cq_format format)
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

void pmv_cq_push(struct pmv_cq *cq, const struct fi_cq_err_entry *entry,
		 bool is_error)
{
	size_t tail;

	pthread_mutex_lock(&cq->lock);
	if (cq->aux_count == PMV_CQ_AUX_SIZE) {
		PMV_WARN(FI_LOG_CQ, "completion queue overrun: %d pmemverbs "
			 "completions are unread; read the CQ more often\n",
			 PMV_CQ_AUX_SIZE);
	} else {
		tail = (cq->aux_head + cq->aux_count) % PMV_CQ_AUX_SIZE;
		cq->aux[tail].is_error = is_error;
		cq->aux[tail].entry = *entry;
		__atomic_store_n(&cq->aux_count, cq->aux_count + 1,
				 __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&cq->lock);
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

/* Pops pmemverbs's own entries; -FI_EAVAIL if an error is first. */
static ssize_t pmv_cq_pop_aux(struct pmv_cq *cq, void *buf, size_t count,
			      fi_addr_t *src_addr)
{
	size_t size = pmv_cq_entry_size(cq->format), n = 0;

	pthread_mutex_lock(&cq->lock);
	while (n < count && cq->aux_count && !cq->aux[cq->aux_head].is_error) {
		pmv_cq_copy_entry(cq, (char *) buf + n * size,
				  &cq->aux[cq->aux_head].entry);
		if (src_addr)
			src_addr[n] = FI_ADDR_NOTAVAIL;
		cq->aux_head = (cq->aux_head + 1) % PMV_CQ_AUX_SIZE;
		cq->aux_count--;
		n++;
	}
	if (!n && cq->aux_count)
		n = (size_t) -FI_EAVAIL;
	pthread_mutex_unlock(&cq->lock);
	return n ? (ssize_t) n : -FI_EAGAIN;
}

/* Finds the acks of every pmem endpoint that completes its commits here. */
static void pmv_cq_progress(struct pmv_cq *cq)
{
	struct pmv_ep *ep;

	pthread_mutex_lock(&cq->eps_lock);
	for (ep = cq->pmem_eps; ep; ep = ep->cq_next)
		pmv_commit_progress(ep);
	pthread_mutex_unlock(&cq->eps_lock);
}

/*
 * Turns what the core gave into what the application sees: a flush op's
 * entry becomes its commit's completion; other internal entries (data
 * writes, a silent commit's flush op) are dropped.
 */
static ssize_t pmv_cq_filter_internal(struct pmv_cq *cq, void *buf,
				      fi_addr_t *src_addr, ssize_t n)
{
	size_t size = pmv_cq_entry_size(cq->format);
	struct fi_cq_err_entry commit;
	ssize_t i, kept = 0;
	char *entry;

	for (i = 0; i < n; i++) {
		entry = (char *) buf + i * size;
		if (pmv_ictx_is_internal(((struct fi_cq_entry *) entry)->op_context)) {
			if (!pmv_flush_op_done(((struct fi_cq_entry *) entry)->op_context,
					       &commit))
				continue;
			pmv_cq_copy_entry(cq, entry, &commit);
			if (src_addr)
				src_addr[i] = FI_ADDR_NOTAVAIL;
		}
		if (kept != i) {
			memmove((char *) buf + kept * size, entry, size);
			if (src_addr)
				src_addr[kept] = src_addr[i];
		}
		kept++;
	}
	return kept ? kept : -FI_EAGAIN;
}

static ssize_t pmv_cq_readfrom(struct fid_cq *cq_fid, void *buf, size_t count,
			       fi_addr_t *src_addr)
{
	struct pmv_cq *cq = pmv_cq(cq_fid);
	ssize_t ret;

	if (!__atomic_load_n(&cq->pmem_eps, __ATOMIC_RELAXED) &&
	    !__atomic_load_n(&cq->aux_count, __ATOMIC_RELAXED))
		return src_addr ? fi_cq_readfrom(cq->core, buf, count, src_addr) :
				  fi_cq_read(cq->core, buf, count);
	pmv_cq_progress(cq);
	if (__atomic_load_n(&cq->aux_count, __ATOMIC_ACQUIRE)) {
		ret = pmv_cq_pop_aux(cq, buf, count, src_addr);
		if (ret != -FI_EAGAIN)
			return ret;
	}
	ret = src_addr ? fi_cq_readfrom(cq->core, buf, count, src_addr) :
			 fi_cq_read(cq->core, buf, count);
	return ret > 0 ? pmv_cq_filter_internal(cq, buf, src_addr, ret) : ret;
}

static ssize_t pmv_cq_read(struct fid_cq *cq, void *buf, size_t count)
{
	return pmv_cq_readfrom(cq, buf, count, NULL);
}

static ssize_t pmv_cq_readerr(struct fid_cq *cq_fid, struct fi_cq_err_entry *buf,
			      uint64_t flags)
{
	struct pmv_cq *cq = pmv_cq(cq_fid);
	ssize_t ret = 0;

	if (__atomic_load_n(&cq->aux_count, __ATOMIC_ACQUIRE)) {
		pthread_mutex_lock(&cq->lock);
		if (cq->aux_count && cq->aux[cq->aux_head].is_error) {
			*buf = cq->aux[cq->aux_head].entry;
			cq->aux_head = (cq->aux_head + 1) % PMV_CQ_AUX_SIZE;
			cq->aux_count--;
			ret = 1;
		}
		pthread_mutex_unlock(&cq->lock);
	}
	if (ret)
		return ret;
	ret = fi_cq_readerr(cq->core, buf, flags);
	if (ret > 0 && pmv_ictx_is_internal(buf->op_context) &&
	    !pmv_commit_data_error(buf, buf))
		return -FI_EAGAIN; /* its commit has already completed */
	return ret;
}

static int pmv_ms_left(const struct timespec *deadline)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (int) ((deadline->tv_sec - now.tv_sec) * 1000 +
		      (deadline->tv_nsec - now.tv_nsec) / 1000000);
}

/* The core's blocking read; some cores (verbs) implement only sread. */
static ssize_t pmv_core_sread(struct pmv_cq *cq, void *buf, size_t count,
			      fi_addr_t *src_addr, const void *cond,
			      int timeout)
{
	return src_addr ?
	       fi_cq_sreadfrom(cq->core, buf, count, src_addr, cond, timeout) :
	       fi_cq_sread(cq->core, buf, count, cond, timeout);
}

/*
 * Blocking read.  Without pmem endpoints it is the core's.  With them, it
 * alternates progress with short core waits: an ack lands in memory and an
 * agent's FI_IMMED entry is queued here, neither wakes a core wait object.
 */
static ssize_t pmv_cq_sreadfrom(struct fid_cq *cq_fid, void *buf, size_t count,
				fi_addr_t *src_addr, const void *cond,
				int timeout)
{
	struct pmv_cq *cq = pmv_cq(cq_fid);
	struct timespec deadline;
	ssize_t ret;
	int left;

	if (!__atomic_load_n(&cq->pmem_refs, __ATOMIC_RELAXED) &&
	    !__atomic_load_n(&cq->aux_count, __ATOMIC_RELAXED))
		return pmv_core_sread(cq, buf, count, src_addr, cond, timeout);
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += timeout / 1000;
	deadline.tv_nsec += (long) (timeout % 1000) * 1000000;
	if (deadline.tv_nsec >= 1000000000) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000;
	}
	for (;;) {
		ret = pmv_cq_readfrom(cq_fid, buf, count, src_addr);
		if (ret != -FI_EAGAIN)
			return ret;
		left = timeout < 0 ? 1 : pmv_ms_left(&deadline);
		if (left <= 0)
			return -FI_EAGAIN;
		ret = pmv_core_sread(cq, buf, count, src_addr, cond, 1);
		if (ret > 0)
			ret = pmv_cq_filter_internal(cq, buf, src_addr, ret);
		if (ret != -FI_EAGAIN)
			return ret;
	}
}

static ssize_t pmv_cq_sread(struct fid_cq *cq, void *buf, size_t count,
			    const void *cond, int timeout)
{
	return pmv_cq_sreadfrom(cq, buf, count, NULL, cond, timeout);
}

static int pmv_cq_signal(struct fid_cq *cq)
{
	return fi_cq_signal(pmv_cq(cq)->core);
}

const char *pmv_strerror(int prov_errno)
{
	static const char *const msgs[] = {
		[PMV_ERR_NO_KEY - PMV_ERR_BASE] = "commit refused by the "
			"target: no region registered with that key",
		[PMV_ERR_RANGE - PMV_ERR_BASE] = "commit refused by the "
			"target: a range lies outside the region",
		[PMV_ERR_ACCESS - PMV_ERR_BASE] = "commit refused by the "
			"target: the region was registered without "
			"FI_REMOTE_WRITE",
		[PMV_ERR_MULTI_IOV - PMV_ERR_BASE] = "commit refused by the "
			"target: the region was registered with several iovs; "
			"register persistent memory as one range",
		[PMV_ERR_PEER_GONE - PMV_ERR_BASE] = "commit failed: the "
			"connection to the target is gone",
		[PMV_ERR_FENCE - PMV_ERR_BASE] = "fenced commit failed: the "
			"writes before the fence could not be made durable",
		[PMV_ERR_METHOD - PMV_ERR_BASE] = "commit refused: "
			"FI_PMEMVERBS_METHOD names a method that is not "
			"correct for the profile the target reported for this "
			"key; use auto",
		[PMV_ERR_REREGISTERED - PMV_ERR_BASE] = "commit's durability "
			"unknown: the target closed a memory region while it "
			"was in flight (the key may name other memory now); "
			"commit the range again",
	};

	if (prov_errno <= PMV_ERR_BASE || prov_errno >= PMV_ERR_LAST)
		return NULL;
	return msgs[prov_errno - PMV_ERR_BASE];
}

static const char *pmv_cq_strerror(struct fid_cq *cq, int prov_errno,
				   const void *err_data, char *buf, size_t len)
{
	const char *msg = pmv_strerror(prov_errno);

	if (!msg)
		return fi_cq_strerror(pmv_cq(cq)->core, prov_errno, err_data,
				      buf, len);
	if (buf && len) {
		strncpy(buf, msg, len - 1);
		buf[len - 1] = '\0';
	}
	return msg;
}

static struct fi_ops_cq pmv_cq_ops = {
	.size = sizeof(struct fi_ops_cq),
	.read = pmv_cq_read,
	.readfrom = pmv_cq_readfrom,
	.readerr = pmv_cq_readerr,
	.sread = pmv_cq_sread,
	.sreadfrom = pmv_cq_sreadfrom,
	.signal = pmv_cq_signal,
	.strerror = pmv_cq_strerror,
};

/*
 * Drives the core's progress on an endpoint's CQs: the tcp core moves data
 * only when its CQs are read, and a read of zero entries progresses a CQ
 * without taking any completion from the application.  Used by the agent
 * thread, hence the atomic loads.
 */
void pmv_cq_progress_core(struct pmv_ep *ep)
{
	struct pmv_cq *rx = __atomic_load_n(&ep->rx_cq, __ATOMIC_ACQUIRE);
	struct pmv_cq *tx = __atomic_load_n(&ep->tx_cq, __ATOMIC_ACQUIRE);

	if (rx)
		(void) fi_cq_read(rx->core, NULL, 0);
	if (tx && tx != rx)
		(void) fi_cq_read(tx->core, NULL, 0);
}

void pmv_cq_ref_pmem(struct pmv_cq *cq, int delta)
{
	__atomic_fetch_add(&cq->pmem_refs, delta, __ATOMIC_RELAXED);
}

void pmv_cq_add_pmem_ep(struct pmv_cq *cq, struct pmv_ep *ep)
{
	pthread_mutex_lock(&cq->eps_lock);
	ep->cq_next = cq->pmem_eps;
	__atomic_store_n(&cq->pmem_eps, ep, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&cq->eps_lock);
}

void pmv_cq_remove_pmem_ep(struct pmv_cq *cq, struct pmv_ep *ep)
{
	struct pmv_ep **pp;

	pthread_mutex_lock(&cq->eps_lock);
	for (pp = &cq->pmem_eps; *pp; pp = &(*pp)->cq_next) {
		if (*pp == ep) {
			*pp = ep->cq_next;
			break;
		}
	}
	pthread_mutex_unlock(&cq->eps_lock);
}

static int pmv_cq_close(struct fid *fid)
{
	struct pmv_cq *cq = pmv_container_of(fid, struct pmv_cq, cq_fid.fid);
	int ret = pmv_close_core(&cq->core->fid, "completion queue");

	if (ret)
		return ret;
	pthread_mutex_destroy(&cq->lock);
	pthread_mutex_destroy(&cq->eps_lock);
	free(cq);
	return 0;
}

static struct fi_ops pmv_cq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = pmv_cq_close,
	.bind = pmv_no_bind,
	.control = pmv_control_core,
	.ops_open = pmv_ops_open_core,
	.ops_set = pmv_no_ops_set,
};

int pmv_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr,
		struct fid_cq **cq_fid, void *context)
{
	struct pmv_domain *dom = pmv_container_of(domain, struct pmv_domain,
						  domain_fid);
	struct fi_cq_attr core_attr = *attr;
	struct pmv_cq *cq;
	int ret;

	ret = pmv_core_wait_set(attr->wait_set, &core_attr.wait_set);
	if (ret)
		return ret;
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -FI_ENOMEM;
	ret = fi_cq_open(dom->core, &core_attr, &cq->core, cq);
	if (ret) {
		free(cq);
		return ret;
	}
	pthread_mutex_init(&cq->lock, NULL);
	pthread_mutex_init(&cq->eps_lock, NULL);
	cq->format = attr->format ? attr->format : FI_CQ_FORMAT_CONTEXT;
	cq->cq_fid.fid.fclass = FI_CLASS_CQ;
	cq->cq_fid.fid.context = context;
	cq->cq_fid.fid.ops = &pmv_cq_fi_ops;
	cq->cq_fid.ops = &pmv_cq_ops;
	*cq_fid = &cq->cq_fid;
	return 0;
}
