/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The hook lists of CQs, EQs and counters (pmv_hooks.c): a hook taken off
 * its list from anywhere in it (head, middle, tail; parked or not) leaves
 * the others run once per read and itself never again.  Removal unlinks
 * through the hook's own back link, with no walk of the list.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <unistd.h>

#include "pmv.h"
#include "pmv_objects.h"

#define NHOOKS 8

static struct pmv_hooks g_hooks;
static struct pmv_hook g_hook[NHOOKS];
static int g_runs[NHOOKS];
static bool g_busy[NHOOKS];

static void count_run(void *arg)
{
	g_runs[(int *) arg - g_runs]++;
}

static bool hook_busy(void *arg)
{
	return g_busy[(int *) arg - g_runs];
}

static void setup(void)
{
	pmv_hooks_init(&g_hooks, NULL);
	for (int i = 0; i < NHOOKS; i++) {
		g_hook[i] = (struct pmv_hook) { .progress = count_run,
						.busy = hook_busy,
						.arg = &g_runs[i] };
		g_runs[i] = 0;
		g_busy[i] = false;
	}
}

static void teardown(void)
{
	pmv_hooks_fini(&g_hooks);
}

TestSuite(hooks, .init = setup, .fini = teardown);

/* One read: each hook in want[] ran once, every other one not at all. */
static void expect_runs(const char *when, const bool want[NHOOKS])
{
	memset(g_runs, 0, sizeof(g_runs));
	pmv_hooks_run(&g_hooks);
	for (int i = 0; i < NHOOKS; i++)
		cr_assert_eq(g_runs[i], want[i] ? 1 : 0, "%s: hook %d ran %d "
			     "times, %d wanted", when, i, g_runs[i],
			     want[i] ? 1 : 0);
}

Test(hooks, removal_from_head_middle_and_tail_leaves_the_rest_listed)
{
	bool want[NHOOKS];

	for (int i = 0; i < NHOOKS; i++) {
		pmv_hooks_add(&g_hooks, &g_hook[i]);
		want[i] = true;
	}
	expect_runs("all added", want);
	/* hook 7 was pushed last (the head), hook 0 first (the tail) */
	const int order[NHOOKS] = { 7, 0, 3, 4, 6, 1, 5, 2 };
	for (int k = 0; k < NHOOKS; k++) {
		pmv_hooks_remove(&g_hooks, &g_hook[order[k]]);
		want[order[k]] = false;
		expect_runs("after a removal", want);
	}
	cr_assert_null(g_hooks.head, "the list is not empty after every "
		       "hook was taken off it");
	pmv_hooks_add(&g_hooks, &g_hook[3]);
	want[3] = true;
	expect_runs("one added back", want);
	pmv_hooks_remove(&g_hooks, &g_hook[3]);
}

Test(hooks, parked_hooks_come_and_go_without_breaking_the_list)
{
	bool want[NHOOKS] = { false };

	for (int i = 0; i < NHOOKS; i++) {
		g_hook[i].park_idle = true;
		g_busy[i] = i % 2; /* the idle ones park at once */
		pmv_hooks_add(&g_hooks, &g_hook[i]);
		want[i] = g_busy[i];
	}
	expect_runs("odd ones busy", want);
	/* hook 3 turns idle: the read runs it, then parks it */
	g_busy[3] = false;
	expect_runs("hook 3 idle, run once more", want);
	want[3] = false;
	expect_runs("hook 3 parked", want);
	/* the parked and the listed ones are taken off alike */
	pmv_hooks_remove(&g_hooks, &g_hook[3]);
	pmv_hooks_remove(&g_hooks, &g_hook[4]);
	pmv_hooks_remove(&g_hooks, &g_hook[5]);
	want[5] = false;
	expect_runs("3, 4 and 5 taken off", want);
	/* a parked hook woken goes back on the list */
	g_busy[2] = true;
	pmv_hooks_wake(&g_hooks, &g_hook[2]);
	want[2] = true;
	expect_runs("hook 2 woken", want);
	for (int i = 0; i < NHOOKS; i++)
		if (i < 3 || i > 5)
			pmv_hooks_remove(&g_hooks, &g_hook[i]);
	cr_assert_null(g_hooks.head, "the list is not empty after every "
		       "hook was taken off it");
}

#ifdef PMV_FAULT_INJECTION /* locks are counted in test builds only */
/* A read walks the list without its lock: it holds no hook (a hook's
 * count of runs, written twice per read, was two locks per 32 hooks). */
Test(hooks, a_walk_takes_no_lock)
{
	unsigned long locks;

	for (int i = 0; i < NHOOKS; i++)
		pmv_hooks_add(&g_hooks, &g_hook[i]);
	locks = pmv_locks_taken();
	pmv_hooks_run(&g_hooks);
	cr_assert_eq(pmv_locks_taken() - locks, 0, "a walk of %d hooks took "
		     "%lu locks", NHOOKS, pmv_locks_taken() - locks);
	for (int i = 0; i < NHOOKS; i++)
		pmv_hooks_remove(&g_hooks, &g_hook[i]);
}
#endif

static volatile int g_in_hook, g_release, g_removed, g_stop_walking;

/* Hook 0's run while a test holds it: stands in it until released (5 s
 * at most). */
static void stand_in_hook(void *arg)
{
	(void) arg;
	g_in_hook = 1;
	for (int i = 0; i < 5000 && !g_release; i++)
		usleep(1000);
}

static void *walk_once(void *arg)
{
	(void) arg;
	pmv_hooks_run(&g_hooks);
	return NULL;
}

static void *remove_hook0(void *arg)
{
	(void) arg;
	pmv_hooks_remove(&g_hooks, &g_hook[0]);
	g_removed = 1;
	return NULL;
}

static void *walk_until_stopped(void *arg)
{
	(void) arg;
	for (long i = 0; i < 10000000 && !g_stop_walking; i++)
		pmv_hooks_run(&g_hooks);
	return NULL;
}

/*
 * A removal returns only once no walk stands on its hook (its memory may
 * go then), even while other threads walk the list all along (they join
 * the other side: the removal is not starved).
 */
Test(hooks, a_removal_waits_for_the_walk_that_runs_its_hook)
{
	pthread_t walker, remover, busy[2];

	g_in_hook = g_release = g_removed = g_stop_walking = 0;
	g_hook[0].progress = stand_in_hook;
	for (int i = 0; i < NHOOKS; i++)
		pmv_hooks_add(&g_hooks, &g_hook[i]);
	cr_assert_eq(pthread_create(&walker, NULL, walk_once, NULL), 0);
	for (int i = 0; i < 5000 && !g_in_hook; i++)
		usleep(1000);
	cr_assert(g_in_hook, "the walk never reached hook 0");
	for (int i = 0; i < 2; i++)
		cr_assert_eq(pthread_create(&busy[i], NULL, walk_until_stopped,
					    NULL), 0);
	cr_assert_eq(pthread_create(&remover, NULL, remove_hook0, NULL), 0);
	usleep(50000);
	cr_assert_not(g_removed, "the removal returned while a walk ran its "
		      "hook");
	g_release = 1;
	cr_assert_eq(pthread_join(walker, NULL), 0);
	for (int i = 0; i < 5000 && !g_removed; i++)
		usleep(1000);
	cr_assert(g_removed, "the removal never returned while two threads "
		  "walked the list (starved)");
	g_stop_walking = 1;
	for (int i = 0; i < 2; i++)
		cr_assert_eq(pthread_join(busy[i], NULL), 0);
	cr_assert_eq(pthread_join(remover, NULL), 0);
	for (int i = 1; i < NHOOKS; i++)
		pmv_hooks_remove(&g_hooks, &g_hook[i]);
}
