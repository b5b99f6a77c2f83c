/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_hostile_main.c - the hostile client's run (its groups of
 * attacks), options and main.
 */
#include "pmv_hostile.h"

struct hostile_options g_opt = { .addr = "127.0.0.1", .after = 100,
				  .fuzz = 200, .seed = 1 };
const char *g_role = "pmv_hostile";

/* ------------------------------------------------------------------ */
/* Hostile client: the run                                            */
/* ------------------------------------------------------------------ */

/* Runs one attack group, then checks the honest kept committing. */
static void group(const char *name, void (*fn)(void))
{
	uint64_t mark = ctl_load(&g_x.ctl->honest_commits);

	fn();
	await_honest(name, mark, true);
}

static void group_fuzz(void)
{
	for (unsigned i = 0; i < g_opt.fuzz; i++)
		fuzz_one(g_x.c.peer.slot_size);
	run_attack(&k_probe);
}

static void group_flood(void)
{
	flood(8);
}

static void group_inbox(void)
{
	raw_inbox_writes();
	spill_write();
}

static void group_headers(void)
{
	for (int m = HDR_BOGUS_INBOX; m <= HDR_NONE; m++)
		header_attack((enum hdr_mode)m);
}

/* Connects and drops the connection again and again, each time with
 * requests (valid and refused) left in the target's inbox. */
static void group_churn(void)
{
	static const struct attack bad = { "churn-range", EX_REFUSED,
					   PMV_ERR_RANGE, SCOPE1(RL, 8) };
	struct hconn keep = g_x.c, *c = &g_x.c;

	for (unsigned r = 0; r < CHURN_CONNS; r++) {
		if (!hconn_connect(c, HDR_GOOD) || !c->has_peer) {
			info("INFO churn: connection %u failed", r);
			hconn_close(c);
			continue;
		}
		for (unsigned i = 0; i < 8 && c->up; i++, c->seq++) {
			size_t len = attack_image(i % 2 ? &bad : &k_probe,
						  c->peer.slot_size, c->seq);

			if (hconn_write(c, len, req_addr(c, c->seq),
					c->peer.inbox_key))
				break;
		}
		hconn_close(c); /* no shutdown, acks unread */
	}
	g_x.c = keep;
}

/* Injects one ring of requests from c->seq on; false once the hostile's
 * own core refuses more (it is not progressed: nothing is read). */
static bool stall_ring(struct hconn *c, unsigned *sent)
{
	for (unsigned i = 0; i < PMV_SLOTS; i++, c->seq++, (*sent)++) {
		size_t len = attack_image(&k_probe, c->peer.slot_size, c->seq);

		if (fi_inject_write(c->ep, g_x.wbuf, len, 0,
				    req_addr(c, c->seq), c->peer.inbox_key))
			return false;
	}
	return true;
}

/*
 * The tcp core's socket of the attack connection (the only one connected
 * to the target's port by then), with its receive buffer made small, so
 * that the target's acks back up quickly once nothing reads them; -1 if
 * not found.
 */
static int stall_socket(void)
{
	int small = 4096, type;
	socklen_t tl = sizeof(type);

	for (int fd = 3; fd < 4096; fd++) {
		struct sockaddr_in peer;
		socklen_t pl = sizeof(peer);

		if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) ||
		    type != SOCK_STREAM ||
		    getpeername(fd, (struct sockaddr *)&peer, &pl) ||
		    peer.sin_family != AF_INET ||
		    ntohs(peer.sin_port) != atoi(g_opt.port))
			continue;
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
		return fd;
	}
	return -1;
}

/* The highest seq acked in the hostile's inbox (0: none). */
static uint64_t highest_ack(void)
{
	uint64_t best = 0, seq;
	struct pmv_ack ack;

	for (unsigned i = 0; i < PMV_SLOTS; i++) {
		memcpy(&seq, g_x.inbox + i * sizeof(ack), sizeof(seq));
		seq = le64toh(seq);
		if (seq > best && pmv_ack_decode(g_x.inbox + i * sizeof(ack),
						 seq, &ack))
			best = seq;
	}
	return best;
}

/*
 * Injects requests one ring at a time (a pause between rings lets the
 * agent keep up) and never reads: the target's acks pile up in the sockets
 * and its core until its ack writes return -FI_EAGAIN.  The honest
 * initiator must keep committing meanwhile.  Then the acks are drained and
 * the connection replaced.
 */
static void group_stalled(void)
{
	struct timespec gap = { .tv_nsec = STALL_GAP_US * 1000 };
	struct hconn *c = &g_x.c;
	uint64_t mark = ctl_load(&g_x.ctl->honest_commits), first = c->seq;
	int64_t deadline = deadline_in(STEP_MS);
	int fd = stall_socket(), unread = -1;
	unsigned sent = 0;

	ctl_store(&g_x.ctl->attack_started, 1);
	while (sent < STALL_REQS && before(deadline) && stall_ring(c, &sent))
		nanosleep(&gap, NULL);
	if (fd >= 0 && ioctl(fd, FIONREAD, &unread))
		unread = -1;
	await_honest("stalled-reader", mark, false);
	deadline = deadline_in(2000);
	while (c->up && before(deadline) && highest_ack() + 1 < c->seq)
		hconn_progress(c, NULL, NULL, NULL);
	info("INFO stalled reader: %u requests injected without reading, %d "
	     "bytes of acks left unread in its socket; the agent acked %"
	     PRIu64 " of them", sent, unread,
	     highest_ack() >= first ? highest_ack() - first + 1 : 0);
	hostile_reconnect();
}

static void group_core(void)
{
	core_writes();
	run_attack(&k_probe);
}

/* One line: the refusals the hostile got, by code, and the rest. */
static void hostile_summary(void)
{
	char line[512];
	size_t at = 0;

	for (int i = 1; i < PMV_ERR_LAST - PMV_ERR_BASE; i++)
		if (g_x.refusals[i] && at < sizeof(line))
			at += (size_t)snprintf(line + at, sizeof(line) - at,
					       "%s%s x%u", at ? ", " : "",
					       status_name(PMV_ERR_BASE + i),
					       g_x.refusals[i]);
	info("SUMMARY refusals: %s; served %u valid requests; %u slots "
	     "without a valid request refused as PMV_ERR_BAD_REQUEST; %u "
	     "seqs left unwritten and not acked; %u refusals expected but "
	     "unanswered; %u connections, %u dropped by the target's core "
	     "after a refused write",
	     at ? line : "none", g_x.served, g_x.bad, g_x.ignored,
	     g_x.unanswered, g_x.conns, g_x.dropped);
}

static void hostile_close(void)
{
	hconn_close(&g_x.c);
	fi_close(&g_x.inbox_mr->fid);
	fi_close(&g_x.domain->fid);
	fi_close(&g_x.fabric->fid);
	fi_freeinfo(g_x.info);
	free(g_x.inbox);
}

static int hostile_main(void)
{
	g_role = "hostile";
	if (!g_opt.ctl || !g_opt.key)
		die("-c CTL and -x BASE:KEY are needed");
	g_x.ctl = ctl_map();
	hostile_open();
	hostile_reconnect();
	info("INFO hostile: target inbox 0x%" PRIx64 " key 0x%" PRIx64
	     ", %u-byte slots; own inbox 0x%" PRIx64 " key 0x%" PRIx64,
	     g_x.c.peer.inbox_addr, g_x.c.peer.inbox_key, g_x.c.peer.slot_size,
	     g_x.inbox_addr, g_x.inbox_key);
	group("valid", group_valid);
	group("refused", group_refused);
	group("bad-slots", group_bad);
	group("fuzz", group_fuzz);
	group("flood", group_flood);
	group("inbox-writes", group_inbox);
	group("headers", group_headers);
	group("churn", group_churn);
	group_stalled();
	group("core-writes", group_core);
	hostile_summary();
	hostile_close();
	return g_failed ? 1 : 0;
}

/* ------------------------------------------------------------------ */
/* Main                                                               */
/* ------------------------------------------------------------------ */

static noreturn void usage(void)
{
	fprintf(stderr,
		"usage: pmv_hostile -r target  -P PORT -f FILE [-a ADDR]\n"
		"       pmv_hostile -r honest  -P PORT -x BASE:KEY -c CTL -m MARKER [-n AFTER]\n"
		"       pmv_hostile -r hostile -P PORT -x BASE:KEY -c CTL [-F FUZZ] [-s SEED] [-v]\n");
	exit(2);
}

static void parse_opts(int argc, char **argv)
{
	int ch;

	while ((ch = getopt(argc, argv, "r:a:P:f:x:c:m:n:F:s:v")) != -1) {
		switch (ch) {
		case 'r': g_opt.role = optarg; break;
		case 'a': g_opt.addr = optarg; break;
		case 'P': g_opt.port = optarg; break;
		case 'f': g_opt.file = optarg; break;
		case 'x':
			if (!pmv_test_parse_region(optarg, &g_opt.base,
						   &g_opt.key))
				usage();
			break;
		case 'c': g_opt.ctl = optarg; break;
		case 'm': g_opt.marker = optarg; break;
		case 'n': g_opt.after = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'F': g_opt.fuzz = (unsigned)strtoul(optarg, NULL, 0); break;
		case 's': g_opt.seed = strtoull(optarg, NULL, 0); break;
		case 'v': g_opt.verbose = true; break;
		default: usage();
		}
	}
	if (!g_opt.role || !g_opt.port || optind != argc)
		usage();
}

int main(int argc, char **argv)
{
	parse_opts(argc, argv);
	if (!strcmp(g_opt.role, "target"))
		return target_main();
	if (!strcmp(g_opt.role, "honest"))
		return honest_main();
	if (!strcmp(g_opt.role, "hostile"))
		return hostile_main();
	usage();
}
