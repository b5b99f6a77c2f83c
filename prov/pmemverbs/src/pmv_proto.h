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
 * Inbox layout: ack slots, then request slots (PMV_SLOTS of each).
 *   initiator -> target agent: struct pmv_req in request slot (seq - 1) % N
 *   target agent -> initiator: struct pmv_ack in ack slot (seq - 1) % N
 * A slot is valid when its checksum matches and its seq is the next one
 * expected; a partly written slot fails the checksum and is read again.
 * All fields are little-endian (both ends are x86-64 or aarch64 hosts).
 */
#ifndef PMV_PROTO_H
#define PMV_PROTO_H

#include <stdint.h>

#define PMV_CM_MAGIC 0x31564d50u /* "PMV1" */
#define PMV_PROTO_VERSION 1

/* Transport of the connection, as the completion meaning differs. */
enum pmv_transport {
	PMV_TRANSPORT_TCP = 1,   /* completion: the requester's stack has it */
	PMV_TRANSPORT_IB = 2,    /* ib/roce: the responder NIC has it */
	PMV_TRANSPORT_IWARP = 3, /* like tcp */
};

#define PMV_CM_HAS_INBOX 0x1

struct pmv_cm_hdr {
	uint32_t magic;
	uint16_t version;
	uint16_t flags;       /* PMV_CM_HAS_INBOX */
	uint64_t inbox_addr;  /* RMA address of the inbox (virtual or offset) */
	uint64_t inbox_key;
	uint32_t slots;       /* request slots (= ack slots) */
	uint32_t slot_size;   /* bytes per request slot */
	uint8_t transport;    /* enum pmv_transport */
	uint8_t pad[7];
};

struct pmv_extent {
	uint64_t addr;        /* RMA address as the initiator names it */
	uint64_t len;
};

#define PMV_REQ_IMMED 0x1     /* raise an FI_REMOTE_CQ_DATA completion */

struct pmv_req {
	uint64_t seq;
	uint64_t key;
	uint64_t data;        /* FI_IMMED completion data */
	uint32_t flags;       /* PMV_REQ_* */
	uint16_t nextents;
	uint16_t reserved;
	uint32_t checksum;    /* over the request with this field 0 */
	uint32_t reserved2;
	struct pmv_extent ext[];
};

struct pmv_ack {
	uint64_t seq;
	int32_t status;       /* 0 or a negative FI_E* code */
	uint8_t profile;      /* enum fi_pmem_profile of the key */
	uint8_t reserved[3];
	uint32_t checksum;    /* over the ack with this field 0 */
	uint32_t reserved2;
};

#define PMV_SLOTS 64

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
