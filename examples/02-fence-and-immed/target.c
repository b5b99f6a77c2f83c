/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * 02-fence-and-immed, target: serves a log of records and a tail word;
 * counts the FI_IMMED completions the initiator's commits raise here (flags
 * FI_REMOTE_CQ_DATA, data = the record number), then checks the log.
 *
 *   ./target [PORT [FILE]]     (default 9610, /dev/shm/pmem_example_02)
 */
#include "pmem_example.h"

#define RECORDS 3
#define RECORD_LEN 64

/* Waits (bounded) for the FI_IMMED completions not seen yet. */
static void await_immed(struct ex *x, int *immed)
{
	struct fi_cq_data_entry entry;

	while (*immed < RECORDS) {
		ex_wait(x, &entry);
		if (entry.flags & FI_REMOTE_CQ_DATA) {
			printf("target: FI_IMMED completion, data %llu\n",
			       (unsigned long long) entry.data);
			(*immed)++;
		}
	}
}

int main(int argc, char **argv)
{
	const char *port = argc > 1 ? argv[1] : "9610";
	const char *path = argc > 2 ? argv[2] : "/dev/shm/pmem_example_02";
	char *map = ex_map_file(path);
	struct ex x = { 0 };
	struct ex_region region;
	struct fid_mr *mr;
	uint64_t tail;
	int immed = 0;

	memset(map, 0, 4096);
	ex_accept(&x, port);
	region = ex_register_pmem(&x, map, &mr);
	ex_send(&x, &region, sizeof(region));
	ex_wait_for(&x, FI_RECV, NULL, &immed); /* "done" */
	await_immed(&x, &immed);
	memcpy(&tail, map, sizeof(tail));
	printf("target: tail %llu, %d FI_IMMED completions\n",
	       (unsigned long long) tail, immed);
	for (uint64_t i = 0; i < tail; i++)
		printf("target: record %llu: \"%s\"\n", (unsigned long long) i,
		       map + RECORD_LEN * (i + 1));
	ex_close(&x, mr);
	if (tail != RECORDS || immed != RECORDS) {
		fprintf(stderr, "FAIL: expected %d records and completions\n",
			RECORDS);
		return 1;
	}
	printf("OK\n");
	return 0;
}
