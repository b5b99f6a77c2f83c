/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: the inbox of a pmem endpoint, and the CM header that tells the
 * peer where it is (layout in pmv_proto.h).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "pmv_objects.h"


/* Extents that fit in a request slot. */
unsigned pmv_req_max_extents(uint32_t slot_size)
{
	if (slot_size < sizeof(struct pmv_req) + sizeof(struct pmv_extent))
		return 0;
	return (slot_size - sizeof(struct pmv_req)) / sizeof(struct pmv_extent);
}

/* Bytes of a request this endpoint may send: both sides' slots hold it. */
uint32_t pmv_ep_slot_bytes(const struct pmv_ep *ep)
{
	return ep->peer.slot_size < ep->inbox.slot_size ?
	       ep->peer.slot_size : ep->inbox.slot_size;
}

/*
 * An unpredictable key for an inbox: every connection of a domain can
 * write every region whose key it knows, so a guessable key would let one
 * peer write requests or acks into another connection's inbox.
 */
static uint64_t pmv_inbox_key(void)
{
	uint64_t key;

	if (getrandom(&key, sizeof(key), 0) != sizeof(key)) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		key = ((uint64_t) ts.tv_nsec << 32) ^ (uint64_t) ts.tv_sec ^
		      (uint64_t) (uintptr_t) &key;
	}
	return key;
}

/* Registers an inbox under a fresh random key (a clash: another key). */
static int pmv_inbox_register(struct pmv_domain *dom, struct pmv_inbox *inbox)
{
	int ret = -FI_ENOKEY;

	if (pmv_fault(PMV_FAULT_MR_REG))
		return -FI_ENOMEM;
	for (int tries = 0; tries < 4 && ret == -FI_ENOKEY; tries++)
		ret = fi_mr_reg(dom->core, inbox->mem, inbox->size,
				FI_REMOTE_WRITE | FI_REMOTE_READ | FI_WRITE |
				FI_READ, 0, pmv_inbox_key(), 0, &inbox->mr,
				NULL);
	return ret;
}

/* Request slot size for a core: requests travel as fi_inject_write. */
static uint32_t pmv_slot_size(size_t inject_size)
{
	size_t size = inject_size < 256 ? inject_size : 256;

	return (uint32_t) (size & ~(size_t) 15);
}

int pmv_inbox_open(struct pmv_ep *ep)
{
	struct pmv_domain *dom = ep->domain;
	struct pmv_inbox *inbox = &ep->inbox;
	int ret;

	inbox->slot_size = pmv_slot_size(dom->inject_size);
	if (!pmv_req_max_extents(inbox->slot_size)) {
		PMV_WARN(FI_LOG_EP_CTRL, "core inject size %zu is too small "
			 "for commit requests; FI_RMA_PMEM is unavailable: "
			 "use the tcp or verbs core\n",
			 dom->inject_size);
		return -FI_EOPNOTSUPP;
	}
	/* acks, requests, the generation line, the read-flush landing words,
	 * the probe's landing word, the peer's profile table */
	inbox->size = PMV_INBOX_SIZE(inbox->slot_size);
	if (pmv_fault(PMV_FAULT_ALLOC) ||
	    posix_memalign(&inbox->mem, 4096, inbox->size))
		return -FI_ENOMEM;
	memset(inbox->mem, 0, inbox->size);
	inbox->gen_word = (uint64_t *) ((char *) inbox->mem +
					PMV_ACKS_SIZE(PMV_SLOTS) +
					(size_t) PMV_SLOTS * inbox->slot_size);
	inbox->flush_words = inbox->gen_word + 8;
	inbox->probe_word = inbox->flush_words + PMV_SLOTS;
	inbox->profiles = (char *) inbox->gen_word + PMV_GEN_TO_PROFILES;
	ret = pmv_inbox_register(dom, inbox);
	if (ret) {
		PMV_WARN(FI_LOG_EP_CTRL, "the core refused to register the "
			 "endpoint's commit inbox: %s (%d); the endpoint "
			 "cannot open with FI_RMA_PMEM. Check the core's own "
			 "warning (registration limits, FI_MR_* modes)\n",
			 fi_strerror(-ret), ret);
		free(inbox->mem);
		inbox->mem = NULL;
		return ret;
	}
	inbox->rma_addr = (dom->mr_mode & FI_MR_VIRT_ADDR) ?
			  (uint64_t) (uintptr_t) inbox->mem : 0;
	return 0;
}

/*
 * Closes the inbox's core registration, then frees its memory; if the
 * close fails, the memory stays (the core and the peer's writes may still
 * reach it) and the error is returned.
 */
int pmv_inbox_close(struct pmv_ep *ep)
{
	int ret;

	if (!ep->inbox.mem)
		return 0;
	ret = pmv_close_core(&ep->inbox.mr->fid, "inbox memory region");
	if (ret)
		return ret;
	free(ep->inbox.mem);
	ep->inbox.mem = NULL;
	return 0;
}

struct pmv_ack *pmv_inbox_ack(struct pmv_inbox *inbox, uint64_t seq)
{
	return (struct pmv_ack *) inbox->mem + (seq - 1) % PMV_SLOTS;
}

struct pmv_req *pmv_inbox_req(struct pmv_inbox *inbox, uint64_t seq)
{
	return (struct pmv_req *) ((char *) inbox->mem + PMV_ACKS_SIZE(PMV_SLOTS) +
				   ((seq - 1) % PMV_SLOTS) * inbox->slot_size);
}

uint64_t pmv_peer_ack_addr(const struct pmv_peer *peer, uint64_t seq)
{
	return peer->inbox_addr + ((seq - 1) % peer->slots) * sizeof(struct pmv_ack);
}

uint64_t pmv_peer_req_addr(const struct pmv_peer *peer, uint64_t seq)
{
	return peer->inbox_addr + PMV_ACKS_SIZE(peer->slots) +
	       ((seq - 1) % peer->slots) * peer->slot_size;
}

uint64_t pmv_peer_gen_addr(const struct pmv_peer *peer)
{
	return peer->inbox_addr + PMV_ACKS_SIZE(peer->slots) +
	       (uint64_t) peer->slots * peer->slot_size;
}

uint64_t pmv_peer_profiles_addr(const struct pmv_peer *peer)
{
	return pmv_peer_gen_addr(peer) + PMV_GEN_TO_PROFILES;
}

/* This endpoint's CM header, in wire format. */
static void pmv_cm_hdr_fill(struct pmv_ep *ep, uint8_t out[PMV_CM_HDR_SIZE])
{
	struct pmv_cm_hdr hdr = { .transport = ep->domain->transport };

	if (ep->inbox.mem) {
		hdr.has_inbox = true;
		hdr.inbox_addr = ep->inbox.rma_addr;
		hdr.inbox_key = fi_mr_key(ep->inbox.mr);
		hdr.slot_size = ep->inbox.slot_size;
		hdr.gated = pmv_gate_open(ep);
		hdr.gate_id = ep->gate_id;
	}
	pmv_cm_hdr_encode(&hdr, out);
}

/*
 * Reads a peer's CM header; false if the data carries none.  A header of
 * another protocol version is taken off too, but the peer stays unknown:
 * its slots and checksums are not ours, so commits to it fail.
 */
bool pmv_cm_hdr_parse(const void *data, size_t len, struct pmv_peer *peer)
{
	unsigned version = pmv_cm_hdr_version(data, len);
	struct pmv_cm_hdr hdr;

	if (!version)
		return false;
	memset(peer, 0, sizeof(*peer));
	if (!pmv_cm_hdr_decode(data, len, &hdr)) {
		PMV_WARN(FI_LOG_EP_CTRL, "the peer speaks pmemverbs protocol "
			 "version %u, this side %u: commits to it fail with "
			 "-FI_ENOTCONN; run the same pmemverbs on both sides\n",
			 version, PMV_PROTO_VERSION);
		return true;
	}
	peer->known = true;
	peer->transport = hdr.transport;
	peer->has_inbox = hdr.has_inbox && pmv_req_max_extents(hdr.slot_size);
	peer->inbox_addr = hdr.inbox_addr;
	peer->inbox_key = hdr.inbox_key;
	peer->slots = PMV_SLOTS;
	peer->slot_size = hdr.slot_size;
	peer->gated = hdr.gated;
	peer->gate_id = hdr.gate_id;
	return true;
}

/* Builds CM data: our header, then the application's. Free with free(). */
void *pmv_cm_data_with_hdr(struct pmv_ep *ep, const void *param,
			   size_t paramlen, size_t *total)
{
	uint8_t *buf = malloc(PMV_CM_HDR_SIZE + paramlen);

	if (!buf)
		return NULL;
	pmv_cm_hdr_fill(ep, buf);
	if (paramlen)
		memcpy(buf + PMV_CM_HDR_SIZE, param, paramlen);
	*total = PMV_CM_HDR_SIZE + paramlen;
	return buf;
}
