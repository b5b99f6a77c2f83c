/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_rdm_test - durable RMA through pmemverbs FI_EP_RDM endpoints
 * (ofi_rxm over pmemverbs MSG), as a target/initiator pair that
 * run_pmem_tests.sh starts like pmv_commit_test (same options).
 *
 * The target registers two FI_RMA_PMEM regions of a MAP_SHARED file and
 * serves one RDM endpoint per peer (-t rdm: one, -t rdm2: two, on PORT and
 * PORT+1); it writes its keys to FILE.keys, prints READY, reads its CQ and
 * checks each FI_IMMED completion against the oracle as it arrives; with
 * -t rdm-close it then closes its region and its endpoint once the
 * initiator has exited.  The
 * initiator writes, commits, fences and flushes through one RDM endpoint
 * and checks every completed commit: every byte written to that peer's key
 * before it was posted is in the oracle (records appended after the byte
 * was posted, before the completion was read), or, for commits that need no
 * agent (byte granularity, read-flush), visible in the target's file.
 * A completion that outran persistence exits 3.  The initiator is in
 * pmv_rdm_test_init.c.
 */
#include <signal.h>
#include <stdio.h>

#include "pmv_rdm_test.h"

const char *g_role = "?";
struct rdm_opt g_opt = { .addr = "127.0.0.1", .gran = "page" };
static struct fid_fabric *g_fab;
struct fid_domain *g_dom;
struct fid_av *g_av;
struct fid_cq *g_cq;
struct fid_ep *g_ep[MAX_PEERS];
fi_addr_t g_peer[MAX_PEERS];
struct pmv_oracle_log *g_log;
const uint8_t *g_tmap; /* the target's file, initiator side */

/* Peers of this test: rdm one, rdm2 two (the target's ports P, P+1). */
int peers(void)
{
	return strcmp(g_opt.test, "rdm2") ? 1 : MAX_PEERS;
}

/* This run's name in verdicts: test-granularity[-method]. */
const char *label(void)
{
	static char buf[96];
	const char *m = getenv("FI_PMEMVERBS_METHOD");

	snprintf(buf, sizeof(buf), "%s-%s%s%s", g_opt.test, g_opt.gran,
		 m ? "-" : "", m ? m : "");
	return buf;
}

void *map_file(const char *path, size_t len, bool rw)
{
	int fd = open(path, rw ? O_RDWR | O_CREAT : O_RDONLY, 0600);
	void *p;

	if (fd < 0 || (rw && ftruncate(fd, (off_t) len)))
		die("opening %s: %s", path, strerror(errno));
	p = mmap(NULL, len, rw ? PROT_READ | PROT_WRITE : PROT_READ,
		 MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		die("mapping %s: %s", path, strerror(errno));
	return p;
}

/* pmemverbs RDM entries with FI_RMA_PMEM for addr:port (+FI_SOURCE). */
struct fi_info *rdm_info(const char *port, uint64_t flags)
{
	struct fi_info *h = fi_allocinfo(), *info = NULL;
	int ret;

	if (!h)
		die("fi_allocinfo failed");
	h->ep_attr->type = FI_EP_RDM;
	h->caps = FI_MSG | FI_RMA | FI_RMA_PMEM;
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				  FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	h->fabric_attr->prov_name = strdup("pmemverbs");
	ret = fi_getinfo(FI_VERSION(1, 17), g_opt.addr, port, flags, h, &info);
	fi_freeinfo(h);
	if (ret)
		die("fi_getinfo(pmemverbs, FI_EP_RDM, FI_RMA_PMEM, %s:%s): %s",
		    g_opt.addr, port, fi_strerror(-ret));
	return info;
}

/* Fabric, domain, CQ and AV of the first entry (once). */
void open_domain(struct fi_info *info)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_DATA,
				      .size = 1024 };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };

	CHECK(fi_fabric(info->fabric_attr, &g_fab, NULL));
	CHECK(fi_domain(g_fab, info, &g_dom, NULL));
	CHECK(fi_cq_open(g_dom, &cq_attr, &g_cq, NULL));
	CHECK(fi_av_open(g_dom, &av_attr, &g_av, NULL));
}

/* An EQ of the pmemverbs fabric is no rxm object: binding it is refused. */
static void check_foreign_bind_refused(struct fid_ep *ep)
{
	struct fi_eq_attr attr = { .size = 16, .wait_obj = FI_WAIT_NONE };
	struct fid_eq *eq;
	int ret;

	CHECK(fi_eq_open(g_fab, &attr, &eq, NULL));
	ret = fi_ep_bind(ep, &eq->fid, 0);
	CHECK(fi_close(&eq->fid));
	if (ret != -FI_EINVAL) {
		printf("FAIL %s/foreign-bind: fi_ep_bind(RDM endpoint, EQ of "
		       "the fabric) returned %d, expected -FI_EINVAL\n",
		       label(), ret);
		exit(1);
	}
	printf("PASS %s/foreign-bind: a pmemverbs EQ bound to the RDM "
	       "endpoint is refused\n", label());
}

struct fid_ep *open_ep(struct fi_info *info)
{
	struct fid_ep *ep;

	CHECK(fi_endpoint(g_dom, info, &ep, NULL));
	if (!strcmp(g_role, "initiator"))
		check_foreign_bind_refused(ep);
	CHECK(fi_ep_bind(ep, &g_cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_ep_bind(ep, &g_av->fid, 0));
	CHECK(fi_enable(ep));
	return ep;
}

void oracle_map(void)
{
	struct stat st;

	if (stat(g_opt.oracle, &st) || (size_t) st.st_size < sizeof(*g_log))
		die("oracle log %s: missing or too small", g_opt.oracle);
	g_log = map_file(g_opt.oracle, (size_t) st.st_size, false);
	if (g_log->magic != PMV_ORACLE_MAGIC)
		die("oracle log %s has no magic", g_opt.oracle);
}

uint64_t oracle_count(void)
{
	return __atomic_load_n(&g_log->count, __ATOMIC_ACQUIRE);
}

/* True if records of key in [from, to) cover every byte of [lo, hi). */
bool oracle_covers(uint64_t key, uint64_t lo, uint64_t hi,
			  uint64_t from, uint64_t to)
{
	bool progress = true;

	while (lo < hi && progress) { /* extend lo by any record over it */
		progress = false;
		for (uint64_t i = from; i < to; i++) {
			const struct pmv_oracle_rec *r = &g_log->rec[i];

			if (__atomic_load_n(&r->valid, __ATOMIC_ACQUIRE) == 1 &&
			    r->key == key && r->addr <= lo &&
			    r->addr + r->len > lo) {
				lo = r->addr + r->len;
				progress = true;
			}
		}
	}
	return lo >= hi;
}

/* One CQ entry (1), or none yet (0); an error entry ends the run. */
ssize_t cq_read_one(struct fi_cq_data_entry *e)
{
	struct fi_cq_err_entry err = { 0 };
	ssize_t n = fi_cq_read(g_cq, e, 1);

	if (n == -FI_EAVAIL) {
		fi_cq_readerr(g_cq, &err, 0);
		die("CQ error: %s", fi_strerror(err.err));
	}
	return n == 1;
}

/* ---- target ---------------------------------------------------------- */

/* Creates the oracle log FI_PMEMVERBS_ORACLE names (empty, its magic). */
static void oracle_create(const char *path)
{
	size_t size = sizeof(*g_log) + (1u << 18) * sizeof(g_log->rec[0]);
	struct pmv_oracle_log *log;

	unlink(path);
	log = map_file(path, size, true);
	__atomic_store_n(&log->magic, PMV_ORACLE_MAGIC, __ATOMIC_RELEASE);
	munmap(log, size);
	g_opt.oracle = path;
}

static unsigned g_immed_seen;

static void target_immed(const struct fi_cq_data_entry *e, const struct keys *k)
{
	uint64_t lo = k->base[0] + e->data * IMMED_LEN;

	if (g_log && !oracle_covers(k->key[0], lo, lo + IMMED_LEN, 0,
				    oracle_count())) {
		printf("FAIL %s/immed: FI_IMMED %" PRIu64 " arrived before "
		       "its data was persisted\n", label(), e->data);
		exit(3);
	}
	g_immed_seen++;
}

/* Reads the CQ until the initiator's DONE (how many FI_IMMED it sent). */
static void target_serve(const struct keys *k)
{
	static uint32_t msg;
	uint32_t done = UINT32_MAX;
	struct fi_cq_data_entry e;
	struct fid_mr *mr;

	CHECK(fi_mr_reg(g_dom, &msg, sizeof(msg), FI_RECV, 0, 100, 0, &mr,
			NULL));
	CHECK(fi_recv(g_ep[0], &msg, sizeof(msg), fi_mr_desc(mr),
		      FI_ADDR_UNSPEC, &msg));
	while (done == UINT32_MAX) {
		if (!cq_read_one(&e))
			continue;
		if (e.flags & FI_REMOTE_CQ_DATA)
			target_immed(&e, k);
		else if (e.op_context == &msg)
			done = msg;
	}
	if (g_immed_seen != done)
		die("target: %u FI_IMMED completions, the initiator sent %u",
		    g_immed_seen, done);
}

/*
 * rdm-close: waits (bounded) until the initiator, whose pid it wrote to
 * FILE.ipid before its DONE, has exited, then closes its region (as
 * fi_pmem_bw's target does: pmemverbs pushes its profile table to the
 * peer, context-less inject writes that fail on the broken connection),
 * registers and closes a spare one 4 times (more pushes: the first may
 * still be taken by the socket) and closes the endpoint, with nothing
 * read in between: those failures are reported during ofi_rxm's fi_close
 * (its flush of the MSG CQ), where a context-less error entry crashed
 * ofi_rxm (libfabric 2.1: 11 of 16 runs before the fix).
 */
static void close_after_peer_exit(struct fid_mr *region, uint8_t *spare)
{
	char path[4096];
	struct fid_mr *mr;
	long pid = 0;
	FILE *f;
	int i;

	snprintf(path, sizeof(path), "%s.ipid", g_opt.file);
	f = fopen(path, "r");
	if (!f || fscanf(f, "%ld", &pid) != 1 || pid <= 0)
		die("reading the initiator's pid from %s", path);
	fclose(f);
	for (i = 0; i < 20000 && !(kill((pid_t) pid, 0) && errno == ESRCH);
	     i++)
		usleep(1000);
	if (i == 20000)
		die("the initiator (pid %ld) did not exit within 20 s", pid);
	CHECK(fi_close(&region->fid));
	for (i = 0; i < 4; i++) { /* more pushes: the first may still go */
		CHECK(fi_mr_reg(g_dom, spare, REG_LEN, FI_REMOTE_WRITE, 0,
				10 + i, FI_RMA_PMEM, &mr, NULL));
		CHECK(fi_close(&mr->fid));
	}
	CHECK(fi_close(&g_ep[0]->fid));
	printf("CLOSED the region and the endpoint after the initiator "
	       "exited\n");
}

static void run_target(void)
{
	uint8_t *map = map_file(g_opt.file, MAX_PEERS * REG_LEN, true);
	struct fid_mr *mr[MAX_PEERS];
	struct keys k;
	bool virt;
	char port[16], path[4096];
	FILE *f;

	if (getenv("FI_PMEMVERBS_ORACLE") && *getenv("FI_PMEMVERBS_ORACLE")) {
		oracle_create(getenv("FI_PMEMVERBS_ORACLE"));
		oracle_map();
	}
	for (int i = 0; i < peers(); i++) {
		struct fi_info *info;

		snprintf(port, sizeof(port), "%d", atoi(g_opt.port) + i);
		info = rdm_info(port, FI_SOURCE);
		if (!i)
			open_domain(info);
		g_ep[i] = open_ep(info);
		virt = info->domain_attr->mr_mode & FI_MR_VIRT_ADDR;
		fi_freeinfo(info);
		CHECK(fi_mr_reg(g_dom, map + i * REG_LEN, REG_LEN,
				FI_REMOTE_WRITE | FI_REMOTE_READ, 0, 1 + i,
				FI_RMA_PMEM, &mr[i], NULL));
		k.key[i] = fi_mr_key(mr[i]);
		k.base[i] = virt ? (uintptr_t)(map + i * REG_LEN) : 0;
	}
	k.pid = (int64_t)getpid();
	snprintf(path, sizeof(path), "%s.keys", g_opt.file);
	f = fopen(path, "w");
	if (!f || fwrite(&k, sizeof(k), 1, f) != 1 || fclose(f))
		die("writing %s.keys", g_opt.file);
	printf("READY\n");
	fflush(stdout);
	target_serve(&k);
	if (!strcmp(g_opt.test, "rdm-close"))
		close_after_peer_exit(mr[0], map + REG_LEN);
}

int main(int argc, char **argv)
{
	int c;

	while ((c = getopt(argc, argv, "r:t:a:P:f:F:o:g:c:E:")) != -1) {
		switch (c) {
		case 'r': g_opt.role = optarg; break;
		case 't': g_opt.test = optarg; break;
		case 'a': g_opt.addr = optarg; break;
		case 'P': g_opt.port = optarg; break;
		case 'f': g_opt.file = optarg; break;
		case 'F': g_opt.tfile = optarg; break;
		case 'o': g_opt.oracle = optarg; break;
		case 'g': g_opt.gran = optarg; break;
		default: break; /* -c, -E: pmv_commit_test's, unused here */
		}
	}
	g_role = g_opt.role ? g_opt.role : "?";
	if (!g_opt.role || !g_opt.test || !g_opt.port ||
	    (!strcmp(g_role, "target") ? !g_opt.file : !g_opt.tfile))
		die("usage: %s -r target|initiator -t rdm|rdm2|rdm-sos|"
		    "rdm-close -P PORT "
		    "[-a ADDR] (-f FILE | -F FILE) [-o ORACLE] [-g GRAN]",
		    argv[0]);
	srand(42);
	alarm(WATCHDOG_S); /* a generous bound: a hang is killed, not waited */
	if (!strcmp(g_role, "target"))
		run_target();
	else
		run_initiator();
	return 0;
}
