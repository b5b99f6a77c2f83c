/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * fi_pmem_overhead: what its files share (see fi_pmem_overhead.c for the
 * program): the options, one stack's objects, a size's results and the
 * functions one file defines and another calls.
 */
#ifndef FI_PMEM_OVERHEAD_H
#define FI_PMEM_OVERHEAD_H

#include <getopt.h>
#include <math.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/pmem_common.h"

#define DEFAULT_PORT "9250"
#define DEFAULT_SIZES "64,256,1024,4096,16384,65536"
#define MAX_SIZE (1UL << 20)
#define BOOTSTRAP 2000

struct options {
	enum fi_ep_type ep_type;
	const char *core;
	const char *second; /* pmemverbs, or the core for an A/A control */
	const char *port;
	const char *server;
	const char *listen;  /* the server's address (-A) */
	size_t sizes[PM_MAX_SIZES];
	int nsizes;
	long blocks, iters, warmup;
	bool csv;
};

/* One provider stack, connected to the peer's. */
struct stack {
	char prov[64];
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *eq;
	struct fid_pep *pep;
	struct fid_av *av;
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct fid_mr *mr;
	void *desc;
	fi_addr_t peer;
	char *tx, *rx;
	size_t rx_len;
	size_t inject_size;
	struct fi_context2 tx_ctx, rx_ctx;
	bool tx_busy, rx_done;
	bool setting_up; /* wait_cq sleeps between polls */
};

enum { FIRST, SECOND, NSTACKS };

/* What the client measured for one size. */
struct result {
	int64_t *samples[NSTACKS]; /* every round trip, ns */
	long nsamples[NSTACKS];
	double *block_median;      /* per counted block, ns */
};

/* Functions one file of the program defines and another calls. */
void usage(void);
int parse_options(int argc, char **argv, struct options *o);
int stack_of_block(long b);
int stack_open(struct stack *s, const struct options *o,
	       const char *port);
int wait_cq(struct stack *s, bool want_rx);
int stack_connect(struct stack *s, const struct options *o);
void stack_close(struct stack *s);
int ping(struct stack *s, size_t size, bool client, int64_t *ns);
double median(double *v, long n);
void report(const struct options *o, size_t size, struct result *r);

#endif /* FI_PMEM_OVERHEAD_H */
