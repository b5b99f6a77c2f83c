/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * fi_pmem_commit: functional test of durable RMA writes (FI_COMMIT_COMPLETE)
 * to a remote file mapping.
 *
 *   target:    fi_pmem_commit [-p PROV] [-e msg] [-B PORT] [-f FILE]
 *   initiator: fi_pmem_commit [-p PROV] [-e msg] -s SERVER_ADDR [-B PORT]
 *
 * The target empties and maps a file (MAP_SHARED; a temporary file unless
 * -f is given), registers it (with FI_RMA_PMEM on pmemverbs) and sends its
 * address, key and persistence profile.  The initiator writes a
 * deterministic pattern (each byte a function of its offset in the file)
 * into fixed ranges of the region, one set of ranges per check:
 *
 *   commit         commits of 8, 64, 4096 and 65536 bytes, and one of two
 *                  iov entries, each fi_writemsg(FI_COMMIT_COMPLETE); on
 *                  pmemverbs the profile the target reported for the key
 *                  (peer_profile) must be the region's
 *   fenced_commit  four fi_writes, then an 8-byte write with
 *                  FI_FENCE | FI_COMMIT_COMPLETE
 *   immed          64 commits with FI_IMMED | FI_COMMIT_COMPLETE, 16 in
 *                  flight, msg.data = 0x1eed0000 + i; the target must get
 *                  each data value exactly once, in an entry with FI_RMA |
 *                  FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA, and find the
 *                  commit's bytes in place when it arrives (with -p tcp:
 *                  FI_REMOTE_CQ_DATA | FI_COMMIT_COMPLETE, the core's own,
 *                  whose target entries have no FI_RMA flag)
 *   flush          eight fi_writes, then a pure flush (iov_count 0,
 *                  rma_iov {addr, 0, key}) with FI_COMMIT_COMPLETE;
 *                  pmemverbs only
 *   immed_einval   FI_IMMED without FI_COMMIT_COMPLETE is -FI_EINVAL;
 *                  pmemverbs only
 *
 * After each check the initiator reads its ranges back with fi_read.  At
 * the end the target closes the region, reads the whole file back and
 * checks every byte: the pattern in the ranges written, 0 elsewhere
 * (file_contents).  Each side prints one PASS, FAIL or SKIP line per check
 * on stdout; the target sends its verdict to the initiator, so both exit 0
 * only if every check passed, 1 otherwise (2 on a usage error, 61 =
 * FI_ENODATA, a fabtests skip, for -e rdm).  Every wait is bounded.
 *
 * Files: fi_pmem_commit.h (what they share), fi_pmem_commit_initiator.c,
 * fi_pmem_commit_checks.c (the initiator's checks), fi_pmem_commit_target.c,
 * fi_pmem_commit_opts.c (options); here the tables, the pattern, the
 * verdict line and main.
 */
#include "fi_pmem_commit.h"

const char *const check_names[NCHECKS] = {
	"commit", "fenced_commit", "immed", "flush", "immed_einval",
	"immed_target", "file_contents",
};

const struct range_set range_sets[NRANGE_SETS] = {
	[RS_COMMIT8] = { CK_COMMIT, 0x00000, 8, 1, 0 },
	[RS_COMMIT64] = { CK_COMMIT, 0x00040, 64, 1, 0 },
	[RS_COMMIT4K] = { CK_COMMIT, 0x01000, 4096, 1, 0 },
	[RS_COMMIT64K] = { CK_COMMIT, 0x10000, 65536, 1, 0 },
	[RS_COMMIT_IOV] = { CK_COMMIT, 0x20000, 64, 2, 0x100 },
	[RS_FENCE_DATA] = { CK_FENCE, 0x30000, 4096, 4, 0x1000 },
	[RS_FENCE_PTR] = { CK_FENCE, 0x2f000, 8, 1, 0 },
	[RS_IMMED] = { CK_IMMED, 0x40000, 256, IMMED_COUNT, 256 },
	[RS_FLUSH] = { CK_FLUSH, 0x80000, 8192, 8, 8192 },
};

/* ------------------------------------------------------------- pattern */

/* The byte the pattern puts at offset off of the region. */
uint8_t pattern_byte(uint64_t off)
{
	uint64_t x = (off >> 3) + 0x9e3779b97f4a7c15ULL;

	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return (uint8_t) (x >> (8 * (off & 7)));
}

void fill_pattern(char *buf, uint64_t off, uint64_t len)
{
	uint64_t i;

	for (i = 0; i < len; i++)
		buf[i] = (char) pattern_byte(off + i);
}

/* Offset of the first mismatch of buf (at region offset off), or -1. */
int64_t pattern_mismatch(const char *buf, uint64_t off, uint64_t len)
{
	uint64_t i;

	for (i = 0; i < len; i++)
		if ((uint8_t) buf[i] != pattern_byte(off + i))
			return (int64_t) (off + i);
	return -1;
}

uint64_t range_off(int set, int i)
{
	return range_sets[set].off + (uint64_t) i * range_sets[set].stride;
}

/* When the check being printed started (the previous one ended). */
int64_t check_clock;

/* Prints "NAME RESULT TIME detail" for a check on stdout. */
void print_verdict(enum check_id id, enum verdict v, const char *fmt,
		   ...)
{
	static const char *const names[] = { "PASS", "FAIL", "SKIP" };
	int64_t now = pm_now_ns();
	va_list ap;

	printf("%-14s %s  %7.1f ms  ", check_names[id], names[v],
	       (double) (now - check_clock) / 1e6);
	check_clock = now;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

int main(int argc, char **argv)
{
	struct options opts;
	int ret;

	if (!parse_options(argc, argv, &opts)) {
		usage(argv[0]);
		return PM_EXIT_USAGE;
	}
	pm_role = opts.server ? "[initiator]" : "[target]";
	ret = pm_check_ep_type(opts.prov, opts.ep_type);
	if (ret != PM_EXIT_PASS)
		return ret;
	ret = opts.server ? run_initiator(&opts) : run_target(&opts);
	return ret ? PM_EXIT_FAIL : PM_EXIT_PASS;
}
