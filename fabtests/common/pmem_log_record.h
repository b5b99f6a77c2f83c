/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The record format of a RemoteLog-style log, shared by fi_pmem_remotelog
 * (benchmark) and test/crash/pmv_crashlog (crash and power-cut tests): a
 * record's payload bytes are a function of (log id, seq, offset), and its
 * checksum (CRC32C, ISA-L's crc32_iscsi) covers the log id, seq, length and payload, so
 * that a reader can tell an intact record from a torn or stale one.
 */
#ifndef PMEM_LOG_RECORD_H
#define PMEM_LOG_RECORD_H

#include <endian.h>
#include <isa-l/crc.h>
#include <stdint.h>
#include <string.h>

/* CRC32C of buf, continuing crc (start with 0). */
static inline uint32_t log_crc(uint32_t crc, const void *buf, size_t len)
{
	return ~crc32_iscsi((unsigned char *) buf, (int) len, ~crc);
}

/* A 64-bit mixer (splitmix64's finaliser). */
static inline uint64_t mix64(uint64_t x)
{
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* The len payload bytes of record seq of log log_id. */
static inline void fill_payload(unsigned char *p, uint64_t log_id,
				uint64_t seq, size_t len)
{
	for (size_t i = 0; i < len; i += 8) {
		uint64_t w = mix64(log_id ^ (seq * 0x9e3779b97f4a7c15ULL) ^ i);

		memcpy(p + i, &w, len - i < 8 ? len - i : 8);
	}
}

/* The checksum of record seq: log id, seq, length, payload. */
static inline uint32_t record_crc(uint64_t log_id, uint64_t seq,
				  uint32_t len, const void *payload)
{
	unsigned char head[20];
	uint64_t id = htole64(log_id), s = htole64(seq);
	uint32_t l = htole32(len);

	memcpy(head, &id, 8);
	memcpy(head + 8, &s, 8);
	memcpy(head + 16, &l, 4);
	return log_crc(log_crc(0, head, sizeof(head)), payload, len);
}

#endif /* PMEM_LOG_RECORD_H */
