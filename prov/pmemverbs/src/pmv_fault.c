/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: fault injection (test only), librpma's pattern: a parameter
 * per failure point names the N-th call that fails.  Off (0), a check is
 * one load.  And the clock both sides use, which unit tests move forward.
 */
#include <time.h>

#include "pmv.h"

static uint64_t pmv_fault_calls[PMV_FAULT_POINTS];

/* The parameter that arms a failure point. */
static int pmv_fault_nth(enum pmv_fault_point point)
{
	switch (point) {
	case PMV_FAULT_CORE_OP:
		return pmv_params.fault_core;
	case PMV_FAULT_PERSIST:
		return pmv_params.fault_persist;
	case PMV_FAULT_ALLOC:
		return pmv_params.fault_alloc;
	case PMV_FAULT_MR_REG:
		return pmv_params.fault_mr_reg;
	case PMV_FAULT_PUSH:
		return pmv_params.fault_push;
	default:
		return 0;
	}
}

/* True if this call at point is the one the test asked to fail. */
bool pmv_fault(enum pmv_fault_point point)
{
	int nth = pmv_fault_nth(point);

	if (nth <= 0)
		return false;
	if (__atomic_add_fetch(&pmv_fault_calls[point], 1, __ATOMIC_RELAXED) !=
	    (uint64_t) nth)
		return false;
	PMV_WARN(FI_LOG_CORE, "fault injection: call %d at failure point %d "
		 "fails\n", nth, (int) point);
	return true;
}

/* Forgets the calls counted so far (unit tests arm points again). */
void pmv_fault_reset(void)
{
	for (int i = 0; i < PMV_FAULT_POINTS; i++)
		__atomic_store_n(&pmv_fault_calls[i], 0, __ATOMIC_RELAXED);
}

/* Unit tests move the engine's clock forward instead of waiting. */
uint64_t pmv_clock_skew_ms;

uint64_t pmv_us_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

uint64_t pmv_ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000 +
	       __atomic_load_n(&pmv_clock_skew_ms, __ATOMIC_RELAXED);
}
