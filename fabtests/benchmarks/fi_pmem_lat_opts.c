/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* fi_pmem_lat: usage and options (see fi_pmem_lat.c). */
#include <stdio.h>
#include <string.h>

#include <getopt.h>

#include "fi_pmem_lat.h"
#include "../common/pmem_wait.h"

void lat_usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [-p PROV] [-s SERVER_ADDR] [-B PORT] "
		"[-S SIZE[,SIZE...]]\n"
		"        [-I ITERS] [-W WARMUP] [-m MODE[,MODE...]] [-b BATCH] "
		"[-i IDLE_US]\n"
		"        [-f FILE] [-y] [-K] [-P] [-D FILE] [-V FILE] [-O LOG]\n"
		"        [--csv]\n"
		"  without -s: the target; with -s: the initiator, which "
		"measures\n"
		"  -p  provider (%s); -B port (%s); -S sizes (%s)\n"
		"  -I  iterations (%d); -W warmup iterations (%d); "
		"-b writes per batch (%d)\n"
		"  -m  modes among write,read,read8,read8_ctl,write_read,"
		"commit,batch,\n"
		"      scatter (%s), measured interleaved\n"
		"  -i  initiator: sleep IDLE_US microseconds before each "
		"iteration, untimed (0)\n"
		"  -f  target's file (default: a temporary file)\n"
		"  -y  target: busy-poll its CQ (fi_cq_read) instead of "
		"waiting in fi_cq_sread\n"
		"  -K  target: wait on a FI_RECV counter (fi_cntr_wait; with "
		"-y fi_cntr_read)\n"
		"      instead of its CQ\n"
		"  -w  target: how it waits for its CQ, one of %s:\n"
		"      fi_cq_sread on a CQ of wait object FI_WAIT_UNSPEC "
		"(default), _NONE,\n"
		"      _FD, _POLLFD; epoll on FI_GETWAIT's fd after "
		"fi_trywait; fi_cntr_wait\n"
		"      (as -K); fi_eq_sread on its EQ; no wait (reads its CQ "
		"every %d ms)\n"
		"  -P  both sides, a provider other than pmemverbs: ask it for "
		"FI_RMA_PMEM\n"
		"      (its own FI_COMMIT_COMPLETE on persistent memory)\n"
		"  -D  initiator: after each commit, count it early if a page "
		"of its range\n"
		"      in the target's FILE is dirty (cachestat; same host)\n"
		"  -V  initiator: after each commit, count it early if its "
		"range in the\n"
		"      target's FILE does not hold the bytes written (same "
		"host)\n"
		"  -O  initiator: after each commit, count it early if the "
		"target's oracle\n"
		"      LOG (FI_PMEMVERBS_ORACLE) does not cover its range\n",
		prog, DEFAULT_PROVIDER, DEFAULT_PORT, DEFAULT_SIZES,
		DEFAULT_ITERS, DEFAULT_WARMUP, DEFAULT_BATCH, DEFAULT_MODES,
		pm_wait_names(), PM_POLL_INTERVAL_MS);
}


static bool parse_modes(char *list, struct options *opts)
{
	char *save = NULL, *item;
	const struct mode *mode;

	opts->nmodes = 0;
	for (item = strtok_r(list, ",", &save); item;
	     item = strtok_r(NULL, ",", &save)) {
		mode = lat_find_mode(item);
		if (!mode || opts->nmodes == MAX_MODES)
			return false;
		opts->modes[opts->nmodes++] = mode;
	}
	return opts->nmodes > 0;
}

/* Checks what getopt cannot: mode and provider agree, and so on. */
static bool options_consistent(const struct options *opts)
{
	int i;

	for (i = 0; i < opts->nmodes; i++) {
		if (opts->modes[i]->pmem_only && !pm_is_pmemverbs(opts->prov)) {
			fprintf(stderr, "mode %s needs -p %s\n",
				opts->modes[i]->name, PM_PROVIDER);
			return false;
		}
	}
	if (opts->server && opts->file) {
		fprintf(stderr, "-f is for the target (no -s)\n");
		return false;
	}
	if (opts->server && (pm_wait_on_cntr || pm_wait_mode)) {
		fprintf(stderr, "-K and -w are for the target (no -s)\n");
		return false;
	}
	if (!opts->server && (opts->dirty_file || opts->oracle_file ||
			      opts->placed_file)) {
		fprintf(stderr, "-D, -V and -O are for the initiator (-s)\n");
		return false;
	}
	if (!opts->server && opts->idle_us) {
		fprintf(stderr, "-i is for the initiator (-s)\n");
		return false;
	}
	return true;
}

/* Parses one option letter with its argument; false if invalid. */
static bool parse_option(int c, char *arg, struct options *opts)
{
	long value;

	switch (c) {
	case 'p': opts->prov = arg; return true;
	case 's': opts->server = arg; return true;
	case 'B': opts->port = arg; return pm_parse_long(arg, 1, 65535, &value);
	case 'S': return pm_parse_sizes(arg, 1, MAX_SIZE, opts->sizes,
					&opts->nsizes);
	case 'I': return pm_parse_long(arg, 1, MAX_ITERS, &opts->iters);
	case 'W': return pm_parse_long(arg, 0, MAX_ITERS, &opts->warmup);
	case 'm': return parse_modes(arg, opts);
	case 'b':
		if (!pm_parse_long(arg, 1, MAX_BATCH, &value))
			return false;
		opts->batch = (int) value;
		return true;
	case 'i': return pm_parse_long(arg, 0, MAX_IDLE_US, &opts->idle_us);
	case 'f': opts->file = arg; return true;
	case 'y': pm_busy_poll = true; return true;
	case 'K': pm_wait_on_cntr = true; return true;
	case 'w':
		if (!pm_parse_wait(arg))
			return false;
		pm_wait_on_cntr |= pm_wait_mode == PM_WAIT_CNTR;
		return true;
	case 'C': opts->csv = true; return true;
	case 'P': pm_core_pmem = true; return true;
	case 'D': opts->dirty_file = arg; return true;
	case 'O': opts->oracle_file = arg; return true;
	case 'V': opts->placed_file = arg; return true;
	default: return false;
	}
}

bool lat_parse_options(int argc, char **argv, struct options *opts)
{
	static const struct option long_opts[] = {
		{ "csv", no_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char sizes[] = DEFAULT_SIZES, modes[] = DEFAULT_MODES;
	int c;

	*opts = (struct options) {
		.prov = DEFAULT_PROVIDER, .port = DEFAULT_PORT,
		.iters = DEFAULT_ITERS, .warmup = DEFAULT_WARMUP,
		.batch = DEFAULT_BATCH,
	};
	if (!pm_parse_sizes(sizes, 1, MAX_SIZE, opts->sizes, &opts->nsizes) ||
	    !parse_modes(modes, opts))
		return false;
	while ((c = getopt_long(argc, argv, "p:s:B:S:I:W:m:b:i:f:yKw:PD:O:V:h", long_opts,
				NULL)) != -1)
		if (!parse_option(c, optarg, opts))
			return false;
	return optind == argc && options_consistent(opts);
}
