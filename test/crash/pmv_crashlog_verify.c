/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_crashlog_verify.c - the verify role (every ACKed record in
 * the recovered log), and the learn and stale roles.
 */
#include "pmv_crashlog.h"

static void info_line(const char *name, const char *fmt, ...) PRINTF_LIKE(2, 3);

/* ------------------------------------------------------------ verify */

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return (a > b) - (a < b);
}

/* Sorts the sequence numbers and drops repeats. */
static void acks_unique(struct acks *k)
{
	size_t u = 0;

	if (!k->n)
		return;
	qsort(k->seq, k->n, sizeof(*k->seq), cmp_u64);
	for (size_t i = 0; i < k->n; i++)
		if (!u || k->seq[u - 1] != k->seq[i])
			k->seq[u++] = k->seq[i];
	k->n = u;
}

/* Reads "ACK LOGID SEQ CHK" anywhere in each line; keeps those of log_id. */
static void acks_read(const char *path, uint64_t log_id, struct acks *k)
{
	FILE *fp = fopen(path, "r");
	char line[512], *p;
	unsigned long long id, seq;
	unsigned chk;

	*k = (struct acks){ 0 };
	if (!fp)
		return; /* nothing acknowledged yet */
	while (fgets(line, sizeof(line), fp)) {
		if (!(p = strstr(line, "ACK ")))
			continue;
		k->lines++;
		if (sscanf(p, "ACK %16llx %llu %4x", &id, &seq, &chk) != 3 ||
		    chk != ack_check(id, seq)) {
			k->bad++;
			continue;
		}
		if (id != log_id)
			continue;
		if (k->n == k->cap) {
			k->cap = k->cap ? 2 * k->cap : 4096;
			k->seq = realloc(k->seq, k->cap * sizeof(*k->seq));
			if (!k->seq)
				die("out of memory");
		}
		k->seq[k->n++] = seq;
	}
	fclose(fp);
	acks_unique(k);
}

/* Parses a 16-byte marker given as 32 hex digits. */
static bool marker_parse(const char *hex, unsigned char out[16])
{
	unsigned v;

	if (!hex || strlen(hex) != 32)
		return false;
	for (int i = 0; i < 16; i++) {
		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			return false;
		out[i] = (unsigned char)v;
	}
	return true;
}

/* Whether the 16-byte marker lies anywhere in the mapped log. */
static bool marker_found(const struct log *l, const char *hex)
{
	unsigned char m[16];

	if (!marker_parse(hex, m))
		die("-x takes 32 hex digits");
	return memmem(l->map, HEADER_SIZE + l->capacity, m, 16) != NULL;
}

/* Recovers the log and checks it against the ACK lines: one VERIFY line;
 * the recovered prefix in *found. */
int verify_log(const struct opts *o, struct walk *found)
{
	struct log l;
	struct walk w = { 0 };
	struct acks k;
	const char *why = NULL;
	uint64_t lost = 0, verified = 0;
	bool stale = false;

	if (!log_open(&l, o->file, o->base, false, &why)) {
		printf("VERIFY %s FAIL %s: %s\n", o->name, o->file, why);
		return 1;
	}
	walk_prefix(&l, &w);
	if (!w.why)
		walk_after(&l, &w);
	acks_read(o->ackfile, l.log_id, &k);
	for (size_t i = 0; i < k.n; i++)
		k.seq[i] <= w.records ? verified++ : lost++;
	if (o->marker)
		stale = marker_found(&l, o->marker);
	if (!w.why && lost)
		w.why = "acknowledged records are missing";
	if (!w.why && stale)
		w.why = "a write under the old process's key landed in the file";
	printf("VERIFY %s %s log %016" PRIx64 " %s records %" PRIu64 " acked %zu"
	       " verified %" PRIu64 " lost %" PRIu64 " torn_rejected %d "
	       "unpublished %d beyond %" PRIu64 " end %" PRIu64 " left %" PRIu64
	       " ack_lines %" PRIu64 " bad_lines %" PRIu64 "%s%s\n", o->name,
	       w.why ? "FAIL" : "ok", l.log_id,
	       l.mode == MODE_SINGLETON ? "singleton" : "compound", w.records,
	       k.n, verified, lost, w.torn, w.unpublished, w.beyond, w.end,
	       l.capacity - w.end, k.lines, k.bad, w.why ? " why: " : "",
	       w.why ? w.why : "");
	free(k.seq);
	log_unmap(&l);
	close(l.fd);
	*found = (struct walk){ .records = w.records, .end = w.end };
	return w.why ? 1 : 0;
}

/* Splits "NAME=FILE@BASE" (BASE optional) into a copy of the options. */
static struct opts spec_opts(const struct opts *o, const char *spec)
{
	struct opts one = *o;
	char *copy = strdup(spec), *eq, *at;

	if (!copy || !(eq = strchr(copy, '=')))
		usage();
	*eq = '\0';
	one.name = copy;
	one.file = eq + 1;
	one.base = 0;
	at = strrchr(eq + 1, '@');
	if (at) {
		*at = '\0';
		one.base = number(at + 1, 0, 1ULL << 40);
	}
	return one; /* copy lives until exit */
}

/* The verify role: one log, or every -L log (status 1 if any failed). */
int role_verify(const struct opts *o)
{
	struct walk w;
	struct opts one;
	int failed = 0;

	if (!o->nspecs)
		return verify_log(o, &w);
	for (int i = 0; i < o->nspecs; i++) {
		one = spec_opts(o, o->specs[i]);
		failed |= verify_log(&one, &w);
		fflush(stdout);
	}
	return failed;
}

/* ------------------------------------------------- learn and stale */

/* The pmemverbs CM header (fi_pmemverbs(7), COMMIT PROTOCOL): 'P' 'V',
 * version, flags (bit 0: inbox), inbox address, inbox key. */
static bool inbox_decode(const struct cm_event *ev, struct peer_info *pi)
{
	uint64_t v;

	if (ev->datalen < 20 || ev->data[0] != 'P' || ev->data[1] != 'V' ||
	    !(ev->data[3] & 1))
		return false;
	memcpy(&v, ev->data + 4, 8);
	pi->inbox_addr = le64toh(v);
	memcpy(&v, ev->data + 12, 8);
	pi->inbox_key = le64toh(v);
	return true;
}

/* Connects over the plain tcp core and reads the target's accept. */
static bool plain_connect(const struct opts *o, struct client *c,
			  struct peer_info *pi)
{
	struct offer off;

	if (client_connect(c, "tcp", o->addr, o->port, 10))
		return false;
	if (!inbox_decode(&c->connected, pi))
		die("the accept carried no pmemverbs header");
	off = c->off;
	pi->pid = off.pid;
	pi->key = off.key;
	pi->addr = off.addr;
	pi->log_id = off.log_id;
	return true;
}

/* The learn role: saves what the restart probe will replay. */
int role_learn(const struct opts *o)
{
	struct client c;
	struct peer_info pi;
	FILE *fp;

	if (!plain_connect(o, &c, &pi))
		die("could not connect over tcp to learn the keys");
	client_free(&c);
	fp = fopen(o->infofile, "w");
	if (!fp || fprintf(fp, "%" PRIu64 " %" PRIx64 " %" PRIx64 " %" PRIx64
			   " %" PRIx64 " %" PRIx64 "\n", pi.pid, pi.key,
			   pi.addr, pi.inbox_key, pi.inbox_addr,
			   pi.log_id) < 0 || fclose(fp))
		die("writing %s", o->infofile);
	printf("LEARNED pid %" PRIu64 " region key %016" PRIx64 " inbox key "
	       "%016" PRIx64 "\n", pi.pid, pi.key, pi.inbox_key);
	return 0;
}

/* Reads what the learn role saved. */
static struct peer_info info_read(const char *path)
{
	struct peer_info pi;
	FILE *fp = fopen(path, "r");

	if (!fp || fscanf(fp, "%" SCNu64 " %" SCNx64 " %" SCNx64 " %" SCNx64
			  " %" SCNx64 " %" SCNx64, &pi.pid, &pi.key, &pi.addr,
			  &pi.inbox_key, &pi.inbox_addr, &pi.log_id) != 6)
		die("reading %s", path);
	fclose(fp);
	return pi;
}

/* Prints "INFO name: detail": an outcome shown, not counted. */
static void info_line(const char *name, const char *fmt, ...)
{
	va_list ap;

	printf("INFO %s: ", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

/* Waits (bounded) for ctx's completion: 0, its error, or -FI_ENOTCONN. */
static int wait_op(struct client *c, void *ctx, char *text, size_t len)
{
	int64_t end = deadline_in(STEP_MS);
	struct fi_cq_entry e;
	struct fi_cq_err_entry err = { 0 };
	struct cm_event ev;
	bool gone = false;
	ssize_t n;

	while (before(end)) {
		n = fi_cq_sread(c->cq, &e, 1, NULL, 10);
		if (n == 1 && e.op_context == ctx)
			return 0;
		if (n == -FI_EAVAIL && fi_cq_readerr(c->cq, &err, 0) == 1) {
			snprintf(text, len, "prov_errno %d: %s", err.prov_errno,
				 fi_cq_strerror(c->cq, err.prov_errno,
						err.err_data, NULL, 0));
			if (err.op_context == ctx)
				return -(err.err ? err.err : FI_EOTHER);
		}
		if (eq_wait(c->f.eq, 0, &ev) && (ev.err || ev.event ==
						 FI_SHUTDOWN))
			gone = true; /* the op's own completion still comes */
	}
	snprintf(text, len, "no completion within %d s%s", STEP_MS / 1000,
		 gone ? " (connection gone)" : "");
	return -FI_ETIMEDOUT;
}

/* One write on a fresh connection of prov; its outcome (0: applied). */
static int probe_write(const struct opts *o, const char *prov, uint64_t addr,
		       uint64_t key, uint64_t flags, const unsigned char *data,
		       char *text, size_t tlen)
{
	static struct fi_context2 ctx;
	static unsigned char buf[64];
	struct client c;
	struct fid_mr *mr = NULL;
	struct iovec iov = { .iov_base = buf, .iov_len = 16 };
	struct fi_rma_iov rma = { .addr = addr, .len = 16, .key = key };
	void *desc = NULL;
	struct fi_msg_rma msg = { .msg_iov = &iov, .desc = &desc,
				  .iov_count = 1, .rma_iov = &rma,
				  .rma_iov_count = 1, .context = &ctx };
	ssize_t ret;

	memcpy(buf, data, 16);
	snprintf(text, tlen, "-");
	if (client_connect(&c, prov, o->addr, o->port, 10))
		die("connecting over %s", prov);
	if (c.f.info->domain_attr->mr_mode & FI_MR_LOCAL) {
		mr = mr_register(&c.f, buf, sizeof(buf), FI_WRITE, 0, false);
		desc = fi_mr_desc(mr);
	}
	ret = fi_writemsg(c.ep, &msg, flags);
	if (ret)
		snprintf(text, tlen, "fi_writemsg returned %s",
			 fi_strerror((int)-ret));
	else
		ret = wait_op(&c, &ctx, text, tlen);
	if (ret != -FI_ETIMEDOUT) { /* else the core may still hold ctx */
		client_close(&c);
		if (mr)
			fi_close(&mr->fid);
		client_free(&c);
	}
	return (int)ret;
}

/* Judges a write with an old key: refused (PASS) or applied. */
static void judge_stale(const struct opts *o, const char *name, int ret,
			const char *text)
{
	if (ret && ret != -FI_ETIMEDOUT) {
		verdict(true, name, "refused with %s (%s)",
			fi_strerror(-ret), text);
		return;
	}
	if (!ret && o->expect_accepted) {
		info_line(name, "applied: with the same requested key in both "
			  "processes the core cannot tell the old process's "
			  "key from the new one's");
		return;
	}
	verdict(false, name, ret ? "no outcome: %s" : "the write under the old "
		"process's key was applied%s", text);
}

/* The stale role: the restarted target must refuse the old process's
 * keys, and commits under its own must work. */
int role_stale(const struct opts *o)
{
	struct peer_info old = info_read(o->infofile), now;
	unsigned char marker[16], probe[16];
	struct client c;
	char text[200];
	int ret;

	if (!marker_parse(o->marker, marker))
		die("stale needs -x MARKER (32 hex digits)");
	memset(probe, 0x5a, sizeof(probe));
	if (!plain_connect(o, &c, &now))
		die("the new target does not accept connections");
	client_free(&c);
	verdict(now.pid != old.pid && now.log_id == old.log_id,
		"restart-accepts", "a new target process (pid %" PRIu64 ", was %"
		PRIu64 ") serves the same log %016" PRIx64, now.pid, old.pid,
		now.log_id);
	if (now.key != old.key)
		verdict(true, "restart-region-key", "new region key %016" PRIx64
			", old %016" PRIx64, now.key, old.key);
	else if (o->expect_accepted)
		info_line("restart-region-key", "the new region key equals the "
			  "old one (%016" PRIx64 "): fixed keys", now.key);
	else
		verdict(false, "restart-region-key", "the new region key equals "
			"the old one (%016" PRIx64 ")", now.key);
	verdict(now.inbox_key != old.inbox_key, "restart-inbox-key",
		"new inbox key %016" PRIx64 ", old %016" PRIx64, now.inbox_key,
		old.inbox_key);
	ret = probe_write(o, "tcp", old.addr + SCRATCH_OFF + 64, old.key,
			  FI_DELIVERY_COMPLETE | FI_COMPLETION, marker, text,
			  sizeof(text));
	judge_stale(o, "restart-stale-region-key-write", ret, text);
	ret = probe_write(o, "tcp", old.inbox_addr, old.inbox_key,
			  FI_DELIVERY_COMPLETE | FI_COMPLETION, marker, text,
			  sizeof(text));
	judge_stale(o, "restart-stale-inbox-write", ret, text);
	ret = probe_write(o, "pmemverbs", old.addr + SCRATCH_OFF + 64, old.key,
			  FI_COMMIT_COMPLETE | FI_COMPLETION, marker, text,
			  sizeof(text));
	judge_stale(o, "restart-stale-region-key-commit", ret, text);
	ret = probe_write(o, "pmemverbs", now.addr + SCRATCH_OFF, now.key,
			  FI_COMMIT_COMPLETE | FI_COMPLETION, probe, text,
			  sizeof(text));
	verdict(ret == 0, "restart-new-key-commit", "a commit with the new "
		"process's key on a new connection: %s", ret ? text : "durable");
	return g_failed ? 1 : 0;
}
