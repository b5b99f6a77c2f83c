#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Fuzzes the wire format (prov/pmemverbs/src/proto) with libFuzzer: builds
# test/fuzz/fuzz_proto.c with clang (-fsanitize=fuzzer,address,undefined),
# runs it for a bounded time over a copy of the corpus in test/fuzz/corpus
# (the repository's corpus is never changed by a run), and prints
# "PASS|FAIL fuzz-proto ..." and, last, "N passed, N failed".
#
# usage: test/fuzz/run_fuzz.sh [SECONDS]    (default: PMV_FUZZ_SECONDS or 60)
# A crash input is kept in the printed directory for reproduction:
#   fuzz_proto CRASH_FILE
set -u

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SECONDS_MAX=${1:-${PMV_FUZZ_SECONDS:-60}}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/pmv_fuzz.XXXXXX")
BIN=$WORK/fuzz_proto

finish() {
	echo "$1 fuzz-proto: $2"
	if [[ $1 == PASS ]]; then
		rm -rf "$WORK"
		echo "1 passed, 0 failed"
		exit 0
	fi
	echo "0 passed, 1 failed"
	exit 1
}

command -v clang >/dev/null || finish FAIL "clang is not installed (apt-get install clang)"
if ! clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE \
	-I"$ROOT/prov/pmemverbs/src" "$ROOT/prov/pmemverbs/src/proto/pmv_proto.c" \
	"$ROOT/test/fuzz/fuzz_proto.c" -lisal -o "$BIN" >"$WORK/build.log" 2>&1; then
	finish FAIL "building with libFuzzer failed: $(tail -n 3 "$WORK/build.log" | tr '\n' ' ')"
fi
mkdir -p "$WORK/corpus"
cp "$ROOT"/test/fuzz/corpus/* "$WORK/corpus/" 2>/dev/null
(cd "$WORK" && timeout $((SECONDS_MAX + 60)) "$BIN" -max_total_time="$SECONDS_MAX" \
	-print_final_stats=1 -artifact_prefix="$WORK/" "$WORK/corpus" \
	>"$WORK/fuzz.log" 2>&1)
rc=$?
runs=$(awk '/stat::number_of_executed_units/ {print $NF}' "$WORK/fuzz.log")
if [[ $rc -ne 0 ]]; then
	grep -m3 -E 'ERROR|SUMMARY|deadly' "$WORK/fuzz.log"
	finish FAIL "libFuzzer exit $rc after ${runs:-?} executions; inputs and log in $WORK"
fi
[[ -n $runs && $runs -gt 0 ]] || finish FAIL "no execution reported (log: $WORK/fuzz.log)"
finish PASS "$runs executions in ${SECONDS_MAX}s, no crash, no leak, no property broken (request, ack, CM header, profile table)"
