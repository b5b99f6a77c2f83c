/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Unit tests: who wakes a thread asleep on a completion queue
 * (pmv_cq_wait.c) over a fake core CQ: the agent's progress signals an
 * application that may sleep on the fd; a thread in fi_wait on the CQ's
 * set keeps its progress and wake; a commit started wakes a sleeper even
 * if the core's signal was drained; fi_cq_signal wakes a reader that waits
 * forever.  The fake core: cq_fixture.c; the rest of the CQ: test_cq.c.
 */
#include <poll.h>
#include <unistd.h>

#include "cq_fixture.h"

TestSuite(cq_wake, .fini = teardown);

static ssize_t g_sread_ret;

static void *sread_forever_thread(void *arg)
{
	uint64_t buf[8];

	(void) arg;
	g_sread_ret = fi_cq_sread(&g_cq->cq_fid, buf, 1, NULL, -1);
	return NULL;
}

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
 * wakes it through the core's signal and through the CQ's eventfd, which
 * a counter wait polls too: another thread's fi_trywait of the core CQ
 * (the agent's) drains the signal, and the sleeper then waited out its
 * 20 ms sleep.  No sleeper: neither.
 */
Test(cq_wake, a_commit_started_wakes_a_sleeper_even_if_the_signal_was_drained,
     .init = setup_with_pollfd_core_cq, .fini = teardown_pollfd_core_cq)
{
	int fd = pmv_cq_wake_fd(g_cq);
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char c;

	cr_assert_geq(fd, 0);
	cr_assert_eq(pmv_cq_wake_fd(g_cq), fd, "a second eventfd was made");
	pmv_cq_wake_sleepers(g_cq);
	cr_assert_eq(poll(&p, 1, 0), 0, "woken with no sleeper");
	cr_assert_eq(read(g_signal_pipe[0], &c, 1), -1, "signalled with no "
		     "sleeper");
	g_cq->core_waiters = 1;
	pmv_cq_wake_sleepers(g_cq);
	cr_assert_eq(read(g_signal_pipe[0], &c, 1), 1, "the core's signal "
		     "was not set"); /* drained, as another trywait does */
	cr_assert_eq(poll(&p, 1, 0), 1, "the eventfd does not wake the "
		     "sleeper once the core's signal was drained");
	g_cq->core_waiters = 0;
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
