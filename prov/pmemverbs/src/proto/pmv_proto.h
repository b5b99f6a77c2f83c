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
 * words where this side's read-flush reads land.
 *   initiator -> target agent: struct pmv_req in request slot (seq - 1) % N
 *   target agent -> initiator: struct pmv_ack in ack slot (seq - 1) % N
 * A request of the send method (PMV_REQ_INLINE) carries the commit's data:
 * after its nextents extents comes one more struct pmv_extent naming where
 * the data goes, then the data's bytes; the agent persists the extents
 * first, then places the data and persists it.
 * The registration generation counts the regions the target closed: a
 * profile the initiator cached for a key is valid for one generation.
 * A slot is valid when its checksum matches and its seq is the next one
 * expected; a partly written slot fails the checksum and is read again.
 * All fields are little-endian (both ends are x86-64 or aarch64 hosts).
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
 * The CM header, 20 bytes on the wire (RDMA CM private data is about 56
 * bytes, and ofi_rxm layered on pmemverbs needs room for its own):
 *   0  'P' 'V'
 *   2  version
 *   3  flags: bit 0 inbox present, bits 1-2 transport,
 *      bits 3-7 request slot size / 16
 *   4  inbox address (little-endian 64-bit)
 *  12  inbox key (little-endian 64-bit)
 * The number of slots is fixed by the protocol version (PMV_SLOTS).
 */
#define PMV_PROTO_VERSION 1
#define PMV_CM_HDR_SIZE 20

struct pmv_cm_hdr {
	bool has_inbox;
	uint8_t transport;    /* enum pmv_transport */
	uint32_t slot_size;   /* bytes per request slot, a multiple of 16 */
	uint64_t inbox_addr;  /* RMA address of the inbox (virtual or offset) */
	uint64_t inbox_key;
};

struct pmv_extent {
	uint64_t addr;        /* RMA address as the initiator names it */
	uint64_t len;
};

#define PMV_REQ_IMMED 0x1     /* raise an FI_REMOTE_CQ_DATA completion */
#define PMV_REQ_INLINE 0x2    /* the data follows the extents (send) */
#define PMV_REQ_FENCE 0x4     /* refuse if one of the fence_back requests
				 before this one, to the same key, failed */
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
	uint32_t reserved2;
	struct pmv_extent ext[];
};

struct pmv_ack {
	uint64_t seq;
	int32_t status;       /* 0 or a negative FI_E* code */
	uint8_t profile;      /* enum fi_pmem_profile of the key */
	uint8_t target_flags; /* PMV_ACK_* */
	uint8_t reserved[2];
	uint32_t checksum;    /* over the ack with this field 0 */
	uint32_t mr_gen;      /* the target domain's registration generation */
};

#define PMV_SLOTS 64

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

/*
 * Bytes a request occupies, from its header and (for a send) its inline
 * extent; 0 if that is more than avail, the bytes of it readable.
 */
static inline size_t pmv_req_size(const struct pmv_req *req, size_t avail)
{
	size_t size = sizeof(*req) + (size_t) req->nextents *
					sizeof(struct pmv_extent);

	if (size > avail)
		return 0;
	if (!(req->flags & PMV_REQ_INLINE))
		return size;
	size += sizeof(struct pmv_extent);
	if (size > avail || req->ext[req->nextents].len > avail - size)
		return 0;
	return size + (size_t) req->ext[req->nextents].len;
}

static inline void pmv_put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t) (v >> (8 * i));
}

static inline uint64_t pmv_get_le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

/* Writes the CM header's 20 bytes. */
static inline void pmv_cm_hdr_encode(const struct pmv_cm_hdr *hdr,
				     uint8_t out[PMV_CM_HDR_SIZE])
{
	out[0] = 'P';
	out[1] = 'V';
	out[2] = PMV_PROTO_VERSION;
	out[3] = (uint8_t) ((hdr->has_inbox ? 1 : 0) | (hdr->transport & 3) << 1 |
			    ((hdr->slot_size / 16) & 31) << 3);
	pmv_put_le64(out + 4, hdr->inbox_addr);
	pmv_put_le64(out + 12, hdr->inbox_key);
}

/* Reads a CM header; false if the bytes are not one. */
static inline bool pmv_cm_hdr_decode(const uint8_t *in, size_t len,
				     struct pmv_cm_hdr *hdr)
{
	if (len < PMV_CM_HDR_SIZE || in[0] != 'P' || in[1] != 'V' ||
	    in[2] != PMV_PROTO_VERSION)
		return false;
	hdr->has_inbox = in[3] & 1;
	hdr->transport = (in[3] >> 1) & 3;
	hdr->slot_size = (uint32_t) (in[3] >> 3) * 16;
	hdr->inbox_addr = pmv_get_le64(in + 4);
	hdr->inbox_key = pmv_get_le64(in + 12);
	return true;
}

/* Fletcher-style checksum of a slot, computed with its checksum field 0. */
static inline uint32_t pmv_checksum(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint32_t a = 1, b = 0;
	size_t i;

	for (i = 0; i < len; i++) {
		a = (a + p[i]) % 65521;
		b = (b + a) % 65521;
	}
	return (b << 16) | a;
}

#endif /* PMV_PROTO_H */
