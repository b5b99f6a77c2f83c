#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# pmv_commit_modes.sh: what a durable commit through pmemverbs costs, per
# persistence profile and method, in the three situations a target is
# found in, and what pipelined commits keep of the write throughput.
#
# Latency (fi_pmem_lat -m read8,commit): the commit's p50 divided by the
# p50 of an 8-byte fi_read (one round trip) measured in the same process
# pair, the two interleaved (read8 commit commit read8 ...: both see the
# same state of the machine, neither always follows the other), for each
# target mode:
#   busy     the target application busy-polls its CQ (fi_pmem_lat -y)
#   passive  the target application waits in fi_cq_sread
#   idle     passive target; the initiator sleeps IDLE_US (2000) before
#            each operation (fi_pmem_lat -i), read8 included, so that
#            every commit finds the target's threads asleep
#   cntr_busy, cntr_passive (not run unless PMV_CM_TARGETS names them)
#            the target polls a FI_RECV counter (fi_cntr_read) or waits
#            on it (fi_cntr_wait) instead of its CQ (fi_pmem_lat -K)
#   w_WAIT, w_WAIT_idle  the wait-mode cells (PMV_CM_WAIT_TARGETS, run on
#            PMV_CM_WAIT_CONFIGS at PMV_CM_WAIT_SIZES in the first
#            PMV_CM_WAIT_ROUNDS rounds, every round by default): a
#            passive target waiting as
#            fi_pmem_lat -w WAIT says (fi_cq_sread on a CQ of wait object
#            none, unspec, fd, pollfd; epoll on FI_GETWAIT's fd with
#            fi_trywait; fi_cntr_wait; fi_eq_sread; noread: no wait),
#            back to back or (_idle) after IDLE_US; their table gives the
#            commit's p50 and p99 over the read8 p50 (medians of the
#            per-round ratios).  Goal: p50 at most 1.25, p99 at most
#            PMV_GOAL_WAIT_P99 (20) read round trips.
#   x_WAIT, x_WAIT_idle  the initiator-wait cells (PMV_CM_INI_WAIT_TARGETS,
#            run as the wait-mode cells but on PMV_CM_INI_WAIT_CONFIGS,
#            PAGE alone by default): a passive target (fi_cq_sread)
#            and an initiator that waits for its own completions as
#            fi_pmem_lat -x WAIT says (fi_cq_sread on a transmit CQ of
#            wait object unspec, fd, pollfd; epoll on its fd with
#            fi_trywait), the same table and goals.
#   rdm_busy, rdm_passive, rdm_idle  the same over RDM endpoints
#            (fi_pmem_lat -e rdm), p50 and p99 ratios: see
#            pmv_commit_modes_rdm.sh, which this script sources, for what
#            they run and its PMV_CM_RDM_* settings.
#   aa_TARGET  the A/A control (PMV_CM_AA_TARGETS, page, PMV_CM_WAIT_SIZES):
#            fi_pmem_lat -m read8,read8_ctl, two identical 8-byte reads
#            interleaved; read8_ctl p50 / read8 p50 must be about 1.00, or
#            the interleaving favours one of the two modes.
# The target is pinned to CPU 0 and the initiator to CPU 1 in every mode
# (taskset, when there are two CPUs; see pmv_commit_lat.sh for why).
# The targets' files are in /dev/shm, where PAGE's msync costs nothing;
# PMEM2_FORCE_GRANULARITY selects the profile, FI_PMEMVERBS_METHOD on
# the initiator the method.  Goals: agent and send commits at most 1.25
# read round trips, read_flush at most 1.10.
#
# Throughput (fi_pmem_bw, 4 KiB writes, 16 operations outstanding,
# passive target): every write a commit (core_commit: fi_writemsg with
# FI_COMMIT_COMPLETE) and 16 fi_writes + one pure-flush commit
# (commit_flush -b 16), each against plain fi_write through the same
# process pair and against the tcp core's FI_COMMIT_COMPLETE on every write
# (fi_pmem_bw -p tcp, same depth).  Goals: commit every write at least 0.5
# of fi_write; 16 writes + 1 commit at least 3 times the tcp core's
# commits (writes per second).
#
# Rounds alternate everything: each round runs every configuration in
# every target mode (their order rotating from round to round), its
# throughput, and the tcp core's; the figures are medians over rounds (of
# the per-round ratio where both sides come from one process pair).  A
# benchmark, not a test: the verdicts (PASS, MISS) are printed, never
# asserted.  A run that fails is reported and the next one runs.
#
# Configurations are GRANULARITY[:METHOD]: page (PAGE, agent), cache_line
# (DMP, agent), byte (MHP; over tcp the agent by default), byte:agent,
# byte:read_flush (a write and the read of the generation behind it),
# cache_line:send (only the sizes whose data fits a send request over tcp,
# 72 bytes; its throughput is not measured, as 4 KiB goes by the agent).
#
# Writes into OUT_DIR:
#   commit_modes.csv              every fi_pmem_lat row, prefixed with
#                                 round,config,target
#   commit_modes_bw.csv           every fi_pmem_bw row, prefixed with
#                                 round,config
#   commit_modes_summary.csv      the latency table, one row per cell
#   commit_modes_bw_summary.csv   the throughput table
#   commit_modes_rdm_summary.csv  the RDM table
#   commit_modes.txt              the tables as printed
#   logs/commit_modes/            every process's output

# Its tables are in pmv_commit_modes_tables.sh and its RDM section in
# pmv_commit_modes_rdm.sh, which it sources from its own directory.
#
# Usage: pmv_commit_modes.sh OUT_DIR
# Env:   PMV_LAT_BIN, PMV_BW_BIN (required): fi_pmem_lat and fi_pmem_bw
#        FI_PROVIDER_PATH (required): the directory of libpmemverbs-fi.so
#        PMV_CM_ROUNDS (3), PMV_CM_ITERS (500), PMV_CM_WARMUP (50),
#        PMV_CM_IDLE_ITERS (200), PMV_CM_IDLE_WARMUP (20),
#        PMV_CM_IDLE_US (2000), PMV_CM_SIZES ("64 256 1024 4096"),
#        PMV_CM_CONFIGS ("page cache_line byte byte:agent cache_line:send"),
#        PMV_CM_TARGETS ("busy passive idle"),
#        PMV_CM_WAIT_TARGETS (w_WAIT and w_WAIT_idle for every WAIT),
#        PMV_CM_WAIT_CONFIGS ("page cache_line"), PMV_CM_WAIT_SIZES
#        ("64 4096"), PMV_CM_WAIT_ROUNDS (PMV_CM_ROUNDS), PMV_GOAL_WAIT_P99
#        (20), PMV_CM_INI_WAIT_TARGETS (x_WAIT and x_WAIT_idle for
#        every WAIT; "" for none), PMV_CM_INI_WAIT_CONFIGS ("page"),
#        PMV_CM_AA_TARGETS ("busy passive idle"; "" for none),
#        PMV_CM_BW_SIZE (4096), PMV_CM_BW_DEPTH (16), PMV_CM_BW_BATCH (16),
#        PMV_CM_BW_MS (250): fi_pmem_bw -T, per measurement,
#        PMV_CM_DIR (/dev/shm): where the targets create their files,
#        PMV_CM_PORT (13500): the runs take the ports after it, one each
#          (at most ROUNDS x (CONFIGS x (TARGETS + 1) + 1 + AA_TARGETS
#          + WAIT_CONFIGS x WAIT_TARGETS
#          + INI_WAIT_CONFIGS x INI_WAIT_TARGETS)),
#        PMV_CM_BUDGET (300): seconds; runs that would start later are
#          skipped (their cells say n/a),
#        PMV_GOAL_READ8_FLUSH (1.10), PMV_GOAL_READ8_AGENT (1.25),
#        PMV_GOAL_PIPE_WRITE (0.5), PMV_GOAL_BATCH16 (3.0),
#        PMV_CM_SUMMARY_ONLY (0): 1 measures nothing and prints the tables
#          of the CSVs already in OUT_DIR
# Exit status: 0 if every run succeeded, 1 if one failed or was skipped
# for the budget (whatever the verdicts), 2 on a usage error.
set -uo pipefail
export LC_ALL=C # decimal points, byte-wise sort

PMV_SCRIPT=pmv_commit_modes.sh
PMV_DIE_STATUS=2
# shellcheck source=pmv_bench_lib.sh
. "$(dirname "$0")/pmv_bench_lib.sh" ||
	{ echo "pmv_commit_modes.sh: no pmv_bench_lib.sh" >&2; exit 2; }

[ $# -eq 1 ] || die "usage: pmv_commit_modes.sh OUT_DIR"
[ -x "${PMV_LAT_BIN:-}" ] || die "set PMV_LAT_BIN to the fi_pmem_lat binary"
[ -x "${PMV_BW_BIN:-}" ] || die "set PMV_BW_BIN to the fi_pmem_bw binary"
[ -e "${FI_PROVIDER_PATH:-}/libpmemverbs-fi.so" ] ||
	die "set FI_PROVIDER_PATH to the directory holding libpmemverbs-fi.so"
export FI_PROVIDER_PATH

OUT=$1
ROUNDS=${PMV_CM_ROUNDS:-3}
ITERS=${PMV_CM_ITERS:-500}
WARMUP=${PMV_CM_WARMUP:-50}
IDLE_ITERS=${PMV_CM_IDLE_ITERS:-200}
IDLE_WARMUP=${PMV_CM_IDLE_WARMUP:-20}
IDLE_US=${PMV_CM_IDLE_US:-2000}
SIZES=${PMV_CM_SIZES:-"64 256 1024 4096"}
CONFIGS=${PMV_CM_CONFIGS:-"page cache_line byte byte:agent cache_line:send"}
TARGETS=${PMV_CM_TARGETS:-"busy passive idle"}
WAIT_MODES="none unspec fd pollfd epoll cntr eq noread"
WAIT_TARGETS=${PMV_CM_WAIT_TARGETS:-$(for w in $WAIT_MODES; do
	printf 'w_%s w_%s_idle ' "$w" "$w"; done)}
INI_WAIT_MODES="unspec fd pollfd epoll"
INI_WAIT_TARGETS=${PMV_CM_INI_WAIT_TARGETS-$(for w in $INI_WAIT_MODES; do
	printf 'x_%s x_%s_idle ' "$w" "$w"; done)}
WAIT_CONFIGS=${PMV_CM_WAIT_CONFIGS:-"page cache_line"}
INI_WAIT_CONFIGS=${PMV_CM_INI_WAIT_CONFIGS:-page}
WAIT_SIZES=${PMV_CM_WAIT_SIZES:-"64 4096"}
WAIT_ROUNDS=${PMV_CM_WAIT_ROUNDS:-$ROUNDS}
AA_TARGETS=${PMV_CM_AA_TARGETS-"busy passive idle"}
GOAL_WAIT_P99=${PMV_GOAL_WAIT_P99:-20}
BW_SIZE=${PMV_CM_BW_SIZE:-4096}
BW_DEPTH=${PMV_CM_BW_DEPTH:-16}
BW_BATCH=${PMV_CM_BW_BATCH:-16}
BW_MS=${PMV_CM_BW_MS:-250}
FILE_DIR=${PMV_CM_DIR:-/dev/shm}
port=${PMV_CM_PORT:-13500}
BUDGET=${PMV_CM_BUDGET:-300}
GOAL_FLUSH=${PMV_GOAL_READ8_FLUSH:-1.10}
GOAL_AGENT=${PMV_GOAL_READ8_AGENT:-1.25}
GOAL_PIPE=${PMV_GOAL_PIPE_WRITE:-0.5}
GOAL_BATCH=${PMV_GOAL_BATCH16:-3.0}
SEND_MAX=72     # bytes of data a send request holds over tcp
RUN_TIMEOUT=60  # seconds, at most, per process
KILL_AFTER=10   # then SIGKILL (see runfabtests_pmem.sh)
LOGS=$OUT/logs/commit_modes
CSV=$OUT/commit_modes.csv
BW_CSV=$OUT/commit_modes_bw.csv
SUMMARY=$OUT/commit_modes_summary.csv
BW_SUMMARY=$OUT/commit_modes_bw_summary.csv
TABLE=$OUT/commit_modes.txt

mkdir -p "$LOGS" || die "cannot create $LOGS"
# shellcheck source=pmv_commit_modes_tables.sh
. "$(dirname "$0")/pmv_commit_modes_tables.sh" || die "no pmv_commit_modes_tables.sh"
# shellcheck source=pmv_commit_modes_rdm.sh
. "$(dirname "$0")/pmv_commit_modes_rdm.sh" || die "no pmv_commit_modes_rdm.sh"
if [ ! -d "$FILE_DIR" ] || [ ! -w "$FILE_DIR" ]; then
	echo "pmv_commit_modes.sh: $FILE_DIR is not a writable directory;" \
		"the targets' files go to ${TMPDIR:-/tmp}" >&2
	FILE_DIR=${TMPDIR:-/tmp}
fi

pmv_pin say

target_pid=
failures=0
skipped=0
# Ends the target of an interrupted run (only the process this script started).
trap pmv_kill_target EXIT

# The GRANULARITY and the METHOD ("" for the default) of a configuration.
granularity_of() { echo "${1%%:*}"; }
method_in() { [[ $1 == *:* ]] && echo "${1#*:}"; true; }

# pair NAME CONFIG OUT TARGET_ARGS -- INITIATOR_ARGS: a target (TMPDIR in
# FILE_DIR, PMEM2_FORCE_GRANULARITY unless CONFIG is tcp) on CPU 0 and an
# initiator (FI_PMEMVERBS_METHOD if CONFIG names one) on CPU 1, on the
# next port; the initiator's stdout to OUT, the rest to logs.  Returns 0
# when both succeeded, 2 when the budget is spent (nothing run), else 1.
pair() {
	local name=$1 config=$2 out=$3 t g m status=0 tstatus=0
	shift 3
	local targs=() iargs=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do targs+=("$1"); shift; done
	shift
	iargs=("$@")
	t=$(time_left)
	if [ "$t" -eq 0 ]; then
		echo "$name: skipped, the budget of $BUDGET s is spent" >&2
		return 2
	fi
	g=$(granularity_of "$config")
	m=$(method_in "$config")
	[ "$config" = tcp ] && g=
	port=$((port + 1))
	local log=$LOGS/$name-port$port
	"${pin_target[@]}" env TMPDIR="$FILE_DIR" \
		${g:+PMEM2_FORCE_GRANULARITY=$g} timeout -k "$KILL_AFTER" "$t" \
		"${targs[@]}" -B "$port" >"$log.target.log" 2>&1 &
	target_pid=$!
	"${pin_initiator[@]}" env ${m:+FI_PMEMVERBS_METHOD=$m} \
		timeout -k "$KILL_AFTER" "$t" "${iargs[@]}" -s 127.0.0.1 \
		-B "$port" >"$out" 2>"$log.initiator.log" || status=$?
	if [ "$status" -ne 0 ]; then
		sleep 1 # a failed initiator may leave the target waiting
		kill "$target_pid" 2>/dev/null || true
	fi
	wait "$target_pid" || tstatus=$?
	target_pid=
	if [ "$status" -ne 0 ] || [ "$tstatus" -ne 0 ]; then
		echo "$name: initiator exit $status, target exit $tstatus;" \
			"logs: $log.*" >&2
		tail -n 3 "$log.target.log" "$log.initiator.log" >&2
		return 1
	fi
}

# The sizes a configuration is measured at, comma-separated ("" if none):
# a forced send only where the data fits a request.
sizes_for() {
	local s list=
	for s in $SIZES; do
		[ "$(method_in "$1")" = send ] && [ "$s" -gt "$SEND_MAX" ] &&
			continue
		list+=${list:+,}$s
	done
	echo "$list"
}

# Counts a run by pair's status $1; true if it succeeded.
count() {
	case $1 in
	0) return 0 ;;
	2) skipped=$((skipped + 1)) ;;
	*) failures=$((failures + 1)) ;;
	esac
	return 1
}

# One latency run of config $2 against a target in mode $3 (round $1).
lat_run() {
	local round=$1 config=$2 mode=$3 sizes name rows status=0 w
	local targs=("$PMV_LAT_BIN") iargs=(-I "$ITERS" -W "$WARMUP")
	local modes=read8,commit base=${mode#aa_}
	base=${base#rdm_}
	sizes=$(sizes_for "$config")
	[[ $mode == [wx]_* || $mode == aa_* ]] &&
		sizes=$(echo $WAIT_SIZES | tr ' ' ,)
	[[ $mode == rdm_* ]] && sizes=$(echo $RDM_SIZES | tr ' ' ,)
	[ -n "$sizes" ] || return 0
	[[ $mode == aa_* ]] && modes=read8,read8_ctl
	case $base in busy | cntr_busy) targs+=(-y) ;; esac
	case $mode in cntr_*) targs+=(-K) ;; esac
	case $mode in w_*) w=${mode#w_}; targs+=(-w "${w%_idle}") ;; esac
	[[ $base == idle || $mode == [wx]_*_idle ]] &&
		iargs=(-I "$IDLE_ITERS" -W "$IDLE_WARMUP" -i "$IDLE_US")
	case $mode in x_*) w=${mode#x_}; iargs+=(-x "${w%_idle}") ;; esac
	[[ $mode == rdm_* ]] && targs+=(-e rdm) && iargs+=(-e rdm)
	name=lat-r$round-${config//:/-}-$mode
	rows=$LOGS/$name.csv
	pair "$name" "$config" "$rows" "${targs[@]}" -S "$sizes" -- \
		"$PMV_LAT_BIN" -S "$sizes" "${iargs[@]}" -m "$modes" --csv ||
		status=$?
	count "$status" && tail -n +2 "$rows" |
		sed "s|^|$round,$config,$mode,|" >>"$CSV"
}

# One throughput run of config $2 (round $1); config tcp: the tcp core.
bw_run() {
	local round=$1 config=$2 name rows status=0
	local common=(-S "$BW_SIZE" -w "$BW_DEPTH" -T "$BW_MS" -R 1 -I 100000
		      --csv)
	name=bw-r$round-${config//:/-}
	rows=$LOGS/$name.csv
	if [ "$config" = tcp ]; then
		pair "$name" tcp "$rows" "$PMV_BW_BIN" -p tcp -- \
			"$PMV_BW_BIN" -p tcp -m write,core_commit \
			"${common[@]}" || status=$?
	else
		pair "$name" "$config" "$rows" "$PMV_BW_BIN" -- "$PMV_BW_BIN" \
			-m write,core_commit,commit_flush -b "$BW_BATCH" \
			"${common[@]}" || status=$?
	fi
	count "$status" && tail -n +2 "$rows" | sed "s|^|$round,$config,|" >>"$BW_CSV"
}

# The target modes in round $1's order: rotated by one per round.
targets_of_round() {
	local -a modes
	local n i
	read -r -a modes <<<"$TARGETS"
	n=${#modes[@]}
	for ((i = 0; i < n; i++)); do
		printf '%s ' "${modes[$(((i + $1 - 1) % n))]}"
	done
}

# Round $1's wait cells: every config of $2 against every target of $3.
wait_runs() {
	local config mode
	for config in $2; do
		for mode in $3; do
			lat_run "$1" "$config" "$mode"
		done
	done
}

measure() {
	local round config mode
	echo "round,config,target,provider,profile,mode,size,iters,p50_us,p99_us,max_us,mean_us,method" >"$CSV"
	echo "round,config,provider,profile,mode,size,batch,bytes,seconds,mbps,ops_per_s" >"$BW_CSV"
	for round in $(seq 1 "$ROUNDS"); do
		for config in $CONFIGS; do
			for mode in $(targets_of_round "$round"); do
				lat_run "$round" "$config" "$mode"
			done
			[ "$(method_in "$config")" = send ] ||
				bw_run "$round" "$config"
		done
		bw_run "$round" tcp
		for mode in $AA_TARGETS; do
			lat_run "$round" page "aa_$mode"
		done
		if [ "$round" -le "$WAIT_ROUNDS" ]; then
			wait_runs "$round" "$WAIT_CONFIGS" "$WAIT_TARGETS"
			wait_runs "$round" "$INI_WAIT_CONFIGS" "$INI_WAIT_TARGETS"
		fi
		rdm_measure "$round"
		echo "round $round of $ROUNDS done, $SECONDS s" >&2
	done
}

# ------------------------------------------------------------------ run

echo "# pmv_commit_modes.sh: ${ROUNDS} rounds of $CONFIGS x $TARGETS," \
	"sizes $SIZES; budget $BUDGET s" >&2
[ "${PMV_CM_SUMMARY_ONLY:-0}" = 1 ] || measure
{
	latency_table
	rdm_table
	wait_table
	aa_table
	throughput_table
} | tee "$TABLE"
echo "# $SECONDS s; $failures failed runs, $skipped skipped for the budget" \
	"(logs in $LOGS)"
[ "$failures" -eq 0 ] && [ "$skipped" -eq 0 ]
