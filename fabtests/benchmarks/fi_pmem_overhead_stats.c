/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * fi_pmem_overhead: a size's statistics and its report (see
 * fi_pmem_overhead.c): medians, the bootstrap interval of the pair ratio,
 * the text or CSV row.
 */
#include "fi_pmem_overhead.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *) a, y = *(const double *) b;

	return (x > y) - (x < y);
}

/* Median of n values (sorted in place). */
double median(double *v, long n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Median of the pair ratios and its 95% bootstrap interval (NaN: no
 * memory). */
static void pair_ratio_ci(const double *ratio, long n, double out[3])
{
	double *w = malloc(n * sizeof(*w));
	double *boot = malloc(BOOTSTRAP * sizeof(*boot));
	unsigned seed = 12345;
	long b, i;

	out[0] = out[1] = out[2] = NAN;
	if (w && boot) {
		memcpy(w, ratio, n * sizeof(*w));
		out[0] = median(w, n);
		for (b = 0; b < BOOTSTRAP; b++) {
			for (i = 0; i < n; i++)
				w[i] = ratio[rand_r(&seed) % n];
			boot[b] = median(w, n);
		}
		qsort(boot, BOOTSTRAP, sizeof(*boot), cmp_double);
		out[1] = boot[BOOTSTRAP / 40];
		out[2] = boot[BOOTSTRAP - 1 - BOOTSTRAP / 40];
	}
	free(w);
	free(boot);
}
void report(const struct options *o, size_t size, struct result *r)
{
	long pairs = o->blocks / 2, k;
	double *ratio = malloc(pairs * sizeof(*ratio)), ci[3], p50[NSTACKS];
	struct pm_stats st;
	int i;

	if (!ratio) {
		pm_check(-FI_ENOMEM, "allocating the ratios");
		return;
	}
	for (i = 0; i < NSTACKS; i++) {
		pm_summarize(r->samples[i], r->nsamples[i], &st);
		p50[i] = st.p50_us / 2;
	}
	for (k = 0; k < pairs; k++) {
		double a = r->block_median[2 * k], b = r->block_median[2 * k + 1];

		/* blocks 2k and 2k+1 hold one stack each (ABBA) */
		ratio[k] = stack_of_block(o->warmup + 2 * k) == SECOND ? a / b :
								       b / a;
	}
	pair_ratio_ci(ratio, pairs, ci);
	if (o->csv)
		printf("%s,%zu,%s,%s,%.3f,%.3f,%.4f,%.4f,%.4f,%.4f,%ld,%ld\n",
		       o->ep_type == FI_EP_RDM ? "rdm" : "msg", size, o->core,
		       o->second, p50[FIRST], p50[SECOND],
		       p50[SECOND] / p50[FIRST], ci[0], ci[1], ci[2],
		       o->blocks, o->iters);
	else
		printf("%-4s %8zu %12.3f %12.3f %8.4f %10.4f %.4f-%.4f\n",
		       o->ep_type == FI_EP_RDM ? "rdm" : "msg", size,
		       p50[FIRST], p50[SECOND], p50[SECOND] / p50[FIRST],
		       ci[0], ci[1], ci[2]);
	fflush(stdout);
	free(ratio);
}
