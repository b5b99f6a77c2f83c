/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * fi_pmem_idle: the CPU a process spends while its connections are idle,
 * as the number of connections grows, and the latency of the first commit
 * after the idle period.
 *
 *   target:    fi_pmem_idle [-p PROV] [-B PORT] [-n CONNS] [-t SECONDS]
 *                           [-m none|sread|unspec] [-f FILE]
 *   initiator: fi_pmem_idle [-p PROV] -s SERVER_ADDR [-B PORT] [-n CONNS]
 *                           [-t SECONDS]
 *
 * The target maps a file (/dev/shm/fi_pmem_idle.PID unless -f is given),
 * registers it once (FI_RMA_PMEM on pmemverbs) and accepts CONNS
 * connections on one passive endpoint; the initiator opens CONNS
 * endpoints and connects them one after the other.  On each side every
 * endpoint is on one domain, bound to one CQ (FI_TRANSMIT | FI_RECV) and
 * one EQ.  Control messages travel on the first connection:
 *
 *   target -> initiator  REGION  address, key, length, profile
 *   initiator            one 64-byte commit on every connection, all read
 *   initiator -> target  IDLE    both sides now idle for SECONDS
 *   target -> initiator  AWAKE   the target's idle period is over
 *   initiator            one commit on every connection (the first timed)
 *   initiator -> target  DONE    both close everything
 *
 * While idle the initiator sleeps; the target sleeps too (-m none: its
 * CQ has no wait object; -m unspec: its CQ has FI_WAIT_UNSPEC) or waits
 * in fi_cq_sread until the period ends (-m sread).  Each side
 * measures its process CPU time (getrusage(RUSAGE_SELF), user + system)
 * over exactly its idle period and prints on stdout
 *
 *   IDLE role=ROLE conns=N seconds=T cpu_pct=X   (percent of one core)
 *
 * and the initiator also
 *
 *   after-idle first commit latency: conns=N first_commit_us=X
 *
 * Every wait is bounded.  Exit status: 0 on success, 1 on a failure, 2 on
 * a usage error.
 */
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

enum idle_mode { MODE_NONE, MODE_SREAD, MODE_UNSPEC };
enum msg_type { MSG_REGION = 1, MSG_IDLE, MSG_AWAKE, MSG_DONE };

struct options {
	const char *prov;
	const char *server; /* NULL: this process is the target */
	const char *port;
	const char *file;
	long conns;
	long seconds;
	enum idle_mode mode;
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

/* ------------------------------------------------------------- helpers */

static struct op *send_op(struct side *s)
{
	return &s->ops[s->o->conns];
}

static struct op *recv_op(struct side *s, int i)
{
	return &s->ops[s->o->conns + 1 + i];
}

static char *rx_slot(struct side *s, int i)
{
	return s->buf + (1 + i) * SLOT;
}

static char *src_buf(struct side *s)
{
	return s->buf + (1 + NRECV) * SLOT;
}

static void *desc(const struct side *s)
{
	return s->local_mr ? fi_mr_desc(s->local_mr) : NULL;
}

static int64_t min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

/* Raises the soft limit of open files to the hard one (1 socket a conn). */
static void raise_fd_limit(long conns)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl)) {
		pm_complain("getrlimit(RLIMIT_NOFILE): %s", strerror(errno));
		return;
	}
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl))
		pm_complain("setrlimit(RLIMIT_NOFILE, %llu): %s",
			    (unsigned long long) rl.rlim_max, strerror(errno));
	else
		pm_say("open files limit: %llu",
		       (unsigned long long) rl.rlim_cur);
	if (rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < (rlim_t) conns + FD_SLACK)
		pm_say("warning: %ld connections need about %ld open files, "
		       "more than the limit of %llu", conns, conns + FD_SLACK,
		       (unsigned long long) rl.rlim_cur);
}

/* Open files now, and the limit: what a failing connect may run out of. */
static void report_fds(void)
{
	DIR *dir = opendir("/proc/self/fd");
	struct rlimit rl;
	long n = 0;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		rl.rlim_cur = 0;
	if (!dir) {
		pm_complain("open files: limit %llu, /proc/self/fd: %s",
			    (unsigned long long) rl.rlim_cur, strerror(errno));
		return;
	}
	while (readdir(dir))
		n++;
	closedir(dir);
	pm_complain("open files: %ld (limit %llu)", n - 2,
		    (unsigned long long) rl.rlim_cur);
}

static const char *event_name(uint32_t event)
{
	switch (event) {
	case FI_CONNREQ: return "FI_CONNREQ";
	case FI_CONNECTED: return "FI_CONNECTED";
	case FI_SHUTDOWN: return "FI_SHUTDOWN";
	default: return "an unexpected event";
	}
}

/* ------------------------------------------------------ fabric, domain */

/* MSG endpoints with small queues; one region serves every endpoint, so
 * no FI_MR_ENDPOINT. */
static struct fi_info *make_hints(const struct options *o)
{
	struct fi_info *h = fi_allocinfo();

	if (!h)
		return NULL;
	h->caps = FI_MSG | FI_RMA |
		  (pm_is_pmemverbs(o->prov) ? FI_RMA_PMEM : 0);
	h->mode = FI_CONTEXT | FI_CONTEXT2;
	h->ep_attr->type = FI_EP_MSG;
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				  FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	h->tx_attr->size = QUEUE_SIZE;
	h->rx_attr->size = QUEUE_SIZE;
	h->fabric_attr->prov_name = strdup(o->prov);
	if (!h->fabric_attr->prov_name) {
		fi_freeinfo(h);
		return NULL;
	}
	return h;
}

static int find_provider(struct side *s)
{
	const char *node = s->o->server ? s->o->server : PM_LISTEN_ADDR;
	struct fi_info *hints = make_hints(s->o);
	int ret;

	if (!hints)
		return pm_check(-FI_ENOMEM, "allocating fi_info hints");
	ret = fi_getinfo(PM_FI_VERSION, node, s->o->port,
			 s->o->server ? 0 : FI_SOURCE, hints, &s->res.info);
	fi_freeinfo(hints);
	if (ret)
		pm_complain("fi_getinfo found no %s FI_EP_MSG endpoint with RMA "
			    "(tx/rx size %d) for %s port %s: %s (for pmemverbs, "
			    "does FI_PROVIDER_PATH hold libpmemverbs-fi.so?)",
			    s->o->prov, QUEUE_SIZE, node, s->o->port,
			    fi_strerror(-ret));
	return ret;
}

/* Fabric, EQ, domain, pmemverbs's ops and the one CQ. */
static int open_domain(struct side *s)
{
	struct fi_eq_attr eq_attr = {
		.size = (size_t) (2 * s->o->conns + 16),
		.wait_obj = FI_WAIT_UNSPEC,
	};
	/* -m none: an application that never waits on its CQ (it polls
	 * while it has work); -m sread: one that waits in fi_cq_sread;
	 * -m unspec: a CQ with a wait object that the application neither
	 * waits on nor reads while idle (only the agent works) */
	struct fi_cq_attr cq_attr = {
		.size = (size_t) (2 * s->o->conns + 64),
		.format = FI_CQ_FORMAT_DATA,
		.wait_obj = s->o->mode == MODE_NONE ? FI_WAIT_NONE :
						      FI_WAIT_UNSPEC,
	};
	int ret = pm_check(fi_fabric(s->res.info->fabric_attr, &s->res.fabric,
				     NULL), "fi_fabric");

	if (!ret)
		ret = pm_check(fi_eq_open(s->res.fabric, &eq_attr, &s->res.eq,
					  NULL), "fi_eq_open");
	if (!ret)
		ret = pm_check(fi_domain(s->res.fabric, s->res.info,
					 &s->res.domain, NULL), "fi_domain");
	if (!ret && pm_is_pmemverbs(s->o->prov))
		ret = pm_check(fi_open_ops(&s->res.domain->fid,
					   FI_PMEM_DOMAIN_OPS, 0,
					   (void **) &s->res.pmem_ops, NULL),
			       "fi_open_ops(" FI_PMEM_DOMAIN_OPS ")");
	if (!ret)
		ret = pm_check(fi_cq_open(s->res.domain, &cq_attr, &s->cq,
					  NULL), "fi_cq_open");
	return ret;
}

/* Arrays of endpoints and operations, the buffer and its registration. */
static int alloc_side(struct side *s)
{
	s->nops = s->o->conns + 1 + NRECV;
	s->eps = calloc((size_t) s->o->conns, sizeof(*s->eps));
	s->ops = calloc((size_t) s->nops, sizeof(*s->ops));
	if (posix_memalign((void **) &s->buf, 4096, BUF_LEN))
		s->buf = NULL;
	if (!s->eps || !s->ops || !s->buf)
		return pm_check(-FI_ENOMEM, "allocating endpoints and buffers");
	memset(s->buf, 0xa5, BUF_LEN);
	if (!pm_has_mr_mode(&s->res, FI_MR_LOCAL))
		return 0;
	return pm_register(&s->res, NULL, s->buf, BUF_LEN,
			   FI_SEND | FI_RECV | FI_READ | FI_WRITE,
			   PM_LOCAL_MR_KEY, 0, &s->local_mr);
}

static int open_side(struct side *s)
{
	int ret = find_provider(s);

	if (!ret)
		ret = open_domain(s);
	if (!ret)
		ret = alloc_side(s);
	if (!ret)
		pm_say("%s over %s, domain %s, tx/rx size %zu/%zu, %ld "
		       "connections", s->res.info->fabric_attr->prov_name,
		       s->res.info->fabric_attr->name,
		       s->res.info->domain_attr->name,
		       s->res.info->tx_attr->size, s->res.info->rx_attr->size,
		       s->o->conns);
	return ret;
}

static void close_side(struct side *s)
{
	long i;

	for (i = 0; i < s->neps; i++)
		pm_close_fid(s->eps[i] ? &s->eps[i]->fid : NULL,
			     "closing an endpoint");
	pm_close_fid(s->region_mr ? &s->region_mr->fid : NULL,
		     "closing the region");
	pm_close_fid(s->local_mr ? &s->local_mr->fid : NULL,
		     "closing the local memory region");
	pm_close_fid(s->pep ? &s->pep->fid : NULL,
		     "closing the passive endpoint");
	pm_close_fid(s->cq ? &s->cq->fid : NULL, "closing the CQ");
	pm_close_fabric(&s->res);
	pm_unmap_file(&s->file);
	free(s->eps);
	free(s->ops);
	free(s->buf);
}

/* Opens endpoint i from info on the domain, bound to the CQ and EQ. */
static int open_ep(struct side *s, struct fi_info *info, long i)
{
	int ret = pm_check(fi_endpoint(s->res.domain, info, &s->eps[i], NULL),
			   "fi_endpoint");

	if (ret)
		return ret;
	s->neps = i + 1;
	ret = pm_check(fi_ep_bind(s->eps[i], &s->cq->fid,
				  FI_TRANSMIT | FI_RECV), "binding the CQ");
	if (!ret)
		ret = pm_check(fi_ep_bind(s->eps[i], &s->res.eq->fid, 0),
			       "binding the EQ");
	return ret ? ret : pm_check(fi_enable(s->eps[i]), "fi_enable");
}

/* Posts the NRECV control receives on the first endpoint. */
static int post_recvs(struct side *s)
{
	int i, ret = 0;

	for (i = 0; i < NRECV && !ret; i++)
		ret = pm_check(fi_recv(s->eps[0], rx_slot(s, i), SLOT, desc(s),
				       0, &recv_op(s, i)->ctx), "fi_recv");
	return ret;
}

/* --------------------------------------------------- bounded waiting */

/*
 * Waits until the deadline for one connection event; an error entry is
 * reported unless it is quiet_err.
 */
static int read_cm(struct side *s, int64_t deadline, int quiet_err,
		   uint32_t *event, struct fi_eq_cm_entry *entry)
{
	ssize_t ret;

	do {
		ret = fi_eq_sread(s->res.eq, event, entry, sizeof(*entry),
				  PM_POLL_INTERVAL_MS, 0);
	} while ((ret == -FI_EAGAIN || ret == -FI_EINTR) && !pm_past(deadline));
	if (ret == -FI_EAGAIN || ret == -FI_EINTR) {
		pm_complain("no connection event within the time limit");
		return -FI_ETIMEDOUT;
	}
	if (ret == -FI_EAVAIL)
		return pm_report_eq_error(s->res.eq, "connection", quiet_err);
	return ret < 0 ? pm_check(ret, "fi_eq_sread") : 0;
}

/* Once all are connected, any connection event means the peer failed. */
static bool peer_gone(struct side *s)
{
	struct fi_eq_cm_entry entry;
	uint32_t event;
	ssize_t ret = fi_eq_read(s->res.eq, &event, &entry, sizeof(entry), 0);

	if (ret == -FI_EAVAIL)
		pm_report_eq_error(s->res.eq, "connection", 0);
	else if (ret >= 0 && event == FI_SHUTDOWN)
		pm_complain("the peer shut a connection down");
	else if (ret >= 0)
		pm_complain("unexpected connection event %s",
			    event_name(event));
	return ret >= 0 || ret == -FI_EAVAIL;
}

/* Marks the operation of a CQ entry done; an unknown context fails. */
static int mark_done(struct side *s, void *ctx, const char *what)
{
	uintptr_t p = (uintptr_t) ctx, first = (uintptr_t) s->ops;

	if (p < first || p >= (uintptr_t) (s->ops + s->nops) ||
	    (p - first) % sizeof(*s->ops)) {
		pm_complain("%s: a completion with an unknown context %p", what,
			    ctx);
		return -FI_EOTHER;
	}
	((struct op *) ctx)->done = true;
	return 0;
}

/* Busy-polls the CQ for one entry until the deadline. */
static int spin_read(struct fid_cq *cq, int64_t deadline, const char *what,
		     struct fi_cq_data_entry *entry)
{
	ssize_t ret;

	do {
		ret = fi_cq_read(cq, entry, 1);
	} while (ret == -FI_EAGAIN && !pm_past(deadline));
	if (ret == -FI_EAGAIN)
		return -FI_ETIMEDOUT;
	if (ret == -FI_EAVAIL)
		return pm_report_cq_error(cq, what);
	return ret < 0 ? pm_check(ret, what) : 0;
}

/*
 * Reads CQ entries (busy-polling with spin, else in fi_cq_sread) until op
 * completed or the deadline passed, checking the peer between slices.
 */
static int wait_op(struct side *s, struct op *op, int64_t deadline,
		   bool spin, const char *what)
{
	struct fi_cq_data_entry e;
	int64_t slice;
	int ret = 0;

	while (!op->done && !ret) {
		slice = min64(deadline, pm_now_ns() + SLICE_NS);
		ret = spin ? spin_read(s->cq, slice, what, &e) :
		      pm_read_one_before(s->cq, slice, what, &e);
		if (!ret)
			ret = mark_done(s, e.op_context, what);
		else if (ret == -FI_ETIMEDOUT && peer_gone(s))
			ret = -FI_ECONNRESET;
		else if (ret == -FI_ETIMEDOUT && !pm_past(deadline))
			ret = 0;
	}
	if (ret == -FI_ETIMEDOUT)
		pm_complain("%s: timed out", what);
	return ret;
}

/* Drives the core's progress while a post returns -FI_EAGAIN. */
static void nudge(struct side *s)
{
	(void) fi_cq_read(s->cq, NULL, 0);
}

/* ------------------------------------------------------------- control */

/* Sends a control message on the first connection and waits for it. */
static int send_ctrl(struct side *s, const struct ctrl_msg *msg,
		     const char *what)
{
	int64_t deadline = pm_now_ns() + PM_OP_TIMEOUT_NS;
	struct op *op = send_op(s);
	ssize_t ret;

	memcpy(s->buf, msg, sizeof(*msg));
	op->done = false;
	while ((ret = fi_send(s->eps[0], s->buf, sizeof(*msg), desc(s), 0,
			      &op->ctx)) == -FI_EAGAIN && !pm_past(deadline))
		nudge(s);
	ret = pm_check(ret, what);
	return ret ? (int) ret : wait_op(s, op, deadline, false, what);
}

static int send_type(struct side *s, enum msg_type type, const char *what)
{
	struct ctrl_msg msg = { .type = htole64(type) };

	return send_ctrl(s, &msg, what);
}

/* Waits for control receive i, which must hold a message of type. */
static int recv_ctrl(struct side *s, int i, enum msg_type type,
		     int64_t timeout_ns, const char *what, struct ctrl_msg *out)
{
	int ret = wait_op(s, recv_op(s, i), pm_now_ns() + timeout_ns, false,
			  what);
	struct ctrl_msg msg;

	if (ret)
		return ret;
	memcpy(&msg, rx_slot(s, i), sizeof(msg));
	if (le64toh(msg.type) != type) {
		pm_complain("%s: message of type %" PRIu64 ", expected %d",
			    what, le64toh(msg.type), (int) type);
		return -FI_EOTHER;
	}
	if (out) {
		out->type = type;
		out->addr = le64toh(msg.addr);
		out->key = le64toh(msg.key);
		out->len = le64toh(msg.len);
		out->profile = le64toh(msg.profile);
	}
	return 0;
}

/* --------------------------------------------------------------- idle */

static int64_t tv_ns(struct timeval tv)
{
	return (int64_t) tv.tv_sec * PM_NS_PER_S + (int64_t) tv.tv_usec * 1000;
}

static void sample_cpu(struct cpu_sample *c)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	c->wall_ns = pm_now_ns();
	c->user_ns = tv_ns(ru.ru_utime);
	c->sys_ns = tv_ns(ru.ru_stime);
}

static void sleep_until(int64_t end)
{
	struct timespec ts = { end / PM_NS_PER_S, end % PM_NS_PER_S };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
	       EINTR)
		;
}

/* -m sread: waits in fi_cq_sread until end; no entry may arrive. */
static int idle_sread(struct side *s, int64_t end)
{
	struct fi_cq_data_entry e;
	int64_t left;
	ssize_t ret;

	while ((left = end - pm_now_ns()) > 0) {
		ret = fi_cq_sread(s->cq, &e, 1, NULL,
				  (int) ((left + PM_NS_PER_MS - 1) /
					 PM_NS_PER_MS));
		if (ret == -FI_EAGAIN || ret == -FI_EINTR)
			continue;
		if (ret == -FI_EAVAIL)
			return pm_report_cq_error(s->cq, "idle period");
		if (ret < 0)
			return pm_check(ret, "fi_cq_sread in the idle period");
		pm_complain("a completion arrived in the idle period");
		return -FI_EOTHER;
	}
	return 0;
}

/* Idles for the period, measuring this process's CPU time over it. */
static int idle(struct side *s, const char *role)
{
	struct cpu_sample a, b;
	double wall, cpu;
	int ret = 0;

	sample_cpu(&a);
	if (s->o->server || s->o->mode != MODE_SREAD)
		sleep_until(a.wall_ns + s->o->seconds * PM_NS_PER_S);
	else
		ret = idle_sread(s, a.wall_ns + s->o->seconds * PM_NS_PER_S);
	sample_cpu(&b);
	wall = (double) (b.wall_ns - a.wall_ns) / 1e9;
	cpu = (double) (b.user_ns - a.user_ns + b.sys_ns - a.sys_ns) / 1e9;
	pm_say("idle period: %.3f s, CPU %.3f s user + %.3f s system", wall,
	       (double) (b.user_ns - a.user_ns) / 1e9,
	       (double) (b.sys_ns - a.sys_ns) / 1e9);
	printf("IDLE role=%s conns=%ld seconds=%ld cpu_pct=%.2f\n", role,
	       s->o->conns, s->o->seconds, 100.0 * cpu / wall);
	fflush(stdout);
	return ret;
}

/* Sums pmemverbs's counters over every endpoint and prints them. */
static void report_counters(struct side *s)
{
	struct fi_pmem_ep_counters c, sum = { 0 };
	long i;

	if (!s->res.pmem_ops)
		return;
	for (i = 0; i < s->neps; i++) {
		if (pm_check(s->res.pmem_ops->ep_counters(s->eps[i], &c),
			     "reading the pmemverbs counters"))
			return;
		sum.commits += c.commits;
		sum.commit_errors += c.commit_errors;
		sum.requests_served += c.requests_served;
	}
	pm_say("pmemverbs counters over %ld endpoints: %" PRIu64 " commits, "
	       "%" PRIu64 " commit errors, %" PRIu64 " requests served",
	       s->neps, sum.commits, sum.commit_errors, sum.requests_served);
}

/* -------------------------------------------------------------- target */

/* Maps the file (in /dev/shm unless -f) and registers it once. */
static int register_region(struct side *s)
{
	char path[PATH_MAX];
	int ret;

	if (!s->o->file)
		snprintf(path, sizeof(path), "/dev/shm/fi_pmem_idle.%ld",
			 (long) getpid());
	s->file.remove_at_exit = !s->o->file;
	ret = pm_map_file(s->o->file ? s->o->file : path, "fi_pmem_idle",
			  REGION_LEN, false, &s->file);
	if (!ret)
		ret = pm_register(&s->res, NULL, s->file.map, s->file.len,
				  FI_REMOTE_WRITE | FI_REMOTE_READ,
				  PM_REGION_MR_KEY,
				  s->res.pmem_ops ? FI_RMA_PMEM : 0,
				  &s->region_mr);
	if (!ret)
		pm_say("region: %s, %zu bytes, key 0x%" PRIx64 ", profile %s",
		       s->file.path, s->file.len, fi_mr_key(s->region_mr),
		       pm_profile_name(pm_region_profile(&s->res,
							 s->region_mr)));
	return ret;
}

/* Accepts one connection request; one beyond -n is rejected. */
static int accept_one(struct side *s, struct fi_info *info)
{
	long i = s->neps;
	int ret;

	if (i == s->o->conns) {
		pm_complain("a connection request beyond the %ld expected",
			    s->o->conns);
		(void) fi_reject(s->pep, info->handle, NULL, 0);
		return -FI_EOTHER;
	}
	ret = open_ep(s, info, i);
	if (!ret && i == 0)
		ret = post_recvs(s);
	return ret ? ret : pm_check(fi_accept(s->eps[i], NULL, 0),
				    "fi_accept");
}

/* Serves connection events until every connection is established. */
static int accept_all(struct side *s)
{
	int64_t deadline = pm_now_ns() + START_TIMEOUT_NS;
	struct fi_eq_cm_entry entry;
	long connected = 0;
	uint32_t event;
	int ret = 0;

	while (connected < s->o->conns && !ret) {
		ret = read_cm(s, deadline, 0, &event, &entry);
		deadline = pm_now_ns() + STEP_TIMEOUT_NS;
		if (ret)
			break;
		if (event == FI_CONNREQ) {
			ret = accept_one(s, entry.info);
			fi_freeinfo(entry.info);
		} else if (event == FI_CONNECTED) {
			connected++;
		} else {
			pm_complain("%s while accepting", event_name(event));
			ret = -FI_EOTHER;
		}
	}
	if (ret) {
		pm_complain("accepting: %ld of %ld connected", connected,
			    s->o->conns);
		report_fds();
	}
	return ret;
}

/* Sends the initiator the region: address, key, length, profile. */
static int send_region(struct side *s)
{
	uint64_t addr = pm_has_mr_mode(&s->res, FI_MR_VIRT_ADDR) ?
			(uint64_t) (uintptr_t) s->file.map : 0;
	struct ctrl_msg msg = {
		.type = htole64(MSG_REGION),
		.addr = htole64(addr),
		.key = htole64(fi_mr_key(s->region_mr)),
		.len = htole64(s->file.len),
		.profile = htole64(pm_region_profile(&s->res, s->region_mr)),
	};

	return send_ctrl(s, &msg, "sending the region");
}

static int target_session(struct side *s)
{
	int ret = register_region(s);

	if (!ret)
		ret = pm_listen(&s->res, &s->pep);
	if (!ret)
		pm_say("listening on %s port %s", PM_LISTEN_ADDR, s->o->port);
	if (!ret)
		ret = accept_all(s);
	if (!ret)
		ret = send_region(s);
	if (!ret)
		ret = recv_ctrl(s, 0, MSG_IDLE, PHASE_TIMEOUT_NS,
				"waiting for IDLE", NULL);
	if (!ret)
		ret = idle(s, "target");
	if (!ret)
		ret = send_type(s, MSG_AWAKE, "sending AWAKE");
	if (!ret)
		ret = recv_ctrl(s, 1, MSG_DONE, PHASE_TIMEOUT_NS,
				"waiting for DONE", NULL);
	if (!ret)
		report_counters(s);
	return ret;
}

/* ----------------------------------------------------------- initiator */

/* Opens endpoint i and connects it; -FI_ECONNREFUSED is not reported. */
static int connect_one(struct side *s, long i, int64_t deadline)
{
	struct fi_eq_cm_entry entry;
	uint32_t event;
	int ret = open_ep(s, s->res.info, i);

	if (!ret) {
		ret = fi_connect(s->eps[i], s->res.info->dest_addr, NULL, 0);
		if (ret != -FI_ECONNREFUSED)
			ret = pm_check(ret, "fi_connect");
	}
	if (!ret)
		ret = read_cm(s, deadline, FI_ECONNREFUSED, &event, &entry);
	if (!ret && (event != FI_CONNECTED || entry.fid != &s->eps[i]->fid)) {
		pm_complain("connection %ld: unexpected connection event %s",
			    i, event_name(event));
		ret = -FI_EOTHER;
	}
	return ret;
}

/* The first connection, retried while the target is not listening yet. */
static int connect_first(struct side *s)
{
	int64_t deadline = pm_now_ns() + START_TIMEOUT_NS;
	int ret;

	while ((ret = connect_one(s, 0, deadline)) == -FI_ECONNREFUSED &&
	       !pm_past(deadline)) {
		pm_close_fid(&s->eps[0]->fid, "closing a refused endpoint");
		s->eps[0] = NULL;
		s->neps = 0;
		pm_sleep_ms(PM_RETRY_INTERVAL_MS);
	}
	if (ret == -FI_ECONNREFUSED)
		pm_complain("%s port %s refused the connection for %lld s; is "
			    "the target running?", s->o->server, s->o->port,
			    START_TIMEOUT_NS / PM_NS_PER_S);
	return ret ? ret : post_recvs(s);
}

/* Connects every endpoint, one after the other (so the first accepted
 * is the first connected). */
static int connect_all(struct side *s)
{
	int64_t start = pm_now_ns();
	int ret = connect_first(s);
	long i;

	for (i = 1; i < s->o->conns && !ret; i++)
		ret = connect_one(s, i, pm_now_ns() + STEP_TIMEOUT_NS);
	if (ret) {
		pm_complain("connecting: %ld of %ld endpoints opened", s->neps,
			    s->o->conns);
		report_fds();
	} else
		pm_say("%ld connections in %.3f s", s->o->conns,
		       (double) (pm_now_ns() - start) / 1e9);
	return ret;
}

/* Posts a 64-byte commit on connection i, its offset from seq. */
static int post_commit(struct side *s, long i, long seq)
{
	int64_t deadline = pm_now_ns() + PM_OP_TIMEOUT_NS;
	uint64_t off = (uint64_t) seq * COMMIT_LEN % REGION_LEN;
	struct iovec iov = { .iov_base = src_buf(s), .iov_len = COMMIT_LEN };
	void *d = desc(s);
	struct fi_rma_iov rma = { .addr = s->region.addr + off,
				  .len = COMMIT_LEN, .key = s->region.key };
	struct fi_msg_rma msg = { .msg_iov = &iov, .desc = &d, .iov_count = 1,
				  .rma_iov = &rma, .rma_iov_count = 1,
				  .context = &s->ops[i].ctx };
	ssize_t ret;

	s->ops[i].done = false;
	while ((ret = fi_writemsg(s->eps[i], &msg, FI_COMMIT_COMPLETE |
				  FI_COMPLETION)) == -FI_EAGAIN &&
	       !pm_past(deadline))
		nudge(s);
	return pm_check(ret, "posting a commit");
}

/* One commit on connections first..conns-1, all in flight, all read. */
static int commit_range(struct side *s, long first, long seq)
{
	int64_t deadline;
	int ret = 0;
	long i;

	for (i = first; i < s->o->conns && !ret; i++)
		ret = post_commit(s, i, seq + i);
	deadline = pm_now_ns() + PHASE_TIMEOUT_NS;
	for (i = first; i < s->o->conns && !ret; i++)
		ret = wait_op(s, &s->ops[i], deadline, false, "a commit");
	return ret;
}

/* Times the first commit after the idle period, then one on every other
 * connection. */
static int commit_after_idle(struct side *s)
{
	int64_t start = pm_now_ns(), ns;
	int ret = post_commit(s, 0, s->o->conns);

	if (!ret)
		ret = wait_op(s, &s->ops[0], start + PM_OP_TIMEOUT_NS, true,
			      "the first commit after the idle period");
	if (ret)
		return ret;
	ns = pm_now_ns() - start;
	ret = commit_range(s, 1, s->o->conns);
	if (ret)
		return ret;
	printf("after-idle first commit latency: conns=%ld "
	       "first_commit_us=%.1f\n", s->o->conns, (double) ns / 1e3);
	fflush(stdout);
	pm_say("%ld commits after the idle period completed", s->o->conns);
	return 0;
}

static int initiator_session(struct side *s)
{
	int ret = connect_all(s);

	if (!ret)
		ret = recv_ctrl(s, 0, MSG_REGION, PHASE_TIMEOUT_NS,
				"receiving the region", &s->region);
	if (!ret)
		pm_say("region: key 0x%" PRIx64 ", %" PRIu64 " bytes, profile "
		       "%s, method %s", s->region.key, s->region.len,
		       pm_profile_name(s->region.profile),
		       pm_commit_method(&s->res, s->eps[0], s->region.key));
	if (!ret && s->region.len < REGION_LEN) {
		pm_complain("the region has %" PRIu64 " bytes, %lu needed",
			    s->region.len, REGION_LEN);
		ret = -FI_EOTHER;
	}
	if (!ret)
		ret = commit_range(s, 0, 0);
	if (!ret)
		ret = send_type(s, MSG_IDLE, "sending IDLE");
	if (!ret)
		ret = idle(s, "initiator");
	if (!ret)
		ret = recv_ctrl(s, 1, MSG_AWAKE, PHASE_TIMEOUT_NS,
				"waiting for AWAKE", NULL);
	if (!ret)
		ret = commit_after_idle(s);
	if (!ret)
		ret = send_type(s, MSG_DONE, "sending DONE");
	if (!ret)
		report_counters(s);
	return ret;
}

/* ---------------------------------------------------------------- main */

static void usage(void)
{
	fprintf(stderr,
		"usage: fi_pmem_idle [-p PROV] [-B PORT] [-n CONNS] "
		"[-t SECONDS] [-m none|sread|unspec] [-f FILE]\n"
		"       fi_pmem_idle [-p PROV] -s SERVER_ADDR [-B PORT] "
		"[-n CONNS] [-t SECONDS]\n");
	exit(PM_EXIT_USAGE);
}

static bool parse_mode(const char *text, enum idle_mode *mode)
{
	if (!strcmp(text, "none"))
		*mode = MODE_NONE;
	else if (!strcmp(text, "sread"))
		*mode = MODE_SREAD;
	else if (!strcmp(text, "unspec"))
		*mode = MODE_UNSPEC;
	else
		return false;
	return true;
}

static void parse(int argc, char **argv, struct options *o)
{
	int c;

	while ((c = getopt(argc, argv, "p:s:B:n:t:m:f:h")) != -1) {
		switch (c) {
		case 'p': o->prov = optarg; break;
		case 's': o->server = optarg; break;
		case 'B': o->port = optarg; break;
		case 'f': o->file = optarg; break;
		case 'n':
			if (!pm_parse_long(optarg, 1, MAX_CONNS, &o->conns))
				usage();
			break;
		case 't':
			if (!pm_parse_long(optarg, 1, MAX_SECONDS, &o->seconds))
				usage();
			break;
		case 'm':
			if (!parse_mode(optarg, &o->mode))
				usage();
			break;
		default: usage();
		}
	}
	if (optind != argc)
		usage();
}

int main(int argc, char **argv)
{
	struct options o = { .prov = PM_PROVIDER, .port = DEFAULT_PORT,
			     .conns = DEFAULT_CONNS,
			     .seconds = DEFAULT_SECONDS, .mode = MODE_NONE };
	struct side s = { .o = &o, .file = PM_FILE_INIT };
	int ret;

	parse(argc, argv, &o);
	/* -m none: the CQ has no wait object; waits for own work poll it */
	pm_busy_poll = o.mode == MODE_NONE;
	pm_role = o.server ? "[initiator]" : "[target]";
	raise_fd_limit(o.conns);
	ret = open_side(&s);
	if (!ret)
		ret = o.server ? initiator_session(&s) : target_session(&s);
	close_side(&s);
	if (ret)
		pm_complain("failed: %s", fi_strerror(-ret));
	return ret ? PM_EXIT_FAIL : PM_EXIT_PASS;
}
