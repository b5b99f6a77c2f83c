/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmem_common: code shared by the pmemverbs fabtests; see pmem_common.h:
 * output, time, option parsing, the fabric and domain, statistics.  A
 * connection's queues, regions and messages are in pmem_conn.c; a session's
 * target and initiator ends in pmem_session.c.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pmem_common.h"

const char *pm_role = "[fi_pmem]";

/* ---------------------------------------------------------------- output */

void pm_say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "%s ", pm_role);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
}

void pm_complain(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fflush(stdout);
	fprintf(stderr, "%s error: ", pm_role);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
}

int pm_check(ssize_t ret, const char *what)
{
	if (ret < 0)
		pm_complain("%s: %s", what, fi_strerror((int) -ret));
	return (int) (ret < 0 ? ret : 0);
}

/* ------------------------------------------------------------------ time */

int64_t pm_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * PM_NS_PER_S + ts.tv_nsec;
}

bool pm_past(int64_t deadline)
{
	return pm_now_ns() >= deadline;
}

void pm_sleep_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };

	nanosleep(&ts, NULL);
}

void pm_sleep_ms(int ms)
{
	pm_sleep_us((long) ms * 1000);
}

/* --------------------------------------------------------------- options */

bool pm_parse_long(const char *text, long min, long max, long *out)
{
	char *end;
	long value;

	errno = 0;
	value = strtol(text, &end, 10);
	if (errno || end == text || *end || value < min || value > max) {
		fprintf(stderr, "invalid number \"%s\" (%ld..%ld)\n", text,
			min, max);
		return false;
	}
	*out = value;
	return true;
}

bool pm_parse_sizes(char *list, size_t min, size_t max, size_t *sizes,
		    int *nsizes)
{
	char *save = NULL, *item;
	long size;

	*nsizes = 0;
	for (item = strtok_r(list, ",", &save); item;
	     item = strtok_r(NULL, ",", &save)) {
		if (*nsizes == PM_MAX_SIZES ||
		    !pm_parse_long(item, (long) min, (long) max, &size))
			return false;
		sizes[(*nsizes)++] = (size_t) size;
	}
	return *nsizes > 0;
}

bool pm_parse_ep_type(const char *text, enum fi_ep_type *type)
{
	if (!strcmp(text, "msg"))
		*type = FI_EP_MSG;
	else if (!strcmp(text, "rdm"))
		*type = FI_EP_RDM;
	else {
		fprintf(stderr, "invalid endpoint type \"%s\" (msg or rdm)\n",
			text);
		return false;
	}
	return true;
}

bool pm_is_pmemverbs(const char *prov)
{
	return !strcmp(prov, PM_PROVIDER);
}

enum fi_ep_type pm_ep_type = FI_EP_MSG;

const char *pm_ep_type_name(void)
{
	return pm_ep_type == FI_EP_RDM ? "rdm" : "msg";
}

static struct fi_info *pm_hints(const char *prov, enum fi_ep_type type);

int pm_check_ep_type(const char *prov, enum fi_ep_type type)
{
	struct fi_info *hints, *info = NULL;
	int ret;

	pm_ep_type = type;
	if (type == FI_EP_MSG)
		return PM_EXIT_PASS;
	hints = pm_hints(prov, type);
	ret = hints ? fi_getinfo(PM_FI_VERSION, NULL, NULL, 0, hints, &info) :
		      -FI_ENOMEM;
	fi_freeinfo(hints);
	fi_freeinfo(info);
	if (!ret)
		return PM_EXIT_PASS;
	printf("FI_EP_RDM: unsupported: fi_getinfo(%s, FI_EP_RDM, FI_MSG | "
	       "FI_RMA%s): %s\n", prov, pm_is_pmemverbs(prov) || pm_core_pmem ?
	       " | FI_RMA_PMEM" : "", fi_strerror(-ret));
	fflush(stdout);
	return PM_EXIT_SKIP;
}

/* ------------------------------------------------------- fabric, domain */

bool pm_has_mr_mode(const struct pm_fabric *res, int bit)
{
	return (res->info->domain_attr->mr_mode & bit) != 0;
}

bool pm_core_pmem;

/* Endpoint hints of type; FI_RMA_PMEM for pmemverbs, and for another
 * provider (a core's own FI_COMMIT_COMPLETE) when pm_core_pmem is set. */
static struct fi_info *pm_hints(const char *prov, enum fi_ep_type type)
{
	struct fi_info *hints = fi_allocinfo();

	if (!hints)
		return NULL;
	hints->caps = FI_MSG | FI_RMA | (pm_is_pmemverbs(prov) ||
					 pm_core_pmem ? FI_RMA_PMEM : 0);
	hints->mode = FI_CONTEXT | FI_CONTEXT2;
	hints->ep_attr->type = type;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				      FI_MR_ALLOCATED | FI_MR_PROV_KEY |
				      FI_MR_ENDPOINT;
	hints->fabric_attr->prov_name = strdup(prov);
	if (!hints->fabric_attr->prov_name) {
		fi_freeinfo(hints);
		return NULL;
	}
	return hints;
}

/* fi_getinfo: the listening address on the target, the server's else. */
static int pm_find_provider(const char *prov, const char *server,
			    const char *port, struct fi_info **info)
{
	const char *node = server ? server : PM_LISTEN_ADDR;
	uint64_t flags = server ? 0 : FI_SOURCE;
	struct fi_info *hints = pm_hints(prov, pm_ep_type);
	int ret;

	if (!hints)
		return pm_check(-FI_ENOMEM, "allocating fi_info hints");
	ret = fi_getinfo(PM_FI_VERSION, node, port, flags, hints, info);
	fi_freeinfo(hints);
	if (ret)
		pm_complain("fi_getinfo found no %s %s endpoint with RMA "
			    "for %s port %s: %s (for pmemverbs, does "
			    "FI_PROVIDER_PATH hold libpmemverbs-fi.so? set "
			    "FI_LOG_LEVEL=warn to see why)", prov,
			    fi_tostr(&pm_ep_type, FI_TYPE_EP_TYPE), node,
			    port, fi_strerror(-ret));
	return ret;
}

int pm_open_fabric(const char *prov, const char *server, const char *port,
		   struct pm_fabric *res)
{
	struct fi_eq_attr eq_attr = { .size = 16, .wait_obj = FI_WAIT_UNSPEC };
	int ret = pm_find_provider(prov, server, port, &res->info);

	if (!ret)
		ret = pm_check(fi_fabric(res->info->fabric_attr, &res->fabric,
					 NULL), "fi_fabric");
	if (!ret)
		ret = pm_check(fi_eq_open(res->fabric, &eq_attr, &res->eq,
					  NULL), "fi_eq_open");
	if (!ret)
		pm_wait_set_fabric(res->fabric, res->eq);
	if (!ret)
		ret = pm_check(fi_domain(res->fabric, res->info, &res->domain,
					 NULL), "fi_domain");
	if (!ret && pm_ep_type == FI_EP_RDM)
		ret = pm_rdm_open_av(res);
	/* pmemverbs's RDM domain is ofi_rxm's: no FI_PMEM_DOMAIN_OPS there */
	if (!ret && pm_is_pmemverbs(prov) && pm_ep_type == FI_EP_MSG)
		ret = pm_check(fi_open_ops(&res->domain->fid,
					   FI_PMEM_DOMAIN_OPS, 0,
					   (void **) &res->pmem_ops, NULL),
			       "fi_open_ops(" FI_PMEM_DOMAIN_OPS ")");
	return ret;
}

void pm_close_fid(struct fid *fid, const char *what)
{
	if (fid)
		pm_check(fi_close(fid), what);
}

void pm_close_fabric(struct pm_fabric *res)
{
	pm_close_fid(res->av ? &res->av->fid : NULL, "closing the AV");
	pm_close_fid(res->domain ? &res->domain->fid : NULL,
		     "closing the domain");
	pm_close_fid(res->eq ? &res->eq->fid : NULL, "closing the EQ");
	pm_close_fid(res->fabric ? &res->fabric->fid : NULL,
		     "closing the fabric");
	fi_freeinfo(res->info);
	memset(res, 0, sizeof(*res));
}

/* ----------------------------------------------------------------- stats */

static int pm_compare_int64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *) a, y = *(const int64_t *) b;

	return (x > y) - (x < y);
}

/* Nearest-rank percentile q (0 < q <= 1) of n sorted samples. */
static int64_t pm_percentile(const int64_t *sorted, long n, double q)
{
	long rank = (long) ceil(q * (double) n);

	return sorted[rank < 1 ? 0 : rank - 1];
}

void pm_summarize(int64_t *samples, long n, struct pm_stats *s)
{
	double sum = 0;
	long i;

	qsort(samples, (size_t) n, sizeof(*samples), pm_compare_int64);
	for (i = 0; i < n; i++)
		sum += (double) samples[i];
	s->p50_us = pm_percentile(samples, n, 0.50) / 1e3;
	s->p99_us = pm_percentile(samples, n, 0.99) / 1e3;
	s->max_us = samples[n - 1] / 1e3;
	s->mean_us = sum / (double) n / 1e3;
}
