/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * 01-commit, target: maps a file, registers it as persistent memory
 * (FI_RMA_PMEM) and tells the initiator where it is; when the initiator
 * says "done", its committed line is durable in the file.
 *
 *   ./target [PORT [FILE]]     (default 9600, /dev/shm/pmem_example_01)
 */
#include "pmem_example.h"

#define LINE "durable line written by 01-commit"

int main(int argc, char **argv)
{
	const char *port = argc > 1 ? argv[1] : "9600";
	const char *path = argc > 2 ? argv[2] : "/dev/shm/pmem_example_01";
	char *map = ex_map_file(path);
	struct ex x = { 0 };
	struct ex_region region;
	struct fid_mr *mr;

	memset(map, 0, 4096);
	ex_accept(&x, port);
	region = ex_register_pmem(&x, map, &mr);
	ex_send(&x, &region, sizeof(region));
	ex_wait_for(&x, FI_RECV, NULL, NULL); /* "done" */
	printf("target: the file %s holds \"%s\"\n", path, map);
	ex_close(&x, mr);
	if (strcmp(map, LINE)) {
		fprintf(stderr, "FAIL: the committed line is not in the file\n");
		return 1;
	}
	printf("OK\n");
	return 0;
}
