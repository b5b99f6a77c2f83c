/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_demo: a message and an RMA round trip through the pmemverbs provider.
 *
 *   pmv_demo target    [-a ADDR] [-p PORT] [-f FILE]
 *   pmv_demo initiator [-a ADDR] [-p PORT]
 *
 * The target maps a 1 MiB file (a temporary one unless -f is given),
 * listens on a pmemverbs FI_EP_MSG passive endpoint, accepts one
 * connection, registers the mapping as persistent memory (FI_RMA_PMEM; the
 * provider detects its persistence profile) and sends the initiator the
 * region's address, key, length and profile.  The initiator sends a text
 * message, writes a line into the target's file with fi_write, reads it
 * back with fi_read, then writes a second line with fi_writemsg and
 * FI_COMMIT_COMPLETE: when that completes, the line is durable in the
 * target's file.  The target prints both lines.
 *
 * The demo honours the mr_mode the provider returns: FI_MR_LOCAL (local
 * buffers are registered and their descriptors passed), FI_MR_VIRT_ADDR
 * (remote addresses are virtual addresses, otherwise offsets),
 * FI_MR_PROV_KEY (the provider's key is used, otherwise the demo's own) and
 * FI_MR_ENDPOINT (regions are bound to the endpoint and enabled).
 *
 * Built by `make` (examples/pmv_demo); `./run demo` runs both sides.
 *
 * Files: pmv_demo.h (what they share), pmv_demo_fabric.c (output, fabric,
 * waits, regions, connection), pmv_demo_target.c, pmv_demo_initiator.c;
 * here the options and main.
 */
#include "pmv_demo.h"

/* ------------------------------------------------------------------ main */

static void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s target    [-a ADDR] [-p PORT] [-f FILE]\n"
		"       %s initiator [-a ADDR] [-p PORT]\n"
		"defaults: -a %s -p %s; the target's FILE defaults to a "
		"temporary file\n", prog, prog, DEFAULT_ADDR, DEFAULT_PORT);
}

static bool valid_port(const char *port)
{
	char *end;
	long value = strtol(port, &end, 10);

	return *port && !*end && value > 0 && value <= 65535;
}

/* Parses "target|initiator [options]"; false if the command line is invalid. */
static bool parse_options(int argc, char **argv, struct options *opts)
{
	int c;

	*opts = (struct options) { .addr = DEFAULT_ADDR, .port = DEFAULT_PORT };
	if (argc < 2)
		return false;
	if (!strcmp(argv[1], "target"))
		opts->is_target = true;
	else if (strcmp(argv[1], "initiator"))
		return false;
	while ((c = getopt(argc - 1, argv + 1, "a:p:f:")) != -1) {
		if (c == 'a')
			opts->addr = optarg;
		else if (c == 'p')
			opts->port = optarg;
		else if (c == 'f' && opts->is_target)
			opts->file = optarg;
		else
			return false;
	}
	if (!valid_port(opts->port)) {
		fprintf(stderr, "invalid port \"%s\"\n", opts->port);
		return false;
	}
	return optind == argc - 1;
}

int main(int argc, char **argv)
{
	struct options opts;
	int ret;

	if (!parse_options(argc, argv, &opts)) {
		usage(argv[0]);
		return 2;
	}
	role = opts.is_target ? "[target]" : "[initiator]";
	/* Every failure has already been reported where it happened. */
	ret = opts.is_target ? run_target(&opts) : run_initiator(&opts);
	return ret ? 1 : 0;
}
