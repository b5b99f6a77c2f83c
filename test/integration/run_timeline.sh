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
ROOT=$(cd "$1" && pwd) BUILD=$2 PORT=$3
PROC_TIMEOUT=60 READY_POLLS=100
# shellcheck source=../common/pmv_pair.sh
. "$ROOT/test/common/pmv_pair.sh"
pmv_scratch pmv_timeline
tpid=
trap 'pmv_stop "$tpid"; pmv_scratch_remove' EXIT

fail() { echo "FAIL timeline: $*"; exit 1; }

mkdir -p "$BUILD" && cd "$BUILD" || fail "cannot make $BUILD"
if ! grep -q 'define PMV_TIMELINE 1' config.h 2>/dev/null; then
	"$ROOT/configure" --enable-timeline >"$WORK/build.log" 2>&1 ||
		fail "configure --enable-timeline: $(tail -1 "$WORK/build.log")"
fi
make -j2 >"$WORK/build.log" 2>&1 ||
	fail "make: $(grep -m1 error "$WORK/build.log")"

BIN=$BUILD/fabtests/benchmarks/fi_pmem_lat
export FI_PROVIDER_PATH=$BUILD/.libs
TMPDIR=$SHM PMEM2_FORCE_GRANULARITY=page FI_PMEMVERBS_AGENT_THREAD=0 \
	FI_PMEMVERBS_TIMELINE=$WORK/target timeout "$PROC_TIMEOUT" "$BIN" -y \
	-S 64 -B "$PORT" >"$WORK/target.out" 2>"$WORK/target.err" &
tpid=$!
# the target says it listens on stderr
if ! wait_line "$tpid" "$WORK/target.err" '\[target\] .* listening'; then
	wait "$tpid"
	fail "no target listening: $(describe_side target $? "$WORK/target.err")"
fi
FI_PMEMVERBS_TIMELINE=$WORK/initiator timeout "$PROC_TIMEOUT" "$BIN" \
	-s 127.0.0.1 -B "$PORT" -S 64 -I 300 -W 20 -m commit \
	>"$WORK/initiator.out" 2>"$WORK/initiator.err" ||
	fail "$(describe_side initiator $? "$WORK/initiator.err")"
wait "$tpid" || fail "$(describe_side target $? "$WORK/target.err")"
tpid=
report=$(python3 "$ROOT/fabtests/scripts/pmv_timeline.py" \
	 "$WORK"/initiator.[0-9]* "$WORK"/target.[0-9]* 300 2>&1) ||
	fail "pmv_timeline.py: $report"
# every step timed in every commit: the target runs no agent thread
# (FI_PMEMVERBS_AGENT_THREAD=0), so its busy CQ reads serve every request
# (with one, a loaded host let the agent serve all 300: no CQ read marks)
steps=$(grep -cE '^[a-z].* +-?[0-9.]+ +-?[0-9.]+( \(.*\))?$' <<<"$report")
whole=$(grep -cE '^[a-z].* +-?[0-9.]+ +-?[0-9.]+$' <<<"$report")
want=$(grep -c "^    ('" "$ROOT/fabtests/scripts/pmv_timeline.py")
[[ $steps -eq $want && $whole -eq $want ]] ||
	fail "$steps of $want steps timed, $whole in every commit: $(tr '\n' ' ' <<<"$report")"
grep -q '^300 commits' <<<"$report" || fail "$(head -1 <<<"$report")"
echo "PASS timeline: 300 commits lined up on both sides, $steps steps timed ($whole in every commit)"
