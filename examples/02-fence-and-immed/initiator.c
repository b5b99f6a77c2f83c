/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * 02-fence-and-immed, initiator: appends records to a remote log.  Each
 * append is two commits posted back to back: the record, then the tail
 * word with FI_FENCE (the record is durable before the tail is placed, so
 * a tail never points past a record that could be lost) and FI_IMMED (once
 * the tail is durable, the target gets a completion carrying the record
 * number).  The log's layout: the tail (8 bytes) at offset 0, record i at
 * offset 64 * (i + 1).
 *
 *   ./initiator [ADDR [PORT]]  (default 127.0.0.1 9610)
 */
#include "pmem_example.h"

#define RECORDS 3
#define RECORD_LEN 64

/* Posts a commit, taking completions while the endpoint is busy. */
static void post(struct ex *x, const struct ex_region *r, uint64_t offset,
		 size_t src, size_t len, uint64_t flags, uint64_t data,
		 int *done)
{
	struct iovec iov = { .iov_base = x->buf + src, .iov_len = len };
	struct fi_rma_iov rma = { .addr = r->addr + offset, .len = len,
				  .key = r->key };
	struct fi_msg_rma msg = { .msg_iov = &iov, .desc = &x->buf_desc,
				  .iov_count = 1, .rma_iov = &rma,
				  .rma_iov_count = 1, .data = data };
	ssize_t ret;

	while ((ret = fi_writemsg(x->ep, &msg, FI_COMMIT_COMPLETE |
				  FI_COMPLETION | flags)) == -FI_EAGAIN) {
		ex_wait_for(x, FI_WRITE, NULL, NULL);
		(*done)++;
	}
	if (ret)
		ex_die("fi_writemsg", ret);
}

int main(int argc, char **argv)
{
	const char *addr = argc > 1 ? argv[1] : "127.0.0.1";
	const char *port = argc > 2 ? argv[2] : "9610";
	struct ex x = { 0 };
	struct ex_region region;
	uint64_t tail;
	int done = 0;

	ex_connect(&x, addr, port);
	ex_wait_for(&x, FI_RECV, NULL, NULL);
	memcpy(&region, EX_RECV(&x), sizeof(region));

	for (uint64_t i = 0; i < RECORDS; i++) {
		/* each append's source bytes stay untouched until it is done */
		size_t rec = RECORD_LEN * (2 * i + 1), tl = RECORD_LEN * 2 * i;

		snprintf(x.buf + rec, RECORD_LEN, "record %llu",
			 (unsigned long long) i);
		tail = i + 1;
		memcpy(x.buf + tl, &tail, sizeof(tail));
		post(&x, &region, RECORD_LEN * (i + 1), rec, RECORD_LEN, 0, 0,
		     &done);
		post(&x, &region, 0, tl, sizeof(tail), FI_FENCE | FI_IMMED,
		     i + 1, &done);
	}
	while (done < 2 * RECORDS) {
		ex_wait_for(&x, FI_WRITE, NULL, NULL);
		done++;
	}
	printf("initiator: %d records appended, each durable before its "
	       "tail\n", RECORDS);
	ex_send(&x, "done", 5);
	ex_close(&x, NULL);
	printf("OK\n");
	return 0;
}
