#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# The two-process tests under valgrind (memcheck, --leak-check=full), both
# processes of every pair: test/threads (pmv_threads, fewer batches) and a
# subset of test/pmem (pmv_commit_test, PMV_RUNS).  Each process writes its
# own log; a process with an error (invalid access, uninitialised value,
# definite or possible leak not in test/valgrind.supp) exits 97 and its
# log's first error is printed.  Prints the suites' PASS/FAIL lines, one
# verdict per program over all its logs, and as its last line
# "N passed, N failed".
#
# usage: test/run_valgrind.sh BUILD_DIR [PORT_BASE]
#   BUILD_DIR  a normal (not sanitizer) build, with make check TESTS= done
#   PORT_BASE  first TCP port (default 12800): pmv_threads from it, the
#              durability subset from PORT_BASE + 50
# env:
#   PMV_VALGRIND_RUNS     the pmv_commit_test runs (default below)
#   PMV_VALGRIND_BATCHES  pmv_threads batches per thread (default 30)
#   PMV_VALGRIND_KEEP=1   keep the logs (their directory is printed);
#                         a failing process's log is always kept, in
#                         BUILD_DIR/valgrind-logs
set -u

if [[ $# -lt 1 || $# -gt 2 || ! -d $1 ]]; then
	sed -n '12,21p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
fi
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "$1" && pwd)
PORT=${2:-12800}
SUPP=$ROOT/test/valgrind.supp
RUNS=${PMV_VALGRIND_RUNS:-oracle-page oracle-byte contents-cache_line badinput persist-fails-page scenario-counters-page scenario-no-pmem-caps}
BATCHES=${PMV_VALGRIND_BATCHES:-30}
VG_RC=97
LOGS=$(mktemp -d "${TMPDIR:-/tmp}/pmv_valgrind.XXXXXX")
export FI_PROVIDER_PATH=$BUILD/.libs

# Removes the logs unless asked to keep them.
cleanup() {
	if [[ ${PMV_VALGRIND_KEEP:-0} == 1 ]]; then
		echo "valgrind logs kept in $LOGS" >&2
	else
		rm -rf "$LOGS"
	fi
}
trap cleanup EXIT

passed=0
failed=0
# shellcheck source=common/pmv_suite.sh
. "$ROOT/test/common/pmv_suite.sh" || { echo "no test/common/pmv_suite.sh" >&2; exit 2; }

# valgrind's command line for program NAME (its logs: LOGS/NAME.PID.log).
vg_cmd() {
	echo "valgrind --error-exitcode=$VG_RC --leak-check=full" \
		"--errors-for-leak-kinds=definite,possible" \
		"--suppressions=$SUPP --gen-suppressions=all" \
		"--log-file=$LOGS/$1.%p.log"
}

# A script that runs BIN under valgrind (run_pmem_tests.sh runs its BIN
# directly): wrapper NAME BIN -> the script's path.
wrapper() {
	local w=$LOGS/bin/$1
	mkdir -p "$LOGS/bin"
	printf '#!/bin/sh\nexec %s %q "$@"\n' "$(vg_cmd "$1")" "$2" >"$w"
	chmod +x "$w"
	echo "$w"
}

# Runs a suite, shows its PASS/FAIL lines (not its total), counts them.
suite() {
	local name=$1 out
	shift
	out=$("$@" 2>&1)
	printf '%s\n' "$out" | grep -E '^(PASS|FAIL)|^    '
	add_suite "$name" "$out"
}

# One verdict per program over its logs: no error in any process.
judge_logs() {
	local name=$1 logs=() bad=() f errors=0 n
	for f in "$LOGS/$name".*.log; do
		[[ -e $f ]] && logs+=("$f")
	done
	if [[ ${#logs[@]} -eq 0 ]]; then
		report FAIL "valgrind/$name" "no valgrind log: nothing ran under valgrind"
		return
	fi
	for f in "${logs[@]}"; do
		n=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) errors.*/\1/p' "$f" | tail -n 1)
		if [[ -z $n ]]; then
			bad+=("$f (no ERROR SUMMARY: the process did not end normally)")
		elif [[ $n -ne 0 ]]; then
			errors=$((errors + n))
			bad+=("$f")
		fi
	done
	if [[ ${#bad[@]} -eq 0 ]]; then
		report PASS "valgrind/$name" "${#logs[@]} processes, 0 errors (leaks: none definite or possible)"
		return
	fi
	report FAIL "valgrind/$name" "$errors errors in ${#bad[@]} of ${#logs[@]} processes"
	for f in "${bad[@]}"; do
		echo "  ${f#"$LOGS"/}:"
		first_error "${f%% *}" | sed 's/^/    /'
		keep_log "${f%% *}"
	done
}

# The first error of valgrind log $1 (40 lines): one of the kinds below,
# else whatever follows valgrind's preamble (an error of another kind).
first_error() {
	local out
	out=$(grep -v -E '^==[0-9]+== *$' "$1" | sed -n '/^==[0-9]*== [A-Z].*\(Invalid\|uninitialised\|Conditional\|Syscall\|lost in loss\|Mismatched\|free\)/,/^==[0-9]*== *$/p' | head -n 40)
	[[ -n $out ]] || out=$(grep -v -E '^==[0-9]+== *$|Memcheck, a memory error detector|Copyright \(C\)|Using Valgrind|Command: |Parent PID: ' "$1" | head -n 40)
	printf '%s\n' "$out"
}

# Keeps a failing process's log in BUILD/valgrind-logs (the others go).
keep_log() {
	mkdir -p "$BUILD/valgrind-logs" && cp "$1" "$BUILD/valgrind-logs/" &&
		echo "    (its whole log: $BUILD/valgrind-logs/$(basename "$1"))"
}

echo "pmemverbs two-process tests under valgrind: $BUILD (ports from $PORT)"
start=$SECONDS
suite pmv_threads env PMV_THREADS_N="$BATCHES" PMV_THREADS_WIDE=0 \
	PMV_THREADS_GRANS="page cache_line byte" PMV_THREADS_TIMEOUT=400 \
	PMV_THREADS_WRAP="$(vg_cmd pmv_threads)" \
	bash "$ROOT/test/threads/run_threads.sh" \
	"$BUILD/test/threads/pmv_threads" "$PORT"
suite pmv_commit_test env PMV_RUNS="$RUNS" PMV_PORT_BASE=$((PORT + 50)) \
	bash "$ROOT/test/pmem/run_pmem_tests.sh" \
	"$(wrapper pmv_commit_test "$BUILD/test/pmem/pmv_commit_test")"
judge_logs pmv_threads
judge_logs pmv_commit_test
echo "(valgrind: $((SECONDS - start)) s)"
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
