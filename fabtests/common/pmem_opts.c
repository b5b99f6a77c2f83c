/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* The pmem benchmarks' shared command line (see pmem_opts.h). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "pmem_opts.h"

#define PM_OPTS_COMMON "p:s:B:S:f:Ph"
#define PM_OPTS_MAX_LETTERS 96

/* Parses one common option: 1 done, 0 not a common one, -1 invalid. */
static int parse_common(int c, char *arg, struct pm_opts *pm, size_t max_size)
{
	long port;

	switch (c) {
	case 'p': pm->prov = arg; return 1;
	case 's': pm->server = arg; return 1;
	case 'B':
		pm->port = arg;
		return pm_parse_long(arg, 1, 65535, &port) ? 1 : -1;
	case 'S':
		return pm_parse_sizes(arg, 1, max_size, pm->sizes,
				      &pm->nsizes) ? 1 : -1;
	case 'f': pm->file = arg; return 1;
	case 'P': pm_core_pmem = true; return 1;
	case 'C': pm->csv = true; return 1;
	case 'h': return -1;
	default: return 0;
	}
}

/* The defaults: the pmemverbs provider, the program's port and sizes. */
static bool set_defaults(struct pm_opts *pm, const struct pm_opts_prog *prog)
{
	char sizes[128];

	*pm = (struct pm_opts) { .prov = PM_PROVIDER,
				 .port = prog->default_port };
	if (strlen(prog->default_sizes) >= sizeof(sizes))
		return false;
	strcpy(sizes, prog->default_sizes);
	return pm_parse_sizes(sizes, 1, prog->max_size, pm->sizes,
			      &pm->nsizes);
}

bool pm_opts_parse(int argc, char **argv, struct pm_opts *pm,
		   const struct pm_opts_prog *prog)
{
	static const struct option long_opts[] = {
		{ "csv", no_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char letters[PM_OPTS_MAX_LETTERS];
	int c, done;

	if (!set_defaults(pm, prog) ||
	    snprintf(letters, sizeof(letters), "%s%s", PM_OPTS_COMMON,
		     prog->letters) >= (int) sizeof(letters))
		return false;
	while ((c = getopt_long(argc, argv, letters, long_opts, NULL)) != -1) {
		done = parse_common(c, optarg, pm, prog->max_size);
		if (done < 0 || (!done && !prog->parse(c, optarg,
						       prog->prog_opts)))
			return false;
	}
	if (optind != argc)
		return false;
	if (pm->server && pm->file) {
		fprintf(stderr, "-f is for the target (no -s)\n");
		return false;
	}
	return true;
}

bool pm_opts_list(char *list, bool (*add)(const char *item, void *arg),
		  void *arg)
{
	char *save = NULL, *item;
	int n = 0;

	for (item = strtok_r(list, ",", &save); item;
	     item = strtok_r(NULL, ",", &save), n++)
		if (!add(item, arg))
			return false;
	return n > 0;
}

bool pm_opts_mode_ok(const char *mode, bool pmem_only, const char *prov)
{
	if (!pmem_only || pm_is_pmemverbs(prov))
		return true;
	fprintf(stderr, "mode %s needs -p %s\n", mode, PM_PROVIDER);
	return false;
}
