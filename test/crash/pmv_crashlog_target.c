/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_crashlog_target.c - the fabric objects both sides open and the
 * target role that serves the log.
 */
#include "pmv_crashlog.h"

/* ------------------------------------------------------------- fabric */

/* fi_getinfo for a MSG (or RDM) endpoint of prov on addr:port
 * (listening: FI_SOURCE). */
static struct fi_info *query(const char *prov, const char *addr,
			     const char *port, bool listen, bool rdm)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;
	bool pmem = !strcmp(prov, "pmemverbs");
	int ret;

	if (!hints)
		die("out of memory");
	hints->caps = FI_MSG | FI_RMA | (pmem ? FI_RMA_PMEM : 0);
	hints->mode = FI_CONTEXT | FI_CONTEXT2;
	hints->ep_attr->type = rdm ? FI_EP_RDM : FI_EP_MSG;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				      FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->fabric_attr->prov_name = strdup(prov);
	ret = fi_getinfo(CL_FI_VERSION, addr, port, listen ? FI_SOURCE : 0,
			 hints, &info);
	fi_freeinfo(hints);
	if (ret)
		die("fi_getinfo(%s, %s, %s port %s): %s (FI_PROVIDER_PATH?)",
		    prov, rdm ? "FI_EP_RDM" : "FI_EP_MSG", addr, port,
		    fi_strerror(-ret));
	return info;
}

/* Fabric, EQ and domain; FI_PMEM_DOMAIN_OPS on pmemverbs MSG domains
 * (RDM domains do not offer them: fi_pmemverbs(7)). */
void fab_open(struct fab *f, const char *prov, const char *addr,
	      const char *port, bool listen, bool rdm)
{
	struct fi_eq_attr eq_attr = { .size = 64,
				      .wait_obj = FI_WAIT_UNSPEC };

	*f = (struct fab){ .pmem = !strcmp(prov, "pmemverbs") && !rdm,
			   .rdm = rdm };
	f->info = query(prov, addr, port, listen, rdm);
	CHECK(fi_fabric(f->info->fabric_attr, &f->fabric, NULL));
	CHECK(fi_eq_open(f->fabric, &eq_attr, &f->eq, NULL));
	CHECK(fi_domain(f->fabric, f->info, &f->domain, NULL));
	if (f->pmem)
		CHECK(fi_open_ops(&f->domain->fid, FI_PMEM_DOMAIN_OPS, 0,
				  (void **)&f->pmem_ops, NULL));
}

void fab_close(struct fab *f)
{
	fi_close(&f->domain->fid);
	fi_close(&f->eq->fid);
	fi_close(&f->fabric->fid);
	fi_freeinfo(f->info);
}

struct fid_cq *cq_open(const struct fab *f)
{
	struct fi_cq_attr attr = { .size = 256, .format = FI_CQ_FORMAT_CONTEXT,
				   .wait_obj = FI_WAIT_UNSPEC };
	struct fid_cq *cq;

	CHECK(fi_cq_open(f->domain, &attr, &cq, NULL));
	return cq;
}

/* Opens an endpoint on info with cq for both directions and the EQ. */
struct fid_ep *ep_open(const struct fab *f, struct fi_info *info,
		       struct fid_cq *cq)
{
	struct fid_ep *ep;

	CHECK(fi_endpoint(f->domain, info, &ep, NULL));
	CHECK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_ep_bind(ep, &f->eq->fid, 0));
	CHECK(fi_enable(ep));
	return ep;
}

/* One EQ event, or none within ms (0: no wait); err holds an error
 * event's errno. */
bool eq_wait(struct fid_eq *eq, int ms, struct cm_event *ev)
{
	union {
		struct fi_eq_cm_entry cm;
		uint8_t raw[sizeof(struct fi_eq_cm_entry) + CM_BUF];
	} buf;
	struct fi_eq_err_entry err = { 0 };
	ssize_t ret = ms ? fi_eq_sread(eq, &ev->event, &buf, sizeof(buf), ms, 0)
			 : fi_eq_read(eq, &ev->event, &buf, sizeof(buf), 0);

	*ev = (struct cm_event){ .event = ev->event };
	if (ret == -FI_EAVAIL) {
		if (fi_eq_readerr(eq, &err, 0) < 0)
			return false;
		ev->err = err.err ? err.err : FI_EOTHER;
		ev->fid = err.fid;
		return true;
	}
	if (ret < (ssize_t)sizeof(struct fid *))
		return false;
	ev->fid = buf.cm.fid;
	if (ev->event == FI_CONNREQ || ev->event == FI_CONNECTED) {
		ev->info = ev->event == FI_CONNREQ ? buf.cm.info : NULL;
		ev->datalen = (size_t)ret > sizeof(buf.cm) ?
			      (size_t)ret - sizeof(buf.cm) : 0;
		memcpy(ev->data, buf.cm.data, ev->datalen);
	}
	return true;
}

/* Registers len bytes at buf (requested key: random unless fixed). */
struct fid_mr *mr_register(const struct fab *f, void *buf, size_t len,
			   uint64_t access, uint64_t flags, bool fixed)
{
	struct fid_mr *mr = NULL;
	int ret = -FI_ENOKEY;

	for (int i = 0; i < 8 && ret == -FI_ENOKEY; i++)
		ret = fi_mr_reg(f->domain, buf, len, access, 0,
				fixed ? FIXED_KEY : rnd64(), flags, &mr, NULL);
	if (ret)
		die("fi_mr_reg of %zu bytes: %s", len, fi_strerror(-ret));
	return mr;
}

/* The RMA address of buf: its virtual address under FI_MR_VIRT_ADDR. */
static uint64_t rma_base(const struct fab *f, const void *buf)
{
	return (f->info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ?
	       (uint64_t)(uintptr_t)buf : 0;
}

/* ------------------------------------------------------------ target */

static void target_close_conn(struct tconn *c)
{
	if (c->ep)
		fi_close(&c->ep->fid);
	if (c->cq)
		fi_close(&c->cq->fid);
	*c = (struct tconn){ 0 };
}

/* The offer for a new connection: the region and where the log goes on. */
void target_offer(struct target *t, struct offer *o)
{
	walk_prefix(&t->l, &t->w); /* from the end found before: cheap */
	if (t->w.why)
		die("the log became inconsistent: %s", t->w.why);
	*o = (struct offer){
		.magic = htole64(OFFER_MAGIC), .pid = htole64(getpid()),
		.key = htole64(fi_mr_key(t->mr)),
		.addr = htole64(rma_base(&t->f, t->l.map)),
		.region_len = htole64(HEADER_SIZE + t->l.capacity),
		.log_id = htole64(t->l.log_id),
		.capacity = htole64(t->l.capacity),
		.next_seq = htole64(t->w.records + 1),
		.next_pos = htole64(t->w.end), .mode = htole64(t->l.mode),
		.max_record = htole64(t->l.max_record),
		.profile = htole64(t->profile),
	};
}

/* Accepts a connection; its offer goes once it is up (target_on_up). */
static void target_on_connreq(struct target *t, struct cm_event *ev)
{
	int i = 0;

	while (i < MAX_CONNS && t->conns[i].ep)
		i++;
	if (i == MAX_CONNS) {
		say("too many connections: one rejected");
		fi_reject(t->pep, ev->info->handle, NULL, 0);
		fi_freeinfo(ev->info);
		return;
	}
	target_offer(t, &t->offers[i]);
	t->conns[i].cq = cq_open(&t->f);
	t->conns[i].ep = ep_open(&t->f, ev->info, t->conns[i].cq);
	fi_freeinfo(ev->info);
	if (fi_accept(t->conns[i].ep, NULL, 0)) {
		say("fi_accept failed");
		target_close_conn(&t->conns[i]);
	}
}

/* Sends a connection that is up its offer (the CM data of verbs is too
 * small for it); the initiator posted its receive before connecting. */
static void target_on_up(struct target *t, struct tconn *c)
{
	int i = (int)(c - t->conns);
	void *desc = t->offers_mr ? fi_mr_desc(t->offers_mr) : NULL;

	if (fi_send(c->ep, &t->offers[i], sizeof(t->offers[i]), desc, 0,
		    &c->send_ctx))
		say("sending the offer failed");
}

static struct tconn *target_conn_of(struct target *t, const struct fid *fid)
{
	for (int i = 0; i < MAX_CONNS; i++)
		if (t->conns[i].ep && &t->conns[i].ep->fid == fid)
			return &t->conns[i];
	return NULL;
}

/* Handles one EQ event, waiting up to ms for it. */
static void target_poll_eq(struct target *t, int ms)
{
	struct cm_event ev;
	struct tconn *c;

	if (!eq_wait(t->f.eq, ms, &ev))
		return;
	if (!ev.err && ev.event == FI_CONNREQ) {
		target_on_connreq(t, &ev);
		return;
	}
	c = target_conn_of(t, ev.fid);
	if (c && !ev.err && ev.event == FI_CONNECTED)
		target_on_up(t, c);
	else if (c && (ev.err || ev.event == FI_SHUTDOWN))
		target_close_conn(c);
}

/* Reads every connection's CQ (progress; entries are dropped). */
static void target_poll_cqs(struct target *t)
{
	struct fi_cq_entry e[16];
	struct fi_cq_err_entry err;

	for (int i = 0; i < MAX_CONNS; i++) {
		if (!t->conns[i].cq)
			continue;
		if (fi_cq_read(t->conns[i].cq, e, 16) == -FI_EAVAIL) {
			err = (struct fi_cq_err_entry){ 0 };
			fi_cq_readerr(t->conns[i].cq, &err, 0);
		}
	}
}

/* Maps the log, registers it (FI_RMA_PMEM) and listens. */
static void target_setup(struct target *t, const struct opts *o)
{
	const char *why = NULL;

	if (!log_open(&t->l, o->file, o->base, true, &why))
		die("%s: %s (run the init role first)", o->file, why);
	walk_prefix(&t->l, &t->w); /* from what -A found, if it ran */
	if (t->w.why)
		die("%s: inconsistent log: %s", o->file, t->w.why);
	fab_open(&t->f, "pmemverbs", o->addr, o->port, true, o->rdm);
	t->mr = mr_register(&t->f, t->l.map, HEADER_SIZE + t->l.capacity,
			    FI_REMOTE_WRITE | FI_REMOTE_READ, FI_RMA_PMEM,
			    o->fixed_key);
	t->profile = t->f.pmem ? (uint64_t)t->f.pmem_ops->mr_profile(t->mr) :
				 FI_PMEM_PROFILE_UNKNOWN;
	if (t->f.info->domain_attr->mr_mode & FI_MR_LOCAL)
		t->offers_mr = mr_register(&t->f, t->offers, sizeof(t->offers),
					   FI_SEND, 0, false);
	if (o->rdm) {
		target_rdm_listen(t);
		return;
	}
	CHECK(fi_passive_ep(t->f.fabric, t->f.info, &t->pep, NULL));
	CHECK(fi_pep_bind(t->pep, &t->f.eq->fid, 0));
	CHECK(fi_listen(t->pep));
}

/* The target role: serves connections for -t seconds or until killed. */
int role_target(const struct opts *o)
{
	static struct target t;
	int64_t end = deadline_in((int)(o->seconds * 1000));

	if (o->ackfile && verify_log(o, &t.w)) /* recover and verify first */
		return 1;
	fflush(stdout);
	target_setup(&t, o);
	printf("READY pid %d key %016" PRIx64 " profile %s log %016" PRIx64
	       " records %" PRIu64 " end %" PRIu64 "\n", (int)getpid(),
	       fi_mr_key(t.mr), fi_pmem_profile_str(t.profile), t.l.log_id,
	       t.w.records, t.w.end);
	fflush(stdout);
	while (before(end) && o->rdm)
		target_rdm_poll(&t, 5);
	while (before(end) && !o->rdm) {
		target_poll_eq(&t, 5);
		target_poll_cqs(&t);
	}
	for (int i = 0; i < MAX_CONNS; i++)
		target_close_conn(&t.conns[i]);
	if (t.pep)
		fi_close(&t.pep->fid);
	target_rdm_close(&t);
	if (t.offers_mr)
		fi_close(&t.offers_mr->fid);
	fi_close(&t.mr->fid);
	fab_close(&t.f);
	log_unmap(&t.l);
	return 0;
}
