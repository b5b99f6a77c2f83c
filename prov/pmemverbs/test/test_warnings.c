/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Unit tests: a failure an application may retry in a loop is warned once
 * per endpoint, not once per retry.  The log is libfabric's at
 * FI_LOG_LEVEL=warn (set before libfabric reads it, in each test's own
 * process), on stderr, which Criterion captures.
 */
#include <stdio.h>
#include <stdlib.h>

#include <criterion/criterion.h>

#include "objects_fixture.h"

#include <criterion/redirect.h>

#define RETRIES 3

static void open_fixture_logging_warnings(void)
{
	setenv("FI_LOG_LEVEL", "warn", 1);
	setenv("FI_LOG_PROV", PMV_PROV_NAME, 1);
	cr_redirect_stderr();
	open_fixture();
}

TestSuite(warnings, .init = open_fixture_logging_warnings,
	  .fini = close_fixture);

/* Lines of what the test wrote to stderr that contain text. */
static int stderr_lines_with(const char *text)
{
	FILE *err = cr_get_redirected_stderr();
	char line[1024];
	int n = 0;

	fflush(stderr);
	while (fgets(line, sizeof(line), err))
		n += strstr(line, text) != NULL;
	return n;
}

/* A commit before the endpoint is connected: refused on every retry,
 * warned once. */
Test(warnings, a_commit_retried_before_connecting_is_warned_once)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_CONTEXT };
	char buf[8] = "durable";
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct fi_rma_iov rma = { .addr = 0, .len = sizeof(buf), .key = 1 };
	struct fi_msg_rma msg = { .msg_iov = &iov, .iov_count = 1,
				  .rma_iov = &rma, .rma_iov_count = 1 };
	struct fid_cq *cq;
	struct fid_ep *ep;

	cr_assert_eq(fi_cq_open(fx.domain, &cq_attr, &cq, NULL), 0);
	ep = open_bound_ep(fx.info, cq);
	for (int i = 0; i < RETRIES; i++)
		cr_assert_eq(fi_writemsg(ep, &msg, FI_COMMIT_COMPLETE),
			     -FI_ENOTCONN);
	cr_assert_eq(fi_close(&ep->fid), 0);
	cr_assert_eq(fi_close(&cq->fid), 0);
	cr_assert_eq(stderr_lines_with("commit: endpoint is not connected"), 1,
		     "%d commits refused, warned other than once", RETRIES);
}
