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
#include "pmv_agent.h"
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
	if (ep->tgt->push_failed++) /* under push_lock */
		return;
	PMV_INFO(FI_LOG_EP_CTRL, "the profile table was not pushed (%s): "
		 "the peer chooses methods from an older table or learns "
		 "from acknowledgements until a later push goes\n",
		 fi_strerror((int) -ret));
}

/* True if ep's peer takes profile tables (connected, with an inbox);
 * dom->lock held. */
bool pmv_publish_wanted(const struct pmv_ep *ep)
{
	return pmv_params.push_profiles && ep->connected &&
	       ep->peer.has_inbox;
}

/* The domain's profile table, encoded into t; its length.  dom->lock held. */
size_t pmv_publish_table(struct pmv_domain *dom, struct pmv_profiles *t)
{
	pmv_publish_fill(dom, t, PMV_PROFILES_MAX);
	return pmv_profiles_encode(t, PMV_PROFILES_SIZE);
}

/* Pushes table t to ep's peer; dom->push_lock held (no other lock). */
void pmv_publish_send(struct pmv_ep *ep, const struct pmv_profiles *t,
		      size_t len)
{
	ssize_t ret = pmv_publish_write(ep, t, len);

	if (ret)
		pmv_publish_failed(ep, ret);
}

/*
 * Pushes this domain's profile table to ep's peer: filled under the
 * domain lock, written after it, under push_lock only.  No lock held.
 */
void pmv_publish_profiles(struct pmv_ep *ep)
{
	struct pmv_domain *dom = ep->domain;
	struct pmv_profiles t;
	size_t len = 0;

	pmv_lock(&dom->push_lock, PMV_LOCK_PUSH);
	pmv_lock(&dom->lock, PMV_LOCK_DOMAIN);
	if (pmv_publish_wanted(ep))
		len = pmv_publish_table(dom, &t);
	pmv_unlock(&dom->lock, PMV_LOCK_DOMAIN);
	if (len)
		pmv_publish_send(ep, &t, len);
	pmv_unlock(&dom->push_lock, PMV_LOCK_PUSH);
}

/* Endpoints a push takes at a time (held, on the stack). */
#define PMV_PUSH_CHUNK 32

/*
 * Where a push goes on in the agent's list: after last (the
 * previous chunk's last endpoint, still held) while it is on the list,
 * else at the head again (the endpoints it was held for are skipped).
 * dom->lock held.
 */
static struct pmv_ep *pmv_push_resume(struct pmv_domain *dom,
				      struct pmv_ep *last)
{
	if (!dom->agent)
		return NULL; /* stopped at unload */
	if (last && last->tgt->in_agent)
		return LIST_NEXT(last, tgt->agent_link);
	return LIST_FIRST(&dom->agent->eps);
}

/*
 * Holds (pmv_tgt_hold: their close waits) into eps the next
 * PMV_PUSH_CHUNK endpoints of the agent's list, from *last on, whose
 * peers take tables and that push number `push' did not hold yet; *last:
 * the last one held (its hold kept for pmv_push_resume), NULL at the
 * list's end.  dom->lock held.
 */
static size_t pmv_agent_hold_pushed(struct pmv_domain *dom, uint64_t push,
				    struct pmv_ep **last, struct pmv_ep **eps)
{
	struct pmv_ep *ep = pmv_push_resume(dom, *last);
	size_t n = 0;

	for (; ep && n < PMV_PUSH_CHUNK; ep = LIST_NEXT(ep, tgt->agent_link)) {
		if (ep->tgt->pushed == push || !pmv_publish_wanted(ep))
			continue;
		ep->tgt->pushed = push;
		pmv_tgt_hold(ep);
		eps[n++] = ep;
	}
	*last = ep && n ? eps[n - 1] : NULL;
	return n;
}

/*
 * The domain's regions changed: every connected endpoint pushes the new
 * profile table to its peer, PMV_PUSH_CHUNK endpoints at a time, held and
 * with the table filled under the domain lock, written after it, under
 * push_lock only (so pushes to a peer stay in order).  No lock held.  A
 * chunk goes on after the previous one's last endpoint (held until then),
 * so the list is walked once, and an endpoint that stays on it is pushed
 * once whatever joins or leaves meanwhile; one that joins may be missed:
 * a table is a hint (pmv_publish.c), and its connection brings one.
 */
void pmv_domain_publish_profiles(struct pmv_domain *dom)
{
	struct pmv_ep *eps[PMV_PUSH_CHUNK], *last = NULL, *held = NULL;
	struct pmv_profiles t;
	size_t n, len = 0;
	uint64_t push;

	pmv_lock(&dom->push_lock, PMV_LOCK_PUSH);
	push = ++dom->pushes;
	do {
		pmv_lock(&dom->lock, PMV_LOCK_DOMAIN);
		n = pmv_agent_hold_pushed(dom, push, &last, eps);
		if (n)
			len = pmv_publish_table(dom, &t);
		pmv_unlock(&dom->lock, PMV_LOCK_DOMAIN);
		if (held) /* the previous chunk's last, kept for resuming */
			pmv_tgt_release(held);
		for (size_t i = 0; i < n; i++) {
			pmv_publish_send(eps[i], &t, len);
			if (eps[i] != last)
				pmv_tgt_release(eps[i]);
		}
		held = last;
	} while (last);
	pmv_unlock(&dom->push_lock, PMV_LOCK_PUSH);
}

/* The connection is established: ep's peer gets the profile table. */
void pmv_ep_connected(struct pmv_ep *ep)
{
	bool in_agent;

	pmv_lock(&ep->domain->lock, PMV_LOCK_DOMAIN);
	ep->connected = true;
	in_agent = ep->tgt->in_agent;
	pmv_unlock(&ep->domain->lock, PMV_LOCK_DOMAIN);
	if (in_agent)
		pmv_publish_profiles(ep);
}
