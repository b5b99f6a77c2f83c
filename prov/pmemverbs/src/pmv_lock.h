/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: taking the provider's locks (the order is in pmv.h, "Locks").
 *
 * Every pmemverbs lock is taken with pmv_lock/pmv_trylock and given back
 * with pmv_unlock, naming its class.  In a test build
 * (--enable-fault-injection) each thread counts the locks it holds, and
 * the process aborts, naming the lock and the call, when
 *   - a lock is taken out of order (a blocking take of a class ranked
 *     before one the thread holds; trylocks cannot deadlock), or
 *   - a core call, a persist or a wait is made under a lock the rule of
 *     its class does not allow (pmv_call_allowed in pmv_lock.c).
 * Core calls are checked where they are made: with this header included
 * after libfabric's, each fi_* call below is preceded by pmv_call_check.
 * Elsewhere the helpers are the plain pthread calls.
 */
#ifndef PMV_LOCK_H
#define PMV_LOCK_H

#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>

#include "config.h"

/* Lock classes, ranked: a thread takes them only in this order. */
enum pmv_lock_class {
	PMV_LOCK_PUSH,    /* dom->push_lock: profile pushes, one at a time */
	PMV_LOCK_SERVE,   /* tgt->serve_lock: one server of an inbox */
	PMV_LOCK_DOMAIN,  /* dom->lock: MR table, agent endpoint list */
	PMV_LOCK_CQ,      /* cq->lock: reads of a core CQ */
	PMV_LOCK_INI,     /* ini->lock: an initiator's commit engine */
	PMV_LOCK_HOOKS,   /* hooks->lock: a hook list's links */
	PMV_LOCK_CQ_AUX,  /* cq->aux_lock: pmemverbs's own CQ entries */
	PMV_LOCK_IOPS,    /* pool->lock: a CQ's internal operations */
	PMV_LOCK_FILES,   /* pmv_files_lock: files of PAGE regions */
	PMV_LOCK_WAIT_SET, /* set->lock: a wait set's members (a leaf) */
	PMV_LOCK_AGENTS,  /* pmv_agents_lock: the running agents */
	PMV_LOCK_WAKE_KEY, /* pmv_wake_key_lock: threads' eventfd key (a leaf) */
	PMV_LOCK_WAKES,   /* dom->wakes.lock: a domain's sleepers (a leaf) */
	PMV_LOCK_CLASSES,
};

/* What a checked call does (the rule of each: pmv_lock.c). */
enum pmv_call_class {
	PMV_CALL_POST,    /* non-blocking post or update on a core object */
	PMV_CALL_READ,    /* non-blocking read of a core CQ, counter, EQ */
	PMV_CALL_CTRL,    /* open, close, bind, control, registration */
	PMV_CALL_TRYWAIT, /* fi_trywait: the core's progress, before a wait */
	PMV_CALL_WAIT,    /* a call that may sleep: sread, wait, poll, yield */
	PMV_CALL_PERSIST, /* msync or a CPU flush of a region */
	PMV_CALL_CLASSES,
};

/* How many pmemverbs locks this thread holds (0 outside test builds). */
unsigned pmv_locks_held(void);
/* How many this thread has taken so far (0 outside test builds). */
unsigned long pmv_locks_taken(void);

#ifdef PMV_FAULT_INJECTION
/* Unit tests only: takes a breach's message instead of aborting. */
extern void (*pmv_lock_breach_hook)(const char *msg);
void pmv_lock_order_check(enum pmv_lock_class c, const char *file, int line);
void pmv_lock_note(enum pmv_lock_class c, int delta, const char *file,
		   int line);
void pmv_call_check(enum pmv_call_class call, const char *what,
		    const char *file, int line);

/* Takes m, a lock of class c, after checking the order. */
static inline void pmv_lock_at(pthread_mutex_t *m, enum pmv_lock_class c,
			       const char *file, int line)
{
	pmv_lock_order_check(c, file, line);
	pthread_mutex_lock(m);
	pmv_lock_note(c, 1, file, line);
}

/* Takes m if free: true if taken. */
static inline bool pmv_trylock_at(pthread_mutex_t *m, enum pmv_lock_class c,
				  const char *file, int line)
{
	if (pthread_mutex_trylock(m))
		return false;
	pmv_lock_note(c, 1, file, line);
	return true;
}

static inline void pmv_unlock_at(pthread_mutex_t *m, enum pmv_lock_class c,
				 const char *file, int line)
{
	pmv_lock_note(c, -1, file, line);
	pthread_mutex_unlock(m);
}

#define pmv_lock(m, c) pmv_lock_at(m, c, __FILE__, __LINE__)
#define pmv_trylock(m, c) pmv_trylock_at(m, c, __FILE__, __LINE__)
#define pmv_unlock(m, c) pmv_unlock_at(m, c, __FILE__, __LINE__)
#define PMV_CALL_CHECK(call, what) \
	pmv_call_check(call, what, __FILE__, __LINE__)

/* Each call below checks the locks its thread holds first.  A macro does
 * not expand inside itself, so the call it makes is libfabric's. */
#define PMV_CHECKED(call, name, ...) \
	(PMV_CALL_CHECK(call, #name), name(__VA_ARGS__))
#define fi_write(...)           PMV_CHECKED(PMV_CALL_POST, fi_write, __VA_ARGS__)
#define fi_writev(...)          PMV_CHECKED(PMV_CALL_POST, fi_writev, __VA_ARGS__)
#define fi_writemsg(...)        PMV_CHECKED(PMV_CALL_POST, fi_writemsg, __VA_ARGS__)
#define fi_writedata(...)       PMV_CHECKED(PMV_CALL_POST, fi_writedata, __VA_ARGS__)
#define fi_inject_write(...)    PMV_CHECKED(PMV_CALL_POST, fi_inject_write, __VA_ARGS__)
#define fi_inject_writedata(...) PMV_CHECKED(PMV_CALL_POST, fi_inject_writedata, __VA_ARGS__)
#define fi_read(...)            PMV_CHECKED(PMV_CALL_POST, fi_read, __VA_ARGS__)
#define fi_readv(...)           PMV_CHECKED(PMV_CALL_POST, fi_readv, __VA_ARGS__)
#define fi_readmsg(...)         PMV_CHECKED(PMV_CALL_POST, fi_readmsg, __VA_ARGS__)
#define fi_send(...)            PMV_CHECKED(PMV_CALL_POST, fi_send, __VA_ARGS__)
#define fi_sendv(...)           PMV_CHECKED(PMV_CALL_POST, fi_sendv, __VA_ARGS__)
#define fi_sendmsg(...)         PMV_CHECKED(PMV_CALL_POST, fi_sendmsg, __VA_ARGS__)
#define fi_senddata(...)        PMV_CHECKED(PMV_CALL_POST, fi_senddata, __VA_ARGS__)
#define fi_inject(...)          PMV_CHECKED(PMV_CALL_POST, fi_inject, __VA_ARGS__)
#define fi_injectdata(...)      PMV_CHECKED(PMV_CALL_POST, fi_injectdata, __VA_ARGS__)
#define fi_recv(...)            PMV_CHECKED(PMV_CALL_POST, fi_recv, __VA_ARGS__)
#define fi_recvv(...)           PMV_CHECKED(PMV_CALL_POST, fi_recvv, __VA_ARGS__)
#define fi_recvmsg(...)         PMV_CHECKED(PMV_CALL_POST, fi_recvmsg, __VA_ARGS__)
#define fi_cntr_add(...)        PMV_CHECKED(PMV_CALL_POST, fi_cntr_add, __VA_ARGS__)
#define fi_cntr_adderr(...)     PMV_CHECKED(PMV_CALL_POST, fi_cntr_adderr, __VA_ARGS__)
#define fi_cntr_set(...)        PMV_CHECKED(PMV_CALL_POST, fi_cntr_set, __VA_ARGS__)
#define fi_cntr_seterr(...)     PMV_CHECKED(PMV_CALL_POST, fi_cntr_seterr, __VA_ARGS__)
#define fi_eq_write(...)        PMV_CHECKED(PMV_CALL_POST, fi_eq_write, __VA_ARGS__)
#define fi_cq_signal(...)       PMV_CHECKED(PMV_CALL_POST, fi_cq_signal, __VA_ARGS__)
#define fi_cq_read(...)         PMV_CHECKED(PMV_CALL_READ, fi_cq_read, __VA_ARGS__)
#define fi_cq_readfrom(...)     PMV_CHECKED(PMV_CALL_READ, fi_cq_readfrom, __VA_ARGS__)
#define fi_cq_readerr(...)      PMV_CHECKED(PMV_CALL_READ, fi_cq_readerr, __VA_ARGS__)
#define fi_cntr_read(...)       PMV_CHECKED(PMV_CALL_READ, fi_cntr_read, __VA_ARGS__)
#define fi_cntr_readerr(...)    PMV_CHECKED(PMV_CALL_READ, fi_cntr_readerr, __VA_ARGS__)
#define fi_eq_read(...)         PMV_CHECKED(PMV_CALL_READ, fi_eq_read, __VA_ARGS__)
#define fi_eq_readerr(...)      PMV_CHECKED(PMV_CALL_READ, fi_eq_readerr, __VA_ARGS__)
#define fi_close(...)           PMV_CHECKED(PMV_CALL_CTRL, fi_close, __VA_ARGS__)
#define fi_control(...)         PMV_CHECKED(PMV_CALL_CTRL, fi_control, __VA_ARGS__)
#define fi_mr_reg(...)          PMV_CHECKED(PMV_CALL_CTRL, fi_mr_reg, __VA_ARGS__)
#define fi_mr_regattr(...)      PMV_CHECKED(PMV_CALL_CTRL, fi_mr_regattr, __VA_ARGS__)
#define fi_cancel(...)          PMV_CHECKED(PMV_CALL_CTRL, fi_cancel, __VA_ARGS__)
#define fi_shutdown(...)        PMV_CHECKED(PMV_CALL_CTRL, fi_shutdown, __VA_ARGS__)
#define fi_trywait(...)         PMV_CHECKED(PMV_CALL_TRYWAIT, fi_trywait, __VA_ARGS__)
#define fi_cq_sread(...)        PMV_CHECKED(PMV_CALL_WAIT, fi_cq_sread, __VA_ARGS__)
#define fi_cq_sreadfrom(...)    PMV_CHECKED(PMV_CALL_WAIT, fi_cq_sreadfrom, __VA_ARGS__)
#define fi_cntr_wait(...)       PMV_CHECKED(PMV_CALL_WAIT, fi_cntr_wait, __VA_ARGS__)
#define fi_eq_sread(...)        PMV_CHECKED(PMV_CALL_WAIT, fi_eq_sread, __VA_ARGS__)
#define fi_wait(...)            PMV_CHECKED(PMV_CALL_WAIT, fi_wait, __VA_ARGS__)
#define sched_yield() \
	(PMV_CALL_CHECK(PMV_CALL_WAIT, "sched_yield"), sched_yield())
/* a poll with no timeout only looks */
#define poll(fds, n, ms) \
	(PMV_CALL_CHECK((ms) != 0 ? PMV_CALL_WAIT : PMV_CALL_READ, "poll"), \
	 poll(fds, n, ms))
#else
#define pmv_lock(m, c) ((void) (c), pthread_mutex_lock(m))
#define pmv_trylock(m, c) ((void) (c), !pthread_mutex_trylock(m))
#define pmv_unlock(m, c) ((void) (c), pthread_mutex_unlock(m))
#define PMV_CALL_CHECK(call, what) ((void) 0)
#endif

#endif /* PMV_LOCK_H */
