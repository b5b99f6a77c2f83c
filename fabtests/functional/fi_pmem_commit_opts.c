/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * fi_pmem_commit: usage and options (see fi_pmem_commit.c).
 */
#include "fi_pmem_commit.h"

/* -------------------------------------------------------------- options */

void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [-p PROV] [-e msg|rdm] [-s SERVER_ADDR] [-B PORT] "
		"[-f FILE]\n"
		"  without -s: the target; with -s: the initiator\n"
		"  -p  provider (%s); -e endpoint type, msg or rdm (msg);\n"
		"      -B port (%s)\n"
		"  -f  target's file, emptied first (default: a temporary "
		"file)\n", prog, DEFAULT_PROVIDER, DEFAULT_PORT);
}

bool parse_options(int argc, char **argv, struct options *opts)
{
	long value;
	int c;

	*opts = (struct options) {
		.prov = DEFAULT_PROVIDER, .ep_type = FI_EP_MSG,
		.port = DEFAULT_PORT,
	};
	while ((c = getopt(argc, argv, "p:e:s:B:f:h")) != -1) {
		switch (c) {
		case 'p': opts->prov = optarg; break;
		case 'e':
			if (!pm_parse_ep_type(optarg, &opts->ep_type))
				return false;
			break;
		case 's': opts->server = optarg; break;
		case 'B':
			if (!pm_parse_long(optarg, 1, 65535, &value))
				return false;
			opts->port = optarg;
			break;
		case 'f': opts->file = optarg; break;
		default: return false;
		}
	}
	if (opts->server && opts->file) {
		fprintf(stderr, "-f is for the target (no -s)\n");
		return false;
	}
	return optind == argc;
}
