/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_itest_main.c - the test table and main.
 */
#include "pmv_itest.h"

/* ------------------------------------------------------------------ */
/* Test table and main                                                */
/* ------------------------------------------------------------------ */

/* CQ formats: tags only for the tagged test, remote CQ data only where it
 * is checked, MSG (flags and length) everywhere else; the verbs core's MSG
 * endpoints have no FI_CQ_FORMAT_TAGGED. */
static const struct test_def k_tests[] = {
	{ .name = "sendrecv", .caps = FI_MSG, .msg_order = FI_ORDER_SAS,
	  .cq_format = FI_CQ_FORMAT_DATA,
	  .setup = require_cq_data, .server = sendrecv_run,
	  .client = sendrecv_run },
	{ .name = "tagged", .caps = FI_MSG | FI_TAGGED,
	  .cq_format = FI_CQ_FORMAT_TAGGED, .server = tagged_server,
	  .client = tagged_client },
	{ .name = "rma", .caps = FI_MSG | FI_RMA, .msg_order = FI_ORDER_SAW,
	  .cq_format = FI_CQ_FORMAT_DATA, .setup = require_cq_data,
	  .server = rma_server, .client = rma_client },
	{ .name = "atomic", .caps = FI_MSG | FI_ATOMIC,
	  .msg_order = FI_ORDER_ATOMIC_RAW, .cq_format = FI_CQ_FORMAT_MSG,
	  .server = atomic_server, .client = atomic_client },
	{ .name = "cmdata", .caps = FI_MSG, .cq_format = FI_CQ_FORMAT_MSG,
	  .msg_only = true, .setup = cmdata_setup, .server = cmdata_run,
	  .client = cmdata_run },
	{ .name = "shutdown", .caps = FI_MSG, .cq_format = FI_CQ_FORMAT_MSG,
	  .msg_only = true, .server = shutdown_run, .client = shutdown_run },
	{ .name = "reject", .caps = FI_MSG, .cq_format = FI_CQ_FORMAT_MSG,
	  .msg_only = true, .own_connection = true, .server = reject_server,
	  .client = reject_client },
	{ .name = "badaddr", .caps = FI_MSG, .cq_format = FI_CQ_FORMAT_MSG,
	  .own_connection = true, .server = no_server_side,
	  .client = badaddr_client },
	{ .name = "waitobj", .caps = FI_MSG, .msg_order = FI_ORDER_SAS,
	  .cq_format = FI_CQ_FORMAT_DATA,
	  .setup = waitobj_setup, .server = waitobj_run,
	  .client = waitobj_run },
	{ .name = "cntr", .caps = FI_MSG | FI_RMA, .msg_order = FI_ORDER_SAW,
	  .cq_format = FI_CQ_FORMAT_MSG, .setup = cntr_setup,
	  .server = cntr_server, .client = cntr_client },
	{ .name = "cqerr", .caps = FI_MSG, .cq_format = FI_CQ_FORMAT_MSG,
	  .server = cqerr_run, .client = cqerr_run },
};

static const struct test_def *find_test(const char *name)
{
	for (size_t i = 0; i < ARRAY_LEN(k_tests); i++)
		if (!strcmp(k_tests[i].name, name))
			return &k_tests[i];
	fprintf(stderr, "unknown test '%s'\n", name);
	usage();
}

int main(int argc, char **argv)
{
	struct opts o;
	const struct test_def *t;
	struct ctx c = { .o = &o, .peer = FI_ADDR_UNSPEC, .next_key = 1 };

	parse_opts(argc, argv, &o);
	g_role = o.role == ROLE_SERVER ? "server" : "client";
	t = find_test(o.test);
	if (t->msg_only && o.ep_type != FI_EP_MSG) {
		fprintf(stderr, "test '%s' is for msg endpoints only\n", t->name);
		return EXIT_USAGE;
	}
	c.info = resolve_info(&o, t->caps, t->msg_order);
	c.ep_info = c.info;
	c.cq_format = t->cq_format;
	describe_info(c.info);
	if (t->setup)
		t->setup(&c);
	if (!t->own_connection)
		establish(&c);
	(o.role == ROLE_SERVER ? t->server : t->client)(&c);
	teardown(&c);
	return 0;
}
