/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Verdict lines shared by the two-process test programs (test/pmem,
 * test/hostile, test/threads, test/crash): one "PASS|FAIL name: detail"
 * line per check on stdout, counted in g_passed and g_failed.  A program
 * of one translation unit gets the counts from here; one of several
 * (pmv_commit_test) defines PMV_TEST_REPORT_SHARED in each and the counts
 * once, in one of them.
 */
#ifndef PMV_TEST_REPORT_H
#define PMV_TEST_REPORT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

#ifdef PMV_TEST_REPORT_SHARED
extern unsigned g_passed, g_failed;
#else
static unsigned g_passed, g_failed;
#endif

static inline void verdict(bool ok, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Prints one verdict line, "PASS name: detail" or "FAIL name: detail". */
static inline void verdict(bool ok, const char *name, const char *fmt, ...)
{
	va_list ap;

	printf("%s %s: ", ok ? "PASS" : "FAIL", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	if (ok)
		g_passed++;
	else
		g_failed++;
}

#endif /* PMV_TEST_REPORT_H */
