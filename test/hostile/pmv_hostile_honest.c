/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_hostile_honest.c - the honest initiator: commits that must
 * complete while the hostile client attacks.
 */
#include "pmv_hostile.h"

/* ------------------------------------------------------------------ */
/* Honest initiator                                                   */
/* ------------------------------------------------------------------ */

static struct {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *eq;
	struct fid_cq *txcq, *rxcq;
	struct fid_ep *ep;
	struct ctl *ctl;
	uint8_t buf[HONEST_SLOT];
	char msg[64];
	bool shut;
} g_h;

/* Completes the hop of one CQ entry or error entry. */
static void honest_complete(void *context, int err, const char *text)
{
	struct hop *op = context;

	if (!op) {
		info("INFO honest: a completion without context (err %d)", err);
		return;
	}
	op->err = err;
	snprintf(op->text, sizeof(op->text), "%s", text ? text : "");
	op->done = true;
}

/* Reads the transmit CQ and the EQ once; true if something came. */
static bool honest_poll(void)
{
	struct fi_cq_data_entry e[8];
	struct fi_cq_err_entry err = { 0 };
	struct pmv_cm_event ev;
	ssize_t n = fi_cq_read(g_h.txcq, e, ARRAY_LEN(e));

	if (pmv_test_eq_poll(g_h.eq, &ev) && (ev.err || ev.event == FI_SHUTDOWN))
		g_h.shut = true;
	if (n == -FI_EAGAIN)
		return false;
	if (n == -FI_EAVAIL) {
		if (fi_cq_readerr(g_h.txcq, &err, 0) != 1)
			die("fi_cq_readerr failed after -FI_EAVAIL");
		honest_complete(err.op_context, err.err ? err.err : -1,
				fi_cq_strerror(g_h.txcq, err.prov_errno,
					       err.err_data, NULL, 0));
		return true;
	}
	if (n < 0)
		die("fi_cq_read: %s", fi_strerror((int)-n));
	for (ssize_t i = 0; i < n; i++)
		honest_complete(e[i].op_context, 0, NULL);
	return true;
}

/* Waits (bounded) for op; false if it did not complete. */
static bool honest_wait(struct hop *op)
{
	int64_t deadline = deadline_in(STEP_MS);

	while (!op->done) {
		if (!honest_poll() && !before(deadline))
			return false;
		if (!op->done)
			pause_briefly();
	}
	return true;
}

/* Posts one RMA write (a commit with FI_COMMIT_COMPLETE), retrying
 * -FI_EAGAIN (bounded); 0 or the post's error. */
static ssize_t honest_post(struct hop *op, const struct piece *p,
			   uint32_t slot_off, uint64_t flags)
{
	struct iovec iov = { g_h.buf + p->off, p->len };
	void *desc = NULL;
	struct fi_rma_iov rma = { .addr = g_opt.base + slot_off + p->off,
				  .len = p->len, .key = g_opt.key };
	struct fi_msg_rma msg = { .msg_iov = &iov, .desc = &desc,
				  .iov_count = 1, .rma_iov = &rma,
				  .rma_iov_count = 1, .context = &op->ctx };
	int64_t deadline = deadline_in(STEP_MS);
	ssize_t ret;

	*op = (struct hop){ 0 };
	while ((ret = fi_writemsg(g_h.ep, &msg, flags | FI_COMPLETION)) ==
	       -FI_EAGAIN && before(deadline))
		honest_poll();
	return ret;
}

/* Why op failed, for a FAIL line ("" if it did not). */
static const char *honest_failure(struct hop *op, ssize_t posted)
{
	static char why[256];

	if (posted)
		snprintf(why, sizeof(why), "fi_writemsg: %s",
			 fi_strerror((int)-posted));
	else if (!honest_wait(op))
		snprintf(why, sizeof(why), "no completion within %d ms",
			 STEP_MS);
	else if (op->err)
		snprintf(why, sizeof(why), "%s: %s", fi_strerror(op->err),
			 op->text);
	else
		return "";
	return why;
}

/* Honest commit i into slot i % HONEST_SLOTS; false (and a FAIL) if it
 * did not complete successfully. */
static bool honest_commit(uint64_t i)
{
	uint32_t s = (uint32_t)(i % HONEST_SLOTS);
	uint32_t slot_off = HONEST_OFF + s * HONEST_SLOT;
	const struct hkind *k = &k_kinds[s % 4];
	const struct piece *c = &k->p[k->n - 1];
	struct hop wop, cop;
	const char *why = "";
	char name[64];

	for (unsigned j = 0; j < k->n; j++)
		for (uint32_t b = 0; b < k->p[j].len; b++)
			g_h.buf[k->p[j].off + b] =
				honest_byte(i, slot_off + k->p[j].off + b);
	if (k->split)
		why = honest_failure(&wop, honest_post(&wop, &k->p[0],
						       slot_off, 0));
	if (!*why)
		why = honest_failure(&cop, honest_post(&cop, c, slot_off,
			FI_COMMIT_COMPLETE | (k->fence ? FI_FENCE : 0)));
	if (!*why)
		return true;
	snprintf(name, sizeof(name), "honest-commit-%" PRIu64, i);
	verdict(false, name, "%s%s", k->split ? "(write, then commit) " : "",
		why);
	return false;
}

/* Connects to the target through pmemverbs (CM data "H"). */
static void honest_connect(void)
{
	int64_t deadline = deadline_in(STEP_MS);
	struct pmv_cm_event ev;

	g_h.info = query_info("pmemverbs", true, 0);
	CHECK(fi_fabric(g_h.info->fabric_attr, &g_h.fabric, NULL));
	CHECK(fi_domain(g_h.fabric, g_h.info, &g_h.domain, NULL));
	g_h.eq = open_eq(g_h.fabric);
	g_h.txcq = open_cq(g_h.domain);
	g_h.rxcq = open_cq(g_h.domain);
	CHECK(fi_endpoint(g_h.domain, g_h.info, &g_h.ep, NULL));
	CHECK(fi_ep_bind(g_h.ep, &g_h.eq->fid, 0));
	CHECK(fi_ep_bind(g_h.ep, &g_h.txcq->fid, FI_TRANSMIT));
	CHECK(fi_ep_bind(g_h.ep, &g_h.rxcq->fid, FI_RECV));
	CHECK(fi_enable(g_h.ep));
	CHECK(fi_connect(g_h.ep, g_h.info->dest_addr, "H", 1));
	while (!pmv_test_eq_poll(g_h.eq, &ev)) {
		if (!before(deadline))
			die("no FI_CONNECTED within %d ms", STEP_MS);
		pause_briefly();
	}
	if (ev.err || ev.event != FI_CONNECTED)
		die("connecting: event %u, error %s", ev.event,
		    fi_strerror(ev.err < 0 ? -ev.err : ev.err));
}

/* Sends "DONE n" to the target and waits (bounded) for it to go. */
static void honest_send_done(uint64_t n)
{
	struct hop op = { 0 };
	int64_t deadline = deadline_in(STEP_MS);
	ssize_t ret;

	snprintf(g_h.msg, sizeof(g_h.msg), "DONE %" PRIu64, n);
	while ((ret = fi_send(g_h.ep, g_h.msg, strlen(g_h.msg) + 1, NULL, 0,
			      &op.ctx)) == -FI_EAGAIN && before(deadline))
		honest_poll();
	if (ret || !honest_wait(&op) || op.err)
		verdict(false, "honest-done", "telling the target: %s",
			ret ? fi_strerror((int)-ret) : op.err ?
			fi_strerror(op.err) : "no completion");
}

/* Commits until the attack is over and g_opt.after more are done. */
static void honest_run(struct hrun *r)
{
	int64_t life = deadline_in(HONEST_LIFE_MS);

	*r = (struct hrun){ .started = UINT64_MAX, .ended = UINT64_MAX };
	while (r->ended == UINT64_MAX || r->n < r->ended + g_opt.after) {
		r->failed = !honest_commit(r->n);
		r->n++;
		if (r->failed) {
			ctl_store(&g_h.ctl->honest_failed, 1);
			return;
		}
		ctl_store(&g_h.ctl->honest_commits, r->n);
		if (r->n == 1)
			info("STARTED");
		if (r->started == UINT64_MAX &&
		    ctl_load(&g_h.ctl->attack_started))
			r->started = r->n;
		if (r->ended == UINT64_MAX && !access(g_opt.marker, F_OK))
			r->ended = r->n;
		if (!before(life) && r->ended == UINT64_MAX) {
			verdict(false, "honest-commits", "the attack did not "
				"end within %d ms", HONEST_LIFE_MS);
			r->failed = true;
			return;
		}
	}
}

static void honest_close(void)
{
	fi_shutdown(g_h.ep, 0);
	fi_close(&g_h.ep->fid);
	fi_close(&g_h.txcq->fid);
	fi_close(&g_h.rxcq->fid);
	fi_close(&g_h.eq->fid);
	fi_close(&g_h.domain->fid);
	fi_close(&g_h.fabric->fid);
	fi_freeinfo(g_h.info);
}

int honest_main(void)
{
	struct hrun r;

	g_role = "honest";
	if (!g_opt.ctl || !g_opt.marker || !g_opt.key)
		die("-c CTL, -m MARKER and -x BASE:KEY are needed");
	g_h.ctl = ctl_map();
	honest_connect();
	honest_run(&r);
	honest_send_done(r.n);
	if (!r.failed)
		verdict(true, "honest-commits", "%" PRIu64 " commits completed, "
			"%" PRIu64 " of them while the hostile client attacked, "
			"%u after it; none failed", r.n,
			r.started == UINT64_MAX ? 0 : r.ended - r.started,
			g_opt.after);
	if (r.started == UINT64_MAX)
		info("INFO honest: the hostile client never started its attack");
	honest_close();
	return g_failed ? 1 : 0;
}
