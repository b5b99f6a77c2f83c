/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: a pmem endpoint's target state (struct pmv_tgt,
 * pmv_target.h), its references and what the endpoint's own code
 * (pmv_ep.c) asks of it.
 */
#include <stdlib.h>

#include "target/pmv_target.h"

/* Opens ep's target state (with its inbox, before any peer can write). */
int pmv_tgt_open(struct pmv_ep *ep)
{
	struct pmv_tgt *tgt = calloc(1, sizeof(*tgt));

	if (!tgt)
		return -FI_ENOMEM;
	tgt->refs = 1;
	pthread_mutex_init(&tgt->serve_lock, NULL);
	tgt->open_gen = (uint32_t) __atomic_load_n(&ep->domain->mr_gen,
						    __ATOMIC_ACQUIRE);
	ep->tgt = tgt;
	return 0;
}

/* Drops one reference to tgt; the last frees it. */
static void pmv_tgt_put(struct pmv_tgt *tgt)
{
	if (__atomic_sub_fetch(&tgt->refs, 1, __ATOMIC_ACQ_REL))
		return;
	pthread_mutex_destroy(&tgt->serve_lock);
	free(tgt);
}

/*
 * The endpoint closed (no pass serves it any more: pmv_agent_remove waited
 * until its reference was the only one): that reference goes.
 */
void pmv_tgt_close(struct pmv_ep *ep)
{
	struct pmv_tgt *tgt = ep->tgt;

	if (!tgt)
		return;
	ep->tgt = NULL;
	pmv_tgt_put(tgt);
}

/* A pass (agent, hook read, counter wait, push) holds ep's target state:
 * ep's close waits until it lets go (pmv_tgt_release). */
void pmv_tgt_hold(struct pmv_ep *ep)
{
	__atomic_add_fetch(&ep->tgt->refs, 1, __ATOMIC_ACQ_REL);
}

void pmv_tgt_release(struct pmv_ep *ep)
{
	pmv_tgt_put(ep->tgt);
}

/* True if ep is on its domain's agent list (domain lock, or ep's own
 * control calls). */
bool pmv_tgt_in_agent(const struct pmv_ep *ep)
{
	return ep->tgt && ep->tgt->in_agent;
}
