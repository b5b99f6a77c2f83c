/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Unit tests: the completion queue over a fake core CQ (pmv_cq.c,
 * pmv_cq_wait.c): a commit finished by a core entry costs one core read;
 * the agent leaves the core to a thread waiting in it; the core's own
 * signal wakes a waiting reader; a closed pmem endpoint's
 * failed ack never reaches the application; an empty read yields to a
 * thread running the completions it took; a core wait that took an ack's
 * bytes does not sleep on; a FI_WAIT_POLLFD CQ without a wait set waits
 * on one core fd.  The fake core: cq_fixture.c; the wakes of a sleeper:
 * test_cq_wake.c.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cq_fixture.h"

TestSuite(cq, .fini = teardown);

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
	cr_assert(wait_for_flag(&g_in_core_sread),
		  "the reader never reached the core's sread");
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

/* An internal operation's completion that runs until the test releases
 * it (bounded), as the agent's serve of a gated request runs a persist. */
static volatile int g_in_done, g_release_done;

static void blocking_done(struct pmv_iop *iop,
			  const struct fi_cq_err_entry *err)
{
	(void) iop; (void) err;
	__atomic_store_n(&g_in_done, 1, __ATOMIC_RELEASE);
	(void) wait_for_flag(&g_release_done);
}

static void *agent_take_thread(void *arg)
{
	(void) arg;
	pmv_cq_take_core(g_cq); /* the agent's progress of a gated CQ */
	return NULL;
}

/*
 * While another thread (the agent) runs internal completions it took
 * from the core, a reader that finds the CQ empty (a progress read of
 * count 0 too) gives up its CPU once: on two cores a reader spinning on
 * fi_cq_read slowed the agent's serve (libfabric 2.1,
 * docs/performance.md).  With nobody running any, an
 * empty read does not yield.  The yields are counted where they happen.
 */
Test(cq, an_empty_read_yields_to_a_thread_running_completions_it_took,
     .init = setup_with_core_cq, .timeout = 20)
{
	struct fi_cq_entry out[4];
	struct pmv_iop *iop;
	pthread_t t;

	pmv_cq_ref_pmem(g_cq, 1); /* a pmem endpoint's CQ, not a plain one */
	iop = pmv_iop_get(&g_cq->iops, blocking_done, NULL, PMV_IOP_DATA, 0);
	cr_assert_not_null(iop);
	g_core_entries[0].op_context = iop;
	g_core_staged = 1;
	g_in_done = g_release_done = 0;
	cr_assert_eq(pthread_create(&t, NULL, agent_take_thread, NULL), 0);
	cr_assert(wait_for_flag(&g_in_done),
		  "the agent never ran the completion it took");
	g_thread_yields = 0;
	cr_assert_eq(fi_cq_read(&g_cq->cq_fid, out, 4), -FI_EAGAIN);
	cr_assert_eq(g_thread_yields, 1, "the reader yielded %u times while "
		     "the agent ran a completion it took", g_thread_yields);
	g_thread_yields = 0;
	cr_assert_eq(fi_cq_read(&g_cq->cq_fid, NULL, 0), -FI_EAGAIN);
	cr_assert_eq(g_thread_yields, 1, "a progress read (count 0) yielded "
		     "%u times while the agent ran a completion it took",
		     g_thread_yields);
	__atomic_store_n(&g_release_done, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	g_thread_yields = 0;
	cr_assert_eq(fi_cq_read(&g_cq->cq_fid, out, 4), -FI_EAGAIN);
	cr_assert_eq(g_thread_yields, 0, "the reader yielded %u times with "
		     "no completion running", g_thread_yields);
	cr_assert_eq(fi_cq_read(&g_cq->cq_fid, NULL, 0), -FI_EAGAIN);
	cr_assert_eq(g_thread_yields, 0, "a progress read yielded %u times "
		     "with no completion running", g_thread_yields);
	pmv_cq_ref_pmem(g_cq, -1);
}

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

/* A hook that turns what the core placed into a core entry, as the ack
 * that landed completes its commit; commits are in flight meanwhile. */
static int g_ack_ctx;

static void complete_placed(void *arg)
{
	(void) arg;
	if (!__atomic_exchange_n(&g_core_placed, 0, __ATOMIC_ACQ_REL))
		return;
	g_core_entries[0].op_context = &g_ack_ctx;
	g_core_staged = 1;
}

static bool in_flight(void *arg)
{
	(void) arg;
	return true;
}

/*
 * A reader in fi_cq_sread whose last wait was woken by bytes looks at the
 * fds again first (drain_pending), and finds them readable: an ack's
 * bytes came meanwhile.  That look must not be a core wait that may
 * sleep: the core's wait runs its progress first, which placed the ack
 * (no core completion), then slept its whole step on nothing (4-12% of
 * back-to-back commits of an initiator in fi_cq_sread on a pollfd or
 * unspec CQ waited 1 ms).  Watched in the fake core, on both libfabric
 * generations: none of its waits slept after its progress took the bytes.
 */
Test(cq, a_core_wait_that_took_an_acks_bytes_does_not_sleep_on,
     .init = setup_with_socket, .fini = teardown_with_socket, .timeout = 20)
{
	struct pmv_hook hook = { .progress = complete_placed,
				 .busy = in_flight };
	struct fi_cq_entry e;

	pmv_hooks_add(&g_cq->hooks, &hook);
	g_core_wait_progresses = true;
	__atomic_store_n(&g_cq->drain_pending, true, __ATOMIC_RELEASE);
	cr_assert_eq(send(g_udp[1], "a", 1, 0), 1);
	cr_assert_eq(fi_cq_sread(&g_cq->cq_fid, &e, 1, NULL, 5000), 1,
		     "the ack's completion was not read");
	pmv_hooks_remove(&g_cq->hooks, &hook);
	cr_assert_eq(e.op_context, &g_ack_ctx);
	cr_assert_eq(g_core_slept_after_placing, 0, "a core wait took the "
		     "ack's bytes, then slept %u times",
		     g_core_slept_after_placing);
}

/*
 * Where the core opens no wait set (libfabric 2.x), a CQ the application
 * opened with FI_WAIT_POLLFD waits on a core CQ of FI_WAIT_FD, whose fd is
 * the list it is given (struct fi_wait_pollfd, fi_poll(3)): on 2.1's own
 * list a look after a wake found fds that only the core's sread drains,
 * which returns only for a completion, and an initiator in fi_cq_sread
 * waited 1 ms for an ack (p99 74-96 read round trips back to back).
 */
Test(cq, a_pollfd_cq_without_a_wait_set_waits_on_one_core_fd,
     .init = setup_with_pollfd_cq_no_wait_set,
     .fini = teardown_pollfd_core_cq)
{
	struct pollfd fd;
	struct fi_wait_pollfd list = { .nfds = 0, .fd = &fd };
	enum fi_wait_obj obj;

	cr_assert_eq(g_core_wait_asked, FI_WAIT_FD, "the core CQ was asked "
		     "wait object %d, not an fd", (int) g_core_wait_asked);
	cr_assert_eq(g_cq->wait_fd, g_signal_pipe[0]);
	cr_assert_eq(fi_control(&g_cq->cq_fid.fid, FI_GETWAITOBJ, &obj), 0);
	cr_assert_eq(obj, FI_WAIT_POLLFD, "the application asked for a list");
	cr_assert_eq(fi_control(&g_cq->cq_fid.fid, FI_GETWAIT, &list),
		     -FI_ETOOSMALL);
	cr_assert_eq(list.nfds, 1);
	cr_assert_eq(fi_control(&g_cq->cq_fid.fid, FI_GETWAIT, &list), 0);
	cr_assert_eq(list.nfds, 1);
	cr_assert_eq(fd.fd, g_signal_pipe[0]);
	cr_assert_eq(fd.events, POLLIN);
}

#if PMV_HAVE_WAIT_SETS /* libfabric 2.x: no wait set to drain the signal */
/* A hook that serves what came on the socket, as the engine's serve a
 * request the core placed. */
static volatile int g_served;

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
	(void) wait_for_flag(&g_served);
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
