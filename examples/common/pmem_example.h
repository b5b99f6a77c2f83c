/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmem_example.h: the plumbing the pmemverbs examples share, so that each
 * example's target.c and initiator.c show only what it is about.  A
 * connection is one pmemverbs FI_EP_MSG endpoint opened with FI_RMA_PMEM,
 * one CQ (FI_TRANSMIT and FI_RECV, FI_CQ_FORMAT_DATA) and one EQ; every
 * wait polls with a 20 s bound.  Copy this file with an example.
 *
 * The target maps a file, registers it with FI_RMA_PMEM and sends the
 * initiator a struct ex_region (address, key, length); the initiator sends
 * "done" when it has finished.  Each side posts its one receive before it
 * connects: x->buf's first half is for sends and commits, the second
 * half (EX_RECV) for the message received.
 */
#ifndef PMEM_EXAMPLE_H
#define PMEM_EXAMPLE_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_ext_pmem.h>

#define EX_FI_VERSION FI_VERSION(1, 17)
#define EX_TIMEOUT_S 20
#define EX_BUF_LEN 4096
#define EX_REGION_LEN (1 << 20)
#define EX_RECV(x) ((x)->buf + EX_BUF_LEN / 2)

struct ex {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *eq;
	struct fid_cq *cq;
	struct fid_pep *pep;
	struct fid_ep *ep;
	struct fid_mr *buf_mr; /* buf, registered for FI_MR_LOCAL cores */
	void *buf_desc;
	char buf[EX_BUF_LEN];
};

/* What the target tells the initiator about its persistent region. */
struct ex_region {
	uint64_t addr; /* RMA address of its first byte */
	uint64_t key;
	uint64_t len;
};

/* Prints what failed and exits: examples keep error handling short. */
static inline void ex_die(const char *what, long ret)
{
	fprintf(stderr, "error: %s: %s (%ld); set FI_LOG_LEVEL=warn to see "
		"why\n", what, fi_strerror((int) -ret), ret);
	exit(1);
}

#define EX_CHECK(call)                                                   \
	do {                                                             \
		long ex_ret_ = (long) (call);                            \
		if (ex_ret_)                                             \
			ex_die(#call, ex_ret_);                          \
	} while (0)

static inline time_t ex_deadline(void)
{
	return time(NULL) + EX_TIMEOUT_S;
}

/* Hints: pmemverbs MSG endpoints with durable RMA writes. */
static inline struct fi_info *ex_hints(void)
{
	struct fi_info *hints = fi_allocinfo();

	if (!hints)
		ex_die("fi_allocinfo", -FI_ENOMEM);
	hints->caps = FI_MSG | FI_RMA | FI_RMA_PMEM;
	hints->ep_attr->type = FI_EP_MSG;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				      FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->fabric_attr->prov_name = strdup("pmemverbs");
	return hints;
}

/* fi_getinfo for pmemverbs: a listening address, or the target's. */
static inline struct fi_info *ex_getinfo(const char *addr, const char *port,
					 uint64_t flags)
{
	struct fi_info *hints = ex_hints(), *info = NULL;
	int ret = fi_getinfo(EX_FI_VERSION, addr, port, flags, hints, &info);

	fi_freeinfo(hints);
	if (ret) {
		fprintf(stderr, "no pmemverbs endpoint (is the plugin installed, "
			"or FI_PROVIDER_PATH set? set FI_LOG_LEVEL=warn to see "
			"why)\n");
		ex_die("fi_getinfo", ret);
	}
	return info;
}

/* The next CM event, which must be want (20 s at most). */
static inline void ex_cm_event(struct ex *x, uint32_t want,
			       struct fi_eq_cm_entry *entry)
{
	struct fi_eq_err_entry err = { 0 };
	time_t deadline = ex_deadline();
	uint32_t event;
	ssize_t ret;

	do {
		ret = fi_eq_read(x->eq, &event, entry, sizeof(*entry), 0);
	} while (ret == -FI_EAGAIN && time(NULL) < deadline);
	if (ret == -FI_EAVAIL && fi_eq_readerr(x->eq, &err, 0) > 0)
		ex_die("connection", -err.err);
	if (ret < 0)
		ex_die("fi_eq_read", ret);
	if (event != want)
		ex_die("unexpected CM event", -FI_EOTHER);
}

/* Domain, CQ and endpoint for info; the endpoint is enabled. */
static inline void ex_open_ep(struct ex *x, struct fi_info *info)
{
	struct fi_cq_attr cq_attr = { .size = 64,
				      .format = FI_CQ_FORMAT_DATA };

	EX_CHECK(fi_domain(x->fabric, info, &x->domain, NULL));
	EX_CHECK(fi_cq_open(x->domain, &cq_attr, &x->cq, NULL));
	EX_CHECK(fi_endpoint(x->domain, info, &x->ep, NULL));
	EX_CHECK(fi_ep_bind(x->ep, &x->eq->fid, 0));
	EX_CHECK(fi_ep_bind(x->ep, &x->cq->fid, FI_TRANSMIT | FI_RECV));
	EX_CHECK(fi_enable(x->ep));
	EX_CHECK(fi_mr_reg(x->domain, x->buf, sizeof(x->buf),
			   FI_SEND | FI_RECV | FI_WRITE | FI_READ, 0, 0, 0,
			   &x->buf_mr, NULL));
	x->buf_desc = fi_mr_desc(x->buf_mr);
	EX_CHECK(fi_recv(x->ep, EX_RECV(x), EX_BUF_LEN / 2, x->buf_desc, 0,
			 NULL));
}

/* Fabric and EQ for info. */
static inline void ex_open_fabric(struct ex *x, struct fi_info *info)
{
	struct fi_eq_attr eq_attr = { .size = 8 };

	EX_CHECK(fi_fabric(info->fabric_attr, &x->fabric, NULL));
	EX_CHECK(fi_eq_open(x->fabric, &eq_attr, &x->eq, NULL));
}

/* Target: listens on port and accepts one initiator. */
static inline void ex_accept(struct ex *x, const char *port)
{
	struct fi_eq_cm_entry entry;

	x->info = ex_getinfo(NULL, port, FI_SOURCE);
	ex_open_fabric(x, x->info);
	EX_CHECK(fi_passive_ep(x->fabric, x->info, &x->pep, NULL));
	EX_CHECK(fi_pep_bind(x->pep, &x->eq->fid, 0));
	EX_CHECK(fi_listen(x->pep));
	printf("target: listening on port %s\n", port);
	fflush(stdout);
	ex_cm_event(x, FI_CONNREQ, &entry);
	ex_open_ep(x, entry.info);
	EX_CHECK(fi_accept(x->ep, NULL, 0));
	fi_freeinfo(entry.info);
	ex_cm_event(x, FI_CONNECTED, &entry);
}

/* Initiator: connects to the target at addr:port. */
static inline void ex_connect(struct ex *x, const char *addr, const char *port)
{
	struct fi_eq_cm_entry entry;

	x->info = ex_getinfo(addr, port, 0);
	ex_open_fabric(x, x->info);
	ex_open_ep(x, x->info);
	EX_CHECK(fi_connect(x->ep, x->info->dest_addr, NULL, 0));
	ex_cm_event(x, FI_CONNECTED, &entry);
}

/* Waits for one completion; a failed one is reported with its prov_errno
 * and what it means for the application (fi_ext_pmem(3)). */
static inline void ex_wait(struct ex *x, struct fi_cq_data_entry *out)
{
	struct fi_cq_err_entry err = { 0 };
	struct fi_cq_data_entry entry;
	time_t deadline = ex_deadline();
	char text[256];
	ssize_t ret;

	do {
		ret = fi_cq_read(x->cq, &entry, 1);
	} while (ret == -FI_EAGAIN && time(NULL) < deadline);
	if (ret == -FI_EAVAIL && fi_cq_readerr(x->cq, &err, 0) > 0) {
		fprintf(stderr, "error: completion failed: %s (prov_errno "
			"0x%x: %s)%s\n", fi_strerror(err.err), err.prov_errno,
			fi_cq_strerror(x->cq, err.prov_errno, err.err_data,
				       text, sizeof(text)),
			fi_pmem_err_reconnect(err.prov_errno) ? ": reconnect" :
			fi_pmem_err_commit_again(err.prov_errno) ?
			": write again and commit" : "");
		exit(1);
	}
	if (ret != 1)
		ex_die("fi_cq_read", ret == 0 ? -FI_ETIMEDOUT : ret);
	if (out)
		*out = entry;
}

/* Waits for a completion with flag (FI_SEND, FI_RECV, FI_WRITE...);
 * FI_IMMED completions met on the way are counted in *immed if given. */
static inline void ex_wait_for(struct ex *x, uint64_t flag,
			       struct fi_cq_data_entry *out, int *immed)
{
	struct fi_cq_data_entry entry;

	for (;;) {
		ex_wait(x, &entry);
		if (entry.flags & flag)
			break;
		if ((entry.flags & FI_REMOTE_CQ_DATA) && immed)
			(*immed)++;
	}
	if (out)
		*out = entry;
}

/* Sends len bytes of data and waits for the send's completion. */
static inline void ex_send(struct ex *x, const void *data, size_t len)
{
	memcpy(x->buf, data, len);
	EX_CHECK(fi_send(x->ep, x->buf, len, x->buf_desc, 0, NULL));
	ex_wait_for(x, FI_SEND, NULL, NULL);
}

/* Maps EX_REGION_LEN bytes of path (created if missing), shared. */
static inline char *ex_map_file(const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT, 0600);
	void *map;

	if (fd < 0 || ftruncate(fd, EX_REGION_LEN))
		ex_die(path, -FI_EIO);
	map = mmap(NULL, EX_REGION_LEN, PROT_READ | PROT_WRITE, MAP_SHARED,
		   fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		ex_die("mmap", -FI_ENOMEM);
	return map;
}

/* Registers map as persistent memory and describes it for the peer. */
static inline struct ex_region ex_register_pmem(struct ex *x, char *map,
						struct fid_mr **mr)
{
	struct ex_region r;

	EX_CHECK(fi_mr_reg(x->domain, map, EX_REGION_LEN,
			   FI_REMOTE_WRITE | FI_REMOTE_READ, 0, 1, FI_RMA_PMEM,
			   mr, NULL));
	r.addr = x->info->domain_attr->mr_mode & FI_MR_VIRT_ADDR ?
		 (uintptr_t) map : 0;
	r.key = fi_mr_key(*mr);
	r.len = EX_REGION_LEN;
	return r;
}

/* A commit: len bytes of x->buf to offset of the region, durable when its
 * completion comes (FI_COMMIT_COMPLETE); flags adds FI_FENCE, FI_IMMED. */
static inline void ex_commit(struct ex *x, const struct ex_region *r,
			     uint64_t offset, size_t len, uint64_t flags,
			     uint64_t data)
{
	struct iovec iov = { .iov_base = x->buf, .iov_len = len };
	struct fi_rma_iov rma = { .addr = r->addr + offset, .len = len,
				  .key = r->key };
	struct fi_msg_rma msg = { .msg_iov = &iov, .desc = &x->buf_desc,
				  .iov_count = 1, .rma_iov = &rma,
				  .rma_iov_count = 1, .data = data };

	EX_CHECK(fi_writemsg(x->ep, &msg,
			     FI_COMMIT_COMPLETE | FI_COMPLETION | flags));
}

/* Closes everything ex_accept or ex_connect opened. */
static inline void ex_close(struct ex *x, struct fid_mr *region_mr)
{
	if (region_mr)
		fi_close(&region_mr->fid);
	fi_close(&x->buf_mr->fid);
	fi_close(&x->ep->fid);
	if (x->pep)
		fi_close(&x->pep->fid);
	fi_close(&x->cq->fid);
	fi_close(&x->eq->fid);
	fi_close(&x->domain->fid);
	fi_close(&x->fabric->fid);
	fi_freeinfo(x->info);
}

#endif /* PMEM_EXAMPLE_H */
