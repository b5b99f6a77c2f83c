/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * fi_pmem_remotelog: the target (see fi_pmem_remotelog.c): initializes the
 * log file and serves it to the initiator.
 */
#include "fi_pmem_remotelog.h"

/* -------------------------------------------------------------- target */

/* Writes the header of an empty log and makes it durable (msync). */
static int init_log(struct pm_file *file, uint32_t mode, uint64_t log_id,
		    uint64_t capacity)
{
	struct log_header h = {
		.magic = LOG_MAGIC,
		.version = htole32(LOG_VERSION),
		.mode = htole32(mode),
		.log_id = htole64(log_id),
		.log_offset = htole64(HEADER_SIZE),
		.capacity = htole64(capacity),
		.tail_offset = htole64(TAIL_OFFSET),
	};

	h.crc = htole32(header_crc(&h));
	memcpy(file->map, &h, sizeof(h));
	memset(file->map + TAIL_OFFSET, 0, 8);
	if (msync(file->map, HEADER_SIZE, MS_SYNC)) {
		pm_complain("msync of %s: %s", file->path, strerror(errno));
		return -FI_EIO;
	}
	return 0;
}

/* pm_run_target's callback. */
static int serve_initiator(const void *arg, const struct pm_fabric *res,
			   struct pm_conn *conn, struct pm_file *file)
{
	const struct options *opts = arg;
	struct setup_msg setup;
	uint64_t mode, cap;
	int ret = pm_recv_ctrl(conn, pm_now_ns() + PM_CM_TIMEOUT_NS,
			       "receiving the log's parameters", &setup,
			       sizeof(setup));

	if (ret)
		return ret;
	mode = le64toh(setup.mode);
	cap = le64toh(setup.capacity);
	if (le64toh(setup.magic) != SETUP_MAGIC ||
	    (mode != MODE_SINGLETON && mode != MODE_COMPOUND) || !cap ||
	    cap > MAX_CAPACITY) {
		pm_complain("unexpected request (is the initiator "
			    "fi_pmem_remotelog?)");
		return -FI_EINVAL;
	}
	ret = pm_map_file(opts->file, "fi_pmem_remotelog", HEADER_SIZE + cap,
			  true, file);
	if (!ret)
		ret = init_log(file, (uint32_t) mode, le64toh(setup.log_id),
			       cap);
	if (!ret)
		pm_say("%s log of %" PRIu64 " bytes in %s", mode_name(
		       (uint32_t) mode), cap, file->path);
	return ret ? ret : pm_serve_region(res, conn, file);
}

int run_target(const struct options *opts)
{
	return pm_run_target(opts->prov, opts->port, 16, serve_initiator, opts);
}
