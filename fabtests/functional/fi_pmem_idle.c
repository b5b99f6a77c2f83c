/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * fi_pmem_idle: the CPU a process spends while its connections are idle,
 * as the number of connections grows, and the latency of the first commit
 * after the idle period.
 *
 *   target:    fi_pmem_idle [-p PROV] [-B PORT] [-n CONNS] [-t SECONDS]
 *                           [-m none|sread|unspec|poll|sleep|sread-sleep]
 *                           [-f FILE]
 *   initiator: fi_pmem_idle [-p PROV] -s SERVER_ADDR [-B PORT] [-n CONNS]
 *                           [-t SECONDS] [-k COMMITS [-g US]]
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
 *   initiator            with -k, COMMITS commits on the first connection,
 *                        one after the other, each timed
 *   initiator -> target  DONE    both close everything
 *
 * While idle the initiator sleeps; the target sleeps too (-m none: its
 * CQ has no wait object; -m unspec: its CQ has FI_WAIT_UNSPEC) or waits
 * in fi_cq_sread until the period ends (-m sread; -m sread-sleep: then
 * reads its CQ only once every 50 ms, as -m sleep, so that the agent
 * serves the commits from the end of that wait), or reads its CQ with
 * fi_cq_read all along (-m poll: no wait object; it then prints
 * POLL conns=N reads=R ns_per_read=X, the cost of one read of the idle
 * CQ its N endpoints share).  Each side
 * measures its process CPU time (getrusage(RUSAGE_SELF), user + system)
 * over exactly its idle period and prints on stdout
 *
 *   IDLE role=ROLE conns=N seconds=T cpu_pct=X   (percent of one core)
 *
 * and the initiator also
 *
 *   after-idle first commit latency: conns=N first_commit_us=X
 *
 * and with -k, the commits of one busy connection among N idle ones
 * (with -g US, each after a gap of US microseconds, so that the target
 * idles between them):
 *
 *   BUSY conns=N commits=K p50_us=X p99_us=Y
 *
 * and the target its process CPU from AWAKE to DONE (the commits after
 * the idle period, -k ones included):
 *
 *   AWAKE role=target conns=N seconds=T cpu_pct=X
 *
 * Every wait is bounded.  Exit status: 0 on success, 1 on a failure, 2 on
 * a usage error.
 *
 * Files: fi_pmem_idle.h (what they share), fi_pmem_idle_fabric.c (one
 * side's fabric objects, waits, control messages), fi_pmem_idle_roles.c
 * (target and initiator), fi_pmem_idle_opts.c (options); here the idle
 * measurement and main.
 */
#include "fi_pmem_idle.h"

/* --------------------------------------------------------------- idle */

static int64_t tv_ns(struct timeval tv)
{
	return (int64_t) tv.tv_sec * PM_NS_PER_S + (int64_t) tv.tv_usec * 1000;
}

void sample_cpu(struct cpu_sample *c)
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

/* One poll of the idle target: a read of its EQ (-m eq), counter (-m
 * cntr) or CQ, which must find nothing: 0, or a negative error. */
static int poll_once(struct side *s)
{
	struct fi_cq_data_entry e;
	struct fi_eq_cm_entry cm;
	uint32_t event;
	ssize_t ret;

	if (s->o->mode == MODE_EQ) {
		ret = fi_eq_read(s->res.eq, &event, &cm, sizeof(cm), 0);
		if (ret == -FI_EAGAIN)
			return 0;
		pm_complain("the EQ read %zd in the idle period", ret);
		return -FI_EOTHER;
	}
	if (s->cntr) {
		if (fi_cntr_read(s->cntr) || fi_cntr_readerr(s->cntr)) {
			pm_complain("the counter moved in the idle period");
			return -FI_EOTHER;
		}
		return 0;
	}
	ret = fi_cq_read(s->cq, &e, 1);
	if (ret == -FI_EAVAIL)
		return pm_report_cq_error(s->cq, "idle period");
	if (ret > 0) {
		pm_complain("a completion arrived in the idle period");
		return -FI_EOTHER;
	}
	return ret == -FI_EAGAIN ? 0 :
	       pm_check(ret, "fi_cq_read in the idle period");
}

/*
 * -m poll, cntr and eq (target): reads the CQ with fi_cq_read (the
 * counter with fi_cntr_read, the EQ with fi_eq_read) until end, as a busy
 * application does, and prints what one read of the idle object cost.
 */
static int idle_poll(struct side *s, int64_t end)
{
	int64_t start = pm_now_ns(), now = start;
	long reads = 0;
	int ret;

	for (; now < end; reads++) {
		ret = poll_once(s);
		if (ret)
			return ret;
		if (!(reads & 255))
			now = pm_now_ns();
	}
	printf("POLL conns=%ld reads=%ld ns_per_read=%.0f\n", s->o->conns,
	       reads, reads ? (double) (now - start) / reads : 0.0);
	return 0;
}

/* Wall seconds from a to b into *wall; the process's CPU over them, in
 * percent of one core. */
static double cpu_pct(const struct cpu_sample *a, const struct cpu_sample *b,
		      double *wall)
{
	double cpu = (double) (b->user_ns - a->user_ns + b->sys_ns -
			       a->sys_ns) / 1e9;

	*wall = (double) (b->wall_ns - a->wall_ns) / 1e9;
	return 100.0 * cpu / *wall;
}

/* Idles for the period, measuring this process's CPU time over it. */
int idle(struct side *s, const char *role)
{
	struct cpu_sample a, b;
	double wall, pct;
	int ret = 0;

	sample_cpu(&a);
	if (!s->o->server &&
	    (s->o->mode == MODE_SREAD || s->o->mode == MODE_SREAD_SLEEP))
		ret = idle_sread(s, a.wall_ns + s->o->seconds * PM_NS_PER_S);
	else if (!s->o->server &&
		 (s->o->mode == MODE_POLL || s->o->mode == MODE_CNTR ||
		  s->o->mode == MODE_EQ))
		ret = idle_poll(s, a.wall_ns + s->o->seconds * PM_NS_PER_S);
	else
		sleep_until(a.wall_ns + s->o->seconds * PM_NS_PER_S);
	sample_cpu(&b);
	pct = cpu_pct(&a, &b, &wall);
	pm_say("idle period: %.3f s, CPU %.3f s user + %.3f s system", wall,
	       (double) (b.user_ns - a.user_ns) / 1e9,
	       (double) (b.sys_ns - a.sys_ns) / 1e9);
	printf("IDLE role=%s conns=%ld seconds=%ld cpu_pct=%.2f\n", role,
	       s->o->conns, s->o->seconds, pct);
	fflush(stdout);
	return ret;
}

/* The target's process CPU from AWAKE (sampled into a) to DONE: what the
 * commits after the idle period cost it, -k ones included. */
void report_busy_cpu(const struct side *s, const struct cpu_sample *a)
{
	struct cpu_sample b;
	double wall, pct;

	sample_cpu(&b);
	pct = cpu_pct(a, &b, &wall);
	printf("AWAKE role=target conns=%ld seconds=%.3f cpu_pct=%.2f\n",
	       s->o->conns, wall, pct);
	fflush(stdout);
}

/* Sums pmemverbs's counters over every endpoint and prints them. */
void report_counters(struct side *s)
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

int main(int argc, char **argv)
{
	struct options o = { .prov = PM_PROVIDER, .port = DEFAULT_PORT,
			     .conns = DEFAULT_CONNS,
			     .seconds = DEFAULT_SECONDS, .mode = MODE_NONE };
	struct side s = { .o = &o, .file = PM_FILE_INIT };
	int ret;

	parse(argc, argv, &o);
	/* libfabric 2.1's tcp core crashes in an fi_cq_sread on a
	 * FI_WAIT_NONE CQ */
	pm_busy_poll = mode_cq_without_wait(o.mode);
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
