/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: fault injection (test only), librpma's pattern: a parameter
 * per failure point names the N-th call that fails.  Off (0), a check is
 * one load.  And the clock both sides use, which unit tests move forward.
 * The parameters that arm them exist only in builds configured with
 * --enable-fault-injection (PMV_FAULT_INJECTION): an operator's `fi_info -e`
 * never lists them.
 */
#include <time.h>

#include "config.h"
#include "pmv_objects.h"

static uint64_t pmv_fault_calls[PMV_FAULT_POINTS];

#ifdef PMV_FAULT_INJECTION
/* Declares the test-only parameters (fault injection, persistence oracle). */
void pmv_fault_define_params(void)
{
	fi_param_define(&pmv_prov, "oracle", FI_PARAM_STRING,
			"Test only: a shared file where the agent records "
			"every range it persists (the persistence oracle). "
			"Default: unset.");
	fi_param_define(&pmv_prov, "fault_core_op", FI_PARAM_INT,
			"Test only: the N-th operation the commit engine posts "
			"to the core (a data write, flush read or request) "
			"fails with FI_EIO as if the core had refused it; the "
			"commit must end in an error return or completion, "
			"never a hang or a false success (default: 0, off)");
	fi_param_define(&pmv_prov, "fault_core_full", FI_PARAM_INT,
			"Test only: the N-th operation the commit engine posts "
			"to the core is refused with FI_EAGAIN as if the "
			"core's queue were full; the commit must wait and go "
			"later, or return -FI_EAGAIN with nothing sent, never "
			"lose a range (default: 0, off)");
	fi_param_define(&pmv_prov, "fault_persist", FI_PARAM_INT,
			"Test only: the N-th persist call of the agent (an "
			"msync or a CPU flush of one range) fails with FI_EIO "
			"as if msync had failed; the commit must end in an "
			"error completion, never a success (default: 0, off)");
	fi_param_define(&pmv_prov, "fault_alloc", FI_PARAM_INT,
			"Test only: the N-th allocation of the commit machinery "
			"(engine, internal operation slabs, scope, inbox, "
			"completion queue room, agent) fails as if memory had "
			"run out; the call must fail with an error, never crash "
			"or lose a completion (default: 0, off)");
	fi_param_define(&pmv_prov, "fault_mr_reg", FI_PARAM_INT,
			"Test only: the N-th registration pmemverbs makes with "
			"the core (an endpoint's inbox, an application's "
			"region) fails with FI_ENOMEM (default: 0, off)");
	fi_param_define(&pmv_prov, "fault_push", FI_PARAM_INT,
			"Test only: the N-th push of a profile table to a peer "
			"fails as if the core refused it (default: 0, off)");
	fi_param_define(&pmv_prov, "fault_close", FI_PARAM_INT,
			"Test only: the N-th close of a core object (endpoint, "
			"region, inbox region, ...) fails with FI_EBUSY and "
			"leaves it open; the wrapper must stay usable and "
			"close again later (default: 0, off)");
	fi_param_define(&pmv_prov, "fault_skip_extent", FI_PARAM_INT,
			"Test only: the agent skips persisting its N-th extent "
			"(0 = never), to show the persistence oracle catches "
			"it. Default 0.");
}

/* Reads the test-only parameters into pmv_params. */
void pmv_fault_read_params(void)
{
	fi_param_get_str(&pmv_prov, "oracle", &pmv_params.oracle);
	fi_param_get_int(&pmv_prov, "fault_skip_extent", &pmv_params.fault_skip);
	fi_param_get_int(&pmv_prov, "fault_core_op", &pmv_params.fault_core);
	fi_param_get_int(&pmv_prov, "fault_core_full",
			 &pmv_params.fault_core_full);
	fi_param_get_int(&pmv_prov, "fault_persist", &pmv_params.fault_persist);
	fi_param_get_int(&pmv_prov, "fault_alloc", &pmv_params.fault_alloc);
	fi_param_get_int(&pmv_prov, "fault_mr_reg", &pmv_params.fault_mr_reg);
	fi_param_get_int(&pmv_prov, "fault_push", &pmv_params.fault_push);
	fi_param_get_int(&pmv_prov, "fault_close", &pmv_params.fault_close);
}
#else
/* Not a test build: no test-only parameter exists. */
void pmv_fault_define_params(void)
{
}

void pmv_fault_read_params(void)
{
}
#endif

/* The parameter that arms a failure point. */
static int pmv_fault_nth(enum pmv_fault_point point)
{
	switch (point) {
	case PMV_FAULT_CORE_OP:
		return pmv_params.fault_core;
	case PMV_FAULT_CORE_FULL:
		return pmv_params.fault_core_full;
	case PMV_FAULT_PERSIST:
		return pmv_params.fault_persist;
	case PMV_FAULT_ALLOC:
		return pmv_params.fault_alloc;
	case PMV_FAULT_MR_REG:
		return pmv_params.fault_mr_reg;
	case PMV_FAULT_PUSH:
		return pmv_params.fault_push;
	case PMV_FAULT_CLOSE:
		return pmv_params.fault_close;
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

#ifdef PMV_FAULT_INJECTION
static __thread unsigned long pmv_clock_reads_here;
#define PMV_COUNT_CLOCK_READ() (pmv_clock_reads_here++)
#else
#define PMV_COUNT_CLOCK_READ() ((void) 0)
#endif

/* The clock reads this thread made so far (0 outside test builds). */
unsigned long pmv_clock_reads(void)
{
#ifdef PMV_FAULT_INJECTION
	return pmv_clock_reads_here;
#else
	return 0;
#endif
}

uint64_t pmv_us_now(void)
{
	struct timespec ts;

	PMV_COUNT_CLOCK_READ();
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

uint64_t pmv_ms_now(void)
{
	struct timespec ts;

	PMV_COUNT_CLOCK_READ();
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000 +
	       __atomic_load_n(&pmv_clock_skew_ms, __ATOMIC_RELAXED);
}

int pmv_ms_until(uint64_t deadline)
{
	uint64_t now = pmv_ms_now();

	return now >= deadline ? 0 : (int) (deadline - now);
}
