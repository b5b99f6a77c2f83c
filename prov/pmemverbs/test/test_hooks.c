/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The hook lists of CQs, EQs and counters (pmv_hooks.c): a hook taken off
 * its list from anywhere in it (head, middle, tail; parked or not) leaves
 * the others run once per read and itself never again.  Removal unlinks
 * through the hook's own back link, with no walk of the list.
 */
#include <criterion/criterion.h>

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
