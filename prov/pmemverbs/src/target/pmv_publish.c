/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: the profile table a side pushes into its peer's inbox
 * (layout in pmv_proto.h).
 *
 * It says, for the regions a commit can name (FI_REMOTE_WRITE, one range),
 * what the agent's ack would say: the profile and the target flags, in
 * this registration generation.  It goes as inject writes of the core's
 * inject size (a table being placed fails its checksum and is not read),
 * on the connection, when the application reads FI_CONNECTED and after each
 * registration or close, before the application can tell the peer a new
 * key: the peer chooses a key's fastest method for its first commit
 * instead of sending that commit to the agent to learn the profile.
 *
 * A close pushes once the core region is closed, with the new
 * generation.  The table is only a hint for the peer's choice of method:
 * nothing orders these inject writes with the core's own acknowledgements,
 * so no commit completes on it (the peer's read-flushes read the
 * generation word, and its requests carry the generation the target
 * checks).  A push the core refuses leaves the peer a stale hint, which
 * costs it at most a method change; nothing waits for a push.
 */
#include "pmv_target.h"

/* Fills t from the domain's regions, newest first; dom->lock held. */
static void pmv_publish_fill(struct pmv_domain *dom, struct pmv_profiles *t,
			     unsigned max)
{
	uint8_t flags = pmv_params.ddio ? 0 : PMV_ACK_DDIO_OFF;
	struct pmv_mr *mr;
	uint64_t key;

	memset(t, 0, sizeof(*t));
	t->mr_gen = (uint32_t) dom->mr_gen;
	for (mr = dom->mrs; mr && t->count < max; mr = mr->next) {
		key = fi_mr_key(&mr->mr_fid);
		if (!(mr->access & FI_REMOTE_WRITE) || mr->iov_count != 1 ||
		    key == FI_KEY_NOTAVAIL)
			continue;
		t->e[t->count++] = (struct pmv_profile_entry) {
			.key = key, .profile = (uint8_t) mr->persistence.profile,
			.target_flags = flags,
		};
	}
}

/* The table as inject writes, in order; 0 or the core's first refusal. */
static ssize_t pmv_publish_write(struct pmv_ep *ep, const void *t, size_t len)
{
	size_t chunk = pmv_limit(PMV_PROFILES_SIZE, ep->domain->inject_size);
	uint64_t addr = pmv_peer_profiles_addr(&ep->peer);
	ssize_t ret = 0;

	if (pmv_fault(PMV_FAULT_PUSH))
		return -FI_EAGAIN;
	for (size_t off = 0; off < len && !ret; off += chunk)
		ret = fi_inject_write(ep->core, (const char *) t + off,
				      len - off < chunk ? len - off : chunk, 0,
				      addr + off, ep->peer.inbox_key);
	return ret;
}

/*
 * A push failed: the peer keeps an older table, a hint only (its commits
 * prove the generation themselves), so a later push or the peer's acks
 * bring it up to date; said once per endpoint.
 */
static void pmv_publish_failed(struct pmv_ep *ep, ssize_t ret)
{
	if (ep->push_failed++)
		return;
	PMV_INFO(FI_LOG_EP_CTRL, "the profile table was not pushed (%s): "
		 "the peer chooses methods from an older table or learns "
		 "from acknowledgements until a later push goes\n",
		 fi_strerror((int) -ret));
}

/* Pushes this domain's profile table to ep's peer; dom->lock held. */
void pmv_publish_profiles(struct pmv_ep *ep)
{
	struct pmv_profiles t;
	size_t len;
	ssize_t ret;

	if (!pmv_params.push_profiles || !ep->connected ||
	    !ep->peer.has_inbox)
		return;
	pmv_publish_fill(ep->domain, &t, PMV_PROFILES_MAX);
	len = pmv_profiles_encode(&t, PMV_PROFILES_SIZE);
	ret = pmv_publish_write(ep, &t, len);
	if (ret)
		pmv_publish_failed(ep, ret);
}
