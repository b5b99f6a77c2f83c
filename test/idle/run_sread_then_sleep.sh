#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# run_sread_then_sleep.sh: the end of a wait the agent relied on.  A
# target whose one FI_RMA_PMEM endpoint is served by its thread in
# fi_cq_sread (fi_pmem_idle -m sread-sleep, 1 s idle) then reads its CQ
# only once every 50 ms.  The agent napped with no timeout while that
# wait served the endpoint; the wait's end must wake it, or every commit
# waits for the target's next read.  Watchdog (not a timing goal): the
# first commit after the idle period and the slowest of 20 commits, 2 ms
# apart, under 25 ms, half the target's read gap (each took about 48 ms
# with the wake left out).
#
# usage: run_sread_then_sleep.sh BUILD_DIR PORT
# Prints one PASS or FAIL line, then "N passed, N failed".
set -u

if [[ $# -ne 2 || ! -d $1 ]]; then
	echo "usage: $0 BUILD_DIR PORT" >&2
	exit 2
fi
build=$1 port=$2 rc=0 passed=0 failed=0
tout=$(mktemp) iout=$(mktemp)
trap 'rm -f "$tout" "$iout"' EXIT
# report and pmv_idle_pair
. "$(dirname "$0")/../common/pmv_suite.sh"

pmv_idle_pair "$build" "$port" "$tout" "$iout" -n 1 -t 1 -m sread-sleep -- \
	-n 1 -t 1 -k 20 -g 2000 || rc=$?
first=$(sed -n 's/^after-idle first commit latency: .*first_commit_us=//p' "$iout")
p99=$(sed -n 's/^BUSY .*p99_us=//p' "$iout")
if [[ $rc -eq 0 && -n $first && -n $p99 ]] &&
   awk -v f="$first" -v p="$p99" 'BEGIN { exit !(f < 25000 && p < 25000) }'; then
	report PASS sread-then-sleep "first commit after the wait ${first} us, slowest of 20 ${p99} us (watchdog 25000)"
else
	report FAIL sread-then-sleep "exit $rc, first commit ${first:-?} us, slowest of 20 ${p99:-?} us (watchdog 25000): $(tail -n 2 "$iout" "$tout" | tr '\n' ' ')"
fi
echo "$passed passed, $failed failed"
