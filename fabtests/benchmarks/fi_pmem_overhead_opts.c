/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * fi_pmem_overhead: usage and options (see fi_pmem_overhead.c).
 */
#include "fi_pmem_overhead.h"

void usage(void)
{
	fprintf(stderr, "usage: fi_pmem_overhead [-e msg|rdm] [-c CORE] "
		"[-P SECOND] [-A BIND_ADDR] [-B PORT] [-S SIZES]\n"
		"         [-b BLOCKS] [-I ITERS] [-W WARMUP] [--csv] "
		"[-s SERVER_ADDR]\n"
		"  the server and the client take the same options\n");
}

int parse_options(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "csv", no_argument, NULL, 'C' }, { NULL, 0, NULL, 0 },
	};
	char sizes[256] = DEFAULT_SIZES;
	int c;

	*o = (struct options) { .ep_type = FI_EP_MSG, .core = "tcp",
				.second = PM_PROVIDER,
				.port = DEFAULT_PORT, .blocks = 2000,
				.iters = 100, .warmup = 8 };
	while ((c = getopt_long(argc, argv, "e:c:P:B:S:b:I:W:s:A:h", longopts,
				NULL)) != -1) {
		switch (c) {
		case 'e':
			if (!pm_parse_ep_type(optarg, &o->ep_type))
				return -1;
			break;
		case 'c': o->core = optarg; break;
		case 'P': o->second = optarg; break;
		case 'B': o->port = optarg; break;
		case 'S': snprintf(sizes, sizeof(sizes), "%s", optarg); break;
		case 'b':
			if (!pm_parse_long(optarg, 4, 1000000, &o->blocks))
				return -1;
			break;
		case 'I':
			if (!pm_parse_long(optarg, 1, 1000000, &o->iters))
				return -1;
			break;
		case 'W':
			if (!pm_parse_long(optarg, 0, 1000, &o->warmup))
				return -1;
			break;
		case 's': o->server = optarg; break;
		case 'A': o->listen = optarg; break;
		case 'C': o->csv = true; break;
		default: return -1;
		}
	}
	if (!o->listen && o->ep_type == FI_EP_RDM)
		o->listen = "127.0.0.1"; /* the address the client is given */
	o->blocks &= ~3L; /* whole ABBA groups */
	o->warmup = (o->warmup + 3) & ~3L;
	return optind == argc && pm_parse_sizes(sizes, 1, MAX_SIZE, o->sizes,
						&o->nsizes) ? 0 : -1;
}
