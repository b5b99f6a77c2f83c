/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_demo: what its files share (see pmv_demo.c for the demo): limits,
 * the fabric objects, a connection, the region message and the functions one
 * file defines and another calls.
 */
#ifndef PMV_DEMO_H
#define PMV_DEMO_H

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
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

#define DEMO_FI_VERSION FI_VERSION(1, 17)
#define PROVIDER_NAME "pmemverbs"
#define DEFAULT_ADDR "127.0.0.1"
#define DEFAULT_PORT "9400"

#define REGION_SIZE (1024 * 1024)
#define MSG_MAX 256
#define RX_SLOTS 2 /* the target receives "hello ..." and then "done" */
#define FILE_HEAD_MAX 128
#define COMMIT_OFFSET 128 /* where the durable line goes in the file */
#define TIMEOUT_MS 20000
#define RETRY_INTERVAL_MS 200

/* Keys the demo asks for when the provider does not choose them. */
#define LOCAL_MR_KEY 1
#define REGION_MR_KEY 2

#define DONE_TEXT "done"

struct options {
	bool is_target;
	const char *addr;
	const char *port;
	const char *file; /* NULL: a temporary file */
};

/* The fabric, EQ and domain both sides open, their fi_info and core name. */
struct fabric_res {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *eq;
	struct fi_pmem_ops_domain *pmem_ops; /* pmemverbs's domain extension */
	const char *core_prov;
};

/* Buffers for messages and RMA, registered as one region under FI_MR_LOCAL. */
struct local_buffers {
	char rx[RX_SLOTS][MSG_MAX];
	char tx[MSG_MAX];
	char rma_out[MSG_MAX];
	char rma_in[MSG_MAX];
};

/* One connected endpoint with its own transmit and receive CQs. */
struct connection {
	struct fid_ep *ep;
	struct fid_cq *tx_cq;
	struct fid_cq *rx_cq;
	struct fid_mr *local_mr; /* only under FI_MR_LOCAL */
	struct local_buffers *buf;
	struct fi_context2 tx_ctx;
	struct fi_context2 rx_ctx[RX_SLOTS];
};

/* Region description the target sends, little-endian on the wire. */
struct region_msg {
	uint64_t addr; /* virtual address under FI_MR_VIRT_ADDR, else 0 */
	uint64_t key;
	uint64_t len;
	uint64_t profile; /* enum fi_pmem_profile pmemverbs found for it */
};

struct mapped_file {
	char path[PATH_MAX];
	int fd;
	char *map;
	bool remove_at_exit;
};

/* Defined in pmv_demo_fabric.c; main sets it. */
extern const char *role;

/* Functions one file of the program defines and another calls. */
void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void complain(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int check(ssize_t ret, const char *what);
const char *quote(const char *bytes, size_t len, char *out,
		  size_t out_size);
int64_t now_ms(void);
int ms_until(int64_t deadline);
void sleep_ms(int ms);
bool has_mr_mode(const struct fabric_res *res, int bit);
int open_fabric_res(const struct options *opts, struct fabric_res *res);
void close_fid(struct fid *fid, const char *what);
void close_fabric_res(struct fabric_res *res);
int wait_for_cm_event(struct fid_eq *eq, uint32_t want,
		      const char *what, struct fi_eq_cm_entry *entry,
		      int quiet_err);
int register_buffer(const struct fabric_res *res, struct fid_ep *ep,
		    void *buf, size_t len, uint64_t access,
		    uint64_t requested_key, uint64_t flags,
		    struct fid_mr **mr);
void *local_desc(const struct connection *conn);
int open_connection(const struct fabric_res *res, struct fi_info *info,
		    struct connection *conn);
void close_connection(struct connection *conn);
int post_recv(struct connection *conn, int slot);
int receive_message(struct connection *conn, int slot, const char *what,
		    size_t *len);
int wait_for_transmit(struct connection *conn, const char *what);
int send_message(struct connection *conn, const void *data, size_t len,
		 const char *what);
int run_target(const struct options *opts);
int run_initiator(const struct options *opts);

#endif /* PMV_DEMO_H */
