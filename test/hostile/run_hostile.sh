#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Hostile-peer tests of pmemverbs (issue 11 item 5).  For each granularity:
# a pmemverbs target (a /dev/shm region between PROT_NONE guard pages), an
# honest pmemverbs initiator that commits all along, and a hostile client on
# the plain tcp core (FI_PROVIDER=tcp) that impersonates a pmemverbs peer
# and writes crafted requests and bytes into the target's inbox
# (pmv_hostile_*.c).  Prints one "PASS|FAIL name" line per check, the
# hostile's summary of the refusals it got, and as its last line
# "N passed, N failed".
#
# usage: run_hostile.sh BIN [PORT_BASE]
#   BIN        the pmv_hostile binary
#   PORT_BASE  first TCP port (default 10400); one port per granularity
# env:
#   FI_PROVIDER_PATH      directory of libpmemverbs-fi.so (default build/.libs)
#   PMV_HOSTILE_GRANS     granularities (default "page cache_line byte")
#   PMV_HOSTILE_SEED      the hostile's random seed (default 1)
#   PMV_HOSTILE_VERBOSE=1 print every attack's outcome
#   PMV_HOSTILE_KEEP=1    keep every process's output (its directory is printed)
set -u

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../common/pmv_pair.sh
. "$ROOT/test/common/pmv_pair.sh" || { echo "no test/common/pmv_pair.sh" >&2; exit 2; }
pmv_runner_args 12,20p 10400 "$@"
GRANS=${PMV_HOSTILE_GRANS:-page cache_line byte}
SEED=${PMV_HOSTILE_SEED:-1}
VERBOSE=()
[[ ${PMV_HOSTILE_VERBOSE:-0} == 1 ]] && VERBOSE=(-v)
PROC_TIMEOUT=500 # seconds, per process (each bounds its own waits too)
READY_POLLS=300  # x 0.1 s for READY and STARTED

SEGV_HINT="a guard page?"
pmv_scratch pmv_hostile
PIDS=()
RUNNERS=() # one shell per granularity (the runs go on at once)

# Stops the processes still running (ours, by pid) and removes the files.
cleanup() {
	pmv_stop "${RUNNERS[@]}" "${PIDS[@]}"
	pmv_scratch_remove "${PMV_HOSTILE_KEEP:-0}"
}
trap cleanup EXIT

passed=0
failed=0

# A request flagged GATED whose write carried no completion (the hostile's
# are plain writes) is refused after the target's gate wait, its
# FI_PMEMVERBS_PEER_TIMEOUT_MS (10 s by default): 2 s here, so that the
# hostile, which waits 5 s for an ack, sees those refusals (about 25 per
# granularity, and 5 s each when unanswered), still 20 times the longest
# wait for a gated write's completion seen on a loaded host.
start_target() {
	local gran=$1 port=$2 dir=$3
	env PMEM2_FORCE_GRANULARITY="$gran" FI_PMEMVERBS_PEER_TIMEOUT_MS=2000 \
		timeout "$PROC_TIMEOUT" "$BIN" \
		-r target -a 127.0.0.1 -P "$port" -f "$SHM/$gran.region" \
		>"$dir/target.out" 2>"$dir/target.err" &
	TPID=$!
	PIDS+=("$TPID")
	wait_line "$TPID" "$dir/target.out" READY || return 1
	REGION=$(awk '/^REGION/ {print $2; exit}' "$dir/target.out")
}

# Starts the honest initiator (HPID); 0 once its first commit completed.
start_honest() {
	local port=$1 dir=$2
	timeout "$PROC_TIMEOUT" "$BIN" -r honest -a 127.0.0.1 -P "$port" \
		-x "$REGION" -c "$dir/ctl" -m "$dir/attack.done" \
		>"$dir/honest.out" 2>"$dir/honest.err" &
	HPID=$!
	PIDS+=("$HPID")
	wait_line "$HPID" "$dir/honest.out" STARTED
}

# The target survived: it reached its final checks and exited by itself
# (0, or 1 for a failed check).  libpsm2, which libfabric loads, catches
# SIGSEGV, prints "terminated with signal 11" and exits 1: that is a crash.
judge_target_alive() {
	local prefix=$1 rc=$2 dir=$3 profile crash
	profile=$(awk '/^REGION/ {print $4; exit}' "$dir/target.out")
	crash=$(grep -m1 'terminated with signal' "$dir/target.err")
	if [[ ($rc -eq 0 || $rc -eq 1) && -z $crash ]] &&
	   grep -qE '^(PASS|FAIL) target-served' "$dir/target.out"; then
		report PASS "$prefix/target-alive" "the target survived the attack and exited $rc (profile ${profile:-?})"
	else
		report FAIL "$prefix/target-alive" "target ${crash:-$(describe_rc "$rc" "$dir/target.err")}"
	fi
}

# One run: target, honest, hostile on granularity GRAN and PORT.
run() {
	local gran=$1 port=$2 dir=$WORK/$1 prefix=$1 xrc hrc trc
	mkdir -p "$dir"
	truncate -s 4096 "$dir/ctl"
	if ! start_target "$gran" "$port" "$dir"; then
		kill "$TPID" 2>/dev/null
		wait "$TPID"
		report FAIL "$prefix/target-alive" "no READY: target $(describe_rc $? "$dir/target.err")"
		return
	fi
	if ! start_honest "$port" "$dir"; then
		report FAIL "$prefix/honest" "no first commit: $(describe_rc 1 "$dir/honest.err")"
	fi
	env FI_PROVIDER=tcp timeout "$PROC_TIMEOUT" "$BIN" -r hostile \
		-a 127.0.0.1 -P "$port" -x "$REGION" -c "$dir/ctl" \
		-s "$SEED" "${VERBOSE[@]}" >"$dir/hostile.out" 2>"$dir/hostile.err"
	xrc=$?
	touch "$dir/attack.done"
	wait "$HPID"
	hrc=$?
	wait "$TPID"
	trc=$?
	PIDS=()
	judge_target_alive "$prefix" "$trc" "$dir"
	judge_role "$prefix" target "$trc" "$dir"
	judge_role "$prefix" honest "$hrc" "$dir"
	judge_role "$prefix" hostile "$xrc" "$dir"
	grep -h -E '^(SUMMARY|INFO target: requests|INFO target: [0-9]+ conn)' \
		"$dir/hostile.out" "$dir/target.out" | sed "s|^|  $prefix: |"
	[[ ${#VERBOSE[@]} -gt 0 ]] && grep -h -E '^(REFUSED|IGNORED|INFO)' \
		"$dir/hostile.out" | sed "s|^|  $prefix: |"
	return 0
}

echo "pmemverbs hostile-peer tests: $BIN (FI_PROVIDER_PATH=$FI_PROVIDER_PATH, 127.0.0.1, ports from $PORT, seed $SEED)"
# The granularities run at once, each on its own port and in its own
# directory (a run mostly waits: the target refuses each of the hostile's
# gated requests after its 2 s gate wait), each printing into its own file,
# printed in order and counted once all ended.  A run that printed no
# target verdict (its shell died) is a failure.
for gran in $GRANS; do
	(trap 'pmv_stop "${PIDS[@]}"' EXIT
	 trap 'exit 1' TERM INT
	 run "$gran" "$PORT") >"$WORK/$gran.lines" 2>&1 &
	RUNNERS+=("$!")
	PORT=$((PORT + 1))
done
wait "${RUNNERS[@]}"
RUNNERS=()
for gran in $GRANS; do
	cat "$WORK/$gran.lines"
	passed=$((passed + $(grep -c '^PASS ' "$WORK/$gran.lines")))
	failed=$((failed + $(grep -c '^FAIL ' "$WORK/$gran.lines")))
	grep -qE "^(PASS|FAIL) $gran/target-alive" "$WORK/$gran.lines" ||
		report FAIL "$gran/target-alive" "its run printed no verdict (see above)"
done
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
