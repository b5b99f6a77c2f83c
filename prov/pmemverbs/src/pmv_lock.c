/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: the lock check of test builds (pmv_lock.h).  Each thread
 * counts the pmemverbs locks it holds, by class, with where it took each;
 * a lock taken out of order, or a call made under a lock its class's rule
 * does not allow, aborts the process with both named.
 */
#include <stdio.h>
#include <stdlib.h>

#include "pmv_lock.h"

#ifdef PMV_FAULT_INJECTION
#define PMV_BIT(c) (1u << (c))

static const char *const pmv_lock_names[PMV_LOCK_CLASSES] = {
	[PMV_LOCK_PUSH] = "the domain's push_lock",
	[PMV_LOCK_SERVE] = "an endpoint's serve_lock",
	[PMV_LOCK_DOMAIN] = "the domain lock",
	[PMV_LOCK_CQ] = "a CQ's lock",
	[PMV_LOCK_INI] = "an initiator's lock",
	[PMV_LOCK_HOOKS] = "a hook list's lock",
	[PMV_LOCK_CQ_AUX] = "a CQ's aux_lock",
	[PMV_LOCK_IOPS] = "an internal operation pool's lock",
	[PMV_LOCK_FILES] = "pmv_files_lock",
	[PMV_LOCK_WAIT_SET] = "a wait set's lock",
	[PMV_LOCK_AGENTS] = "pmv_agents_lock",
	[PMV_LOCK_WAKE_KEY] = "pmv_wake_key_lock",
	[PMV_LOCK_WAKES] = "a domain's wakes lock",
};

/*
 * The locks each kind of call may be made under, and why that is
 * harmless: posts and reads never block (-FI_EAGAIN instead) and the core
 * calls nothing of ours back, so the core's own locks are always taken
 * last.  The initiator posts under its lock (a commit's operations go in
 * ring order), a server posts acks and reads its CQ under serve_lock
 * (application threads only try it; a close waits for it), a profile push
 * under push_lock (pushes to a peer stay in order), a CQ's reader
 * reads the core CQ under cq->lock (one reader keeps the queue in order).
 * Waits, fi_trywait (the core's progress, before a wait) and control
 * calls are made with no pmemverbs lock held; persists only by a server.
 */
static const unsigned pmv_call_allowed[PMV_CALL_CLASSES] = {
	[PMV_CALL_POST] = PMV_BIT(PMV_LOCK_INI) | PMV_BIT(PMV_LOCK_SERVE) |
			  PMV_BIT(PMV_LOCK_PUSH),
	[PMV_CALL_READ] = PMV_BIT(PMV_LOCK_CQ) | PMV_BIT(PMV_LOCK_SERVE),
	[PMV_CALL_CTRL] = 0,
	[PMV_CALL_TRYWAIT] = 0,
	[PMV_CALL_WAIT] = 0,
	[PMV_CALL_PERSIST] = PMV_BIT(PMV_LOCK_SERVE),
};

static const char *const pmv_call_names[PMV_CALL_CLASSES] = {
	[PMV_CALL_POST] = "the core is posted to only under an initiator's "
		"lock, serve_lock or push_lock",
	[PMV_CALL_READ] = "the core is read only under a CQ's lock or "
		"serve_lock",
	[PMV_CALL_CTRL] = "control calls of the core are made under no "
		"pmemverbs lock",
	[PMV_CALL_TRYWAIT] = "fi_trywait is called under no pmemverbs lock",
	[PMV_CALL_WAIT] = "nothing waits under a pmemverbs lock",
	[PMV_CALL_PERSIST] = "a persist is made only under serve_lock",
};

/* What this thread holds: a count per class, and where each was taken. */
static __thread struct {
	int held[PMV_LOCK_CLASSES];
	const char *file[PMV_LOCK_CLASSES];
	int line[PMV_LOCK_CLASSES];
	unsigned long taken;
} pmv_held;

void (*pmv_lock_breach_hook)(const char *msg);

/* A lock rule was broken at file:line: the process ends (a unit test may
 * take the message instead, with pmv_lock_breach_hook). */
static void pmv_lock_abort(const char *what, const char *file, int line,
			   enum pmv_lock_class c, const char *rule)
{
	char msg[512];

	snprintf(msg, sizeof(msg), "pmemverbs lock check: %s at %s:%d with "
		 "%s held (taken at %s:%d): %s; see \"Locks\" in pmv.h", what,
		 file, line, pmv_lock_names[c], pmv_held.file[c],
		 pmv_held.line[c], rule);
	if (pmv_lock_breach_hook) {
		pmv_lock_breach_hook(msg);
		return;
	}
	fprintf(stderr, "%s\n", msg);
	fflush(stderr);
	abort();
}

void pmv_lock_order_check(enum pmv_lock_class c, const char *file, int line)
{
	for (int h = c; h < PMV_LOCK_CLASSES; h++)
		if (pmv_held.held[h])
			pmv_lock_abort(pmv_lock_names[c], file, line,
				       (enum pmv_lock_class) h,
				       "taken out of the lock order");
}

void pmv_lock_note(enum pmv_lock_class c, int delta, const char *file,
		   int line)
{
	pmv_held.held[c] += delta;
	if (pmv_held.held[c] < 0) {
		fprintf(stderr, "pmemverbs lock check: %s released at %s:%d "
			"but not held\n", pmv_lock_names[c], file, line);
		abort();
	}
	if (delta > 0) {
		pmv_held.taken++;
		pmv_held.file[c] = file;
		pmv_held.line[c] = line;
	}
}

void pmv_call_check(enum pmv_call_class call, const char *what,
		    const char *file, int line)
{
	for (int c = 0; c < PMV_LOCK_CLASSES; c++)
		if (pmv_held.held[c] && !(pmv_call_allowed[call] & PMV_BIT(c)))
			pmv_lock_abort(what, file, line,
				       (enum pmv_lock_class) c,
				       pmv_call_names[call]);
}

unsigned pmv_locks_held(void)
{
	unsigned n = 0;

	for (int c = 0; c < PMV_LOCK_CLASSES; c++)
		n += (unsigned) pmv_held.held[c];
	return n;
}

unsigned long pmv_locks_taken(void)
{
	return pmv_held.taken;
}
#else
/* Not a test build: the helpers are the pthread calls (pmv_lock.h). */
unsigned pmv_locks_held(void)
{
	return 0;
}

unsigned long pmv_locks_taken(void)
{
	return 0;
}
#endif
