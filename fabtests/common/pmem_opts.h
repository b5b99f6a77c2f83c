/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The command line the pmem benchmarks share (fi_pmem_lat, fi_pmem_bw):
 * -p PROV, -s SERVER_ADDR (the initiator; without it the target), -B PORT,
 * -S SIZE[,SIZE...], -f FILE (the target's), -P (FI_RMA_PMEM from a core),
 * --csv and --help, parsed once here; each program adds its own letters.
 */
#ifndef PMEM_OPTS_H
#define PMEM_OPTS_H

#include <stdbool.h>
#include <stddef.h>

#include "pmem_common.h"

/* The options every pmem benchmark takes. */
struct pm_opts {
	const char *prov;
	const char *server; /* NULL: this process is the target */
	const char *port;
	size_t sizes[PM_MAX_SIZES];
	int nsizes;
	const char *file;   /* the target's file (-f) */
	bool csv;
};

/* What a program adds: its defaults, its own getopt letters and their
 * parser (false: invalid). */
struct pm_opts_prog {
	const char *default_port;
	const char *default_sizes;
	size_t max_size;     /* the largest -S size */
	const char *letters; /* getopt letters of its own options */
	bool (*parse)(int c, char *arg, void *prog_opts);
	void *prog_opts;
};

/*
 * Parses argv: the common options into *pm (defaults first), the
 * program's through prog.  False on a usage error (the caller prints its
 * usage), -h and --help included.
 */
bool pm_opts_parse(int argc, char **argv, struct pm_opts *pm,
		   const struct pm_opts_prog *prog);

/* Parses "ITEM[,ITEM...]", each through add; false if one is refused or
 * the list is empty. */
bool pm_opts_list(char *list, bool (*add)(const char *item, void *arg),
		  void *arg);

/* True if a mode may run on prov; false with a message if it needs
 * pmemverbs and prov is another. */
bool pm_opts_mode_ok(const char *mode, bool pmem_only, const char *prov);

#endif /* PMEM_OPTS_H */
