/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The target's unit tests' fake core counter, EQ, domain and fabric
 * (serve_fixture.h): what a pmemverbs counter or EQ opened over t_core_dom
 * and t_fab reads and waits on.  A read of the counter is the core's
 * progress: it runs t_core_cntr_progress if a test set one.  Its count
 * is 7 and what fi_cntr_add added (t_core_cntr_added).
 */
#include "serve_fixture.h"

int t_core_waits;
void (*t_core_cntr_progress)(void);
uint64_t t_core_cntr_added;

static int fake_close(struct fid *fid)
{
	(void) fid;
	return 0;
}

struct fi_ops t_fake_fi_ops = { .size = sizeof(struct fi_ops),
				.close = fake_close };

static uint64_t fake_cntr_read(struct fid_cntr *cntr)
{
	(void) cntr;
	if (t_core_cntr_progress)
		t_core_cntr_progress();
	return 7 + t_core_cntr_added;
}

static int fake_cntr_add(struct fid_cntr *cntr, uint64_t value)
{
	(void) cntr;
	t_core_cntr_added += value;
	return 0;
}

static int fake_cntr_wait(struct fid_cntr *cntr, uint64_t threshold,
			  int timeout)
{
	(void) cntr; (void) threshold; (void) timeout;
	t_core_waits++;
	return -FI_ETIMEDOUT;
}

static struct fi_ops_cntr fake_cntr_ops = {
	.size = sizeof(struct fi_ops_cntr), .read = fake_cntr_read,
	.readerr = fake_cntr_read, .add = fake_cntr_add,
	.wait = fake_cntr_wait };
static struct fid_cntr fake_core_cntr = { .fid.ops = &t_fake_fi_ops,
					  .ops = &fake_cntr_ops };

static int fake_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr,
			  struct fid_cntr **cntr, void *context)
{
	(void) domain; (void) attr; (void) context;
	*cntr = &fake_core_cntr;
	return 0;
}

static ssize_t fake_eq_read(struct fid_eq *eq, uint32_t *event, void *buf,
			    size_t len, uint64_t flags)
{
	(void) eq; (void) event; (void) buf; (void) len; (void) flags;
	return -FI_EAGAIN;
}

static ssize_t fake_eq_sread(struct fid_eq *eq, uint32_t *event, void *buf,
			     size_t len, int timeout, uint64_t flags)
{
	(void) eq; (void) event; (void) buf; (void) len; (void) timeout;
	(void) flags;
	t_core_waits++;
	return -FI_EAGAIN;
}

static struct fi_ops_eq fake_eq_ops = { .size = sizeof(struct fi_ops_eq),
					.read = fake_eq_read,
					.sread = fake_eq_sread };
static struct fid_eq fake_core_eq = { .fid.ops = &t_fake_fi_ops,
				      .ops = &fake_eq_ops };

static int fake_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr,
			struct fid_eq **eq, void *context)
{
	(void) fabric; (void) attr; (void) context;
	*eq = &fake_core_eq;
	return 0;
}

static struct fi_ops_domain fake_dom_ops = {
	.size = sizeof(struct fi_ops_domain), .cntr_open = fake_cntr_open };
struct fid_domain t_core_dom = { .ops = &fake_dom_ops };
struct fi_ops_fabric t_core_fab_ops = {
	.size = sizeof(struct fi_ops_fabric), .eq_open = fake_eq_open };
static struct fid_fabric fake_core_fab = { .ops = &t_core_fab_ops };
struct pmv_fabric t_fab = { .core = &fake_core_fab };
