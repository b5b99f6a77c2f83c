/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * fi_pmem_remotelog: usage and options (see fi_pmem_remotelog.c).
 */
#include "fi_pmem_remotelog.h"

/* ------------------------------------------------------------- options */

void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [-p PROV] [-e msg|rdm] [-s SERVER_ADDR] [-B PORT] "
		"[-m singleton|compound]\n"
		"        [-S SIZE[,SIZE...]] [-I APPENDS] [-W WARMUP] "
		"[-f FILE] [--csv]\n"
		"       %s -r FILE\n"
		"  without -s: the target; with -s: the initiator, which "
		"appends\n"
		"  -p  provider (%s); -e endpoint type, msg or rdm (msg);\n"
		"      -B port (%s)\n"
		"  -m  append mode (singleton)\n"
		"  -S  record sizes, header included, %d..%lu (%s)\n"
		"  -I  appends per size (%d); -W warmup appends (%d)\n"
		"  -f  target's file, emptied first (default: a temporary "
		"file)\n"
		"  -r  recover the log in FILE and check it (no network)\n",
		prog, prog, DEFAULT_PROVIDER, DEFAULT_PORT, MIN_RECORD,
		MAX_RECORD, DEFAULT_SIZES, DEFAULT_APPENDS, DEFAULT_WARMUP);
}

static bool parse_option(int c, char *arg, struct options *opts)
{
	long value;

	switch (c) {
	case 'p': opts->prov = arg; return true;
	case 'e': return pm_parse_ep_type(arg, &opts->ep_type);
	case 's': opts->server = arg; return true;
	case 'B': opts->port = arg; return pm_parse_long(arg, 1, 65535, &value);
	case 'm':
		if (!strcmp(arg, "singleton"))
			opts->mode = MODE_SINGLETON;
		else if (!strcmp(arg, "compound"))
			opts->mode = MODE_COMPOUND;
		else {
			fprintf(stderr, "unknown mode \"%s\"\n", arg);
			return false;
		}
		return true;
	case 'S': return pm_parse_sizes(arg, MIN_RECORD, MAX_RECORD,
					opts->sizes, &opts->nsizes);
	case 'I': return pm_parse_long(arg, 1, MAX_APPENDS, &opts->appends);
	case 'W': return pm_parse_long(arg, 0, MAX_APPENDS, &opts->warmup);
	case 'f': opts->file = arg; return true;
	case 'r': opts->recover = arg; return true;
	case 'C': opts->csv = true; return true;
	default: return false;
	}
}

bool parse_options(int argc, char **argv, struct options *opts)
{
	static const struct option long_opts[] = {
		{ "csv", no_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char sizes[] = DEFAULT_SIZES;
	int c;

	*opts = (struct options) {
		.prov = DEFAULT_PROVIDER, .ep_type = FI_EP_MSG,
		.port = DEFAULT_PORT, .mode = MODE_SINGLETON,
		.appends = DEFAULT_APPENDS, .warmup = DEFAULT_WARMUP,
	};
	if (!pm_parse_sizes(sizes, MIN_RECORD, MAX_RECORD, opts->sizes,
			    &opts->nsizes))
		return false;
	while ((c = getopt_long(argc, argv, "p:e:s:B:m:S:I:W:f:r:h",
				long_opts, NULL)) != -1)
		if (!parse_option(c, optarg, opts))
			return false;
	if (opts->server && opts->file) {
		fprintf(stderr, "-f is for the target (no -s)\n");
		return false;
	}
	if (opts->recover && (opts->server || opts->file)) {
		fprintf(stderr, "-r works on a file alone\n");
		return false;
	}
	if (log_capacity(opts) > MAX_CAPACITY) {
		fprintf(stderr, "the log would exceed %lu bytes\n",
			MAX_CAPACITY);
		return false;
	}
	return optind == argc;
}
