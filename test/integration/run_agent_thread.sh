#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# FI_PMEMVERBS_AGENT_THREAD=0 over tcp: a PAGE target (fi_pmem_lat) with
# no agent thread, busy (fi_cq_read, fi_cntr_read), in fi_cq_sread on CQs of wait
# objects none, unspec, fd and pollfd, in epoll after fi_trywait and in
# fi_cntr_wait, serves every commit from its own reads and waits; each
# commit checked by the target's oracle when it completes (0 early).
# The target's threads are watched while it serves: no "pmv_agent"
# thread with the parameter 0, and one without it (the control run, so
# the watch is seen to find the thread when there is one).
# Prints one PASS or FAIL line per run, then "N passed, N failed".
#
# usage: run_agent_thread.sh SOURCE_DIR BUILD_DIR FIRST_PORT
set -u

[ $# -eq 3 ] || { sed -n '13p' "$0" | sed 's/^# //' >&2; exit 2; }
ROOT=$(cd "$1" && pwd) BUILD=$2 PORT=$3
PROC_TIMEOUT=60 READY_POLLS=100
# shellcheck source=../common/pmv_pair.sh
. "$ROOT/test/common/pmv_pair.sh"
pmv_scratch pmv_agent_thread
tpid=
trap 'pmv_stop "$tpid"; pmv_scratch_remove' EXIT

BIN=$BUILD/fabtests/benchmarks/fi_pmem_lat
passed=0 failed=0 # report's counts (pmv_suite.sh)
export FI_PROVIDER_PATH=$BUILD/.libs

# Agent threads seen in the target (the child of timeout $1) over the
# life of process $2 (the initiator), as the most at one look, every 20 ms.
agent_threads_while() {
	local most=0 n pid
	pid=$(pgrep -P "$1" -f fi_pmem_lat) || { echo -1; return; }
	while kill -0 "$2" 2>/dev/null; do
		n=$(cat /proc/"$pid"/task/*/comm 2>/dev/null | grep -c '^pmv_agent$')
		((n > most)) && most=$n
		sleep 0.02
	done
	echo "$most"
}

# One run: name, the target's FI_PMEMVERBS_AGENT_THREAD ("" unset),
# threads expected, the target's wait flags; IDLE: microseconds of idle
# before each initiator iteration (2000: the target is asleep then).
run_one() {
	local name=$1 param=$2 want=$3 ipid seen out early
	shift 3
	local log=$SHM/oracle.$PORT
	local env=(TMPDIR="$SHM" PMEM2_FORCE_GRANULARITY=page
		   FI_PMEMVERBS_ORACLE="$log")
	if ! pmv_oracle_log "$log"; then
		report FAIL "agent-thread $name" "cannot create $log"
		return
	fi
	[[ -n $param ]] && env+=(FI_PMEMVERBS_AGENT_THREAD="$param")
	env "${env[@]}" timeout "$PROC_TIMEOUT" "$BIN" -B "$PORT" -S 64,4096 \
		"$@" >"$WORK/target.$PORT.out" 2>"$WORK/target.$PORT.err" &
	tpid=$!
	if ! wait_line "$tpid" "$WORK/target.$PORT.err" '\[target\] .* listening'; then
		wait "$tpid"
		report FAIL "agent-thread $name" "no target listening: $(describe_side target $? "$WORK/target.$PORT.err")"
		tpid= PORT=$((PORT + 1))
		return
	fi
	timeout "$PROC_TIMEOUT" "$BIN" -s 127.0.0.1 -B "$PORT" -S 64,4096 \
		-I 100 -W 5 -i "${IDLE:-2000}" -m read8,commit -O "$log" \
		>"$WORK/initiator.$PORT.out" 2>"$WORK/initiator.$PORT.err" &
	ipid=$!
	seen=$(agent_threads_while "$tpid" "$ipid")
	out=
	wait "$ipid" || out="initiator: $(describe_side initiator $? "$WORK/initiator.$PORT.err")"
	wait "$tpid" || out+=" target: $(describe_side target $? "$WORK/target.$PORT.err")"
	tpid=
	early=$(grep -m1 '^early:' "$WORK/initiator.$PORT.out")
	if [[ -z $out && $seen -eq $want && $early =~ ^early:\ 0\ of\ [1-9] && $early == *"; 0 checks failed"* ]]; then
		report PASS "agent-thread $name" "$seen agent threads seen, ${early#early: }"
	else
		report FAIL "agent-thread $name" "$seen agent threads seen (want $want); ${early:-no oracle line}${out:+; $out}"
	fi
	PORT=$((PORT + 1))
}

run_one "control (parameter unset), fi_cq_sread" "" 1 -w unspec
IDLE=0 run_one "0, busy fi_cq_read, back to back" 0 0 -y
IDLE=0 run_one "0, -w unspec, back to back" 0 0 -w unspec
run_one "0, busy fi_cntr_read" 0 0 -K -y
for wait in none unspec fd pollfd epoll cntr; do
	run_one "0, -w $wait" 0 0 -w "$wait"
done
echo "$passed passed, $failed failed"
