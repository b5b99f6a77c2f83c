#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# runfabtests_pmem.sh: the pmemverbs fabtests over 127.0.0.1, in the manner
# of libfabric's runfabtests.sh: the functional test first (fi_pmem_commit),
# then the benchmarks (pmv_commit_modes.sh: commit latency against one read
# round trip with a busy, a passive and an idle target, and one polling or
# waiting on a counter, and pipelined commit
# throughput; fi_pmem_lat through pmv_commit_lat.sh, fi_pmem_bw,
# fi_pmem_remotelog and the recovery of its logs), for the pmemverbs
# profiles PAGE, DMP and MHP (PMEM2_FORCE_GRANULARITY=page, cache_line,
# byte on the target), each method pmemverbs offers for them (MHP: the
# default, over tcp the agent, and the agent forced
# as "byte:agent", FI_PMEMVERBS_METHOD on the initiator; its rows say
# profile "MHP/agent"), and the tcp core as a
# baseline.  Each target runs on
# CPU 0 and each initiator on CPU 1 (see pmv_commit_lat.sh for why), every
# process under a timeout, and the whole run keeps within a time budget.
#
# Writes into OUT_DIR:
#   functional.log           one result per test, as runfabtests.sh prints
#   commit_modes*.csv, commit_modes.txt  from pmv_commit_modes.sh (its
#                            table is printed at the end, before the ratios)
#   commit_latency.csv       (and _summary.csv) from pmv_commit_lat.sh
#   commit_bw.csv            fi_pmem_bw --csv rows of every run
#   remotelog.csv            fi_pmem_remotelog --csv rows of every run
#   remotelog_recovery.csv   profile,mode,file,expected,recovered,status
#   ratios.csv               the ratio table printed at the end
#   commit_latency.png, commit_bw.png, remotelog.png
#   logs/                    every process's output
# Its ratio table is in runfabtests_pmem_ratios.sh and its plots in
# runfabtests_pmem_plots.sh, which it sources from its own directory.
#
# Usage: runfabtests_pmem.sh OUT_DIR
# Env:   FI_PROVIDER_PATH (required): the directory of libpmemverbs-fi.so
#        PMV_FT_BIN_DIR: where fi_pmem_commit, fi_pmem_lat, fi_pmem_bw and
#          fi_pmem_remotelog are (also looked for in its functional/ and
#          benchmarks/ subdirectories); default: $PATH
#        PMV_FT_PORT (12000): first TCP port; each run takes the next one
#        PMV_FT_BUDGET (640): seconds the whole run may take
#        PMV_FT_CM_ROUNDS (3), PMV_FT_CM_BUDGET (330): pmv_commit_modes.sh's
#          rounds and seconds (its other PMV_CM_* settings pass through)
#        PMV_FT_LAT_ROUNDS (3), PMV_FT_LAT_ITERS (1500),
#        PMV_FT_LAT_SIZES ("64 256 1024 4096 16384 65536")
#        PMV_FT_BW_ROUNDS (3), PMV_FT_BW_MS (250): fi_pmem_bw -R and -T
#          (each bandwidth measurement runs PMV_FT_BW_MS ms)
#        PMV_FT_BW_SIZES ("4096,65536,1048576")
#        PMV_FT_LOG_APPENDS (5000), PMV_FT_LOG_SIZES ("64,256,4096")
#        PMV_GOAL_READ8_FLUSH (1.10), PMV_GOAL_READ8_AGENT (1.25),
#        PMV_GOAL_TCP (1.0), PMV_GOAL_BW_MIB (0.9), PMV_GOAL_BATCH16 (3.0),
#        PMV_GOAL_PIPE_WRITE (0.5): the thresholds of the ratio table (the
#          project's goals; pmv_commit_modes.sh reads the same variables);
#        PMV_GOAL_SEND (0.75): compound appends with the send method
#          against the agent's two-round-trip fence (the design's one
#          round trip instead of two)
# Exit status: 0 if every test that ran passed, 1 otherwise.
set -uo pipefail
export LC_ALL=C

PMV_SCRIPT=runfabtests_pmem.sh
# shellcheck source=pmv_bench_lib.sh
. "$(dirname "$0")/pmv_bench_lib.sh" ||
	{ echo "runfabtests_pmem.sh: no pmv_bench_lib.sh" >&2; exit 2; }

[ $# -eq 1 ] || die "usage: runfabtests_pmem.sh OUT_DIR"
[ -n "${FI_PROVIDER_PATH:-}" ] ||
	die "set FI_PROVIDER_PATH to the directory holding libpmemverbs-fi.so"
[ -e "$FI_PROVIDER_PATH/libpmemverbs-fi.so" ] ||
	die "no libpmemverbs-fi.so in FI_PROVIDER_PATH=$FI_PROVIDER_PATH"
export FI_PROVIDER_PATH

OUT=$1
LOGS=$OUT/logs
SCRIPTS=$(cd "$(dirname "$0")" && pwd)
port=${PMV_FT_PORT:-12000}
BUDGET=${PMV_FT_BUDGET:-640}
CM_ROUNDS=${PMV_FT_CM_ROUNDS:-3}
CM_BUDGET=${PMV_FT_CM_BUDGET:-330}
# pmv_commit_modes.sh's configurations (GRANULARITY[:METHOD]) and targets
CM_CONFIGS="page cache_line byte byte:agent cache_line:send"
CM_TARGETS="busy passive idle cntr_busy cntr_passive"
LAT_ROUNDS=${PMV_FT_LAT_ROUNDS:-3}
LAT_ITERS=${PMV_FT_LAT_ITERS:-1500}
LAT_SIZES=${PMV_FT_LAT_SIZES:-"64 256 1024 4096 16384 65536"}
BW_ROUNDS=${PMV_FT_BW_ROUNDS:-3}
BW_MS=${PMV_FT_BW_MS:-250}
BW_SIZES=${PMV_FT_BW_SIZES:-4096,65536,1048576}
LOG_APPENDS=${PMV_FT_LOG_APPENDS:-5000}
LOG_WARMUP=100
LOG_SIZES=${PMV_FT_LOG_SIZES:-64,256,4096}
GOAL_READ8_FLUSH=${PMV_GOAL_READ8_FLUSH:-1.10}
GOAL_READ8_AGENT=${PMV_GOAL_READ8_AGENT:-1.25}
GOAL_TCP=${PMV_GOAL_TCP:-1.0}
GOAL_BW_MIB=${PMV_GOAL_BW_MIB:-0.9}
GOAL_BATCH16=${PMV_GOAL_BATCH16:-3.0}
GOAL_SEND=${PMV_GOAL_SEND:-0.75}
GOAL_PIPE=${PMV_GOAL_PIPE_WRITE:-0.5}
GRANULARITIES="page cache_line byte"
# benchmark configurations: GRANULARITY[:METHOD]
CONFIGS="page cache_line byte byte:agent"
# RemoteLog's compound appends also run with the agent forced on the agent
# profiles: the fenced tail commit then waits for the record's commit in
# the call, where by default it goes by send
FENCE_CONFIGS="page:agent cache_line:agent"
RUN_TIMEOUT=120 # seconds, at most, per process
# SIGKILL this long after a timeout's SIGTERM: a pmemverbs process may not
# exit on SIGTERM (a deadlock at exit between the agent and libfabric's
# fini, when a SIGTERM handler calls exit() in the middle of a core call)
KILL_AFTER=10
FI_ENODATA=61   # a test that cannot run here (fabtests' "Notrun")
# shellcheck source=runfabtests_pmem_ratios.sh
. "$SCRIPTS/runfabtests_pmem_ratios.sh" || die "no runfabtests_pmem_ratios.sh"
# shellcheck source=runfabtests_pmem_plots.sh
. "$SCRIPTS/runfabtests_pmem_plots.sh" || die "no runfabtests_pmem_plots.sh"

mkdir -p "$LOGS" || die "cannot create $LOGS"
rm -f "$OUT"/functional.log "$OUT"/commit_bw.csv "$OUT"/remotelog.csv \
	"$OUT"/commit_modes.csv "$OUT"/commit_modes_bw.csv \
	"$OUT"/commit_modes_summary.csv "$OUT"/commit_modes_bw_summary.csv \
	"$OUT"/commit_modes.txt \
	"$OUT"/remotelog_recovery.csv "$OUT"/ratios.csv \
	"$OUT"/commit_latency.png "$OUT"/commit_bw.png "$OUT"/remotelog.png
rm -rf "$OUT/plotdata"
mkdir -p "$OUT/plotdata"

# The binaries: $PMV_FT_BIN_DIR (or a subdirectory), else $PATH.
find_bin() {
	local name=$1 dir=${PMV_FT_BIN_DIR:-} d
	if [ -n "$dir" ]; then
		for d in "$dir" "$dir/functional" "$dir/benchmarks"; do
			[ -x "$d/$name" ] && { echo "$d/$name"; return; }
		done
		die "$name is not in PMV_FT_BIN_DIR=$dir"
	fi
	command -v "$name" || die "$name is not in PATH; set PMV_FT_BIN_DIR"
}
COMMIT_BIN=$(find_bin fi_pmem_commit) || exit 1
LAT_BIN=$(find_bin fi_pmem_lat) || exit 1
BW_BIN=$(find_bin fi_pmem_bw) || exit 1
LOG_BIN=$(find_bin fi_pmem_remotelog) || exit 1

pmv_pin quiet

target_pid=
# Ends the target of an interrupted run (only the process this script started).
trap pmv_kill_target EXIT

# run_pair NAME CONFIG CLIENT_OUT TARGET_ARGS -- CLIENT_ARGS: a target
# (with PMEM2_FORCE_GRANULARITY when CONFIG, GRANULARITY[:METHOD], is not
# empty) and an initiator (with FI_PMEMVERBS_METHOD=METHOD if given) on the
# next port; the initiator's stdout goes to CLIENT_OUT, everything else to
# logs/.  Sets run_status (0 pass, 61 notrun, else fail).
run_pair() {
	local name=$1 granularity=${2%%:*} method= client_out=$3 t
	[[ $2 == *:* ]] && method=${2#*:}
	shift 3
	local targs=() cargs=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do targs+=("$1"); shift; done
	shift
	cargs=("$@")
	port=$((port + 1))
	local log=$LOGS/$name-port$port status=0 tstatus=0
	t=$(time_left)
	if [ "$t" -eq 0 ]; then
		echo "$name: skipped, the time budget of $BUDGET s is spent" >&2
		run_status=1
		return
	fi
	"${pin_target[@]}" env ${granularity:+PMEM2_FORCE_GRANULARITY=$granularity} \
		timeout -k "$KILL_AFTER" "$t" "${targs[@]}" -B "$port" \
		>"$log.target.log" 2>&1 &
	target_pid=$!
	"${pin_initiator[@]}" env ${method:+FI_PMEMVERBS_METHOD=$method} \
		timeout -k "$KILL_AFTER" "$t" "${cargs[@]}" -s 127.0.0.1 \
		-B "$port" >"$client_out" 2>"$log.initiator.log" || status=$?
	if [ "$status" -ne 0 ]; then
		# a failed initiator may leave the target waiting: end it
		sleep 1
		kill "$target_pid" 2>/dev/null || true
	fi
	wait "$target_pid" || tstatus=$?
	target_pid=
	if [ "$status" -eq "$FI_ENODATA" ] && [ "$tstatus" -eq "$FI_ENODATA" ]; then
		run_status=$FI_ENODATA
	elif [ "$status" -ne 0 ]; then
		run_status=$status
	else
		run_status=$tstatus
	fi
	if [ "$run_status" -ne 0 ] && [ "$run_status" -ne "$FI_ENODATA" ]; then
		echo "$name: initiator exit $status, target exit $tstatus; logs:" \
			"$log.*" >&2
		tail -n 5 "$log.target.log" "$log.initiator.log" >&2
	fi
}

# ------------------------------------------------------------ functional

total=0 passed=0 notrun=0 failed=0
# One result in runfabtests.sh's format, on stdout and in functional.log.
report() {
	local name=$1 status=$2 secs=$3 result
	case $status in
	0) result=Pass; passed=$((passed + 1)) ;;
	"$FI_ENODATA") result=Notrun; notrun=$((notrun + 1)) ;;
	*) result=Fail; failed=$((failed + 1)) ;;
	esac
	total=$((total + 1))
	printf -- '- name:   %s\n  result: %s\n  time:   %s\n' "$name" \
		"$result" "$secs" | tee -a "$OUT/functional.log"
}

functional() {
	local g prov name start ep
	echo "# functional: fi_pmem_commit"
	for g in $GRANULARITIES tcp; do
		prov=pmemverbs
		[ "$g" = tcp ] && prov=tcp
		name="fi_pmem_commit -p $prov -e msg${g:+ ($g)}"
		[ "$g" = tcp ] && name="fi_pmem_commit -p tcp -e msg"
		start=$SECONDS
		run_pair "commit-${g}" "$([ "$g" = tcp ] || echo "$g")" \
			"$LOGS/commit-$g.out" "$COMMIT_BIN" -p "$prov" -- \
			"$COMMIT_BIN" -p "$prov"
		report "$name" "$run_status" $((SECONDS - start))
		sed 's/^/    /' "$LOGS/commit-$g.out"
	done
	for prov in pmemverbs tcp; do
		start=$SECONDS
		ep=rdm
		run_pair "commit-$prov-rdm" "" "$LOGS/commit-$prov-rdm.out" \
			"$COMMIT_BIN" -p "$prov" -e "$ep" -- \
			"$COMMIT_BIN" -p "$prov" -e "$ep"
		# RDM runs now: "FI_EP_RDM: unsupported" (61) is a failure here
		[ "$run_status" -eq "$FI_ENODATA" ] && run_status=1
		report "fi_pmem_commit -p $prov -e rdm" "$run_status" \
			$((SECONDS - start))
	done
}

# ------------------------------------------ latency by target, throughput

commit_modes() {
	local t status=0 ncfg ntgt
	echo "# benchmark: commit latency by target mode, pipelined throughput" \
		"(pmv_commit_modes.sh, fi_pmem_lat, fi_pmem_bw)"
	# many processes under its own budget: not RUN_TIMEOUT's cap of one
	t=$((BUDGET - SECONDS))
	[ "$t" -gt 30 ] || { echo "commit modes: skipped, budget spent" >&2; return 1; }
	t=$((t > CM_BUDGET + 20 ? CM_BUDGET + 20 : t))
	ncfg=$(wc -w <<<"$CM_CONFIGS")
	ntgt=$(wc -w <<<"$CM_TARGETS")
	PMV_LAT_BIN=$LAT_BIN PMV_BW_BIN=$BW_BIN PMV_CM_PORT=$port \
		PMV_CM_ROUNDS=$CM_ROUNDS PMV_CM_CONFIGS=$CM_CONFIGS \
		PMV_CM_TARGETS=$CM_TARGETS PMV_GOAL_READ8_FLUSH=$GOAL_READ8_FLUSH \
		PMV_GOAL_READ8_AGENT=$GOAL_READ8_AGENT PMV_GOAL_PIPE_WRITE=$GOAL_PIPE \
		PMV_GOAL_BATCH16=$GOAL_BATCH16 \
		PMV_CM_BUDGET=$((t - 20 > CM_BUDGET ? CM_BUDGET : t - 20)) \
		timeout -k "$KILL_AFTER" "$t" "$SCRIPTS/pmv_commit_modes.sh" "$OUT" \
		>"$LOGS/pmv_commit_modes.out" 2>"$LOGS/pmv_commit_modes.log" ||
		status=$?
	# its runs took ports from $port on, one each: leave them behind (and
	# per round those of its A/A control, 3, wait-mode cells, 32,
	# initiator-wait cells, 8, and at most 16 RDM cells,
	# pmv_commit_modes_rdm.sh's 9 and the tcp core's)
	port=$((port + CM_ROUNDS * (ncfg * (ntgt + 1) + 1 + 3 + 32 + 8 + 16) + 1))
	tail -n 1 "$LOGS/pmv_commit_modes.out"
	if [ "$status" -ne 0 ]; then
		echo "pmv_commit_modes.sh failed ($status); see $LOGS/pmv_commit_modes.log" >&2
		tail -n 5 "$LOGS/pmv_commit_modes.log" >&2
		report "pmv_commit_modes.sh" "$status" 0 >/dev/null
		return 1
	fi
}

# -------------------------------------------------------------- latency

latency() {
	local t status=0
	echo "# benchmark: commit latency (pmv_commit_lat.sh, fi_pmem_lat)"
	t=$(time_left)
	[ "$t" -gt 0 ] || { echo "latency: skipped, budget spent" >&2; return 1; }
	port=$((port + 1))
	PMV_LAT_BIN=$LAT_BIN PMV_LAT_PORT=$port PMV_LAT_ROUNDS=$LAT_ROUNDS \
		PMV_LAT_CONFIGS=$CONFIGS \
		PMV_LAT_ITERS=$LAT_ITERS PMV_LAT_WARMUP=$((LAT_ITERS / 10)) \
		PMV_LAT_SIZES=$LAT_SIZES \
		timeout -k "$KILL_AFTER" $((t > 240 ? 240 : t)) \
		"$SCRIPTS/pmv_commit_lat.sh" "$OUT" \
		2>"$LOGS/pmv_commit_lat.log" || status=$?
	# its runs took ports from $port on: leave them behind
	port=$((port + 2 * 4 * LAT_ROUNDS + 1))
	if [ "$status" -ne 0 ]; then
		echo "pmv_commit_lat.sh failed ($status); see $LOGS/pmv_commit_lat.log" >&2
		tail -n 5 "$LOGS/pmv_commit_lat.log" >&2
		report "pmv_commit_lat.sh" "$status" 0 >/dev/null
		return 1
	fi
}

# ------------------------------------------------------------ bandwidth

bandwidth() {
	local g rows
	echo "# benchmark: bandwidth (fi_pmem_bw, -R $BW_ROUNDS, -T $BW_MS ms)"
	for g in $CONFIGS tcp; do
		if [ "$g" = tcp ]; then
			run_pair bw-tcp "" "$LOGS/bw-tcp.csv" "$BW_BIN" -p tcp -- \
				"$BW_BIN" -p tcp -S "$BW_SIZES" -b 1,16,mib \
				-m write,commit,core_commit -R "$BW_ROUNDS" \
				-I 100000 -T "$BW_MS" --csv
		else
			run_pair "bw-${g//:/-}" "$g" "$LOGS/bw-${g//:/-}.csv" "$BW_BIN" -- \
				"$BW_BIN" -S "$BW_SIZES" -b 1,16,mib \
				-m write,commit,commit_flush,core_commit \
				-R "$BW_ROUNDS" -I 100000 -T "$BW_MS" --csv
		fi
		rows=$LOGS/bw-${g//:/-}.csv
		if [ "$run_status" -ne 0 ]; then
			report "fi_pmem_bw ($g)" "$run_status" 0 >/dev/null
			continue
		fi
		[ -s "$OUT/commit_bw.csv" ] || head -n 1 "$rows" >"$OUT/commit_bw.csv"
		tail -n +2 "$rows" | label_method "$g" >>"$OUT/commit_bw.csv"
		echo "  $g: $(($(wc -l <"$rows") - 1)) measurements"
	done
}

# ------------------------------------------------------------ RemoteLog

remotelog() {
	local g mode prov file rows expected recovered status nsizes
	echo "# benchmark: RemoteLog (fi_pmem_remotelog), then recovery"
	echo "profile,mode,file,expected_records,recovered_records,status" \
		>"$OUT/remotelog_recovery.csv"
	nsizes=$(echo "$LOG_SIZES" | tr ',' '\n' | wc -l)
	expected=$(((LOG_APPENDS + LOG_WARMUP) * nsizes))
	for g in $CONFIGS $FENCE_CONFIGS tcp; do
		prov=pmemverbs
		[ "$g" = tcp ] && prov=tcp
		for mode in singleton compound; do
			[[ " $FENCE_CONFIGS " == *" $g "* && $mode = singleton ]] &&
				continue # no fence: as without the override
			file=$OUT/logs/remotelog-${g//:/-}-$mode.log
			rm -f "$file"
			run_pair "remotelog-${g//:/-}-$mode" "$([ "$g" = tcp ] || echo "$g")" \
				"$LOGS/remotelog-${g//:/-}-$mode.csv" \
				"$LOG_BIN" -p "$prov" -f "$file" -- \
				"$LOG_BIN" -p "$prov" -m "$mode" -S "$LOG_SIZES" \
				-I "$LOG_APPENDS" -W "$LOG_WARMUP" --csv
			rows=$LOGS/remotelog-${g//:/-}-$mode.csv
			if [ "$run_status" -ne 0 ]; then
				report "fi_pmem_remotelog -m $mode ($g)" \
					"$run_status" 0 >/dev/null
				continue
			fi
			[ -s "$OUT/remotelog.csv" ] || head -n 1 "$rows" >"$OUT/remotelog.csv"
			tail -n +2 "$rows" | label_method "$g" >>"$OUT/remotelog.csv"
			# "after a restart": the target is gone; recover its file
			status=0
			timeout -k "$KILL_AFTER" 60 "$LOG_BIN" -r "$file" \
				>"$LOGS/recovery-${g//:/-}-$mode.log" 2>&1 || status=$?
			recovered=$(sed -n 's/^records=//p' "$LOGS/recovery-${g//:/-}-$mode.log")
			if [ "$status" -eq 0 ] && [ "${recovered:-x}" = "$expected" ]; then
				status=consistent
			else
				status=FAILED
				report "recovery -m $mode ($g)" 1 0 >/dev/null
			fi
			echo "$g,$mode,$file,$expected,${recovered:-},$status" \
				>>"$OUT/remotelog_recovery.csv"
			echo "  $g $mode: recovery found ${recovered:-no} records" \
				"of $expected: $status"
		done
	done
}

# ------------------------------------------------------------------ run

echo "# runfabtests_pmem.sh: output in $OUT, budget $BUDGET s, target on" \
	"CPU 0, initiator on CPU 1, ports from $((port + 1))"
functional
commit_modes
latency
bandwidth
remotelog
plots
if [ -s "$OUT/commit_modes.txt" ]; then
	echo
	echo "# commit latency by target mode, pipelined throughput (pmv_commit_modes.sh)"
	cat "$OUT/commit_modes.txt"
fi
ratios
echo
echo "# $SECONDS s; tests: total $total, pass $passed, notrun $notrun, fail $failed" \
	"(fi_pmem_commit runs, and benchmark runs that failed)"
[ "$failed" -eq 0 ]
