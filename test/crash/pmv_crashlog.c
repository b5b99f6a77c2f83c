/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_crashlog - crash, restart and power-cut tests of pmemverbs (issue 11
 * items 2, 3 and 4).  A RemoteLog-style log of checksummed records lives in
 * a file (or on device-DAX); a target process serves it over pmemverbs, an
 * initiator appends to it and prints one line per append whose commit
 * completed, and a verifier checks the file after the target was killed
 * (SIGKILL) or the machine lost power.  One program, six roles:
 *
 *   init    -f FILE [-o BASE] -m singleton|compound [-c CAPACITY] [-M MAXREC]
 *           writes an empty log (zeroed, header, made durable)
 *   target  -f FILE [-o BASE] -a ADDR -P PORT [-k random|fixed] [-t SECONDS]
 *           [-A ACKFILE [-x MARKER] [-N NAME]]
 *           maps an existing valid log (never empties it), registers it
 *           with FI_RMA_PMEM and serves connections until killed or SECONDS;
 *           with -A it first verifies the log as the verify role does (and
 *           exits 1 if that fails): restart, recover, verify
 *   append  -a ADDR -P PORT [-d DEPTH] [-t SECONDS] [-n RECORDS] [-w SECONDS]
 *           [-g GOFILE] [-u MODE]
 *           connects (trying for -w seconds, default 30; with -g it then
 *           waits, as long again, for GOFILE to exist), continues the log
 *           where the target's recovery found its end, prints "ACK LOGID
 *           SEQ CHK" per completed append, for -t seconds (default 60), -n
 *           appends, or until an error (the target died)
 *   verify  -f FILE [-o BASE] -A ACKFILE [-x MARKER] [-N NAME]
 *           recovers the log and checks it against the ACK lines (one
 *           "VERIFY NAME ok|FAIL ..." line); -L NAME=FILE@BASE, repeated,
 *           instead of -f, -o and -N checks several logs in one process
 *   learn   -a ADDR -P PORT -i INFOFILE
 *           over the plain tcp core: saves the target's region key and
 *           address and its endpoint's inbox key and address
 *   stale   -a ADDR -P PORT -i INFOFILE -x MARKER [-e]
 *           a restarted target must refuse the old process's keys (writes
 *           of MARKER under them); -e: a fixed key is expected to pass
 *           (INFO lines)
 *
 * Once a connection is up, the target sends the initiator an offer
 * message (the CM data of verbs is too small for it): its region's key and
 * RMA address, the log's id, mode, capacity and largest record, and where
 * its recovery found the log's end (next seq and offset).
 *
 * The log (offsets from BASE): a header at 0 {magic "PMVCRSH1", version,
 * mode, log id, log offset 4096, capacity, tail offset 64, largest record,
 * CRC32C}, the tail pointer at 64 (compound mode: log bytes published),
 * a scratch line at 2048 (the stale role's commits), the records from
 * 4096.  A record is {u64 seq, u32 len, u32 crc} and len payload bytes,
 * padded with zeros to 64 bytes; the crc (CRC32C) covers the log id, seq,
 * len and payload; the payload and len (up to 1008 bytes, one record in 32
 * up to the log's largest) are functions of (log id, seq), so record seq
 * always has the same bytes at the same place.
 *
 * Appends (at most DEPTH in flight; append s is posted only once s - DEPTH
 * has completed):
 *   singleton  fi_writemsg(FI_COMMIT_COMPLETE) of the record; the end of
 *              the log is where the records stop being valid
 *   compound   the record's commit, then the new tail pointer with
 *              FI_FENCE | FI_COMMIT_COMPLETE; acknowledged when both are
 *
 * Verification: every acknowledged record lies in the recovered prefix
 * (seq <= records) and is intact (checksum, payload); in compound mode
 * every record before the tail pointer is valid (a torn record there would
 * be accepted) and the tail is at a record boundary; past the prefix, a
 * partly written record is rejected (counted), and whole records may
 * follow only within DEPTH_MAX of the prefix (appends in flight at the
 * crash): one further on means a completed append was lost.
 *
 * -u (test only, to prove that the tests catch a wrong acknowledgement):
 *   early    print ACK when the append is posted, before its completion
 *   visible  plain writes with FI_DELIVERY_COMPLETE (visibility, no
 *            commit), one append at a time, ACK at their completion
 *
 * Exit status: 0 success (append: ended cleanly, whatever the target did),
 * 1 a failed check, 2 usage, 3 could not connect.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdnoreturn.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_ext_pmem.h>

#include "../common/pmv_test_report.h"
#include "../common/pmv_test_time.h"
#include "../../fabtests/common/pmem_log_record.h"

#ifndef MAP_SHARED_VALIDATE
#define MAP_SHARED_VALIDATE 0x03
#endif
#ifndef MAP_SYNC
#define MAP_SYNC 0x80000
#endif

#define CL_FI_VERSION FI_VERSION(1, 17)
#define PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))

#define LOG_MAGIC "PMVCRSH1"
#define LOG_VERSION 1u
#define HEADER_SIZE 4096u
#define TAIL_OFF 64u
#define SCRATCH_OFF 2048u
#define REC_HDR 16u
#define LINE 64u
#define DEPTH_MAX 16u
#define DEFAULT_CAPACITY (32u << 20)
#define DEFAULT_MAXREC 65536u
#define DAX_ALIGN (2u << 20)
#define OFFER_MAGIC 0x315253434d5650ULL /* "PVMCSR1" */
#define FIXED_KEY 2u    /* what fabtests' pm_register_region asks for */
#define CM_BUF 512
#define STEP_MS 15000   /* bound of one wait of the restart checks */
#define DRAIN_MS 20000  /* bound of the wait for commits after a stop */

enum mode { MODE_SINGLETON = 1, MODE_COMPOUND = 2 };
enum unsafe { SAFE, UNSAFE_EARLY, UNSAFE_VISIBLE };

/* At BASE, little-endian. */
struct log_hdr {
	char magic[8];
	uint32_t version;
	uint32_t mode;
	uint64_t log_id;
	uint64_t log_offset;
	uint64_t capacity;
	uint64_t tail_offset;
	uint32_t max_record;
	uint32_t crc; /* CRC32C of the bytes before it */
};

struct rec_hdr {
	uint64_t seq;
	uint32_t len;
	uint32_t crc;
};

/* The target's CM data at fi_accept, every field little-endian. */
struct offer {
	uint64_t magic, pid, key, addr, region_len, log_id, capacity,
		 next_seq, next_pos, mode, max_record, profile;
};

/* The log as mapped, header decoded. */
struct log {
	const char *path;
	int fd;
	char *map;      /* BASE of the log */
	size_t map_len;
	bool chr;       /* a character device (device-DAX) */
	uint64_t base;
	uint32_t mode;
	uint64_t log_id, capacity;
	uint32_t max_record;
	char *recs;     /* map + HEADER_SIZE */
};

/* What recovery finds (see the top comment). */
struct walk {
	uint64_t records;
	uint64_t end;
	uint64_t tail;
	bool torn;
	bool unpublished;
	uint64_t beyond;
	const char *why; /* NULL: consistent */
};

struct opts {
	const char *role, *file, *addr, *port, *ackfile, *infofile, *name;
	const char *marker, *go_file;
	uint64_t base, capacity;
	uint32_t max_record;
	enum mode mode;
	bool fixed_key, expect_accepted;
	enum unsafe unsafe;
	unsigned depth;
	long seconds, records, connect_wait;
	const char *specs[8]; /* verify: NAME=FILE@BASE, several logs */
	int nspecs;
};

static const char *g_role = "pmv_crashlog";

static noreturn void usage(void);
static unsigned long long number(const char *text, unsigned long long min,
				 unsigned long long max);

static noreturn void die(const char *fmt, ...) PRINTF_LIKE(1, 2);
static void say(const char *fmt, ...) PRINTF_LIKE(1, 2);

static noreturn void die(const char *fmt, ...)
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
static void say(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", g_role);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

#define CHECK(call)                                                         \
	do {                                                                \
		int check_ret_ = (int)(call);                               \
		if (check_ret_)                                             \
			die("%s: %s", #call, fi_strerror(-check_ret_));      \
	} while (0)

/* ------------------------------------------------------------- records */

/* 64 random bits (log ids, requested keys, markers). */
static uint64_t rnd64(void)
{
	uint64_t v;

	if (getrandom(&v, sizeof(v), 0) != sizeof(v))
		v = mix64((uint64_t)now_ms() ^ ((uint64_t)getpid() << 32));
	return v;
}

/* Payload bytes of record seq: mostly small, one in 32 up to the max. */
static uint32_t payload_len(const struct log *l, uint64_t seq)
{
	uint64_t r = mix64(l->log_id ^ (seq * 0x9e3779b97f4a7c15ULL));
	uint32_t max = l->max_record - REC_HDR;
	uint32_t small = max < 1008 ? max : 1008;

	return 1 + (uint32_t)((r >> 8) % (r % 32 == 0 ? max : small));
}

static uint64_t space_of(uint32_t len)
{
	return (REC_HDR + (uint64_t)len + LINE - 1) / LINE * LINE;
}

/* Builds record seq at buf (space_of(len) bytes); returns its space. */
static uint64_t build_record(const struct log *l, uint64_t seq,
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
static uint16_t ack_check(uint64_t log_id, uint64_t seq)
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

static void log_unmap(struct log *l)
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
static bool log_open(struct log *l, const char *path, uint64_t base, bool rw,
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
static void walk_prefix(const struct log *l, struct walk *w)
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
static void walk_after(const struct log *l, struct walk *w)
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
static int role_init(const struct opts *o)
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

/* ------------------------------------------------------------- fabric */

struct fab {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *eq;
	struct fi_pmem_ops_domain *pmem_ops;
	bool pmem;
};

/* fi_getinfo for a MSG endpoint of prov on addr:port (listening: FI_SOURCE). */
static struct fi_info *query(const char *prov, const char *addr,
			     const char *port, bool listen)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;
	bool pmem = !strcmp(prov, "pmemverbs");
	int ret;

	if (!hints)
		die("out of memory");
	hints->caps = FI_MSG | FI_RMA | (pmem ? FI_RMA_PMEM : 0);
	hints->mode = FI_CONTEXT | FI_CONTEXT2;
	hints->ep_attr->type = FI_EP_MSG;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				      FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->fabric_attr->prov_name = strdup(prov);
	ret = fi_getinfo(CL_FI_VERSION, addr, port, listen ? FI_SOURCE : 0,
			 hints, &info);
	fi_freeinfo(hints);
	if (ret)
		die("fi_getinfo(%s, %s port %s): %s (FI_PROVIDER_PATH?)", prov,
		    addr, port, fi_strerror(-ret));
	return info;
}

static void fab_open(struct fab *f, const char *prov, const char *addr,
		     const char *port, bool listen)
{
	struct fi_eq_attr eq_attr = { .size = 64,
				      .wait_obj = FI_WAIT_UNSPEC };

	*f = (struct fab){ .pmem = !strcmp(prov, "pmemverbs") };
	f->info = query(prov, addr, port, listen);
	CHECK(fi_fabric(f->info->fabric_attr, &f->fabric, NULL));
	CHECK(fi_eq_open(f->fabric, &eq_attr, &f->eq, NULL));
	CHECK(fi_domain(f->fabric, f->info, &f->domain, NULL));
	if (f->pmem)
		CHECK(fi_open_ops(&f->domain->fid, FI_PMEM_DOMAIN_OPS, 0,
				  (void **)&f->pmem_ops, NULL));
}

static void fab_close(struct fab *f)
{
	fi_close(&f->domain->fid);
	fi_close(&f->eq->fid);
	fi_close(&f->fabric->fid);
	fi_freeinfo(f->info);
}

static struct fid_cq *cq_open(const struct fab *f)
{
	struct fi_cq_attr attr = { .size = 256, .format = FI_CQ_FORMAT_CONTEXT,
				   .wait_obj = FI_WAIT_UNSPEC };
	struct fid_cq *cq;

	CHECK(fi_cq_open(f->domain, &attr, &cq, NULL));
	return cq;
}

/* Opens an endpoint on info with cq for both directions and the EQ. */
static struct fid_ep *ep_open(const struct fab *f, struct fi_info *info,
			      struct fid_cq *cq)
{
	struct fid_ep *ep;

	CHECK(fi_endpoint(f->domain, info, &ep, NULL));
	CHECK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_ep_bind(ep, &f->eq->fid, 0));
	CHECK(fi_enable(ep));
	return ep;
}

/* An EQ event as eq_wait returns it. */
struct cm_event {
	uint32_t event;
	int err;
	struct fid *fid;
	struct fi_info *info;
	size_t datalen;
	uint8_t data[CM_BUF];
};

/* One EQ event, or none within ms (0: no wait); err holds an error
 * event's errno. */
static bool eq_wait(struct fid_eq *eq, int ms, struct cm_event *ev)
{
	union {
		struct fi_eq_cm_entry cm;
		uint8_t raw[sizeof(struct fi_eq_cm_entry) + CM_BUF];
	} buf;
	struct fi_eq_err_entry err = { 0 };
	ssize_t ret = ms ? fi_eq_sread(eq, &ev->event, &buf, sizeof(buf), ms, 0)
			 : fi_eq_read(eq, &ev->event, &buf, sizeof(buf), 0);

	*ev = (struct cm_event){ .event = ev->event };
	if (ret == -FI_EAVAIL) {
		if (fi_eq_readerr(eq, &err, 0) < 0)
			return false;
		ev->err = err.err ? err.err : FI_EOTHER;
		ev->fid = err.fid;
		return true;
	}
	if (ret < (ssize_t)sizeof(struct fid *))
		return false;
	ev->fid = buf.cm.fid;
	if (ev->event == FI_CONNREQ || ev->event == FI_CONNECTED) {
		ev->info = ev->event == FI_CONNREQ ? buf.cm.info : NULL;
		ev->datalen = (size_t)ret > sizeof(buf.cm) ?
			      (size_t)ret - sizeof(buf.cm) : 0;
		memcpy(ev->data, buf.cm.data, ev->datalen);
	}
	return true;
}

/* Registers len bytes at buf (requested key: random unless fixed). */
static struct fid_mr *mr_register(const struct fab *f, void *buf, size_t len,
				  uint64_t access, uint64_t flags, bool fixed)
{
	struct fid_mr *mr = NULL;
	int ret = -FI_ENOKEY;

	for (int i = 0; i < 8 && ret == -FI_ENOKEY; i++)
		ret = fi_mr_reg(f->domain, buf, len, access, 0,
				fixed ? FIXED_KEY : rnd64(), flags, &mr, NULL);
	if (ret)
		die("fi_mr_reg of %zu bytes: %s", len, fi_strerror(-ret));
	return mr;
}

/* The RMA address of buf: its virtual address under FI_MR_VIRT_ADDR. */
static uint64_t rma_base(const struct fab *f, const void *buf)
{
	return (f->info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ?
	       (uint64_t)(uintptr_t)buf : 0;
}

/* ------------------------------------------------------------ target */

#define MAX_CONNS 8

struct tconn {
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct fi_context2 send_ctx;
};

struct target {
	struct fab f;
	struct log l;
	struct walk w;
	struct fid_mr *mr;
	struct fid_pep *pep;
	struct tconn conns[MAX_CONNS];
	struct offer offers[MAX_CONNS]; /* sent once a connection is up */
	struct fid_mr *offers_mr;       /* under FI_MR_LOCAL */
	uint64_t profile;
};

static void target_close_conn(struct tconn *c)
{
	if (c->ep)
		fi_close(&c->ep->fid);
	if (c->cq)
		fi_close(&c->cq->fid);
	*c = (struct tconn){ 0 };
}

/* The offer for a new connection: the region and where the log goes on. */
static void target_offer(struct target *t, struct offer *o)
{
	walk_prefix(&t->l, &t->w); /* from the end found before: cheap */
	if (t->w.why)
		die("the log became inconsistent: %s", t->w.why);
	*o = (struct offer){
		.magic = htole64(OFFER_MAGIC), .pid = htole64(getpid()),
		.key = htole64(fi_mr_key(t->mr)),
		.addr = htole64(rma_base(&t->f, t->l.map)),
		.region_len = htole64(HEADER_SIZE + t->l.capacity),
		.log_id = htole64(t->l.log_id),
		.capacity = htole64(t->l.capacity),
		.next_seq = htole64(t->w.records + 1),
		.next_pos = htole64(t->w.end), .mode = htole64(t->l.mode),
		.max_record = htole64(t->l.max_record),
		.profile = htole64(t->profile),
	};
}

/* Accepts a connection; its offer goes once it is up (target_on_up). */
static void target_on_connreq(struct target *t, struct cm_event *ev)
{
	int i = 0;

	while (i < MAX_CONNS && t->conns[i].ep)
		i++;
	if (i == MAX_CONNS) {
		say("too many connections: one rejected");
		fi_reject(t->pep, ev->info->handle, NULL, 0);
		fi_freeinfo(ev->info);
		return;
	}
	target_offer(t, &t->offers[i]);
	t->conns[i].cq = cq_open(&t->f);
	t->conns[i].ep = ep_open(&t->f, ev->info, t->conns[i].cq);
	fi_freeinfo(ev->info);
	if (fi_accept(t->conns[i].ep, NULL, 0)) {
		say("fi_accept failed");
		target_close_conn(&t->conns[i]);
	}
}

/* Sends a connection that is up its offer (the CM data of verbs is too
 * small for it); the initiator posted its receive before connecting. */
static void target_on_up(struct target *t, struct tconn *c)
{
	int i = (int)(c - t->conns);
	void *desc = t->offers_mr ? fi_mr_desc(t->offers_mr) : NULL;

	if (fi_send(c->ep, &t->offers[i], sizeof(t->offers[i]), desc, 0,
		    &c->send_ctx))
		say("sending the offer failed");
}

static struct tconn *target_conn_of(struct target *t, const struct fid *fid)
{
	for (int i = 0; i < MAX_CONNS; i++)
		if (t->conns[i].ep && &t->conns[i].ep->fid == fid)
			return &t->conns[i];
	return NULL;
}

/* Handles one EQ event, waiting up to ms for it. */
static void target_poll_eq(struct target *t, int ms)
{
	struct cm_event ev;
	struct tconn *c;

	if (!eq_wait(t->f.eq, ms, &ev))
		return;
	if (!ev.err && ev.event == FI_CONNREQ) {
		target_on_connreq(t, &ev);
		return;
	}
	c = target_conn_of(t, ev.fid);
	if (c && !ev.err && ev.event == FI_CONNECTED)
		target_on_up(t, c);
	else if (c && (ev.err || ev.event == FI_SHUTDOWN))
		target_close_conn(c);
}

/* Reads every connection's CQ (progress; entries are dropped). */
static void target_poll_cqs(struct target *t)
{
	struct fi_cq_entry e[16];
	struct fi_cq_err_entry err;

	for (int i = 0; i < MAX_CONNS; i++) {
		if (!t->conns[i].cq)
			continue;
		if (fi_cq_read(t->conns[i].cq, e, 16) == -FI_EAVAIL) {
			err = (struct fi_cq_err_entry){ 0 };
			fi_cq_readerr(t->conns[i].cq, &err, 0);
		}
	}
}

/* Maps the log, registers it (FI_RMA_PMEM) and listens. */
static void target_setup(struct target *t, const struct opts *o)
{
	const char *why = NULL;

	if (!log_open(&t->l, o->file, o->base, true, &why))
		die("%s: %s (run the init role first)", o->file, why);
	walk_prefix(&t->l, &t->w); /* from what -A found, if it ran */
	if (t->w.why)
		die("%s: inconsistent log: %s", o->file, t->w.why);
	fab_open(&t->f, "pmemverbs", o->addr, o->port, true);
	t->mr = mr_register(&t->f, t->l.map, HEADER_SIZE + t->l.capacity,
			    FI_REMOTE_WRITE | FI_REMOTE_READ, FI_RMA_PMEM,
			    o->fixed_key);
	t->profile = (uint64_t)t->f.pmem_ops->mr_profile(t->mr);
	if (t->f.info->domain_attr->mr_mode & FI_MR_LOCAL)
		t->offers_mr = mr_register(&t->f, t->offers, sizeof(t->offers),
					   FI_SEND, 0, false);
	CHECK(fi_passive_ep(t->f.fabric, t->f.info, &t->pep, NULL));
	CHECK(fi_pep_bind(t->pep, &t->f.eq->fid, 0));
	CHECK(fi_listen(t->pep));
}

static int verify_log(const struct opts *o, struct walk *found);

/* The target role: serves connections for -t seconds or until killed. */
static int role_target(const struct opts *o)
{
	static struct target t;
	int64_t end = deadline_in((int)(o->seconds * 1000));

	if (o->ackfile && verify_log(o, &t.w)) /* recover and verify first */
		return 1;
	fflush(stdout);
	target_setup(&t, o);
	printf("READY pid %d key %016" PRIx64 " profile %s log %016" PRIx64
	       " records %" PRIu64 " end %" PRIu64 "\n", (int)getpid(),
	       fi_mr_key(t.mr), fi_pmem_profile_str(t.profile), t.l.log_id,
	       t.w.records, t.w.end);
	fflush(stdout);
	while (before(end)) {
		target_poll_eq(&t, 5);
		target_poll_cqs(&t);
	}
	for (int i = 0; i < MAX_CONNS; i++)
		target_close_conn(&t.conns[i]);
	fi_close(&t.pep->fid);
	if (t.offers_mr)
		fi_close(&t.offers_mr->fid);
	fi_close(&t.mr->fid);
	fab_close(&t.f);
	log_unmap(&t.l);
	return 0;
}

/* -------------------------------------------------------- connecting */

struct client {
	struct fab f;
	struct fid_cq *cq;
	struct fid_ep *ep;
	struct cm_event connected; /* the accept's CM data */
	struct offer wire;         /* where the target's offer lands */
	struct fid_mr *wire_mr;    /* under FI_MR_LOCAL */
	struct fi_context2 recv_ctx;
	struct offer off;          /* decoded */
};

static void client_close(struct client *c)
{
	if (c->ep)
		fi_close(&c->ep->fid);
	if (c->cq)
		fi_close(&c->cq->fid);
	c->ep = NULL;
	c->cq = NULL;
}

/* Closes the connection and everything client_connect opened. */
static void client_free(struct client *c)
{
	client_close(c);
	if (c->wire_mr)
		fi_close(&c->wire_mr->fid);
	c->wire_mr = NULL;
	fab_close(&c->f);
}

/* Decodes the offer that landed in c->wire; false if it is not one. */
static bool offer_decode(struct client *c)
{
	uint64_t *w = (uint64_t *)&c->off;

	memcpy(&c->off, &c->wire, sizeof(c->off));
	for (size_t i = 0; i < sizeof(c->off) / 8; i++)
		w[i] = le64toh(w[i]);
	return c->off.magic == OFFER_MAGIC;
}

/* Waits (bounded) for the target's offer, received on c->recv_ctx. */
static int client_offer(struct client *c, int64_t end)
{
	struct fi_cq_entry e;
	struct fi_cq_err_entry err = { 0 };
	ssize_t n;

	while (before(end)) {
		n = fi_cq_sread(c->cq, &e, 1, NULL, 100);
		if (n == 1 && e.op_context == &c->recv_ctx)
			return offer_decode(c) ? 0 : -FI_EOTHER;
		if (n == -FI_EAVAIL) {
			fi_cq_readerr(c->cq, &err, 0);
			return -(err.err ? err.err : FI_EOTHER);
		}
	}
	return -FI_ETIMEDOUT;
}

/* One attempt; -FI_ECONNREFUSED while nobody listens. */
static int client_try(struct client *c)
{
	struct cm_event ev;
	int64_t end = deadline_in(STEP_MS);
	void *desc = c->wire_mr ? fi_mr_desc(c->wire_mr) : NULL;

	c->cq = cq_open(&c->f);
	c->ep = ep_open(&c->f, c->f.info, c->cq);
	CHECK(fi_recv(c->ep, &c->wire, sizeof(c->wire), desc, 0,
		      &c->recv_ctx));
	if (fi_connect(c->ep, c->f.info->dest_addr, NULL, 0))
		return -FI_ECONNREFUSED;
	while (before(end)) {
		if (!eq_wait(c->f.eq, 100, &ev))
			continue;
		if (ev.err)
			return -ev.err;
		if (ev.event == FI_CONNECTED) {
			c->connected = ev;
			return client_offer(c, end);
		}
	}
	return -FI_ETIMEDOUT;
}

/* Connects, retrying while refused, for up to seconds; the target's offer
 * is in c->off. */
static int client_connect(struct client *c, const char *prov,
			  const char *addr, const char *port, long seconds)
{
	int64_t end = deadline_in((int)(seconds * 1000));
	int ret;

	*c = (struct client){ 0 };
	fab_open(&c->f, prov, addr, port, false);
	if (c->f.info->domain_attr->mr_mode & FI_MR_LOCAL)
		c->wire_mr = mr_register(&c->f, &c->wire, sizeof(c->wire),
					 FI_RECV, 0, false);
	for (;;) {
		ret = client_try(c);
		if (!ret)
			return 0;
		client_close(c);
		if (!before(end) || (ret != -FI_ECONNREFUSED &&
				     ret != -FI_ETIMEDOUT))
			return ret;
		usleep(50 * 1000);
	}
}

/* ------------------------------------------------------------ append */

enum op_kind { OP_RECORD, OP_TAIL };

struct op {
	struct fi_context2 ctx; /* first: op_context points here */
	enum op_kind kind;
	bool busy;
	bool failed;
	bool done;
};

struct slot {
	uint64_t seq;
	bool busy;       /* from its record's post until its last completion */
	bool all_posted; /* its record (and tail) posted */
	unsigned char *buf;
	uint64_t *tail_word;
	struct op ops[2];
};

struct app {
	const struct opts *o;
	struct client c;
	struct log l; /* no mapping: the log's parameters */
	struct offer off;
	struct fid_mr *local_mr;
	void *desc;
	unsigned char *mem;
	struct slot slots[DEPTH_MAX];
	unsigned depth;
	uint64_t post_seq, post_pos; /* next append to post */
	bool tail_next;              /* compound: its tail goes next */
	unsigned pending;            /* operations posted, not completed */
	uint64_t acked, posted, errors, anonymous;
	bool stop;
	const char *reason;
	char first_error[200];
	bool violation;
};

static void app_stop(struct app *a, const char *reason)
{
	if (!a->stop) {
		a->stop = true;
		a->reason = reason;
	}
}

static void app_error(struct app *a, const char *what, int err,
		      const char *detail)
{
	a->errors++;
	if (!a->first_error[0])
		snprintf(a->first_error, sizeof(a->first_error), "%s: %s%s%s",
			 what, fi_strerror(err), detail ? " - " : "",
			 detail ? detail : "");
	app_stop(a, "error");
}

static void app_ack(struct app *a, uint64_t seq)
{
	printf("ACK %016" PRIx64 " %" PRIu64 " %04x\n", a->l.log_id, seq,
	       ack_check(a->l.log_id, seq));
	fflush(stdout);
	a->acked++;
}

/* Connects and takes the log's parameters from the target's offer. */
static void app_connect(struct app *a)
{
	const struct opts *o = a->o;
	int ret = client_connect(&a->c, "pmemverbs", o->addr, o->port,
				 o->connect_wait);

	if (ret) {
		say("connecting to %s port %s: %s", o->addr, o->port,
		    fi_strerror(-ret));
		exit(3);
	}
	a->off = a->c.off;
	a->l = (struct log){ .mode = (uint32_t)a->off.mode,
			     .log_id = a->off.log_id,
			     .capacity = a->off.capacity,
			     .max_record = (uint32_t)a->off.max_record };
	a->post_seq = a->off.next_seq;
	a->post_pos = a->off.next_pos;
}

/* Local memory: one record buffer and one tail word per slot. */
static void app_memory(struct app *a)
{
	size_t rec = a->l.max_record, len = (rec + LINE) * a->depth;

	if (posix_memalign((void **)&a->mem, 4096, len))
		die("out of memory");
	memset(a->mem, 0, len);
	for (unsigned i = 0; i < a->depth; i++) {
		a->slots[i].buf = a->mem + i * (rec + LINE);
		a->slots[i].tail_word = (uint64_t *)(a->slots[i].buf + rec);
		a->slots[i].ops[OP_RECORD].kind = OP_RECORD;
		a->slots[i].ops[OP_TAIL].kind = OP_TAIL;
	}
	if (a->c.f.info->domain_attr->mr_mode & FI_MR_LOCAL) {
		a->local_mr = mr_register(&a->c.f, a->mem, len,
					  FI_WRITE | FI_READ, 0, false);
		a->desc = fi_mr_desc(a->local_mr);
	}
}

/* Posts one write of len bytes to log offset off with flags. */
static ssize_t app_write(struct app *a, void *buf, size_t len, uint64_t off,
			 uint64_t flags, struct op *op)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct fi_rma_iov rma = { .addr = a->off.addr + off, .len = len,
				  .key = a->off.key };
	struct fi_msg_rma msg = { .msg_iov = &iov, .desc = &a->desc,
				  .iov_count = 1, .rma_iov = &rma,
				  .rma_iov_count = 1, .context = &op->ctx };

	return fi_writemsg(a->c.ep, &msg, flags);
}

/* A record's or tail's write flags: a commit (fenced for the tail), or
 * with -u visible a plain write acknowledged once placed. */
static uint64_t app_flags(const struct app *a, bool fence)
{
	if (a->o->unsafe == UNSAFE_VISIBLE)
		return FI_DELIVERY_COMPLETE | FI_COMPLETION;
	return FI_COMMIT_COMPLETE | FI_COMPLETION | (fence ? FI_FENCE : 0);
}

/* After a post: an error stops the appends (-FI_EAGAIN: try later). */
static bool app_posted(struct app *a, ssize_t ret, struct op *op)
{
	if (ret == -FI_EAGAIN)
		return false;
	if (ret) {
		app_error(a, "posting", (int)-ret, NULL);
		return false;
	}
	*op = (struct op){ .kind = op->kind, .busy = true };
	a->pending++;
	return true;
}

/* The slot of an append whose every operation is posted: ACK now? */
static void app_fully_posted(struct app *a, struct slot *s)
{
	s->all_posted = true;
	a->posted++;
	a->post_seq++;
	a->tail_next = false;
	if (a->o->unsafe == UNSAFE_EARLY)
		app_ack(a, s->seq);
}

/* Posts the next record; false if it cannot go now. */
static bool app_post_record(struct app *a)
{
	struct slot *s = &a->slots[a->post_seq % a->depth];
	uint32_t len = payload_len(&a->l, a->post_seq);
	uint64_t space = space_of(len);

	if (s->busy)
		return false; /* append post_seq - depth is still in flight */
	if (a->post_pos + space > a->l.capacity) {
		app_stop(a, "full");
		return false;
	}
	s->seq = a->post_seq;
	s->all_posted = false;
	build_record(&a->l, s->seq, s->buf);
	s->ops[OP_TAIL] = (struct op){ .kind = OP_TAIL };
	if (!app_posted(a, app_write(a, s->buf, space, HEADER_SIZE +
				     a->post_pos, app_flags(a, false),
				     &s->ops[OP_RECORD]),
			&s->ops[OP_RECORD]))
		return false;
	s->busy = true;
	a->post_pos += space;
	if (a->l.mode == MODE_COMPOUND)
		a->tail_next = true;
	else
		app_fully_posted(a, s);
	return true;
}

/* Posts the tail pointer of the last record posted (compound mode). */
static bool app_post_tail(struct app *a)
{
	struct slot *s = &a->slots[a->post_seq % a->depth];

	if (a->o->unsafe == UNSAFE_VISIBLE && !s->ops[OP_RECORD].done)
		return false; /* no fence without commits: wait for it */
	*s->tail_word = htole64(a->post_pos);
	if (!app_posted(a, app_write(a, s->tail_word, 8, TAIL_OFF,
				     app_flags(a, true), &s->ops[OP_TAIL]),
			&s->ops[OP_TAIL]))
		return false;
	app_fully_posted(a, s);
	return true;
}

static bool app_post_next(struct app *a)
{
	if (a->stop)
		return false;
	if (a->o->records && !a->tail_next &&
	    a->posted >= (uint64_t)a->o->records) {
		app_stop(a, "records");
		return false;
	}
	return a->tail_next ? app_post_tail(a) : app_post_record(a);
}

/* The slot an operation belongs to, NULL if it is none of ours. */
static struct slot *app_slot_of(struct app *a, const struct op *op)
{
	for (unsigned i = 0; i < a->depth; i++)
		if (op == &a->slots[i].ops[OP_RECORD] ||
		    op == &a->slots[i].ops[OP_TAIL])
			return &a->slots[i];
	return NULL;
}

/* An operation ended: once the append's last one has, it is acknowledged
 * (every operation of it posted and successful) and its slot freed. */
static void app_op_ended(struct app *a, struct op *op, bool failed)
{
	struct slot *s = app_slot_of(a, op);

	if (!s || !op->busy) {
		say("a completion for no operation in flight (context %p)",
		    (void *)op);
		a->violation = true;
		app_stop(a, "violation");
		return;
	}
	op->busy = false;
	op->done = true;
	op->failed = failed;
	a->pending--;
	if (s->ops[OP_RECORD].busy || s->ops[OP_TAIL].busy || !s->all_posted)
		return;
	if (!s->ops[OP_RECORD].failed && !s->ops[OP_TAIL].failed &&
	    a->o->unsafe != UNSAFE_EARLY)
		app_ack(a, s->seq);
	s->busy = false;
}

/* Reads the CQ once (waiting up to ms); false if nothing was there. */
static bool app_poll_cq(struct app *a, int ms)
{
	struct fi_cq_entry e[16];
	struct fi_cq_err_entry err = { 0 };
	char text[160];
	ssize_t n = ms ? fi_cq_sread(a->c.cq, e, 16, NULL, ms)
		       : fi_cq_read(a->c.cq, e, 16);

	if (n == -FI_EAVAIL) {
		if (fi_cq_readerr(a->c.cq, &err, 0) != 1)
			return false;
		fi_cq_strerror(a->c.cq, err.prov_errno, err.err_data, text,
			       sizeof(text));
		app_error(a, "commit", err.err ? err.err : FI_EOTHER, text);
		if (err.op_context)
			app_op_ended(a, err.op_context, true);
		else
			a->anonymous++;
		return true;
	}
	for (ssize_t i = 0; i < n; i++)
		app_op_ended(a, e[i].op_context, false);
	return n > 0;
}

/* Notes a shutdown or error event of the connection. */
static void app_poll_eq(struct app *a)
{
	struct cm_event ev;

	if (eq_wait(a->c.f.eq, 0, &ev) &&
	    (ev.err || ev.event == FI_SHUTDOWN))
		app_error(a, "connection", ev.err ? ev.err : FI_ECONNRESET,
			  ev.err ? "EQ error" : "FI_SHUTDOWN");
}

/* Appends until a stop (error, full, -n, -t), then waits (bounded) for
 * every operation in flight. */
static void app_run(struct app *a)
{
	int64_t end = deadline_in((int)(a->o->seconds * 1000)), drain;

	while (!a->stop) {
		bool posted = false;

		while (app_post_next(a))
			posted = true;
		app_poll_cq(a, posted ? 0 : 1);
		app_poll_eq(a);
		if (!before(end))
			app_stop(a, "deadline");
	}
	drain = deadline_in(DRAIN_MS);
	while (a->pending && before(drain)) {
		app_poll_cq(a, 10);
		app_poll_eq(a);
	}
	if (a->pending) {
		say("%u operations still in flight %d s after the stop: the "
		    "initiator would hang", a->pending, DRAIN_MS / 1000);
		a->violation = true;
	}
}

/* With -g, waits (bounded by -w) until the go file exists. */
static void app_await_go(struct app *a)
{
	int64_t end = deadline_in((int)(a->o->connect_wait * 1000));

	while (a->o->go_file && access(a->o->go_file, F_OK) && before(end)) {
		app_poll_eq(a);
		usleep(20 * 1000);
	}
}

/* The initiator role. */
static int role_append(const struct opts *o)
{
	static struct app a;

	a.o = o;
	a.depth = o->unsafe == UNSAFE_VISIBLE ? 1 : o->depth;
	setvbuf(stdout, NULL, _IOLBF, 0);
	app_connect(&a);
	app_memory(&a);
	printf("START %016" PRIx64 " seq %" PRIu64 " pos %" PRIu64 " %s %s "
	       "depth %u method %s\n", a.l.log_id, a.post_seq, a.post_pos,
	       a.l.mode == MODE_SINGLETON ? "singleton" : "compound",
	       fi_pmem_profile_str(a.off.profile), a.depth,
	       fi_pmem_method_str(a.c.f.pmem_ops->method(a.c.ep, a.off.key)));
	fflush(stdout);
	app_await_go(&a);
	app_run(&a);
	printf("END %s acked %" PRIu64 " posted %" PRIu64 " errors %" PRIu64
	       " anonymous %" PRIu64 "%s%s\n", a.violation ? "violation" :
	       a.reason, a.acked, a.posted, a.errors, a.anonymous,
	       a.first_error[0] ? " first: " : "", a.first_error);
	fflush(stdout);
	if (a.violation)
		_exit(1); /* operations in flight: do not close */
	client_close(&a.c);
	if (a.local_mr)
		fi_close(&a.local_mr->fid);
	client_free(&a.c);
	free(a.mem);
	return 0;
}

/* ------------------------------------------------------------ verify */

struct acks {
	uint64_t *seq;
	size_t n, cap;
	uint64_t lines, bad;
};

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return (a > b) - (a < b);
}

/* Sorts the sequence numbers and drops repeats. */
static void acks_unique(struct acks *k)
{
	size_t u = 0;

	if (!k->n)
		return;
	qsort(k->seq, k->n, sizeof(*k->seq), cmp_u64);
	for (size_t i = 0; i < k->n; i++)
		if (!u || k->seq[u - 1] != k->seq[i])
			k->seq[u++] = k->seq[i];
	k->n = u;
}

/* Reads "ACK LOGID SEQ CHK" anywhere in each line; keeps those of log_id. */
static void acks_read(const char *path, uint64_t log_id, struct acks *k)
{
	FILE *fp = fopen(path, "r");
	char line[512], *p;
	unsigned long long id, seq;
	unsigned chk;

	*k = (struct acks){ 0 };
	if (!fp)
		return; /* nothing acknowledged yet */
	while (fgets(line, sizeof(line), fp)) {
		if (!(p = strstr(line, "ACK ")))
			continue;
		k->lines++;
		if (sscanf(p, "ACK %16llx %llu %4x", &id, &seq, &chk) != 3 ||
		    chk != ack_check(id, seq)) {
			k->bad++;
			continue;
		}
		if (id != log_id)
			continue;
		if (k->n == k->cap) {
			k->cap = k->cap ? 2 * k->cap : 4096;
			k->seq = realloc(k->seq, k->cap * sizeof(*k->seq));
			if (!k->seq)
				die("out of memory");
		}
		k->seq[k->n++] = seq;
	}
	fclose(fp);
	acks_unique(k);
}

/* Parses a 16-byte marker given as 32 hex digits. */
static bool marker_parse(const char *hex, unsigned char out[16])
{
	unsigned v;

	if (!hex || strlen(hex) != 32)
		return false;
	for (int i = 0; i < 16; i++) {
		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			return false;
		out[i] = (unsigned char)v;
	}
	return true;
}

/* Whether the 16-byte marker lies anywhere in the mapped log. */
static bool marker_found(const struct log *l, const char *hex)
{
	unsigned char m[16];

	if (!marker_parse(hex, m))
		die("-x takes 32 hex digits");
	return memmem(l->map, HEADER_SIZE + l->capacity, m, 16) != NULL;
}

/* Recovers the log and checks it against the ACK lines: one VERIFY line;
 * the recovered prefix in *found. */
static int verify_log(const struct opts *o, struct walk *found)
{
	struct log l;
	struct walk w = { 0 };
	struct acks k;
	const char *why = NULL;
	uint64_t lost = 0, verified = 0;
	bool stale = false;

	if (!log_open(&l, o->file, o->base, false, &why)) {
		printf("VERIFY %s FAIL %s: %s\n", o->name, o->file, why);
		return 1;
	}
	walk_prefix(&l, &w);
	if (!w.why)
		walk_after(&l, &w);
	acks_read(o->ackfile, l.log_id, &k);
	for (size_t i = 0; i < k.n; i++)
		k.seq[i] <= w.records ? verified++ : lost++;
	if (o->marker)
		stale = marker_found(&l, o->marker);
	if (!w.why && lost)
		w.why = "acknowledged records are missing";
	if (!w.why && stale)
		w.why = "a write under the old process's key landed in the file";
	printf("VERIFY %s %s log %016" PRIx64 " %s records %" PRIu64 " acked %zu"
	       " verified %" PRIu64 " lost %" PRIu64 " torn_rejected %d "
	       "unpublished %d beyond %" PRIu64 " end %" PRIu64 " left %" PRIu64
	       " ack_lines %" PRIu64 " bad_lines %" PRIu64 "%s%s\n", o->name,
	       w.why ? "FAIL" : "ok", l.log_id,
	       l.mode == MODE_SINGLETON ? "singleton" : "compound", w.records,
	       k.n, verified, lost, w.torn, w.unpublished, w.beyond, w.end,
	       l.capacity - w.end, k.lines, k.bad, w.why ? " why: " : "",
	       w.why ? w.why : "");
	free(k.seq);
	log_unmap(&l);
	close(l.fd);
	*found = (struct walk){ .records = w.records, .end = w.end };
	return w.why ? 1 : 0;
}

/* Splits "NAME=FILE@BASE" (BASE optional) into a copy of the options. */
static struct opts spec_opts(const struct opts *o, const char *spec)
{
	struct opts one = *o;
	char *copy = strdup(spec), *eq, *at;

	if (!copy || !(eq = strchr(copy, '=')))
		usage();
	*eq = '\0';
	one.name = copy;
	one.file = eq + 1;
	one.base = 0;
	at = strrchr(eq + 1, '@');
	if (at) {
		*at = '\0';
		one.base = number(at + 1, 0, 1ULL << 40);
	}
	return one; /* copy lives until exit */
}

/* The verify role: one log, or every -L log (status 1 if any failed). */
static int role_verify(const struct opts *o)
{
	struct walk w;
	struct opts one;
	int failed = 0;

	if (!o->nspecs)
		return verify_log(o, &w);
	for (int i = 0; i < o->nspecs; i++) {
		one = spec_opts(o, o->specs[i]);
		failed |= verify_log(&one, &w);
		fflush(stdout);
	}
	return failed;
}

/* ------------------------------------------------- learn and stale */

/* What a plain tcp peer learns from a pmemverbs target's accept. */
struct peer_info {
	uint64_t pid, key, addr, inbox_key, inbox_addr, log_id;
};

/* The pmemverbs CM header (fi_pmemverbs(7), COMMIT PROTOCOL): 'P' 'V',
 * version, flags (bit 0: inbox), inbox address, inbox key. */
static bool inbox_decode(const struct cm_event *ev, struct peer_info *pi)
{
	uint64_t v;

	if (ev->datalen < 20 || ev->data[0] != 'P' || ev->data[1] != 'V' ||
	    !(ev->data[3] & 1))
		return false;
	memcpy(&v, ev->data + 4, 8);
	pi->inbox_addr = le64toh(v);
	memcpy(&v, ev->data + 12, 8);
	pi->inbox_key = le64toh(v);
	return true;
}

/* Connects over the plain tcp core and reads the target's accept. */
static bool plain_connect(const struct opts *o, struct client *c,
			  struct peer_info *pi)
{
	struct offer off;

	if (client_connect(c, "tcp", o->addr, o->port, 10))
		return false;
	if (!inbox_decode(&c->connected, pi))
		die("the accept carried no pmemverbs header");
	off = c->off;
	pi->pid = off.pid;
	pi->key = off.key;
	pi->addr = off.addr;
	pi->log_id = off.log_id;
	return true;
}

/* The learn role: saves what the restart probe will replay. */
static int role_learn(const struct opts *o)
{
	struct client c;
	struct peer_info pi;
	FILE *fp;

	if (!plain_connect(o, &c, &pi))
		die("could not connect over tcp to learn the keys");
	client_free(&c);
	fp = fopen(o->infofile, "w");
	if (!fp || fprintf(fp, "%" PRIu64 " %" PRIx64 " %" PRIx64 " %" PRIx64
			   " %" PRIx64 " %" PRIx64 "\n", pi.pid, pi.key,
			   pi.addr, pi.inbox_key, pi.inbox_addr,
			   pi.log_id) < 0 || fclose(fp))
		die("writing %s", o->infofile);
	printf("LEARNED pid %" PRIu64 " region key %016" PRIx64 " inbox key "
	       "%016" PRIx64 "\n", pi.pid, pi.key, pi.inbox_key);
	return 0;
}

/* Reads what the learn role saved. */
static struct peer_info info_read(const char *path)
{
	struct peer_info pi;
	FILE *fp = fopen(path, "r");

	if (!fp || fscanf(fp, "%" SCNu64 " %" SCNx64 " %" SCNx64 " %" SCNx64
			  " %" SCNx64 " %" SCNx64, &pi.pid, &pi.key, &pi.addr,
			  &pi.inbox_key, &pi.inbox_addr, &pi.log_id) != 6)
		die("reading %s", path);
	fclose(fp);
	return pi;
}

static void info_line(const char *name, const char *fmt, ...) PRINTF_LIKE(2, 3);

/* Prints "INFO name: detail": an outcome shown, not counted. */
static void info_line(const char *name, const char *fmt, ...)
{
	va_list ap;

	printf("INFO %s: ", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

/* Waits (bounded) for ctx's completion: 0, its error, or -FI_ENOTCONN. */
static int wait_op(struct client *c, void *ctx, char *text, size_t len)
{
	int64_t end = deadline_in(STEP_MS);
	struct fi_cq_entry e;
	struct fi_cq_err_entry err = { 0 };
	struct cm_event ev;
	bool gone = false;
	ssize_t n;

	while (before(end)) {
		n = fi_cq_sread(c->cq, &e, 1, NULL, 10);
		if (n == 1 && e.op_context == ctx)
			return 0;
		if (n == -FI_EAVAIL && fi_cq_readerr(c->cq, &err, 0) == 1) {
			snprintf(text, len, "prov_errno %d: %s", err.prov_errno,
				 fi_cq_strerror(c->cq, err.prov_errno,
						err.err_data, NULL, 0));
			if (err.op_context == ctx)
				return -(err.err ? err.err : FI_EOTHER);
		}
		if (eq_wait(c->f.eq, 0, &ev) && (ev.err || ev.event ==
						 FI_SHUTDOWN))
			gone = true; /* the op's own completion still comes */
	}
	snprintf(text, len, "no completion within %d s%s", STEP_MS / 1000,
		 gone ? " (connection gone)" : "");
	return -FI_ETIMEDOUT;
}

/* One write on a fresh connection of prov; its outcome (0: applied). */
static int probe_write(const struct opts *o, const char *prov, uint64_t addr,
		       uint64_t key, uint64_t flags, const unsigned char *data,
		       char *text, size_t tlen)
{
	static struct fi_context2 ctx;
	static unsigned char buf[64];
	struct client c;
	struct fid_mr *mr = NULL;
	struct iovec iov = { .iov_base = buf, .iov_len = 16 };
	struct fi_rma_iov rma = { .addr = addr, .len = 16, .key = key };
	void *desc = NULL;
	struct fi_msg_rma msg = { .msg_iov = &iov, .desc = &desc,
				  .iov_count = 1, .rma_iov = &rma,
				  .rma_iov_count = 1, .context = &ctx };
	ssize_t ret;

	memcpy(buf, data, 16);
	snprintf(text, tlen, "-");
	if (client_connect(&c, prov, o->addr, o->port, 10))
		die("connecting over %s", prov);
	if (c.f.info->domain_attr->mr_mode & FI_MR_LOCAL) {
		mr = mr_register(&c.f, buf, sizeof(buf), FI_WRITE, 0, false);
		desc = fi_mr_desc(mr);
	}
	ret = fi_writemsg(c.ep, &msg, flags);
	if (ret)
		snprintf(text, tlen, "fi_writemsg returned %s",
			 fi_strerror((int)-ret));
	else
		ret = wait_op(&c, &ctx, text, tlen);
	if (ret != -FI_ETIMEDOUT) { /* else the core may still hold ctx */
		client_close(&c);
		if (mr)
			fi_close(&mr->fid);
		client_free(&c);
	}
	return (int)ret;
}

/* Judges a write with an old key: refused (PASS) or applied. */
static void judge_stale(const struct opts *o, const char *name, int ret,
			const char *text)
{
	if (ret && ret != -FI_ETIMEDOUT) {
		verdict(true, name, "refused with %s (%s)",
			fi_strerror(-ret), text);
		return;
	}
	if (!ret && o->expect_accepted) {
		info_line(name, "applied: with the same requested key in both "
			  "processes the core cannot tell the old process's "
			  "key from the new one's");
		return;
	}
	verdict(false, name, ret ? "no outcome: %s" : "the write under the old "
		"process's key was applied%s", text);
}

/* The stale role: the restarted target must refuse the old process's
 * keys, and commits under its own must work. */
static int role_stale(const struct opts *o)
{
	struct peer_info old = info_read(o->infofile), now;
	unsigned char marker[16], probe[16];
	struct client c;
	char text[200];
	int ret;

	if (!marker_parse(o->marker, marker))
		die("stale needs -x MARKER (32 hex digits)");
	memset(probe, 0x5a, sizeof(probe));
	if (!plain_connect(o, &c, &now))
		die("the new target does not accept connections");
	client_free(&c);
	verdict(now.pid != old.pid && now.log_id == old.log_id,
		"restart-accepts", "a new target process (pid %" PRIu64 ", was %"
		PRIu64 ") serves the same log %016" PRIx64, now.pid, old.pid,
		now.log_id);
	if (now.key != old.key)
		verdict(true, "restart-region-key", "new region key %016" PRIx64
			", old %016" PRIx64, now.key, old.key);
	else if (o->expect_accepted)
		info_line("restart-region-key", "the new region key equals the "
			  "old one (%016" PRIx64 "): fixed keys", now.key);
	else
		verdict(false, "restart-region-key", "the new region key equals "
			"the old one (%016" PRIx64 ")", now.key);
	verdict(now.inbox_key != old.inbox_key, "restart-inbox-key",
		"new inbox key %016" PRIx64 ", old %016" PRIx64, now.inbox_key,
		old.inbox_key);
	ret = probe_write(o, "tcp", old.addr + SCRATCH_OFF + 64, old.key,
			  FI_DELIVERY_COMPLETE | FI_COMPLETION, marker, text,
			  sizeof(text));
	judge_stale(o, "restart-stale-region-key-write", ret, text);
	ret = probe_write(o, "tcp", old.inbox_addr, old.inbox_key,
			  FI_DELIVERY_COMPLETE | FI_COMPLETION, marker, text,
			  sizeof(text));
	judge_stale(o, "restart-stale-inbox-write", ret, text);
	ret = probe_write(o, "pmemverbs", old.addr + SCRATCH_OFF + 64, old.key,
			  FI_COMMIT_COMPLETE | FI_COMPLETION, marker, text,
			  sizeof(text));
	judge_stale(o, "restart-stale-region-key-commit", ret, text);
	ret = probe_write(o, "pmemverbs", now.addr + SCRATCH_OFF, now.key,
			  FI_COMMIT_COMPLETE | FI_COMPLETION, probe, text,
			  sizeof(text));
	verdict(ret == 0, "restart-new-key-commit", "a commit with the new "
		"process's key on a new connection: %s", ret ? text : "durable");
	return g_failed ? 1 : 0;
}

/* ------------------------------------------------------------ options */

static noreturn void usage(void)
{
	fprintf(stderr,
		"usage: pmv_crashlog init   -f FILE [-o BASE] -m singleton|compound "
		"[-c CAPACITY] [-M MAXREC]\n"
		"       pmv_crashlog target -f FILE [-o BASE] -a ADDR -P PORT "
		"[-k random|fixed] [-t SECONDS]\n"
		"                           [-A ACKFILE [-x MARKER] [-N NAME]]\n"
		"       pmv_crashlog append -a ADDR -P PORT [-d DEPTH] [-t SECONDS] "
		"[-n RECORDS] [-w SECONDS]\n"
		"                           [-g GOFILE] [-u early|visible]\n"
		"       pmv_crashlog verify -f FILE [-o BASE] -A ACKFILE "
		"[-x MARKER] [-N NAME]\n"
		"       pmv_crashlog verify -A ACKFILE -L NAME=FILE@BASE "
		"[-L NAME=FILE@BASE...]\n"
		"       pmv_crashlog learn  -a ADDR -P PORT -i INFOFILE\n"
		"       pmv_crashlog stale  -a ADDR -P PORT -i INFOFILE -x MARKER "
		"[-e]\n");
	exit(2);
}

/* A number in [min, max] (decimal, 0x hex), or the usage. */
static unsigned long long number(const char *text, unsigned long long min,
				 unsigned long long max)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(text, &end, 0);
	if (errno || *end || end == text || v < min || v > max) {
		fprintf(stderr, "pmv_crashlog: bad number '%s' (%llu..%llu)\n",
			text, min, max);
		usage();
	}
	return v;
}

static void parse_option(int c, const char *arg, struct opts *o)
{
	switch (c) {
	case 'f': o->file = arg; break;
	case 'o': o->base = number(arg, 0, 1ULL << 40); break;
	case 'a': o->addr = arg; break;
	case 'P': o->port = arg; number(arg, 1, 65535); break;
	case 'm':
		if (strcmp(arg, "singleton") && strcmp(arg, "compound"))
			usage();
		o->mode = strcmp(arg, "singleton") ? MODE_COMPOUND :
						     MODE_SINGLETON;
		break;
	case 'c': o->capacity = number(arg, 1 << 16, 1ULL << 34); break;
	case 'M': o->max_record = (uint32_t)number(arg, 64, 1 << 20); break;
	case 'k': o->fixed_key = !strcmp(arg, "fixed"); break;
	case 't': o->seconds = (long)number(arg, 1, 86400); break;
	case 'd': o->depth = (unsigned)number(arg, 1, DEPTH_MAX); break;
	case 'n': o->records = (long)number(arg, 1, 1L << 40); break;
	case 'w': o->connect_wait = (long)number(arg, 1, 86400); break;
	case 'g': o->go_file = arg; break;
	case 'L':
		if (o->nspecs == 8)
			usage();
		o->specs[o->nspecs++] = arg;
		break;
	case 'u':
		if (strcmp(arg, "early") && strcmp(arg, "visible"))
			usage();
		o->unsafe = strcmp(arg, "early") ? UNSAFE_VISIBLE : UNSAFE_EARLY;
		break;
	case 'A': o->ackfile = arg; break;
	case 'x': o->marker = arg; break;
	case 'N': o->name = arg; break;
	case 'i': o->infofile = arg; break;
	case 'e': o->expect_accepted = true; break;
	default: usage();
	}
}

/* Whether the options a role needs are there. */
static bool options_complete(const struct opts *o)
{
	const char *r = o->role;
	bool net = o->addr && o->port;

	if (!strcmp(r, "init"))
		return o->file && o->mode && o->max_record % LINE == 0 &&
		       o->capacity >= o->max_record;
	if (!strcmp(r, "target"))
		return o->file && net;
	if (!strcmp(r, "append"))
		return net;
	if (!strcmp(r, "verify"))
		return (o->file || o->nspecs) && o->ackfile;
	if (!strcmp(r, "learn") || !strcmp(r, "stale"))
		return net && o->infofile;
	return false;
}

static void parse_options(int argc, char **argv, struct opts *o)
{
	int c;

	if (argc < 2)
		usage();
	*o = (struct opts){ .role = argv[1], .capacity = DEFAULT_CAPACITY,
			    .max_record = DEFAULT_MAXREC, .depth = 8,
			    .seconds = 60, .connect_wait = 30, .name = "log" };
	optind = 2;
	while ((c = getopt(argc, argv, "f:o:a:P:m:c:M:k:t:d:n:w:g:u:A:x:N:i:eL:")) != -1)
		parse_option(c, optarg, o);
	if (optind != argc || !options_complete(o))
		usage();
}

int main(int argc, char **argv)
{
	struct opts o;

	parse_options(argc, argv, &o);
	g_role = o.role;
	if (!strcmp(o.role, "init"))
		return role_init(&o);
	if (!strcmp(o.role, "target"))
		return role_target(&o);
	if (!strcmp(o.role, "append"))
		return role_append(&o);
	if (!strcmp(o.role, "verify"))
		return role_verify(&o);
	if (!strcmp(o.role, "learn"))
		return role_learn(&o);
	return role_stale(&o);
}
