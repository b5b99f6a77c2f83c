/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * fi_pmem_remotelog: RemoteLog (log replication, "Correct, Fast Remote
 * Persistence", section 4.1): the initiator appends checksummed records to
 * a log in the target's file, each append durable before the next starts.
 *
 *   target:    fi_pmem_remotelog [-p PROV] [-e msg] [-B PORT] [-f FILE]
 *   initiator: fi_pmem_remotelog [-p PROV] [-e msg] -s SERVER_ADDR [-B PORT]
 *                                [-m singleton|compound] [-S SIZES]
 *                                [-I APPENDS] [-W WARMUP] [--csv]
 *   recovery:  fi_pmem_remotelog -r FILE
 *
 * The file: a 4 KiB header, then the log.  The header holds the magic
 * "PMVRLOG", the version, the mode, the log's 64-bit id, the log's offset
 * and capacity, the offset of the tail pointer (64: a cache line of its
 * own) and a CRC32C of these fields; the tail pointer is the number of
 * log bytes published (compound mode only).  A record is a 16-byte header
 * {u64 seq, u32 len, u32 crc} and len bytes of payload, padded with zeros
 * to a multiple of 64 bytes; seq counts from 1; crc is the CRC32C of the
 * log id, seq, len and the payload, so a record of an older log in the same
 * bytes never passes.  The payload is a function of (log id, seq).
 *
 * The initiator sends the mode, the log id and the capacity it needs; the
 * target empties its file (-f, or a temporary one), maps it MAP_SHARED,
 * writes and msyncs the header, registers the file (FI_RMA_PMEM on
 * pmemverbs) and sends the region.  Appends:
 *
 *   singleton  one fi_writemsg(FI_COMMIT_COMPLETE) of the whole record;
 *              the tail is where the checksums stop matching
 *   compound   the record's commit, then, posted right behind it, the new
 *              tail with fi_writemsg(FI_FENCE | FI_COMMIT_COMPLETE): the
 *              record is durable before the tail pointer is placed
 *
 * SIZES are record sizes, header included (payload = size - 16), from 32
 * bytes.  Per size: WARMUP appends, then APPENDS measured ones (all of them
 * are in the log); the latency of an append runs from its first post to its
 * last completion (the record is built before), the throughput counts the
 * measured appends over the whole loop, record building included.  Output:
 * p50, p99, max, mean in microseconds and appends/s per size, as a table or
 * with --csv as "provider,profile,mode,size,appends,p50_us,p99_us,max_us,
 * mean_us,appends_per_s".
 *
 * Recovery (-r FILE, no network) maps the file, finds the tail (by
 * checksum in singleton mode, from the tail pointer in compound mode),
 * verifies the checksum, sequence number and payload of every record up to
 * it, and that no valid record of the log lies beyond it (in compound mode
 * one record written right at the published tail is allowed: it is
 * reported, since an append may stop between its two commits), and
 * prints the number of records.  It exits 0 if the log is consistent, 1 if
 * not.  Exit status otherwise: 0 on success, 1 on a failure, 2 on a usage
 * error, 61 (FI_ENODATA, a fabtests skip) for -e rdm.
 *
 * Files: fi_pmem_remotelog.h (what they share), fi_pmem_remotelog_log.c
 * (records, recovery), fi_pmem_remotelog_initiator.c,
 * fi_pmem_remotelog_target.c, fi_pmem_remotelog_opts.c (options); here main.
 */
#include "fi_pmem_remotelog.h"

int main(int argc, char **argv)
{
	struct options opts;
	int ret;

	if (!parse_options(argc, argv, &opts)) {
		usage(argv[0]);
		return PM_EXIT_USAGE;
	}
	if (opts.recover) {
		pm_role = "[recovery]";
		return recover(opts.recover) ? PM_EXIT_FAIL : PM_EXIT_PASS;
	}
	pm_role = opts.server ? "[initiator]" : "[target]";
	ret = pm_check_ep_type(opts.prov, opts.ep_type);
	if (ret != PM_EXIT_PASS)
		return ret;
	ret = opts.server ? run_initiator(&opts) : run_target(&opts);
	return ret ? PM_EXIT_FAIL : PM_EXIT_PASS;
}
