/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * fi_pmem_overhead: the pass-through cost of pmemverbs, as a ping-pong like
 * fi_pingpong's run over the core provider and over pmemverbs in the same
 * pair of processes, interleaved in short blocks.
 *
 *   server: fi_pmem_overhead [-e msg|rdm] [-c CORE] [-P SECOND] [-B PORT]
 *                            [-S SIZES]
 *                            [-b BLOCKS] [-I ITERS] [-W WARMUP]
 *   client: fi_pmem_overhead [the same options] [--csv] -s SERVER_ADDR
 *
 * Both processes open two stacks: the core alone (CORE, default tcp; for
 * -e rdm "CORE;ofi_rxm") and pmemverbs layered on it ("pmemverbs", for rdm
 * "pmemverbs;ofi_rxm"), each with its own fabric, domain, endpoint and CQ,
 * connected on ports PORT and PORT + 1.  -c and -P name the two stacks'
 * providers: -c pmemverbs -P tcp swaps their places, -P tcp makes both the
 * core (an A/A control: what two identical stacks differ by in one process
 * pair).  For each size the client sends a
 * message and waits for the echo, ITERS times per block, in BLOCKS blocks
 * whose stack follows the pattern core, pmemverbs, pmemverbs, core (ABBA),
 * after WARMUP blocks that are not counted.  Both sides follow the same
 * schedule (same options), so each polls only the active stack's CQ.
 *
 * Separate runs of fi_pingpong on a shared 2-core machine differ by 5-15%
 * from one run to the next; here the two stacks are sampled a millisecond
 * apart for the whole run, so drift hits both alike.  Messages up to the
 * inject size go with fi_inject, larger ones with fi_send, as fi_pingpong
 * does.  The client times every round trip; per size it prints the median
 * round trip of each stack over all its blocks, their ratio (second /
 * first), and the median over adjacent block pairs (one block of each) of
 * the ratio of their medians with its 95% bootstrap interval (2000
 * resamples), which says whether the run resolves a 2% difference.
 * Latency is reported as half the round trip, as fi_pingpong's usec/xfer.
 *
 * Exit status: 0 on success, 1 on a failure, 2 on a usage error.  Every
 * wait is bounded (10 s per operation, 20 s to connect).
 */
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

static void usage(void)
{
	fprintf(stderr, "usage: fi_pmem_overhead [-e msg|rdm] [-c CORE] "
		"[-P SECOND] [-A BIND_ADDR] [-B PORT] [-S SIZES]\n"
		"         [-b BLOCKS] [-I ITERS] [-W WARMUP] [--csv] "
		"[-s SERVER_ADDR]\n"
		"  the server and the client take the same options\n");
}

static int parse_options(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "csv", no_argument, NULL, 'C' }, { NULL, 0, NULL, 0 },
	};
	char sizes[256] = DEFAULT_SIZES;
	int c;

	*o = (struct options) { .ep_type = FI_EP_MSG, .core = "tcp",
				.second = PM_PROVIDER,
				.port = DEFAULT_PORT, .blocks = 2000,
				.iters = 100, .warmup = 8 };
	while ((c = getopt_long(argc, argv, "e:c:P:B:S:b:I:W:s:A:h", longopts,
				NULL)) != -1) {
		switch (c) {
		case 'e':
			if (!pm_parse_ep_type(optarg, &o->ep_type))
				return -1;
			break;
		case 'c': o->core = optarg; break;
		case 'P': o->second = optarg; break;
		case 'B': o->port = optarg; break;
		case 'S': snprintf(sizes, sizeof(sizes), "%s", optarg); break;
		case 'b':
			if (!pm_parse_long(optarg, 4, 1000000, &o->blocks))
				return -1;
			break;
		case 'I':
			if (!pm_parse_long(optarg, 1, 1000000, &o->iters))
				return -1;
			break;
		case 'W':
			if (!pm_parse_long(optarg, 0, 1000, &o->warmup))
				return -1;
			break;
		case 's': o->server = optarg; break;
		case 'A': o->listen = optarg; break;
		case 'C': o->csv = true; break;
		default: return -1;
		}
	}
	if (!o->listen && o->ep_type == FI_EP_RDM)
		o->listen = "127.0.0.1"; /* the address the client is given */
	o->blocks &= ~3L; /* whole ABBA groups */
	o->warmup = (o->warmup + 3) & ~3L;
	return optind == argc && pm_parse_sizes(sizes, 1, MAX_SIZE, o->sizes,
						&o->nsizes) ? 0 : -1;
}

/* The stack block b runs on: core, pmemverbs, pmemverbs, core, ... */
static int stack_of_block(long b)
{
	return (int) (((b + 1) / 2) % 2);
}

/* fi_getinfo for one stack: the client names the server, the server its
 * port. */
static int stack_getinfo(struct stack *s, const struct options *o,
			 const char *port)
{
	struct fi_info *hints = fi_allocinfo();
	int ret;

	if (!hints)
		return -FI_ENOMEM;
	hints->ep_attr->type = o->ep_type;
	hints->caps = FI_MSG;
	hints->mode = FI_CONTEXT | FI_CONTEXT2;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_ALLOCATED |
				      FI_MR_PROV_KEY | FI_MR_VIRT_ADDR;
	hints->domain_attr->threading = FI_THREAD_DOMAIN;
	hints->fabric_attr->prov_name = strdup(s->prov);
	ret = fi_getinfo(PM_FI_VERSION, o->server ? o->server : o->listen,
			 port, o->server ? 0 : FI_SOURCE, hints, &s->info);
	fi_freeinfo(hints);
	if (ret)
		pm_complain("fi_getinfo(%s, %s): %s", s->prov,
			    fi_tostr(&o->ep_type, FI_TYPE_EP_TYPE),
			    fi_strerror(-ret));
	return ret;
}

/* Fabric, domain, CQ and (MSG) EQ or (RDM) AV, and the message buffers. */
static int stack_open(struct stack *s, const struct options *o,
		      const char *port)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_CONTEXT,
				      .wait_obj = FI_WAIT_NONE, .size = 64 };
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_UNSPEC };
	struct fi_av_attr av_attr = { .type = FI_AV_MAP };
	size_t len = 4096;
	int i, ret;

	for (i = 0; i < o->nsizes; i++)
		len = o->sizes[i] + 4096 > len ? o->sizes[i] + 4096 : len;
	s->rx_len = len;
	len *= 2;

	if ((ret = stack_getinfo(s, o, port)) ||
	    (ret = fi_fabric(s->info->fabric_attr, &s->fabric, NULL)) ||
	    (ret = fi_domain(s->fabric, s->info, &s->domain, NULL)) ||
	    (ret = fi_cq_open(s->domain, &cq_attr, &s->cq, NULL)))
		return pm_check(ret, "opening a stack");
	ret = o->ep_type == FI_EP_MSG ?
	      fi_eq_open(s->fabric, &eq_attr, &s->eq, NULL) :
	      fi_av_open(s->domain, &av_attr, &s->av, NULL);
	if (ret)
		return pm_check(ret, "opening the EQ or AV");
	s->inject_size = s->info->tx_attr->inject_size;
	s->tx = aligned_alloc(4096, len);
	if (!s->tx)
		return pm_check(-FI_ENOMEM, "allocating buffers");
	memset(s->tx, 0xa5, len);
	s->rx = s->tx + s->rx_len;
	if (!(s->info->domain_attr->mr_mode & FI_MR_LOCAL))
		return 0;
	ret = fi_mr_reg(s->domain, s->tx, len, FI_SEND | FI_RECV, 0,
			PM_LOCAL_MR_KEY, 0, &s->mr, NULL);
	s->desc = ret ? NULL : fi_mr_desc(s->mr);
	return pm_check(ret, "registering the buffers");
}

/* Opens the endpoint from info, binds it and enables it. */
static int stack_endpoint(struct stack *s, struct fi_info *info)
{
	int ret = fi_endpoint(s->domain, info, &s->ep, NULL);

	if (!ret)
		ret = fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV);
	if (!ret)
		ret = s->eq ? fi_ep_bind(s->ep, &s->eq->fid, 0) :
			      fi_ep_bind(s->ep, &s->av->fid, 0);
	if (!ret)
		ret = fi_enable(s->ep);
	return pm_check(ret, "opening the endpoint");
}

static int post_recv(struct stack *s)
{
	return pm_check(fi_recv(s->ep, s->rx, s->rx_len, s->desc, s->peer,
				&s->rx_ctx), "fi_recv");
}

/* Reads one CQ entry, if any: notes a completed receive or send. */
static int poll_once(struct stack *s)
{
	struct fi_cq_entry e;
	ssize_t n = fi_cq_read(s->cq, &e, 1);

	if (n == 1) {
		s->rx_done |= e.op_context == &s->rx_ctx;
		s->tx_busy &= e.op_context != &s->tx_ctx;
		return 0;
	}
	if (n == -FI_EAVAIL)
		return pm_report_cq_error(s->cq, "ping-pong");
	return n == -FI_EAGAIN ? 0 : pm_check(n, "fi_cq_read");
}

/* True (after a message) once the deadline passed; checked every 1024. */
static bool expired(struct stack *s, unsigned *spins, int64_t deadline)
{
	if ((++*spins & 1023) || !pm_past(deadline))
		return false;
	pm_complain("%s: no progress within 10 s", s->prov);
	return true;
}

static int wait_cq(struct stack *s, bool want_rx);

/*
 * Sends size bytes: fi_inject up to the inject size, else fi_send, once
 * the stack's previous send completed; while the provider says -FI_EAGAIN
 * (ofi_rxm connecting), its CQ is read.
 */
static int post_send(struct stack *s, size_t size)
{
	int64_t deadline = pm_now_ns() + PM_OP_TIMEOUT_NS;
	unsigned spins = 0;
	ssize_t ret;

	if (s->tx_busy && (ret = wait_cq(s, false)))
		return (int) ret;
	s->tx_busy = size > s->inject_size;
	for (;;) {
		ret = s->tx_busy ?
		      fi_send(s->ep, s->tx, size, s->desc, s->peer, &s->tx_ctx) :
		      fi_inject(s->ep, s->tx, size, s->peer);
		if (ret != -FI_EAGAIN)
			return pm_check(ret, "sending");
		if ((ret = poll_once(s)))
			return (int) ret;
		if (expired(s, &spins, deadline))
			return -FI_ETIMEDOUT;
	}
}

/*
 * Spins on the CQ until the receive (want_rx; its completion is consumed)
 * or else the send completed.  While setting up it sleeps between polls: a process running SCHED_FIFO
 * on one CPU would otherwise starve the provider's own threads (ofi_rxm's
 * connection setup).
 */
static int wait_cq(struct stack *s, bool want_rx)
{
	int64_t deadline = pm_now_ns() + PM_OP_TIMEOUT_NS;
	unsigned spins = 0;
	int ret;

	while (want_rx ? !s->rx_done : s->tx_busy) {
		if ((ret = poll_once(s)))
			return ret;
		if (expired(s, &spins, deadline))
			return -FI_ETIMEDOUT;
		if (s->setting_up)
			usleep(100);
	}
	s->rx_done &= !want_rx;
	return 0;
}

/* MSG server: listen, accept one connection. */
static int msg_accept(struct stack *s)
{
	struct fi_eq_cm_entry entry;
	int ret;

	if ((ret = fi_passive_ep(s->fabric, s->info, &s->pep, NULL)) ||
	    (ret = fi_pep_bind(s->pep, &s->eq->fid, 0)) ||
	    (ret = fi_listen(s->pep)))
		return pm_check(ret, "listening");
	ret = pm_wait_for_cm_event(s->eq, FI_CONNREQ, PM_CM_TIMEOUT_NS * 3,
				   "connection request", &entry, 0);
	if (ret)
		return ret;
	ret = stack_endpoint(s, entry.info);
	fi_freeinfo(entry.info);
	if (ret || (ret = post_recv(s)))
		return ret;
	if ((ret = fi_accept(s->ep, NULL, 0)))
		return pm_check(ret, "fi_accept");
	return pm_wait_for_cm_event(s->eq, FI_CONNECTED, PM_CM_TIMEOUT_NS,
				    "connection", &entry, 0);
}

/* MSG client: connect, retrying while the server is not listening. */
static int msg_connect(struct stack *s)
{
	int64_t deadline = pm_now_ns() + PM_CM_TIMEOUT_NS;
	struct fi_eq_cm_entry entry;
	int ret;

	for (;;) {
		if ((ret = stack_endpoint(s, s->info)))
			return ret;
		ret = fi_connect(s->ep, s->info->dest_addr, NULL, 0);
		if (!ret)
			ret = pm_wait_for_cm_event(s->eq, FI_CONNECTED,
						   PM_CM_TIMEOUT_NS, "connection",
						   &entry, FI_ECONNREFUSED);
		/* the receive goes on the endpoint that connected: a refused
		 * one's would leave a canceled entry in the CQ */
		if (!ret)
			return post_recv(s);
		if (pm_past(deadline))
			return pm_check(ret, "connecting");
		fi_close(&s->ep->fid);
		s->ep = NULL;
		pm_sleep_ms(PM_RETRY_INTERVAL_MS);
	}
}

/*
 * RDM: the client sends its address, the server inserts it and answers, so
 * that each stack's connection is up before the next stack is set up.
 */
static int rdm_setup(struct stack *s, bool client)
{
	size_t len = 256;
	int ret;

	s->peer = FI_ADDR_UNSPEC;
	s->setting_up = true;
	if ((ret = stack_endpoint(s, s->info)) || (ret = post_recv(s)))
		return ret;
	if (!client) {
		if ((ret = wait_cq(s, true)))
			return ret;
		if (fi_av_insert(s->av, s->rx, 1, &s->peer, 0, NULL) != 1)
			return pm_check(-FI_EINVAL, "inserting the client");
		if ((ret = post_recv(s)) || (ret = post_send(s, 8)) ||
		    (ret = wait_cq(s, false)))
			return ret;
		s->setting_up = false;
		return 0;
	}
	if (fi_av_insert(s->av, s->info->dest_addr, 1, &s->peer, 0, NULL) != 1)
		return pm_check(-FI_EINVAL, "inserting the server");
	if ((ret = fi_getname(&s->ep->fid, s->tx, &len)))
		return pm_check(ret, "fi_getname");
	if ((ret = post_send(s, len)) || (ret = wait_cq(s, true)))
		return ret;
	s->setting_up = false;
	return post_recv(s);
}

static int stack_connect(struct stack *s, const struct options *o)
{
	if (o->ep_type == FI_EP_RDM)
		return rdm_setup(s, o->server != NULL);
	return o->server ? msg_connect(s) : msg_accept(s);
}

static void stack_close(struct stack *s)
{
	pm_close_fid(s->ep ? &s->ep->fid : NULL, "endpoint");
	pm_close_fid(s->pep ? &s->pep->fid : NULL, "passive endpoint");
	pm_close_fid(s->mr ? &s->mr->fid : NULL, "memory region");
	pm_close_fid(s->av ? &s->av->fid : NULL, "address vector");
	pm_close_fid(s->cq ? &s->cq->fid : NULL, "CQ");
	pm_close_fid(s->eq ? &s->eq->fid : NULL, "EQ");
	pm_close_fid(s->domain ? &s->domain->fid : NULL, "domain");
	pm_close_fid(s->fabric ? &s->fabric->fid : NULL, "fabric");
	fi_freeinfo(s->info);
	free(s->tx);
}

/* One round trip on the client (its time in *ns), one echo on the server. */
static int ping(struct stack *s, size_t size, bool client, int64_t *ns)
{
	int64_t start = pm_now_ns();
	int ret;

	if (client && (ret = post_send(s, size)))
		return ret;
	if ((ret = wait_cq(s, true)) || (ret = post_recv(s)))
		return ret;
	if (!client)
		return post_send(s, size);
	*ns = pm_now_ns() - start;
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *) a, y = *(const double *) b;

	return (x > y) - (x < y);
}

/* Median of n values (sorted in place). */
static double median(double *v, long n)
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

/* What the client measured for one size. */
struct result {
	int64_t *samples[NSTACKS]; /* every round trip, ns */
	long nsamples[NSTACKS];
	double *block_median;      /* per counted block, ns */
};

static void report(const struct options *o, size_t size, struct result *r)
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

/* The blocks of one size, on both sides; the client reports. */
static int run_size(const struct options *o, struct stack *st, size_t size)
{
	long total = o->warmup + o->blocks, b, i;
	struct result r = { 0 };
	double *block = malloc(o->iters * sizeof(*block));
	int64_t ns = 0;
	int ret = 0;

	r.block_median = malloc(o->blocks * sizeof(double));
	for (i = 0; i < NSTACKS; i++)
		r.samples[i] = malloc(o->blocks / 2 * o->iters * sizeof(int64_t));
	if (!block || !r.block_median || !r.samples[FIRST] || !r.samples[SECOND])
		ret = pm_check(-FI_ENOMEM, "allocating the samples");
	for (b = 0; b < total && !ret; b++) {
		struct stack *s = &st[stack_of_block(b)];

		for (i = 0; i < o->iters && !ret; i++) {
			ret = ping(s, size, o->server != NULL, &ns);
			block[i] = (double) ns;
			if (b >= o->warmup && o->server)
				r.samples[stack_of_block(b)]
					 [r.nsamples[stack_of_block(b)]++] = ns;
		}
		/* the last send of a block completes before the other stack's
		 * block: a large ofi_rxm message is read by the peer, whose
		 * reads only this side's progress on this stack serves */
		if (!ret && s->tx_busy)
			ret = wait_cq(s, false);
		if (b >= o->warmup)
			r.block_median[b - o->warmup] = median(block, o->iters);
	}
	if (!ret && o->server)
		report(o, size, &r);
	for (i = 0; i < NSTACKS; i++)
		free(r.samples[i]);
	free(r.block_median);
	free(block);
	return ret;
}

/* Opens and connects both stacks: the core on PORT, pmemverbs on PORT+1. */
static int open_stacks(const struct options *o, struct stack *st)
{
	char port[16];
	int i, ret;

	for (i = 0; i < NSTACKS; i++) {
		snprintf(st[i].prov, sizeof(st[i].prov), "%s",
			 i == FIRST ? o->core : o->second);
		snprintf(port, sizeof(port), "%d", atoi(o->port) + i);
		if ((ret = stack_open(&st[i], o, port)) ||
		    (ret = stack_connect(&st[i], o)))
			return ret;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct stack st[NSTACKS] = { 0 };
	struct options o;
	int i, ret;

	if (parse_options(argc, argv, &o)) {
		usage();
		return PM_EXIT_USAGE;
	}
	ret = open_stacks(&o, st);
	if (!ret && o.server && !o.csv)
		printf("%-4s %8s %12.12s %12.12s %8s %10s %s\n", "ep", "size",
		       o.core, o.second, "ratio", "pair_ratio", "95% interval");
	if (!ret && o.server && o.csv)
		printf("ep,size,first,second,first_usec,second_usec,ratio,"
		       "pair_ratio_median,pair_ratio_ci95_lo,"
		       "pair_ratio_ci95_hi,blocks,iters_per_block\n");
	for (i = 0; !ret && i < o.nsizes; i++)
		ret = run_size(&o, st, o.sizes[i]);
	for (i = NSTACKS - 1; i >= 0; i--)
		stack_close(&st[i]);
	return ret ? PM_EXIT_FAIL : PM_EXIT_PASS;
}
