/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * fi_pmem_remotelog: the initiator (see fi_pmem_remotelog.c): appends
 * records to the target's log and measures each append.
 */
#include "fi_pmem_remotelog.h"

/* ----------------------------------------------------------- initiator */

struct client {
	const struct options *opts;
	struct pm_conn *conn;
	struct pm_region region;
	uint64_t log_id;
	uint64_t capacity;
	uint64_t pos; /* log bytes appended */
	uint64_t seq; /* last appended */
	struct fi_context2 ctx[2];
	uint64_t *tail_buf;
};

uint64_t log_capacity(const struct options *opts)
{
	uint64_t cap = 0;
	int i;

	for (i = 0; i < opts->nsizes; i++)
		cap += (uint64_t) (opts->appends + opts->warmup) *
		       record_space(opts->sizes[i] - REC_HDR_SIZE);
	return pm_round_up(cap, 4096);
}

static ssize_t post_with_retry(struct client *c, const void *buf, size_t len,
			       uint64_t off, uint64_t flags, void *ctx,
			       int64_t deadline)
{
	ssize_t ret;

	while ((ret = pm_writemsg(c->conn, buf, len, c->region.addr + off,
				  c->region.key, 0, flags, ctx)) ==
	       -FI_EAGAIN && !pm_past(deadline))
		fi_cq_read(c->conn->tx_cq, NULL, 0); /* progress */
	return ret;
}

/* Waits for n completions (contexts ctx[0..n-1], each once). */
static int wait_completions(struct client *c, int n, int64_t deadline)
{
	struct fi_cq_data_entry e;
	bool seen[2] = { false, false };
	long slot;
	ssize_t ret;
	int got = 0;

	while (got < n) {
		ret = fi_cq_read(c->conn->tx_cq, &e, 1);
		if (ret == -FI_EAGAIN) {
			if (pm_past(deadline)) {
				pm_complain("append: timed out");
				return -FI_ETIMEDOUT;
			}
			continue;
		}
		if (ret == -FI_EAVAIL)
			return pm_report_cq_error(c->conn->tx_cq, "append");
		if (ret < 0)
			return pm_check(ret, "fi_cq_read");
		slot = (struct fi_context2 *) e.op_context - c->ctx;
		if (slot < 0 || slot >= n || seen[slot]) {
			pm_complain("append: unexpected completion");
			return -FI_EOTHER;
		}
		seen[slot] = true;
		got++;
	}
	return 0;
}

/* One durable append of the record built in src; its time in *elapsed. */
static int append(struct client *c, uint64_t space, int64_t *elapsed)
{
	int64_t start = pm_now_ns(), deadline = start + PM_OP_TIMEOUT_NS;
	uint64_t off = HEADER_SIZE + c->pos;
	bool compound = c->opts->mode == MODE_COMPOUND;
	ssize_t ret;

	ret = post_with_retry(c, c->conn->src, space, off,
			      FI_COMMIT_COMPLETE | FI_COMPLETION, &c->ctx[0],
			      deadline);
	if (ret)
		return pm_check(ret, "posting the record");
	if (compound) {
		*c->tail_buf = htole64(c->pos + space);
		ret = post_with_retry(c, c->tail_buf, sizeof(*c->tail_buf),
				      TAIL_OFFSET, FI_FENCE |
				      FI_COMMIT_COMPLETE | FI_COMPLETION,
				      &c->ctx[1], deadline);
		if (ret) {
			pm_check(ret, "posting the tail pointer");
			wait_completions(c, 1, deadline);
			return (int) ret;
		}
	}
	ret = wait_completions(c, compound ? 2 : 1, deadline);
	*elapsed = pm_now_ns() - start;
	if (!ret) {
		c->pos += space;
		c->seq++;
	}
	return (int) ret;
}

static void print_header(const struct options *opts)
{
	if (opts->csv)
		printf("provider,profile,mode,size,appends,p50_us,p99_us,"
		       "max_us,mean_us,appends_per_s\n");
	else
		printf("%-10s %-8s %-10s %7s %8s %9s %9s %9s %9s %11s\n",
		       "provider", "profile", "mode", "size", "appends",
		       "p50_us", "p99_us", "max_us", "mean_us", "appends/s");
}

static int measure_size(struct client *c, size_t size, int64_t *samples)
{
	const struct options *opts = c->opts;
	uint32_t payload = (uint32_t) (size - REC_HDR_SIZE);
	long total = opts->warmup + opts->appends, i;
	int64_t start = 0, elapsed = 0;
	struct pm_stats s;
	uint64_t space;
	int ret;

	for (i = 0; i < total; i++) {
		if (i == opts->warmup)
			start = pm_now_ns();
		space = build_record((unsigned char *) c->conn->src, c->log_id,
				     c->seq + 1, payload);
		ret = append(c, space, &elapsed);
		if (ret) {
			pm_complain("append of record %" PRIu64 " (%zu bytes) "
				    "failed", c->seq + 1, size);
			return ret;
		}
		if (i >= opts->warmup)
			samples[i - opts->warmup] = elapsed;
	}
	elapsed = pm_now_ns() - start;
	pm_summarize(samples, opts->appends, &s);
	printf(opts->csv ? "%s,%s,%s,%zu,%ld,%.2f,%.2f,%.2f,%.2f,%.1f\n" :
	       "%-10s %-8s %-10s %7zu %8ld %9.2f %9.2f %9.2f %9.2f %11.1f\n",
	       opts->prov, c->region.profile, mode_name(opts->mode), size,
	       opts->appends, s.p50_us, s.p99_us, s.max_us, s.mean_us,
	       (double) opts->appends * 1e9 / (double) elapsed);
	fflush(stdout);
	return 0;
}

static size_t largest_size(const struct options *opts)
{
	size_t max = 0;
	int i;

	for (i = 0; i < opts->nsizes; i++)
		if (opts->sizes[i] > max)
			max = opts->sizes[i];
	return max;
}

int run_initiator(const struct options *opts)
{
	struct pm_fabric res = { 0 };
	struct pm_conn conn = { 0 };
	struct client c = { .opts = opts };
	size_t rma_max = pm_round_up(largest_size(opts), PM_LINE_SIZE) +
			 PM_LINE_SIZE;
	int64_t *samples = calloc((size_t) opts->appends, sizeof(*samples));
	struct setup_msg setup;
	int ret = samples ? 0 : pm_check(-FI_ENOMEM, "allocating samples");
	int i;

	c.capacity = log_capacity(opts);
	c.log_id = mix64((uint64_t) pm_now_ns() ^ ((uint64_t) getpid() << 32));
	setup = (struct setup_msg) {
		.magic = htole64(SETUP_MAGIC), .mode = htole64(opts->mode),
		.log_id = htole64(c.log_id), .capacity = htole64(c.capacity),
	};
	if (!ret)
		ret = pm_open_fabric(opts->prov, opts->server, opts->port, &res);
	if (!ret)
		ret = pm_connect(&res, opts->server, opts->port, rma_max, 16,
				 &conn);
	if (!ret)
		ret = pm_send_ctrl(&conn, &setup, sizeof(setup),
				   "sending the log's parameters");
	if (!ret)
		ret = pm_receive_region(&conn, &c.region);
	if (!ret && c.region.len < HEADER_SIZE + c.capacity) {
		pm_complain("the target's region is too small");
		ret = -FI_EINVAL;
	}
	if (!ret) {
		pm_say("%s to %s port %s: %s log of %" PRIu64 " bytes, "
		       "profile %s", opts->prov, opts->server, opts->port,
		       mode_name(opts->mode), c.capacity, c.region.profile);
		c.conn = &conn;
		c.tail_buf = (uint64_t *) (conn.src + rma_max - PM_LINE_SIZE);
		print_header(opts);
		for (i = 0; !ret && i < opts->nsizes; i++)
			ret = measure_size(&c, opts->sizes[i], samples);
		pm_say("appended %" PRIu64 " records, %" PRIu64 " bytes",
		       c.seq, c.pos);
		pm_report_counters(&res, conn.ep);
	}
	if (!ret)
		ret = pm_send_ctrl(&conn, PM_DONE_TEXT, strlen(PM_DONE_TEXT),
				   "sending \"done\"");
	if (!ret)
		fi_shutdown(conn.ep, 0);
	pm_close_conn(&conn);
	pm_close_fabric(&res);
	free(samples);
	return ret;
}
