/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * 01-commit, initiator: one durable write.  fi_writemsg with
 * FI_COMMIT_COMPLETE on an FI_RMA_PMEM endpoint is a commit: its
 * completion means the bytes are durable in the target's file, whatever
 * the file is (page cache, fsdax, device-DAX).
 *
 *   ./initiator [ADDR [PORT]]  (default 127.0.0.1 9600)
 */
#include "pmem_example.h"

#define LINE "durable line written by 01-commit"

int main(int argc, char **argv)
{
	const char *addr = argc > 1 ? argv[1] : "127.0.0.1";
	const char *port = argc > 2 ? argv[2] : "9600";
	struct ex x = { 0 };
	struct ex_region region;

	ex_connect(&x, addr, port);
	ex_wait_for(&x, FI_RECV, NULL, NULL);
	memcpy(&region, EX_RECV(&x), sizeof(region));

	strcpy(x.buf, LINE);
	ex_commit(&x, &region, 0, sizeof(LINE), 0, 0);
	ex_wait_for(&x, FI_WRITE, NULL, NULL);
	printf("initiator: commit of %zu bytes complete: durable at the "
	       "target\n", sizeof(LINE));

	ex_send(&x, "done", 5);
	ex_close(&x, NULL);
	printf("OK\n");
	return 0;
}
