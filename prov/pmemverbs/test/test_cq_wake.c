/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Unit tests: who wakes a thread asleep on a completion queue
 * (pmv_cq_wait.c) over a fake core CQ: the agent's progress signals an
 * application that may sleep on the fd; a thread in fi_wait on the CQ's
 * set keeps its progress and wake; a commit started wakes a sleeper even
 * if the core's signal was drained, and so does an entry queued by
 * another thread (on the one-fd and list paths); fi_cq_signal wakes a
 * reader that waits forever; a thread's eventfd closes with it, and the
 * provider initialised again gives them still.  The fake core: cq_fixture.c; the rest of the CQ: test_cq.c.
 */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <unistd.h>

#include "cq_fixture.h"

TestSuite(cq_wake, .fini = teardown);

/*
 * An application that may sleep on the CQ's fd (fi_trywait said yes, and
 * it has not read since) relies on bytes to wake it; the agent's progress
 * of that CQ takes them.  When that progress leaves entries there, the
 * agent signals the CQ's wait object; not once the application read it
 * again (an initiator's 8-byte read after 2 ms idle waited its epoll's
 * 200 ms in 1%, its fi_cq_sread's 100 ms step in 19 of 400 reads).
 */
Test(cq_wake, the_agents_progress_wakes_an_application_that_may_sleep_on_the_fd,
     .init = setup_with_pollfd_core_cq, .fini = teardown_pollfd_core_cq)
{
	struct fi_cq_entry e;
	int ctx;
	char c;

	g_core_entries[0].op_context = &ctx;
	g_core_staged = 1;
	__atomic_store_n(&g_cq->app_armed, true, __ATOMIC_SEQ_CST);
	pmv_cq_progress_core(g_cq);
	cr_assert_eq(read(g_signal_pipe[0], &c, 1), 1, "the agent's progress "
		     "left an entry and woke no one");
	cr_assert_eq(fi_cq_read(&g_cq->cq_fid, &e, 1), 1);
	g_core_entries[0].op_context = &ctx;
	g_core_staged = 1;
	pmv_cq_progress_core(g_cq);
	cr_assert_eq(read(g_signal_pipe[0], &c, 1), -1, "signalled after the "
		     "application read the CQ");
	g_core_staged = 0;
}

/*
 * A thread asleep in fi_wait on the CQ's wait set (libfabric 1.x) counts
 * as the CQ's sleeper: the agent leaves the CQ's progress to it, and
 * signals the CQ when its own progress took bytes (a commit that another
 * thread started while one slept in the set waited the set's 100 ms step).
 */
Test(cq_wake, a_thread_in_fi_wait_on_the_cqs_set_keeps_its_progress_and_wake,
     .init = setup_with_pollfd_core_cq, .fini = teardown_pollfd_core_cq)
{
	static struct pmv_wait set; /* no members: the teardown's leave of
				     * it finds none */
	unsigned reads = g_core_reads;
	int ctx;
	char c;

	set.sleepers = 1;
	g_core_entries[0].op_context = &ctx;
	g_core_staged = 1;
	g_cq->app_set = &set;
	pmv_cq_progress_core(g_cq);
	cr_assert_eq(g_core_reads, reads, "the agent read a core CQ that a "
		     "thread in fi_wait on its set sleeps on");
	pmv_cq_wake_waiters(g_cq, false);
	cr_assert_eq(read(g_signal_pipe[0], &c, 1), -1, "signalled with "
		     "nothing found and no commit in flight");
	pmv_cq_wake_waiters(g_cq, true);
	cr_assert_eq(read(g_signal_pipe[0], &c, 1), 1, "the agent's progress "
		     "found entries and woke no thread in fi_wait on the set");
	g_cq->app_set = NULL;
	g_core_staged = 0;
}

/*
 * A commit started while a thread sleeps on the CQ (pmv_cq_wake_sleepers)
 * wakes it through the core's signal and through the eventfd it listed
 * as asleep on the CQ (pmv_wake.c): another thread's fi_trywait of the
 * core CQ (the agent's) drains the signal, and the sleeper then waited
 * out a counter wait's 20 ms sleep.  No sleeper: neither; a thread asleep
 * on another object: not it.
 */
Test(cq_wake, a_commit_started_wakes_a_sleeper_even_if_the_signal_was_drained,
     .init = setup_with_pollfd_core_cq, .fini = teardown_pollfd_core_cq)
{
	struct pmv_sleeper here, elsewhere;
	struct pollfd p, q;
	char c;

	cr_assert_eq(pmv_sleep_begin(&here, g_cq->domain, g_cq, &p), 1);
	pmv_cq_wake_sleepers(g_cq);
	cr_assert_eq(poll(&p, 1, 0), 0, "woken with no sleeper counted");
	cr_assert_eq(read(g_signal_pipe[0], &c, 1), -1, "signalled with no "
		     "sleeper");
	g_cq->core_waiters = 1;
	pmv_cq_wake_sleepers(g_cq);
	g_cq->core_waiters = 0;
	cr_assert_eq(read(g_signal_pipe[0], &c, 1), 1, "the core's signal "
		     "was not set"); /* drained, as another trywait does */
	cr_assert_eq(poll(&p, 1, 0), 1, "the eventfd does not wake the "
		     "sleeper once the core's signal was drained");
	cr_assert(pmv_sleep_end(&here), "the wake was not seen");
	cr_assert_eq(poll(&p, 1, 0), 0, "the eventfd was not drained");
	cr_assert_eq(pmv_sleep_begin(&elsewhere, g_cq->domain, &elsewhere, &q),
		     1);
	pmv_wake_sleepers_on(g_cq->domain, g_cq);
	cr_assert_eq(poll(&q, 1, 0), 0, "a thread asleep on another object "
		     "was woken");
	cr_assert(!pmv_sleep_end(&elsewhere));
	cr_assert_eq(g_cq->domain->wakes.count, 0, "a sleeper stayed listed");
}

static ssize_t g_sread_got;

static void *sread_5s_thread(void *arg)
{
	struct fi_cq_entry entry;

	(void) arg;
	g_sread_got = fi_cq_sread(&g_cq->cq_fid, &entry, 1, NULL, 5000);
	return NULL;
}

/*
 * An entry pmemverbs queues from another thread (the agent's FI_IMMED,
 * a commit the agent completed) while a thread sleeps in fi_cq_sread on
 * the core CQ's fds ends that sleep, although the core's signal that
 * goes with it was drained by another thread's fi_trywait: the sleep
 * ends by a readable fd, not by its timeout (100 ms steps).
 */
static void check_a_queued_entry_ends_the_sleep(void)
{
	struct fi_cq_err_entry e = { .flags = FI_RMA | FI_REMOTE_WRITE };
	pthread_t t;

	g_core_signal_lost = true;
	g_watch_polls = 1;
	cr_assert_eq(pthread_create(&t, NULL, sread_5s_thread, NULL), 0);
	cr_assert(wait_for_flag(&g_long_polls_in), "the reader never slept "
		  "on the core CQ's fds");
	cr_assert_eq(pmv_cq_reserve(g_cq), 0);
	pmv_cq_push(g_cq, &e, false);
	(void) fi_cq_signal(g_cq->core); /* as pmv_agent_immed; lost */
	pthread_join(t, NULL);
	cr_assert_eq(g_sread_got, 1, "fi_cq_sread returned %zd", g_sread_got);
	cr_assert_eq(g_long_polls_timed_out, 0, "the reader slept out its "
		     "step with an entry queued for it");
}

Test(cq_wake, a_queued_entry_ends_an_sread_on_the_core_fd,
     .init = setup_with_pollfd_cq_no_wait_set,
     .fini = teardown_pollfd_core_cq, .timeout = 20)
{
	cr_assert_geq(g_cq->wait_fd, 0, "not the one-fd path");
	check_a_queued_entry_ends_the_sleep();
}

#if PMV_HAVE_WAIT_SETS
Test(cq_wake, a_queued_entry_ends_an_sread_on_the_core_list,
     .init = setup_with_pollfd_core_cq, .fini = teardown_pollfd_core_cq,
     .timeout = 20)
{
	cr_assert(g_cq->wait_fd < 0 && g_cq->wait_pollfd, "not the list path");
	check_a_queued_entry_ends_the_sleep();
}
#endif

/* An application thread that polls the CQ's fd up to 2 s (its epoll
 * after fi_trywait), watched: g_long_polls_timed_out if nothing ends it. */
static void *poll_cq_fd_thread(void *arg)
{
	struct pollfd p = { .fd = g_signal_pipe[0], .events = POLLIN };

	(void) arg;
	(void) poll(&p, 1, 2000);
	return NULL;
}

/*
 * The application armed the CQ (its fi_trywait said yes) and sleeps on
 * its fd; pmemverbs queues an entry and signals the core CQ (the agent's
 * FI_IMMED).  The agent's own fi_trywait of that core CQ before it sleeps
 * resets the signal, as libfabric's util wait objects do: it signals
 * again, since the CQ holds an entry, and the application's poll ends by
 * the fd, not its timeout.  (Was: only an entry in the core CQ or a
 * commit in flight signalled again; the fd stayed quiet until the
 * application's own timeout.)
 */
Test(cq_wake, the_agents_trywait_gives_back_the_signal_of_a_queued_entry,
     .init = setup_with_pollfd_cq_no_wait_set,
     .fini = teardown_pollfd_core_cq, .timeout = 20)
{
	struct fi_cq_err_entry e = { .flags = FI_RMA | FI_REMOTE_WRITE };
	struct fi_cq_entry got;
	pthread_t t;

	g_trywait_drains = true;
	/* as pmemverbs's fi_trywait arms it (pmv_trywait_core_fids) */
	__atomic_store_n(&g_cq->app_armed, true, __ATOMIC_SEQ_CST);
	cr_assert_eq(pmv_cq_reserve(g_cq), 0);
	pmv_cq_push(g_cq, &e, false);
	(void) fi_cq_signal(g_cq->core); /* as pmv_agent_immed */
	cr_assert_not(pmv_cq_agent_trywait(g_cq, g_dom.fabric->core));
	g_watch_polls = 1;
	cr_assert_eq(pthread_create(&t, NULL, poll_cq_fd_thread, NULL), 0);
	pthread_join(t, NULL);
	cr_assert_eq(g_long_polls_in, 1, "the application never polled");
	cr_assert_eq(g_long_polls_timed_out, 0, "the application slept out "
		     "its poll with an entry queued for it");
	cr_assert_eq(fi_cq_read(&g_cq->cq_fid, &got, 1), 1);
}

/* fi_cq_signal wakes a thread waiting without timeout: -FI_EAGAIN. */
Test(cq_wake, fi_cq_signal_wakes_a_reader_that_waits_forever,
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

static int g_thread_fd = -1;

/* A thread that sleeps once on g_cq (its eventfd is made), then exits. */
static void *sleep_once_thread(void *arg)
{
	struct pmv_sleeper s;
	struct pollfd p;

	(void) arg;
	if (pmv_sleep_begin(&s, g_cq->domain, g_cq, &p))
		g_thread_fd = p.fd;
	(void) pmv_sleep_end(&s);
	return NULL;
}

/*
 * A thread's eventfd is closed when the thread exits, and a provider
 * initialised again after its unload (pmv_wake_fini: libfabric's cleanup)
 * still gives its threads eventfds: the first version made its key once
 * per process, and after the unload's key deletion a thread slept without
 * one.
 */
Test(cq_wake, a_threads_eventfd_lives_with_it_and_the_provider_reloads,
     .init = setup_with_pollfd_core_cq, .fini = teardown_pollfd_core_cq)
{
	struct pmv_sleeper s;
	struct pollfd p;
	pthread_t t;

	cr_assert_eq(pthread_create(&t, NULL, sleep_once_thread, NULL), 0);
	pthread_join(t, NULL);
	cr_assert_geq(g_thread_fd, 0, "the thread got no eventfd");
	cr_assert_eq(fcntl(g_thread_fd, F_GETFD), -1, "the exited thread's "
		     "eventfd is still open");
	pmv_wake_fini();
	cr_assert_eq(pmv_sleep_begin(&s, g_cq->domain, g_cq, &p), 1,
		     "no eventfd after the provider was initialised again");
	(void) pmv_sleep_end(&s);
	g_thread_fd = -1;
	cr_assert_eq(pthread_create(&t, NULL, sleep_once_thread, NULL), 0);
	pthread_join(t, NULL);
	cr_assert_geq(g_thread_fd, 0, "a new thread got no eventfd");
	cr_assert_eq(fcntl(g_thread_fd, F_GETFD), -1, "its eventfd outlived it");
}
