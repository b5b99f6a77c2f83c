#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Idle CPU of pmemverbs as the number of connections grows: runs
# fi_pmem_idle (fi_pmem_idle(1)) target and initiator over 127.0.0.1 for
# each number of connections, the target pinned to CPU 0 and the initiator
# to CPU 1 (taskset, when there are two CPUs), with the plugin of one build
# (FI_PROVIDER_PATH=BUILD_DIR/.libs), and prints a table: connections, the
# target's and the initiator's process CPU over the idle period (percent
# of one core) and the latency of the first commit after it.  A run that
# fails is reported with its reason (the error lines of its logs) and
# the next one runs.
#
# Usage: pmv_idle.sh [-t SECONDS] [-m none|sread|unspec|poll|sleep|cntr|eq]
#                    [-n "N..."] [-k COMMITS [-g US]] [-q] [-P PROV]
#                    [-p PORT] [-o LOG_DIR] BUILD_DIR
#   -t  idle period of each run (3)
#   -m  what the target application does while idle (none: never reads
#       its CQ; unspec: the same with an FI_WAIT_UNSPEC CQ; sread: waits
#       in fi_cq_sread; poll: reads its CQ with fi_cq_read all along, and
#       the table adds what one read of the idle CQ cost, in ns; sleep:
#       as none, then one read every 50 ms through the -k commits, which
#       the agent alone serves; cntr: as poll, reading with fi_cntr_read
#       a counter that every endpoint's FI_WRITE is bound to; eq: as poll,
#       reading with fi_eq_read the EQ every endpoint is bound to)
#   -q  the target's connections each on a CQ of its own, in
#       FI_CQ_FORMAT_CONTEXT (its endpoints take no gate, as over verbs);
#       -m poll reads the first connection's
#   -P  provider, both sides (pmemverbs; tcp: the core's own figures)
#   -n  connection counts ("16 64 256 1024")
#   -k  then COMMITS commits on one connection while the others stay idle,
#       one after the other: the table adds their p50 and p99 (us) and the
#       target's CPU from the end of the idle period to the last commit
#       (percent of one core)
#   -g  with -k, the initiator sleeps US microseconds before each commit
#       (the target idles between them)
#   -p  first port (a random one in 20000-39999; one more per run)
#   -o  where the logs go (a temporary directory, kept when a run fails)
# Env:  PMV_IDLE_BIN: the fi_pmem_idle binary
#       (BUILD_DIR/fabtests/functional/fi_pmem_idle by default); the
#       environment (PMEM2_FORCE_GRANULARITY, FI_PMEMVERBS_*) passes on.
# Exit status: 0 if every run succeeded, 1 if one failed, 2 on usage.
set -uo pipefail
export LC_ALL=C

PMV_SCRIPT=pmv_idle.sh
PMV_DIE_STATUS=2
# shellcheck source=pmv_bench_lib.sh
. "$(dirname "$0")/pmv_bench_lib.sh" ||
	{ echo "pmv_idle.sh: no pmv_bench_lib.sh" >&2; exit 2; }

usage() {
	sed -n 's/^# \{0,1\}//; /^Usage:/,/^Exit status/p' "$0" >&2
	exit 2
}

SECONDS_IDLE=3
MODE=none
PER_CONN=
PROV=pmemverbs
COUNTS="16 64 256 1024"
BUSY=
GAP=
port=$((20000 + RANDOM % 20000))
LOGS=
while getopts "t:m:n:k:g:P:p:o:qh" opt; do
	case $opt in
	t) SECONDS_IDLE=$OPTARG ;;
	m) MODE=$OPTARG ;;
	q) PER_CONN=-q ;;
	n) COUNTS=$OPTARG ;;
	k) BUSY=$OPTARG ;;
	g) GAP=$OPTARG ;;
	P) PROV=$OPTARG ;;
	p) port=$OPTARG ;;
	o) LOGS=$OPTARG ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 1 ] || usage
BUILD=$(cd "$1" 2>/dev/null && pwd) || {
	echo "pmv_idle.sh: no build directory $1" >&2
	exit 2
}
BIN=${PMV_IDLE_BIN:-$BUILD/fabtests/functional/fi_pmem_idle}
[ -x "$BIN" ] || { echo "pmv_idle.sh: $BIN is not an executable" >&2; exit 2; }
[ -e "$BUILD/.libs/libpmemverbs-fi.so" ] ||
	{ echo "pmv_idle.sh: no $BUILD/.libs/libpmemverbs-fi.so" >&2; exit 2; }
export FI_PROVIDER_PATH=$BUILD/.libs
logs_temp=
if [ -z "$LOGS" ]; then
	LOGS=$(mktemp -d "${TMPDIR:-/tmp}/pmv_idle.XXXXXX") || exit 1
	logs_temp=1
fi
mkdir -p "$LOGS"
RUN_TIMEOUT=$((90 + 2 * SECONDS_IDLE)) # seconds, per process

target_pid=
# Ends the target of an interrupted run (only the process this script started).
trap pmv_kill_target EXIT

pmv_pin say

# Value of key=VALUE on the line of a log starting with prefix.
field() {
	awk -v p="$2" -v k="$3" 'index($0, p) == 1 {
		for (i = 1; i <= NF; i++) if (index($i, k "=") == 1) {
			print substr($i, length(k) + 2); exit } }' "$1"
}

# Why a process failed: its exit status and its error lines.
reason() {
	local role=$1 status=$2 log=$3 why
	why=$(grep -F ' error: ' "$log.err" | grep -v ' error: failed: ' |
		sed 's/^\[[a-z]*\] error: //' | paste -sd ';' - | sed 's/;/; /g')
	case $status in
	124 | 137) why="killed after ${RUN_TIMEOUT} s${why:+; $why}" ;;
	esac
	echo "$role exit $status: ${why:-no error message (see $log.err)}"
}

# One target/initiator pair with N connections; prints a table row.
run_pair() {
	local n=$1 log=$LOGS/n$1 ts=0 is=0 tcpu icpu lat ns='' busy='' p50 p99 bcpu
	port=$((port + 1))
	"${pin_target[@]}" timeout -k 5 "$RUN_TIMEOUT" "$BIN" -p "$PROV" \
		-B "$port" -n "$n" -t "$SECONDS_IDLE" -m "$MODE" ${PER_CONN:+"$PER_CONN"} \
		>"$log.target.out" 2>"$log.target.err" &
	target_pid=$!
	"${pin_initiator[@]}" timeout -k 5 "$RUN_TIMEOUT" "$BIN" -p "$PROV" \
		-s 127.0.0.1 -B "$port" -n "$n" -t "$SECONDS_IDLE" \
		${BUSY:+-k "$BUSY"} ${GAP:+-g "$GAP"} \
		>"$log.initiator.out" 2>"$log.initiator.err" || is=$?
	wait "$target_pid" || ts=$?
	target_pid=
	tcpu=$(field "$log.target.out" IDLE cpu_pct)
	icpu=$(field "$log.initiator.out" IDLE cpu_pct)
	lat=$(field "$log.initiator.out" after-idle first_commit_us)
	case $MODE in poll | cntr | eq)
		ns=$(field "$log.target.out" POLL ns_per_read) ;;
	esac
	if [ -n "$BUSY" ]; then
		p50=$(field "$log.initiator.out" BUSY p50_us)
		p99=$(field "$log.initiator.out" BUSY p99_us)
		bcpu=$(field "$log.target.out" AWAKE cpu_pct)
		busy=$(printf ' %12s %12s %14s' "${p50:--}" "${p99:--}" \
			"${bcpu:--}")
	fi
	printf '%6s %12s %15s %22s%s%s\n' "$n" "${tcpu:--}" "${icpu:--}" \
		"${lat:--}" "${ns:+ $(printf '%12s' "$ns")}" "$busy"
	if [ "$ts" -ne 0 ] || [ "$is" -ne 0 ]; then
		[ "$is" -eq 0 ] ||
			echo "  N=$n failed: $(reason initiator "$is" "$log.initiator")"
		[ "$ts" -eq 0 ] ||
			echo "  N=$n failed: $(reason target "$ts" "$log.target")"
		return 1
	fi
}

mode_desc="$MODE${PER_CONN:+ (a CQ per connection)}"
echo "fi_pmem_idle: $BIN, provider $PROV, plugin $FI_PROVIDER_PATH," \
	"idle ${SECONDS_IDLE} s, target mode $mode_desc," \
	"open files hard limit $(ulimit -Hn)"
printf '%6s %12s %15s %22s%s%s\n' N "target cpu %" "initiator cpu %" \
	"first commit after us" \
	"$(case $MODE in poll | cntr | eq) echo ' ns per read' ;; esac)" \
	"$([ -z "$BUSY" ] || printf ' %12s %12s %14s' 'busy p50 us' \
		'busy p99 us' 'busy target %')"
failed=0
for n in $COUNTS; do
	run_pair "$n" || failed=1
done
if [ "$failed" -ne 0 ]; then
	echo "logs kept in $LOGS"
elif [ -n "$logs_temp" ]; then
	rm -rf -- "$LOGS"
fi
exit "$failed"
