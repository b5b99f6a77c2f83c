/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_crashlog_main.c - options and main: which role this process
 * plays.
 */
#include "pmv_crashlog.h"

const char *g_role = "pmv_crashlog";

/* ------------------------------------------------------------ options */

noreturn void usage(void)
{
	fprintf(stderr,
		"usage: pmv_crashlog init   -f FILE [-o BASE] -m singleton|compound "
		"[-c CAPACITY] [-M MAXREC]\n"
		"       pmv_crashlog target -f FILE [-o BASE] -a ADDR -P PORT "
		"[-k random|fixed] [-t SECONDS]\n"
		"                           [-A ACKFILE [-x MARKER] [-N NAME]] "
		"[-e msg|rdm]\n"
		"       pmv_crashlog append -a ADDR -P PORT [-d DEPTH] [-t SECONDS] "
		"[-n RECORDS] [-w SECONDS]\n"
		"                           [-g GOFILE] [-u early|visible] "
		"[-e msg|rdm [-R RECONNECTS]]\n"
		"       pmv_crashlog verify -f FILE [-o BASE] -A ACKFILE "
		"[-x MARKER] [-N NAME]\n"
		"       pmv_crashlog verify -A ACKFILE -L NAME=FILE@BASE "
		"[-L NAME=FILE@BASE...]\n"
		"       pmv_crashlog learn  -a ADDR -P PORT -i INFOFILE\n"
		"       pmv_crashlog stale  -a ADDR -P PORT -i INFOFILE -x MARKER "
		"[-K]\n");
	exit(2);
}

/* A number in [min, max] (decimal, 0x hex), or the usage. */
unsigned long long number(const char *text, unsigned long long min,
			  unsigned long long max)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(text, &end, 0);
	if (errno || *end || end == text || v < min || v > max) {
		fprintf(stderr, "pmv_crashlog: bad number '%s' (%llu..%llu)\n",
			text, min, max);
		usage();
	}
	return v;
}

static void parse_option(int c, const char *arg, struct opts *o)
{
	switch (c) {
	case 'f': o->file = arg; break;
	case 'o': o->base = number(arg, 0, 1ULL << 40); break;
	case 'a': o->addr = arg; break;
	case 'P': o->port = arg; number(arg, 1, 65535); break;
	case 'm':
		if (strcmp(arg, "singleton") && strcmp(arg, "compound"))
			usage();
		o->mode = strcmp(arg, "singleton") ? MODE_COMPOUND :
						     MODE_SINGLETON;
		break;
	case 'c': o->capacity = number(arg, 1 << 16, 1ULL << 34); break;
	case 'M': o->max_record = (uint32_t)number(arg, 64, 1 << 20); break;
	case 'k': o->fixed_key = !strcmp(arg, "fixed"); break;
	case 't': o->seconds = (long)number(arg, 1, 86400); break;
	case 'd': o->depth = (unsigned)number(arg, 1, DEPTH_MAX); break;
	case 'n': o->records = (long)number(arg, 1, 1L << 40); break;
	case 'w': o->connect_wait = (long)number(arg, 1, 86400); break;
	case 'g': o->go_file = arg; break;
	case 'R': o->reconnects = (long)number(arg, 0, 1000000); break;
	case 'L':
		if (o->nspecs == 8)
			usage();
		o->specs[o->nspecs++] = arg;
		break;
	case 'u':
		if (strcmp(arg, "early") && strcmp(arg, "visible"))
			usage();
		o->unsafe = strcmp(arg, "early") ? UNSAFE_VISIBLE : UNSAFE_EARLY;
		break;
	case 'A': o->ackfile = arg; break;
	case 'x': o->marker = arg; break;
	case 'N': o->name = arg; break;
	case 'i': o->infofile = arg; break;
	case 'K': o->expect_accepted = true; break;
	case 'e':
		if (strcmp(arg, "msg") && strcmp(arg, "rdm"))
			usage();
		o->rdm = !strcmp(arg, "rdm");
		break;
	default: usage();
	}
}

/* Whether the options a role needs are there. */
static bool options_complete(const struct opts *o)
{
	const char *r = o->role;
	bool net = o->addr && o->port;

	if (!strcmp(r, "init"))
		return o->file && o->mode && o->max_record % LINE == 0 &&
		       o->capacity >= o->max_record;
	if (!strcmp(r, "target"))
		return o->file && net;
	if (!strcmp(r, "append"))
		return net && (o->rdm || !o->reconnects);
	if (!strcmp(r, "verify"))
		return (o->file || o->nspecs) && o->ackfile;
	if (!strcmp(r, "learn") || !strcmp(r, "stale"))
		return net && o->infofile && !o->rdm; /* MSG only */
	return false;
}

static void parse_options(int argc, char **argv, struct opts *o)
{
	int c;

	if (argc < 2)
		usage();
	*o = (struct opts){ .role = argv[1], .capacity = DEFAULT_CAPACITY,
			    .max_record = DEFAULT_MAXREC, .depth = 8,
			    .seconds = 60, .connect_wait = 30, .name = "log" };
	optind = 2;
	while ((c = getopt(argc, argv, "f:o:a:P:m:c:M:k:t:d:n:w:g:u:A:x:N:i:Ke:L:R:")) != -1)
		parse_option(c, optarg, o);
	if (optind != argc || !options_complete(o))
		usage();
}

int main(int argc, char **argv)
{
	struct opts o;

	parse_options(argc, argv, &o);
	g_role = o.role;
	if (!strcmp(o.role, "init"))
		return role_init(&o);
	if (!strcmp(o.role, "target"))
		return role_target(&o);
	if (!strcmp(o.role, "append"))
		return role_append(&o);
	if (!strcmp(o.role, "verify"))
		return role_verify(&o);
	if (!strcmp(o.role, "learn"))
		return role_learn(&o);
	return role_stale(&o);
}
