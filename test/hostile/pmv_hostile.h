/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_hostile.h - what the files of pmv_hostile share: the region's
 * zones, limits, types, options and the functions one file calls in
 * another.  The program as a whole:
 */
#ifndef PMV_HOSTILE_H
#define PMV_HOSTILE_H

/*
 * pmv_hostile - a hostile or buggy peer against a pmemverbs target
 * (issue 11 item 5).  One program, three roles, over 127.0.0.1:
 *
 *   target   pmemverbs, FI_RMA_PMEM endpoints.  Maps a /dev/shm file
 *            between two PROT_NONE guard pages, fills it with a pattern
 *            (its first and last EDGE bytes are guard bytes that no valid
 *            request names), registers it with FI_RMA_PMEM and serves every
 *            connection until the honest initiator is done and every
 *            connection is gone.  Then it checks every byte of the region.
 *   honest   a well-behaved pmemverbs initiator: commits into its zone of
 *            the region until the attack is over (a marker file), then a
 *            few more, and tells the target how many ("DONE n", fi_send).
 *   hostile  the plain tcp core, no pmemverbs.  Sends a crafted pmemverbs
 *            CM header (its own inbox, registered), learns the target's
 *            inbox from the CM data of the accept, and writes crafted
 *            request slots and raw bytes into it with plain RMA writes;
 *            reads its acks and reports the refusals.
 *
 * The region (REGION_LEN bytes, offsets from its RMA base):
 *   [0, EDGE)                  guard bytes: the pattern, never named
 *   HONEST_OFF ...             the honest initiator's slots
 *   ZONE_A_OFF, ZONE_A_LEN     the hostile's one valid send request
 *   ZONE_B_OFF, ZONE_B_LEN     the hostile's other valid requests
 *   [REGION_LEN - EDGE, ...)   guard bytes
 * Every other byte keeps the pattern too.
 *
 * Each check prints "PASS name: detail" or "FAIL name: detail"; other lines
 * are information.  Exit status: 0 every check passed, 1 a check failed,
 * 2 usage.
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
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_ext_pmem.h>

#include "../common/pmv_test_time.h"
#include "../common/pmv_test_report.h"

#include "proto/pmv_proto.h"

#define PMV_FI_VERSION FI_VERSION(1, 17)
#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))

/* The region and its zones (offsets from the region's RMA base). */
#define REGION_LEN 65536u
#define EDGE 512u
#define HONEST_OFF 4096u
#define HONEST_SLOTS 16u
#define HONEST_SLOT 1024u
#define ZONE_A_OFF 32768u
#define ZONE_A_LEN 32u
#define ZONE_B_OFF 40960u
#define ZONE_B_LEN 4096u
#define REGION_KEY 0x484f5354494c45ULL /* requested; the core may choose */

#define OWN_SLOT_SIZE 128u

/* Bounds on waits (none is a verdict on time). */
#define STEP_MS 30000          /* one operation, one connection setup */
#define ACK_MS 5000            /* an ack the hostile expects */
#define IGNORE_MS 50           /* watching for an ack that must not come */
#define PROGRESS_MS 30000      /* honest commits during an attack group */
#define TARGET_LIFE_MS 400000  /* the target's whole run */
#define HONEST_LIFE_MS 300000  /* the honest initiator's whole run */
#define GRACE_MS 20000         /* target: connections to end after DONE */
#define MAX_CONNS 128
#define PROGRESS_STEP 3        /* honest commits an attack group waits for */
#define CHURN_CONNS 40         /* connections the churn group drops */
#define STALL_REQS 40000       /* requests the stalled reader injects */
#define STALL_GAP_US 2000      /* its pause after each ring */

_Static_assert(sizeof(struct pmv_req) == 40, "pmv_req is 40 bytes on the wire");
_Static_assert(sizeof(struct pmv_ack) == 24, "pmv_ack is 24 bytes on the wire");

/* Shared between the processes (-c FILE, created by the script). */
struct ctl {
	uint64_t honest_commits; /* honest: commits completed */
	uint64_t honest_failed;  /* honest: 1 once a commit failed */
	uint64_t attack_started; /* hostile: 1 from its first crafted write */
};

/* ------------------------------------------------------------------ */
/* Common                                                             */
/* ------------------------------------------------------------------ */

struct hostile_options {
	const char *role, *addr, *port, *file, *ctl, *marker;
	uint64_t base, key;   /* the target's region (-x BASE:KEY) */
	unsigned after;       /* honest: commits after the attack */
	unsigned fuzz;        /* hostile: random requests */
	uint64_t seed;
	bool verbose;
};
extern struct hostile_options g_opt;

extern const char *g_role;

#include "../common/pmv_test_check.h"
#include "../common/pmv_test_eq.h"
#include "../common/pmv_test_region.h"

/* The honest commit kinds: slot s has kind s % 4, the same every time. */
struct piece {
	uint32_t off, len; /* within the slot */
};

struct hkind {
	struct piece p[2];
	unsigned n;
	bool split; /* piece 0 a plain write, piece 1 the commit */
	bool fence; /* FI_FENCE: the send method on agent profiles */
};
extern const struct hkind k_kinds[4];

enum zone { Z_EDGE, Z_HONEST, Z_A, Z_B, Z_OTHER };

struct tconn {
	struct fid_ep *ep;
	char kind;   /* last byte of its CM data: 'H' honest, 'X' hostile */
	bool shut;   /* FI_SHUTDOWN read, or never accepted */
	struct fi_context2 rxctx[2];
	char rxbuf[2][64];
};

struct hop {
	struct fi_context2 ctx;
	bool done;
	int err;
	char text[200];
};

/* Where the honest's run stands: commits made, when the attack began and
 * ended (in commits; UINT64_MAX: not yet). */
struct hrun {
	uint64_t n, started, ended;
	bool failed;
};

struct hconn {
	struct fid_ep *ep;
	struct fid_eq *eq;
	struct fid_cq *cq;
	struct pmv_cm_hdr peer; /* the target's inbox */
	bool has_peer;          /* the accept carried a pmemverbs header */
	bool up;
	uint64_t seq;           /* next request the target's agent expects */
};

struct hostile_client {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_mr *inbox_mr;
	uint8_t *inbox;
	size_t inbox_size;
	uint64_t inbox_addr, inbox_key;
	struct ctl *ctl;
	struct hconn c;               /* the connection the attacks use */
	uint8_t wbuf[REGION_LEN + 4096]; /* what a write sends */
	unsigned refusals[PMV_ERR_LAST - PMV_ERR_BASE];
	unsigned served, bad, ignored, unanswered, conns, dropped;
};

/* How the hostile's CM header lies about itself. */
enum hdr_mode {
	HDR_GOOD,        /* its real inbox */
	HDR_BOGUS_INBOX, /* an inbox key nobody registered */
	HDR_NO_INBOX,    /* "no inbox" */
	HDR_TINY_SLOTS,  /* 16-byte slots: room for no extent */
	HDR_HUGE_SLOTS,  /* 496-byte slots, more than its inbox has */
	HDR_TRANSPORT,   /* transport 0 (none) */
	HDR_BAD_VERSION, /* protocol version 2 */
	HDR_SHORT,       /* 10 bytes of a header */
	HDR_NONE,        /* no header: a plain tcp peer */
};

/* What a crafted request should get. */
enum expect {
	EX_SERVED,  /* a valid request: status 0 (the harness works) */
	EX_REFUSED, /* an ack with a nonzero status */
	EX_IGNORED, /* no ack: nothing was written to the slot for the seq */
	EX_BAD,     /* the slot holds no valid request: an ack refusing it as
		     * PMV_ERR_BAD_REQUEST (after FI_PMEMVERBS_BAD_REQUEST_MS),
		     * never a stall */
	EX_ANY,     /* either; only reported */
};

/* Where an address points: from the region's base, or absolute. */
struct aspec {
	bool abs;
	uint64_t v;
};

struct espec {
	struct aspec a;
	uint64_t len;
};

#define REL(off) { .abs = false, .v = (uint64_t)(int64_t)(off) }
#define ABS(x) { .abs = true, .v = (x) }
#define ZB ZONE_B_OFF
#define RL ((int64_t)REGION_LEN)

enum key_sel { KEY_REGION, KEY_PLUS1, KEY_ZERO, KEY_ONES, KEY_OWN_INBOX,
	       KEY_TARGET_INBOX };

/* How an image is spoiled after it is laid out. */
enum mangle {
	M_NONE, M_BAD_SUM, M_ZERO_SUM, M_SEQ_ZERO, M_SEQ_OLD, M_SEQ_LAP,
	M_SEQ_MAX, M_SEQ_FAR, M_WRONG_SLOT, M_TORN, M_RANDOM_SEQ, M_RANDOM,
	M_SPILL,
};

/* Lengths that depend on the target's slot size. */
enum dyn {
	D_NONE,
	D_INLINE_FIT,     /* the inline data fills the slot exactly */
	D_INLINE_OVER,    /* the inline data is one byte more than fits */
	D_EXTENTS_OVER,   /* one extent more than fits */
	D_INLINE_NO_ROOM, /* a full slot of extents, and an inline one */
	D_NEXTENTS_MAX,   /* nextents 0xffff, one laid out */
};

struct attack {
	const char *name;
	enum expect expect;
	int code; /* EX_REFUSED: what pmv_proto.c's validator gives */
	uint32_t flags;
	uint16_t fence_back;
	enum key_sel key;
	unsigned next;
	struct espec ext[6];
	bool inl; /* an inline extent (and its data) follows */
	struct espec inl_ext;
	enum dyn dyn;
	enum mangle mangle;
};

/* One valid flush of 8 bytes of zone B: the base of spoiled requests. */
#define FLUSH8 .next = 1, .ext = { { REL(ZB), 8 } }
#define SCOPE1(o, l) .next = 1, .ext = { { REL(o), (l) } }

/* Raw bytes written into the target's inbox, outside the request slot
 * the agent reads next, then the probe. */
struct raw {
	const char *name;
	size_t off;     /* from the inbox's start; SIZE_MAX: the gen line */
	size_t len;     /* 0: the rest of the inbox */
};

/* Where a core write points. */
enum cw_base {
	CW_INBOX,     /* the target's inbox, from its start */
	CW_INBOX_END, /* the target's inbox, from its end */
	CW_REGION,    /* the region, with its key */
	CW_KEY,       /* the inbox's start, with another key */
};

/* A write the target's core must refuse: past and before the target's
 * inbox and region, and with guessed keys. */
struct core_write {
	const char *name;
	enum cw_base base;
	int64_t off;
	size_t len;
	uint64_t key; /* CW_KEY */
};

/* pmv_hostile_common.c */
void info(const char *fmt, ...) PRINTF_LIKE(1, 2);
uint64_t mix64(uint64_t x);
uint8_t pattern_byte(uint64_t off);
uint8_t honest_byte(uint64_t i, uint64_t off);
uint8_t zone_a_byte(uint64_t k);
uint64_t rnd64(void);
uint64_t rnd(uint64_t bound);
struct ctl *ctl_map(void);
uint64_t ctl_load(const uint64_t *word);
void ctl_store(uint64_t *word, uint64_t v);
struct fi_info *query_info(const char *prov, bool pmem, uint64_t flags);
struct fid_eq *open_eq(struct fid_fabric *fabric);
struct fid_cq *open_cq(struct fid_domain *domain);
const char *status_name(int32_t status);
enum zone zone_of(uint32_t off);
uint8_t honest_expected(uint64_t n, uint32_t off);

/* pmv_hostile_target.c */
int target_main(void);

/* pmv_hostile_honest.c */
int honest_main(void);

/* pmv_hostile_conn.c */
extern struct hostile_client g_x;
void hostile_open(void);
extern const char *const k_hdr_names[];
void hconn_close(struct hconn *c);
bool hconn_connect(struct hconn *c, enum hdr_mode mode);
void hostile_reconnect(void);
void hconn_progress(struct hconn *c, void *want, bool *done, int *err);
int hconn_write(struct hconn *c, size_t len, uint64_t addr,
		uint64_t key);
uint64_t req_addr(const struct hconn *c, uint64_t seq);
bool hconn_ack(struct hconn *c, uint64_t seq, int ms,
	       struct pmv_ack *ack);

/* pmv_hostile_attack.c */
size_t img_build(const struct pmv_req *h, const struct pmv_extent *ext,
		 unsigned next, const uint8_t *data, size_t dlen);
extern const struct attack k_probe;
size_t attack_image(const struct attack *a, uint32_t slot, uint64_t seq);
void judge_ack(const struct attack *a, int32_t status);
void judge_silence(const struct attack *a);
void clear_slots(struct hconn *c);
void run_attack(const struct attack *a);

void group_valid(void);
void group_refused(void);
void group_bad(void);

/* pmv_hostile_fuzz.c */
void fuzz_one(uint32_t slot);
void await_honest(const char *group, uint64_t mark, bool drive);
void flood(unsigned rounds);
void raw_inbox_writes(void);
void spill_write(void);
void header_attack(enum hdr_mode mode);
void core_write(const struct core_write *w);
void core_writes(void);

/* pmv_hostile_main.c */

#endif /* PMV_HOSTILE_H */
