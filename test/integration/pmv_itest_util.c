/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_itest_util.c - reporting, time bounds, options, the test
 * context's helpers and the data patterns.
 */
#include "pmv_itest.h"

/* ------------------------------------------------------------------ */
/* Reporting                                                          */
/* ------------------------------------------------------------------ */

const char *g_role = "pmv_itest";

/* Prints "<role>: <reason>" on one stderr line and exits with status. */
static noreturn void vreport_exit(int status, const char *prefix,
				  const char *fmt, va_list ap)
{
	fprintf(stderr, "%s%s: ", prefix, g_role);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	exit(status);
}

noreturn void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport_exit(EXIT_FAIL, "", fmt, ap);
}

noreturn void skip(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport_exit(EXIT_SKIP, "SKIP: ", fmt, ap);
}

/* Readable form of a flag word of the given fi_type. */
const char *tostr(char *buf, size_t len, const void *val,
		  enum fi_type type)
{
	fi_tostr_r(buf, len, val, type);
	return buf;
}

/* ------------------------------------------------------------------ */
/* Time bounds                                                        */
/* ------------------------------------------------------------------ */

/* Milliseconds left until deadline, never negative. */
int ms_left(int64_t deadline)
{
	int64_t left = deadline - now_ms();

	return left > 0 ? (int)left : 0;
}

/* Short sleep between polls so busy loops do not starve the peer. */
void poll_pause(void)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = 20000 };

	nanosleep(&ts, NULL);
}

/* ------------------------------------------------------------------ */
/* Options                                                            */
/* ------------------------------------------------------------------ */

noreturn void usage(void)
{
	fprintf(stderr,
		"usage: pmv_itest -p PROVIDER|-n -e msg|rdm -t TEST "
		"-r server|client [-a ADDR] [-P PORT]\n"
		"  -p ''/-n  do not set prov_name (select with FI_PROVIDER)\n"
		"  tests: sendrecv tagged rma atomic cmdata shutdown reject "
		"badaddr waitobj cntr cqerr\n");
	exit(EXIT_USAGE);
}

static enum fi_ep_type parse_ep_type(const char *s)
{
	if (!strcmp(s, "msg"))
		return FI_EP_MSG;
	if (!strcmp(s, "rdm"))
		return FI_EP_RDM;
	usage();
}

static enum role parse_role(const char *s)
{
	if (!strcmp(s, "server"))
		return ROLE_SERVER;
	if (!strcmp(s, "client"))
		return ROLE_CLIENT;
	usage();
}

void parse_opts(int argc, char **argv, struct opts *o)
{
	bool have_prov = false, have_ep = false, have_role = false;
	int ch;

	*o = (struct opts){ .addr = "127.0.0.1", .port = "9230" };
	while ((ch = getopt(argc, argv, "p:ne:t:r:a:P:h")) != -1) {
		switch (ch) {
		case 'p':
			o->prov = optarg[0] ? optarg : NULL;
			have_prov = true;
			break;
		case 'n':
			o->prov = NULL;
			have_prov = true;
			break;
		case 'e':
			o->ep_type = parse_ep_type(optarg);
			have_ep = true;
			break;
		case 't':
			o->test = optarg;
			break;
		case 'r':
			o->role = parse_role(optarg);
			have_role = true;
			break;
		case 'a':
			o->addr = optarg;
			break;
		case 'P':
			o->port = optarg;
			break;
		default:
			usage();
		}
	}
	if (!have_prov || !have_ep || !have_role || !o->test || optind != argc)
		usage();
}

/* ------------------------------------------------------------------ */
/* Test context                                                       */
/* ------------------------------------------------------------------ */

const uint64_t k_cntr_flags[CNTR_COUNT] = { FI_SEND, FI_RECV,
						   FI_WRITE, FI_READ };
const char *const k_cntr_names[CNTR_COUNT] = { "send", "recv",
						      "write", "read" };

bool is_msg(const struct ctx *c)
{
	return c->o->ep_type == FI_EP_MSG;
}

bool is_server(const struct ctx *c)
{
	return c->o->role == ROLE_SERVER;
}

size_t min_size(size_t a, size_t b)
{
	return a < b ? a : b;
}

/* Message length capped at the endpoint's max_msg_size. */
size_t capped(const struct ctx *c, size_t len)
{
	return min_size(len, c->ep_info->ep_attr->max_msg_size);
}

/* Bits of remote CQ data the provider carries (cq_data_size bytes). */
uint64_t cq_data_mask(const struct ctx *c)
{
	size_t bytes = c->ep_info->domain_attr->cq_data_size;

	return bytes >= 8 ? UINT64_MAX : (UINT64_C(1) << (8 * bytes)) - 1;
}

/* ------------------------------------------------------------------ */
/* Data patterns                                                      */
/* ------------------------------------------------------------------ */

/* Byte i of the pattern for seed: differs per byte and per seed. */
static uint8_t pattern_byte(uint32_t seed, size_t i)
{
	return (uint8_t)(i * 31u + (i >> 8) * 7u + seed * 113u + 1u);
}

/* Fills p with pattern bytes first .. first+len-1. */
void fill_pattern(uint8_t *p, size_t len, uint32_t seed, size_t first)
{
	for (size_t i = 0; i < len; i++)
		p[i] = pattern_byte(seed, first + i);
}

/* Describes the first byte where p differs from the pattern; false if none. */
bool pattern_mismatch(const uint8_t *p, size_t len, uint32_t seed,
		      size_t first, char *why, size_t whylen)
{
	for (size_t i = 0; i < len; i++) {
		uint8_t want = pattern_byte(seed, first + i);

		if (p[i] != want) {
			snprintf(why, whylen,
				 "byte %zu of %zu is 0x%02x, expected 0x%02x",
				 first + i, first + len, p[i], want);
			return true;
		}
	}
	return false;
}

void verify_pattern(const char *what, const uint8_t *p, size_t len,
		    uint32_t seed, size_t first)
{
	char why[128];

	if (pattern_mismatch(p, len, seed, first, why, sizeof(why)))
		die("%s: data mismatch: %s", what, why);
}

uint64_t load_u64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

void store_u64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, sizeof(v));
}

/* Two-piece view of m: [0, split) at 0 and [split, len) at BIG_MSG. */
struct split make_split(const struct mreg *m, size_t len, size_t split)
{
	struct split s;

	if (m->len < BIG_MSG + len)
		die("internal: split buffer too small");
	s.iov[0] = (struct iovec){ m->buf, split };
	s.iov[1] = (struct iovec){ m->buf + BIG_MSG, len - split };
	s.desc[0] = s.desc[1] = m->desc;
	return s;
}

void fill_split(const struct split *s, uint32_t seed)
{
	fill_pattern(s->iov[0].iov_base, s->iov[0].iov_len, seed, 0);
	fill_pattern(s->iov[1].iov_base, s->iov[1].iov_len, seed,
		     s->iov[0].iov_len);
}

void verify_split(const char *what, const struct split *s,
		  uint32_t seed)
{
	verify_pattern(what, s->iov[0].iov_base, s->iov[0].iov_len, seed, 0);
	verify_pattern(what, s->iov[1].iov_base, s->iov[1].iov_len, seed,
		       s->iov[0].iov_len);
}
