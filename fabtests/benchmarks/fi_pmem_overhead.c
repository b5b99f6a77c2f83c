/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * fi_pmem_overhead: the pass-through cost of pmemverbs, as a ping-pong like
 * fi_pingpong's run over the core provider and over pmemverbs in the same
 * pair of processes, interleaved in short blocks.
 *
 *   server: fi_pmem_overhead [-e msg|rdm] [-c CORE] [-P SECOND] [-B PORT]
 *                            [-S SIZES]
 *                            [-b BLOCKS] [-I ITERS] [-W WARMUP]
 *   client: fi_pmem_overhead [the same options] [--csv] -s SERVER_ADDR
 *
 * Both processes open two stacks: the core alone (CORE, default tcp; for
 * -e rdm "CORE;ofi_rxm") and pmemverbs layered on it ("pmemverbs", for rdm
 * "pmemverbs;ofi_rxm"), each with its own fabric, domain, endpoint and CQ,
 * connected on ports PORT and PORT + 1.  -c and -P name the two stacks'
 * providers: -c pmemverbs -P tcp swaps their places, -P tcp makes both the
 * core (an A/A control: what two identical stacks differ by in one process
 * pair).  For each size the client sends a
 * message and waits for the echo, ITERS times per block, in BLOCKS blocks
 * whose stack follows the pattern core, pmemverbs, pmemverbs, core (ABBA),
 * after WARMUP blocks that are not counted.  Both sides follow the same
 * schedule (same options), so each polls only the active stack's CQ.
 *
 * Separate runs of fi_pingpong on a shared 2-core machine differ by 5-15%
 * from one run to the next; here the two stacks are sampled a millisecond
 * apart for the whole run, so drift hits both alike.  Messages up to the
 * inject size go with fi_inject, larger ones with fi_send, as fi_pingpong
 * does.  The client times every round trip; per size it prints the median
 * round trip of each stack over all its blocks, their ratio (second /
 * first), and the median over adjacent block pairs (one block of each) of
 * the ratio of their medians with its 95% bootstrap interval (2000
 * resamples), which says whether the run resolves a 2% difference.
 * Latency is reported as half the round trip, as fi_pingpong's usec/xfer.
 *
 * Exit status: 0 on success, 1 on a failure, 2 on a usage error.  Every
 * wait is bounded (10 s per operation, 20 s to connect).
 *
 * Files: fi_pmem_overhead.h (what they share), fi_pmem_overhead_stack.c
 * (one stack and its ping-pong), fi_pmem_overhead_stats.c (statistics,
 * report), fi_pmem_overhead_opts.c (options); here the blocks of a size and
 * main.
 */
#include "fi_pmem_overhead.h"

/* The blocks of one size, on both sides; the client reports. */
static int run_size(const struct options *o, struct stack *st, size_t size)
{
	long total = o->warmup + o->blocks, b, i;
	struct result r = { 0 };
	double *block = malloc(o->iters * sizeof(*block));
	int64_t ns = 0;
	int ret = 0;

	r.block_median = malloc(o->blocks * sizeof(double));
	for (i = 0; i < NSTACKS; i++)
		r.samples[i] = malloc(o->blocks / 2 * o->iters * sizeof(int64_t));
	if (!block || !r.block_median || !r.samples[FIRST] || !r.samples[SECOND])
		ret = pm_check(-FI_ENOMEM, "allocating the samples");
	for (b = 0; b < total && !ret; b++) {
		struct stack *s = &st[stack_of_block(b)];

		for (i = 0; i < o->iters && !ret; i++) {
			ret = ping(s, size, o->server != NULL, &ns);
			block[i] = (double) ns;
			if (b >= o->warmup && o->server)
				r.samples[stack_of_block(b)]
					 [r.nsamples[stack_of_block(b)]++] = ns;
		}
		/* the last send of a block completes before the other stack's
		 * block: a large ofi_rxm message is read by the peer, whose
		 * reads only this side's progress on this stack serves */
		if (!ret && s->tx_busy)
			ret = wait_cq(s, false);
		if (b >= o->warmup)
			r.block_median[b - o->warmup] = median(block, o->iters);
	}
	if (!ret && o->server)
		report(o, size, &r);
	for (i = 0; i < NSTACKS; i++)
		free(r.samples[i]);
	free(r.block_median);
	free(block);
	return ret;
}

/* Opens and connects both stacks: the core on PORT, pmemverbs on PORT+1. */
static int open_stacks(const struct options *o, struct stack *st)
{
	char port[16];
	int i, ret;

	for (i = 0; i < NSTACKS; i++) {
		snprintf(st[i].prov, sizeof(st[i].prov), "%s",
			 i == FIRST ? o->core : o->second);
		snprintf(port, sizeof(port), "%d", atoi(o->port) + i);
		if ((ret = stack_open(&st[i], o, port)) ||
		    (ret = stack_connect(&st[i], o)))
			return ret;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct stack st[NSTACKS] = { 0 };
	struct options o;
	int i, ret;

	if (parse_options(argc, argv, &o)) {
		usage();
		return PM_EXIT_USAGE;
	}
	ret = open_stacks(&o, st);
	if (!ret && o.server && !o.csv)
		printf("%-4s %8s %12.12s %12.12s %8s %10s %s\n", "ep", "size",
		       o.core, o.second, "ratio", "pair_ratio", "95% interval");
	if (!ret && o.server && o.csv)
		printf("ep,size,first,second,first_usec,second_usec,ratio,"
		       "pair_ratio_median,pair_ratio_ci95_lo,"
		       "pair_ratio_ci95_hi,blocks,iters_per_block\n");
	for (i = 0; !ret && i < o.nsizes; i++)
		ret = run_size(&o, st, o.sizes[i]);
	for (i = NSTACKS - 1; i >= 0; i--)
		stack_close(&st[i]);
	return ret ? PM_EXIT_FAIL : PM_EXIT_PASS;
}
