/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * fi_ext_pmem.h: pmemverbs extensions to libfabric for durable RMA writes
 * to remote persistent memory (the OFA proposal's FI_PMEM, FI_COMMIT,
 * FI_IMMED, FI_FENCE, FI_UNCACHED).  See fi_pmemverbs(7), fi_ext_pmem(3).
 */
#ifndef FI_EXT_PMEM_H
#define FI_EXT_PMEM_H

#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Version of this header's interface; FI_PMEM_EXT_VERSION compares with
 * FI_VERSION(major, minor).  1.1 added the FI_PMEM_ERR_* constants.
 */
#define FI_PMEM_EXT_VERSION_MAJOR 1
#define FI_PMEM_EXT_VERSION_MINOR 1
#define FI_PMEM_EXT_VERSION \
	FI_VERSION(FI_PMEM_EXT_VERSION_MAJOR, FI_PMEM_EXT_VERSION_MINOR)

/*
 * prov_errno of a failed commit's CQ error entry (fi_cq_readerr(3));
 * fi_cq_strerror(3) explains each, fi_ext_pmem(3) lists its err.  Three
 * kinds: fix the call (the request was wrong), commit again (the endpoint
 * works; the data is not known durable: write it again and commit), and
 * reconnect (the endpoint takes no more commits: close it, connect again,
 * write again and commit).  Other prov_errno values are the core's.
 */
#define FI_PMEM_ERR_NO_KEY        0x504d0001 /* fix: no region has the key */
#define FI_PMEM_ERR_RANGE         0x504d0002 /* fix: range outside region */
#define FI_PMEM_ERR_ACCESS        0x504d0003 /* fix: no FI_REMOTE_WRITE */
#define FI_PMEM_ERR_MULTI_IOV     0x504d0004 /* fix: region of several iovs */
#define FI_PMEM_ERR_PEER_GONE     0x504d0005 /* reconnect: connection gone */
#define FI_PMEM_ERR_FENCE         0x504d0006 /* commit again: writes before
						the fence not made durable */
#define FI_PMEM_ERR_METHOD        0x504d0007 /* fix: FI_PMEMVERBS_METHOD */
#define FI_PMEM_ERR_REREGISTERED  0x504d0008 /* commit again: the key's
						region changed meanwhile */
#define FI_PMEM_ERR_CLOSED        0x504d0009 /* reconnect: endpoint closed */
#define FI_PMEM_ERR_PEER_TIMEOUT  0x504d000a /* reconnect: target silent for
						FI_PMEMVERBS_PEER_TIMEOUT_MS */
#define FI_PMEM_ERR_PERSIST       0x504d000b /* commit again: the target's
						msync or flush failed */
#define FI_PMEM_ERR_BAD_REQUEST   0x504d000c /* fix: malformed request (a
						peer of another version?) */
#define FI_PMEM_ERR_SCOPE_LOST    0x504d000d /* commit again: an earlier
						write to the key was not
						recorded (no memory) */

/* True if a commit failed with prov_errno can be written and committed
 * again on the same endpoint. */
static inline int fi_pmem_err_commit_again(int prov_errno)
{
	return prov_errno == FI_PMEM_ERR_FENCE ||
	       prov_errno == FI_PMEM_ERR_REREGISTERED ||
	       prov_errno == FI_PMEM_ERR_PERSIST ||
	       prov_errno == FI_PMEM_ERR_SCOPE_LOST;
}

/* True if a commit failed with prov_errno needs a new connection. */
static inline int fi_pmem_err_reconnect(int prov_errno)
{
	return prov_errno == FI_PMEM_ERR_PEER_GONE ||
	       prov_errno == FI_PMEM_ERR_CLOSED ||
	       prov_errno == FI_PMEM_ERR_PEER_TIMEOUT;
}

/* The proposal's names for the upstream capability and completion level. */
#define FI_PMEM FI_RMA_PMEM
#define FI_COMMIT FI_COMMIT_COMPLETE

/*
 * fi_writemsg flag, with FI_COMMIT: once the commit is durable, also raise
 * a completion at the target carrying msg->data (FI_REMOTE_CQ_DATA).
 * Provider-specific bit; FI_IMMED without FI_COMMIT is -FI_EINVAL.
 */
#define FI_IMMED (1ULL << 60)

/*
 * fi_mr_reg flag: writes into this region should bypass the target's CPU
 * caches where pmemverbs copies the data itself.  A hint.
 */
#define FI_UNCACHED (1ULL << 60)

/* Name for fi_open_ops(&domain->fid, FI_PMEM_DOMAIN_OPS, 0, &ops, NULL). */
#define FI_PMEM_DOMAIN_OPS "pmemverbs_domain_ops_v1"

/* What must happen to bytes in a region, once visible, to make them durable. */
enum fi_pmem_profile {
	FI_PMEM_PROFILE_UNKNOWN = 0, /* not known (yet) */
	FI_PMEM_PROFILE_VOLATILE,    /* no persistence: DRAM, or no FI_RMA_PMEM */
	FI_PMEM_PROFILE_PAGE,        /* page cache: msync needed */
	FI_PMEM_PROFILE_DMP,         /* ADR: CPU cache flush needed */
	FI_PMEM_PROFILE_MHP,         /* eADR: durable once visible */
	FI_PMEM_PROFILE_WSP,         /* durable on arrival, NIC included */
};

/* How pmemverbs makes a commit durable. */
enum fi_pmem_method {
	FI_PMEM_METHOD_NONE = 0,
	FI_PMEM_METHOD_AGENT,      /* commit request to the target's agent */
	FI_PMEM_METHOD_READ_FLUSH, /* an 8-byte fi_read behind the writes */
	FI_PMEM_METHOD_COMPLETION, /* the write's own completion (WSP, ib) */
	FI_PMEM_METHOD_SEND,       /* the data inside the commit request; the
				      target's agent places and persists it */
};

struct pmem2_map; /* libpmem2's (<libpmem2.h>) */

/* Per-endpoint counters of the durability engine. */
struct fi_pmem_ep_counters {
	uint64_t commits;          /* commits completed successfully */
	uint64_t commit_errors;    /* commits completed with an error */
	uint64_t requests_sent;    /* commit requests sent to the peer's agent */
	uint64_t requests_served;  /* commit requests this side's agent served */
	uint64_t bytes_persisted;  /* bytes this side's agent persisted */
	uint64_t flush_ops;        /* flush operations sent without the agent:
				      read-flush reads (a commit's, and a
				      fence's before a fenced commit) and
				      commits made durable by the write's
				      completion or, over tcp, its delivery
				      acknowledgement */
	uint64_t sends;            /* commits whose data travelled inside the
				      request (send method) */
};

struct fi_pmem_ops_domain {
	size_t size;
	/* Name of the core provider this domain is layered on ("verbs", "tcp"). */
	const char *(*core_prov)(struct fid_domain *domain);
	/* Profile of a local region registered on this domain. */
	enum fi_pmem_profile (*mr_profile)(struct fid_mr *mr);
	/* Profile the peer of a connected endpoint reported for a key, in
	 * the profile table it pushed or in an acknowledgement; UNKNOWN
	 * until one of them named it (fi_ext_pmem(3)). */
	enum fi_pmem_profile (*peer_profile)(struct fid_ep *ep, uint64_t key);
	/* Method pmemverbs uses for commits to key over this endpoint. */
	enum fi_pmem_method (*method)(struct fid_ep *ep, uint64_t key);
	/* Largest write that is atomically durable (bytes). */
	size_t (*atomicity_chunk)(struct fid_domain *domain);
	/* Copies the endpoint's counters. */
	int (*ep_counters)(struct fid_ep *ep, struct fi_pmem_ep_counters *out);
	/* Registers len bytes at offset of an application's libpmem2 map as
	 * persistent memory, as fi_mr_reg(domain, address + offset, len,
	 * access, 0, requested_key, FI_RMA_PMEM | flags, mr, context) would,
	 * but with the map's own granularity and libpmem2's persist and
	 * memcpy functions for it (PMDK's rule: CPU flushes only where the
	 * map says so).  The map must outlive the region. */
	int (*mr_reg_pmem2)(struct fid_domain *domain, struct pmem2_map *map,
			    size_t offset, size_t len, uint64_t access,
			    uint64_t requested_key, uint64_t flags,
			    struct fid_mr **mr, void *context);
};

/* Human-readable name of a method ("read_flush", ...). */
static inline const char *fi_pmem_method_str(enum fi_pmem_method m)
{
	static const char *const names[] = {
		"none", "agent", "read_flush", "completion", "send",
	};

	return (unsigned) m < sizeof(names) / sizeof(names[0]) ?
		names[m] : "invalid";
}

/* Human-readable name of a profile ("DMP", ...). */
static inline const char *fi_pmem_profile_str(enum fi_pmem_profile p)
{
	static const char *const names[] = {
		"UNKNOWN", "VOLATILE", "PAGE", "DMP", "MHP", "WSP",
	};

	return (unsigned) p < sizeof(names) / sizeof(names[0]) ?
		names[p] : "INVALID";
}

#ifdef __cplusplus
}
#endif

#endif /* FI_EXT_PMEM_H */
