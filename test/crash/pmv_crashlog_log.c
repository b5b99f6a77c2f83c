/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_crashlog_log.c - reporting, the records, the log file mapped,
 * recovery of its prefix, and the init role.
 */
#include "pmv_crashlog.h"

noreturn void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", g_role);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* A status line on stderr (stdout carries results only). */
void say(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", g_role);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* ------------------------------------------------------------- records */

/* 64 random bits (log ids, requested keys, markers). */
uint64_t rnd64(void)
{
	uint64_t v;

	if (getrandom(&v, sizeof(v), 0) != sizeof(v))
		v = mix64((uint64_t)now_ms() ^ ((uint64_t)getpid() << 32));
	return v;
}

/* Payload bytes of record seq: mostly small, one in 32 up to the max. */
uint32_t payload_len(const struct log *l, uint64_t seq)
{
	uint64_t r = mix64(l->log_id ^ (seq * 0x9e3779b97f4a7c15ULL));
	uint32_t max = l->max_record - REC_HDR;
	uint32_t small = max < 1008 ? max : 1008;

	return 1 + (uint32_t)((r >> 8) % (r % 32 == 0 ? max : small));
}

uint64_t space_of(uint32_t len)
{
	return (REC_HDR + (uint64_t)len + LINE - 1) / LINE * LINE;
}

/* Builds record seq at buf (space_of(len) bytes); returns its space. */
uint64_t build_record(const struct log *l, uint64_t seq,
		      unsigned char *buf)
{
	uint32_t len = payload_len(l, seq);
	uint64_t space = space_of(len);
	struct rec_hdr h = { .seq = htole64(seq), .len = htole32(len) };

	fill_payload(buf + REC_HDR, l->log_id, seq, len);
	memset(buf + REC_HDR + len, 0, space - REC_HDR - len);
	h.crc = htole32(record_crc(l->log_id, seq, len, buf + REC_HDR));
	memcpy(buf, &h, sizeof(h));
	return space;
}

/* Whether record seq lies whole and intact at log offset pos. */
static bool record_ok(const struct log *l, uint64_t pos, uint64_t seq,
		      uint64_t *space)
{
	static unsigned char *want;
	struct rec_hdr h;
	uint32_t len;

	if (pos + REC_HDR > l->capacity)
		return false;
	memcpy(&h, l->recs + pos, sizeof(h));
	len = le32toh(h.len);
	if (le64toh(h.seq) != seq || len != payload_len(l, seq) ||
	    pos + space_of(len) > l->capacity ||
	    record_crc(l->log_id, seq, len, l->recs + pos + REC_HDR) !=
	    le32toh(h.crc))
		return false;
	if (!want && !(want = malloc(l->max_record)))
		die("out of memory");
	fill_payload(want, l->log_id, seq, len);
	if (memcmp(want, l->recs + pos + REC_HDR, len))
		return false;
	*space = space_of(len);
	return true;
}

/* The check field of an ACK line: a line cut by a crash never passes. */
uint16_t ack_check(uint64_t log_id, uint64_t seq)
{
	return (uint16_t)(mix64(log_id ^ seq ^ 0xac4ac4ac4ULL) & 0xffff);
}

/* ---------------------------------------------------------------- log */

static uint32_t header_crc(const struct log_hdr *h)
{
	return log_crc(0, h, offsetof(struct log_hdr, crc));
}

/* Maps [base, base + len) of the log's file (len rounded for DAX). */
static void log_map(struct log *l, size_t len, bool rw)
{
	int prot = PROT_READ | (rw ? PROT_WRITE : 0);

	if (l->chr)
		len = (len + DAX_ALIGN - 1) / DAX_ALIGN * DAX_ALIGN;
	l->map = mmap(NULL, len, prot, MAP_SHARED_VALIDATE | MAP_SYNC, l->fd,
		      (off_t)l->base);
	if (l->map == MAP_FAILED)
		l->map = mmap(NULL, len, prot, MAP_SHARED, l->fd,
			      (off_t)l->base);
	if (l->map == MAP_FAILED)
		die("mmap of %s (%zu bytes at %" PRIu64 "): %s", l->path, len,
		    l->base, strerror(errno));
	l->map_len = len;
}

void log_unmap(struct log *l)
{
	if (l->map)
		munmap(l->map, l->map_len);
	l->map = NULL;
}

/* Opens the file and checks that [base, base + len) lies inside it. */
static void log_open_file(struct log *l, const char *path, uint64_t base,
			  bool rw, bool create)
{
	struct stat st;

	*l = (struct log){ .path = path, .base = base };
	l->fd = open(path, (rw ? O_RDWR : O_RDONLY) | (create ? O_CREAT : 0),
		     0644);
	if (l->fd < 0 || fstat(l->fd, &st))
		die("%s: %s", path, strerror(errno));
	l->chr = S_ISCHR(st.st_mode);
	if (l->chr && base % DAX_ALIGN)
		die("%s: the base must be a multiple of %u on a device", path,
		    DAX_ALIGN);
}

/* Maps an existing log and decodes its header; false if it is not valid. */
bool log_open(struct log *l, const char *path, uint64_t base, bool rw,
	      const char **why)
{
	struct log_hdr h;
	struct stat st;

	log_open_file(l, path, base, rw, false);
	if (!l->chr && (fstat(l->fd, &st) ||
			(uint64_t)st.st_size < base + HEADER_SIZE)) {
		*why = "the file is too small for a log";
		return false;
	}
	log_map(l, HEADER_SIZE, false);
	memcpy(&h, l->map, sizeof(h));
	log_unmap(l);
	if (memcmp(h.magic, LOG_MAGIC, 8) || le32toh(h.crc) != header_crc(&h) ||
	    le32toh(h.version) != LOG_VERSION) {
		*why = "no valid log header";
		return false;
	}
	l->mode = le32toh(h.mode);
	l->log_id = le64toh(h.log_id);
	l->capacity = le64toh(h.capacity);
	l->max_record = le32toh(h.max_record);
	if ((l->mode != MODE_SINGLETON && l->mode != MODE_COMPOUND) ||
	    le64toh(h.log_offset) != HEADER_SIZE ||
	    le64toh(h.tail_offset) != TAIL_OFF || l->max_record < 32 ||
	    l->max_record % LINE || l->capacity < l->max_record ||
	    (!l->chr &&
	     base + HEADER_SIZE + l->capacity > (uint64_t)st.st_size)) {
		*why = "a log header with impossible fields";
		return false;
	}
	log_map(l, HEADER_SIZE + l->capacity, rw);
	l->recs = l->map + HEADER_SIZE;
	return true;
}

static uint64_t load_tail(const struct log *l)
{
	uint64_t t;

	memcpy(&t, l->map + TAIL_OFF, 8);
	return le64toh(t);
}

/* ----------------------------------------------------------- recovery */

/* Extends w over the records that follow its end (the recovered prefix). */
void walk_prefix(const struct log *l, struct walk *w)
{
	uint64_t space;

	if (l->mode == MODE_SINGLETON) {
		while (record_ok(l, w->end, w->records + 1, &space)) {
			w->end += space;
			w->records++;
		}
		w->tail = w->end;
		return;
	}
	w->tail = load_tail(l);
	if (w->tail > l->capacity || w->tail < w->end) {
		w->why = "the tail pointer lies beyond the log or moved back";
		return;
	}
	while (w->end < w->tail) {
		if (!record_ok(l, w->end, w->records + 1, &space)) {
			w->why = "a torn or invalid record before the published "
				 "tail would be accepted";
			return;
		}
		w->end += space;
		w->records++;
	}
	if (w->end != w->tail)
		w->why = "the tail pointer is not at a record boundary";
}

/* Whether the 16 bytes at log offset pos hold anything. */
static bool header_written(const struct log *l, uint64_t pos)
{
	static const char zero[REC_HDR];

	return pos + REC_HDR <= l->capacity &&
	       memcmp(l->recs + pos, zero, REC_HDR) != 0;
}

/* Looks past the prefix: a torn or unpublished record, whole records
 * further on (allowed only within DEPTH_MAX of the prefix). */
void walk_after(const struct log *l, struct walk *w)
{
	uint64_t pos = w->end, space, seq;
	struct rec_hdr h;

	if (record_ok(l, pos, w->records + 1, &space)) {
		w->unpublished = true; /* singleton would have taken it */
		pos += space;
	} else if (header_written(l, pos)) {
		w->torn = true;
	}
	for (; pos + REC_HDR <= l->capacity; pos += LINE) {
		memcpy(&h, l->recs + pos, sizeof(h));
		seq = le64toh(h.seq);
		if (!seq || !record_ok(l, pos, seq, &space))
			continue;
		if (seq <= w->records || seq > w->records + DEPTH_MAX) {
			w->why = "a whole record lies beyond the recovered log "
				 "(a hole: a completed append before it was "
				 "lost)";
			return;
		}
		w->beyond++;
		pos += space - LINE;
	}
}

/* ------------------------------------------------------------ init role */

/* Makes [p, p + len) of the log durable: msync and fsync for a file; on
 * device-DAX (no msync there) CPU cache-line flushes and a fence. */
static void persist(const struct log *l, char *p, size_t len)
{
	if (!l->chr) {
		if (msync(p, len, MS_SYNC) || fsync(l->fd))
			die("syncing %s: %s", l->path, strerror(errno));
		return;
	}
#if defined(__x86_64__)
	for (size_t off = 0; off < len; off += LINE)
		__builtin_ia32_clflush(p + off);
	__builtin_ia32_sfence();
#endif
}

/* The init role: an empty log, zeroed and durable. */
int role_init(const struct opts *o)
{
	struct log l;
	struct log_hdr h = {
		.magic = LOG_MAGIC, .version = htole32(LOG_VERSION),
		.mode = htole32(o->mode), .log_offset = htole64(HEADER_SIZE),
		.capacity = htole64(o->capacity),
		.tail_offset = htole64(TAIL_OFF),
		.max_record = htole32(o->max_record),
	};
	uint64_t total = HEADER_SIZE + o->capacity;

	log_open_file(&l, o->file, o->base, true, true);
	if (!l.chr && ftruncate(l.fd, (off_t)(o->base + total)))
		die("growing %s: %s", o->file, strerror(errno));
	l.log_id = rnd64();
	h.log_id = htole64(l.log_id);
	h.crc = htole32(header_crc(&h));
	log_map(&l, total, true);
	memset(l.map, 0, total); /* every block written: nothing left sparse */
	persist(&l, l.map, total);
	memcpy(l.map, &h, sizeof(h));
	persist(&l, l.map, HEADER_SIZE);
	printf("INIT %s log %016" PRIx64 " %s, %" PRIu64 " bytes, records up "
	       "to %u bytes\n", o->file, l.log_id,
	       o->mode == MODE_SINGLETON ? "singleton" : "compound",
	       o->capacity, o->max_record);
	log_unmap(&l);
	close(l.fd);
	return 0;
}
