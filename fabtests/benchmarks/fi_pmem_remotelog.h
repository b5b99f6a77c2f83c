/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * fi_pmem_remotelog: what its files share (see fi_pmem_remotelog.c for the
 * program): limits, the log's layout, the setup message, the options and
 * the functions one file defines and another calls.
 */
#ifndef FI_PMEM_REMOTELOG_H
#define FI_PMEM_REMOTELOG_H

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/pmem_common.h"
#include "../common/pmem_log_record.h"

#define DEFAULT_PROVIDER PM_PROVIDER
#define DEFAULT_PORT "9231"
#define DEFAULT_SIZES "64,256,4096"
#define DEFAULT_APPENDS 10000
#define DEFAULT_WARMUP 100
#define MAX_APPENDS 10000000L
#define MIN_RECORD 32
#define MAX_RECORD (1UL << 20)

#define LOG_MAGIC "PMVRLOG"
#define LOG_VERSION 1
#define HEADER_SIZE 4096UL
#define TAIL_OFFSET 64UL
#define REC_HDR_SIZE 16UL
#define MAX_CAPACITY (4UL << 30)

#define SETUP_MAGIC 0x31304c52564d50ULL /* "PMVRL01" */

enum log_mode { MODE_SINGLETON = 1, MODE_COMPOUND = 2 };

/* At offset 0 of the file, little-endian. */
struct log_header {
	char magic[8];
	uint32_t version;
	uint32_t mode;
	uint64_t log_id;
	uint64_t log_offset;
	uint64_t capacity;
	uint64_t tail_offset;
	uint32_t reserved;
	uint32_t crc; /* CRC32C of the bytes before it */
};

struct rec_header {
	uint64_t seq;
	uint32_t len;
	uint32_t crc;
};

/* Initiator to target, little-endian. */
struct setup_msg {
	uint64_t magic;
	uint64_t mode;
	uint64_t log_id;
	uint64_t capacity;
};

struct options {
	const char *prov;
	enum fi_ep_type ep_type;
	const char *server;
	const char *port;
	enum log_mode mode;
	size_t sizes[PM_MAX_SIZES];
	int nsizes;
	long appends;
	long warmup;
	const char *file;
	const char *recover; /* -r FILE */
	bool csv;
};

/* Functions one file of the program defines and another calls. */
const char *mode_name(uint32_t mode);
uint64_t record_space(uint64_t payload);
uint64_t build_record(unsigned char *buf, uint64_t log_id, uint64_t seq,
		      uint32_t len);
uint32_t header_crc(const struct log_header *h);
int recover(const char *path);
uint64_t log_capacity(const struct options *opts);
int run_initiator(const struct options *opts);
int run_target(const struct options *opts);
void usage(const char *prog);
bool parse_options(int argc, char **argv, struct options *opts);

#endif /* FI_PMEM_REMOTELOG_H */
