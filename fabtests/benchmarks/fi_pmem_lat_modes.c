/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * fi_pmem_lat: the initiator's modes (see fi_pmem_lat.c for what each
 * measures): posting an operation and reaping it, one post function per
 * mode, and the table of modes.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "fi_pmem_lat.h"

/* ------------------------------------------------- initiator: posting */

/*
 * Offset of the index-th operation of len bytes: steps of len rounded up to
 * PM_LINE_SIZE, wrapping before the end of the region.
 */
uint64_t rotating_offset(const struct bench *b, size_t len,
			  uint64_t index)
{
	uint64_t stride = pm_round_up(len, PM_LINE_SIZE);
	uint64_t slots = (b->region.len - len) / stride + 1;

	return (index % slots) * stride;
}

/* Checks n completions read and counts them. */
static int count_completions(struct bench *b,
			     const struct fi_cq_data_entry *entries, ssize_t n)
{
	ssize_t i;

	for (i = 0; i < n; i++) {
		struct fi_context2 *ctx = entries[i].op_context;

		if (ctx < b->ctx || ctx >= b->ctx + b->posted ||
		    !(entries[i].flags & FI_RMA)) {
			pm_complain("completion of an unexpected operation "
				    "(flags 0x%" PRIx64 ")", entries[i].flags);
			return -FI_EOTHER;
		}
	}
	b->completed += (int) n;
	return 0;
}

/* Reads whatever completions are there (non-blocking); checks each. */
static int reap_completions(struct bench *b)
{
	struct fi_cq_data_entry entries[8];
	ssize_t n;

	n = fi_cq_read(b->conn->tx_cq, entries, 8);
	if (n == -FI_EAGAIN)
		return 0;
	if (n == -FI_EAVAIL)
		return pm_report_cq_error(b->conn->tx_cq, "RMA operation");
	if (n < 0)
		return pm_check(n, "fi_cq_read");
	return count_completions(b, entries, n);
}

/* -x: waits for one completion as a target waits in that mode
 * (fi_cq_sread, or epoll after fi_trywait), until the deadline. */
static int wait_completion(struct bench *b)
{
	struct fi_cq_data_entry entry;
	int ret = pm_read_one_before(b->conn->tx_cq, b->deadline,
				     "an RMA operation", &entry);

	if (ret == -FI_ETIMEDOUT)
		return 0; /* wait_for_sample says what is missing */
	return ret ? ret : count_completions(b, &entry, 1);
}

/* Posts one operation of the sample, retrying while the provider is busy. */
static int post_rma(struct bench *b, enum pm_rma_op kind, size_t len,
		    uint64_t offset)
{
	void *ctx = &b->ctx[b->posted];
	ssize_t ret;

	while ((ret = pm_post_rma(b->conn, &b->region, kind, len, offset,
				   ctx)) == -FI_EAGAIN) {
		if (pm_past(b->deadline)) {
			pm_complain("posting: provider busy until the "
				    "deadline");
			return -FI_ETIMEDOUT;
		}
		ret = reap_completions(b);
		if (ret)
			return (int) ret;
	}
	if (ret)
		return pm_check(ret, "posting an RMA operation");
	b->posted++;
	return 0;
}

/* Spins on the transmit CQ (-x: waits on it) until every posted operation
 * completed. */
int wait_for_sample(struct bench *b)
{
	int ret = 0;

	while (!ret && b->completed < b->posted) {
		if (pm_past(b->deadline)) {
			pm_complain("%d of %d operations still incomplete "
				    "after %lld s", b->posted - b->completed,
				    b->posted, PM_OP_TIMEOUT_NS / PM_NS_PER_S);
			return -FI_ETIMEDOUT;
		}
		ret = b->opts->ini_wait ? wait_completion(b) :
					  reap_completions(b);
	}
	return ret;
}

/* ---------------------------------------------------- initiator: modes */

static int post_write(struct bench *b, size_t size, uint64_t index)
{
	return post_rma(b, PM_RMA_WRITE, size, rotating_offset(b, size, index));
}

static int post_read(struct bench *b, size_t size, uint64_t index)
{
	return post_rma(b, PM_RMA_READ, size, rotating_offset(b, size, index));
}

static int post_read8(struct bench *b, size_t size, uint64_t index)
{
	(void) size;
	return post_rma(b, PM_RMA_READ, PROBE_SIZE,
			rotating_offset(b, PROBE_SIZE, index));
}

/* The naive recipe: write, then read 8 bytes of what was written. */
static int post_write_read(struct bench *b, size_t size, uint64_t index)
{
	uint64_t offset = rotating_offset(b, size, index);
	int ret = post_rma(b, PM_RMA_WRITE, size, offset);

	return ret ? ret : post_rma(b, PM_RMA_READ, PROBE_SIZE, offset);
}

int post_commit_write(struct bench *b, size_t size, uint64_t index)
{
	return post_rma(b, PM_RMA_COMMIT, size, rotating_offset(b, size, index));
}

/* fi_writemsg(FI_DELIVERY_COMPLETE): a commit under
 * FI_PMEMVERBS_DELIVERY_IS_COMMIT=1, a plain placed write otherwise. */
static int post_delivery_write(struct bench *b, size_t size, uint64_t index)
{
	return post_rma(b, PM_RMA_DELIVERY, size,
			rotating_offset(b, size, index));
}

/* The same with remote CQ data: the target's receive CQ gets a completion
 * (what a gated commit's write costs the core at the target). */
static int post_delivery_data(struct bench *b, size_t size, uint64_t index)
{
	return post_rma(b, PM_RMA_DELIVERY_DATA, size,
			rotating_offset(b, size, index));
}

/* BATCH plain writes to consecutive slots, then one pure-flush commit. */
static int post_batch(struct bench *b, size_t size, uint64_t index)
{
	uint64_t first = index * (uint64_t) b->opts->batch;
	int ret = 0, i;

	for (i = 0; !ret && i < b->opts->batch; i++)
		ret = post_rma(b, PM_RMA_WRITE, size,
			       rotating_offset(b, size, first + i));
	return ret ? ret : post_rma(b, PM_RMA_FLUSH, 0, 0);
}

/* BATCH plain writes spread over the region, then one pure-flush commit. */
static int post_scatter(struct bench *b, size_t size, uint64_t index)
{
	uint64_t part = b->region.len / (uint64_t) b->opts->batch;
	uint64_t slots = part > size ? (part - size) / PM_LINE_SIZE + 1 : 1;
	uint64_t shift = (index % slots) * PM_LINE_SIZE;
	int ret = 0, i;

	for (i = 0; !ret && i < b->opts->batch; i++)
		ret = post_rma(b, PM_RMA_WRITE, size, i * part + shift);
	return ret ? ret : post_rma(b, PM_RMA_FLUSH, 0, 0);
}

static const struct mode all_modes[] = {
	{ "write", false, post_write },
	{ "read", false, post_read },
	{ "read8", false, post_read8 },
	{ "read8_ctl", false, post_read8 },
	{ "write_read", false, post_write_read },
	{ "commit", false, post_commit_write },
	{ "delivery", false, post_delivery_write },
	{ "delivery_data", false, post_delivery_data },
	{ "batch", true, post_batch },
	{ "scatter", true, post_scatter },
};


/* The mode of that name in the table, NULL (and a message) if none. */
const struct mode *lat_find_mode(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(all_modes) / sizeof(all_modes[0]); i++)
		if (!strcmp(all_modes[i].name, name))
			return &all_modes[i];
	fprintf(stderr, "unknown mode \"%s\"\n", name);
	return NULL;
}
