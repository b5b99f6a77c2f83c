/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_ct_sc_iwait.c - Scenario initiator-waits: the initiator waits for its
 * own commits' completions as an application may (fi_cq_sread on every
 * wait object, epoll on the CQ's fd or poll on the FI_WRITE counter's fd
 * after fi_trywait, fi_cntr_wait, fi_wait on a CQ's or counter's wait set
 * and fi_poll on a poll set where libfabric has them (1.x), polling),
 * after idle gaps, posted by the waiting thread or by another.
 */
#include <poll.h>
#include <pthread.h>
#include <sys/epoll.h>

#include "pmv_ct.h"

enum iw_mode { IW_POLL, IW_UNSPEC, IW_FD, IW_POLLFD, IW_EPOLL, IW_CNTR,
	       IW_CNTR_FD, IW_WAITSET, IW_POLLSET, IW_CNTR_SET, IW_COUNT };

static const char *const k_iw_names[IW_COUNT] = {
	"poll", "unspec", "fd", "pollfd", "epoll", "cntr", "cntr-fd",
	"waitset", "pollset", "cntr-waitset",
};

/* Whether mode m needs wait sets (libfabric 1.x). */
static bool iw_needs_sets(enum iw_mode m)
{
	return m == IW_WAITSET || m == IW_POLLSET || m == IW_CNTR_SET;
}

#define IW_WAIT_MS 200     /* each wait: a wake that does not come costs
			    * a whole one, over the harness's watchdog
			    * (SC_GAPPED_BOUND_MS) */
#define IW_PER_MODE (SC_GAPPED_COMMITS + 1) /* a warm-up commit first */

/* The initiator's connection of one mode. */
struct iw_conn {
	struct conn c;
	enum iw_mode mode;
	struct fid_cntr *cntr;  /* the counter modes: FI_WRITE */
	struct fid_wait *set;   /* waitset: the transmit CQ's wait set;
				 * cntr-waitset: the counter's */
	struct fid_poll *pset;  /* pollset: a poll set holding that CQ */
	int fd;                 /* epoll: an epoll set on the CQ's fd;
				 * cntr-fd: the counter's fd */
	unsigned early;         /* counted before the oracle had them */
	bool by_thread;         /* another thread posts each commit once
				 * this one waits */
};

/* How long the posting thread lets the waiting one sleep first. */
#define IW_POSTER_LAG_MS 3

/* A commit that another thread posts (iw_poster), when it did. */
struct iw_post {
	struct iw_conn *w;
	struct sop *s;
	int64_t t0;
};

/* The transmit CQ's wait object in mode m. */
static enum fi_wait_obj iw_cq_obj(enum iw_mode m)
{
	switch (m) {
	case IW_UNSPEC: return FI_WAIT_UNSPEC;
	case IW_FD: case IW_EPOLL: return FI_WAIT_FD;
	case IW_POLLFD: return FI_WAIT_POLLFD;
	default: return FI_WAIT_NONE;
	}
}

/* The fd that w's mode polls: an epoll set on the CQ's, or the counter's
 * (-1 if the core gives counters none: libfabric 1.17's tcp). */
static int iw_open_fd(struct iw_conn *w)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int fd, ep, ret;

	if (w->mode == IW_CNTR_FD) {
		ret = fi_control(&w->cntr->fid, FI_GETWAIT, &fd);
		if (ret == -FI_ENOSYS)
			return -1;
		CHECK(ret);
		return fd;
	}
	CHECK(fi_control(&w->c.txcq->fid, FI_GETWAIT, &fd));
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev))
		die("epoll on the transmit CQ's wait fd: %s", strerror(errno));
	return ep;
}

/* The transmit CQ of w's mode, unread by progress(); in a wait set of
 * its own in mode waitset (libfabric 1.x). */
static struct fid_cq *iw_open_cq(struct iw_conn *w)
{
#if HAVE_WAIT_SETS
	if (w->mode == IW_WAITSET) {
		w->set = open_wait_set();
		return open_cq_on_set(w->set, false);
	}
#endif
	return open_cq_obj(1024, iw_cq_obj(w->mode), false);
}

/* Opens and connects w in mode: its transmit CQ unread by progress(),
 * an FI_WRITE counter in the counter modes. */
static void iw_open(struct iw_conn *w, enum iw_mode mode)
{
	struct fi_cntr_attr attr = { .events = FI_CNTR_EVENTS_COMP,
		.wait_obj = mode == IW_CNTR_FD ? FI_WAIT_FD : FI_WAIT_UNSPEC };

	*w = (struct iw_conn){ .mode = mode, .fd = -1 };
	conn_open_on(&w->c, g_net.info, open_eq(), iw_open_cq(w), open_cq());
#if HAVE_WAIT_SETS
	if (mode == IW_CNTR_SET) {
		w->set = open_wait_set();
		attr.wait_obj = FI_WAIT_SET;
		attr.wait_set = w->set;
	}
#endif
	if (mode == IW_CNTR || mode == IW_CNTR_FD || mode == IW_CNTR_SET) {
		CHECK(fi_cntr_open(g_net.domain, &attr, &w->cntr, NULL));
		CHECK(fi_ep_bind(w->c.ep, &w->cntr->fid, FI_WRITE));
	}
	CHECK(fi_enable(w->c.ep));
#if HAVE_WAIT_SETS
	if (mode == IW_POLLSET)
		w->pset = open_poll_set(w->c.txcq);
#endif
	watch_conn(&w->c, true);
	conn_connect(&w->c, KIND_EXTRA);
	if (mode == IW_EPOLL || mode == IW_CNTR_FD)
		w->fd = iw_open_fd(w);
}

static void iw_close(struct iw_conn *w)
{
	if (w->mode == IW_EPOLL)
		close(w->fd);
	initiator_close_conn(&w->c);
	if (w->cntr && !close_fid(&w->cntr->fid))
		die("closing the FI_WRITE counter failed");
	if (w->set && ((w->mode == IW_WAITSET &&
			!close_fid(&w->c.txcq->fid)) || !close_fid(&w->set->fid)))
		die("closing the wait set or its CQ failed");
#if HAVE_WAIT_SETS
	if (w->pset && (fi_poll_del(w->pset, &w->c.txcq->fid, 0) ||
			!close_fid(&w->pset->fid)))
		die("closing the poll set failed");
#endif
}

/* True once fi_trywait lets the application sleep on fid's fd. */
static bool iw_trywait(struct fid *fid)
{
	int ret = fi_trywait(g_net.fabric, &fid, 1);

	if (ret && ret != -FI_EAGAIN)
		die("fi_trywait: %s", errname(ret));
	return !ret;
}

/* One wait of the CQ modes for an entry of the transmit CQ, up to
 * IW_WAIT_MS; true if one came (dispatched). */
static bool iw_wait_cq(struct iw_conn *w)
{
	struct fid_cq *cq = w->c.txcq;
	struct fi_cq_data_entry e;
	struct epoll_event ev;
	ssize_t ret;

	if (w->mode == IW_POLL)
		return dispatch_read(cq, fi_cq_read(cq, &e, 1), &e);
#if HAVE_WAIT_SETS
	if (w->mode == IW_POLLSET) { /* reads the CQ once fi_poll names it */
		void *ctx;

		if (fi_poll(w->pset, &ctx, 1) <= 0)
			return false;
		return dispatch_read(cq, fi_cq_read(cq, &e, 1), &e);
	}
	if (w->mode == IW_WAITSET) {
		ret = fi_cq_read(cq, &e, 1);
		if (ret == -FI_EAGAIN) {
			(void)fi_wait(w->set, IW_WAIT_MS);
			ret = fi_cq_read(cq, &e, 1);
		}
		return dispatch_read(cq, ret, &e);
	}
#endif
	if (w->mode != IW_EPOLL)
		return dispatch_read(cq, fi_cq_sread(cq, &e, 1, NULL,
						     IW_WAIT_MS), &e);
	ret = fi_cq_read(cq, &e, 1);
	if (ret == -FI_EAGAIN && iw_trywait(&cq->fid)) {
		(void)epoll_wait(w->fd, &ev, 1, IW_WAIT_MS);
		ret = fi_cq_read(cq, &e, 1);
	}
	return dispatch_read(cq, ret, &e);
}

/* One wait of the counter modes for the count (or error count) to pass
 * what it was before the commit, up to IW_WAIT_MS; true if it did. */
static bool iw_wait_cntr(struct iw_conn *w, uint64_t count, uint64_t errs)
{
	struct pollfd p = { .fd = w->fd, .events = POLLIN };
	int ret;

	if (fi_cntr_read(w->cntr) > count || fi_cntr_readerr(w->cntr) > errs)
		return true;
	if (w->mode == IW_CNTR) {
		ret = fi_cntr_wait(w->cntr, count + 1, IW_WAIT_MS);
		if (ret && ret != -FI_ETIMEDOUT && ret != -FI_EAVAIL)
			die("fi_cntr_wait: %s", errname(ret));
#if HAVE_WAIT_SETS
	} else if (w->mode == IW_CNTR_SET) {
		(void)fi_wait(w->set, IW_WAIT_MS);
#endif
	} else if (iw_trywait(&w->cntr->fid)) {
		(void)poll(&p, 1, IW_WAIT_MS);
	}
	return fi_cntr_read(w->cntr) > count || fi_cntr_readerr(w->cntr) > errs;
}

/*
 * Waits in w's mode until s completes (the counter modes: until the
 * counter counts it, when its oracle records must be there already; then
 * its CQ entry is read).
 */
static void iw_wait(struct iw_conn *w, struct sop *s, uint64_t count,
		    uint64_t errs)
{
	int64_t deadline = deadline_in(STEP_MS);
	bool counted = !w->cntr;

	while (!counted && before(deadline))
		counted = iw_wait_cntr(w, count, errs);
	if (counted && w->cntr && s->oracle && !sop_covered(s, NULL))
		w->early++;
	while (!s->ncomp && before(deadline))
		if (!(w->cntr ? progress_cq(w->c.txcq) : iw_wait_cq(w)) &&
		    (w->cntr || w->mode == IW_POLLSET))
			pause_briefly();
	if (!s->ncomp)
		die("initiator-waits (%s): %s did not complete within %d ms",
		    k_iw_names[w->mode], sop_str(s), STEP_MS);
}

/* Posts a commit once the thread that waits for it sleeps. */
static void *iw_poster(void *arg)
{
	struct iw_post *p = arg;

	sleep_ms(IW_POSTER_LAG_MS);
	__atomic_store_n(&p->t0, now_us(), __ATOMIC_RELEASE);
	/* the waiting thread may read its completion before the post
	 * returns here (sop_post marks it posted after) */
	__atomic_store_n(&p->s->posted, true, __ATOMIC_RELEASE);
	sop_post_retry(p->w->c.ep, p->s, 0, 0, NULL);
	return NULL;
}

/* One commit on w (arg) after idle_ms, waited for in w's mode (posted by
 * another thread while this one waits if w->by_thread); its time in us. */
static int64_t iw_commit(void *arg, unsigned i, int idle_ms)
{
	struct iw_conn *w = arg;
	uint64_t count = w->cntr ? fi_cntr_read(w->cntr) : 0;
	uint64_t errs = w->cntr ? fi_cntr_readerr(w->cntr) : 0;
	struct iw_post p = { .w = w, .s = sc_gapped_sop(i, idle_ms),
			     .t0 = now_us() };
	pthread_t poster;
	int64_t t1;

	if (!w->by_thread)
		sop_post_retry(w->c.ep, p.s, 0, 0, NULL);
	else if (pthread_create(&poster, NULL, iw_poster, &p))
		die("starting the posting thread failed");
	iw_wait(w, p.s, count, errs);
	t1 = now_us();
	if (w->by_thread && pthread_join(poster, NULL))
		die("joining the posting thread failed");
	return t1 - __atomic_load_n(&p.t0, __ATOMIC_ACQUIRE);
}

/* The timed commits of w's mode; verdicts on how many outran the bound
 * and, with a counter, on counts ahead of durability. */
static void iw_commits(struct iw_conn *w)
{
	char name[32], check[64];

	snprintf(name, sizeof(name), "%s%s", k_iw_names[w->mode],
		 w->by_thread ? "/other-thread" : "");
	snprintf(check, sizeof(check), "initiator-waits/%s/woken", name);
	sc_gapped_commits(check, name, iw_commit, w);
	if (!w->cntr)
		return;
	snprintf(check, sizeof(check), "initiator-waits/%s/counted-durable",
		 name);
	verdict(!w->early, check_name(check), "%s%u of %d commits counted "
		"before the oracle recorded them", w->early ? "expected 0 got " :
		"", w->early, SC_GAPPED_COMMITS);
}

/*
 * initiator-waits: for each way an initiator application may wait for its
 * commits (polling; fi_cq_sread on CQs of wait object FI_WAIT_UNSPEC, _FD
 * and _POLLFD; epoll on the CQ's fd after fi_trywait; fi_cntr_wait on the
 * FI_WRITE counter; poll on that counter's fd after fi_trywait; fi_wait on
 * the CQ's wait set, fi_poll on a poll set holding it and fi_wait on the
 * counter's wait set, libfabric 1.x),
 * commits after 0, 2, 100 and 1000 ms of idle, posted by the waiting
 * thread and, in the modes that sleep, by another thread once it waits:
 * each durable when it completes (oracle), none waiting for a wait to
 * time out (watchdog SC_GAPPED_BOUND_MS).
 */
void sc_initiator_waits(void)
{
	struct iw_conn w;
	struct sc_sum m;

	sc_setup(2 * IW_COUNT * IW_PER_MODE,
		 2 * IW_COUNT * IW_PER_MODE * 4096);
	for (int run = 0; run < 2 * IW_COUNT; run++) {
		int mode = run % IW_COUNT;
		bool by_thread = run >= IW_COUNT;

		if (iw_needs_sets((enum iw_mode)mode) && !HAVE_WAIT_SETS)
			continue; /* libfabric 2.x has no wait or poll sets */
		if (by_thread && (mode == IW_POLL || mode == IW_POLLSET))
			continue; /* they never sleep */
		iw_open(&w, (enum iw_mode)mode);
		if (mode == IW_CNTR_FD && w.fd < 0) {
			if (!by_thread)
				printf("NOTE initiator-waits/%s: not run, "
				       "FI_GETWAIT on a counter says "
				       "-FI_ENOSYS (the core's counters give "
				       "no fd)\n", k_iw_names[mode]);
			iw_close(&w);
			continue;
		}
		(void)iw_commit(&w, 0, 0); /* learns the key's profile */
		w.early = 0;
		w.by_thread = by_thread;
		iw_commits(&w);
		iw_close(&w);
	}
	m = sc_sum(pick_all);
	sc_verdict_once("initiator-waits/completed", &m, false);
	sc_verdict_durable("initiator-waits/durable", &m);
}
