/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: the timeline of commits, for measurement builds only
 * (configure --enable-timeline, PMV_TIMELINE).  Each step of a commit on
 * either side stores its CLOCK_MONOTONIC time and its mark; at exit (or
 * unload) the process writes them to FI_PMEMVERBS_TIMELINE.PID, one
 * "mark ns tid" per line (tid: the marking thread's kernel id), for
 * fabtests/scripts/pmv_timeline.py, which lines the two sides of each
 * commit up (one host: one clock).  The numbers are
 * that file's format.  In other builds each mark is nothing.
 */
#ifndef PMV_TIMELINE_H
#define PMV_TIMELINE_H

#include <stdint.h>

#include "config.h"

/* The steps, in the order a busy target's agent commit takes them. */
enum pmv_mark {
	PMV_MARK_COMMIT = 10,       /* initiator: fi_writemsg called */
	PMV_MARK_CORE_POST = 13,    /* initiator: the core's write called */
	PMV_MARK_CORE_POSTED = 14,  /* initiator: it returned */
	PMV_MARK_POSTED = 11,       /* initiator: fi_writemsg returns */
	PMV_MARK_READ = 1,          /* target: the CQ read that took the
				     * request's gate entry began */
	PMV_MARK_GATE = 2,          /* target: that read's core part ended */
	PMV_MARK_SERVE = 3,         /* target: the request's serving began */
	PMV_MARK_PERSIST = 31,      /* target: its persist began */
	PMV_MARK_CHECKED = 33,      /* target: the file checked (lseek) */
	PMV_MARK_SYNC = 35,         /* target: its msync began */
	PMV_MARK_SYNCED = 34,       /* target: msync returned */
	PMV_MARK_PERSISTED = 32,    /* target: the persist returned */
	PMV_MARK_SERVED = 4,        /* target: the request served */
	PMV_MARK_ACK = 7,           /* target: the ack's write called */
	PMV_MARK_ACKED = 8,         /* target: it returned */
	PMV_MARK_READ_DONE = 9,     /* target: the CQ read returns */
	PMV_MARK_ACK_SEEN = 12,     /* initiator: the ack read */
	PMV_MARK_ENTRY = 6,         /* either: a CQ read returns entries */
};

#ifdef PMV_TIMELINE
uint64_t pmv_timeline_now(void);
void pmv_mark_at(enum pmv_mark m, uint64_t ns);
void pmv_timeline_init(void);
/* Stores the time of step m. */
static inline void pmv_mark(enum pmv_mark m)
{
	pmv_mark_at(m, pmv_timeline_now());
}
#else
static inline uint64_t pmv_timeline_now(void) { return 0; }
static inline void pmv_mark_at(enum pmv_mark m, uint64_t ns)
{
	(void) m;
	(void) ns;
}
static inline void pmv_mark(enum pmv_mark m) { (void) m; }
static inline void pmv_timeline_init(void) {}
#endif

#endif /* PMV_TIMELINE_H */
