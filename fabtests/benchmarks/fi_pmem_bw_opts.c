/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* fi_pmem_bw: usage and options (see fi_pmem_bw.c); the options it shares
 * with fi_pmem_lat are parsed by pmem_opts.c. */
#include <stdio.h>
#include <string.h>

#include "fi_pmem_bw.h"

void bw_usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [-p PROV] [-e msg|rdm] [-s SERVER_ADDR] [-B PORT] "
		"[-S SIZE[,SIZE...]]\n"
		"        [-b BATCH[,BATCH...]] [-w WINDOW] [-m MODE[,MODE...]] "
		"[-I WRITES] [-W WARMUP]\n"
		"        [-R ROUNDS] [-T MS] [-f FILE] [-P] [--csv]\n"
		"  -P  both sides, not pmemverbs: ask the core for FI_RMA_PMEM\n"
		"  without -s: the target; with -s: the initiator, which "
		"measures\n"
		"  -p  provider (%s); -e endpoint type, msg or rdm (msg);\n"
		"      -B port (%s)\n"
		"  -S  write sizes (%s)\n"
		"  -b  writes per commit, numbers or \"mib\" for one commit "
		"per MiB (%s)\n"
		"  -w  operations outstanding (%d)\n"
		"  -m  modes among write,commit,commit_flush,core_commit "
		"(%s; %s off pmemverbs)\n"
		"  -I  writes per measurement (256 MiB worth, %d..%d); -W "
		"warmup writes (WRITES/8)\n"
		"  -R  rounds of the whole matrix (1)\n"
		"  -T  stop a measurement after MS ms, at a batch boundary "
		"(0: no limit)\n"
		"  -f  target's file (default: a temporary file)\n",
		prog, DEFAULT_PROVIDER, DEFAULT_PORT, DEFAULT_SIZES,
		DEFAULT_BATCHES, DEFAULT_WINDOW, DEFAULT_PMEM_MODES,
		DEFAULT_CORE_MODES, MIN_WRITES, MAX_WRITES);
}

/* pm_opts_list's callback: one -b batch, a number or "mib". */
static bool add_batch(const char *item, void *arg)
{
	struct options *opts = arg;
	long batch = BATCH_MIB;

	if (opts->nbatches == MAX_BATCHES ||
	    (strcmp(item, "mib") && !pm_parse_long(item, 1, MAX_BATCH, &batch)))
		return false;
	opts->batches[opts->nbatches++] = batch;
	return true;
}

static bool parse_batches(char *list, struct options *opts)
{
	opts->nbatches = 0;
	return pm_opts_list(list, add_batch, opts);
}

/* pm_opts_list's callback: one -m mode. */
static bool add_mode(const char *name, void *arg)
{
	struct options *opts = arg;
	const struct mode *mode = bw_find_mode(name);

	if (!mode) {
		fprintf(stderr, "unknown mode \"%s\"\n", name);
		return false;
	}
	if (opts->nmodes == MAX_MODES)
		return false;
	opts->modes[opts->nmodes++] = mode;
	return true;
}

static bool parse_modes(char *list, struct options *opts)
{
	opts->nmodes = 0;
	return pm_opts_list(list, add_mode, opts);
}

/* Parses one of fi_pmem_bw's own option letters; false if invalid. */
static bool parse_option(int c, char *arg, void *prog_opts)
{
	struct options *opts = prog_opts;

	switch (c) {
	case 'e': return pm_parse_ep_type(arg, &opts->ep_type);
	case 'b': return parse_batches(arg, opts);
	case 'w': return pm_parse_long(arg, 1, MAX_WINDOW, &opts->window);
	case 'm': return parse_modes(arg, opts);
	case 'I': return pm_parse_long(arg, 1, 100000000L, &opts->writes);
	case 'W': return pm_parse_long(arg, 0, 100000000L, &opts->warmup);
	case 'R': return pm_parse_long(arg, 1, MAX_ROUNDS, &opts->rounds);
	case 'T': return pm_parse_long(arg, 0, 3600000L, &opts->limit_ms);
	default: return false;
	}
}

/* Without -m, the default modes of the provider; then every mode must
 * run on it. */
static bool options_consistent(struct options *opts)
{
	char pmem_modes[] = DEFAULT_PMEM_MODES;
	char core_modes[] = DEFAULT_CORE_MODES;
	int i;

	if (!opts->nmodes &&
	    !parse_modes(pm_is_pmemverbs(opts->pm.prov) ? pmem_modes :
			 core_modes, opts))
		return false;
	for (i = 0; i < opts->nmodes; i++)
		if (!pm_opts_mode_ok(opts->modes[i]->name,
				     opts->modes[i]->pmem_only, opts->pm.prov))
			return false;
	return true;
}

bool bw_parse_options(int argc, char **argv, struct options *opts)
{
	const struct pm_opts_prog prog = {
		.default_port = DEFAULT_PORT, .default_sizes = DEFAULT_SIZES,
		.max_size = MAX_SIZE, .letters = "e:b:w:m:I:W:R:T:",
		.parse = parse_option, .prog_opts = opts,
	};
	char batches[] = DEFAULT_BATCHES;

	*opts = (struct options) {
		.ep_type = FI_EP_MSG, .window = DEFAULT_WINDOW, .warmup = -1,
		.rounds = 1,
	};
	return parse_batches(batches, opts) &&
	       pm_opts_parse(argc, argv, &opts->pm, &prog) &&
	       options_consistent(opts);
}
