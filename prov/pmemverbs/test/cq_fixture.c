/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The fake core CQ of the completion queue's unit tests (cq_fixture.h).
 */
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cq_fixture.h"

_Thread_local unsigned g_thread_yields;

bool wait_for_flag(volatile int *flag)
{
	for (int i = 0; i < 5000 && !__atomic_load_n(flag, __ATOMIC_ACQUIRE);
	     i++)
		usleep(1000);
	return __atomic_load_n(flag, __ATOMIC_ACQUIRE);
}

/* pmemverbs's sleeps (polls of at least 50 ms; the fixture's own are
 * shorter or unwatched) running, and those that ended by their timeout,
 * while g_watch_polls: a test sees what ended a sleep, not how long it
 * took. */
volatile int g_watch_polls, g_long_polls_in, g_long_polls_timed_out;

/* The provider's polls, linked into this program, resolve here. */
int (poll)(struct pollfd *fds, nfds_t n, int timeout)
{
	struct timespec ts = { .tv_sec = timeout / 1000,
			       .tv_nsec = (timeout % 1000) * 1000000L };
	bool watched = timeout >= 50 &&
		       __atomic_load_n(&g_watch_polls, __ATOMIC_ACQUIRE);
	int ret;

	if (watched)
		__atomic_add_fetch(&g_long_polls_in, 1, __ATOMIC_ACQ_REL);
	ret = ppoll(fds, n, timeout < 0 ? NULL : &ts, NULL);
	if (watched && !ret)
		__atomic_add_fetch(&g_long_polls_timed_out, 1, __ATOMIC_ACQ_REL);
	return ret;
}

/* Counts the calling thread's yields (the provider's, linked into this
 * program, resolve here), then yields. */
int (sched_yield)(void) /* parenthesised: pmv_lock.h's check macro */
{
	g_thread_yields++;
	return (int) syscall(SYS_sched_yield);
}

/* A fake core CQ: hands out staged entries and counts its reads. */
struct fi_cq_entry g_core_entries[4];
unsigned g_core_staged, g_core_reads;

/* A staged core error entry: reads report -FI_EAVAIL until it is taken. */
struct fi_cq_err_entry g_core_err;
bool g_core_err_staged;

static ssize_t fake_cq_read(struct fid_cq *cq, void *buf, size_t count)
{
	size_t n = g_core_staged < count ? g_core_staged : count;

	(void) cq;
	g_core_reads++;
	if (g_core_err_staged)
		return -FI_EAVAIL;
	if (!count && g_core_staged)
		return 0; /* a progress read: entries are there (util's answer) */
	if (!n)
		return -FI_EAGAIN;
	memcpy(buf, g_core_entries, n * sizeof(g_core_entries[0]));
	g_core_staged -= (unsigned) n;
	memmove(g_core_entries, g_core_entries + n,
		g_core_staged * sizeof(g_core_entries[0]));
	return (ssize_t) n;
}

static ssize_t fake_cq_readerr(struct fid_cq *cq, struct fi_cq_err_entry *buf,
			       uint64_t flags)
{
	(void) cq; (void) flags;
	if (!g_core_err_staged)
		return -FI_EAGAIN;
	*buf = g_core_err;
	g_core_err_staged = false;
	return 1;
}

static int fake_close(struct fid *fid)
{
	(void) fid;
	return 0;
}

/* With g_fake_pollfd, the core CQ waits on a list of fds: first a pipe
 * that stands for the core's signal (written by fi_cq_signal, drained only
 * by a wait in the core: fake_wait), then g_udp[0] if open. */
static bool g_fake_pollfd;
int g_signal_pipe[2] = { -1, -1 };
/* A UDP socket on 127.0.0.1 stands for a connection's socket (its bytes a
 * commit request); [0] is in the core CQ's list, [1] sends. */
int g_udp[2] = { -1, -1 };

/* The wait object pmemverbs asked of the fake core CQ: with FI_WAIT_FD
 * the CQ waits on the signal pipe alone. */
enum fi_wait_obj g_core_wait_asked;

/* fi_control of a fake core CQ opened with FI_WAIT_FD. */
static int fake_control_fd(int command, void *arg)
{
	if (command == FI_GETWAITOBJ) {
		*(enum fi_wait_obj *) arg = FI_WAIT_FD;
		return 0;
	}
	if (command != FI_GETWAIT)
		return -FI_ENOSYS;
	*(int *) arg = g_signal_pipe[0];
	return 0;
}

static int fake_control(struct fid *fid, int command, void *arg)
{
	struct fi_wait_pollfd *list = arg;

	(void) fid;
	if (!g_fake_pollfd)
		return -FI_ENOSYS;
	if (g_core_wait_asked == FI_WAIT_FD)
		return fake_control_fd(command, arg);
	if (command == FI_GETWAITOBJ) {
		*(enum fi_wait_obj *) arg = FI_WAIT_POLLFD;
		return 0;
	}
	if (command != FI_GETWAIT || list->nfds < 2)
		return -FI_ENOSYS;
	list->nfds = g_udp[0] >= 0 ? 2 : 1;
	list->fd[0] = (struct pollfd) { .fd = g_signal_pipe[0],
					.events = POLLIN };
	list->fd[1] = (struct pollfd) { .fd = g_udp[0], .events = POLLIN };
	return 0;
}

static struct fi_ops g_fake_fi_ops = {
	.size = sizeof(struct fi_ops), .close = fake_close,
	.control = fake_control,
};

bool g_core_wait_progresses;
volatile int g_core_placed;
unsigned g_core_slept_after_placing;

/*
 * With g_core_wait_progresses, the core's waits (fi_wait, sread) run its
 * progress first, as tcp's do: the socket's bytes (an ack) are taken and
 * placed (g_core_placed), which completes nothing in the core CQ; a wait
 * with a timeout then sleeps on, which it counts.
 */
static void fake_wait_progress(int timeout)
{
	char c;

	if (!g_core_wait_progresses || g_udp[0] < 0 ||
	    recv(g_udp[0], &c, 1, MSG_DONTWAIT) != 1)
		return;
	__atomic_store_n(&g_core_placed, 1, __ATOMIC_RELEASE);
	if (timeout)
		g_core_slept_after_placing++;
}

/* The core's blocking read: waits (bounded) until the test releases it. */
volatile int g_in_core_sread, g_release_core_sread;

static ssize_t fake_cq_sread(struct fid_cq *cq, void *buf, size_t count,
			     const void *cond, int timeout)
{
	(void) cq; (void) buf; (void) count; (void) cond;
	fake_wait_progress(timeout);
	__atomic_store_n(&g_in_core_sread, 1, __ATOMIC_RELEASE);
	(void) wait_for_flag(&g_release_core_sread);
	return -FI_EAGAIN;
}

/* The core's signal is lost: another thread's fi_trywait drained it. */
bool g_core_signal_lost;

static int fake_cq_signal(struct fid_cq *cq)
{
	(void) cq;
	if (g_core_signal_lost)
		return 0;
	return write(g_signal_pipe[1], "s", 1) == 1 ? 0 : -FI_EIO;
}

static struct fi_ops_cq g_fake_cq_ops = {
	.size = sizeof(struct fi_ops_cq), .read = fake_cq_read,
	.readerr = fake_cq_readerr, .sread = fake_cq_sread, .signal = fake_cq_signal,
};
static struct fid_cq g_fake_core_cq = {
	.fid = { .fclass = FI_CLASS_CQ, .ops = &g_fake_fi_ops },
	.ops = &g_fake_cq_ops,
};

static int fake_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr,
			struct fid_cq **cq, void *context)
{
	(void) domain; (void) context;
	g_core_wait_asked = attr->wait_obj;
	*cq = &g_fake_core_cq;
	return 0;
}

/* The core's poll set: its CQ never has an entry of its own. */
static int fake_poll(struct fid_poll *pollset, void **context, int count)
{
	(void) pollset; (void) context; (void) count;
	return 0;
}

static int fake_poll_member(struct fid_poll *pollset, struct fid *fid,
			    uint64_t flags)
{
	(void) pollset; (void) fid; (void) flags;
	return 0;
}

static struct fi_ops_poll g_fake_poll_ops = {
	.size = sizeof(struct fi_ops_poll), .poll = fake_poll,
	.poll_add = fake_poll_member, .poll_del = fake_poll_member,
};
static struct fid_poll g_fake_poll = {
	.fid = { .fclass = FI_CLASS_POLL, .ops = &g_fake_fi_ops },
	.ops = &g_fake_poll_ops,
};

static int fake_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr,
			  struct fid_poll **pollset)
{
	(void) domain; (void) attr;
	*pollset = &g_fake_poll;
	return 0;
}

static struct fi_ops_domain g_fake_dom_ops = {
	.size = sizeof(struct fi_ops_domain), .cq_open = fake_cq_open,
	.poll_open = fake_poll_open,
};
static struct fid_domain g_fake_core_dom = { .ops = &g_fake_dom_ops };

bool g_trywait_drains;

/* The core fabric's fi_trywait: nothing to wait for (the pipe says when);
 * with g_trywait_drains it resets the signal, as libfabric's util wait
 * objects do. */
static int fake_trywait(struct fid_fabric *fabric, struct fid **fids,
			int count)
{
	char c[8];

	(void) fabric; (void) fids; (void) count;
	if (g_trywait_drains)
		while (read(g_signal_pipe[0], c, sizeof(c)) > 0)
			;
	return FI_SUCCESS;
}

unsigned g_waits;
int g_wait_last_ms;

/* The core's fi_wait: drains its signal, waits for the socket (bounded). */
static int fake_wait(struct fid_wait *wait, int timeout)
{
	struct pollfd pfd = { .fd = g_udp[0], .events = POLLIN };
	char c;

	(void) wait;
	__atomic_add_fetch(&g_waits, 1, __ATOMIC_RELAXED);
	g_wait_last_ms = timeout;
	(void) !read(g_signal_pipe[0], &c, 1);
	fake_wait_progress(timeout);
	if (g_udp[0] >= 0)
		(void) poll(&pfd, 1, timeout < 0 || timeout > 1000 ? 1000 :
				     timeout);
	return 0;
}

static struct fi_ops_wait g_fake_wait_ops = {
	.size = sizeof(struct fi_ops_wait), .wait = fake_wait,
};
static struct fid_wait g_fake_wait = {
	.fid = { .fclass = FI_CLASS_WAIT, .ops = &g_fake_fi_ops },
	.ops = &g_fake_wait_ops,
};

static int fake_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr,
			  struct fid_wait **waitset)
{
	(void) fabric; (void) attr;
	*waitset = &g_fake_wait;
	return 0;
}

static struct fi_ops_fabric g_fake_fabric_ops = {
	.size = sizeof(struct fi_ops_fabric), .trywait = fake_trywait,
	.wait_open = fake_wait_open,
};
static struct fid_fabric g_fake_core_fabric = { .ops = &g_fake_fabric_ops };
static struct pmv_fabric g_fabric = { .core = &g_fake_core_fabric };
/* A core fabric without wait sets (libfabric 2.x deprecated them). */
static struct fi_ops_fabric g_fake_fabric_ops_no_sets = {
	.size = sizeof(struct fi_ops_fabric), .trywait = fake_trywait,
};
static struct fid_fabric g_fake_core_fabric_no_sets = {
	.ops = &g_fake_fabric_ops_no_sets };
static struct pmv_fabric g_fabric_no_sets = {
	.core = &g_fake_core_fabric_no_sets };
static bool g_fake_no_wait_sets;

/* As setup, with the engine's CQ opened by pmv_cq_open over the fake, of
 * attributes attr. */
static void setup_with_cq_attr(struct fi_cq_attr *attr)
{
	struct fid_cq *cq;

	g_dom.core = &g_fake_core_dom;
	g_dom.fabric = !g_fake_pollfd ? NULL :
		       g_fake_no_wait_sets ? &g_fabric_no_sets : &g_fabric;
	cr_assert_eq(pmv_cq_open(&g_dom.domain_fid, attr, &cq, NULL), 0);
	g_cq = pmv_container_of(cq, struct pmv_cq, cq_fid);
	g_cq_opened = true;
	g_core_staged = g_core_reads = 0;
	g_ep = open_ep();
}

/* As setup, with the engine's CQ opened by pmv_cq_open over the fake. */
void setup_with_core_cq(void)
{
	struct fi_cq_attr attr = { .format = FI_CQ_FORMAT_CONTEXT,
				   .wait_obj = FI_WAIT_UNSPEC };

	teardown(); /* what the suite's init opened, if it ran */
	setup_params();
	setup_with_cq_attr(&attr);
}

#if PMV_HAVE_WAIT_SETS
struct fid_wait *g_app_set;

/* As setup_with_core_cq, the CQ on a pmemverbs wait set (libfabric 1.x)
 * over the fake core's. */
void setup_with_wait_set(void)
{
	struct fi_wait_attr wattr = { .wait_obj = FI_WAIT_UNSPEC };
	struct fi_cq_attr attr = { .format = FI_CQ_FORMAT_CONTEXT,
				   .wait_obj = FI_WAIT_SET };

	teardown();
	setup_params();
	cr_assert_eq(pmv_wait_open(&g_fabric.fabric_fid, &wattr, &g_app_set),
		     0);
	attr.wait_set = g_app_set;
	setup_with_cq_attr(&attr);
}

void teardown_wait_set(void)
{
	teardown();
	cr_assert_eq(fi_close(&g_app_set->fid), 0);
}
#endif

/* A pmem endpoint's CQ the application opened with wait object obj over
 * a tcp-like core CQ that waits on its fds (with or without wait sets). */
static void setup_pollfd_core(enum fi_wait_obj obj, bool no_wait_sets)
{
	struct fi_cq_attr attr = { .format = FI_CQ_FORMAT_CONTEXT,
				   .wait_obj = obj };

	g_fake_pollfd = true;
	g_fake_no_wait_sets = no_wait_sets;
	/* non-blocking: a core's fi_wait never blocks past its timeout */
	cr_assert_eq(pipe2(g_signal_pipe, O_NONBLOCK), 0);
	teardown(); /* what the suite's init opened, if it ran */
	setup_params();
	setup_with_cq_attr(&attr);
	pmv_cq_ref_pmem(g_cq, 1); /* a pmem endpoint's CQ: pmemverbs's sread */
	g_release_core_sread = 1; /* the core's sread returns at once */
}

/* As setup_with_core_cq, over a tcp-like core CQ that waits on its fds. */
void setup_with_pollfd_core_cq(void)
{
	setup_pollfd_core(FI_WAIT_UNSPEC, false);
	cr_assert(g_cq->wait_pollfd);
}

/* A CQ the application opened with FI_WAIT_POLLFD, over a tcp-like core
 * that opens no wait set (as libfabric 2.x); its teardown is
 * teardown_pollfd_core_cq. */
void setup_with_pollfd_cq_no_wait_set(void)
{
	setup_pollfd_core(FI_WAIT_POLLFD, true);
}

void teardown_pollfd_core_cq(void)
{
	pmv_cq_ref_pmem(g_cq, -1);
	teardown();
	g_fake_pollfd = g_fake_no_wait_sets = false;
	g_core_wait_asked = FI_WAIT_NONE;
	g_core_wait_progresses = false;
	g_core_placed = 0;
	g_core_slept_after_placing = 0;
	g_core_signal_lost = false;
	g_trywait_drains = false;
	g_watch_polls = g_long_polls_in = g_long_polls_timed_out = 0;
	close(g_signal_pipe[0]);
	close(g_signal_pipe[1]);
}

ssize_t g_sread_ret;

/* A thread in fi_cq_sread on g_cq without timeout; its return: g_sread_ret. */
void *sread_forever_thread(void *arg)
{
	uint64_t buf[8];

	(void) arg;
	g_sread_ret = fi_cq_sread(&g_cq->cq_fid, buf, 1, NULL, -1);
	return NULL;
}
