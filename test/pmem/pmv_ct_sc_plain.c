/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_ct_sc_plain.c - Scenario no-pmem-caps: an application that asks for no
 * FI_RMA_PMEM.
 */

#include "pmv_ct.h"

/* ---- scenario no-pmem-caps: an application that did not ask ---- */

/* The objects of an application opened with hints->caps FI_MSG|FI_RMA. */
struct plain_app {
	struct fi_info *info;
	struct fid_mr *mr;  /* the source, if the domain wants FI_MR_LOCAL */
	void *desc;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *eq;
	struct fid_cq *cq;
	struct fid_ep *ep;
};

/* Opens fabric, domain, EQ, CQ and endpoint without FI_RMA_PMEM in caps. */
static void plain_app_open(struct plain_app *p)
{
	struct fi_info *hints = make_hints();
	struct fi_eq_attr eq_attr = { .size = 16, .wait_obj = FI_WAIT_UNSPEC };
	struct fi_cq_attr cq_attr = { .size = 64, .format = FI_CQ_FORMAT_DATA,
				      .wait_obj = FI_WAIT_NONE };
	int ret;

	hints->caps = FI_MSG | FI_RMA;
	ret = fi_getinfo(PMV_FI_VERSION, g_opt.addr, g_opt.port, 0, hints,
			 &p->info);
	fi_freeinfo(hints);
	if (ret)
		die("fi_getinfo with caps FI_MSG|FI_RMA: %s", fi_strerror(-ret));
	CHECK(fi_fabric(p->info->fabric_attr, &p->fabric, NULL));
	CHECK(fi_domain(p->fabric, p->info, &p->domain, NULL));
	CHECK(fi_eq_open(p->fabric, &eq_attr, &p->eq, NULL));
	CHECK(fi_cq_open(p->domain, &cq_attr, &p->cq, NULL));
	CHECK(fi_endpoint(p->domain, p->info, &p->ep, NULL));
	CHECK(fi_ep_bind(p->ep, &p->eq->fid, 0));
	CHECK(fi_ep_bind(p->ep, &p->cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_enable(p->ep));
	if (p->info->domain_attr->mr_mode & FI_MR_LOCAL) {
		CHECK(fi_mr_reg(p->domain, g_sc.buf, 4096, FI_WRITE, 0, 0x5200,
				0, &p->mr, NULL));
		p->desc = fi_mr_desc(p->mr);
	}
}

static void plain_app_close(struct plain_app *p)
{
	CHECK(fi_close(&p->ep->fid));
	if (p->mr)
		CHECK(fi_close(&p->mr->fid));
	CHECK(fi_close(&p->cq->fid));
	CHECK(fi_close(&p->eq->fid));
	CHECK(fi_close(&p->domain->fid));
	CHECK(fi_close(&p->fabric->fid));
	fi_freeinfo(p->info);
}

/* Connects the plain application's endpoint to the target (bounded). */
static void plain_app_connect(struct plain_app *p)
{
	char kind = KIND_EXTRA;
	int64_t deadline = deadline_in(STEP_MS);
	struct cm_event ev;

	CHECK(fi_connect(p->ep, p->info->dest_addr, &kind, 1));
	while (before(deadline)) {
		if (!eq_poll(p->eq, &ev)) {
			pause_briefly();
			continue;
		}
		if (ev.event == FI_CONNECTED)
			return;
		die("no-pmem-caps: EQ event %u while connecting", ev.event);
	}
	die("no-pmem-caps: not connected within %d ms", STEP_MS);
}

/* Reads the plain application's CQ for one completion (bounded); true if
 * one came, with its error (0: success) in *err. */
static bool plain_app_wait(struct plain_app *p, int *err)
{
	int64_t deadline = deadline_in(STEP_MS);
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry ee = { 0 };
	ssize_t n;

	while (before(deadline)) {
		n = fi_cq_read(p->cq, &e, 1);
		if (n == 1) {
			*err = 0;
			return true;
		}
		if (n == -FI_EAVAIL && fi_cq_readerr(p->cq, &ee, 0) == 1) {
			*err = ee.err ? ee.err : -1;
			return true;
		}
		pause_briefly();
	}
	return false;
}

/* One write of 64 bytes to pmem-a with these flags: the call's return,
 * then (if accepted) how it completed. */
static void plain_app_write(struct plain_app *p, uint64_t flags,
			    ssize_t *ret, bool *completed, int *err)
{
	struct fi_context2 ctx;
	struct iovec iov = { g_sc.buf, 64 };
	struct fi_rma_iov rma = { rma_addr(REG_A, 4096), 64,
				  g_s.reg[REG_A].key };
	struct fi_msg_rma msg = { .msg_iov = &iov, .desc = &p->desc,
				  .iov_count = 1, .rma_iov = &rma,
				  .rma_iov_count = 1, .context = &ctx };
	int64_t deadline = deadline_in(STEP_MS);

	while ((*ret = fi_writemsg(p->ep, &msg, flags)) == -FI_EAGAIN &&
	       before(deadline))
		pause_briefly();
	*completed = !*ret && plain_app_wait(p, err);
}

/*
 * no-pmem-caps: an application with hints->caps FI_MSG|FI_RMA (no
 * FI_RMA_PMEM): fi_mr_reg(FI_RMA_PMEM) and fi_writemsg(FI_COMMIT_COMPLETE)
 * must be refused at the call (-FI_EOPNOTSUPP), never complete as if
 * durable; a plain write still works.
 */
void sc_no_pmem_caps(void)
{
	struct plain_app p = { 0 };
	struct fid_mr *mr = NULL;
	bool completed;
	ssize_t ret;
	int err = 0;

	sc_setup(1, 4096);
	plain_app_open(&p);
	printf("no-pmem-caps: fi_getinfo returned caps %s FI_RMA_PMEM\n",
	       p.info->caps & FI_RMA_PMEM ? "with" : "without");
	ret = fi_mr_reg(p.domain, g_sc.buf, 4096, FI_REMOTE_WRITE, 0, 0x5100,
			FI_RMA_PMEM, &mr, NULL);
	if (!ret)
		CHECK(fi_close(&mr->fid));
	expect_ret("no-pmem-caps/mr-reg-pmem", ret, -FI_EOPNOTSUPP);
	plain_app_connect(&p);
	plain_app_write(&p, FI_COMMIT_COMPLETE, &ret, &completed, &err);
	if (ret || !completed)
		expect_ret("no-pmem-caps/commit", ret, -FI_EOPNOTSUPP);
	else
		verdict(false, check_name("no-pmem-caps/commit"), "expected "
			"-FI_EOPNOTSUPP got the commit accepted and completed "
			"with %s, though no agent made it durable",
			errname(err));
	plain_app_write(&p, 0, &ret, &completed, &err);
	verdict(!ret && completed && !err, check_name("no-pmem-caps/plain-write"),
		"%sfi_writemsg without flags: %s, completion %s",
		!ret && completed && !err ? "" : "expected success got ",
		errname(ret), completed ? errname(err) : "none");
	fi_shutdown(p.ep, 0);
	plain_app_close(&p);
}
