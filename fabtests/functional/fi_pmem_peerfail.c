/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * fi_pmem_peerfail: what an initiator sees when its target dies or freezes
 * with commits in flight.
 *
 *   target:    fi_pmem_peerfail [-p PROV] [-B PORT] [-f FILE]
 *   initiator: fi_pmem_peerfail [-p PROV] -s SERVER_ADDR [-B PORT]
 *                               [-d DEPTH] [-n WARM] [-R PORT2]
 *
 * The target maps a file, registers it and serves it (pm_serve_region).
 * The initiator keeps DEPTH 64-byte commits in flight (every fourth with
 * FI_FENCE), reading only its transmit CQ (never the EQ); no call may
 * block (CALL_CAP_S: a call still inside after that is a hang).  After WARM commits completed it prints a
 * line "PEERFAIL-NOW" on stdout: the driving script then kills (SIGKILL)
 * or freezes (SIGSTOP) the target.  From then on every commit must end,
 * in success (it was durable before the failure) or in an error
 * completion; once one failed, no more are posted, and a new commit must
 * be refused with an error return.  Then the endpoint closes, and with
 * -R the initiator connects to a second target at PORT2 and one commit
 * there must succeed.  No entry in the CQ may carry a context that is not
 * one of the commits' (pmemverbs's internal traffic must never surface,
 * errors included).  Prints the time from PEERFAIL-NOW to the first
 * error (information, not a check) and exits 0 only if nothing hung.
 * Every wait is bounded (HANG_CAP_NS: a commit that never ends is a
 * failure, not a wait).
 */
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/pmem_common.h"

#define DEFAULT_PORT "9370"
#define REGION_LEN (1UL << 20)
#define COMMIT_LEN 64
#define MAX_DEPTH 63 /* and one more context for the extra commit */
#define HANG_CAP_NS (60 * PM_NS_PER_S)
#define CALL_CAP_S 10 /* a call that takes longer is hung, not slow */
#define CALL_CAP_TEXT "10"
#define EXTRA_AFTER_NS (500 * PM_NS_PER_MS)
#define PF_RETRIES 3 /* commits tried after the failure, each refused */

struct options {
	const char *prov;
	const char *server;
	const char *port;
	const char *port2;
	const char *file;
	long depth;
	long warm;
};

struct run {
	struct pm_conn conn;
	struct pm_region region;
	struct fi_context2 ctx[MAX_DEPTH + 1];
	long in_flight, posted, done_ok, done_err;
	long stray; /* entries whose context is none of ctx[] */
	int first_err;
	char errstr[160];
};

static int serve(const void *arg, const struct pm_fabric *res,
		 struct pm_conn *conn, struct pm_file *file)
{
	const struct options *opts = arg;
	int ret = pm_map_file(opts->file, "fi_pmem_peerfail", REGION_LEN,
			      false, file);

	return ret ? ret : pm_serve_region(res, conn, file);
}

/* A libfabric call that does not return within CALL_CAP_S hangs. */
static void call_hung(int sig)
{
	static const char msg[] = "initiator error: a commit call did not "
				  "return within " CALL_CAP_TEXT " s\n";

	(void) sig;
	(void) !write(2, msg, sizeof(msg) - 1);
	_exit(PM_EXIT_FAIL);
}

/*
 * Posts one commit in slot i (every fourth with FI_FENCE, which must not
 * wait in the call either); the core's answer.
 */
static ssize_t post_commit(struct run *r, long i)
{
	uint64_t off = (uint64_t) (r->posted % (REGION_LEN / COMMIT_LEN)) *
		       COMMIT_LEN;
	uint64_t fence = r->posted % 4 == 3 ? FI_FENCE : 0;
	ssize_t ret;

	memset(r->conn.src, (int) (r->posted & 0xff), COMMIT_LEN);
	alarm(CALL_CAP_S);
	ret = pm_writemsg(&r->conn, r->conn.src, COMMIT_LEN,
			  r->region.addr + off, r->region.key, 0,
			  FI_COMMIT_COMPLETE | FI_COMPLETION | fence,
			  &r->ctx[i]);
	alarm(0);
	return ret;
}

/* True if ctx is one of the application's commit contexts. */
static bool ours(const struct run *r, const void *ctx)
{
	const struct fi_context2 *c = ctx;

	return c >= r->ctx && c <= r->ctx + MAX_DEPTH;
}

/*
 * Reads one completion, success or error, if there is one.  An entry that
 * is not one of our commits' (pmemverbs's internal traffic surfacing, a
 * NULL context) is counted as stray.
 */
static void read_one(struct run *r)
{
	struct fi_cq_err_entry err = { 0 };
	struct fi_cq_data_entry e;
	ssize_t ret = fi_cq_read(r->conn.tx_cq, &e, 1);

	if (ret == 1 && !ours(r, e.op_context)) {
		r->stray++;
	} else if (ret == 1) {
		r->in_flight--;
		r->done_ok++;
		return;
	}
	if (ret != -FI_EAVAIL || fi_cq_readerr(r->conn.tx_cq, &err, 0) != 1)
		return;
	if (!ours(r, err.op_context)) {
		r->stray++;
		return;
	}
	r->in_flight--;
	if (!r->done_err++) {
		r->first_err = err.err;
		snprintf(r->errstr, sizeof(r->errstr), "%s",
			 fi_cq_strerror(r->conn.tx_cq, err.prov_errno,
					err.err_data, NULL, 0));
	}
}

/* Keeps depth commits in flight until warm completed; 0 or an error. */
static int warm_up(struct run *r, const struct options *o)
{
	int64_t deadline = pm_now_ns() + HANG_CAP_NS;

	while (r->done_ok < o->warm && !r->done_err) {
		if (pm_past(deadline)) {
			pm_complain("warm-up: %ld of %ld commits in %lld s",
				    r->done_ok, o->warm,
				    HANG_CAP_NS / PM_NS_PER_S);
			return -FI_ETIMEDOUT;
		}
		if (r->in_flight < o->depth &&
		    !post_commit(r, r->posted % o->depth)) {
			r->posted++;
			r->in_flight++;
		}
		read_one(r);
	}
	return r->done_err ? -FI_EIO : 0;
}

/*
 * Once the target surely failed (EXTRA_AFTER_NS after PEERFAIL-NOW), one
 * more commit with FI_FENCE, beyond the window, behind the ones in
 * flight: the call must return at once (0 or an error), never wait for
 * them.  True: done.
 */
static bool post_extra_fenced(struct run *r, const struct options *o)
{
	uint64_t off = (uint64_t) (r->posted % (REGION_LEN / COMMIT_LEN)) *
		       COMMIT_LEN;
	ssize_t ret;

	alarm(CALL_CAP_S);
	ret = pm_writemsg(&r->conn, r->conn.src, COMMIT_LEN,
			  r->region.addr + off, r->region.key, 0,
			  FI_COMMIT_COMPLETE | FI_COMPLETION | FI_FENCE,
			  &r->ctx[o->depth]);
	alarm(0);
	if (!ret) {
		r->posted++;
		r->in_flight++;
	}
	return true;
}

/*
 * After PEERFAIL-NOW: posts while nothing failed, reads only the CQ, until
 * every posted commit ended.  0 if so, -FI_ETIMEDOUT if one never did.
 */
static int ride_out(struct run *r, const struct options *o, int64_t *err_ms)
{
	int64_t start = pm_now_ns(), deadline = start + HANG_CAP_NS;
	bool extra = false;
	ssize_t ret;

	while (!r->done_err || r->in_flight) {
		if (pm_past(deadline)) {
			pm_complain("%ld commits still in flight %lld s after "
				    "the target failed (%ld ended in error)",
				    r->in_flight, HANG_CAP_NS / PM_NS_PER_S,
				    r->done_err);
			return -FI_ETIMEDOUT;
		}
		if (!r->done_err && r->in_flight < o->depth) {
			ret = post_commit(r, r->posted % o->depth);
			if (!ret) {
				r->posted++;
				r->in_flight++;
			}
		}
		if (!extra && !r->done_err &&
		    pm_now_ns() - start > EXTRA_AFTER_NS)
			extra = post_extra_fenced(r, o);
		read_one(r);
		if (r->done_err && *err_ms < 0)
			*err_ms = (pm_now_ns() - start) / PM_NS_PER_MS;
	}
	return 0;
}

/* A commit after the failure must be refused at the call. */
static int expect_refused_once(struct run *r)
{
	ssize_t ret;
	int i;

	for (i = 0; i < 1000; i++) {
		ret = post_commit(r, 0);
		if (ret != -FI_EAGAIN)
			break;
		read_one(r);
		pm_sleep_ms(1);
	}
	if (ret == 0) {
		pm_complain("a commit after the failure was accepted");
		return -FI_EINVAL;
	}
	pm_say("a commit after the failure is refused: %s",
	       fi_strerror((int) -ret));
	return ret == -FI_EAGAIN ? -FI_EAGAIN : 0;
}

/* Every commit after the failure is refused, as an application retrying
 * would see (the provider warns once per endpoint, not per retry). */
static int expect_refused(struct run *r)
{
	int ret = 0;

	for (int i = 0; i < PF_RETRIES && !ret; i++)
		ret = expect_refused_once(r);
	return ret;
}

/* Connects to port, receives the region. */
static int attach(const struct options *o, const char *port,
		  struct pm_fabric *res, struct run *r)
{
	int ret = pm_open_fabric(o->prov, o->server, port, res);

	if (!ret)
		ret = pm_connect(res, o->server, port, COMMIT_LEN, MAX_DEPTH,
				 &r->conn);
	if (!ret)
		ret = pm_receive_region(&r->conn, &r->region);
	return ret;
}

static void detach(struct pm_fabric *res, struct run *r)
{
	pm_close_conn(&r->conn);
	pm_close_fabric(res);
}

/* -R: a fresh connection to a live target commits once. */
static int commit_elsewhere(const struct options *o)
{
	struct pm_fabric res = { 0 };
	struct run r = { 0 };
	struct fi_cq_data_entry e;
	int ret = attach(o, o->port2, &res, &r);

	if (!ret)
		ret = (int) post_commit(&r, 0);
	if (!ret)
		ret = pm_wait_for_one(r.conn.tx_cq, &r.ctx[0],
				      pm_now_ns() + HANG_CAP_NS,
				      "the commit on the new connection", &e);
	if (!ret) {
		pm_say("PASS new-connection: a commit on a new connection "
		       "completed");
		(void) pm_send_ctrl(&r.conn, PM_DONE_TEXT,
				    sizeof(PM_DONE_TEXT), "done");
	}
	detach(&res, &r);
	return ret;
}

static int run_initiator(const struct options *o)
{
	struct pm_fabric res = { 0 };
	static struct run r;
	int64_t err_ms = -1;
	int ret = attach(o, o->port, &res, &r);

	if (!ret)
		ret = warm_up(&r, o);
	if (ret) {
		detach(&res, &r);
		return ret;
	}
	printf("PEERFAIL-NOW\n");
	fflush(stdout);
	ret = ride_out(&r, o, &err_ms);
	if (!ret) {
		pm_say("PASS no-hang: every commit ended: %ld succeeded in all, "
		       "%ld failed; first error %" PRId64 " ms after "
		       "PEERFAIL-NOW: %s (%s)", r.done_ok, r.done_err, err_ms,
		       fi_strerror(r.first_err), r.errstr);
		ret = expect_refused(&r);
	}
	if (r.stray) {
		pm_complain("%ld completions with a context that is no "
			    "commit's (internal traffic in the CQ)", r.stray);
		ret = ret ? ret : -FI_EINVAL;
	}
	detach(&res, &r);
	if (!ret)
		pm_say("PASS closed: the endpoint closed");
	if (!ret && o->port2)
		ret = commit_elsewhere(o);
	return ret;
}

static void usage(void)
{
	fprintf(stderr, "usage: fi_pmem_peerfail [-p PROV] [-B PORT] [-f FILE]"
		"\n       fi_pmem_peerfail [-p PROV] -s ADDR [-B PORT] "
		"[-d DEPTH] [-n WARM] [-R PORT2]\n");
	exit(PM_EXIT_USAGE);
}

static void parse(int argc, char **argv, struct options *o)
{
	int c;

	while ((c = getopt(argc, argv, "p:s:B:R:f:d:n:h")) != -1) {
		switch (c) {
		case 'p': o->prov = optarg; break;
		case 's': o->server = optarg; break;
		case 'B': o->port = optarg; break;
		case 'R': o->port2 = optarg; break;
		case 'f': o->file = optarg; break;
		case 'd':
			if (!pm_parse_long(optarg, 1, MAX_DEPTH, &o->depth))
				usage();
			break;
		case 'n':
			if (!pm_parse_long(optarg, 1, 1000000, &o->warm))
				usage();
			break;
		default: usage();
		}
	}
}

int main(int argc, char **argv)
{
	struct options o = { .prov = PM_PROVIDER, .port = DEFAULT_PORT,
			     .depth = 16, .warm = 200 };

	parse(argc, argv, &o);
	pm_role = o.server ? "initiator" : "target";
	signal(SIGALRM, call_hung);
	if (!o.server)
		return pm_run_target(o.prov, o.port, 16, serve, &o) ?
		       PM_EXIT_FAIL : PM_EXIT_PASS;
	return run_initiator(&o) ? PM_EXIT_FAIL : PM_EXIT_PASS;
}
