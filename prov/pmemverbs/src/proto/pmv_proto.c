/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: the wire format's encoder, decoder and validator.
 *
 * Pure functions over bytes: no libfabric calls, no global state, so the
 * fuzzer (test/fuzz) can drive them with any input.  Requests and acks are
 * converted between host order and the wire's little-endian with
 * <endian.h>; slots are checked with CRC32C (Castagnoli, as iSCSI and
 * NVMe/TCP), which ISA-L computes with the SSE4.2 crc32 instruction where
 * the CPU has it.
 */
#include <endian.h>
#include <isa-l/crc.h>
#include <string.h>

#include "pmv_proto.h"

#define PMV_REQ_KNOWN_FLAGS (PMV_REQ_IMMED | PMV_REQ_INLINE | PMV_REQ_FENCE | \
			     PMV_REQ_GATED)

/*
 * CRC32C of a slot, computed with its checksum field 0: ISA-L's
 * crc32_iscsi, seeded and inverted to give the standard value (that of
 * "123456789" is 0xe3069283).  Slots are at most a few hundred bytes.
 */
uint32_t pmv_checksum(const void *buf, size_t len)
{
	return ~crc32_iscsi((unsigned char *) buf, (int) len, 0xffffffffu);
}

/*
 * Bytes a request occupies from its host-order header and (for a send)
 * inline extent; 0 if that is more than avail, the bytes of it readable.
 */
size_t pmv_req_size(const struct pmv_req *req, size_t avail)
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

/* The extents a request carries, its inline one included. */
static unsigned pmv_req_extents(const struct pmv_req *req)
{
	return req->nextents + ((req->flags & PMV_REQ_INLINE) ? 1 : 0);
}

/* Converts a request's header and extents to the wire's order. */
static void pmv_req_to_le(struct pmv_req *req)
{
	unsigned i, n = pmv_req_extents(req);

	for (i = 0; i < n; i++) {
		req->ext[i].addr = htole64(req->ext[i].addr);
		req->ext[i].len = htole64(req->ext[i].len);
	}
	req->seq = htole64(req->seq);
	req->key = htole64(req->key);
	req->data = htole64(req->data);
	req->flags = htole32(req->flags);
	req->nextents = htole16(req->nextents);
	req->fence_back = htole16(req->fence_back);
	req->gen = htole32(req->gen);
}

/* Converts a request's header and extents from the wire's order. */
static void pmv_req_to_host(struct pmv_req *req)
{
	unsigned i, n;

	req->seq = le64toh(req->seq);
	req->key = le64toh(req->key);
	req->data = le64toh(req->data);
	req->flags = le32toh(req->flags);
	req->nextents = le16toh(req->nextents);
	req->fence_back = le16toh(req->fence_back);
	req->gen = le32toh(req->gen);
	n = pmv_req_extents(req);
	for (i = 0; i < n; i++) {
		req->ext[i].addr = le64toh(req->ext[i].addr);
		req->ext[i].len = le64toh(req->ext[i].len);
	}
}

/*
 * Writes the wire image of a host-order request (its checksum field is
 * ignored) in place; returns its size, or 0 if it does not fit in cap.
 */
size_t pmv_req_encode(struct pmv_req *req, size_t cap)
{
	size_t size = pmv_req_size(req, cap);

	if (!size)
		return 0;
	pmv_req_to_le(req);
	req->checksum = 0;
	req->checksum = htole32(pmv_checksum(req, size));
	return size;
}

/* Size of a wire-order request, from its little-endian header. */
static size_t pmv_wire_req_size(const struct pmv_req *wire, size_t avail)
{
	uint16_t n = le16toh(wire->nextents);
	uint32_t flags = le32toh(wire->flags);
	size_t size = sizeof(*wire) + (size_t) n * sizeof(struct pmv_extent);
	uint64_t len;

	if (size > avail)
		return 0;
	if (!(flags & PMV_REQ_INLINE))
		return size;
	size += sizeof(struct pmv_extent);
	if (size > avail)
		return 0;
	len = le64toh(wire->ext[n].len);
	return len > avail - size ? 0 : size + (size_t) len;
}

/*
 * Copies the request for seq out of a slot of avail readable bytes into
 * out (room for avail bytes) in host order.  Returns its size, or 0 if the
 * slot holds no whole, intact request for seq (not yet, or torn).
 */
int pmv_req_decode(const void *slot, size_t avail, uint64_t seq,
		   struct pmv_req *out)
{
	size_t size;
	uint32_t sum;

	if (avail < sizeof(*out))
		return 0;
	memcpy(out, slot, avail);
	if (le64toh(out->seq) != seq)
		return 0;
	size = pmv_wire_req_size(out, avail);
	if (!size)
		return 0;
	sum = le32toh(out->checksum);
	out->checksum = 0;
	if (pmv_checksum(out, size) != sum)
		return 0;
	pmv_req_to_host(out);
	return (int) size;
}

/* True if extent e lies inside region r, without overflow. */
static bool pmv_extent_inside(const struct pmv_region *r,
			      const struct pmv_extent *e)
{
	return e->addr >= r->rma_base && e->len <= r->len &&
	       e->addr - r->rma_base <= r->len - e->len;
}

/*
 * Checks a decoded request against the region its key names (NULL: no
 * such key) before anything touches memory; 0 or a PMV_ERR_* code.
 */
int pmv_req_check(const struct pmv_req *req, const struct pmv_region *r)
{
	unsigned i, n = pmv_req_extents(req);

	if ((req->flags & ~PMV_REQ_KNOWN_FLAGS) ||
	    req->fence_back > PMV_SLOTS ||
	    (req->fence_back && !(req->flags & PMV_REQ_FENCE)))
		return PMV_ERR_BAD_REQUEST;
	if (!r)
		return PMV_ERR_NO_KEY;
	if (!r->remote_write)
		return PMV_ERR_ACCESS;
	if (!r->single_iov)
		return PMV_ERR_MULTI_IOV;
	for (i = 0; i < n; i++)
		if (!pmv_extent_inside(r, &req->ext[i]))
			return PMV_ERR_RANGE;
	return 0;
}

/* Writes an ack's wire image in place, with its checksum. */
void pmv_ack_encode(struct pmv_ack *ack)
{
	ack->seq = htole64(ack->seq);
	ack->status = (int32_t) htole32((uint32_t) ack->status);
	ack->mr_gen = htole32(ack->mr_gen);
	ack->covers = htole16(ack->covers);
	ack->checksum = 0;
	ack->checksum = htole32(pmv_checksum(ack, sizeof(*ack)));
}

/* Copies seq's ack out of a slot in host order; false if not (yet) there. */
bool pmv_ack_decode(const void *slot, uint64_t seq, struct pmv_ack *out)
{
	uint32_t sum;

	memcpy(out, slot, sizeof(*out));
	if (le64toh(out->seq) != seq)
		return false;
	sum = le32toh(out->checksum);
	out->checksum = 0;
	if (pmv_checksum(out, sizeof(*out)) != sum)
		return false;
	out->seq = seq;
	out->status = (int32_t) le32toh((uint32_t) out->status);
	out->mr_gen = le32toh(out->mr_gen);
	out->covers = le16toh(out->covers);
	return true;
}

/* Writes the CM header's 24 bytes. */
void pmv_cm_hdr_encode(const struct pmv_cm_hdr *hdr,
		       uint8_t out[PMV_CM_HDR_SIZE])
{
	uint64_t addr = htole64(hdr->inbox_addr), key = htole64(hdr->inbox_key);

	out[0] = 'P';
	out[1] = 'V';
	out[2] = PMV_PROTO_VERSION;
	out[3] = (uint8_t) ((hdr->has_inbox ? 1 : 0) | (hdr->transport & 3) << 1 |
			    ((hdr->slot_size / 16) & 31) << 3);
	memcpy(out + 4, &addr, 8);
	memcpy(out + 12, &key, 8);
	out[20] = (uint8_t) (hdr->gate_id & 0xff);
	out[21] = (uint8_t) (hdr->gate_id >> 8);
	out[22] = hdr->gated ? 1 : 0;
	out[23] = 0;
}

/* The protocol version of a CM header of any version; 0: not a header. */
unsigned pmv_cm_hdr_version(const uint8_t *in, size_t len)
{
	if (len < PMV_CM_HDR_SIZE || in[0] != 'P' || in[1] != 'V')
		return 0;
	return in[2];
}

/* Reads a CM header of this version; false if the bytes are not one. */
bool pmv_cm_hdr_decode(const uint8_t *in, size_t len, struct pmv_cm_hdr *hdr)
{
	uint64_t addr, key;

	if (pmv_cm_hdr_version(in, len) != PMV_PROTO_VERSION)
		return false;
	memcpy(&addr, in + 4, 8);
	memcpy(&key, in + 12, 8);
	hdr->has_inbox = in[3] & 1;
	hdr->transport = (in[3] >> 1) & 3;
	hdr->slot_size = (uint32_t) (in[3] >> 3) * 16;
	hdr->inbox_addr = le64toh(addr);
	hdr->inbox_key = le64toh(key);
	hdr->gate_id = (uint16_t) (in[20] | in[21] << 8);
	hdr->gated = in[22] & 1;
	return true;
}

/* Entries of a profile table that fit cap bytes. */
unsigned pmv_profiles_fit(size_t cap)
{
	size_t n = cap < 16 ? 0 : (cap - 16) / sizeof(struct pmv_profile_entry);

	return n < PMV_PROFILES_MAX ? (unsigned) n : PMV_PROFILES_MAX;
}

/* Bytes of a table of count entries on the wire. */
static size_t pmv_profiles_bytes(unsigned count)
{
	return 16 + (size_t) count * sizeof(struct pmv_profile_entry);
}

/*
 * Converts a host-order table to the wire in place and sets its checksum
 * (reserved bytes go as they are: the sender zeroes them); the bytes to
 * send, 0 if its entries do not fit cap.
 */
size_t pmv_profiles_encode(struct pmv_profiles *t, size_t cap)
{
	size_t len = pmv_profiles_bytes(t->count);

	if (t->count > pmv_profiles_fit(cap))
		return 0;
	for (unsigned i = 0; i < t->count; i++)
		t->e[i].key = htole64(t->e[i].key);
	t->mr_gen = htole32(t->mr_gen);
	t->checksum = 0;
	t->checksum = htole32(pmv_checksum(t, len));
	return len;
}

/* Copies a table out of avail bytes; false if it is not a whole one. */
bool pmv_profiles_decode(const void *wire, size_t avail,
			 struct pmv_profiles *out)
{
	uint32_t sum;
	size_t len;

	if (avail < 16)
		return false;
	memcpy(out, wire, 16);
	if (out->count > pmv_profiles_fit(avail))
		return false;
	len = pmv_profiles_bytes(out->count);
	memcpy(out, wire, len);
	sum = le32toh(out->checksum);
	out->checksum = 0;
	if (pmv_checksum(out, len) != sum)
		return false;
	out->mr_gen = le32toh(out->mr_gen);
	for (unsigned i = 0; i < out->count; i++)
		out->e[i].key = le64toh(out->e[i].key);
	return true;
}
