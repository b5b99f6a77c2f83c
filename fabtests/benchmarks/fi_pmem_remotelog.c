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
 */
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

static const char *mode_name(uint32_t mode)
{
	return mode == MODE_SINGLETON ? "singleton" :
	       mode == MODE_COMPOUND ? "compound" : "unknown";
}

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

/* ------------------------------------------------------------- records */

/* Bytes a record of payload len occupies in the log. */
static uint64_t record_space(uint64_t payload)
{
	return pm_round_up(REC_HDR_SIZE + payload, PM_LINE_SIZE);
}

/* Builds record seq with len payload bytes at buf, padded; its space. */
static uint64_t build_record(unsigned char *buf, uint64_t log_id, uint64_t seq,
			     uint32_t len)
{
	struct rec_header h = { .seq = htole64(seq), .len = htole32(len) };
	uint64_t space = record_space(len);

	fill_payload(buf + REC_HDR_SIZE, log_id, seq, len);
	memset(buf + REC_HDR_SIZE + len, 0, space - REC_HDR_SIZE - len);
	h.crc = htole32(record_crc(log_id, seq, len, buf + REC_HDR_SIZE));
	memcpy(buf, &h, sizeof(h));
	return space;
}

/*
 * Whether a valid record seq lies at log offset pos (log of cap bytes);
 * its space in *space.  With check_payload, the payload must also be the
 * generator's.
 */
static bool record_valid(const unsigned char *log, uint64_t cap, uint64_t pos,
			 uint64_t log_id, uint64_t seq, bool check_payload,
			 uint64_t *space)
{
	static unsigned char *expect;
	static size_t expect_len;
	struct rec_header h;
	uint32_t len;

	if (pos + REC_HDR_SIZE > cap)
		return false;
	memcpy(&h, log + pos, sizeof(h));
	len = le32toh(h.len);
	if (le64toh(h.seq) != seq || len > cap - pos - REC_HDR_SIZE ||
	    record_space(len) > cap - pos ||
	    record_crc(log_id, seq, len, log + pos + REC_HDR_SIZE) !=
	    le32toh(h.crc))
		return false;
	if (check_payload) {
		if (expect_len < len) {
			free(expect);
			expect = malloc(len);
			expect_len = expect ? len : 0;
		}
		if (!expect)
			return false;
		fill_payload(expect, log_id, seq, len);
		if (memcmp(expect, log + pos + REC_HDR_SIZE, len))
			return false;
	}
	*space = record_space(len);
	return true;
}

static uint32_t header_crc(const struct log_header *h)
{
	return log_crc(0, h, offsetof(struct log_header, crc));
}

/* ------------------------------------------------------------ recovery */

/* Looks for any valid record with seq > last beyond pos (a lost append). */
static bool stray_record(const unsigned char *log, uint64_t cap, uint64_t pos,
			 uint64_t log_id, uint64_t last, uint64_t *at,
			 uint64_t *seq)
{
	struct rec_header h;
	uint64_t space;

	for (; pos + REC_HDR_SIZE <= cap; pos += PM_LINE_SIZE) {
		memcpy(&h, log + pos, sizeof(h));
		if (!h.seq || le64toh(h.seq) <= last)
			continue;
		if (record_valid(log, cap, pos, log_id, le64toh(h.seq), false,
				 &space)) {
			*at = pos;
			*seq = le64toh(h.seq);
			return true;
		}
	}
	return false;
}

static int recover(const char *path)
{
	int fd = open(path, O_RDONLY);
	struct log_header h;
	const unsigned char *map, *log;
	uint64_t cap, pos = 0, seq = 0, space, tail = 0, at, stray_seq, log_id;
	bool consistent = true, compound;
	struct stat st;
	const char *why = "";

	if (fd < 0 || fstat(fd, &st)) {
		pm_complain("%s: %s", path, strerror(errno));
		return -FI_EIO;
	}
	if ((size_t) st.st_size < HEADER_SIZE) {
		pm_complain("%s: %lld bytes, too small for a log", path,
			    (long long) st.st_size);
		close(fd);
		return -FI_EINVAL;
	}
	map = mmap(NULL, (size_t) st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED) {
		pm_complain("mmap of %s: %s", path, strerror(errno));
		return -FI_EIO;
	}
	memcpy(&h, map, sizeof(h));
	if (memcmp(h.magic, LOG_MAGIC, sizeof(LOG_MAGIC)) ||
	    le32toh(h.crc) != header_crc(&h) ||
	    le32toh(h.version) != LOG_VERSION ||
	    (le32toh(h.mode) != MODE_SINGLETON &&
	     le32toh(h.mode) != MODE_COMPOUND) ||
	    le64toh(h.log_offset) < HEADER_SIZE ||
	    le64toh(h.tail_offset) + 8 > HEADER_SIZE ||
	    le64toh(h.log_offset) > (uint64_t) st.st_size ||
	    le64toh(h.capacity) > (uint64_t) st.st_size -
				  le64toh(h.log_offset)) {
		pm_complain("%s: no valid RemoteLog header", path);
		munmap((void *) map, (size_t) st.st_size);
		return -FI_EINVAL;
	}
	compound = le32toh(h.mode) == MODE_COMPOUND;
	log_id = le64toh(h.log_id);
	log = map + le64toh(h.log_offset);
	cap = le64toh(h.capacity);
	if (compound) {
		memcpy(&tail, map + le64toh(h.tail_offset), 8);
		tail = le64toh(tail);
		if (tail > cap) {
			consistent = false;
			why = "the tail pointer lies beyond the log";
			tail = 0;
		}
	}
	/* Walk the records: up to the tail pointer, or while they are valid. */
	while (compound ? pos < tail :
	       record_valid(log, cap, pos, log_id, seq + 1, false, &space)) {
		if (!record_valid(log, cap, pos, log_id, seq + 1, true,
				  &space)) {
			consistent = false;
			why = compound ? "an invalid record before the tail "
					 "pointer" : "a record whose payload "
					 "is not the generator's";
			break;
		}
		pos += space;
		seq++;
	}
	if (consistent && compound && pos != tail) {
		consistent = false;
		why = "the tail pointer is not at a record boundary";
	}
	if (!compound)
		tail = pos;
	printf("%s: %s log, %" PRIu64 " records (seq 1..%" PRIu64 "), %"
	       PRIu64 " bytes, tail %" PRIu64 "\n", path,
	       mode_name(le32toh(h.mode)), seq, seq, pos, tail);
	if (consistent && stray_record(log, cap, pos, log_id, seq, &at,
				       &stray_seq)) {
		if (compound && at == pos && stray_seq == seq + 1 &&
		    record_valid(log, cap, pos, log_id, seq + 1, true,
				 &space) &&
		    !stray_record(log, cap, pos + space, log_id, seq + 1, &at,
				  &stray_seq)) {
			/* appends are sequential: at most one unpublished */
			printf("%s: record %" PRIu64 " past the tail pointer "
			       "(written, not published)\n", path, seq + 1);
		} else {
			consistent = false;
			printf("%s: record %" PRIu64 " at log offset %" PRIu64
			       " lies beyond the tail\n", path, stray_seq, at);
			why = "a valid record beyond the tail (a hole)";
		}
	}
	printf("%s: %s%s%s\n", path, consistent ? "consistent" : "INCONSISTENT",
	       consistent ? "" : ": ", why);
	printf("records=%" PRIu64 "\n", seq);
	munmap((void *) map, (size_t) st.st_size);
	return consistent ? 0 : -FI_EIO;
}

/* ----------------------------------------------------------- initiator */

struct client {
	const struct options *opts;
	struct pm_conn *conn;
	struct pm_region region;
	uint64_t log_id;
	uint64_t capacity;
	uint64_t pos; /* log bytes appended */
	uint64_t seq; /* last appended */
	struct fi_context2 ctx[2];
	uint64_t *tail_buf;
};

static uint64_t log_capacity(const struct options *opts)
{
	uint64_t cap = 0;
	int i;

	for (i = 0; i < opts->nsizes; i++)
		cap += (uint64_t) (opts->appends + opts->warmup) *
		       record_space(opts->sizes[i] - REC_HDR_SIZE);
	return pm_round_up(cap, 4096);
}

static ssize_t post_with_retry(struct client *c, const void *buf, size_t len,
			       uint64_t off, uint64_t flags, void *ctx,
			       int64_t deadline)
{
	ssize_t ret;

	while ((ret = pm_writemsg(c->conn, buf, len, c->region.addr + off,
				  c->region.key, 0, flags, ctx)) ==
	       -FI_EAGAIN && !pm_past(deadline))
		fi_cq_read(c->conn->tx_cq, NULL, 0); /* progress */
	return ret;
}

/* Waits for n completions (contexts ctx[0..n-1], each once). */
static int wait_completions(struct client *c, int n, int64_t deadline)
{
	struct fi_cq_data_entry e;
	bool seen[2] = { false, false };
	long slot;
	ssize_t ret;
	int got = 0;

	while (got < n) {
		ret = fi_cq_read(c->conn->tx_cq, &e, 1);
		if (ret == -FI_EAGAIN) {
			if (pm_past(deadline)) {
				pm_complain("append: timed out");
				return -FI_ETIMEDOUT;
			}
			continue;
		}
		if (ret == -FI_EAVAIL)
			return pm_report_cq_error(c->conn->tx_cq, "append");
		if (ret < 0)
			return pm_check(ret, "fi_cq_read");
		slot = (struct fi_context2 *) e.op_context - c->ctx;
		if (slot < 0 || slot >= n || seen[slot]) {
			pm_complain("append: unexpected completion");
			return -FI_EOTHER;
		}
		seen[slot] = true;
		got++;
	}
	return 0;
}

/* One durable append of the record built in src; its time in *elapsed. */
static int append(struct client *c, uint64_t space, int64_t *elapsed)
{
	int64_t start = pm_now_ns(), deadline = start + PM_OP_TIMEOUT_NS;
	uint64_t off = HEADER_SIZE + c->pos;
	bool compound = c->opts->mode == MODE_COMPOUND;
	ssize_t ret;

	ret = post_with_retry(c, c->conn->src, space, off,
			      FI_COMMIT_COMPLETE | FI_COMPLETION, &c->ctx[0],
			      deadline);
	if (ret)
		return pm_check(ret, "posting the record");
	if (compound) {
		*c->tail_buf = htole64(c->pos + space);
		ret = post_with_retry(c, c->tail_buf, sizeof(*c->tail_buf),
				      TAIL_OFFSET, FI_FENCE |
				      FI_COMMIT_COMPLETE | FI_COMPLETION,
				      &c->ctx[1], deadline);
		if (ret) {
			pm_check(ret, "posting the tail pointer");
			wait_completions(c, 1, deadline);
			return (int) ret;
		}
	}
	ret = wait_completions(c, compound ? 2 : 1, deadline);
	*elapsed = pm_now_ns() - start;
	if (!ret) {
		c->pos += space;
		c->seq++;
	}
	return (int) ret;
}

static void print_header(const struct options *opts)
{
	if (opts->csv)
		printf("provider,profile,mode,size,appends,p50_us,p99_us,"
		       "max_us,mean_us,appends_per_s\n");
	else
		printf("%-10s %-8s %-10s %7s %8s %9s %9s %9s %9s %11s\n",
		       "provider", "profile", "mode", "size", "appends",
		       "p50_us", "p99_us", "max_us", "mean_us", "appends/s");
}

static int measure_size(struct client *c, size_t size, int64_t *samples)
{
	const struct options *opts = c->opts;
	uint32_t payload = (uint32_t) (size - REC_HDR_SIZE);
	long total = opts->warmup + opts->appends, i;
	int64_t start = 0, elapsed = 0;
	struct pm_stats s;
	uint64_t space;
	int ret;

	for (i = 0; i < total; i++) {
		if (i == opts->warmup)
			start = pm_now_ns();
		space = build_record((unsigned char *) c->conn->src, c->log_id,
				     c->seq + 1, payload);
		ret = append(c, space, &elapsed);
		if (ret) {
			pm_complain("append of record %" PRIu64 " (%zu bytes) "
				    "failed", c->seq + 1, size);
			return ret;
		}
		if (i >= opts->warmup)
			samples[i - opts->warmup] = elapsed;
	}
	elapsed = pm_now_ns() - start;
	pm_summarize(samples, opts->appends, &s);
	printf(opts->csv ? "%s,%s,%s,%zu,%ld,%.2f,%.2f,%.2f,%.2f,%.1f\n" :
	       "%-10s %-8s %-10s %7zu %8ld %9.2f %9.2f %9.2f %9.2f %11.1f\n",
	       opts->prov, c->region.profile, mode_name(opts->mode), size,
	       opts->appends, s.p50_us, s.p99_us, s.max_us, s.mean_us,
	       (double) opts->appends * 1e9 / (double) elapsed);
	fflush(stdout);
	return 0;
}

static size_t largest_size(const struct options *opts)
{
	size_t max = 0;
	int i;

	for (i = 0; i < opts->nsizes; i++)
		if (opts->sizes[i] > max)
			max = opts->sizes[i];
	return max;
}

static int run_initiator(const struct options *opts)
{
	struct pm_fabric res = { 0 };
	struct pm_conn conn = { 0 };
	struct client c = { .opts = opts };
	size_t rma_max = pm_round_up(largest_size(opts), PM_LINE_SIZE) +
			 PM_LINE_SIZE;
	int64_t *samples = calloc((size_t) opts->appends, sizeof(*samples));
	struct setup_msg setup;
	int ret = samples ? 0 : pm_check(-FI_ENOMEM, "allocating samples");
	int i;

	c.capacity = log_capacity(opts);
	c.log_id = mix64((uint64_t) pm_now_ns() ^ ((uint64_t) getpid() << 32));
	setup = (struct setup_msg) {
		.magic = htole64(SETUP_MAGIC), .mode = htole64(opts->mode),
		.log_id = htole64(c.log_id), .capacity = htole64(c.capacity),
	};
	if (!ret)
		ret = pm_open_fabric(opts->prov, opts->server, opts->port, &res);
	if (!ret)
		ret = pm_connect(&res, opts->server, opts->port, rma_max, 16,
				 &conn);
	if (!ret)
		ret = pm_send_ctrl(&conn, &setup, sizeof(setup),
				   "sending the log's parameters");
	if (!ret)
		ret = pm_receive_region(&conn, &c.region);
	if (!ret && c.region.len < HEADER_SIZE + c.capacity) {
		pm_complain("the target's region is too small");
		ret = -FI_EINVAL;
	}
	if (!ret) {
		pm_say("%s to %s port %s: %s log of %" PRIu64 " bytes, "
		       "profile %s", opts->prov, opts->server, opts->port,
		       mode_name(opts->mode), c.capacity, c.region.profile);
		c.conn = &conn;
		c.tail_buf = (uint64_t *) (conn.src + rma_max - PM_LINE_SIZE);
		print_header(opts);
		for (i = 0; !ret && i < opts->nsizes; i++)
			ret = measure_size(&c, opts->sizes[i], samples);
		pm_say("appended %" PRIu64 " records, %" PRIu64 " bytes",
		       c.seq, c.pos);
		pm_report_counters(&res, conn.ep);
	}
	if (!ret)
		ret = pm_send_ctrl(&conn, PM_DONE_TEXT, strlen(PM_DONE_TEXT),
				   "sending \"done\"");
	if (!ret)
		fi_shutdown(conn.ep, 0);
	pm_close_conn(&conn);
	pm_close_fabric(&res);
	free(samples);
	return ret;
}

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

static int run_target(const struct options *opts)
{
	return pm_run_target(opts->prov, opts->port, 16, serve_initiator, opts);
}

/* ------------------------------------------------------------- options */

static void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [-p PROV] [-e msg|rdm] [-s SERVER_ADDR] [-B PORT] "
		"[-m singleton|compound]\n"
		"        [-S SIZE[,SIZE...]] [-I APPENDS] [-W WARMUP] "
		"[-f FILE] [--csv]\n"
		"       %s -r FILE\n"
		"  without -s: the target; with -s: the initiator, which "
		"appends\n"
		"  -p  provider (%s); -e endpoint type (msg); -B port (%s)\n"
		"  -m  append mode (singleton)\n"
		"  -S  record sizes, header included, %d..%lu (%s)\n"
		"  -I  appends per size (%d); -W warmup appends (%d)\n"
		"  -f  target's file, emptied first (default: a temporary "
		"file)\n"
		"  -r  recover the log in FILE and check it (no network)\n",
		prog, prog, DEFAULT_PROVIDER, DEFAULT_PORT, MIN_RECORD,
		MAX_RECORD, DEFAULT_SIZES, DEFAULT_APPENDS, DEFAULT_WARMUP);
}

static bool parse_option(int c, char *arg, struct options *opts)
{
	long value;

	switch (c) {
	case 'p': opts->prov = arg; return true;
	case 'e': return pm_parse_ep_type(arg, &opts->ep_type);
	case 's': opts->server = arg; return true;
	case 'B': opts->port = arg; return pm_parse_long(arg, 1, 65535, &value);
	case 'm':
		if (!strcmp(arg, "singleton"))
			opts->mode = MODE_SINGLETON;
		else if (!strcmp(arg, "compound"))
			opts->mode = MODE_COMPOUND;
		else {
			fprintf(stderr, "unknown mode \"%s\"\n", arg);
			return false;
		}
		return true;
	case 'S': return pm_parse_sizes(arg, MIN_RECORD, MAX_RECORD,
					opts->sizes, &opts->nsizes);
	case 'I': return pm_parse_long(arg, 1, MAX_APPENDS, &opts->appends);
	case 'W': return pm_parse_long(arg, 0, MAX_APPENDS, &opts->warmup);
	case 'f': opts->file = arg; return true;
	case 'r': opts->recover = arg; return true;
	case 'C': opts->csv = true; return true;
	default: return false;
	}
}

static bool parse_options(int argc, char **argv, struct options *opts)
{
	static const struct option long_opts[] = {
		{ "csv", no_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char sizes[] = DEFAULT_SIZES;
	int c;

	*opts = (struct options) {
		.prov = DEFAULT_PROVIDER, .ep_type = FI_EP_MSG,
		.port = DEFAULT_PORT, .mode = MODE_SINGLETON,
		.appends = DEFAULT_APPENDS, .warmup = DEFAULT_WARMUP,
	};
	if (!pm_parse_sizes(sizes, MIN_RECORD, MAX_RECORD, opts->sizes,
			    &opts->nsizes))
		return false;
	while ((c = getopt_long(argc, argv, "p:e:s:B:m:S:I:W:f:r:h",
				long_opts, NULL)) != -1)
		if (!parse_option(c, optarg, opts))
			return false;
	if (opts->server && opts->file) {
		fprintf(stderr, "-f is for the target (no -s)\n");
		return false;
	}
	if (opts->recover && (opts->server || opts->file)) {
		fprintf(stderr, "-r works on a file alone\n");
		return false;
	}
	if (log_capacity(opts) > MAX_CAPACITY) {
		fprintf(stderr, "the log would exceed %lu bytes\n",
			MAX_CAPACITY);
		return false;
	}
	return optind == argc;
}

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
	if (opts.ep_type != FI_EP_MSG)
		return pm_check_ep_type(opts.prov, opts.ep_type);
	ret = opts.server ? run_initiator(&opts) : run_target(&opts);
	return ret ? PM_EXIT_FAIL : PM_EXIT_PASS;
}
