/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * fi_pmem_remotelog: the log's records and its recovery (see
 * fi_pmem_remotelog.c): building and validating records, and -r FILE.
 */
#include "fi_pmem_remotelog.h"

const char *mode_name(uint32_t mode)
{
	return mode == MODE_SINGLETON ? "singleton" :
	       mode == MODE_COMPOUND ? "compound" : "unknown";
}

/* ------------------------------------------------------------- records */

/* Bytes a record of payload len occupies in the log. */
uint64_t record_space(uint64_t payload)
{
	return pm_round_up(REC_HDR_SIZE + payload, PM_LINE_SIZE);
}

/* Builds record seq with len payload bytes at buf, padded; its space. */
uint64_t build_record(unsigned char *buf, uint64_t log_id, uint64_t seq,
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

uint32_t header_crc(const struct log_header *h)
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

int recover(const char *path)
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
