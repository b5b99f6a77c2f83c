/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Unit tests: the completion queue over a fake core CQ (pmv_cq.c,
 * pmv_cq_wait.c): a commit finished by a core entry costs one core read;
 * the agent leaves the core to a thread waiting in it; fi_cq_signal and
 * the core's own signal wake a waiting reader; a closed pmem endpoint's
 * failed ack never reaches the application.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "engine_fixture.h"

TestSuite(cq, .fini = teardown);

/* A fake core CQ: hands out staged entries and counts its reads. */
static struct fi_cq_entry g_core_entries[4];
static unsigned g_core_staged, g_core_reads;

/* A staged core error entry: reads report -FI_EAVAIL until it is taken. */
static struct fi_cq_err_entry g_core_err;
static bool g_core_err_staged;

static ssize_t fake_cq_read(struct fid_cq *cq, void *buf, size_t count)
{
	size_t n = g_core_staged < count ? g_core_staged : count;

	(void) cq;
	g_core_reads++;
	if (g_core_err_staged)
		return -FI_EAVAIL;
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
static int g_signal_pipe[2] = { -1, -1 };
/* A UDP socket on 127.0.0.1 stands for a connection's socket (its bytes a
 * commit request); [0] is in the core CQ's list, [1] sends. */
static int g_udp[2] = { -1, -1 };

static int fake_control(struct fid *fid, int command, void *arg)
{
	struct fi_wait_pollfd *list = arg;

	(void) fid;
	if (!g_fake_pollfd)
		return -FI_ENOSYS;
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

/* The core's blocking read: waits (bounded) until the test releases it. */
static volatile int g_in_core_sread, g_release_core_sread;

static ssize_t fake_cq_sread(struct fid_cq *cq, void *buf, size_t count,
			     const void *cond, int timeout)
{
	(void) cq; (void) buf; (void) count; (void) cond; (void) timeout;
	__atomic_store_n(&g_in_core_sread, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < 5000 &&
	     !__atomic_load_n(&g_release_core_sread, __ATOMIC_ACQUIRE); i++)
		usleep(1000);
	return -FI_EAGAIN;
}

static int fake_cq_signal(struct fid_cq *cq)
{
	(void) cq;
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
	(void) domain; (void) attr; (void) context;
	*cq = &g_fake_core_cq;
	return 0;
}

static struct fi_ops_domain g_fake_dom_ops = {
	.size = sizeof(struct fi_ops_domain), .cq_open = fake_cq_open,
};
static struct fid_domain g_fake_core_dom = { .ops = &g_fake_dom_ops };

/* The core fabric's fi_trywait: nothing to wait for (the pipe says when). */
static int fake_trywait(struct fid_fabric *fabric, struct fid **fids,
			int count)
{
	(void) fabric; (void) fids; (void) count;
	return FI_SUCCESS;
}

static unsigned g_waits;

/* The core's fi_wait: drains its signal, waits for the socket (bounded). */
static int fake_wait(struct fid_wait *wait, int timeout)
{
	struct pollfd pfd = { .fd = g_udp[0], .events = POLLIN };
	char c;

	(void) wait;
	__atomic_add_fetch(&g_waits, 1, __ATOMIC_RELAXED);
	(void) !read(g_signal_pipe[0], &c, 1);
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

/* As setup, with the engine's CQ opened by pmv_cq_open over the fake. */
static void setup_with_core_cq(void)
{
	struct fi_cq_attr attr = { .format = FI_CQ_FORMAT_CONTEXT,
				   .wait_obj = FI_WAIT_UNSPEC };
	struct fid_cq *cq;

	teardown(); /* what the suite's init opened, if it ran */
	setup_params();
	g_dom.core = &g_fake_core_dom;
	g_dom.fabric = g_fake_pollfd ? &g_fabric : NULL;
	cr_assert_eq(pmv_cq_open(&g_dom.domain_fid, &attr, &cq, NULL), 0);
	g_cq = pmv_container_of(cq, struct pmv_cq, cq_fid);
	g_cq_opened = true;
	g_core_staged = g_core_reads = 0;
	g_ep = open_ep();
}

/*
 * A read-flush read's completion, read from the core by the application,
 * finds a new generation: the commit's request to the agent is posted
 * after the CQ's lock is released (a completion callback that posts runs
 * outside it: no other reader of the CQ waits behind a core call).
 */
Test(cq, a_completion_read_from_the_core_posts_with_no_cq_lock_held,
     .init = setup_with_core_cq)
{
	struct fi_cq_entry out[4];
	unsigned first;
	int ctx;

	learn_mhp(5);
	reads_bring(6);
	first = g_nposts;
	cr_assert_eq(commit(g_ep, 0, 64, 0, &ctx), 0);
	complete_post(first, 0);
	g_core_entries[0].op_context = g_posts[first + 1].context;
	g_core_staged = 1;
	g_watched = &g_cq->lock;
	cr_assert_eq(fi_cq_read(&g_cq->cq_fid, out, 4), -FI_EAGAIN);
	g_watched = NULL;
	cr_assert_eq(g_nposts, first + 3, "the request to the agent");
	cr_assert_not(g_posts[first + 2].watched_held,
		      "the request was posted under the CQ's lock");
}

/*
 * A read-flush read the core refused at first (-FI_EAGAIN) is posted by
 * the engine's progress, which a CQ read runs as a hook: with no lock of
 * the hook list held (hooks persist and post; other readers of the CQ
 * and endpoint closes must not wait behind them).
 */
Test(cq, a_hook_runs_with_no_hook_list_lock_held,
     .init = setup_with_core_cq)
{
	struct fi_cq_entry out[4];
	unsigned first;

	learn_mhp(5);
	first = g_nposts;
	fail_core_call(2, -FI_EAGAIN); /* the read */
	cr_assert_eq(commit(g_ep, 0, 64, 0, NULL), 0);
	cr_assert_eq(g_nposts, first + 1, "the read waits");
	g_watched = &g_cq->hooks.lock;
	(void) fi_cq_read(&g_cq->cq_fid, out, 4);
	g_watched = NULL;
	cr_assert_eq(g_nposts, first + 2, "the read went from progress");
	cr_assert(g_posts[first + 1].read);
	cr_assert_not(g_posts[first + 1].watched_held,
		      "the hook ran under its list's lock");
}

/*
 * The application's fi_cq_read finds the core entry of a read-flush
 * commit's read: it returns the commit's completion without reading the
 * core a second time (over tcp each core read runs a progress pass).
 */
Test(cq, a_commit_finished_by_a_core_entry_returns_without_a_second_core_read,
     .init = setup_with_core_cq)
{
	struct fi_cq_entry out[4];
	unsigned first;
	int ctx;

	learn_mhp(5);
	reads_bring(5);
	first = g_nposts;
	cr_assert_eq(commit(g_ep, 0, 64, 0, &ctx), 0);
	cr_assert(g_posts[first + 1].read, "a read-flush commit");
	complete_post(first, 0);
	g_core_entries[0].op_context = g_posts[first + 1].context;
	g_core_staged = 1;
	cr_assert_eq(fi_cq_read(&g_cq->cq_fid, out, 4), 1);
	cr_assert_eq(out[0].op_context, &ctx);
	cr_assert_eq(g_core_reads, 1, "the core was read %u times",
		     g_core_reads);
}

static void *sread_thread(void *arg)
{
	uint64_t buf[8];

	(void) arg;
	(void) fi_cq_sread(&g_cq->cq_fid, buf, 1, NULL, 50);
	return NULL;
}

/*
 * While an application thread waits in the core's fi_cq_sread (which
 * progresses the CQ's endpoints itself), the agent's progress leaves the
 * core alone; once nobody waits there, it drives it again.
 */
Test(cq, the_agent_leaves_the_core_to_a_thread_waiting_in_it,
     .init = setup_with_core_cq)
{
	pthread_t t;
	unsigned reads;

	pmv_cq_ref_pmem(g_cq, 1); /* a pmem endpoint's CQ: pmemverbs's sread */
	g_in_core_sread = g_release_core_sread = 0;
	cr_assert_eq(pthread_create(&t, NULL, sread_thread, NULL), 0);
	for (int i = 0; i < 5000 &&
	     !__atomic_load_n(&g_in_core_sread, __ATOMIC_ACQUIRE); i++)
		usleep(1000);
	cr_assert(g_in_core_sread, "the reader never reached the core's sread");
	reads = g_core_reads;
	pmv_cq_progress_core(g_cq);
	cr_assert_eq(g_core_reads, reads, "the agent drove the core while an "
		     "application thread waited in it");
	__atomic_store_n(&g_release_core_sread, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	reads = g_core_reads;
	pmv_cq_progress_core(g_cq);
	cr_assert_eq(g_core_reads, reads + 1, "nobody waits: the agent must "
		     "drive the core");
	pmv_cq_ref_pmem(g_cq, -1);
}

/* As setup_with_core_cq, over a tcp-like core CQ that waits on its fds. */
static void setup_with_pollfd_core_cq(void)
{
	g_fake_pollfd = true;
	/* non-blocking: a core's fi_wait never blocks past its timeout */
	cr_assert_eq(pipe2(g_signal_pipe, O_NONBLOCK), 0);
	setup_with_core_cq();
	cr_assert(g_cq->wait_pollfd);
	pmv_cq_ref_pmem(g_cq, 1); /* a pmem endpoint's CQ: pmemverbs's sread */
	g_release_core_sread = 1; /* the core's sread returns at once */
}

static void teardown_pollfd_core_cq(void)
{
	pmv_cq_ref_pmem(g_cq, -1);
	teardown();
	g_fake_pollfd = false;
	close(g_signal_pipe[0]);
	close(g_signal_pipe[1]);
}

/*
 * The agent's acks are context-less fi_inject_writes; over a broken
 * connection the core may report one's failure (libfabric 2.1's tcp:
 * FI_ENOTCONN, FI_WRITE | FI_INJECT, no context) after the endpoint closed,
 * while ofi_rxm flushes its MSG CQ in its fi_close.  Such an error is never
 * the application's: ofi_rxm took it for one of its own buffers (SIGSEGV).
 * The error stays the application's when it names one of its operations.
 */
static void stage_core_error(void *context)
{
	g_core_err = (struct fi_cq_err_entry) {
		.op_context = context, .flags = FI_WRITE | FI_INJECT,
		.err = FI_ENOTCONN, .prov_errno = EPIPE };
	g_core_err_staged = true;
}

Test(cq, a_closed_pmem_endpoints_failed_ack_is_not_the_applications,
     .init = setup_with_core_cq)
{
	struct fi_cq_err_entry err = { 0 };
	struct fi_cq_entry out[4];
	int app_ctx;

	pmv_cq_ref_pmem(g_cq, 1);  /* a pmem endpoint bound (pmv_ep_bind_cq) */
	pmv_cq_ref_pmem(g_cq, -1); /* and closed (pmv_ep_close) */
	stage_core_error(NULL);
	cr_assert_eq(fi_cq_read(&g_cq->cq_fid, out, 4), -FI_EAGAIN,
		     "a closed endpoint's failed ack reached the application");
	cr_assert(!g_core_err_staged, "the failed ack was not taken");
	cr_assert_neq(fi_cq_readerr(&g_cq->cq_fid, &err, 0), 1);
	stage_core_error(&app_ctx);
	cr_assert_eq(fi_cq_read(&g_cq->cq_fid, out, 4), -FI_EAVAIL);
	cr_assert_eq(fi_cq_readerr(&g_cq->cq_fid, &err, 0), 1);
	cr_assert_eq(err.op_context, &app_ctx);
	cr_assert_eq(err.err, FI_ENOTCONN);
}

static ssize_t g_sread_ret;

static void *sread_forever_thread(void *arg)
{
	uint64_t buf[8];

	(void) arg;
	g_sread_ret = fi_cq_sread(&g_cq->cq_fid, buf, 1, NULL, -1);
	return NULL;
}

/* fi_cq_signal wakes a thread waiting without timeout: -FI_EAGAIN. */
Test(cq, fi_cq_signal_wakes_a_reader_that_waits_forever,
     .init = setup_with_pollfd_core_cq, .fini = teardown_pollfd_core_cq,
     .timeout = 20)
{
	pthread_t t;

	g_sread_ret = 0;
	cr_assert_eq(pthread_create(&t, NULL, sread_forever_thread, NULL), 0);
	usleep(20000);
	cr_assert_eq(fi_cq_signal(&g_cq->cq_fid), 0);
	pthread_join(t, NULL);
	cr_assert_eq(g_sread_ret, -FI_EAGAIN, "fi_cq_sread returned %zd",
		     g_sread_ret);
}

#if PMV_HAVE_WAIT_SETS /* libfabric 2.x: no wait set to drain the signal */
/* Opens g_udp: a socket bound to 127.0.0.1 and one connected to it. */
static void open_udp_pair(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);

	g_udp[0] = socket(AF_INET, SOCK_DGRAM, 0);
	g_udp[1] = socket(AF_INET, SOCK_DGRAM, 0);
	cr_assert(g_udp[0] >= 0 && g_udp[1] >= 0);
	cr_assert_eq(bind(g_udp[0], (struct sockaddr *) &a, sizeof(a)), 0);
	cr_assert_eq(getsockname(g_udp[0], (struct sockaddr *) &a, &len), 0);
	cr_assert_eq(connect(g_udp[1], (struct sockaddr *) &a, sizeof(a)), 0);
}

static void setup_with_socket(void)
{
	open_udp_pair();
	setup_with_pollfd_core_cq();
}

static void teardown_with_socket(void)
{
	teardown_pollfd_core_cq();
	close(g_udp[0]);
	close(g_udp[1]);
	g_udp[0] = g_udp[1] = -1;
}

/* A hook that serves what came on the socket, as the engine's serve a
 * request the core placed. */
static int g_served;

static void serve_socket(void *arg)
{
	char c;

	(void) arg;
	if (recv(g_udp[0], &c, 1, MSG_DONTWAIT) == 1)
		__atomic_store_n(&g_served, 1, __ATOMIC_RELEASE);
}

/*
 * A thread in fi_cq_sread woken by the core's signal alone (tcp's "fd list
 * changed", which only a wait in the core drains) must still come back to
 * serve a commit request whose bytes arrive next: the core's sread, where
 * it used to wait out its step, returns only for a completion.
 */
Test(cq, a_reader_woken_by_the_core_signal_serves_the_next_request,
     .init = setup_with_socket, .fini = teardown_with_socket, .timeout = 20)
{
	struct pmv_hook hook = { .progress = serve_socket };
	pthread_t t;

	pmv_hooks_add(&g_cq->hooks, &hook);
	g_release_core_sread = 0; /* the core's sread waits (up to 5 s) */
	g_served = 0;
	cr_assert_eq(write(g_signal_pipe[1], "c", 1), 1);
	cr_assert_eq(pthread_create(&t, NULL, sread_forever_thread, NULL), 0);
	usleep(20000);
	cr_assert_eq(send(g_udp[1], "r", 1, 0), 1);
	for (int i = 0; i < 2000 &&
	     !__atomic_load_n(&g_served, __ATOMIC_ACQUIRE); i++)
		usleep(1000);
	__atomic_store_n(&g_release_core_sread, 1, __ATOMIC_RELEASE);
	cr_assert_eq(fi_cq_signal(&g_cq->cq_fid), 0);
	pthread_join(t, NULL);
	pmv_hooks_remove(&g_cq->hooks, &hook);
	cr_assert(g_served, "the request was not served while the reader "
		  "waited in the core's sread");
	cr_assert_lt(g_waits, 100, "the reader spun: %u waits in the core",
		     g_waits);
}
#endif
