/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_ct_sc_wait.c - Scenario wait-modes: the target waits as an application
 * may (CQ wait objects, epoll, counters) while commits arrive.
 */

#include "pmv_ct.h"

/* ---- scenario wait-modes: a passive target served in every wait ---- */

/*
 * The target waits on a KIND_WAIT connection the way an application may,
 * while the initiator commits to it after idle gaps; every commit must be
 * durable when read and none may wait for the target's wait to time out.
 */
#define WM_WAIT_MS 100     /* each wait of the target: over the
			    * harness's watchdog (SC_GAPPED_BOUND_MS) */
#define WM_PER_MODE (SC_GAPPED_COMMITS + 1) /* a warm-up commit first */

static const char *const k_wait_names[WM_COUNT] = {
	"none", "unspec", "fd", "pollfd", "epoll", "cntr", "eq", "noread",
	"waitset", "pollset", "cntr+epoll", "immed+epoll",
};

/* The CQs' wait object for a mode: its own for the fi_cq_sread modes and
 * the fd of epoll, none where the target waits on something else. */
static enum fi_wait_obj wm_cq_wait_obj(enum wait_mode mode)
{
	switch (mode) {
	case WM_UNSPEC: return FI_WAIT_UNSPEC;
	case WM_FD: case WM_EPOLL: case WM_CNTR_EPOLL: case WM_IMMED_EPOLL:
		return FI_WAIT_FD;
	case WM_POLLFD: return FI_WAIT_POLLFD;
	default: return FI_WAIT_NONE;
	}
}

/* KIND_WAIT: CQs (and counter, EQ) for the mode the initiator named. */
void target_open_wait(struct conn *c, struct fi_info *info,
			     enum wait_mode mode)
{
	struct fi_cntr_attr attr = { .events = FI_CNTR_EVENTS_COMP,
				     .wait_obj = FI_WAIT_UNSPEC };
	enum fi_wait_obj obj = wm_cq_wait_obj(mode);

#if HAVE_WAIT_SETS
	if (mode == WM_WAITSET) {
		g_t.wait_set = open_wait_set();
		conn_open_on(c, info, g_t.eq, open_cq_on_set(g_t.wait_set, true),
			     open_cq_on_set(g_t.wait_set, true));
	} else
#endif
	conn_open_on(c, info, g_t.eq, open_cq_obj(1024, obj, true),
		     open_cq_obj(1024, obj, true));
#if HAVE_WAIT_SETS
	if (mode == WM_POLLSET)
		g_t.poll_set = open_poll_set(c->rxcq);
#endif
	if (mode == WM_CNTR || mode == WM_CNTR_EPOLL) {
		CHECK(fi_cntr_open(g_net.domain, &attr, &g_t.wait_cntr, NULL));
		track_fid(&g_t.wait_cntr->fid);
		CHECK(fi_ep_bind(c->ep, &g_t.wait_cntr->fid, FI_RECV));
	}
	CHECK(fi_enable(c->ep));
	g_t.wait_conn = c;
	g_t.wait_mode = mode;
}

/* Adds cq's wait fd (FI_GETWAIT, into *fd) to epfd, made first if < 0;
 * returns epfd. */
static int wm_epoll_add(int epfd, struct fid_cq *cq, int *fd)
{
	struct epoll_event ev = { .events = EPOLLIN };

	if (epfd < 0)
		epfd = epoll_create1(EPOLL_CLOEXEC);
	CHECK(fi_control(&cq->fid, FI_GETWAIT, fd));
	if (epfd < 0 || epoll_ctl(epfd, EPOLL_CTL_ADD, *fd, &ev))
		die("epoll on the CQ's wait fd: %s", strerror(errno));
	return epfd;
}

/* epoll on the receive CQ's fd (FI_GETWAIT) once fi_trywait allows. */
static void target_wait_epoll(struct fid_cq *cq)
{
	static struct fid_cq *watched;
	static int epfd = -1;
	struct epoll_event ev;
	struct fid *fid = &cq->fid;
	int fd;

	if (watched != cq) {
		epfd = wm_epoll_add(epfd, cq, &fd);
		watched = cq;
	}
	if (fi_trywait(g_net.fabric, &fid, 1) == FI_SUCCESS)
		(void)epoll_wait(epfd, &ev, 1, WM_WAIT_MS);
}

#if HAVE_WAIT_SETS
/* fi_poll on the poll set holding the receive CQ for up to WM_WAIT_MS,
 * the CQ read whenever it is named; what that read returned. */
static ssize_t target_poll_set(struct fid_cq *cq, struct fi_cq_data_entry *e)
{
	int64_t deadline = deadline_in(WM_WAIT_MS);
	void *ctx;

	while (before(deadline))
		if (fi_poll(g_t.poll_set, &ctx, 1) > 0)
			return fi_cq_read(cq, e, 1);
	return -FI_EAGAIN;
}
#endif

/* One wait of the target, up to WM_WAIT_MS, in its mode; nothing of the
 * application's is expected to complete meanwhile. */
static void target_wait_once(struct conn *c, enum wait_mode mode)
{
	struct fi_cq_data_entry e;
	struct cm_event ev;
	uint32_t event;
	ssize_t ret = -FI_EAGAIN;

	if (mode <= WM_POLLFD)
		ret = fi_cq_sread(c->rxcq, &e, 1, NULL, WM_WAIT_MS);
	else if (mode == WM_EPOLL)
		target_wait_epoll(c->rxcq);
	else if (mode == WM_CNTR || mode == WM_CNTR_EPOLL)
		ret = fi_cntr_wait(g_t.wait_cntr, fi_cntr_read(g_t.wait_cntr) + 1,
				   WM_WAIT_MS);
	else if (mode == WM_EQ)
		ret = fi_eq_sread(c->eq, &event, &ev, sizeof(ev), WM_WAIT_MS,
				  FI_PEEK); /* the target's EQ: peek, leave */
#if HAVE_WAIT_SETS
	else if (mode == WM_WAITSET)
		(void)fi_wait(g_t.wait_set, WM_WAIT_MS);
	else if (mode == WM_POLLSET)
		ret = target_poll_set(c->rxcq, &e);
#endif
	else
		sleep_ms(WM_WAIT_MS);
	if (mode == WM_EPOLL || mode == WM_WAITSET)
		ret = fi_cq_read(c->rxcq, &e, 1);
	if ((ret >= 0 && mode != WM_EQ) ||
	    (ret < 0 && ret != -FI_EAGAIN && ret != -FI_ETIMEDOUT &&
	     ret != -FI_EINTR))
		die("waiting (%s) on the wait-modes connection: %s (%zd)",
		    k_wait_names[mode], ret >= 0 ? "an entry came" :
		    errname(ret), ret);
}

/* The epolling thread's timeout: no multiple of an idle gap
 * (sc_gapped_sop), whose commit would otherwise come as it expires. */
#define WM_READER_MS 170

/*
 * cntr+epoll and immed+epoll: a second thread of the target epolls the
 * receive CQ's fd, after fi_trywait, for the FI_IMMED entries of the
 * commits and reads them, while the main thread waits on its counter
 * (cntr+epoll: that wait sleeps on the same fd, fi_trywait first) or
 * sleeps (immed+epoll: the agent serves what the reader does not).  An
 * entry found after the epoll slept its whole WM_READER_MS with the fd
 * quiet is a wake another thread's fi_trywait took (quiet_found).
 */
struct wm_reader {
	struct fid_cq *cq;
	int fd, epfd;
	unsigned entries, quiet_found;
	bool stop;
	pthread_t thread;
};

/* Modes whose commits carry FI_IMMED, read by a thread that epolls. */
static bool wm_reads_immed(enum wait_mode mode)
{
	return mode == WM_CNTR_EPOLL || mode == WM_IMMED_EPOLL;
}

/* Whether fd is readable now. */
static bool wm_fd_readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) > 0;
}

/* One epoll (after fi_trywait) and one read of r's CQ. */
static void wm_reader_once(struct wm_reader *r)
{
	struct fid *fid = &r->cq->fid;
	struct fi_cq_data_entry e;
	struct epoll_event ev;
	bool quiet = false;
	ssize_t ret;

	if (fi_trywait(g_net.fabric, &fid, 1) == FI_SUCCESS &&
	    epoll_wait(r->epfd, &ev, 1, WM_READER_MS) == 0)
		quiet = !wm_fd_readable(r->fd);
	ret = fi_cq_read(r->cq, &e, 1);
	if (ret == -FI_EAGAIN)
		return;
	if (ret != 1 || (e.flags & IMMED_FLAGS) != IMMED_FLAGS)
		die("wait-modes: the epolling thread read %s (flags %#llx), "
		    "not an FI_IMMED entry", ret == 1 ? "an entry" :
		    errname(ret), (unsigned long long)e.flags);
	__atomic_add_fetch(&r->entries, 1, __ATOMIC_RELEASE);
	r->quiet_found += quiet;
}

/* Reads until stopped, past the last entry: in immed+epoll its reads are
 * all that progresses the connection of a target without the agent
 * thread, the flag's write included. */
static void *wm_reader_main(void *arg)
{
	struct wm_reader *r = arg;

	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE))
		wm_reader_once(r);
	return NULL;
}

static void wm_reader_start(struct wm_reader *r, struct fid_cq *cq)
{
	*r = (struct wm_reader){ .cq = cq };
	r->epfd = wm_epoll_add(-1, cq, &r->fd);
	errno = pthread_create(&r->thread, NULL, wm_reader_main, r);
	if (errno)
		die("wait-modes: pthread_create: %s", strerror(errno));
}

/* Once the flag came: gives the reader up to IDLE_MS for the last
 * entries, stops it; its verdict into rsp. */
static void wm_reader_stop(struct wm_reader *r, struct status_rsp *rsp)
{
	int64_t deadline = deadline_in(IDLE_MS);

	while (__atomic_load_n(&r->entries, __ATOMIC_ACQUIRE) <
	       SC_GAPPED_COMMITS && before(deadline))
		sleep_ms(1);
	__atomic_store_n(&r->stop, true, __ATOMIC_RELEASE);
	pthread_join(r->thread, NULL);
	close(r->epfd);
	if (rsp->status)
		return;
	if (r->entries != SC_GAPPED_COMMITS || r->quiet_found)
		rsp->status = -FI_EIO;
	snprintf(rsp->detail, sizeof(rsp->detail), "epoller read %u of %d "
		 "FI_IMMED entries, %u after a %d ms epoll timed out on a "
		 "quiet fd (expected 0)", r->entries, SC_GAPPED_COMMITS,
		 r->quiet_found, WM_READER_MS);
}

/*
 * The target's side of wait-modes: sets the marker, waits in its mode
 * until the flag arrives (the main connection's bytes are the agent's to
 * progress meanwhile; without the agent, the initiator writes the flag
 * over the waited connection), then answers.
 */
void target_on_wait(const struct idle_req *req)
{
	uint8_t *vol = g_t.reg[REG_VOL].addr;
	uint64_t *marker = (uint64_t *)(void *)(vol + req->marker_off);
	uint64_t *flag = (uint64_t *)(void *)(vol + req->flag_off);
	int64_t deadline = deadline_in(IDLE_MS);
	struct status_rsp rsp = { 0 };
	struct wm_reader reader;

	if (!g_t.wait_conn)
		die("WAIT without a wait-modes connection");
	if (wm_reads_immed(g_t.wait_mode))
		wm_reader_start(&reader, g_t.wait_conn->rxcq);
	__atomic_store_n(marker, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(flag, __ATOMIC_ACQUIRE) != req->flag_value &&
	       before(deadline))
		target_wait_once(g_t.wait_conn, g_t.wait_mode);
	__atomic_store_n(marker, 0, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(flag, __ATOMIC_ACQUIRE) != req->flag_value) {
		rsp.status = -FI_ETIMEDOUT;
		snprintf(rsp.detail, sizeof(rsp.detail), "the flag did not "
			 "arrive within %d ms while the target waited (%s)",
			 IDLE_MS, k_wait_names[g_t.wait_mode]);
	}
	if (wm_reads_immed(g_t.wait_mode))
		wm_reader_stop(&reader, &rsp);
	g_t.wait_conn = NULL;
	ctl_send(MSG_WAIT_DONE, &rsp, sizeof(rsp));
}

/*
 * The connection the marker is read and the flag written over while the
 * target waits on c: the main one, whose bytes the agent progresses then;
 * c itself for a target without the agent thread, where nothing else
 * progresses the main one (FI_PROGRESS_MANUAL, fi_domain(3)).
 */
static struct conn *wm_handshake_conn(struct conn *c)
{
	return target_agent_thread_on() ? &g_s.main : c;
}

/* Asks the target to wait on its side of c until the flag comes; returns
 * once it waits (its marker, read over RMA, says so). */
static void wm_target_waits(const struct idle_req *req, struct conn *c)
{
	int64_t deadline = deadline_in(STEP_MS);
	uint64_t *marker = (uint64_t *)(void *)(g_s.src + NOISE_SLOT *
						 (size_t)LOCAL_STRIDE);

	ctl_send(MSG_WAIT, req, sizeof(*req));
	*marker = 0;
	while (*marker != 1 && before(deadline))
		if (rma_read_on(wm_handshake_conn(c), REG_VOL, req->marker_off,
				marker, 8))
			die("wait-modes: reading the target's marker failed");
	if (*marker != 1)
		die("wait-modes: the target never started waiting");
}

/* Ends the target's wait (the flag) and reads its answer. */
static void wm_target_stops(const struct idle_req *req, struct conn *c,
			    uint64_t seed, const char *mode)
{
	const struct status_rsp *rsp;
	char check[64];

	if (plain_write_wait_on(wm_handshake_conn(c), REG_VOL, req->flag_off, 8,
				seed))
		die("wait-modes (%s): writing the flag failed", mode);
	rsp = ctl_expect(MSG_WAIT_DONE, sizeof(*rsp), NULL);
	if (rsp->status)
		die("wait-modes (%s): %s", mode, rsp->detail);
	if (rsp->detail[0]) { /* its epolling thread's count */
		snprintf(check, sizeof(check), "wait-modes/%s/woken", mode);
		verdict(true, check_name(check), "%s", rsp->detail);
	}
	ctl_release();
}

/* The flags of the timed commits: FI_IMMED in the modes whose target
 * reads their entries (wm_reads_immed). */
static uint64_t g_wm_flags;

/* One commit s on c with flags, waited for; its time in us. */
static int64_t wm_commit_on(struct conn *c, struct sop *s, uint64_t flags)
{
	int64_t t0 = now_us();

	sop_post_retry(c->ep, s, flags, 0, c->txcq);
	if (sc_wait(g_sc.nops - 1, c->txcq, STEP_MS))
		die("wait-modes: %s did not complete within %d ms", sop_str(s),
		    STEP_MS);
	return now_us() - t0;
}

/* The other connection's commits of one mode (wm_commit), in us. */
static int64_t g_wm_other_us[SC_GAPPED_COMMITS];

/*
 * Whether a mode's commits on the main connection are made too: they are
 * served while the target waits on another connection only by the agent
 * thread (without it, FI_PROGRESS_MANUAL: only the CQs read progress).
 */
static bool wm_other_conn_on(void)
{
	return target_agent_thread_on();
}

/*
 * Commit i on c (arg) after idle_ms, waited for; its time in us.  With
 * the agent thread, 2 ms later (the target asleep in its wait again) one
 * on the main connection, whose CQs the waiting target does not read: the
 * agent serves it while the application's wait may drive the core's
 * progress of the whole domain (libfabric 2.x's tcp core progresses a
 * domain at once).  Timed into g_wm_other_us.
 */
static int64_t wm_commit(void *arg, unsigned i, int idle_ms)
{
	struct conn *c = arg;
	int64_t us = wm_commit_on(c, sc_gapped_sop(i, idle_ms),
				  i ? g_wm_flags : 0);

	if (i && wm_other_conn_on())
		g_wm_other_us[i - 1] = wm_commit_on(&g_s.main,
						    sc_gapped_sop(i, 2), 0);
	return us;
}

/* Verdict on the other connection's commits of one mode, as on the
 * waited connection's. */
static void wm_other_verdict(enum wait_mode mode)
{
	char check[80], what[80];

	snprintf(check, sizeof(check), "wait-modes/%s/other-conn-served",
		 k_wait_names[mode]);
	snprintf(what, sizeof(what), "%s, on the connection the target does "
		 "not wait on", k_wait_names[mode]);
	sc_gapped_verdict(check, what, g_wm_other_us, NULL, SC_GAPPED_COMMITS);
}

/* The timed commits of one mode; verdicts on how many outran the bound. */
static void wm_commits(struct conn *c, enum wait_mode mode)
{
	char check[64];

	snprintf(check, sizeof(check), "wait-modes/%s/served",
		 k_wait_names[mode]);
	sc_gapped_commits(check, k_wait_names[mode], wm_commit, c);
	if (wm_other_conn_on())
		wm_other_verdict(mode);
}

/*
 * Whether this run has mode: libfabric 2.x has no wait or poll sets; a
 * target without the agent thread is served only by the reads and waits
 * of its CQs and counters (FI_PROGRESS_MANUAL), not in an EQ wait nor
 * while it calls nothing.
 */
static bool wm_mode_runs(enum wait_mode mode)
{
	if (mode == WM_WAITSET || mode == WM_POLLSET)
		return HAVE_WAIT_SETS;
	if (mode == WM_EQ || mode == WM_NOREAD)
		return target_agent_thread_on();
	return true;
}

/*
 * wait-modes: for each way a target application may wait (fi_cq_sread on
 * CQs of every wait object, epoll on FI_GETWAIT's fd with fi_trywait,
 * fi_cntr_wait, fi_eq_sread, no reads at all; with libfabric 1.x fi_wait
 * on the CQs' wait set, fi_poll on a poll set; FI_IMMED commits read by a
 * thread that epolls, beside a counter wait or none), commits after 0, 2, 100
 * and 1000 ms of idle: each durable when read (oracle), none waiting for
 * the target's wait to time out (watchdog SC_GAPPED_BOUND_MS).
 */
void sc_wait_modes(void)
{
	struct conn c;
	struct sc_sum m;

	/* each timed commit has one on the main connection beside it */
	sc_setup(WM_COUNT * WM_PER_MODE * 2, WM_COUNT * WM_PER_MODE * 2 * 4096);
	for (int mode = 0; mode < WM_COUNT; mode++) {
		uint64_t seed = 0x77a170 + (uint64_t)mode;

		if (!wm_mode_runs((enum wait_mode)mode))
			continue;
		struct idle_req req = { .marker_off = 0, .flag_off = 64 };

		gen_fill((uint8_t *)&req.flag_value, 8, seed, 64);
		initiator_open_conn(&c, true);
		conn_connect(&c, (char)(KIND_WAIT + mode));
		(void)wm_commit(&c, 0, 0); /* learns the key's profile */
		g_wm_flags = wm_reads_immed(mode) ? FI_IMMED : 0;
		wm_target_waits(&req, &c);
		wm_commits(&c, (enum wait_mode)mode);
		wm_target_stops(&req, &c, seed, k_wait_names[mode]);
		initiator_close_conn(&c);
	}
	m = sc_sum(pick_all);
	sc_verdict_once("wait-modes/completed", &m, false);
	sc_verdict_durable("wait-modes/durable", &m);
}
