/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_crashlog.h - what the files of pmv_crashlog share: the log's
 * layout, limits, types, options and the functions one file calls in
 * another.  The program as a whole:
 */
#ifndef PMV_CRASHLOG_H
#define PMV_CRASHLOG_H

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
 *           [-A ACKFILE [-x MARKER] [-N NAME]] [-e msg|rdm]
 *           maps an existing valid log (never empties it), registers it
 *           with FI_RMA_PMEM and serves connections until killed or SECONDS;
 *           with -A it first verifies the log as the verify role does (and
 *           exits 1 if that fails): restart, recover, verify
 *   append  -a ADDR -P PORT [-d DEPTH] [-t SECONDS] [-n RECORDS] [-w SECONDS]
 *           [-g GOFILE] [-u MODE] [-e msg|rdm [-R RECONNECTS]]
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
 *   stale   -a ADDR -P PORT -i INFOFILE -x MARKER [-K]
 *           a restarted target must refuse the old process's keys (writes
 *           of MARKER under them); -K: a fixed key is expected to pass
 *           (INFO lines)
 *
 * -e rdm (target, append): the same log through FI_EP_RDM endpoints
 * (pmemverbs;ofi_rxm).  The target's RDM endpoint is bound to ADDR:PORT
 * (FI_SOURCE); the initiator puts that address in its AV and sends a hello
 * carrying its own address (fi_getname), resent while it fails (the target
 * not up yet); the target inserts it in its AV and sends the offer back.
 * learn and stale are MSG only (they read the pmemverbs CM header).
 * append -R N: when the target died (an error, every operation drained),
 * it waits (-w) for the next target process on the same address: a hello
 * on the same endpoint and AV entry (ofi_rxm connects again), else a new
 * endpoint and AV entry; the appends go on from that target's offer, a
 * START and an END line per target, up to N times.
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
	bool rdm;       /* -e rdm: FI_EP_RDM endpoints */
	long reconnects; /* -R: targets served after the first died (rdm) */
	enum unsafe unsafe;
	unsigned depth;
	long seconds, records, connect_wait;
	const char *specs[8]; /* verify: NAME=FILE@BASE, several logs */
	int nspecs;
};

extern const char *g_role;

#define CHECK(call)                                                         \
	do {                                                                \
		int check_ret_ = (int)(call);                               \
		if (check_ret_)                                             \
			die("%s: %s", #call, fi_strerror(-check_ret_));      \
	} while (0)

struct fab {
	bool rdm;
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *eq;
	struct fi_pmem_ops_domain *pmem_ops;
	bool pmem;
};

/* An EQ event as eq_wait returns it. */
struct cm_event {
	uint32_t event;
	int err;
	struct fid *fid;
	struct fi_info *info;
	size_t datalen;
	uint8_t data[CM_BUF];
};

#define MAX_CONNS 8
#define RDM_RECVS 4 /* hellos the RDM target keeps receives posted for */
#define HELLO_MAGIC 0x314f4c4c4548564dULL /* "MVHELLO1" */

/* An RDM initiator's first message: its address, for the target's AV. */
struct hello {
	uint64_t magic, namelen;
	uint8_t name[CM_BUF - 16];
};

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
	/* -e rdm: one endpoint, its AV and CQ, receives for hellos */
	struct fid_ep *rdm_ep;
	struct fid_av *av;
	struct fid_cq *rdm_cq;
	struct hello hellos[RDM_RECVS];
	struct fi_context2 hello_ctx[RDM_RECVS];
	struct fi_context2 offer_ctx[MAX_CONNS];
	struct fid_mr *hellos_mr;
	unsigned next_offer;
};

struct client {
	struct fab f;
	struct fid_cq *cq;
	struct fid_ep *ep;
	struct cm_event connected; /* the accept's CM data */
	struct offer wire;         /* where the target's offer lands */
	struct fid_mr *wire_mr;    /* under FI_MR_LOCAL */
	struct fi_context2 recv_ctx;
	struct offer off;          /* decoded */
	/* -e rdm: the target's AV entry and the hello sent to it */
	struct fid_av *av;
	fi_addr_t peer;
	struct hello hello;
	struct fid_mr *hello_mr;
	struct fi_context2 hello_ctx;
};

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
	long reconnects_left;
};

struct acks {
	uint64_t *seq;
	size_t n, cap;
	uint64_t lines, bad;
};

/* What a plain tcp peer learns from a pmemverbs target's accept. */
struct peer_info {
	uint64_t pid, key, addr, inbox_key, inbox_addr, log_id;
};

/* pmv_crashlog_log.c */
noreturn void die(const char *fmt, ...) PRINTF_LIKE(1, 2);
void say(const char *fmt, ...) PRINTF_LIKE(1, 2);
uint64_t rnd64(void);
uint32_t payload_len(const struct log *l, uint64_t seq);
uint64_t space_of(uint32_t len);
uint64_t build_record(const struct log *l, uint64_t seq,
		      unsigned char *buf);
uint16_t ack_check(uint64_t log_id, uint64_t seq);
void log_unmap(struct log *l);
bool log_open(struct log *l, const char *path, uint64_t base, bool rw,
	      const char **why);
void walk_prefix(const struct log *l, struct walk *w);
void walk_after(const struct log *l, struct walk *w);
int role_init(const struct opts *o);

/* pmv_crashlog_target.c */
void fab_open(struct fab *f, const char *prov, const char *addr,
	      const char *port, bool listen, bool rdm);
void fab_close(struct fab *f);
struct fid_cq *cq_open(const struct fab *f);
struct fid_ep *ep_open(const struct fab *f, struct fi_info *info,
		       struct fid_cq *cq);
bool eq_wait(struct fid_eq *eq, int ms, struct cm_event *ev);
struct fid_mr *mr_register(const struct fab *f, void *buf, size_t len,
			   uint64_t access, uint64_t flags, bool fixed);
void target_offer(struct target *t, struct offer *o);
int role_target(const struct opts *o);

/* pmv_crashlog_append.c */
void client_close(struct client *c);
void client_free(struct client *c);
int client_connect(struct client *c, const char *prov,
		   const char *addr, const char *port, long seconds);
int client_offer(struct client *c, int64_t end);
int role_append(const struct opts *o);

/* pmv_crashlog_rdm.c */
void target_rdm_listen(struct target *t);
void target_rdm_poll(struct target *t, int ms);
void target_rdm_close(struct target *t);
int client_connect_rdm(struct client *c, const char *addr, const char *port,
		       long seconds);
int client_rdm_reoffer(struct client *c, long seconds);

/* pmv_crashlog_verify.c */
int verify_log(const struct opts *o, struct walk *found);
int role_verify(const struct opts *o);
int role_learn(const struct opts *o);
int role_stale(const struct opts *o);

/* pmv_crashlog_main.c */
noreturn void usage(void);
unsigned long long number(const char *text, unsigned long long min,
			  unsigned long long max);

#endif /* PMV_CRASHLOG_H */
