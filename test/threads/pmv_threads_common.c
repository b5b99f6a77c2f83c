/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_threads_common.c - reporting (die, failures), the threads' data
 * patterns and the fabric objects both roles open.
 */
#include "pmv_threads.h"

/* Prints "ERROR <role>: <reason>" on stderr and exits with EXIT_FAIL. */
noreturn void die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "ERROR %s: ", g_role);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	g_dying = true;
	exit(EXIT_FAIL);
}

struct thr_failures g_fail = { .lock = PTHREAD_MUTEX_INITIALIZER };

bool stopped(void)
{
	return __atomic_load_n(&g_fail.stop, __ATOMIC_ACQUIRE);
}

void stop_all(void)
{
	__atomic_store_n(&g_fail.stop, 1, __ATOMIC_RELEASE);
}

/* Records a thread's failure (see g_fail) and stops the run. */
void note_failure(bool early, const char *fmt, ...)
{
	char text[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&g_fail.lock);
	if (!g_fail.count++)
		snprintf(g_fail.first, sizeof(g_fail.first), "%s", text);
	if (early && g_fail.printed++ < 5) {
		printf("DETECTED %s\n", text);
		fflush(stdout);
	}
	pthread_mutex_unlock(&g_fail.lock);
	if (early)
		__atomic_store_n(&g_fail.early, 1, __ATOMIC_RELEASE);
	stop_all();
}

/* ------------------------------------------------------------------ */
/* Data                                                               */
/* ------------------------------------------------------------------ */

uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Next number of a thread's generator (xorshift64*). */
uint64_t rng_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

uint64_t rnd(uint64_t *s, uint64_t bound)
{
	return bound ? rng_next(s) % bound : 0;
}

/* The guard pattern at file offset off. */
uint8_t guard_byte(size_t off)
{
	return (uint8_t)(0xa5 ^ mix64(off));
}

const char *profile_name(enum fi_pmem_profile p)
{
	return fi_pmem_profile_str(p);
}

/* The profile a forced granularity gives a plain file. */
enum fi_pmem_profile profile_of_gran(const char *gran)
{
	if (!strcmp(gran, "page"))
		return FI_PMEM_PROFILE_PAGE;
	if (!strcmp(gran, "cache_line"))
		return FI_PMEM_PROFILE_DMP;
	if (!strcmp(gran, "byte"))
		return FI_PMEM_PROFILE_MHP;
	die("-g %s: page, cache_line or byte", gran);
}

/* ------------------------------------------------------------------ */
/* Fabric                                                             */
/* ------------------------------------------------------------------ */

struct thr_net g_net;

/* pmemverbs MSG hints: FI_RMA_PMEM, FI_THREAD_SAFE, provider keys. */
static struct fi_info *make_hints(void)
{
	struct fi_info *h = pmv_test_pmem_hints();

	if (!h)
		die("out of memory for fi_getinfo hints");
	h->domain_attr->threading = FI_THREAD_SAFE;
	return h;
}

/* Opens fabric, domain (FI_THREAD_SAFE), its pmem ops and one EQ. */
void net_open(uint64_t flags)
{
	struct fi_info *hints = make_hints();
	struct fi_eq_attr eq_attr = { .size = 64, .wait_obj = FI_WAIT_UNSPEC };
	int ret = fi_getinfo(PMV_FI_VERSION, g_opt.addr, g_opt.port, flags,
			     hints, &g_net.info);

	fi_freeinfo(hints);
	if (ret)
		die("fi_getinfo(pmemverbs, FI_THREAD_SAFE, %s:%s): %s (is "
		    "FI_PROVIDER_PATH set to the plugin's directory?)",
		    g_opt.addr, g_opt.port, fi_strerror(-ret));
	if (g_net.info->domain_attr->threading != FI_THREAD_SAFE)
		die("the domain is not FI_THREAD_SAFE (threading %d)",
		    g_net.info->domain_attr->threading);
	CHECK(fi_fabric(g_net.info->fabric_attr, &g_net.fabric, NULL));
	CHECK(fi_domain(g_net.fabric, g_net.info, &g_net.domain, NULL));
	CHECK(fi_open_ops(&g_net.domain->fid, FI_PMEM_DOMAIN_OPS, 0,
			  (void **)&g_net.pmem, NULL));
	CHECK(fi_eq_open(g_net.fabric, &eq_attr, &g_net.eq, NULL));
}

void net_close(void)
{
	CLOSE(g_net.eq);
	CLOSE(g_net.domain);
	CLOSE(g_net.fabric);
	fi_freeinfo(g_net.info);
	memset(&g_net, 0, sizeof(g_net));
}

struct fid_cq *open_cq(void)
{
	struct fi_cq_attr attr = { .size = 1024, .format = g_opt.cq_context ?
				   FI_CQ_FORMAT_CONTEXT : FI_CQ_FORMAT_DATA,
				   .wait_obj = FI_WAIT_NONE };
	struct fid_cq *cq;

	CHECK(fi_cq_open(g_net.domain, &attr, &cq, NULL));
	return cq;
}

/* Opens an endpoint from info on the EQ and cq (both directions). */
struct fid_ep *open_ep(struct fi_info *info, struct fid_cq *cq)
{
	struct fid_ep *ep;

	CHECK(fi_endpoint(g_net.domain, info, &ep, NULL));
	CHECK(fi_ep_bind(ep, &g_net.eq->fid, 0));
	CHECK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_enable(ep));
	return ep;
}

