/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_threads_main.c - options and main: which role this process plays.
 */
#include "pmv_threads.h"

const char *const k_modes[] = { "one-ep", "multi-ep", "mix" };
struct thr_options g_opt = { .addr = "127.0.0.1", .gran = "page", .threads = 4,
	    .commits = 200, .pollers = 2, .seed = 1 };
const char *g_role = "pmv_threads";
bool g_dying; /* die(): close the fabric objects at exit */

/* ================================================================== */
/* Options                                                            */
/* ================================================================== */

static noreturn void usage(void)
{
	fprintf(stderr,
		"usage: pmv_threads -r target -P PORT -f FILE -n CONNS [-p POLLERS]\n"
		"                   [-c context]\n"
		"       pmv_threads -r initiator -P PORT -m MODE -x BASE:KEY -F FILE\n"
		"                   [-o ORACLE] [-g GRAN] [-T THREADS] [-N BATCHES] [-A]\n"
		"                   [-X corrupt|faults] [-s SEED]\n"
		"  -a ADDR   address (default 127.0.0.1)\n"
		"  -m MODE   one-ep | multi-ep | mix\n"
		"  -T N      threads (1..%u, default 4); -N N batches each (default 200)\n"
		"  -g GRAN   the target's forced granularity: page | cache_line | byte\n"
		"  -c context  the target's CQ in FI_CQ_FORMAT_CONTEXT, without remote\n"
		"            CQ data: its endpoints take no gate (served as over verbs)\n"
		"  -A        every commit goes to the agent (FI_PMEMVERBS_METHOD=agent):\n"
		"            check the oracle on every profile\n"
		"  -X corrupt  test only: one commit's check expects a wrong byte (exit 3)\n"
		"  -X faults   errors from injected faults (FI_PMEMVERBS_FAULT_*) end\n"
		"              their batch instead of the run; successful commits are\n"
		"              checked as always\n"
		"  target: FI_PMEMVERBS_ORACLE=PATH creates the oracle log (-o PATH)\n",
		MAX_THREADS);
	exit(EXIT_USAGE);
}

static unsigned parse_uint(const char *s, unsigned lo, unsigned hi)
{
	char *end;
	unsigned long v = strtoul(s, &end, 0);

	if (*end || v < lo || v > hi)
		usage();
	return (unsigned)v;
}

static enum mode parse_mode(const char *s)
{
	for (unsigned i = 0; i < ARRAY_LEN(k_modes); i++)
		if (!strcmp(s, k_modes[i]))
			return (enum mode)i;
	usage();
}

static void parse_opts(int argc, char **argv)
{
	int c;

	while ((c = getopt(argc, argv, "r:a:P:f:F:n:p:m:T:N:x:o:g:AX:s:c:")) != -1) {
		switch (c) {
		case 'r': g_opt.role = optarg; break;
		case 'a': g_opt.addr = optarg; break;
		case 'P': g_opt.port = optarg; break;
		case 'f': case 'F': g_opt.file = optarg; break;
		case 'n': g_opt.conns = parse_uint(optarg, 1, MAX_CONNS); break;
		case 'p': g_opt.pollers = parse_uint(optarg, 1, MAX_POLLERS); break;
		case 'm': g_opt.mode = parse_mode(optarg); break;
		case 'T': g_opt.threads = parse_uint(optarg, 1, MAX_THREADS); break;
		case 'N': g_opt.commits = parse_uint(optarg, 1, 1000000); break;
		case 'x':
			if (!pmv_test_parse_region(optarg, &g_opt.base,
						   &g_opt.key))
				usage();
			break;
		case 'o': g_opt.oracle = optarg; break;
		case 'g': g_opt.gran = optarg; break;
		case 'A': g_opt.all_oracle = true; break;
		case 'X':
			if (!strcmp(optarg, "corrupt"))
				g_opt.corrupt = true;
			else if (!strcmp(optarg, "faults"))
				g_opt.faults = true;
			else
				usage();
			break;
		case 's': g_opt.seed = strtoull(optarg, NULL, 0); break;
		case 'c':
			if (strcmp(optarg, "context"))
				usage();
			g_opt.cq_context = true;
			break;
		default: usage();
		}
	}
	if (!g_opt.role || !g_opt.port || optind != argc)
		usage();
}

/*
 * At exit after die(): fabric objects closed before libfabric unloads.
 * Not on other exits: a library's signal handler that calls exit()
 * (libinfinipath's, on SIGTERM, in the initiator; the target catches
 * SIGTERM itself) must not close them under running threads.
 */
static void close_at_exit(void)
{
	if (!g_dying)
		return;
	if (!strcmp(g_opt.role, "target"))
		target_close();
	else
		initiator_close();
}

int main(int argc, char **argv)
{
	parse_opts(argc, argv);
	if (strcmp(g_opt.role, "target") && strcmp(g_opt.role, "initiator"))
		usage();
	if (atexit(close_at_exit))
		die("atexit failed");
	if (!strcmp(g_opt.role, "target"))
		return target_main();
	return initiator_main();
}
