/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: wire protocol between two pmemverbs endpoints.
 *
 * Connection setup: each side prepends a struct pmv_cm_hdr to the
 * application's CM data (fi_connect, fi_accept); pmemverbs strips it again
 * before the application sees the data.  It tells the peer where this
 * side's inbox is: a registered region the peer writes into with plain RMA
 * writes on the same connection, so that a commit request is ordered behind
 * the data writes it covers (the core must advertise FI_ORDER_WAW).
 *
 * Inbox layout: ack slots, then request slots (PMV_SLOTS of each), then a
 * 64-byte line holding the domain's registration generation (8 bytes,
 * little-endian; read by the peer's read-flush), then PMV_SLOTS 8-byte
 * words where this side's read-flush reads land, then the probe's landing
 * word, then (at the next multiple of 64) PMV_PROFILES_SIZE bytes where
 * the peer pushes its profile table.
 *   initiator -> target agent: struct pmv_req in request slot (seq - 1) % N
 *   target agent -> initiator: struct pmv_ack in ack slot (seq - 1) % N
 * A request of the send method (PMV_REQ_INLINE) carries the commit's data:
 * after its nextents extents comes one more struct pmv_extent naming where
 * the data goes, then the data's bytes; the agent persists the extents
 * first, then places the data and persists it.
 * The registration generation counts the regions the target closed (once
 * each core registration is gone); a region keeps the generation it was
 * registered in, and a profile the initiator cached for a key is valid for
 * one generation.  A request carries the generation the initiator knew
 * when it posted the oldest write the request covers: the target serves
 * it only on a region registered in that generation or before (a region
 * registered later may not hold those writes: PMV_ERR_REREGISTERED).
 * The profile table (struct pmv_profiles) says what an ack would say of
 * each region a commit can name: each side writes it into the peer's inbox
 * when the connection is established and after each registration, so a
 * key's first commit can go by its fastest method.
 * A slot is valid when its checksum (CRC32C of the slot with the checksum
 * field 0) matches and its seq is the next one expected; a partly written
 * slot fails the checksum and is read again.  All fields are little-endian
 * on the wire; pmv_proto.c converts with <endian.h>.
 */
#ifndef PMV_PROTO_H
#define PMV_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Transport of the connection, as the completion meaning differs. */
enum pmv_transport {
	PMV_TRANSPORT_TCP = 1,   /* completion: the requester's stack has it */
	PMV_TRANSPORT_IB = 2,    /* ib/roce: the responder NIC has it */
	PMV_TRANSPORT_IWARP = 3, /* like tcp */
};

/*
 * The CM header, 24 bytes on the wire (RDMA CM private data is about 56
 * bytes, and ofi_rxm layered on pmemverbs needs room for its own):
 *   0  'P' 'V'
 *   2  version
 *   3  flags: bit 0 inbox present, bits 1-2 transport,
 *      bits 3-7 request slot size / 16
 *   4  inbox address (little-endian 64-bit)
 *  12  inbox key (little-endian 64-bit)
 *  20  gate id (little-endian 16-bit)
 *  22  flags: bit 0 gated (this side takes gated requests: see
 *      PMV_REQ_GATED); the other bits 0
 *  23  0
 * The number of slots is fixed by the protocol version (PMV_SLOTS).
 */
/* 2: cumulative acks (pmv_ack.covers); 3: CRC32C checksums; 4: a request
 * carries the generation its writes were posted in (pmv_req.gen); 5: gated
 * requests (the gate in the CM header) */
#define PMV_PROTO_VERSION 5
#define PMV_CM_HDR_SIZE 24

struct pmv_cm_hdr {
	bool has_inbox;
	uint8_t transport;    /* enum pmv_transport */
	uint32_t slot_size;   /* bytes per request slot, a multiple of 16 */
	uint64_t inbox_addr;  /* RMA address of the inbox (virtual or offset) */
	uint64_t inbox_key;
	bool gated;           /* takes gated requests at gate_id */
	uint16_t gate_id;
};

struct pmv_extent {
	uint64_t addr;        /* RMA address as the initiator names it */
	uint64_t len;
};

#define PMV_REQ_IMMED 0x1     /* raise an FI_REMOTE_CQ_DATA completion */
#define PMV_REQ_INLINE 0x2    /* the data follows the extents (send) */
#define PMV_REQ_FENCE 0x4     /* refuse if one of the fence_back requests
				 before this one, to the same key, failed */
#define PMV_REQ_GATED 0x8     /* came as the last segment of its data's
				 write, with remote CQ data naming its seq:
				 served only once that completion is read */
#define PMV_ACK_DDIO_OFF 0x1  /* the target declared inbound DMA bypasses
				 its CPU caches (FI_PMEMVERBS_DDIO=0) */

struct pmv_req {
	uint64_t seq;
	uint64_t key;
	uint64_t data;        /* FI_IMMED completion data */
	uint32_t flags;       /* PMV_REQ_* */
	uint16_t nextents;
	uint16_t fence_back;  /* PMV_REQ_FENCE: requests back to check */
	uint32_t checksum;    /* over the request with this field 0 */
	uint32_t gen;         /* the target's registration generation the
			       * initiator knew when it posted the oldest
			       * write the request covers: served only on a
			       * region registered in it or before */
	struct pmv_extent ext[];
};

struct pmv_ack {
	uint64_t seq;
	int32_t status;       /* 0 or a negative FI_E* code */
	uint8_t profile;      /* enum fi_pmem_profile of the key */
	uint8_t target_flags; /* PMV_ACK_* */
	uint16_t covers;      /* requests it ends: seq .. seq + covers - 1
			       * (0 reads as 1); status, profile and mr_gen
			       * are the last one's, the others succeeded */
	uint32_t checksum;    /* over the ack with this field 0 */
	uint32_t mr_gen;      /* the target domain's registration generation */
};

#define PMV_SLOTS 64

/*
 * The remote CQ data of a gated write (PMV_REQ_GATED): magic in the top 16
 * bits, the target endpoint's gate id in the next 16, the request's seq's
 * low 32 bits below.  fi_cq(3): a target completion means the data is
 * available in the target buffer, and a write carrying remote CQ data
 * generates one; the application's own remote CQ data is at most 4 bytes
 * (pmemverbs reports cq_data_size <= 4), so it never carries the magic.
 */
#define PMV_GATE_MAGIC 0xa9e7u

static inline uint64_t pmv_gate_data(uint16_t gate_id, uint64_t seq)
{
	return (uint64_t) PMV_GATE_MAGIC << 48 | (uint64_t) gate_id << 32 |
	       (seq & 0xffffffffu);
}

/* True if data is a gated write's: its gate id and seq into *id, *seq32. */
static inline bool pmv_gate_parse(uint64_t data, uint16_t *id, uint32_t *seq32)
{
	if ((data >> 48) != PMV_GATE_MAGIC)
		return false;
	*id = (uint16_t) (data >> 32);
	*seq32 = (uint32_t) data;
	return true;
}

/* True if 32-bit serial number a is b or after it (RFC 1982). */
static inline bool pmv_seq32_reached(uint32_t a, uint32_t b)
{
	return (int32_t) (a - b) >= 0;
}

/*
 * The profile table, pushed as inject writes of the core's inject size
 * into the PMV_PROFILES_SIZE bytes the peer's inbox keeps for it: a
 * 16-byte header, then count 16-byte entries.  Its checksum (CRC32C)
 * covers those bytes with the checksum field 0: a table still being
 * placed, torn by a newer push, or never written, is not read.
 */
#define PMV_PROFILES_MAX 15
#define PMV_PROFILES_SIZE 256

/* The inbox's parts (layout above): the ack slots of slots acks; from the
 * generation line to the profile table (the line, the read-flush landing
 * words, the probe's, up to the next cache line); the whole inbox. */
#define PMV_ACKS_SIZE(slots) \
	(((slots) * sizeof(struct pmv_ack) + 63) & ~(size_t) 63)
#define PMV_GEN_TO_PROFILES \
	((64 + (PMV_SLOTS + 1) * sizeof(uint64_t) + 63) & ~(size_t) 63)
#define PMV_INBOX_SIZE(slot_size) \
	(PMV_ACKS_SIZE(PMV_SLOTS) + (size_t) PMV_SLOTS * (slot_size) + \
	 PMV_GEN_TO_PROFILES + PMV_PROFILES_SIZE)

struct pmv_profile_entry {
	uint64_t key;
	uint8_t profile;      /* enum fi_pmem_profile, as an ack reports it */
	uint8_t target_flags; /* PMV_ACK_* */
	uint8_t reserved[6];
};

struct pmv_profiles {
	uint32_t checksum;
	uint32_t mr_gen;      /* the sender's registration generation */
	uint8_t count;
	uint8_t reserved[7];
	struct pmv_profile_entry e[PMV_PROFILES_MAX];
};

/*
 * Error codes of commits (a request's ack status and a commit's
 * prov_errno); fi_cq_strerror explains each.
 */
enum {
	PMV_ERR_BASE = 0x504d0000,
	PMV_ERR_NO_KEY,
	PMV_ERR_RANGE,
	PMV_ERR_ACCESS,
	PMV_ERR_MULTI_IOV,
	PMV_ERR_PEER_GONE,
	PMV_ERR_FENCE,
	PMV_ERR_METHOD,
	PMV_ERR_REREGISTERED,
	PMV_ERR_CLOSED,
	PMV_ERR_PEER_TIMEOUT,
	PMV_ERR_PERSIST,
	PMV_ERR_BAD_REQUEST,
	PMV_ERR_SCOPE_LOST,   /* initiator only: an earlier write to the key
			       * was not recorded or its request failed */
	PMV_ERR_LAST,
};

/* What the validator needs to know of the region a request names. */
struct pmv_region {
	uint64_t rma_base;    /* RMA address of its first byte */
	uint64_t len;
	bool remote_write;    /* registered with FI_REMOTE_WRITE */
	bool single_iov;      /* one contiguous range */
};

/* Where a send request's data goes: the extent after the scope's. */
static inline struct pmv_extent *pmv_req_inline(struct pmv_req *req)
{
	return &req->ext[req->nextents];
}

/* The data of a send request, behind its inline extent. */
static inline uint8_t *pmv_req_inline_data(struct pmv_req *req)
{
	return (uint8_t *) (pmv_req_inline(req) + 1);
}

/* pmv_proto.c: pure functions, no libfabric calls (fuzzed). */
uint32_t pmv_checksum(const void *buf, size_t len);
size_t pmv_req_size(const struct pmv_req *req, size_t avail);
size_t pmv_req_encode(struct pmv_req *req, size_t cap);
int pmv_req_decode(const void *slot, size_t avail, uint64_t seq,
		   struct pmv_req *out);
int pmv_req_check(const struct pmv_req *req, const struct pmv_region *r);
void pmv_ack_encode(struct pmv_ack *ack);
bool pmv_ack_decode(const void *slot, uint64_t seq, struct pmv_ack *out);
void pmv_cm_hdr_encode(const struct pmv_cm_hdr *hdr,
		       uint8_t out[PMV_CM_HDR_SIZE]);
bool pmv_cm_hdr_decode(const uint8_t *in, size_t len, struct pmv_cm_hdr *hdr);
unsigned pmv_profiles_fit(size_t cap);
size_t pmv_profiles_encode(struct pmv_profiles *t, size_t cap);
bool pmv_profiles_decode(const void *wire, size_t avail,
			 struct pmv_profiles *out);
unsigned pmv_cm_hdr_version(const uint8_t *in, size_t len);

#endif /* PMV_PROTO_H */
