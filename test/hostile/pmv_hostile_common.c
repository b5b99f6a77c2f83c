/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_hostile_common.c - what every role uses: information lines,
 * the byte patterns, the control file, fabric queries and the region's
 * zones.
 */
#include "pmv_hostile.h"

/* Prints an information line (no verdict). */
void info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

/* splitmix64's finalizer: the test's deterministic byte source. */
uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* The byte every untouched region offset holds. */
uint8_t pattern_byte(uint64_t off)
{
	return (uint8_t)mix64(off ^ 0x504154544552ULL);
}

/* The byte honest commit i writes at region offset off. */
uint8_t honest_byte(uint64_t i, uint64_t off)
{
	return (uint8_t)mix64((i << 20) ^ off ^ 0x484f4e455354ULL);
}

/* The byte the hostile's valid send places at zone A offset k. */
uint8_t zone_a_byte(uint64_t k)
{
	return (uint8_t)mix64(k ^ 0x5a4f4e4541ULL);
}

/* The hostile's random numbers (seeded: a run can be repeated). */
uint64_t rnd64(void)
{
	static uint64_t state;

	if (!state)
		state = mix64(g_opt.seed) | 1;
	return mix64(state++);
}

uint64_t rnd(uint64_t bound)
{
	return bound ? rnd64() % bound : 0;
}

/* The honest commit kinds: slot s has kind s % 4, the same every time. */
const struct hkind k_kinds[4] = {
	{ { { 0, 1000 } }, 1, false, false },
	{ { { 8, 24 } }, 1, false, false },
	{ { { 0, 300 }, { 500, 300 } }, 2, true, false },
	{ { { 16, 40 } }, 1, false, true },
};

/* The mapped control file (-c). */
struct ctl *ctl_map(void)
{
	int fd = open(g_opt.ctl, O_RDWR);
	void *p;

	if (fd < 0)
		die("opening %s: %s", g_opt.ctl, strerror(errno));
	p = mmap(NULL, sizeof(struct ctl), PROT_READ | PROT_WRITE, MAP_SHARED,
		 fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		die("mapping %s: %s", g_opt.ctl, strerror(errno));
	return p;
}

uint64_t ctl_load(const uint64_t *word)
{
	return __atomic_load_n(word, __ATOMIC_ACQUIRE);
}

void ctl_store(uint64_t *word, uint64_t v)
{
	__atomic_store_n(word, v, __ATOMIC_RELEASE);
}

/* fi_info hints for an FI_EP_MSG endpoint of prov over sockets. */
static struct fi_info *make_hints(const char *prov, bool pmem)
{
	struct fi_info *h = fi_allocinfo();

	if (!h)
		die("fi_allocinfo failed");
	h->ep_attr->type = FI_EP_MSG;
	h->caps = FI_MSG | FI_RMA | (pmem ? FI_RMA_PMEM : 0);
	h->mode = FI_CONTEXT | FI_CONTEXT2;
	h->addr_format = FI_SOCKADDR_IN;
	h->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				  FI_MR_PROV_KEY;
	h->fabric_attr->prov_name = strdup(prov);
	if (!h->fabric_attr->prov_name)
		die("out of memory");
	return h;
}

/* The first entry of prov for addr:port (FI_SOURCE: to listen on it). */
struct fi_info *query_info(const char *prov, bool pmem, uint64_t flags)
{
	struct fi_info *hints = make_hints(prov, pmem), *info = NULL;
	int ret = fi_getinfo(PMV_FI_VERSION, g_opt.addr, g_opt.port, flags,
			     hints, &info);

	fi_freeinfo(hints);
	if (ret)
		die("fi_getinfo(%s, %s:%s): %s", prov, g_opt.addr, g_opt.port,
		    fi_strerror(-ret));
	return info;
}

struct fid_eq *open_eq(struct fid_fabric *fabric)
{
	struct fi_eq_attr attr = { .size = 64, .wait_obj = FI_WAIT_UNSPEC };
	struct fid_eq *eq;

	CHECK(fi_eq_open(fabric, &attr, &eq, NULL));
	return eq;
}

struct fid_cq *open_cq(struct fid_domain *domain)
{
	struct fi_cq_attr attr = { .size = 1024, .format = FI_CQ_FORMAT_DATA,
				   .wait_obj = FI_WAIT_NONE };
	struct fid_cq *cq;

	CHECK(fi_cq_open(domain, &attr, &cq, NULL));
	return cq;
}

/* Name of an ack status: a PMV_ERR_* code, 0, or an fi_errno code. */
const char *status_name(int32_t status)
{
	static const char *const names[] = {
		"PMV_ERR_BASE", "PMV_ERR_NO_KEY", "PMV_ERR_RANGE",
		"PMV_ERR_ACCESS", "PMV_ERR_MULTI_IOV", "PMV_ERR_PEER_GONE",
		"PMV_ERR_FENCE", "PMV_ERR_METHOD", "PMV_ERR_REREGISTERED",
		"PMV_ERR_CLOSED", "PMV_ERR_PEER_TIMEOUT", "PMV_ERR_PERSIST",
		"PMV_ERR_BAD_REQUEST",
	};
	static char buf[48];

	if (status == 0)
		return "0 (served)";
	if (status >= PMV_ERR_BASE && status < PMV_ERR_LAST)
		return names[status - PMV_ERR_BASE];
	snprintf(buf, sizeof(buf), "status %" PRId32 " (%s)", status,
		 fi_strerror(status < 0 ? -status : status));
	return buf;
}

/* ------------------------------------------------------------------ */
/* The region's zones                                                 */
/* ------------------------------------------------------------------ */

enum zone zone_of(uint32_t off)
{
	if (off < EDGE || off >= REGION_LEN - EDGE)
		return Z_EDGE;
	if (off >= HONEST_OFF && off < HONEST_OFF + HONEST_SLOTS * HONEST_SLOT)
		return Z_HONEST;
	if (off >= ZONE_A_OFF && off < ZONE_A_OFF + ZONE_A_LEN)
		return Z_A;
	if (off >= ZONE_B_OFF && off < ZONE_B_OFF + ZONE_B_LEN)
		return Z_B;
	return Z_OTHER;
}

/* The byte at honest-zone offset off after honest commits 0 .. n-1. */
uint8_t honest_expected(uint64_t n, uint32_t off)
{
	uint32_t rel = off - HONEST_OFF, s = rel / HONEST_SLOT;
	uint32_t in = rel % HONEST_SLOT;
	const struct hkind *k = &k_kinds[s % 4];
	uint64_t last;

	if (n <= s)
		return pattern_byte(off);
	last = s + (n - 1 - s) / HONEST_SLOTS * HONEST_SLOTS;
	for (unsigned j = 0; j < k->n; j++)
		if (in >= k->p[j].off && in < k->p[j].off + k->p[j].len)
			return honest_byte(last, off);
	return pattern_byte(off);
}
