/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * fi_pmem_idle: usage and options (see fi_pmem_idle.c).
 */
#include "fi_pmem_idle.h"

/* ---------------------------------------------------------------- main */

static void usage(void)
{
	fprintf(stderr,
		"usage: fi_pmem_idle [-p PROV] [-B PORT] [-n CONNS] "
		"[-t SECONDS] [-m none|sread|unspec|poll|sleep|sread-sleep|cntr|eq]\n"
		"                         [-q] [-f FILE]\n"
		"       fi_pmem_idle [-p PROV] -s SERVER_ADDR [-B PORT] "
		"[-n CONNS] [-t SECONDS] [-k COMMITS [-g US]]\n");
	exit(PM_EXIT_USAGE);
}

static bool parse_mode(const char *text, enum idle_mode *mode)
{
	if (!strcmp(text, "none"))
		*mode = MODE_NONE;
	else if (!strcmp(text, "sread"))
		*mode = MODE_SREAD;
	else if (!strcmp(text, "unspec"))
		*mode = MODE_UNSPEC;
	else if (!strcmp(text, "poll"))
		*mode = MODE_POLL;
	else if (!strcmp(text, "sleep"))
		*mode = MODE_SLEEP;
	else if (!strcmp(text, "sread-sleep"))
		*mode = MODE_SREAD_SLEEP;
	else if (!strcmp(text, "cntr"))
		*mode = MODE_CNTR;
	else if (!strcmp(text, "eq"))
		*mode = MODE_EQ;
	else
		return false;
	return true;
}

void parse(int argc, char **argv, struct options *o)
{
	int c;

	while ((c = getopt(argc, argv, "p:s:B:n:t:m:f:k:g:qh")) != -1) {
		switch (c) {
		case 'p': o->prov = optarg; break;
		case 's': o->server = optarg; break;
		case 'B': o->port = optarg; break;
		case 'f': o->file = optarg; break;
		case 'n':
			if (!pm_parse_long(optarg, 1, MAX_CONNS, &o->conns))
				usage();
			break;
		case 't':
			if (!pm_parse_long(optarg, 1, MAX_SECONDS, &o->seconds))
				usage();
			break;
		case 'm':
			if (!parse_mode(optarg, &o->mode))
				usage();
			break;
		case 'q': o->cq_per_conn = true; break;
		case 'k':
			if (!pm_parse_long(optarg, 1, MAX_BUSY_COMMITS,
					   &o->busy_commits))
				usage();
			break;
		case 'g':
			if (!pm_parse_long(optarg, 1, MAX_GAP_US, &o->gap_us))
				usage();
			break;
		default: usage();
		}
	}
	if (optind != argc)
		usage();
}
