/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_crashlog_rdm.c - the log through FI_EP_RDM endpoints (-e rdm,
 * pmemverbs;ofi_rxm): the target's endpoint, which answers each
 * initiator's hello with its offer, and the initiator's side (the
 * target's AV entry, the hello, the offer).  What an RDM application does:
 * the target learns the initiator's address from a message, never from a
 * connection.
 */
#include "pmv_crashlog.h"

/* An endpoint on info bound to cq (both directions) and av. */
static struct fid_ep *rdm_ep_open(const struct fab *f, struct fid_cq *cq,
				  struct fid_av *av)
{
	struct fid_ep *ep;

	CHECK(fi_endpoint(f->domain, f->info, &ep, NULL));
	CHECK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_ep_bind(ep, &av->fid, 0));
	CHECK(fi_enable(ep));
	return ep;
}

static struct fid_av *rdm_av_open(const struct fab *f)
{
	struct fi_av_attr attr = { .type = FI_AV_TABLE };
	struct fid_av *av;

	CHECK(fi_av_open(f->domain, &attr, &av, NULL));
	return av;
}

/* ------------------------------------------------------------ target */

static void target_rdm_post_hello(struct target *t, int i)
{
	void *desc = t->hellos_mr ? fi_mr_desc(t->hellos_mr) : NULL;

	CHECK(fi_recv(t->rdm_ep, &t->hellos[i], sizeof(t->hellos[i]), desc,
		      FI_ADDR_UNSPEC, &t->hello_ctx[i]));
}

/* The RDM endpoint on ADDR:PORT (FI_SOURCE), receives posted for hellos. */
void target_rdm_listen(struct target *t)
{
	t->rdm_cq = cq_open(&t->f);
	t->av = rdm_av_open(&t->f);
	t->rdm_ep = rdm_ep_open(&t->f, t->rdm_cq, t->av);
	if (t->f.info->domain_attr->mr_mode & FI_MR_LOCAL)
		t->hellos_mr = mr_register(&t->f, t->hellos, sizeof(t->hellos),
					   FI_RECV, 0, false);
	for (int i = 0; i < RDM_RECVS; i++)
		target_rdm_post_hello(t, i);
}

/* A hello arrived: the initiator's address into the AV, the offer to it. */
static void target_rdm_on_hello(struct target *t, int i)
{
	const struct hello *h = &t->hellos[i];
	unsigned k = t->next_offer++ % MAX_CONNS;
	void *desc = t->offers_mr ? fi_mr_desc(t->offers_mr) : NULL;
	fi_addr_t peer;
	ssize_t ret;

	if (le64toh(h->magic) != HELLO_MAGIC ||
	    le64toh(h->namelen) > sizeof(h->name) ||
	    fi_av_insert(t->av, h->name, 1, &peer, 0, NULL) != 1) {
		say("a message that is no hello, or an address the AV refused");
		return;
	}
	target_offer(t, &t->offers[k]);
	for (int tries = 0; tries < 1000; tries++) { /* bounded: EAGAIN */
		ret = fi_send(t->rdm_ep, &t->offers[k], sizeof(t->offers[k]),
			      desc, peer, &t->offer_ctx[k]);
		if (ret != -FI_EAGAIN)
			break;
		fi_cq_read(t->rdm_cq, NULL, 0);
	}
	if (ret)
		say("sending the offer failed: %s", fi_strerror((int)-ret));
}

/* Reads the CQ (waiting up to ms): hellos answered, the rest dropped. */
void target_rdm_poll(struct target *t, int ms)
{
	struct fi_cq_entry e;
	struct fi_cq_err_entry err = { 0 };
	ssize_t n = fi_cq_sread(t->rdm_cq, &e, 1, NULL, ms);

	if (n == -FI_EAVAIL) {
		fi_cq_readerr(t->rdm_cq, &err, 0);
		return; /* a send to an initiator that went away */
	}
	for (int i = 0; n == 1 && i < RDM_RECVS; i++)
		if (e.op_context == &t->hello_ctx[i]) {
			target_rdm_on_hello(t, i);
			target_rdm_post_hello(t, i);
		}
}

void target_rdm_close(struct target *t)
{
	if (t->rdm_ep)
		fi_close(&t->rdm_ep->fid);
	if (t->av)
		fi_close(&t->av->fid);
	if (t->rdm_cq)
		fi_close(&t->rdm_cq->fid);
	if (t->hellos_mr)
		fi_close(&t->hellos_mr->fid);
}

/* --------------------------------------------------------- initiator */

/* The hello: this endpoint's address (fi_getname), little-endian sizes. */
static void client_rdm_name(struct client *c)
{
	size_t len = sizeof(c->hello.name);

	CHECK(fi_getname(&c->ep->fid, c->hello.name, &len));
	c->hello.magic = htole64(HELLO_MAGIC);
	c->hello.namelen = htole64(len);
}

/* Endpoint, AV and the target's entry in it; a receive for the offer. */
static void client_rdm_open(struct client *c)
{
	void *desc = c->wire_mr ? fi_mr_desc(c->wire_mr) : NULL;

	c->av = rdm_av_open(&c->f);
	c->ep = rdm_ep_open(&c->f, c->cq, c->av);
	if (fi_av_insert(c->av, c->f.info->dest_addr, 1, &c->peer, 0,
			 NULL) != 1)
		die("fi_av_insert of the target's address failed");
	client_rdm_name(c);
	CHECK(fi_recv(c->ep, &c->wire, sizeof(c->wire), desc, FI_ADDR_UNSPEC,
		      &c->recv_ctx));
}

/* One hello and the wait (bounded) for the offer; an error completion of
 * the hello (nobody listens yet) is returned as it is. */
static int client_rdm_try(struct client *c)
{
	void *desc = c->hello_mr ? fi_mr_desc(c->hello_mr) : NULL;
	ssize_t ret;

	do
		ret = fi_send(c->ep, &c->hello, sizeof(c->hello), desc,
			      c->peer, &c->hello_ctx);
	while (ret == -FI_EAGAIN && fi_cq_read(c->cq, NULL, 0) <= 0);
	if (ret)
		return (int)ret;
	return client_offer(c, deadline_in(STEP_MS));
}

/* Hellos until an offer comes, for up to seconds.  After REOPEN_TRIES
 * failed hellos the endpoint and its AV entry are opened anew, as an RDM
 * application would if ofi_rxm kept failing toward the peer's address. */
static int client_rdm_hellos(struct client *c, long seconds)
{
	enum { REOPEN_TRIES = 40 };
	int64_t end = deadline_in((int)(seconds * 1000));
	int ret, tries = 0;

	for (;;) {
		ret = client_rdm_try(c);
		if (!ret || !before(end))
			return ret;
		if (++tries % REOPEN_TRIES == 0) {
			say("%d hellos failed (%s): a new endpoint and AV entry",
			    tries, fi_strerror(-ret));
			client_close(c);
			c->cq = cq_open(&c->f);
			client_rdm_open(c);
		}
		usleep(50 * 1000);
	}
}

/* Opens an RDM endpoint, puts the target (addr:port) in its AV and sends
 * hellos until the target's offer comes, for up to seconds. */
int client_connect_rdm(struct client *c, const char *addr, const char *port,
		       long seconds)
{
	*c = (struct client){ 0 };
	fab_open(&c->f, "pmemverbs", addr, port, false, true);
	if (c->f.info->domain_attr->mr_mode & FI_MR_LOCAL) {
		c->hello_mr = mr_register(&c->f, &c->hello, sizeof(c->hello),
					  FI_SEND, 0, false);
		c->wire_mr = mr_register(&c->f, &c->wire, sizeof(c->wire),
					 FI_RECV, 0, false);
	}
	c->cq = cq_open(&c->f);
	client_rdm_open(c);
	return client_rdm_hellos(c, seconds);
}

/* After the target died: the next process's offer, through the same
 * endpoint and AV entry first (ofi_rxm connects again on the hello). */
int client_rdm_reoffer(struct client *c, long seconds)
{
	void *desc = c->wire_mr ? fi_mr_desc(c->wire_mr) : NULL;

	CHECK(fi_recv(c->ep, &c->wire, sizeof(c->wire), desc, FI_ADDR_UNSPEC,
		      &c->recv_ctx));
	return client_rdm_hellos(c, seconds);
}
