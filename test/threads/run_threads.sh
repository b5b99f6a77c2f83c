#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Threads (issue 11 item 7): pmv_threads target/initiator pairs over
# 127.0.0.1 on FI_THREAD_SAFE domains.  For each granularity (page,
# cache_line, byte, byte with reads behind the writes, and byte with every
# commit sent to the agent) and each
# mode (one-ep: the threads on one endpoint and one CQ; multi-ep: an
# endpoint and a CQ each; mix: two endpoints on one CQ, plain writes,
# FI_FENCE commits and pure flushes), every completion is checked by the
# oracle when it is read.  Two runs must fail and are PASS only when the
# initiator detects it (exit 3): the agent skips an extent
# (FI_PMEMVERBS_FAULT_SKIP_EXTENT), and -X corrupt.  Prints one
# "PASS|FAIL name" line per check and, as its last line, "N passed, N failed".
#
# usage: run_threads.sh BIN [PORT_BASE]
#   BIN        the pmv_threads binary
#   PORT_BASE  first TCP port (default 12500); one port per run
# env:
#   FI_PROVIDER_PATH     directory of libpmemverbs-fi.so (default build/.libs)
#   PMV_THREADS_GRANS    granularities (default "page cache_line byte
#                        byte-agent")
#   PMV_THREADS_MODES    modes (default "one-ep multi-ep mix")
#   PMV_THREADS_T        initiator threads (default 4)
#   PMV_THREADS_N        batches (each ending in a commit) per thread (default 500)
#   PMV_THREADS_FAULTS   0: leave out the two runs that must fail (default 1)
#   PMV_THREADS_WIDE     0: leave out the runs with twice the threads (default 1)
#   PMV_THREADS_UNGATED  0: leave out the runs whose target's CQ has no
#                        remote CQ data (endpoints without a gate; default 1)
#   PMV_THREADS_SWEEP    0: leave out the fault sweeps (default 1): the
#                        initiator's N-th allocation (N = 1, 2, ... until
#                        one is never reached) or N-th core operation
#                        fails; every run must pass its checks or end at
#                        set-up with an error
#   PMV_THREADS_WRAP     a command both processes run under (e.g. valgrind ...)
#   PMV_THREADS_TIMEOUT  seconds per process (default 300)
#   PMV_THREADS_KEEP=1   keep every process's output (its directory is printed)
set -u

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../common/pmv_pair.sh
. "$ROOT/test/common/pmv_pair.sh" || { echo "no test/common/pmv_pair.sh" >&2; exit 2; }
pmv_runner_args 14,36p 12500 "$@"
GRANS=${PMV_THREADS_GRANS:-page cache_line byte byte-agent}
MODES=${PMV_THREADS_MODES:-one-ep multi-ep mix}
THREADS=${PMV_THREADS_T:-4}
BATCHES=${PMV_THREADS_N:-500}
PROC_TIMEOUT=${PMV_THREADS_TIMEOUT:-300}
read -r -a WRAP <<<"${PMV_THREADS_WRAP:-}"
READY_POLLS=600 # x 0.1 s for READY (valgrind starts slowly)

pmv_scratch pmv_threads
TPID=""

# Stops a target still running (ours, by pid) and removes the files.
cleanup() {
	pmv_stop "$TPID"
	pmv_scratch_remove "${PMV_THREADS_KEEP:-0}"
}
trap cleanup EXIT

passed=0
failed=0

# A sanitizer's report in a process's stderr, indented: its first lines
# the first time its SUMMARY line is seen, else that line only.
declare -A SEEN_REPORTS=()
show_report() {
	local err=$1 summary
	grep -q -E 'WARNING: ThreadSanitizer|ERROR: AddressSanitizer|runtime error' "$err" 2>/dev/null || return 0
	summary=$(grep -m1 -E '^SUMMARY: ' "$err")
	if [[ -n $summary && -n ${SEEN_REPORTS[$summary]:-} ]]; then
		echo "    (the report shown above again: $summary)"
		return 0
	fi
	[[ -n $summary ]] && SEEN_REPORTS[$summary]=1
	grep -v '^[[:space:]]*$' "$err" | head -n 60 | sed 's/^/    /'
}

# judge_role (pmv_pair.sh), then the sanitizer's report of a role that
# failed.
judge_shown() {
	judge_role "$@"
	[[ $3 -ne 0 ]] && show_report "$4/$2.err"
	return 0
}

# A run that must fail: the initiator must exit 3 with a DETECTED line.
judge_detect() {
	local prefix=$1 rc=$2 dir=$3 what
	what=$(grep -m1 '^DETECTED' "$dir/initiator.out" | cut -c1-240)
	if [[ $rc -eq 3 && -n $what ]]; then
		report PASS "$prefix/detected" "$what"
	else
		report FAIL "$prefix/detected" "expected exit 3 with a DETECTED line, got $(describe_rc "$rc" "$dir/initiator.err")"
		show_report "$dir/initiator.err"
	fi
}

# Starts the target (TPID) for CONNS connections, its region and oracle
# log SHM.region and SHM.oracle; 0 once it is READY.
start_target() {
	local dir=$1 shm=$2 gran=$3 port=$4 conns=$5
	shift 5
	read -r -a targs <<<"${TARGS:-}"
	env PMEM2_FORCE_GRANULARITY="$gran" FI_PMEMVERBS_ORACLE="$shm.oracle" "$@" \
		timeout "$PROC_TIMEOUT" "${WRAP[@]}" "$BIN" -r target -P "$port" \
		-f "$shm.region" -n "$conns" -p 2 "${targs[@]}" \
		>"$dir/target.out" 2>"$dir/target.err" &
	TPID=$!
	wait_line "$TPID" "$dir/target.out"
}

# Waits for the target to end by itself (its connections ended), at most
# GRACE seconds after the initiator; then stops it.  Sets TRC.
GRACE=$([[ ${#WRAP[@]} -gt 0 ]] && echo 120 || echo 20)
finish_target() {
	local i
	for ((i = 0; i < GRACE * 10; i++)); do
		kill -0 "$TPID" 2>/dev/null || break
		sleep 0.1
	done
	kill "$TPID" 2>/dev/null
	wait "$TPID"
	TRC=$?
	TPID=""
}

# How many connections a mode makes with T threads: conns_of MODE T.
conns_of() {
	case $1 in
	one-ep) echo 1 ;;
	multi-ep) echo "$2" ;;
	mix) [[ $2 -lt 2 ]] && echo 1 || echo 2 ;;
	esac
}

# A run with an injected fault in the initiator (-X faults): PASS if it
# passed every check (each successful commit durable at its completion,
# the counters agreeing), or if the fault ended it at set-up with an error
# (ERROR line, no verdict); FAIL on a crash, a hang, a failed check or an
# early completion.  Sets REACHED=0 when the fault never fired (the sweep
# has passed the last call of that point).
judge_fault() {
	local prefix=$1 rc=$2 dir=$3 err
	REACHED=1
	grep -q 'fault injection: call' "$dir/${FAULT_SIDE:-initiator}.err" ||
		REACHED=0
	err=$(grep -m1 '^ERROR' "$dir/initiator.err" | cut -c1-200)
	if [[ $rc -eq 1 && -n $err && $REACHED -eq 1 ]] &&
		! grep -q '^\(PASS\|FAIL\) ' "$dir/initiator.out"; then
		report PASS "$prefix/refused" "ended at set-up: $err"
		return
	fi
	judge_shown "$prefix" initiator "$rc" "$dir"
	[[ $REACHED -eq 1 ]] || echo "  $prefix: the fault never fired"
}

# True (and REACHED=1) if a target's own injected fault ended it before
# READY with an error (FAULT_SIDE=target sweeps): no crash, no hang.
target_refused() {
	local judge=$1 trc=$2 dir=$3
	[[ $judge == fault && ${FAULT_SIDE:-} == target && $trc -eq 1 ]] &&
		grep -q 'fault injection: call' "$dir/target.err" &&
		grep -q '^ERROR' "$dir/target.err" || return 1
	REACHED=1
}

# run NAME GRAN MODE JUDGE [TARGET_ENV... --] [INITIATOR_ARGS...]
# GRAN byte-agent: byte, with FI_PMEMVERBS_METHOD=agent and -A; GRAN byte:
# with FI_PMEMVERBS_METHOD=read_flush (a read of the target's generation
# behind each commit's write).  JUDGE:
# lines (the roles' verdicts) or detect (the initiator must exit 3).  With
# T set (T=8 run ...), that many threads instead of PMV_THREADS_T.
run() {
	local name=$1 gran=$2 mode=$3 judge=$4 port=$PORT irc trc t=${T:-$THREADS}
	local dir=$WORK/$1 shm=$SHM/$1 tenv=() iargs=() ienv=() g=${2%-*} region
	shift 4
	if [[ " $* " == *" -- "* ]]; then
		while [[ $1 != -- ]]; do tenv+=("$1"); shift; done
		shift
	fi
	iargs=("$@")
	read -r -a extra <<<"${IENV:-}"
	ienv+=("${extra[@]}")
	PORT=$((PORT + 1))
	mkdir -p "$dir" "$(dirname "$shm")"
	if [[ $gran == *-agent ]]; then
		ienv+=(FI_PMEMVERBS_METHOD=agent)
		iargs+=(-A)
	elif [[ $gran == byte ]]; then
		ienv+=(FI_PMEMVERBS_METHOD=read_flush)
	fi
	if ! start_target "$dir" "$shm" "$g" "$port" "$(conns_of "$mode" "$t")" \
		"${tenv[@]}"; then
		kill "$TPID" 2>/dev/null
		wait "$TPID"
		trc=$?
		TPID=""
		if target_refused "$judge" "$trc" "$dir"; then
			report PASS "$name/refused" "the target ended at set-up: $(grep -m1 '^ERROR' "$dir/target.err" | cut -c1-200)"
		else
			report FAIL "$name/target" "no READY: $(describe_rc "$trc" "$dir/target.err")"
			show_report "$dir/target.err"
		fi
		rm -f "$shm".*
		return
	fi
	region=$(awk '/^REGION/ {print $2 ":" $3; exit}' "$dir/target.out")
	env -u PMEM2_FORCE_GRANULARITY "${ienv[@]}" timeout "$PROC_TIMEOUT" \
		"${WRAP[@]}" "$BIN" -r initiator -P "$port" -m "$mode" \
		-x "$region" -F "$shm.region" -o "$shm.oracle" -g "$g" \
		-T "$t" -N "$BATCHES" "${iargs[@]}" \
		>"$dir/initiator.out" 2>"$dir/initiator.err"
	irc=$?
	# an initiator ended early by its fault leaves the target waiting
	[[ $judge == fault && $irc -ne 0 ]] && kill "$TPID" 2>/dev/null
	finish_target
	trc=$TRC
	# a target's own fault may end it with an error, never a crash
	[[ $judge == fault && ${FAULT_SIDE:-} == target && $trc -eq 1 ]] &&
		grep -q '^ERROR' "$dir/target.err" && trc=0
	grep -h '^INFO' "$dir/initiator.out" | sed "s|^|  $name: |"
	case $judge in
	detect) judge_detect "$name" "$irc" "$dir" ;;
	fault) judge_fault "$name" "$irc" "$dir" ;;
	*) judge_shown "$name" initiator "$irc" "$dir" ;;
	esac
	if [[ $judge == fault && $irc -ne 0 ]]; then
		judge_stopped_target "$name" "$trc" "$dir"
	else
		judge_shown "$name" target "$trc" "$dir"
	fi
	rm -f "$shm".*
}

# A target this script stopped (SIGTERM, 143) after its initiator's fault
# ended that early: a crash of its own (a signal other than SIGTERM, or
# a sanitizer's report) is still a FAIL.
judge_stopped_target() {
	local name=$1 trc=$2 dir=$3
	if [[ $trc -gt 128 && $trc -ne 143 ]] || [[ $trc -eq 124 ]] ||
	   grep -q -E 'ERROR: AddressSanitizer|WARNING: ThreadSanitizer|runtime error' "$dir/target.err" 2>/dev/null; then
		report FAIL "$name/target" "$(describe_rc "$trc" "$dir/target.err")"
		show_report "$dir/target.err"
	fi
}

# fault_sweep POINT N...: one run per N with the initiator's N-th call at
# failure point POINT (FI_PMEMVERBS_FAULT_<POINT>) failing, or the
# target's with FAULT_SIDE=target; stops after the first N the run never
# reached.
fault_sweep() {
	local point=$1 n var side=${FAULT_SIDE:-initiator}
	shift
	# FI_PMEMVERBS_PEER_TIMEOUT_MS: a target that cannot serve fails the
	# commits in flight after 2 s, not 10
	for n in "$@"; do
		var="FI_PMEMVERBS_FAULT_${point^^}=$n FI_LOG_LEVEL=warn"
		if [[ $side == target ]]; then
			# shellcheck disable=SC2086 # two words, on purpose
			IENV=FI_PMEMVERBS_PEER_TIMEOUT_MS=2000 \
				run "fault-target-$point-$n/mix-T$THREADS/cache_line" \
				cache_line mix fault $var -- -X faults
		else
			IENV="$var FI_PMEMVERBS_PEER_TIMEOUT_MS=2000" \
				run "fault-$point-$n/mix-T$THREADS/cache_line" \
				cache_line mix fault -X faults
		fi
		[[ $REACHED -eq 1 ]] && continue
		[[ $n == "$1" ]] && report FAIL "fault-$side-$point" "its first call never failed: is the plugin built with --enable-fault-injection?"
		break
	done
}

echo "pmemverbs threads tests: $BIN (FI_PROVIDER_PATH=$FI_PROVIDER_PATH, 127.0.0.1, ports from $PORT, $THREADS threads x $BATCHES batches${WRAP[*]:+, under ${WRAP[0]}})"
for gran in $GRANS; do
	for mode in $MODES; do
		run "$mode-T$THREADS/$gran" "$gran" "$mode" lines
	done
done
# a target whose CQ has no remote CQ data: its endpoints take no gate and
# are served as over verbs, by every read looking into their inboxes (the
# domain's served list), from its two poller threads at once
if [[ ${PMV_THREADS_UNGATED:-1} != 0 ]]; then
	TARGS="-c context" run "ungated/multi-ep-T$THREADS/page" page multi-ep lines
	TARGS="-c context" run "ungated/mix-T$THREADS/cache_line" cache_line mix lines
fi
# twice the threads on one endpoint and on the mix's two
if [[ ${PMV_THREADS_WIDE:-1} != 0 ]]; then
	T=$((THREADS * 2)) run "one-ep-T$((THREADS * 2))/page" page one-ep lines
	T=$((THREADS * 2)) run "mix-T$((THREADS * 2))/cache_line" cache_line mix lines
fi
if [[ ${PMV_THREADS_FAULTS:-1} != 0 ]]; then
	# the agent skips its 7th extent: the oracle must see a commit
	# complete with that extent not persisted
	run "fault-skip-extent/one-ep-T$THREADS/cache_line" cache_line one-ep \
		detect FI_PMEMVERBS_FAULT_SKIP_EXTENT=7 --
	# the checker expects a wrong first byte for the 25th commit it checks
	run "corrupt/one-ep-T$THREADS/byte" byte one-ep detect -X corrupt
fi
# every allocation of the initiator's commit machinery failing in turn,
# and operations the engine posts to the core at intervals
if [[ ${PMV_THREADS_SWEEP:-1} != 0 ]]; then
	REACHED=1
	fault_sweep alloc $(seq 1 40)
	fault_sweep core_op 1 2 3 5 8 13 50 200 1000
	FAULT_SIDE=target fault_sweep alloc $(seq 1 40)
fi
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
