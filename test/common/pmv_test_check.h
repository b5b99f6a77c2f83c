/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Ending a two-process test program on an error it cannot go on from:
 * die() prints "ERROR <role>: <reason>" on stderr and exits 1; CHECK(call)
 * dies unless a libfabric call returns 0.  The including program declares
 * (or defines) `const char *g_role`, its role's name, before including this.
 * die() is static inline: each file of a program of several has its copy.
 */
#ifndef PMV_TEST_CHECK_H
#define PMV_TEST_CHECK_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdnoreturn.h>
#include <sys/types.h>

#include <rdma/fi_errno.h>

#ifndef PRINTF_LIKE
#define PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))
#endif

static inline noreturn void die(const char *fmt, ...) PRINTF_LIKE(1, 2);

/* Prints "ERROR <role>: <reason>" on stderr and exits 1. */
static inline noreturn void die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "ERROR %s: ", g_role);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* Calls that must return 0; anything else ends the run. */
#define CHECK(call)                                                          \
	do {                                                                 \
		ssize_t rc_ = (call);                                        \
		if (rc_ != 0)                                                \
			die("%s: %s (%zd)", #call, fi_strerror((int)-rc_),   \
			    rc_);                                            \
	} while (0)

#endif /* PMV_TEST_CHECK_H */
