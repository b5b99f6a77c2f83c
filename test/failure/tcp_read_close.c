/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * tcp_read_close: does the tcp core survive closing an endpoint while an
 * RMA read response is arriving?  No pmemverbs: the plain core provider.
 *
 * One process plays both sides over 127.0.0.1.  Each round connects an
 * endpoint A on a shared transmit CQ, posts two 1 MiB fi_read, lets part of
 * the responses arrive, and closes A.  Then an endpoint B on the same CQ
 * writes 64-byte patterns and reads them back (32 operations): each must
 * complete within 5 s and read back what it wrote.
 *
 * libfabric 1.17's tcp provider (tcpx) frees the read's transfer entry
 * twice when A closes mid-response: once from its rma_read_queue and once
 * as cur_rx.entry.  The CQ's pool then hands one entry to two of B's
 * operations, B's byte stream loses its framing, and the peer stalls on a
 * "message" made of payload bytes.
 *
 *   usage: tcp_read_close [-c] [-p PROVIDER] [-P PORT] [-r ROUNDS]
 *          -c  control: endpoint B's rounds alone, no A closed before
 *   exit:  0 survived every round, 1 the defect (a stall or wrong bytes),
 *          2 usage or setup error
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_rma.h>

#include "../common/pmv_test_time.h"

#define BIG ((size_t)1 << 20)
#define SMALL 64
#define B_OPS 32
#define STALL_MS 5000
#define EXIT_DEFECT 1
#define EXIT_SETUP 2

struct world {
	struct fi_info *info;     /* the server's: its listening address */
	struct fi_info *cli_info; /* the client's: the server as destination */
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *eq;
	struct fid_pep *pep;
	struct fid_cq *srv_cq;  /* every server endpoint's CQ */
	struct fid_cq *cli_cq;  /* the shared client CQ */
	struct fid_mr *srv_mr, *cli_mr;
	uint8_t *srv_buf, *cli_buf;
	uint64_t srv_key;
	uint64_t srv_base;        /* remote address of srv_buf: 0 or its address */
	size_t len;
};

static struct world w;
static const char *g_prov = "tcp";
static const char *g_port = "10990";
static unsigned g_rounds = 40;
static bool g_control; /* -c: B alone, no endpoint A closed before it */

static _Noreturn void fail(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(code);
}

#define CHECK(call)                                                       \
	do {                                                              \
		int ret_ = (int)(call);                                   \
		if (ret_)                                                 \
			fail(EXIT_SETUP, "%s: %s", #call, fi_strerror(-ret_)); \
	} while (0)

static struct fid_cq *open_cq(void)
{
	struct fi_cq_attr attr = { .format = FI_CQ_FORMAT_CONTEXT,
				   .size = 1024 };
	struct fid_cq *cq;

	CHECK(fi_cq_open(w.domain, &attr, &cq, NULL));
	return cq;
}

static struct fid_mr *reg(void *buf, size_t len, uint64_t access,
			  uint64_t key)
{
	struct fid_mr *mr;

	CHECK(fi_mr_reg(w.domain, buf, len, access, 0, key, 0, &mr, NULL));
	return mr;
}

static void setup(void)
{
	struct fi_info *hints = fi_allocinfo();
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_UNSPEC };

	hints->caps = FI_MSG | FI_RMA;
	hints->ep_attr->type = FI_EP_MSG;
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR |
				      FI_MR_ALLOCATED | FI_MR_LOCAL;
	hints->fabric_attr->prov_name = strdup(g_prov);
	CHECK(fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", g_port, FI_SOURCE,
			 hints, &w.info));
	CHECK(fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", g_port, 0, hints,
			 &w.cli_info));
	fi_freeinfo(hints);
	CHECK(fi_fabric(w.info->fabric_attr, &w.fabric, NULL));
	CHECK(fi_domain(w.fabric, w.info, &w.domain, NULL));
	CHECK(fi_eq_open(w.fabric, &eq_attr, &w.eq, NULL));
	CHECK(fi_passive_ep(w.fabric, w.info, &w.pep, NULL));
	CHECK(fi_pep_bind(w.pep, &w.eq->fid, 0));
	CHECK(fi_listen(w.pep));
	w.srv_cq = open_cq();
	w.cli_cq = open_cq();
	w.len = 4 * BIG;
	w.srv_buf = calloc(1, w.len);
	w.cli_buf = calloc(1, w.len);
	if (!w.srv_buf || !w.cli_buf)
		fail(EXIT_SETUP, "out of memory");
	w.srv_mr = reg(w.srv_buf, w.len, FI_REMOTE_READ | FI_REMOTE_WRITE, 1);
	w.cli_mr = reg(w.cli_buf, w.len, FI_READ | FI_WRITE, 2);
	w.srv_key = fi_mr_key(w.srv_mr);
	if (w.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR)
		w.srv_base = (uint64_t)(uintptr_t)w.srv_buf;
}

/* Reads both CQs once; counts the client's successes and errors. */
static void progress(unsigned *ok, unsigned *err)
{
	struct fi_cq_entry e[16];
	struct fi_cq_err_entry ee;
	ssize_t n;

	(void) fi_cq_read(w.srv_cq, e, 16);
	n = fi_cq_read(w.cli_cq, e, 16);
	if (n > 0 && ok)
		*ok += (unsigned)n;
	if (n == -FI_EAVAIL) {
		memset(&ee, 0, sizeof(ee));
		(void) fi_cq_readerr(w.cli_cq, &ee, 0);
		if (err)
			(*err)++;
	}
}

/* Waits for one EQ event of the expected kind into cm, progressing the
 * CQs. */
static void wait_event(uint32_t want, struct fi_eq_cm_entry *cm_out)
{
	struct fi_eq_cm_entry cm;
	int64_t end = deadline_in(STALL_MS);
	uint32_t event;
	ssize_t n;

	while (before(end)) {
		n = fi_eq_read(w.eq, &event, &cm, sizeof(cm), 0);
		if (n == -FI_EAGAIN) {
			progress(NULL, NULL);
			continue;
		}
		if (n < 0)
			fail(EXIT_SETUP, "fi_eq_read: %s", fi_strerror((int)-n));
		if (event == want) {
			*cm_out = cm;
			return;
		}
		if (event == FI_CONNREQ)
			fi_freeinfo(cm.info);
	}
	fail(EXIT_SETUP, "no EQ event %u within %d ms", want, STALL_MS);
}

/* Connects a client endpoint and the server's endpoint for it. */
static void connect_pair(struct fid_ep **cli, struct fid_ep **srv)
{
	struct fi_eq_cm_entry cm;

	CHECK(fi_endpoint(w.domain, w.cli_info, cli, NULL));
	CHECK(fi_ep_bind(*cli, &w.eq->fid, 0));
	CHECK(fi_ep_bind(*cli, &w.cli_cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_enable(*cli));
	CHECK(fi_connect(*cli, w.cli_info->dest_addr, NULL, 0));
	wait_event(FI_CONNREQ, &cm);
	CHECK(fi_endpoint(w.domain, cm.info, srv, NULL));
	fi_freeinfo(cm.info);
	CHECK(fi_ep_bind(*srv, &w.eq->fid, 0));
	CHECK(fi_ep_bind(*srv, &w.srv_cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_enable(*srv));
	CHECK(fi_accept(*srv, NULL, 0));
	wait_event(FI_CONNECTED, &cm);
	wait_event(FI_CONNECTED, &cm);
}

/* A: two 1 MiB reads, `steps` progress calls, then close mid-response. */
static void round_a(unsigned steps)
{
	struct fid_ep *a, *sa;
	static struct fi_context ctx[2];

	connect_pair(&a, &sa);
	for (int i = 0; i < 2; i++)
		CHECK(fi_read(a, w.cli_buf + (size_t)i * BIG, BIG,
			      fi_mr_desc(w.cli_mr), 0,
			      w.srv_base + (size_t)i * BIG,
			      w.srv_key, &ctx[i]));
	for (unsigned i = 0; i < steps; i++)
		progress(NULL, NULL);
	CHECK(fi_close(&a->fid));
	CHECK(fi_close(&sa->fid));
}

/* B: write a pattern then read it back, B_OPS times; 0 if all came. */
static int round_b(unsigned round)
{
	struct fid_ep *b, *sb;
	static struct fi_context ctx[B_OPS];
	uint8_t *src = w.cli_buf + 2 * BIG, *dst = w.cli_buf + 3 * BIG;
	unsigned ok = 0, err = 0;
	int64_t end;

	connect_pair(&b, &sb);
	for (unsigned i = 0; i < B_OPS; i += 2) {
		size_t off = (size_t)i * SMALL;
		uint64_t raddr = w.srv_base + 2 * BIG + off;

		memset(src + off, (int)(round * 7 + i + 1), SMALL);
		CHECK(fi_write(b, src + off, SMALL, fi_mr_desc(w.cli_mr), 0,
			       raddr, w.srv_key, &ctx[i]));
		CHECK(fi_read(b, dst + off, SMALL, fi_mr_desc(w.cli_mr), 0,
			      raddr, w.srv_key, &ctx[i + 1]));
	}
	end = deadline_in(STALL_MS);
	while (ok + err < B_OPS && before(end))
		progress(&ok, &err);
	/* the closed A's canceled reads may surface here too */
	if (ok < B_OPS) {
		fprintf(stderr, "round %u: endpoint B got %u of %u completions "
			"within %d ms (%u errors): the stream stalled\n", round,
			ok, B_OPS, STALL_MS, err);
		return EXIT_DEFECT;
	}
	if (memcmp(src, dst, B_OPS / 2 * SMALL)) {
		fprintf(stderr, "round %u: B read back other bytes\n", round);
		return EXIT_DEFECT;
	}
	CHECK(fi_close(&b->fid));
	CHECK(fi_close(&sb->fid));
	return 0;
}

static void parse(int argc, char **argv)
{
	int ch;

	while ((ch = getopt(argc, argv, "cp:P:r:")) != -1) {
		switch (ch) {
		case 'c': g_control = true; break;
		case 'p': g_prov = optarg; break;
		case 'P': g_port = optarg; break;
		case 'r': g_rounds = (unsigned)strtoul(optarg, NULL, 10); break;
		default:
			fprintf(stderr, "usage: tcp_read_close [-c] [-p PROVIDER] "
				"[-P PORT] [-r ROUNDS]\n");
			exit(EXIT_SETUP);
		}
	}
}

int main(int argc, char **argv)
{
	parse(argc, argv);
	setup();
	for (unsigned r = 0; r < g_rounds; r++) {
		if (!g_control)
			round_a(r % 6);
		if (round_b(r))
			return EXIT_DEFECT;
	}
	if (g_control)
		printf("%u rounds of endpoint B alone completed\n", g_rounds);
	else
		printf("survived %u rounds of closing an endpoint with 1 MiB "
		       "reads in flight\n", g_rounds);
	return 0;
}
