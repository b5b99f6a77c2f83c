/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * fi_pmem_idle: the two roles (see fi_pmem_idle.c): the target accepts N
 * connections and serves a region; the initiator connects N times and
 * commits after the idle period.
 */
#include "fi_pmem_idle.h"

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

int target_session(struct side *s)
{
	struct cpu_sample awake;
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
	sample_cpu(&awake);
	if (!ret)
		ret = send_type(s, MSG_AWAKE, "sending AWAKE");
	/* the agent serves the commits (with sread-sleep, from the end of
	 * the fi_cq_sread it left the endpoints to) */
	if (s->o->mode == MODE_SLEEP || s->o->mode == MODE_SREAD_SLEEP)
		pm_read_gap_ms = SLEEP_READ_GAP_MS;
	if (!ret)
		ret = recv_ctrl(s, 1, MSG_DONE, PHASE_TIMEOUT_NS,
				"waiting for DONE", NULL);
	if (!ret)
		report_busy_cpu(s, &awake);
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

/*
 * With -k: commits on connection 0 one after the other, the others idle,
 * each timed from its post to its completion (with -g, after a gap);
 * prints their p50 and p99 (what one busy connection among N idle ones
 * costs).
 */
static int time_busy_connection(struct side *s)
{
	long n = s->o->busy_commits;
	int64_t *ns = malloc((size_t) n * sizeof(*ns)), start;
	struct pm_stats st;
	int ret = 0;

	if (!ns)
		return pm_check(-FI_ENOMEM, "allocating the commits' times");
	for (long k = 0; k < n && !ret; k++) {
		if (s->o->gap_us)
			pm_sleep_us(s->o->gap_us);
		start = pm_now_ns();
		ret = post_commit(s, 0, k);
		if (!ret)
			ret = wait_op(s, &s->ops[0], start + PM_OP_TIMEOUT_NS,
				      true, "a commit on the busy connection");
		ns[k] = pm_now_ns() - start;
	}
	if (!ret) {
		pm_summarize(ns, n, &st);
		printf("BUSY conns=%ld commits=%ld p50_us=%.1f p99_us=%.1f\n",
		       s->o->conns, n, st.p50_us, st.p99_us);
		fflush(stdout);
	}
	free(ns);
	return ret;
}

int initiator_session(struct side *s)
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
	if (!ret && s->o->busy_commits)
		ret = time_busy_connection(s);
	if (!ret)
		ret = send_type(s, MSG_DONE, "sending DONE");
	if (!ret)
		report_counters(s);
	return ret;
}
