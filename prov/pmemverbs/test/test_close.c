/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Unit tests: a wrapper's close when the core's close fails (fault point
 * FI_PMEMVERBS_FAULT_CLOSE) or must not be tried (an EQ objects are bound
 * to), and the pass-through calls that must not
 * allocate or size the stack by the application: fi_eq_read, fi_trywait.
 * Over the tcp core on 127.0.0.1 in one process (objects_fixture.c).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "objects_fixture.h"

#define REGION_LEN 4096
#define REGION_KEY 0x5151

/* A connected pair of FI_RMA_PMEM endpoints sharing one CQ. */
struct pair {
	struct fid_pep *pep;
	struct fid_cq *cq;
	struct fid_ep *client, *server;
};

/* An endpoint's fi_info without FI_RMA_PMEM: no commits, no serving. */
static void make_plain(struct fi_info *info)
{
	info->caps &= ~FI_RMA_PMEM;
	info->tx_attr->op_flags &= ~FI_COMMIT_COMPLETE;
}

/*
 * The pair up to its server endpoint, opened on the request, not accepted;
 * FI_RMA_PMEM endpoints, or plain ones (pmem: false).
 */
static void request_pair(struct pair *p, bool pmem)
{
	struct { struct fi_eq_cm_entry e; char data[64]; } entry;
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_CONTEXT };
	struct fi_info *info = fi_dupinfo(fx.info);
	char addr[128];
	size_t addrlen = sizeof(addr);

	cr_assert(fx.info->caps & FI_RMA_PMEM, "the fixture needs FI_RMA_PMEM");
	cr_assert_not_null(info);
	if (!pmem)
		make_plain(info);
	p->pep = listen_on_loopback(addr, &addrlen);
	cr_assert_eq(fi_cq_open(fx.domain, &cq_attr, &p->cq, NULL), 0);
	p->client = open_bound_ep(info, p->cq);
	fi_freeinfo(info);
	cr_assert_eq(fi_connect(p->client, addr, NULL, 0), 0);
	cr_assert_eq(read_cm_event(&entry.e, sizeof(entry)), FI_CONNREQ);
	if (!pmem)
		make_plain(entry.e.info);
	p->server = open_bound_ep(entry.e.info, p->cq);
	fi_freeinfo(entry.e.info);
}

/* Accepts a requested pair: FI_CONNECTED on both sides (5 s each). */
static void accept_pair(struct pair *p)
{
	struct { struct fi_eq_cm_entry e; char data[64]; } entry;

	cr_assert_eq(fi_accept(p->server, NULL, 0), 0);
	cr_assert_eq(read_cm_event(&entry.e, sizeof(entry)), FI_CONNECTED);
	cr_assert_eq(read_cm_event(&entry.e, sizeof(entry)), FI_CONNECTED);
}

static void connect_pair(struct pair *p)
{
	request_pair(p, true);
	accept_pair(p);
}

static void close_pair(struct pair *p)
{
	cr_assert_eq(fi_close(&p->client->fid), 0);
	if (p->server)
		cr_assert_eq(fi_close(&p->server->fid), 0);
	cr_assert_eq(fi_close(&p->pep->fid), 0);
	cr_assert_eq(fi_close(&p->cq->fid), 0);
}

/* The server's region for the client's commits, FI_RMA_PMEM. */
static struct fid_mr *register_region(void *mem)
{
	struct fid_mr *mr;

	cr_assert_eq(fi_mr_reg(fx.domain, mem, REGION_LEN, FI_REMOTE_WRITE, 0,
			       REGION_KEY, FI_RMA_PMEM, &mr, NULL), 0);
	return mr;
}

/*
 * Commits 64 bytes from the client into the region at mem and waits (at
 * most about 15 s) for its completion: 0, or the error it completed with.
 */
static int commit_once(struct pair *p, struct fid_mr *mr, void *mem)
{
	static char src[64] = "committed after a failed close";
	struct iovec iov = { .iov_base = src, .iov_len = sizeof(src) };
	struct fi_rma_iov rma = {
		.addr = (fx.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ?
			(uint64_t) (uintptr_t) mem : 0,
		.len = sizeof(src), .key = fi_mr_key(mr) };
	struct fi_msg_rma msg = { .msg_iov = &iov, .iov_count = 1,
				  .rma_iov = &rma, .rma_iov_count = 1,
				  .context = &rma };
	struct fi_cq_err_entry err = { 0 };
	struct fi_cq_entry entry;
	ssize_t ret = -FI_EAGAIN;

	cr_assert_eq(fi_writemsg(p->client, &msg, FI_COMMIT_COMPLETE), 0);
	for (int i = 0; i < 15000 && ret == -FI_EAGAIN; i++) {
		ret = fi_cq_read(p->cq, &entry, 1);
		if (ret == -FI_EAGAIN)
			usleep(1000);
	}
	if (ret == -FI_EAVAIL && fi_cq_readerr(p->cq, &err, 0) == 1)
		return -err.err;
	cr_assert_eq(ret, 1, "no completion of the commit in 15 s: %zd", ret);
	cr_assert_eq(entry.op_context, &rma);
	return 0;
}

/* The core close of the pmv_close_core call nth from now fails. */
static void fail_core_close(int nth)
{
	pmv_fault_reset();
	pmv_params.fault_close = nth;
}

static void no_close_fault(void)
{
	pmv_params.fault_close = 0;
	pmv_params.fault_alloc = 0;
	pmv_fault_reset();
}

static void setup(void)
{
	no_close_fault();
	open_fixture();
	pmv_params.peer_timeout_ms = 3000; /* a request nobody serves */
}

static void teardown(void)
{
	no_close_fault();
	close_fixture();
}

/* A commit, the core refusing to close closing (fi_close gives -FI_EBUSY),
 * then another commit, which must still succeed. */
static void commit_after_refused_close(struct pair *p, struct fid_mr *mr,
				       void *mem, struct fid *closing,
				       const char *whose)
{
	int ret;

	cr_assert_eq(commit_once(p, mr, mem), 0);
	fail_core_close(1);
	cr_assert_eq(fi_close(closing), -FI_EBUSY);
	no_close_fault();
	ret = commit_once(p, mr, mem);
	cr_assert_eq(ret, 0, "a commit after %s failed close completed with "
		     "%d (%s)", whose, ret, fi_strerror(-ret));
}

TestSuite(close, .init = setup, .fini = teardown);

/*
 * A region whose core close failed is still registered: writes still land
 * in it, so the agent must still find it and persist commits to it (it
 * was taken out of the domain's table first, and commits to its key then
 * failed with no such key).
 */
Test(close, a_region_whose_core_close_failed_still_takes_commits)
{
	void *mem = map_temp_file(REGION_LEN);
	struct fid_mr *mr = register_region(mem);
	struct pair p;

	connect_pair(&p);
	commit_after_refused_close(&p, mr, mem, &mr->fid, "the region's");
	cr_assert_eq(memcmp(mem, "committed", 9), 0);
	cr_assert_eq(fi_close(&mr->fid), 0);
	close_pair(&p);
	munmap(mem, REGION_LEN);
}

/*
 * An endpoint whose core close failed is still connected: its peer's
 * commits must still be served (it was taken off the agent and its CQ's
 * hooks first, and the peer's commits then timed out).
 */
Test(close, an_endpoint_whose_core_close_failed_still_serves_its_peer)
{
	void *mem = map_temp_file(REGION_LEN);
	struct fid_mr *mr = register_region(mem);
	struct pair p;

	connect_pair(&p);
	commit_after_refused_close(&p, mr, mem, &p.server->fid,
				   "the endpoint's");
	cr_assert_eq(commit_once(&p, mr, mem), 0);
	close_pair(&p);
	cr_assert_eq(fi_close(&mr->fid), 0);
	munmap(mem, REGION_LEN);
}

/*
 * The inbox's memory stays while its core registration does: a failed
 * close of that registration must not free memory the core (and the
 * peer's writes) may still reach.
 */
Test(close, a_failed_inbox_close_keeps_the_memory_the_core_may_write)
{
	struct pmv_ep ep = { .domain = pmv_container_of(fx.domain,
						       struct pmv_domain,
						       domain_fid) };

	cr_assert_eq(pmv_inbox_open(&ep), 0);
	fail_core_close(1);
	(void) pmv_inbox_close(&ep);
	cr_assert_not_null(ep.inbox.mem, "the inbox memory was freed while "
			   "the core still has it registered");
	no_close_fault();
	cr_assert_eq(pmv_inbox_close(&ep), 0);
	cr_assert_null(ep.inbox.mem);
}

/*
 * An EQ that open objects are bound to refuses to close (-FI_EBUSY) and is
 * left as it was: libfabric 2.1's tcp EQ tore itself down before its own
 * busy check, and the close that came once the endpoints were closed
 * freed it twice (the process aborted in the fixture's teardown).  Events
 * still pass through it after the refusal, and it closes once they are.
 */
Test(close, an_eq_with_bound_objects_refuses_to_close_and_keeps_working)
{
	struct fi_eq_entry in = { .fid = &fx.domain->fid, .context = &fx }, out;
	struct pair p = { 0 };
	uint32_t event;

	connect_pair(&p);
	cr_assert_eq(fi_close(&fx.eq->fid), -FI_EBUSY);
	cr_assert_eq(fi_eq_write(fx.eq, FI_NOTIFY, &in, sizeof(in), 0),
		     (ssize_t) sizeof(in));
	cr_assert_eq(fi_eq_read(fx.eq, &event, &out, sizeof(out), 0),
		     (ssize_t) sizeof(out));
	cr_assert_eq(event, FI_NOTIFY);
	cr_assert_eq(out.context, &fx);
	close_pair(&p);
	/* the fixture's teardown closes the EQ, which must now work */
}

/*
 * A domain with objects open on it refuses to close (-FI_EBUSY) and is
 * left as it was, a registered region alone included: libfabric 2.1's tcp
 * domain unhooks itself from its EQs before its own busy check, and a
 * pair requested before the refusal then never had its second
 * FI_CONNECTED (fi_eq_sread timed out).  The pair is plain: the EQ's
 * reads serve pmem endpoints through their CQs, whose reads progress the
 * core domain too and hid it.  A new pmem pair then still connects and
 * takes a commit; the fixture's teardown closes the domain.
 */
Test(close, a_domain_with_open_objects_refuses_to_close_and_keeps_working)
{
	void *mem = map_temp_file(REGION_LEN);
	struct fid_mr *mr = register_region(mem);
	struct pair plain = { 0 }, p = { 0 };

	cr_assert_eq(fi_close(&fx.domain->fid), -FI_EBUSY,
		     "a domain with a region open closed");
	request_pair(&plain, false);
	cr_assert_eq(fi_close(&fx.domain->fid), -FI_EBUSY);
	accept_pair(&plain);
	close_pair(&plain);
	connect_pair(&p);
	cr_assert_eq(commit_once(&p, mr, mem), 0);
	close_pair(&p);
	cr_assert_eq(fi_close(&mr->fid), 0);
	munmap(mem, REGION_LEN);
	/* the fixture's teardown closes the domain, which must now work */
}

/* An EQ read allocates nothing: it works when memory has run out. */
Test(close, an_eq_read_works_when_no_memory_can_be_allocated)
{
	struct fi_eq_entry in = { .fid = &fx.domain->fid, .context = &fx }, out;
	uint32_t event;

	cr_assert_eq(fi_eq_write(fx.eq, FI_NOTIFY, &in, sizeof(in), 0),
		     (ssize_t) sizeof(in));
	pmv_fault_reset();
	pmv_params.fault_alloc = 1;
	cr_assert_eq(fi_eq_read(fx.eq, &event, &out, sizeof(out), 0),
		     (ssize_t) sizeof(out), "fi_eq_read allocated memory");
	cr_assert_eq(event, FI_NOTIFY);
	cr_assert_eq(out.context, &fx);
}

/*
 * fi_trywait with more fids than a stack could hold pointers for gives
 * the answer of one (it sized a stack array by the count: 2^21 pointers,
 * 16 MiB, overflowed the 8 MiB stack).
 */
Test(close, fi_trywait_takes_any_number_of_fids)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_CONTEXT,
				      .wait_obj = FI_WAIT_FD };
	const int count = 1 << 21;
	struct fid **fids = malloc(count * sizeof(*fids));
	struct fid_cq *cq;
	int one;

	cr_assert_not_null(fids);
	cr_assert_eq(fi_cq_open(fx.domain, &cq_attr, &cq, NULL), 0);
	for (int i = 0; i < count; i++)
		fids[i] = &cq->fid;
	one = fi_trywait(fx.fabric, fids, 1);
	cr_assert_eq(fi_trywait(fx.fabric, fids, count), one);
	free(fids);
	cr_assert_eq(fi_close(&cq->fid), 0);
}
