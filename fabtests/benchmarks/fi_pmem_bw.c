/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * fi_pmem_bw: bandwidth of RMA writes to a remote file mapping with and
 * without durability (FI_COMMIT_COMPLETE), per write size and per number
 * of writes per commit.
 *
 *   target:    fi_pmem_bw [-p PROV] [-e msg] [-B PORT] [-f FILE]
 *   initiator: fi_pmem_bw [-p PROV] [-e msg] -s SERVER_ADDR [-B PORT]
 *                         [-S SIZES] [-b BATCHES] [-w WINDOW] [-m MODES]
 *                         [-I WRITES] [-W WARMUP] [-R ROUNDS] [-T MS]
 *                         [-P] [--csv]
 *
 * -P (both sides, a provider other than pmemverbs) asks the core for
 * FI_RMA_PMEM: core_commit is then its own commit on persistent memory.
 * The initiator asks the target for a region (at least 16 MiB, four times
 * the largest size); the target maps a file (MAP_SHARED; a temporary file
 * unless -f is given), registers it (with FI_RMA_PMEM on pmemverbs) and
 * sends its address, key and persistence profile back.  The initiator then
 * streams writes to consecutive 64-byte-aligned offsets that wrap around
 * the region, keeping up to WINDOW operations outstanding, and reports
 * per (mode, size, batch) the bytes written, the time from the first post
 * to the last completion, MB/s (10^6 bytes per second) and writes per
 * second.  Modes:
 *
 *   write         fi_write only: no durability (batch 0 in the output)
 *   commit        BATCH-1 fi_writes, then a write by
 *                 fi_writemsg(FI_COMMIT_COMPLETE): the batch is durable
 *                 when that write completes
 *   commit_flush  BATCH fi_writes, then a pure flush (fi_writemsg with
 *                 iov_count 0 and FI_COMMIT_COMPLETE); pmemverbs only
 *   core_commit   every write by fi_writemsg(FI_COMMIT_COMPLETE) (batch
 *                 1): with -p tcp, the core's own commit
 *
 * BATCHES is a list of numbers and "mib", which stands for one commit per
 * MiB written (ceil(1 MiB / SIZE) writes).  -T MS ends a measurement (at
 * a batch boundary) once it has run MS milliseconds, and its warmup after
 * MS / 4, so that slow modes stay bounded in time; the bytes and seconds
 * reported are those of the writes made.  ROUNDS repeat the whole matrix,
 * interleaved, so that drift on the machine hits every mode alike; each
 * measurement is one row.  On the target, PMEM2_FORCE_GRANULARITY=
 * page|cache_line|byte selects the pmemverbs profile (PAGE, DMP, MHP).
 *
 * Exit status: 0 on success, 1 on a failure, 2 on a usage error, 61
 * (FI_ENODATA, a fabtests skip) for -e rdm.
 */
#include <endian.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fi_pmem_bw.h"

#define SETUP_MAGIC 0x31305742564d50ULL /* "PMVBW01" */

/* The initiator's request for a region, little-endian. */
struct setup_msg {
	uint64_t magic;
	uint64_t region_len;
};

static const struct mode all_modes[] = {
	{ "write", false, false, false, 0 },
	{ "commit", false, true, false, 0 },
	{ "commit_flush", true, true, true, 0 },
	{ "core_commit", false, false, false, 1 },
};

const struct mode *bw_find_mode(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(all_modes) / sizeof(all_modes[0]); i++)
		if (!strcmp(all_modes[i].name, name))
			return &all_modes[i];
	return NULL;
}

/* The initiator's state while it streams. */
struct bench {
	const struct options *opts;
	struct pm_conn *conn;
	struct pm_region region;
	struct fi_context2 ctx[MAX_WINDOW];
	int free_slots[MAX_WINDOW];
	int nfree;
	long outstanding;
	int64_t deadline; /* no progress past this: a failure */
};

struct result {
	uint64_t bytes;
	long writes;
	double seconds;
};

/* ------------------------------------------------------------ initiator */

static uint64_t offset_of(const struct bench *b, size_t size, uint64_t index)
{
	uint64_t stride = pm_round_up(size, PM_LINE_SIZE);
	uint64_t slots = (b->region.len - size) / stride + 1;

	return (index % slots) * stride;
}

/* Reads the completions that are there; each frees its context slot. */
static int reap(struct bench *b)
{
	struct fi_cq_data_entry entries[16];
	ssize_t n, i;
	long slot;

	n = fi_cq_read(b->conn->tx_cq, entries, 16);
	if (n == -FI_EAGAIN)
		return 0;
	if (n == -FI_EAVAIL)
		return pm_report_cq_error(b->conn->tx_cq, "RMA write");
	if (n < 0)
		return pm_check(n, "fi_cq_read");
	for (i = 0; i < n; i++) {
		slot = (struct fi_context2 *) entries[i].op_context - b->ctx;
		if (slot < 0 || slot >= b->opts->window ||
		    !(entries[i].flags & FI_RMA)) {
			pm_complain("completion of an unexpected operation "
				    "(flags 0x%" PRIx64 ")", entries[i].flags);
			return -FI_EOTHER;
		}
		b->free_slots[b->nfree++] = (int) slot;
	}
	b->outstanding -= (long) n;
	b->deadline = pm_now_ns() + PM_OP_TIMEOUT_NS;
	return 0;
}

/* Waits for a free slot in the window, posts, retries while busy. */
static int post(struct bench *b, enum pm_rma_op kind, size_t size,
		uint64_t offset)
{
	ssize_t ret = 0;
	int slot;

	for (;;) {
		if (b->nfree) {
			slot = b->free_slots[b->nfree - 1];
			ret = pm_post_rma(b->conn, &b->region, kind, size,
					  offset, &b->ctx[slot]);
			if (!ret) {
				b->nfree--;
				b->outstanding++;
				return 0;
			}
			if (ret != -FI_EAGAIN)
				return pm_check(ret, "posting an RMA write");
		}
		if (pm_past(b->deadline)) {
			pm_complain("no progress for %lld s (%ld operations "
				    "outstanding)", PM_OP_TIMEOUT_NS /
				    PM_NS_PER_S, b->outstanding);
			return -FI_ETIMEDOUT;
		}
		ret = reap(b);
		if (ret)
			return (int) ret;
	}
}

static int drain(struct bench *b)
{
	int ret = 0;

	while (!ret && b->outstanding) {
		if (pm_past(b->deadline)) {
			pm_complain("%ld operations still incomplete after "
				    "%lld s", b->outstanding,
				    PM_OP_TIMEOUT_NS / PM_NS_PER_S);
			return -FI_ETIMEDOUT;
		}
		ret = reap(b);
	}
	return ret;
}

/*
 * nwrites writes (a multiple of batch) of size, batch 0: no commit; or
 * fewer, whole batches, if limit_ns (0: none) runs out first.  The writes
 * made in *done.
 */
static int stream(struct bench *b, const struct mode *mode, size_t size,
		  long batch, long nwrites, int64_t limit_ns, uint64_t *index,
		  long *done, int64_t *elapsed)
{
	int64_t start = pm_now_ns();
	bool last;
	long i;
	int ret = 0;

	b->deadline = start + PM_OP_TIMEOUT_NS;
	for (i = 0; !ret && i < nwrites; i++) {
		if (limit_ns && (batch <= 1 || i % batch == 0) && i &&
		    pm_now_ns() - start > limit_ns)
			break;
		last = batch > 0 && i % batch == batch - 1;
		if (mode->flush || !last)
			ret = post(b, PM_RMA_WRITE, size,
				   offset_of(b, size, (*index)++));
		else
			ret = post(b, PM_RMA_COMMIT, size,
				   offset_of(b, size, (*index)++));
		if (!ret && mode->flush && last)
			ret = post(b, PM_RMA_FLUSH, 0, 0);
	}
	if (!ret)
		ret = drain(b);
	*elapsed = pm_now_ns() - start;
	*done = i;
	return ret;
}

static long resolve_batch(long batch, size_t size)
{
	return batch == BATCH_MIB ? (long) ((MIB + size - 1) / size) : batch;
}

/* Writes per measurement, a multiple of batch. */
static long writes_for(const struct options *opts, size_t size, long batch)
{
	long n = opts->writes;

	if (!n) {
		n = (long) (DEFAULT_BYTES / size);
		n = n < MIN_WRITES ? MIN_WRITES : n > MAX_WRITES ?
		    MAX_WRITES : n;
	}
	if (batch > 1)
		n = (n + batch - 1) / batch * batch;
	return n;
}

static long warmup_for(const struct options *opts, long writes, long batch)
{
	long n = opts->warmup >= 0 ? opts->warmup : writes / 8;

	if (batch > 1)
		n = (n + batch - 1) / batch * batch;
	return n;
}

static void print_header(const struct options *opts)
{
	if (opts->pm.csv)
		printf("provider,profile,mode,size,batch,bytes,seconds,mbps,"
		       "ops_per_s\n");
	else
		printf("%-10s %-8s %-13s %9s %6s %12s %9s %10s %11s\n",
		       "provider", "profile", "mode", "size", "batch", "bytes",
		       "seconds", "MB/s", "ops/s");
}

static void print_row(const struct bench *b, const struct mode *mode,
		      size_t size, long batch, const struct result *r)
{
	const char *fmt = b->opts->pm.csv ?
		"%s,%s,%s,%zu,%ld,%" PRIu64 ",%.6f,%.2f,%.1f\n" :
		"%-10s %-8s %-13s %9zu %6ld %12" PRIu64 " %9.4f %10.2f "
		"%11.1f\n";

	printf(fmt, b->opts->pm.prov, b->region.profile, mode->name, size,
	       batch, r->bytes, r->seconds, (double) r->bytes / r->seconds / 1e6,
	       (double) r->writes / r->seconds);
	fflush(stdout);
}

/* Warmup, then one measurement of (mode, size, batch). */
static int measure(struct bench *b, const struct mode *mode, size_t size,
		   long batch, uint64_t *index)
{
	long writes = writes_for(b->opts, size, batch);
	long warmup = warmup_for(b->opts, writes, batch);
	int64_t limit = b->opts->limit_ms * PM_NS_PER_MS;
	struct result r;
	int64_t elapsed;
	long done;
	int ret = 0;

	if (warmup)
		ret = stream(b, mode, size, batch, warmup, limit / 4, index,
			     &done, &elapsed);
	if (!ret)
		ret = stream(b, mode, size, batch, writes, limit, index,
			     &done, &elapsed);
	if (ret) {
		pm_complain("%s of %zu bytes (batch %ld) failed", mode->name,
			    size, batch);
		return ret;
	}
	r.writes = done;
	r.bytes = (uint64_t) done * size;
	r.seconds = (double) elapsed / 1e9;
	print_row(b, mode, size, batch, &r);
	return 0;
}

/* The batches of a batched mode for size, without repeats. */
static int batches_for(const struct options *opts, size_t size, long *out)
{
	int n = 0, i, j;
	long batch;

	for (i = 0; i < opts->nbatches; i++) {
		batch = resolve_batch(opts->batches[i], size);
		for (j = 0; j < n && out[j] != batch; j++)
			;
		if (j == n)
			out[n++] = batch;
	}
	return n;
}

/* Every (mode, size, batch), ROUNDS times, printing as it goes. */
static int measure_all(struct bench *b)
{
	const struct options *opts = b->opts;
	const size_t *sizes = opts->pm.sizes;
	long batches[MAX_BATCHES];
	uint64_t index = 0;
	int r, m, s, i, n, ret = 0;
	const struct mode *mode;

	print_header(opts);
	for (r = 0; !ret && r < opts->rounds; r++) {
		for (s = 0; !ret && s < opts->pm.nsizes; s++) {
			for (m = 0; !ret && m < opts->nmodes; m++) {
				mode = opts->modes[m];
				if (!mode->batched) {
					ret = measure(b, mode, sizes[s],
						      mode->fixed_batch,
						      &index);
					continue;
				}
				n = batches_for(opts, sizes[s], batches);
				for (i = 0; !ret && i < n; i++)
					ret = measure(b, mode, sizes[s],
						      batches[i], &index);
			}
		}
	}
	return ret;
}

static size_t largest_size(const struct options *opts)
{
	size_t max = 0;
	int i;

	for (i = 0; i < opts->pm.nsizes; i++)
		if (opts->pm.sizes[i] > max)
			max = opts->pm.sizes[i];
	return max;
}

static size_t wanted_region(const struct options *opts)
{
	size_t len = 4 * largest_size(opts);

	return len < MIN_REGION ? MIN_REGION : len;
}

static int run_initiator(const struct options *opts)
{
	const struct pm_opts *pm = &opts->pm;
	struct pm_fabric res = { 0 };
	struct pm_conn conn = { 0 };
	struct bench *b = calloc(1, sizeof(*b));
	struct setup_msg setup = {
		.magic = htole64(SETUP_MAGIC),
		.region_len = htole64(wanted_region(opts)),
	};
	int ret = b ? 0 : pm_check(-FI_ENOMEM, "allocating the benchmark");
	long i;

	if (!ret)
		ret = pm_open_fabric(pm->prov, pm->server, pm->port, &res);
	if (!ret)
		ret = pm_connect(&res, pm->server, pm->port,
				 largest_size(opts), 2 * MAX_WINDOW, &conn);
	if (!ret)
		ret = pm_send_ctrl(&conn, &setup, sizeof(setup),
				   "asking for the region");
	if (!ret)
		ret = pm_receive_region(&conn, &b->region);
	if (!ret && b->region.len < wanted_region(opts)) {
		pm_complain("the target's region (%" PRIu64 " bytes) is too "
			    "small", b->region.len);
		ret = -FI_EINVAL;
	}
	if (!ret) {
		pm_say("%s to %s port %s: region of %" PRIu64 " bytes, "
		       "profile %s, window %ld", pm->prov, pm->server,
		       pm->port, b->region.len, b->region.profile,
		       opts->window);
		b->opts = opts;
		b->conn = &conn;
		for (i = 0; i < opts->window; i++)
			b->free_slots[b->nfree++] = (int) (opts->window - 1 - i);
		ret = measure_all(b);
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

/* ---------------------------------------------------------------- target */

/* pm_run_target's callback. */
static int serve_initiator(const void *arg, const struct pm_fabric *res,
			   struct pm_conn *conn, struct pm_file *file)
{
	const struct options *opts = arg;
	struct setup_msg setup;
	uint64_t len;
	int ret = pm_recv_ctrl(conn, pm_now_ns() + PM_CM_TIMEOUT_NS,
			       "receiving the initiator's request", &setup,
			       sizeof(setup));

	if (ret)
		return ret;
	len = le64toh(setup.region_len);
	if (le64toh(setup.magic) != SETUP_MAGIC || len < PM_LINE_SIZE ||
	    len > MAX_REGION) {
		pm_complain("unexpected request from the initiator (is it "
			    "fi_pmem_bw?)");
		return -FI_EINVAL;
	}
	ret = pm_map_file(opts->pm.file, "fi_pmem_bw", (size_t) len, false,
			  file);
	return ret ? ret : pm_serve_region(res, conn, file);
}

static int run_target(const struct options *opts)
{
	return pm_run_target(opts->pm.prov, opts->pm.port, 16, serve_initiator,
			     opts);
}

int main(int argc, char **argv)
{
	struct options opts;
	int ret;

	if (!bw_parse_options(argc, argv, &opts)) {
		bw_usage(argv[0]);
		return PM_EXIT_USAGE;
	}
	pm_role = opts.pm.server ? "[initiator]" : "[target]";
	ret = pm_check_ep_type(opts.pm.prov, opts.ep_type);
	if (ret != PM_EXIT_PASS)
		return ret;
	ret = opts.pm.server ? run_initiator(&opts) : run_target(&opts);
	return ret ? PM_EXIT_FAIL : PM_EXIT_PASS;
}
