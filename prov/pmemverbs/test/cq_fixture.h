/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The completion queue's unit tests' fixture (cq_fixture.c): a fake core
 * CQ under a CQ opened by pmv_cq_open, with staged entries and errors, a
 * blocking read the test releases, and (optionally) a tcp-like list of
 * wait fds: a pipe for the core's signal and a UDP socket standing for a
 * connection, which the core's waits may progress.  It counts the core
 * reads and waits, and the yields (sched_yield) of each thread.
 */
#ifndef PMV_CQ_FIXTURE_H
#define PMV_CQ_FIXTURE_H

#include "engine_fixture.h"

/* Entries the fake core CQ hands out, and how often it was read. */
extern struct fi_cq_entry g_core_entries[4];
extern unsigned g_core_staged, g_core_reads;
/* A staged core error entry: reads report -FI_EAVAIL until it is taken. */
extern struct fi_cq_err_entry g_core_err;
extern bool g_core_err_staged;
/* The core's signal (a pipe) and a connection's socket ([0] is listed). */
extern int g_signal_pipe[2];
extern int g_udp[2];
/* The core's sread: entered; returns (bounded) once released. */
extern volatile int g_in_core_sread, g_release_core_sread;
/* The core's fi_wait calls, and the last one's timeout. */
extern unsigned g_waits;
extern int g_wait_last_ms;
/* The core's waits run its progress first (tcp's do): they take the
 * socket's bytes (g_core_placed) and count a sleep after that. */
extern bool g_core_wait_progresses;
extern volatile int g_core_placed;
extern unsigned g_core_slept_after_placing;
/* fi_cq_signal on the core CQ does nothing: another thread's fi_trywait
 * drained the signal. */
extern bool g_core_signal_lost;
extern bool g_trywait_drains; /* the core's fi_trywait resets its signal */
/* While g_watch_polls, the provider's polls of 50 ms or more running and
 * those that ended by their timeout (poll is interposed). */
extern volatile int g_watch_polls, g_long_polls_in, g_long_polls_timed_out;
/* sched_yield calls made by the calling thread. */
extern _Thread_local unsigned g_thread_yields;

/* A thread in fi_cq_sread on g_cq without timeout, and its return. */
void *sread_forever_thread(void *arg);
extern ssize_t g_sread_ret;

/* Waits (5 s at most) until another thread sets *flag; true if it did. */
bool wait_for_flag(volatile int *flag);

/* As setup, with the engine's CQ opened by pmv_cq_open over the fake. */
void setup_with_core_cq(void);
/* The same over a tcp-like core CQ that waits on its fds; its teardown. */
void setup_with_pollfd_core_cq(void);
void teardown_pollfd_core_cq(void);
/* A FI_WAIT_POLLFD CQ over that core, which opens no wait set (2.x);
 * the wait object asked of the core CQ. */
void setup_with_pollfd_cq_no_wait_set(void);
extern enum fi_wait_obj g_core_wait_asked;
#if PMV_HAVE_WAIT_SETS
/* The same on a pmemverbs wait set (g_app_set) over the fake core's. */
extern struct fid_wait *g_app_set;
void setup_with_wait_set(void);
void teardown_wait_set(void);
#endif

#endif /* PMV_CQ_FIXTURE_H */
