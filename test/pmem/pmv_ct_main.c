/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_commit_test - durability tests of pmemverbs's FI_COMMIT_COMPLETE.
 *
 * One program, two roles, connected by FI_EP_MSG endpoints on 127.0.0.1
 * (-a: any address; over the verbs core, one of the RDMA device's):
 *
 *   target     maps a file (with guard bytes around every region), registers
 *              its regions (FI_RMA_PMEM unless said otherwise), describes
 *              them to the initiator, collects FI_IMMED completions, serves
 *              a few test requests, and at the end re-maps the file and
 *              checks it byte for byte;
 *   initiator  writes and commits, checks every commit completion against
 *              the persistence oracle (pmv_oracle.h), then asks for the
 *              target's report.
 *
 * Tests (-t): oracle, contents, fault, badinput, exit, scenario (-c CASE:
 * one of k_scenarios); README.md says what each proves.  A further target-only mode, mrreg, maps the region file and
 * registers one region with FI_RMA_PMEM, and reports what fi_mr_reg said and
 * the profile (the fsdax check over the verbs core).
 *
 * The region file (-f) is created afresh, unless it is a character device
 * (device-DAX, /dev/daxX.Y): that is used as it is, mapped with a length
 * that is a multiple of its alignment, and zeroed where the test uses it.
 * -g auto forces no granularity: the initiator takes the profile the
 * target reports (restricted by -E to the profiles it may be).
 *
 * Each check prints "PASS name: detail" or "FAIL name: expected X got Y".
 * Exit status: 0 pass, 1 fail, 2 usage, 3 a commit completed before its
 * scope was persisted (the oracle found uncovered bytes).
 */

#include "pmv_ct.h"

/* pmv_test_report.h's counts, for every file of the program */
unsigned g_passed, g_failed;

/* ------------------------------------------------------------------ */
/* Reporting                                                          */
/* ------------------------------------------------------------------ */

const char *g_role = "pmv_commit_test";

/* Symbolic name of an fi_errno code (sign ignored), for messages. */
const char *errname(long code)
{
	static const struct {
		int code;
		const char *name;
	} names[] = {
		{ FI_EINVAL, "FI_EINVAL" },       { FI_EBADFLAGS, "FI_EBADFLAGS" },
		{ FI_ENOKEY, "FI_ENOKEY" },       { FI_EACCES, "FI_EACCES" },
		{ FI_EOPNOTSUPP, "FI_EOPNOTSUPP" }, { FI_ENOTCONN, "FI_ENOTCONN" },
		{ FI_EAGAIN, "FI_EAGAIN" },       { FI_EIO, "FI_EIO" },
		{ FI_ECONNRESET, "FI_ECONNRESET" }, { FI_ECONNABORTED, "FI_ECONNABORTED" },
		{ FI_ENOSYS, "FI_ENOSYS" },       { FI_EREMOTEIO, "FI_EREMOTEIO" },
		{ FI_ECANCELED, "FI_ECANCELED" }, { FI_EPERM, "FI_EPERM" },
		{ FI_ETIMEDOUT, "FI_ETIMEDOUT" }, { FI_EAVAIL, "FI_EAVAIL" },
	};
	static char buf[32];
	long c = code < 0 ? -code : code;

	if (c == 0)
		return "0 (success)";
	for (size_t i = 0; i < ARRAY_LEN(names); i++)
		if (names[i].code == c)
			return names[i].name;
	snprintf(buf, sizeof(buf), "error %ld", c);
	return buf;
}

/* True if text is a non-empty line a person can read. */
bool readable(const char *text)
{
	size_t n = text ? strlen(text) : 0;

	if (n < 4)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isprint((unsigned char)text[i]))
			return false;
	return true;
}

void expect_u64(const char *name, uint64_t got, uint64_t want,
		       const char *what)
{
	if (got == want)
		verdict(true, check_name(name), "%s = %" PRIu64, what, got);
	else
		verdict(false, check_name(name), "expected %s = %" PRIu64
			" got %" PRIu64, what, want, got);
}
static struct fid *g_fids[MAX_FIDS];
static size_t g_nfids;

void track_fid(struct fid *fid)
{
	if (g_nfids == MAX_FIDS)
		die("internal: more than %d fabric objects", MAX_FIDS);
	g_fids[g_nfids++] = fid;
}

/* Closes one tracked object now; false (with a message) if that fails. */
bool close_fid(struct fid *fid)
{
	int ret = fi_close(fid);

	for (size_t i = 0; i < g_nfids; i++) {
		if (g_fids[i] == fid) {
			memmove(&g_fids[i], &g_fids[i + 1],
				(g_nfids - i - 1) * sizeof(*g_fids));
			g_nfids--;
			break;
		}
	}
	if (ret)
		fprintf(stderr, "fi_close(fclass %zu): %s\n", fid->fclass,
			errname(ret));
	return ret == 0;
}

/* Closes everything still open, newest first (also runs at exit). */
void close_all_fids(void)
{
	while (g_nfids)
		close_fid(g_fids[g_nfids - 1]);
}

/*
 * The exit test: libfabric unloads provider plugins (dlclose) from its
 * destructor at exit.  Pausing after each unload makes a thread that still
 * runs plugin code crash for certain, instead of now and then: with the
 * plugin's agents left running at unload, 6 of 6 exit runs crashed with
 * the pause, 0 of 6 without (README.md, exit).
 */
static bool g_slow_dlclose;

int dlclose(void *handle)
{
	static int (*real_dlclose)(void *);
	struct timespec pause = { .tv_sec = 0, .tv_nsec = 20000000 };
	int ret;

	if (!real_dlclose) {
		void *sym = dlsym(RTLD_NEXT, "dlclose");

		memcpy(&real_dlclose, &sym, sizeof(real_dlclose));
	}
	ret = real_dlclose(handle);
	if (g_slow_dlclose)
		nanosleep(&pause, NULL);
	return ret;
}

const char *const k_test_names[] = { "oracle", "contents", "fault",
					    "badinput", "exit", "mrreg",
					    "scenario" };

struct opts g_opt;

noreturn void usage(void)
{
	fprintf(stderr,
		"usage: pmv_commit_test -r target|initiator "
		"-t oracle|contents|fault|badinput|exit|scenario\n"
		"         [-a ADDR] [-P PORT] [-s SEED] [-n REPS]\n"
		"       pmv_commit_test -r target -t mrreg -f FILE [-a ADDR]\n"
		"  target:    -f FILE     region file (created afresh), or a "
		"character\n"
		"                         device (/dev/daxX.Y), used as it is\n"
		"             env FI_PMEMVERBS_ORACLE=PATH creates the oracle log\n"
		"  initiator: -g page|cache_line|byte  granularity forced on "
		"the target\n"
		"             -g auto     none forced: expect the profile the "
		"target reports\n"
		"             -E P[,P..]  with -g auto: the profiles it may be "
		"(PAGE,DMP,\n"
		"                         MHP,WSP; default any but VOLATILE)\n"
		"             -o PATH     oracle log to check at every commit\n"
		"             -F FILE     the target's region file: commits "
		"made without\n"
		"                         the agent are checked against what "
		"it holds\n"
		"             env FI_PMEMVERBS_METHOD: the method override the "
		"provider\n"
		"                         was given (what to expect)\n"
		"             -c CASE     badinput: run only this case; "
		"scenario: the case\n"
		"                         (reopen, rereg, move, many-64x32, "
		"many-128x32,\n"
		"                         immed-flood, counters, "
		"no-pmem-caps, wait-modes,\n"
		"                         initiator-waits, delivery)\n"
		"  mrreg:     maps FILE like the target, registers one region "
		"with FI_RMA_PMEM,\n"
		"             prints \"MRREG <fi_mr_reg code> <profile>\"; exit 0 "
		"if registered,\n"
		"             4 if refused\n"
		"exit: 0 pass, 1 fail, 2 usage, 3 commit completed before "
		"its scope was persisted\n");
	exit(EXIT_USAGE);
}

static enum test_mode parse_test(const char *s)
{
	for (size_t i = 0; i < ARRAY_LEN(k_test_names); i++)
		if (!strcmp(s, k_test_names[i]))
			return (enum test_mode)i;
	usage();
}

static void parse_opts(int argc, char **argv)
{
	bool have_role = false, have_test = false;
	int ch;

	g_opt = (struct opts){ .addr = "127.0.0.1", .port = "9800", .seed = 1,
			       .reps = 10 };
	while ((ch = getopt(argc, argv, "r:t:a:P:f:F:g:E:o:s:n:c:h")) != -1) {
		switch (ch) {
		case 'r':
			if (strcmp(optarg, "target") && strcmp(optarg, "initiator"))
				usage();
			g_opt.role = strcmp(optarg, "target") ? ROLE_INITIATOR :
								ROLE_TARGET;
			have_role = true;
			break;
		case 't':
			g_opt.test = parse_test(optarg);
			have_test = true;
			break;
		case 'a': g_opt.addr = optarg; break;
		case 'P': g_opt.port = optarg; break;
		case 'f': g_opt.file = optarg; break;
		case 'g': g_opt.gran = optarg; break;
		case 'E': g_opt.expect = optarg; break;
		case 'o': g_opt.oracle = optarg; break;
		case 'F': g_opt.target_file = optarg; break;
		case 's': g_opt.seed = strtoull(optarg, NULL, 0); break;
		case 'n': g_opt.reps = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'c': g_opt.only = optarg; break;
		default: usage();
		}
	}
	if (!have_role || !have_test || optind != argc || g_opt.reps < 1)
		usage();
	if (g_opt.role == ROLE_TARGET && !g_opt.file)
		usage();
	if (g_opt.role == ROLE_INITIATOR && !g_opt.gran)
		usage();
	if (g_opt.test == TEST_MRREG && g_opt.role != ROLE_TARGET)
		usage();
	if (g_opt.expect && (!g_opt.gran || strcmp(g_opt.gran, "auto")))
		usage();
	if (g_opt.test == TEST_SCENARIO && g_opt.role == ROLE_INITIATOR &&
	    !g_opt.only)
		usage();
}

/* ---- running a scenario ---- */

struct scenario {
	const char *name;
	void (*run)(void);
};

static void sc_many_64(void)
{
	sc_many(64, 32);
}

static void sc_many_128(void)
{
	sc_many(128, 32);
}

static const struct scenario k_scenarios[] = {
	{ "reopen", sc_reopen },
	{ "rereg", sc_rereg },
	{ "move", sc_move },
	{ "overtake", sc_overtake },
	{ "late-serve", sc_late_serve },
	{ "many-64x32", sc_many_64 },
	{ "many-128x32", sc_many_128 },
	{ "immed-flood", sc_immed_flood },
	{ "counters", sc_counters },
	{ "no-pmem-caps", sc_no_pmem_caps },
	{ "wait-modes", sc_wait_modes },
	{ "initiator-waits", sc_initiator_waits },
	{ "delivery", sc_delivery },
};

/* Runs the scenario -c names, then the target's report (guards). */
static void run_scenario(void)
{
	const struct scenario *sc = NULL;
	struct report *rep;

	for (size_t i = 0; i < ARRAY_LEN(k_scenarios); i++)
		if (!strcmp(g_opt.only, k_scenarios[i].name))
			sc = &k_scenarios[i];
	if (!sc)
		usage();
	g_case = sc->name;
	sc->run();
	g_case = "the final drain";
	drain_cqs();
	rep = initiator_finish(false);
	check_report_file(rep);
	if (g_sc.no_immed)
		verdict(!rep->nimmed, check_name(g_sc.no_immed), "the target "
			"read %u FI_IMMED completions of commits that all "
			"failed", rep->nimmed);
	free(rep);
	free(g_sc.ops);
	free(g_sc.buf);
}

static int initiator_main(void)
{
	g_role = "initiator";
	if (g_opt.oracle)
		oracle_map(g_opt.oracle);
	if (g_opt.target_file)
		target_file_map(g_opt.target_file);
	initiator_setup();
	if (g_opt.test == TEST_EXIT)
		run_exit();
	if (g_opt.test == TEST_BADINPUT)
		run_badinput();
	else if (g_opt.test == TEST_SCENARIO)
		run_scenario();
	else
		run_workload();
	initiator_close();
	printf("SUMMARY %s: %u passed, %u failed\n", k_test_names[g_opt.test],
	       g_passed, g_failed);
	return g_failed ? EXIT_FAIL : EXIT_PASS;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	parse_opts(argc, argv);
	if (g_opt.test == TEST_EXIT)
		g_slow_dlclose = true;
	else if (atexit(close_all_fids))
		die("atexit failed");
	return g_opt.role == ROLE_TARGET ? target_main() : initiator_main();
}

