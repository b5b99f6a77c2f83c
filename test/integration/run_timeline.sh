#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# The measurement build: configured with --enable-timeline in BUILD_DIR
# (built there once), 300 agent commits of 64 B to a busy PAGE target
# over loopback, and fabtests/scripts/pmv_timeline.py must line every
# commit up with its request and print every step, the persist's file
# check and msync included: the marks fire where the man page says.
# Prints one PASS or FAIL line.
#
# usage: run_timeline.sh SOURCE_DIR BUILD_DIR PORT
set -u

[ $# -eq 3 ] || { sed -n '10p' "$0" | sed 's/^# //' >&2; exit 2; }
SRC=$(cd "$1" && pwd) BUILD=$2 PORT=$3
OUT=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$OUT"; [ -n "${tpid:-}" ] && kill "$tpid" 2>/dev/null' EXIT

fail() { echo "FAIL timeline: $*"; exit 1; }

mkdir -p "$BUILD" && cd "$BUILD" || fail "cannot make $BUILD"
if ! grep -q 'define PMV_TIMELINE 1' config.h 2>/dev/null; then
	"$SRC/configure" --enable-timeline >"$OUT/build.log" 2>&1 ||
		fail "configure --enable-timeline: $(tail -1 "$OUT/build.log")"
fi
make -j2 >"$OUT/build.log" 2>&1 || fail "make: $(grep -m1 error "$OUT/build.log")"

BIN=$BUILD/fabtests/benchmarks/fi_pmem_lat
export FI_PROVIDER_PATH=$BUILD/.libs TMPDIR=${TMPDIR:-/tmp}
PMEM2_FORCE_GRANULARITY=page FI_PMEMVERBS_TIMELINE=$OUT/target \
	timeout 60 "$BIN" -y -S 64 -B "$PORT" >"$OUT/t.log" 2>&1 &
tpid=$!
sleep 0.5
FI_PMEMVERBS_TIMELINE=$OUT/initiator timeout 60 "$BIN" -s 127.0.0.1 -B "$PORT" \
	-S 64 -I 300 -W 20 -m commit >"$OUT/i.log" 2>&1 ||
	fail "fi_pmem_lat: $(tail -1 "$OUT/i.log")"
wait "$tpid" || fail "the target: $(tail -1 "$OUT/t.log")"
tpid=
report=$(python3 "$SRC/fabtests/scripts/pmv_timeline.py" "$OUT"/initiator.* \
	 "$OUT"/target.* 300 2>&1) || fail "pmv_timeline.py: $report"
steps=$(grep -cE '^[a-z].* +-?[0-9.]+ +-?[0-9.]+$' <<<"$report")
want=$(grep -c "^    ('" "$SRC/fabtests/scripts/pmv_timeline.py")
[ "$steps" -eq "$want" ] ||
	fail "$steps of $want steps timed: $(tr '\n' ' ' <<<"$report")"
grep -q '^300 commits' <<<"$report" || fail "$(head -1 <<<"$report")"
echo "PASS timeline: 300 commits, $steps steps each lined up on both sides"
