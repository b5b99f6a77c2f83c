/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: the timeline of commits (pmv_timeline.h), measurement
 * builds only.  A fixed array the marks fill once (no allocation, no
 * lock: one atomic add per mark); marks past its end are dropped.
 */
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "pmv_objects.h"
#include "pmv_timeline.h"

#ifdef PMV_TIMELINE
/* Marks kept: a million, about a hundred thousand commits. */
#define PMV_TIMELINE_MARKS (1u << 20)

static struct {
	uint64_t ns;
	uint32_t mark;
	uint32_t tid;
} pmv_timeline[PMV_TIMELINE_MARKS];
static unsigned pmv_timeline_n;
/* The marking thread's kernel id, asked once per thread. */
static __thread uint32_t pmv_timeline_tid;

uint64_t pmv_timeline_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t) t.tv_sec * 1000000000u + (uint64_t) t.tv_nsec;
}

void pmv_mark_at(enum pmv_mark m, uint64_t ns)
{
	unsigned i = __atomic_fetch_add(&pmv_timeline_n, 1, __ATOMIC_RELAXED);

	if (!pmv_timeline_tid)
		pmv_timeline_tid = (uint32_t) syscall(SYS_gettid);
	if (i < PMV_TIMELINE_MARKS) {
		pmv_timeline[i].ns = ns;
		pmv_timeline[i].mark = (uint32_t) m;
		pmv_timeline[i].tid = pmv_timeline_tid;
	}
}

/* FI_PMEMVERBS_TIMELINE, read when the provider loads: at exit the
 * core may have freed its parameters. */
static char pmv_timeline_path[4096];

/* Defines FI_PMEMVERBS_TIMELINE and reads it. */
void pmv_timeline_init(void)
{
	char *base = NULL;

	fi_param_define(&pmv_prov, "timeline", FI_PARAM_STRING,
			"Measurement builds only: where each process writes "
			"the time of every step of its commits at exit "
			"(PATH.PID, one mark, CLOCK_MONOTONIC nanoseconds "
			"and thread id per line). Default: unset.");
	if (!fi_param_get_str(&pmv_prov, "timeline", &base) && base)
		snprintf(pmv_timeline_path, sizeof(pmv_timeline_path),
			 "%s.%d", base, (int) getpid());
}

/* Writes the marks to FI_PMEMVERBS_TIMELINE.PID, if set: at exit, or
 * when libfabric unloads the plugin.  A failure goes to stderr: at exit
 * libfabric's log may be gone. */
__attribute__((destructor)) static void pmv_timeline_write(void)
{
	unsigned n = __atomic_load_n(&pmv_timeline_n, __ATOMIC_ACQUIRE);
	FILE *f;

	if (!pmv_timeline_path[0] || !n)
		return;
	f = fopen(pmv_timeline_path, "w");
	if (!f) {
		fprintf(stderr, "pmemverbs: cannot write the timeline to %s: "
			"name a writable directory in FI_PMEMVERBS_TIMELINE\n",
			pmv_timeline_path);
		return;
	}
	for (unsigned i = 0; i < n && i < PMV_TIMELINE_MARKS; i++)
		fprintf(f, "%u %llu %u\n", pmv_timeline[i].mark,
			(unsigned long long) pmv_timeline[i].ns,
			pmv_timeline[i].tid);
	fclose(f);
}
#endif
