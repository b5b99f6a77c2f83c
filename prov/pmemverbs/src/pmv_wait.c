/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: wait sets and poll sets, forwarded to the core's.  A wait set
 * knows the CQs and counters opened on it: fi_wait runs their progress
 * first, as pmemverbs completes and counts commits from reads, which wake
 * no core wait object.  Built against libfabric 2.x, which deprecated
 * both, there are none: opening one is -FI_ENOSYS and naming one in an
 * attribute -FI_EINVAL.
 */
#include <stdlib.h>

#include "pmv_objects.h"

#if PMV_HAVE_WAIT_SETS

/* Longest sleep of fi_wait while a member has work in flight whose end
 * lands in memory (commits' acks), and while members have pmem endpoints
 * (another thread may start a commit meanwhile): as fi_cq_sread's steps. */
#define PMV_WAIT_BUSY_MS 1
#define PMV_WAIT_PMEM_MS 100

/* Longest step of a lone counter's wait (pmv_wait_lone_cntr): a close of
 * the counter waits for it to end, and the counter's wait sleeps in
 * steps as long (fi_cntr_add from another thread wakes nothing). */
#define PMV_WAIT_LONE_MS 20

/* The longest sleep in the core's set for members in state, ms (-1: no
 * bound) left of the caller's timeout. */
static int pmv_wait_step(enum pmv_member_state state, int ms)
{
	int most = state == PMV_MEMBER_BUSY ? PMV_WAIT_BUSY_MS :
		   state == PMV_MEMBER_PMEM ? PMV_WAIT_PMEM_MS : -1;

	return most >= 0 && (ms < 0 || ms > most) ? most : ms;
}

/* A look of fi_wait stops at the first member with entries. */
static bool pmv_wait_stop(void *arg, const struct pmv_member *m)
{
	(void) arg;
	(void) m;
	return false;
}

/* Milliseconds of the next step of a wait of timeout (ms, -1: none) that
 * ends at deadline: at most PMV_WAIT_LONE_MS. */
static int pmv_wait_lone_step(int timeout, uint64_t deadline)
{
	int left = timeout < 0 ? PMV_WAIT_LONE_MS : pmv_ms_until(deadline);

	return left < PMV_WAIT_LONE_MS ? left : PMV_WAIT_LONE_MS;
}

/*
 * fi_wait on a set whose only member is a counter: the counter's own wait
 * (pmv_cntr_wait_from, which sleeps on its endpoints' CQ fds: an ack's
 * bytes wake those, not the core's set, and a commit waited 1 ms, or 100
 * ms when another thread posted it), until the count or the error count
 * moved since fi_wait on the set last returned; in steps of at most
 * PMV_WAIT_LONE_MS.  1 if the set has no lone counter.
 */
static int pmv_wait_lone_cntr(struct pmv_wait *wait, int timeout,
			      uint64_t deadline)
{
	struct pmv_cntr *cntr;
	int ret;

	for (;;) {
		cntr = pmv_members_hold_lone_cntr(&wait->members);
		if (!cntr)
			return 1;
		ret = pmv_cntr_wait_from(cntr,
			__atomic_load_n(&cntr->set_seen, __ATOMIC_ACQUIRE) + 1,
			__atomic_load_n(&cntr->set_seen_errs, __ATOMIC_ACQUIRE),
			pmv_wait_lone_step(timeout, deadline));
		if (ret != -FI_ETIMEDOUT) {
			__atomic_store_n(&cntr->set_seen, fi_cntr_read(cntr->core),
					 __ATOMIC_RELEASE);
			__atomic_store_n(&cntr->set_seen_errs,
					 fi_cntr_readerr(cntr->core),
					 __ATOMIC_RELEASE);
		}
		pmv_members_release(&wait->members);
		if (ret != -FI_ETIMEDOUT)
			return ret == -FI_EAVAIL ? 0 : ret;
		if (timeout >= 0 && !pmv_ms_until(deadline))
			return -FI_ETIMEDOUT;
	}
}

/*
 * fi_wait: returns at once if a member holds pmemverbs's entries; while a
 * member has commits in flight, sleeps in the core's set in steps of
 * PMV_WAIT_BUSY_MS with the members' progress between them (an ack
 * landing in memory wakes no wait object: a commit waited for the whole
 * timeout), in steps of PMV_WAIT_PMEM_MS while members have pmem
 * endpoints; otherwise the core's wait.  A set whose only member is a
 * counter waits in the counter's wait (pmv_wait_lone_cntr).
 */
static int pmv_wait_wait(struct fid_wait *waitset, int timeout)
{
	struct pmv_wait *wait = pmv_container_of(waitset, struct pmv_wait,
						 wait_fid);
	uint64_t deadline = pmv_ms_now() + (uint64_t) (timeout < 0 ? 0 :
							timeout);
	enum pmv_member_state state;
	int ret, ms;

	ret = pmv_wait_lone_cntr(wait, timeout, deadline);
	if (ret != 1)
		return ret;
	/* counted before the first look: the agent then leaves the members'
	 * progress to this thread, and signals it if its own progress took
	 * an ack's bytes (pmv_cq_sleepers: a commit that another thread
	 * started while this one slept waited up to PMV_WAIT_PMEM_MS) */
	__atomic_add_fetch(&wait->sleepers, 1, __ATOMIC_SEQ_CST);
	for (;;) {
		state = pmv_members_look(&wait->members, pmv_wait_stop, NULL);
		if (state == PMV_MEMBER_READY) {
			ret = 0;
			break;
		}
		ms = pmv_wait_step(state, timeout < 0 ? -1 :
					   pmv_ms_until(deadline));
		ret = fi_wait(wait->core, ms);
		pmv_members_note_used(&wait->members);
		if (ret != -FI_ETIMEDOUT || state == PMV_MEMBER_IDLE ||
		    (timeout >= 0 && !pmv_ms_until(deadline)))
			break;
	}
	__atomic_sub_fetch(&wait->sleepers, 1, __ATOMIC_SEQ_CST);
	return ret;
}

/*
 * Adds a CQ or counter (one of the two) opened on the application's wait
 * set app_set (NULL: none) to its members, *set naming it; -FI_ENOMEM if
 * there is no memory.
 */
int pmv_wait_join(struct fid_wait *app_set, struct pmv_cq *cq,
		  struct pmv_cntr *cntr, struct pmv_wait **set)
{
	struct pmv_wait *wait;
	int ret;

	*set = NULL;
	if (!app_set)
		return 0;
	wait = pmv_container_of(app_set, struct pmv_wait, wait_fid);
	ret = pmv_members_add(&wait->members, cq, cntr);
	if (!ret)
		*set = wait;
	return ret;
}

/* Takes a closing CQ or counter off its wait set (NULL: none); returns
 * once no fi_wait looks at it. */
void pmv_wait_leave(struct pmv_wait *wait, const void *obj)
{
	if (wait)
		pmv_members_remove(&wait->members, obj);
}

static struct fi_ops_wait pmv_wait_ops = {
	.size = sizeof(struct fi_ops_wait),
	.wait = pmv_wait_wait,
};

/* Closes a wait or poll set: its core set, then its members' list and
 * itself (a core set still in use refuses, and nothing is freed). */
static int pmv_set_close(struct fid *core, const char *what,
			 struct pmv_members *members, void *set)
{
	int ret = pmv_close_core(core, what);

	if (ret)
		return ret;
	pmv_members_fini(members);
	free(set);
	return 0;
}

static int pmv_wait_close(struct fid *fid)
{
	struct pmv_wait *wait = pmv_container_of(fid, struct pmv_wait, wait_fid.fid);

	return pmv_set_close(&wait->core->fid, "wait set", &wait->members,
			     wait);
}

static struct fi_ops pmv_wait_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = pmv_wait_close,
	.bind = pmv_no_bind,
	.control = pmv_control_core,
	.ops_open = pmv_ops_open_core,
	.ops_set = pmv_no_ops_set,
};

int pmv_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr,
		  struct fid_wait **waitset)
{
	struct pmv_fabric *fab = pmv_container_of(fabric, struct pmv_fabric,
						  fabric_fid);
	struct pmv_wait *wait = calloc(1, sizeof(*wait));
	int ret;

	if (!wait)
		return -FI_ENOMEM;
	ret = fi_wait_open(fab->core, attr, &wait->core);
	if (ret) {
		free(wait);
		return ret;
	}
	wait->core->fid.context = wait;
	pmv_members_init(&wait->members);
	wait->wait_fid.fid.fclass = FI_CLASS_WAIT;
	wait->wait_fid.fid.ops = &pmv_wait_fi_ops;
	wait->wait_fid.ops = &pmv_wait_ops;
	*waitset = &wait->wait_fid;
	return 0;
}

static inline struct fid_poll *core_poll(struct fid_poll *pollset)
{
	return pmv_container_of(pollset, struct pmv_poll, poll_fid)->core;
}

/* The members an fi_poll call found, up to count (their fids: the
 * application's contexts once the core's are added). */
struct pmv_poll_found {
	void **context;
	int count, n;
};

/* A member of the poll set with pmemverbs's entries: noted, if there is
 * room (the look goes on: every member's progress runs). */
static bool pmv_poll_found_ready(void *arg, const struct pmv_member *m)
{
	struct pmv_poll_found *f = arg;

	if (f->n < f->count)
		f->context[f->n++] = &m->cq->cq_fid.fid;
	return true;
}

/* True if fid is among the first n found. */
static bool pmv_poll_has(void **context, int n, const void *fid)
{
	for (int i = 0; i < n; i++)
		if (context[i] == fid)
			return true;
	return false;
}

/*
 * fi_poll: the members' progress first, and those holding pmemverbs's
 * entries (which no core CQ shows); then the core's, whose contexts are
 * the pmemverbs wrappers' fids.  Each object is given once, by the
 * application's own context.
 */
static int pmv_poll_poll(struct fid_poll *pollset, void **context, int count)
{
	struct pmv_poll *poll = pmv_container_of(pollset, struct pmv_poll,
						 poll_fid);
	struct pmv_poll_found f = { .context = context, .count = count };
	int ret, i, ours;

	(void) pmv_members_look(&poll->members, pmv_poll_found_ready, &f);
	ours = f.n;
	ret = f.n < count ? fi_poll(poll->core, context + f.n, count - f.n) :
			    0;
	pmv_members_note_used(&poll->members);
	if (ret < 0 && !f.n)
		return ret;
	for (i = 0; i < ret; i++)
		if (!pmv_poll_has(context, ours, context[ours + i]))
			context[f.n++] = context[ours + i];
	for (i = 0; i < f.n; i++)
		context[i] = ((struct fid *) context[i])->context;
	return f.n;
}

/* Maps a CQ or counter added to or removed from a poll set to the core's. */
static struct fid *pmv_poll_member(struct fid *event_fid)
{
	struct fid *core = pmv_core_fid(event_fid);

	if (!core)
		PMV_WARN(FI_LOG_CORE, "poll set member was not opened through "
			 "pmemverbs\n");
	return core;
}

/* The pmemverbs CQ of a poll set's member, else NULL. */
static struct pmv_cq *pmv_poll_cq(struct fid *fid)
{
	return fid->fclass == FI_CLASS_CQ ?
	       pmv_container_of(fid, struct pmv_cq, cq_fid.fid) : NULL;
}

/* The pmemverbs counter of a poll set's member, else NULL. */
static struct pmv_cntr *pmv_poll_cntr(struct fid *fid)
{
	return fid->fclass == FI_CLASS_CNTR ?
	       pmv_container_of(fid, struct pmv_cntr, cntr_fid.fid) : NULL;
}

/* fi_poll_add: the core's, and a CQ or counter becomes a member whose
 * progress fi_poll runs. */
static int pmv_poll_add(struct fid_poll *pollset, struct fid *event_fid,
			uint64_t flags)
{
	struct pmv_poll *poll = pmv_container_of(pollset, struct pmv_poll,
						 poll_fid);
	struct fid *core = pmv_poll_member(event_fid);
	struct pmv_cq *cq;
	struct pmv_cntr *cntr;
	int ret;

	if (!core)
		return -FI_EINVAL;
	ret = fi_poll_add(poll->core, core, flags);
	cq = pmv_poll_cq(event_fid);
	cntr = pmv_poll_cntr(event_fid);
	if (ret || (!cq && !cntr))
		return ret;
	ret = pmv_members_add(&poll->members, cq, cntr);
	if (ret)
		(void) fi_poll_del(poll->core, core, flags);
	return ret;
}

/* fi_poll_del: off the members (once no fi_poll looks at it), then the
 * core's. */
static int pmv_poll_del(struct fid_poll *pollset, struct fid *event_fid,
			uint64_t flags)
{
	struct pmv_poll *poll = pmv_container_of(pollset, struct pmv_poll,
						 poll_fid);
	struct fid *core = pmv_poll_member(event_fid);
	void *obj;

	if (!core)
		return -FI_EINVAL;
	obj = pmv_poll_cq(event_fid);
	if (!obj)
		obj = pmv_poll_cntr(event_fid);
	if (obj)
		pmv_members_remove(&poll->members, obj);
	return fi_poll_del(poll->core, core, flags);
}

static struct fi_ops_poll pmv_poll_ops = {
	.size = sizeof(struct fi_ops_poll),
	.poll = pmv_poll_poll,
	.poll_add = pmv_poll_add,
	.poll_del = pmv_poll_del,
};

static int pmv_poll_close(struct fid *fid)
{
	struct pmv_poll *poll = pmv_container_of(fid, struct pmv_poll, poll_fid.fid);
	struct pmv_domain *dom = poll->domain;
	int ret = pmv_set_close(&poll->core->fid, "poll set", &poll->members,
				poll);

	if (!ret)
		pmv_domain_release(dom, PMV_DOM_POLL);
	return ret;
}

static struct fi_ops pmv_poll_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = pmv_poll_close,
	.bind = pmv_no_bind,
	.control = pmv_control_core,
	.ops_open = pmv_ops_open_core,
	.ops_set = pmv_no_ops_set,
};

int pmv_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr,
		  struct fid_poll **pollset)
{
	struct pmv_domain *dom = pmv_container_of(domain, struct pmv_domain,
						  domain_fid);
	struct pmv_poll *poll = calloc(1, sizeof(*poll));
	int ret;

	if (!poll)
		return -FI_ENOMEM;
	ret = fi_poll_open(dom->core, attr, &poll->core);
	if (ret) {
		free(poll);
		return ret;
	}
	pmv_members_init(&poll->members);
	poll->domain = dom;
	pmv_domain_hold(dom, PMV_DOM_POLL);
	poll->poll_fid.fid.fclass = FI_CLASS_POLL;
	poll->poll_fid.fid.ops = &pmv_poll_fi_ops;
	poll->poll_fid.ops = &pmv_poll_ops;
	*pollset = &poll->poll_fid;
	return 0;
}

/* Maps a pmemverbs wait set named in an attribute to the core's. */
int pmv_core_wait_set(struct fid_wait *wait_set, struct fid_wait **core_set)
{
	*core_set = NULL;
	if (!wait_set)
		return 0;
	*core_set = (struct fid_wait *) pmv_core_fid(&wait_set->fid);
	if (*core_set)
		return 0;
	PMV_WARN(FI_LOG_CORE, "wait_set was not opened with fi_wait_open on "
		 "the pmemverbs fabric\n");
	return -FI_EINVAL;
}

#else /* !PMV_HAVE_WAIT_SETS */

int pmv_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr,
		  struct fid_wait **waitset)
{
	(void) fabric;
	(void) attr;
	(void) waitset;
	PMV_WARN(FI_LOG_CORE, "fi_wait_open: no wait sets in pmemverbs built "
		 "against libfabric %d.%d (deprecated since 2.0): wait on each "
		 "CQ or counter (fi_cq_sread, fi_cntr_wait) or on its fd "
		 "(FI_WAIT_FD, fi_trywait)\n", FI_MAJOR_VERSION,
		 FI_MINOR_VERSION);
	return -FI_ENOSYS;
}

int pmv_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr,
		  struct fid_poll **pollset)
{
	(void) domain;
	(void) attr;
	(void) pollset;
	PMV_WARN(FI_LOG_CORE, "fi_poll_open: no poll sets in pmemverbs built "
		 "against libfabric %d.%d (deprecated since 2.0): read each "
		 "CQ or counter instead\n", FI_MAJOR_VERSION,
		 FI_MINOR_VERSION);
	return -FI_ENOSYS;
}

/* No wait set can have been opened here (pmv_core_wait_set refused one). */
int pmv_wait_join(struct fid_wait *app_set, struct pmv_cq *cq,
		  struct pmv_cntr *cntr, struct pmv_wait **set)
{
	(void) app_set;
	(void) cq;
	(void) cntr;
	*set = NULL;
	return 0;
}

void pmv_wait_leave(struct pmv_wait *wait, const void *obj)
{
	(void) wait;
	(void) obj;
}

/* No wait set can have been opened here: one named in an attribute is wrong. */
int pmv_core_wait_set(struct fid_wait *wait_set, struct fid_wait **core_set)
{
	*core_set = NULL;
	if (!wait_set)
		return 0;
	PMV_WARN(FI_LOG_CORE, "wait_set given, but pmemverbs built against "
		 "libfabric 2.x opens no wait sets: use FI_WAIT_UNSPEC or "
		 "FI_WAIT_FD\n");
	return -FI_EINVAL;
}

#endif /* PMV_HAVE_WAIT_SETS */
