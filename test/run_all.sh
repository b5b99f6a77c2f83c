#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Runs the whole pmemverbs test suite against a normal build and a
# sanitizer (ASan+UBSan) build, the threads tests against a ThreadSanitizer
# build and the two-process tests under valgrind (test/threads/README.md),
# then the verbs-core tests in a QEMU guest
# (soft-RoCE and an emulated NVDIMM, test/verbs: two boots, devdax and
# fsdax) and the power cuts (test/crash: 8 cuts of the guest), and prints
# the total as its last line: "N passed, N failed".  Then the Debian 13
# pass (test/debian13/run_debian13.sh): the same build, unit, durability,
# hostile, threads, crash-loop, fi_pingpong and upstream fabtests tests
# against libfabric 2.1 in a cached trixie root made with debootstrap; PMV_TEST_DEBIAN13=0
# leaves it out (a root that cannot be made is a FAIL, never a skip).
#
# usage: test/run_all.sh BUILD_DIR ASAN_BUILD_DIR [TSAN_BUILD_DIR]
#        test/run_all.sh --verbs BUILD_DIR      (the two guest boots only)
#        test/run_all.sh --soak BUILD_DIR       (crash loop, 2000 cycles,
#                                                and 60 power cuts)
#
# Exit status: 0 all passed, 1 a failure, 2 usage.
#
# The guest needs qemu-system-x86_64 and a kernel in /boot: this script has
# test/verbs/vm.sh install them (and the guest's other packages) before it
# looks for them.  A guest that cannot be prepared or does not boot is a
# FAIL, never a silent skip; only PMV_TEST_VERBS=0 leaves the guests out.
set -u

ROOT=$(cd "$(dirname "$0")/.." && pwd)
VERBS_ONLY=""
SOAK=""
if [[ ${1:-} == --verbs ]]; then
	VERBS_ONLY=yes
	shift
elif [[ ${1:-} == --soak ]]; then
	SOAK=yes
	VERBS_ONLY=yes # one build directory, as --verbs
	shift
fi
if [[ ($# -lt 2 || $# -gt 3) && -z $VERBS_ONLY ]] || [[ $# -ne 1 && -n $VERBS_ONLY ]]; then
	sed -n '/^# usage:/,/^#$/p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
fi
BUILD=$(cd "$1" && pwd)
ASAN_BUILD=${2:-}
TSAN_BUILD=${3:-}
passed=0
failed=0

# section (headers with the time since the suite started)
. "$ROOT/test/common/pmv_suite.sh" || { echo "no test/common/pmv_suite.sh" >&2; exit 2; }

# Adds a result: add PASSED FAILED.
add() {
	passed=$((passed + $1))
	failed=$((failed + $2))
}

# The suites, the guest runs and the single-build checks, by concern.
# shellcheck source=run_all_suites.sh
. "$ROOT/test/run_all_suites.sh" || { echo "no test/run_all_suites.sh" >&2; exit 2; }
# shellcheck source=run_all_guest.sh
. "$ROOT/test/run_all_guest.sh" || { echo "no test/run_all_guest.sh" >&2; exit 2; }
# shellcheck source=run_all_checks.sh
. "$ROOT/test/run_all_checks.sh" || { echo "no test/run_all_checks.sh" >&2; exit 2; }

if [[ -n $SOAK ]]; then
	run_crash soak "$BUILD" 12000 "${PMV_CRASH_CYCLES:-2000}"
	run_powercut "${PMV_POWERCUT_CUTS:-60}"
	echo "$passed passed, $failed failed"
	[[ $failed -eq 0 ]]
	exit
fi

if [[ -n $VERBS_ONLY ]]; then
	run_guest devdax
	run_guest fsdax
	echo "$passed passed, $failed failed"
	[[ $failed -eq 0 ]]
	exit
fi

run_unit normal "$BUILD"
section "layout"
run_layout
run_fuzz
section "fi_info and fi_pmem_probe"
run_advertisement
run_probe
run_config_errors 9476
run_examples_built 9477
run_timeline 9478
section "fabtests"
run_fabtest_commit 9360 cache_line
run_fabtest_commit 9361 byte
run_fabtest_commit 9365 byte read_flush
run_remotelog_compound 9362 cache_line agent
run_remotelog_compound 9363 page agent
run_remotelog_compound 9364 byte read_flush
run_fabtest_commit 9366 cache_line auto rdm
run_remotelog_compound 9367 cache_line agent rdm
run_lat_rdm 9368 page
run_integration normal "$BUILD" 9230
run_upstream_fabtests "$BUILD" 30500
run_sos "$BUILD" 31000
run_pmem normal "$BUILD" 9800
run_pmem normal "$BUILD" 29000 rdm
run_pmem normal "$BUILD" 29200 threadless
run_hostile normal "$BUILD" 10400
run_threads normal "$BUILD" 12500
run_failure normal "$BUILD" 9380
run_crash normal "$BUILD" 12000 "${PMV_CRASH_CYCLES:-144}"
run_idle
run_sread_then_sleep
run_idle_commits 9440 unspec
run_idle_commits 9441 none
run_idle_commits 9442 fd
run_idle_commits 9443 cntr
section "targets on a counter"
run_cntr_target 9450 cache_line busy
run_cntr_target 9451 page passive
section "targets without an agent thread"
run_agent_thread 9480
run_package 9470
section "fi_pingpong through pmemverbs"
export FI_PROVIDER_PATH=$BUILD/.libs
port=9330
for ep in msg rdm; do
	for size in 64 65536; do
		run_pingpong "$ep" "$size" $port
		port=$((port + 1))
	done
done
unset FI_PROVIDER_PATH

# libfabric itself leaks a little at exit; leaks in pmemverbs objects are
# caught by the unit tests, which close everything they open.
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
run_unit sanitizers "$ASAN_BUILD"
run_integration sanitizers "$ASAN_BUILD" 9530
run_pmem sanitizers "$ASAN_BUILD" 10100
run_pmem sanitizers "$ASAN_BUILD" 29100 rdm
run_hostile sanitizers "$ASAN_BUILD" 10450
run_threads sanitizers "$ASAN_BUILD" 12600
run_failure sanitizers "$ASAN_BUILD" 9400
run_crash sanitizers "$ASAN_BUILD" 12100 60 4
unset ASAN_OPTIONS UBSAN_OPTIONS
run_threads_tsan "$TSAN_BUILD" 12700
run_valgrind "$BUILD" 12800

# The verbs core, in a QEMU guest (soft-RoCE, emulated NVDIMM): about ten
# minutes under software emulation, then 8 power cuts (about five; 20
# took 13 minutes, and ./run soak makes 60).
# run_guest and run_powercut install what they need first and count a
# guest that cannot run as a failure; PMV_TEST_VERBS=0 leaves them out
# (./run test-verbs runs the two boots alone, ./run soak the power cuts).
if [[ ${PMV_TEST_VERBS:-1} != 0 ]]; then
	run_guest devdax
	run_guest fsdax
	run_powercut "${PMV_POWERCUT_CUTS:-8}"
else
	echo "== verbs core in a QEMU guest: not run (PMV_TEST_VERBS=0)"
fi

# libfabric 2.1 (Debian 13): about 5 minutes with the root cached (2 of
# them upstream fabtests 2.1, test/fabtests/README.md), one
# more to make it, SOS (every sixth test) about 2 more
# (test/debian13/run_debian13.sh; ports 28000-29545, 29700 and 30400).
run_debian13() {
	local out
	if [[ ${PMV_TEST_DEBIAN13:-1} == 0 ]]; then
		echo "== Debian 13 (libfabric 2.1): not run (PMV_TEST_DEBIAN13=0)"
		return
	fi
	section "Debian 13 (libfabric 2.1) in a debootstrap root"
	out=$(bash "$ROOT/test/debian13/run_debian13.sh" 28000 2>&1)
	printf '%s\n' "$out" | grep -a -v '^PASS'
	add_suite "${FUNCNAME[0]}" "$out"
}
run_debian13

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
