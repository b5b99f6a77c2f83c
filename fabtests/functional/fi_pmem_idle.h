/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * fi_pmem_idle: what its files share (see fi_pmem_idle.c for the program):
 * limits, the control messages, one side's fabric objects and the functions
 * one file defines and another calls.
 */
#ifndef FI_PMEM_IDLE_H
#define FI_PMEM_IDLE_H

#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "../common/pmem_common.h"

#define DEFAULT_PORT "9380"
#define DEFAULT_CONNS 16
#define DEFAULT_SECONDS 3
#define MAX_CONNS 16384
#define MAX_SECONDS 3600
#define MAX_BUSY_COMMITS 1000000
#define MAX_GAP_US 10000000
#define QUEUE_SIZE 16          /* tx_attr->size and rx_attr->size */
#define REGION_LEN (1UL << 20)
#define COMMIT_LEN 64
#define NRECV 2                /* control messages each side receives */
#define SLOT PM_CTRL_MSG_MAX   /* bytes of one control buffer */
#define BUF_LEN ((2 + NRECV) * SLOT) /* send slot, receive slots, source */
#define START_TIMEOUT_NS (60 * PM_NS_PER_S) /* for the peer to show up */
#define STEP_TIMEOUT_NS PM_CM_TIMEOUT_NS    /* for any later event */
#define PHASE_TIMEOUT_NS (60 * PM_NS_PER_S) /* for a control message */
#define SLICE_NS (PM_POLL_INTERVAL_MS * PM_NS_PER_MS)
#define FD_SLACK 32 /* open files besides one socket per connection */

enum idle_mode { MODE_NONE, MODE_SREAD, MODE_UNSPEC, MODE_POLL, MODE_SLEEP,
		 MODE_SREAD_SLEEP, MODE_CNTR, MODE_EQ };
/* -m sleep and sread-sleep: the target reads its CQ once per this many ms
 * after the idle period (the agent serves every commit) */
#define SLEEP_READ_GAP_MS 50
/* -m none, poll, sleep, cntr and eq: the CQ has no wait object, and
 * waits for own work poll it (fi_cq(3): no fi_cq_sread on it) */
static inline bool mode_cq_without_wait(enum idle_mode mode)
{
	return mode == MODE_NONE || mode == MODE_POLL || mode == MODE_SLEEP ||
	       mode == MODE_CNTR || mode == MODE_EQ;
}
enum msg_type { MSG_REGION = 1, MSG_IDLE, MSG_AWAKE, MSG_DONE };

struct options {
	const char *prov;
	const char *server; /* NULL: this process is the target */
	const char *port;
	const char *file;
	long conns;
	long seconds;
	long busy_commits; /* -k: commits timed on connection 0 at the end */
	long gap_us;       /* -g: the initiator sleeps this long before each */
	enum idle_mode mode;
	bool cq_per_conn;  /* -q (target): a CQ per connection, in
			    * FI_CQ_FORMAT_CONTEXT (no remote CQ data) */
};

/* A control message, little-endian on the wire. */
struct ctrl_msg {
	uint64_t type;
	uint64_t addr;
	uint64_t key;
	uint64_t len;
	uint64_t profile;
};

/* An operation waited for: the context of its CQ entry. */
struct op {
	struct fi_context2 ctx;
	bool done;
};

/* One side: its objects, endpoints, operations and buffers. */
struct side {
	const struct options *o;
	struct pm_fabric res;
	struct fid_cq *cq;
	struct fid_cq **own_cq;   /* target, -q: connection i's CQ (i > 0;
				   * connection 0's is cq) */
	struct fid_cntr *cntr;    /* target, -m cntr: every endpoint's
				   * FI_WRITE counter */
	struct fid_pep *pep;      /* target */
	struct fid_ep **eps;
	long neps;                /* endpoints opened */
	struct op *ops;           /* conns commits, a send, NRECV receives */
	long nops;
	char *buf;
	struct fid_mr *local_mr;  /* under FI_MR_LOCAL */
	struct fid_mr *region_mr; /* target */
	struct pm_file file;      /* target */
	struct ctrl_msg region;   /* initiator: the target's region */
};

/* Process CPU time and the monotonic clock at one instant. */
struct cpu_sample {
	int64_t wall_ns;
	int64_t user_ns;
	int64_t sys_ns;
};

/* Functions one file of the program defines and another calls. */
char *src_buf(struct side *s);
void *desc(const struct side *s);
void raise_fd_limit(long conns);
void report_fds(void);
const char *event_name(uint32_t event);
int open_side(struct side *s);
void close_side(struct side *s);
int open_ep(struct side *s, struct fi_info *info, long i);
int post_recvs(struct side *s);
int read_cm(struct side *s, int64_t deadline, int quiet_err,
	    uint32_t *event, struct fi_eq_cm_entry *entry);
int wait_op(struct side *s, struct op *op, int64_t deadline,
	    bool spin, const char *what);
void nudge(struct side *s);
int send_ctrl(struct side *s, const struct ctrl_msg *msg,
	      const char *what);
int send_type(struct side *s, enum msg_type type, const char *what);
int recv_ctrl(struct side *s, int i, enum msg_type type,
	      int64_t timeout_ns, const char *what, struct ctrl_msg *out);
int idle(struct side *s, const char *role);
void sample_cpu(struct cpu_sample *c);
void report_busy_cpu(const struct side *s, const struct cpu_sample *a);
void report_counters(struct side *s);
int target_session(struct side *s);
int initiator_session(struct side *s);
void parse(int argc, char **argv, struct options *o);

#endif /* FI_PMEM_IDLE_H */
