/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * fi_pmem_lat: latency of durable RMA writes (FI_COMMIT_COMPLETE) to a
 * remote file mapping, next to the plain RMA operations that bound it.
 *
 *   target:    fi_pmem_lat [-p PROV] [-B PORT] [-S SIZES] [-f FILE] [-y] [-K]
 *                          [-w WAIT] [-P]
 *   initiator: fi_pmem_lat [-p PROV] -s SERVER_ADDR [-B PORT] [-S SIZES]
 *                          [-I ITERS] [-W WARMUP] [-m MODES] [-b BATCH]
 *                          [-i IDLE_US] [-P] [-D FILE] [-V FILE] [-O LOG]
 *                          [--csv]
 *
 * -P asks a provider other than pmemverbs for FI_RMA_PMEM (the core's own
 * FI_COMMIT_COMPLETE); -D, -V, -O check after each commit sample whether
 * it completed before persistence (see ../common/pmem_early.h).
 *
 * The target maps a file (MAP_SHARED; a temporary file unless -f is given)
 * large enough for the largest size twice, registers it for remote access
 * (with FI_RMA_PMEM on pmemverbs, whose agent thread then serves commits
 * without the application polling), sends its address, key, length and
 * persistence profile to the initiator and waits until the initiator says
 * "done".  The initiator measures, per size, the modes interleaved: one
 * sample of each mode in turn (the order of -m, reversed every other
 * iteration: A B B A A B ...), so that every mode sees
 * the same state of the machine and of the target (a loopback that
 * switches between a fast and a slow mode, the agent's spin, another
 * process) and a ratio of two modes compares like with like; one
 * operation at a time (each waits for its completions before the next
 * starts).  The modes:
 *
 *   write       fi_write of SIZE bytes (no durability)
 *   read        fi_read of SIZE bytes
 *   read8       fi_read of 8 bytes: the floor of a one-round-trip commit
 *   read8_ctl   the same as read8: with -m read8,read8_ctl, the A/A control
 *               of the interleaved measurement (its ratio must be ~1.00)
 *   write_read  fi_write of SIZE, then an 8-byte fi_read (the naive recipe)
 *   commit      fi_writemsg(FI_COMMIT_COMPLETE) of SIZE bytes
 *   delivery    fi_writemsg(FI_DELIVERY_COMPLETE) of SIZE bytes (a commit
 *               under FI_PMEMVERBS_DELIVERY_IS_COMMIT=1)
 *   delivery_data  the same with FI_REMOTE_CQ_DATA: the target's receive
 *               CQ gets a completion for each (the target skips them)
 *   batch       BATCH fi_writes of SIZE, then one pure-flush commit
 *               (iov_count 0, rma_iov {addr, 0, key}); pmemverbs only
 *   scatter     as batch, the writes spread over the whole region (one
 *               in each BATCH-th of it): a scope of distant ranges
 *
 * With -i IDLE_US the initiator sleeps (nanosleep) that long before each
 * iteration, warmup included, outside the timed interval, in every mode:
 * the operation then finds the target idle (its threads asleep), as an
 * occasional commit does; read8 is measured the same way, so the ratio of
 * the two stays a like-for-like comparison.
 *
 * It prints count, p50, p99, max and mean in microseconds (nearest-rank
 * percentiles of the sorted samples; warmup excluded), as a table or, with
 * --csv, as rows "provider,profile,mode,size,iters,p50_us,p99_us,max_us,
 * mean_us,method" (method: what pmemverbs commits took, for the commit
 * mode).  Offsets rotate through the region in 64-byte-aligned steps so
 * consecutive operations touch different lines.  On the target,
 * PMEM2_FORCE_GRANULARITY=page|cache_line|byte selects the pmemverbs
 * profile (PAGE, DMP, MHP) for an ordinary file.
 *
 * Every wait is bounded: 10 s per measured operation, 20 s to connect, one
 * hour for the target's whole session.  Exit status: 0 on success, 1 on a
 * failure, 2 on a usage error.
 *
 * Files: fi_pmem_lat.h (what they share), fi_pmem_lat_modes.c (posting and
 * the modes), fi_pmem_lat_opts.c (options); here the target, the
 * measurement, its output and main.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fi_pmem_lat.h"

/* ---------------------------------------------------------------- target */

/* Bytes the target maps: the largest size twice, at least MIN_REGION. */
static size_t region_len(const struct options *opts)
{
	size_t len = MIN_REGION;
	int i;

	for (i = 0; i < opts->pm.nsizes; i++)
		if (2 * opts->pm.sizes[i] > len)
			len = 2 * opts->pm.sizes[i];
	return len;
}

/* Offers the region to the initiator and stays until it is done. */
/* pm_run_target's callback: maps the region's file, then serves. */
static int map_and_serve(const void *arg, const struct pm_fabric *res,
			 struct pm_conn *conn, struct pm_file *file)
{
	const struct options *opts = arg;
	int ret = pm_map_file(opts->pm.file, "fi_pmem_lat", region_len(opts),
			      false, file);

	return ret ? ret : pm_serve_region(res, conn, file);
}

static int run_target(const struct options *opts)
{
	return pm_run_target(opts->pm.prov, opts->pm.port,
			     2 * MAX_OPS_PER_SAMPLE, map_and_serve, opts);
}

/* ---------------------------------------------- initiator: measurement */

/* One sample: posts the mode's operations, waits for all; returns ns. */
static int time_sample(struct bench *b, const struct mode *mode, size_t size,
		       uint64_t index, int64_t *elapsed)
{
	int64_t start = pm_now_ns();
	int ret;

	b->posted = b->completed = 0;
	b->deadline = start + PM_OP_TIMEOUT_NS;
	ret = mode->post(b, size, index);
	if (!ret)
		ret = wait_for_sample(b);
	*elapsed = pm_now_ns() - start;
	return ret;
}

/* Sleeps us microseconds (resuming after signals), outside any timing. */
static void idle_for(long us)
{
	struct timespec left = { us / 1000000, (us % 1000000) * 1000 };

	while (nanosleep(&left, &left) && errno == EINTR)
		;
}

/* After a commit sample (untimed): was its range persistent (-D, -O)? */
static void check_early(struct bench *b, const struct mode *mode, size_t size,
			uint64_t index)
{
	uint64_t off;

	if (!pm_early_enabled(&b->early) || mode->post != post_commit_write)
		return;
	off = rotating_offset(b, size, index);
	pm_early_check(&b->early, b->region.key, b->region.addr + off, off,
		       b->conn->src, size);
}

/*
 * The common timing loop of one size: warmup, then opts->iters recorded
 * samples of every mode, the modes taking turns sample by sample, in the
 * order of -m on even iterations and the reverse on odd ones, so that no
 * mode always follows the same one (each after opts->idle_us of sleep
 * when that is set); mode m's samples go to samples[m * iters ...].
 */
static int measure(struct bench *b, size_t size, int64_t *samples)
{
	const struct options *opts = b->opts;
	long total = opts->warmup + opts->iters, i;
	int64_t elapsed;
	int k, m, ret;

	for (i = 0; i < total; i++) {
		for (k = 0; k < opts->nmodes; k++) {
			m = i % 2 ? opts->nmodes - 1 - k : k;
			if (opts->idle_us)
				idle_for(opts->idle_us);
			ret = time_sample(b, opts->modes[m], size, (uint64_t) i,
					  &elapsed);
			if (ret) {
				pm_complain("%s of %zu bytes failed at "
					    "iteration %ld",
					    opts->modes[m]->name, size, i);
				return ret;
			}
			if (i >= opts->warmup)
				samples[m * opts->iters + i - opts->warmup] =
					elapsed;
			check_early(b, opts->modes[m], size, (uint64_t) i);
		}
	}
	return 0;
}

static void print_header(const struct options *opts)
{
	if (opts->pm.csv)
		printf("provider,profile,mode,size,iters,p50_us,p99_us,max_us,"
		       "mean_us,method\n");
	else
		printf("%-10s %-8s %-10s %9s %8s %10s %10s %10s %10s %s\n",
		       "provider", "profile", "mode", "size", "iters",
		       "p50_us", "p99_us", "max_us", "mean_us", "method");
}

static void print_row(const struct bench *b, const struct mode *mode,
		      size_t size, const struct pm_stats *s)
{
	const char *fmt = b->opts->pm.csv ?
		"%s,%s,%s,%zu,%ld,%.2f,%.2f,%.2f,%.2f,%s\n" :
		"%-10s %-8s %-10s %9zu %8ld %10.2f %10.2f %10.2f %10.2f %s\n";
	/* the method the commits took, known once one has completed */
	const char *method = strcmp(mode->name, "commit") ? PM_NO_PROFILE :
		pm_commit_method(b->res, b->conn->ep, b->region.key);

	printf(fmt, b->opts->pm.prov, b->region.profile, mode->name, size,
	       b->opts->iters, s->p50_us, s->p99_us, s->max_us, s->mean_us,
	       method);
	fflush(stdout);
}

/* Measures every size, its modes interleaved, printing as it goes. */
static int measure_all(struct bench *b)
{
	const struct options *opts = b->opts;
	int64_t *samples = calloc((size_t) (opts->iters * opts->nmodes),
				  sizeof(*samples));
	struct pm_stats s;
	int m, i, ret = 0;

	if (!samples)
		return pm_check(-FI_ENOMEM, "allocating samples");
	print_header(opts);
	for (i = 0; !ret && i < opts->pm.nsizes; i++) {
		ret = measure(b, opts->pm.sizes[i], samples);
		for (m = 0; !ret && m < opts->nmodes; m++) {
			pm_summarize(samples + m * opts->iters, opts->iters, &s);
			print_row(b, opts->modes[m], opts->pm.sizes[i], &s);
		}
	}
	free(samples);
	return ret;
}

/* ------------------------------------------ initiator: connection setup */

static size_t largest_size(const struct options *opts)
{
	size_t max = PROBE_SIZE;
	int i;

	for (i = 0; i < opts->pm.nsizes; i++)
		if (opts->pm.sizes[i] > max)
			max = opts->pm.sizes[i];
	return max;
}

/* Receives the target's region and checks that every size fits in it. */
static int receive_region(const struct options *opts, struct pm_conn *conn,
			  struct pm_region *region)
{
	int ret = pm_receive_region(conn, region);

	if (!ret && region->len < largest_size(opts) + PM_LINE_SIZE) {
		pm_complain("the target's region (%" PRIu64 " bytes) is too "
			    "small for %zu-byte operations; give the target "
			    "the same -S", region->len, largest_size(opts));
		return -FI_EINVAL;
	}
	return ret;
}

static int run_initiator(const struct options *opts)
{
	const struct pm_opts *pm = &opts->pm;
	struct pm_fabric res = { 0 };
	struct pm_conn conn = { 0 };
	struct bench *b = calloc(1, sizeof(*b));
	int ret = b ? 0 : pm_check(-FI_ENOMEM, "allocating the benchmark");

	if (!ret)
		ret = pm_open_fabric(pm->prov, pm->server, pm->port, &res);
	if (!ret)
		ret = pm_connect(&res, pm->server, pm->port,
				 largest_size(opts), 2 * MAX_OPS_PER_SAMPLE,
				 &conn);
	if (!ret)
		ret = receive_region(opts, &conn, &b->region);
	if (!ret) {
		pm_say("%s to %s port %s: region of %" PRIu64 " bytes, "
		       "profile %s, %ld us idle before each operation",
		       pm->prov, pm->server, pm->port, b->region.len,
		       b->region.profile, opts->idle_us);
		b->opts = opts;
		b->res = &res;
		b->conn = &conn;
		ret = pm_early_open(&b->early, opts->dirty_file,
				    opts->placed_file, opts->oracle_file);
		if (ret)
			ret = pm_check(-FI_EINVAL, "opening -D, -V or -O's file");
		if (!ret)
			ret = measure_all(b);
		pm_early_report(&b->early, pm->prov);
		pm_early_close(&b->early);
		pm_report_counters(&res, conn.ep);
	}
	if (!ret)
		ret = pm_send_ctrl(&conn, PM_DONE_TEXT, strlen(PM_DONE_TEXT),
				   "sending \"done\"");
	if (!ret)
		fi_shutdown(conn.ep, 0); /* best effort; closing follows */
	pm_close_conn(&conn);
	pm_close_fabric(&res);
	free(b);
	return ret;
}

int main(int argc, char **argv)
{
	struct options opts;
	int ret;

	pm_role = "[fi_pmem_lat]";
	if (!lat_parse_options(argc, argv, &opts)) {
		lat_usage(argv[0]);
		return 2;
	}
	pm_role = opts.pm.server ? "[initiator]" : "[target]";
	ret = pm_check_ep_type(opts.pm.prov, opts.ep_type);
	if (ret != PM_EXIT_PASS)
		return ret;
	/* Every failure has already been reported where it happened. */
	ret = opts.pm.server ? run_initiator(&opts) : run_target(&opts);
	return ret ? 1 : 0;
}
