/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* fi_pmem_lat: usage and options (see fi_pmem_lat.c). */
#include <stdio.h>

#include "fi_pmem_lat.h"
#include "../common/pmem_wait.h"

void lat_usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [-p PROV] [-s SERVER_ADDR] [-B PORT] "
		"[-S SIZE[,SIZE...]]\n"
		"        [-I ITERS] [-W WARMUP] [-m MODE[,MODE...]] [-b BATCH] "
		"[-i IDLE_US]\n"
		"        [-e msg|rdm] [-f FILE] [-y] [-K] [-w WAIT] [-P] "
		"[-D FILE] [-V FILE]\n        [-O LOG]\n"
		"        [--csv]\n"
		"  without -s: the target; with -s: the initiator, which "
		"measures\n"
		"  -p  provider (%s); -B port (%s); -S sizes (%s)\n"
		"  -I  iterations (%d); -W warmup iterations (%d); "
		"-b writes per batch (%d)\n"
		"  -m  modes among write,read,read8,read8_ctl,write_read,"
		"commit,delivery,\n"
		"      delivery_data,batch,scatter (%s), measured "
		"interleaved\n"
		"  -i  initiator: sleep IDLE_US microseconds before each "
		"iteration, untimed (0)\n"
		"  -e  endpoint type, both sides: msg (default) or rdm "
		"(ofi_rxm over\n"
		"      pmemverbs MSG; there -w none and -w eq are refused)\n"
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
		"  -x  initiator: wait for its completions as -w makes the "
		"target wait\n"
		"      (unspec, fd, pollfd: fi_cq_sread on a CQ of that wait "
		"object; epoll)\n"
		"      instead of polling its CQ\n"
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

/* pm_opts_list's callback: one -m mode. */
static bool add_mode(const char *name, void *arg)
{
	struct options *opts = arg;
	const struct mode *mode = lat_find_mode(name);

	if (!mode || opts->nmodes == MAX_MODES)
		return false;
	opts->modes[opts->nmodes++] = mode;
	return true;
}

static bool parse_modes(char *list, struct options *opts)
{
	opts->nmodes = 0;
	return pm_opts_list(list, add_mode, opts);
}

/* Checks what getopt cannot: mode and provider agree, and so on. */
static bool options_consistent(const struct options *opts)
{
	int i;

	for (i = 0; i < opts->nmodes; i++)
		if (!pm_opts_mode_ok(opts->modes[i]->name,
				     opts->modes[i]->pmem_only, opts->pm.prov))
			return false;
	if (opts->pm.server && (pm_wait_on_cntr || opts->target_wait)) {
		fprintf(stderr, "-K and -w are for the target (no -s)\n");
		return false;
	}
	if (opts->ini_wait && (!opts->pm.server || pm_wait_mode == PM_WAIT_NONE ||
			       pm_wait_mode > PM_WAIT_EPOLL)) {
		fprintf(stderr, "-x is for the initiator (-s), one of unspec, "
			"fd, pollfd, epoll\n");
		return false;
	}
	if (!opts->pm.server && (opts->dirty_file || opts->oracle_file ||
				 opts->placed_file)) {
		fprintf(stderr, "-D, -V and -O are for the initiator (-s)\n");
		return false;
	}
	if (opts->ep_type == FI_EP_RDM && (pm_wait_mode == PM_WAIT_NONE ||
					   pm_wait_mode == PM_WAIT_EQ)) {
		fprintf(stderr, "-w %s is refused with -e rdm: %s\n",
			pm_wait_mode == PM_WAIT_NONE ? "none" : "eq",
			pm_wait_mode == PM_WAIT_NONE ?
			"fi_cq(3) forbids fi_cq_sread on a CQ of FI_WAIT_NONE, "
			"and ofi_rxm's CQ crashes in it (libfabric 1.17); use "
			"-w noread or -y" :
			"an RDM endpoint has no EQ (ofi_rxm refuses to bind "
			"one); use -w unspec, fd, pollfd, epoll or cntr");
		return false;
	}
	if (!opts->pm.server && opts->idle_us) {
		fprintf(stderr, "-i is for the initiator (-s)\n");
		return false;
	}
	return true;
}

/* Parses one of fi_pmem_lat's own option letters; false if invalid. */
static bool parse_option(int c, char *arg, void *prog_opts)
{
	struct options *opts = prog_opts;
	long value;

	switch (c) {
	case 'I': return pm_parse_long(arg, 1, MAX_ITERS, &opts->iters);
	case 'W': return pm_parse_long(arg, 0, MAX_ITERS, &opts->warmup);
	case 'm': return parse_modes(arg, opts);
	case 'b':
		if (!pm_parse_long(arg, 1, MAX_BATCH, &value))
			return false;
		opts->batch = (int) value;
		return true;
	case 'i': return pm_parse_long(arg, 0, MAX_IDLE_US, &opts->idle_us);
	case 'e': return pm_parse_ep_type(arg, &opts->ep_type);
	case 'y': pm_busy_poll = true; return true;
	case 'K': pm_wait_on_cntr = true; return true;
	case 'w':
		if (!pm_parse_wait(arg))
			return false;
		pm_wait_on_cntr |= pm_wait_mode == PM_WAIT_CNTR;
		opts->target_wait = true;
		return true;
	case 'x':
		opts->ini_wait = true;
		return pm_parse_wait(arg);
	case 'D': opts->dirty_file = arg; return true;
	case 'O': opts->oracle_file = arg; return true;
	case 'V': opts->placed_file = arg; return true;
	default: return false;
	}
}

bool lat_parse_options(int argc, char **argv, struct options *opts)
{
	const struct pm_opts_prog prog = {
		.default_port = DEFAULT_PORT, .default_sizes = DEFAULT_SIZES,
		.max_size = MAX_SIZE, .letters = "I:W:m:b:i:e:yKw:x:D:O:V:",
		.parse = parse_option, .prog_opts = opts,
	};
	char modes[] = DEFAULT_MODES;

	*opts = (struct options) {
		.iters = DEFAULT_ITERS, .warmup = DEFAULT_WARMUP,
		.batch = DEFAULT_BATCH, .ep_type = FI_EP_MSG,
	};
	return parse_modes(modes, opts) &&
	       pm_opts_parse(argc, argv, &opts->pm, &prog) &&
	       options_consistent(opts);
}
