/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Time bounds shared by the two-process test programs (test/integration,
 * test/pmem, test/hostile): every wait they make has a deadline.
 */
#ifndef PMV_TEST_TIME_H
#define PMV_TEST_TIME_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

static inline int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline int64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static inline int64_t deadline_in(int ms)
{
	return now_ms() + ms;
}

/* True while the deadline has not passed. */
static inline bool before(int64_t deadline)
{
	return now_ms() < deadline;
}

/* Short sleep between idle polls, so a busy loop does not starve the peer. */
static inline void pause_briefly(void)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = 20000 };

	nanosleep(&ts, NULL);
}

#endif /* PMV_TEST_TIME_H */
