/*
 * pmemverbs: the target agent.
 *
 * One thread per domain that has pmem endpoints.  It polls the request
 * slots of each endpoint's inbox (the core places the requests, behind the
 * data writes they cover; the core's progress moves them even when the
 * target application never polls), checks the request's key, bounds and
 * access against the domain's regions before touching memory, persists each
 * extent with the region's persist function, places and persists the data
 * a send request carries (after the extents: that is the fence), raises
 * the FI_IMMED target completion, and writes the ack back into the
 * initiator's inbox.
 *
 * Test hooks (parameters, see fi_pmemverbs(7)): FI_PMEMVERBS_ORACLE names a
 * shared file where every persisted range is recorded, so a test can check
 * that a commit never completes before its scope was persisted;
 * FI_PMEMVERBS_FAULT_SKIP_EXTENT=N skips the N-th persisted extent, to show
 * that such a test can fail.
 */
#include <endian.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pmv.h"
#include "target/pmv_oracle.h"

struct pmv_agent {
	pthread_t thread;
	bool stop;
	struct pmv_ep *eps; /* under domain->lock */
	struct pmv_domain *domain;
	struct pmv_agent *next; /* every running agent, for unloading */
};

/* Every running agent: libfabric may unload the plugin at exit while
 * domains are still open, and no agent may outlive its code. */
static struct pmv_agent *pmv_agents;
static pthread_mutex_t pmv_agents_lock = PTHREAD_MUTEX_INITIALIZER;

static struct pmv_oracle_log *pmv_oracle;
static size_t pmv_oracle_cap;
static pthread_once_t pmv_oracle_once = PTHREAD_ONCE_INIT;
static uint64_t pmv_extents_persisted;

/* Maps the oracle log the test named, once per process. */
static void pmv_oracle_open(void)
{
	struct stat st;
	void *mem;
	int fd;

	if (!pmv_params.oracle)
		return;
	fd = open(pmv_params.oracle, O_RDWR);
	if (fd < 0 || fstat(fd, &st) || (size_t) st.st_size < sizeof(*pmv_oracle)) {
		PMV_WARN(FI_LOG_DOMAIN, "FI_PMEMVERBS_ORACLE=%s: cannot open "
			 "the oracle log\n", pmv_params.oracle);
		if (fd >= 0)
			close(fd);
		return;
	}
	mem = mmap(NULL, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (mem == MAP_FAILED)
		return;
	pmv_oracle = mem;
	pmv_oracle_cap = pmv_oracle_capacity(st.st_size);
}

/* Records a persisted range in the oracle log, if a test asked for one. */
static void pmv_oracle_record(uint64_t key, uint64_t addr, uint64_t len)
{
	uint64_t i;

	if (!pmv_oracle)
		return;
	i = __atomic_fetch_add(&pmv_oracle->count, 1, __ATOMIC_ACQ_REL);
	if (i >= pmv_oracle_cap)
		return;
	pmv_oracle->rec[i].key = key;
	pmv_oracle->rec[i].addr = addr;
	pmv_oracle->rec[i].len = len;
	__atomic_store_n(&pmv_oracle->rec[i].valid, 1, __ATOMIC_RELEASE);
}

/* True when fault injection says to skip this extent. */
static bool pmv_fault_skip(void)
{
	uint64_t n = __atomic_add_fetch(&pmv_extents_persisted, 1,
					__ATOMIC_RELAXED);

	return pmv_params.fault_skip > 0 && n == (uint64_t) pmv_params.fault_skip;
}

struct pmv_mr *pmv_domain_find_mr(struct pmv_domain *dom, uint64_t key)
{
	struct pmv_mr *mr;

	for (mr = dom->mrs; mr; mr = mr->next)
		if (fi_mr_key(&mr->mr_fid) == key)
			return mr;
	return NULL;
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

	if (pmv_fault_skip())
		return 0;
	ret = pmv_persist(&mr->persistence, (char *) mr->base +
			  (addr - mr->rma_base), len);
	if (!ret)
		pmv_oracle_record(key, addr, len);
	return ret;
}

/* Places a send request's data in the region and persists it. */
static int pmv_agent_place(struct pmv_mr *mr, struct pmv_req *req)
{
	const struct pmv_extent *e = pmv_req_inline(req);
	uint8_t *dst = (uint8_t *) mr->base + (e->addr - mr->rma_base);

	pmv_place(&mr->persistence, dst, pmv_req_inline_data(req), e->len,
		  mr->flags & FI_UNCACHED);
	return pmv_agent_persist_range(mr, req->key, e->addr, e->len);
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

/* Raises the FI_IMMED completion in the target endpoint's receive CQ. */
static void pmv_agent_immed(struct pmv_ep *ep, const struct pmv_req *req)
{
	struct fi_cq_err_entry e = {
		.flags = FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA,
		.data = req->data,
	};

	if (ep->rx_cq)
		pmv_cq_push(ep->rx_cq, &e, false);
}

/* Serves one valid request; returns 0 or a PMV_ERR_* code for the ack. */
static int pmv_agent_commit(struct pmv_domain *dom, struct pmv_ep *ep,
			    struct pmv_req *req)
{
	uint64_t bytes;
	uint32_t gen = (uint32_t) __atomic_load_n(&dom->mr_gen, __ATOMIC_ACQUIRE);
	struct pmv_mr *mr = pmv_domain_find_mr(dom, req->key);
	struct pmv_region region;
	int status = pmv_req_check(req, pmv_region_of(mr, &region));

	/* read before the lookup: a region closed after it shows a newer one */
	ep->agent_gen = gen;
	ep->agent_profile = mr ? mr->persistence.profile :
				 FI_PMEM_PROFILE_UNKNOWN;
	if (status) {
		PMV_INFO(FI_LOG_DOMAIN, "agent: commit request %llu refused: "
			 "%s\n", (unsigned long long) req->seq,
			 pmv_strerror(status));
		return status;
	}
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
	if (req->flags & PMV_REQ_IMMED)
		pmv_agent_immed(ep, req);
	return 0;
}

/* Copies the request for seq out of the inbox; false if not there (yet). */
static bool pmv_agent_read_req(struct pmv_ep *ep, uint64_t seq,
			       struct pmv_req *out, size_t out_size)
{
	struct pmv_req *slot = pmv_inbox_req(&ep->inbox, seq);
	size_t avail = ep->inbox.slot_size < out_size ?
		       ep->inbox.slot_size : out_size;

	/* one load while nothing has come: the slot's seq, little-endian */
	if (le64toh(__atomic_load_n(&slot->seq, __ATOMIC_ACQUIRE)) != seq)
		return false;
	return pmv_req_decode(slot, avail, seq, out) > 0;
}

/*
 * Posts an ack into the peer's inbox with fi_inject_write: no completion,
 * so a busy target's CQ and threads are not woken once per ack (a
 * completion per ack cost about a fifth of a DMP commit's latency over
 * tcp).  An ack that fails means the connection broke: the initiator
 * learns it from its own probe, and the context-less error entry the core
 * raises is not shown to the application (pmv_cq.c).
 */
static ssize_t pmv_agent_post_ack(struct pmv_ep *ep, struct pmv_ack *ack)
{
	return fi_inject_write(ep->core, ack, sizeof(*ack), 0,
			       pmv_peer_ack_addr(&ep->peer, ack->seq),
			       ep->peer.inbox_key);
}

/* Writes the ack for the last served request; false if the core is busy. */
static bool pmv_agent_send_ack(struct pmv_ep *ep)
{
	struct pmv_ack ack = {
		.seq = ep->agent_unacked,
		.status = ep->agent_status,
		.profile = ep->agent_profile,
		.target_flags = pmv_params.ddio ? 0 : PMV_ACK_DDIO_OFF,
		.mr_gen = ep->agent_gen,
	};
	ssize_t ret;

	pmv_ack_encode(&ack);
	ret = pmv_agent_post_ack(ep, &ack);
	if (ret == -FI_EAGAIN)
		return false;
	if (ret)
		PMV_WARN(FI_LOG_DOMAIN, "agent: sending ack %llu: %s\n",
			 (unsigned long long) ep->agent_unacked,
			 fi_strerror((int) -ret));
	ep->agent_unacked = 0;
	return true;
}

/*
 * A fenced request names how many requests back to look: if one of them,
 * to its key, failed, the fenced data must not be placed.
 */
static bool pmv_agent_fence_broken(const struct pmv_ep *ep,
				   const struct pmv_req *req)
{
	const struct pmv_agent_hist *h;
	uint64_t s;

	if (!(req->flags & PMV_REQ_FENCE))
		return false;
	for (s = req->seq - req->fence_back; s < req->seq; s++) {
		h = &ep->agent_hist[(s - 1) % PMV_SLOTS];
		if (h->seq == s && h->key == req->key && h->status)
			return true;
	}
	return false;
}

/* Serves one request and remembers its outcome for later fences. */
static void pmv_agent_serve_req(struct pmv_domain *dom, struct pmv_ep *ep,
				struct pmv_req *req)
{
	struct pmv_agent_hist *h = &ep->agent_hist[(req->seq - 1) % PMV_SLOTS];

	ep->agent_status = pmv_agent_fence_broken(ep, req) ? PMV_ERR_FENCE :
			   pmv_agent_commit(dom, ep, req);
	*h = (struct pmv_agent_hist) { .seq = req->seq, .key = req->key,
				       .status = ep->agent_status };
	ep->agent_unacked = ep->agent_seq++;
}

/*
 * FI_IMMED entries the target application has not read yet, past which
 * the agent stops serving FI_IMMED requests (the initiators then see their
 * rings fill: -FI_EAGAIN), so that a flood cannot grow memory for ever.
 */
#define PMV_IMMED_BACKLOG 65536

static bool pmv_agent_immed_blocked(struct pmv_ep *ep, const struct pmv_req *req)
{
	struct pmv_cq *rx = __atomic_load_n(&ep->rx_cq, __ATOMIC_ACQUIRE);

	return (req->flags & PMV_REQ_IMMED) && rx &&
	       pmv_cq_backlog(rx) >= PMV_IMMED_BACKLOG;
}

/* Serves the requests waiting in one endpoint's inbox; returns how many. */
static int pmv_agent_serve_ep(struct pmv_domain *dom, struct pmv_ep *ep)
{
	uint64_t buf[256 / sizeof(uint64_t)];
	struct pmv_req *req = (struct pmv_req *) buf;
	int served = 0;

	/* a target that never polls still moves data (tcp core) */
	pmv_cq_progress_core(ep);
	while (served < PMV_SLOTS) {
		if (ep->agent_unacked && !pmv_agent_send_ack(ep))
			break;
		if (!pmv_agent_read_req(ep, ep->agent_seq, req, sizeof(buf)) ||
		    pmv_agent_immed_blocked(ep, req))
			break;
		pmv_agent_serve_req(dom, ep, req);
		served++;
	}
	return served;
}

static void pmv_sleep_us(long us)
{
	struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000 };

	nanosleep(&ts, NULL);
}

static uint64_t pmv_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/*
 * The agent's loop: spin while requests keep coming, then back off to
 * sleeping (10 us doubling to 1 ms) so an idle target costs no CPU.
 */
static void *pmv_agent_main(void *arg)
{
	struct pmv_domain *dom = arg;
	uint64_t last_work = pmv_now_us();
	long nap = 0;
	int served;

	for (;;) {
		if (__atomic_load_n(&dom->agent->stop, __ATOMIC_ACQUIRE))
			return NULL;
		pthread_mutex_lock(&dom->lock);
		served = 0;
		for (struct pmv_ep *ep = dom->agent->eps; ep; ep = ep->agent_next)
			served += pmv_agent_serve_ep(dom, ep);
		pthread_mutex_unlock(&dom->lock);
		if (served) {
			last_work = pmv_now_us();
			nap = 0;
		} else if (pmv_now_us() - last_work > (uint64_t) pmv_params.agent_spin_us) {
			nap = nap ? (nap < 1000 ? nap * 2 : 1000) : 10;
			pmv_sleep_us(nap);
		} else {
			/* Spinning: let a thread of this CPU that is placing the
			 * next request (or holds the core's locks) run first. */
			sched_yield();
		}
	}
}

/* Starts the domain's agent thread (domain lock held). */
static int pmv_agent_start(struct pmv_domain *dom)
{
	struct pmv_agent *agent = calloc(1, sizeof(*agent));
	int ret;

	if (!agent)
		return -FI_ENOMEM;
	pthread_once(&pmv_oracle_once, pmv_oracle_open);
	dom->agent = agent;
	agent->domain = dom;
	ret = pthread_create(&agent->thread, NULL, pmv_agent_main, dom);
	if (ret) {
		dom->agent = NULL;
		free(agent);
		return -ret;
	}
	pthread_mutex_lock(&pmv_agents_lock);
	agent->next = pmv_agents;
	pmv_agents = agent;
	pthread_mutex_unlock(&pmv_agents_lock);
	return 0;
}

int pmv_agent_add(struct pmv_domain *dom, struct pmv_ep *ep)
{
	int ret = 0;

	pthread_mutex_lock(&dom->lock);
	if (!dom->agent)
		ret = pmv_agent_start(dom);
	if (!ret && !ep->in_agent) {
		ep->agent_seq = 1;
		ep->agent_next = dom->agent->eps;
		dom->agent->eps = ep;
		ep->in_agent = true;
		__atomic_store_n(ep->inbox.gen_word, dom->mr_gen,
				 __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&dom->lock);
	return ret;
}

/*
 * A region of the domain closed: its key may come back naming memory of
 * another profile.  The new generation goes to every endpoint's inbox,
 * where the peers' read-flushes read it; dom->lock held.
 */
void pmv_domain_publish_gen(struct pmv_domain *dom)
{
	struct pmv_ep *ep;

	__atomic_store_n(&dom->mr_gen, dom->mr_gen + 1, __ATOMIC_RELEASE);
	if (!dom->agent)
		return;
	for (ep = dom->agent->eps; ep; ep = ep->agent_next)
		__atomic_store_n(ep->inbox.gen_word, dom->mr_gen,
				 __ATOMIC_RELEASE);
}

void pmv_agent_remove(struct pmv_domain *dom, struct pmv_ep *ep)
{
	struct pmv_ep **pp;

	pthread_mutex_lock(&dom->lock);
	if (ep->in_agent) {
		for (pp = &dom->agent->eps; *pp; pp = &(*pp)->agent_next) {
			if (*pp == ep) {
				*pp = ep->agent_next;
				break;
			}
		}
		ep->in_agent = false;
	}
	pthread_mutex_unlock(&dom->lock);
}

/* Takes an agent off the list of running agents; false if not on it. */
static bool pmv_agent_unlist(struct pmv_agent *agent)
{
	struct pmv_agent **pp;
	bool found = false;

	pthread_mutex_lock(&pmv_agents_lock);
	for (pp = &pmv_agents; *pp; pp = &(*pp)->next) {
		if (*pp == agent) {
			*pp = agent->next;
			found = true;
			break;
		}
	}
	pthread_mutex_unlock(&pmv_agents_lock);
	return found;
}

/*
 * Stops the domain's agent.  The stop flag needs no lock: at exit the agent
 * may be blocked in the core on a lock the exiting thread holds, so the
 * unload path (wait_ms > 0) gives up waiting after wait_ms and leaves it.
 */
static void pmv_agent_stop_waiting(struct pmv_domain *dom, int wait_ms)
{
	struct pmv_agent *agent = dom->agent;
	struct timespec deadline;

	if (!agent || !pmv_agent_unlist(agent))
		return;
	__atomic_store_n(&agent->stop, true, __ATOMIC_RELEASE);
	if (wait_ms <= 0) {
		pthread_join(agent->thread, NULL);
	} else {
		clock_gettime(CLOCK_REALTIME, &deadline);
		deadline.tv_sec += wait_ms / 1000;
		if (pthread_timedjoin_np(agent->thread, NULL, &deadline)) {
			PMV_WARN(FI_LOG_DOMAIN, "agent thread did not stop "
				 "within %d ms at unload; leaving it\n", wait_ms);
			return;
		}
	}
	dom->agent = NULL;
	free(agent);
}

void pmv_agent_stop(struct pmv_domain *dom)
{
	pmv_agent_stop_waiting(dom, 0);
}

void pmv_agent_stop_all(void)
{
	struct pmv_agent *agent;

	for (;;) {
		pthread_mutex_lock(&pmv_agents_lock);
		agent = pmv_agents;
		pthread_mutex_unlock(&pmv_agents_lock);
		if (!agent)
			return;
		pmv_agent_stop_waiting(agent->domain, 1000);
	}
}
