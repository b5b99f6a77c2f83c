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
#        (20), PMV_CM_AA_TARGETS ("busy passive idle"; "" for none),
#        PMV_CM_BW_SIZE (4096), PMV_CM_BW_DEPTH (16), PMV_CM_BW_BATCH (16),
#        PMV_CM_BW_MS (250): fi_pmem_bw -T, per measurement,
#        PMV_CM_DIR (/dev/shm): where the targets create their files,
#        PMV_CM_PORT (13500): the runs take the ports after it, one each
#          (at most ROUNDS x (CONFIGS x (TARGETS + 1) + 1 + AA_TARGETS
#          + WAIT_CONFIGS x WAIT_TARGETS)),
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

die() {
	echo "pmv_commit_modes.sh: $*" >&2
	exit 2
}

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
WAIT_CONFIGS=${PMV_CM_WAIT_CONFIGS:-"page cache_line"}
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
# shellcheck source=pmv_commit_modes_rdm.sh
. "$(dirname "$0")/pmv_commit_modes_rdm.sh" || die "no pmv_commit_modes_rdm.sh"
if [ ! -d "$FILE_DIR" ] || [ ! -w "$FILE_DIR" ]; then
	echo "pmv_commit_modes.sh: $FILE_DIR is not a writable directory;" \
		"the targets' files go to ${TMPDIR:-/tmp}" >&2
	FILE_DIR=${TMPDIR:-/tmp}
fi

pin_target=()
pin_initiator=()
if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
	pin_target=(taskset -c 0)
	pin_initiator=(taskset -c 1)
else
	echo "pmv_commit_modes.sh: fewer than 2 CPUs or no taskset: unpinned" >&2
fi

target_pid=
failures=0
skipped=0
# Ends the target of an interrupted run (only the process this script started).
cleanup() {
	[ -z "$target_pid" ] || kill "$target_pid" 2>/dev/null || true
}
trap cleanup EXIT

# Seconds a process may run: RUN_TIMEOUT, or what is left of the budget;
# 0 once it is spent.
time_left() {
	local left=$((BUDGET - SECONDS))
	if [ "$left" -le 5 ]; then echo 0
	elif [ "$left" -lt "$RUN_TIMEOUT" ]; then echo "$left"
	else echo "$RUN_TIMEOUT"; fi
}

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
	[[ $mode == w_* || $mode == aa_* ]] && sizes=$(echo $WAIT_SIZES | tr ' ' ,)
	[[ $mode == rdm_* ]] && sizes=$(echo $RDM_SIZES | tr ' ' ,)
	[ -n "$sizes" ] || return 0
	[[ $mode == aa_* ]] && modes=read8,read8_ctl
	case $base in busy | cntr_busy) targs+=(-y) ;; esac
	case $mode in cntr_*) targs+=(-K) ;; esac
	case $mode in w_*) w=${mode#w_}; targs+=(-w "${w%_idle}") ;; esac
	[[ $base == idle || $mode == w_*_idle ]] &&
		iargs=(-I "$IDLE_ITERS" -W "$IDLE_WARMUP" -i "$IDLE_US")
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
		[ "$round" -le "$WAIT_ROUNDS" ] && for config in $WAIT_CONFIGS; do
			for mode in $WAIT_TARGETS; do
				lat_run "$round" "$config" "$mode"
			done
		done
		rdm_measure "$round"
		echo "round $round of $ROUNDS done, $SECONDS s" >&2
	done
}

# ------------------------------------------------------------- summary

# awk: median of the numbers in the space-separated list l (n/a if none).
AWK_MEDIAN='
function median(l,   n, v, i, j, x) {
	n = split(l, v, " ")
	if (!n)
		return "n/a"
	for (i = 2; i <= n; i++) {
		x = v[i] + 0
		for (j = i - 1; j >= 1 && v[j] + 0 > x; j--)
			v[j + 1] = v[j]
		v[j + 1] = x
	}
	return (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}'

# Per latency cell, one line "config target size rounds ratio commit
# read8": the median over rounds of commit p50 / read8 p50 of the same run,
# and the medians of the two p50s.
latency_cells() {
	awk -F, "$AWK_MEDIAN"'
	NR > 1 && ($6 == "commit" || $6 == "read8") {
		k = $2 " " $3 " " $7
		cells[k] = 1
		p50[k, $6, $1] = $9
		list[k, $6] = list[k, $6] " " $9
		if ($6 == "commit")
			runs[k] = runs[k] " " $1
	}
	END {
		for (k in cells) {
			ratios = ""
			n = split(runs[k], r, " ")
			for (i = 1; i <= n; i++)
				if ((k, "read8", r[i]) in p50 &&
				    p50[k, "read8", r[i]] > 0)
					ratios = ratios " " p50[k, "commit", r[i]] / \
						 p50[k, "read8", r[i]]
			print k, n, median(ratios), median(list[k, "commit"]),
			      median(list[k, "read8"])
		}
	}' "$CSV"
}

# Per wait-mode cell, one line "config target size rounds p50_ratio
# p99_ratio": medians over rounds of commit p50 and p99 / read8 p50.
wait_cells() {
	awk -F, "$AWK_MEDIAN"'
	NR > 1 && $3 ~ /^w_/ && ($6 == "commit" || $6 == "read8") {
		k = $2 " " $3 " " $7
		cells[k] = 1
		p50[k, $6, $1] = $9
		p99[k, $6, $1] = $10
		if ($6 == "commit")
			runs[k] = runs[k] " " $1
	}
	END {
		for (k in cells) {
			a = b = ""
			n = split(runs[k], r, " ")
			for (i = 1; i <= n; i++) {
				if (!((k, "read8", r[i]) in p50) ||
				    p50[k, "read8", r[i]] <= 0)
					continue
				a = a " " p50[k, "commit", r[i]] / p50[k, "read8", r[i]]
				b = b " " p99[k, "commit", r[i]] / p50[k, "read8", r[i]]
			}
			print k, n, median(a), median(b)
		}
	}' "$CSV"
}

# The wait-mode table: per config and size, per target its p50 and p99
# ratios (commit over read8 p50), PASS if within the goals.
wait_table() {
	local c s t n a b v line
	declare -A W=()
	while read -r c t s n a b; do W["$c $t $s"]="$a $b"; done < <(wait_cells)
	[ ${#W[@]} -gt 0 ] || return 0
	echo
	echo "# wait modes: a passive target waiting as fi_pmem_lat -w says;"
	echo "# cell: commit p50/read8 p50, commit p99/read8 p50 (medians over"
	echo "# $WAIT_ROUNDS rounds), PASS if p50 <= $GOAL_AGENT and p99 <= $GOAL_WAIT_P99;"
	echo "# _idle: $IDLE_US us idle before each operation."
	for c in $WAIT_CONFIGS; do
		for s in $WAIT_SIZES; do
			line="$(profile_of "$c") $s:"
			for t in $WAIT_TARGETS; do
				read -r a b <<<"${W["$c $t $s"]:-n/a n/a}"
				a=$(fmt "$a" 2); b=$(fmt "$b" 1)
				v=$(verdict "$a" le "$GOAL_AGENT")
				[ "$v" = PASS ] && v=$(verdict "$b" le "$GOAL_WAIT_P99")
				line+=" ${t#w_}=$a/$b/$v"
			done
			echo "$line"
		done
	done
}

# The A/A control: per aa_ target, the medians over rounds and sizes of
# read8_ctl / read8, p50 over p50 and p99 over p99.
aa_table() {
	[ -n "$AA_TARGETS" ] || return 0
	echo
	echo "# A/A control: fi_pmem_lat -m read8,read8_ctl, two identical 8-byte"
	echo "# reads interleaved (PAGE target; busy, passive, idle as above):"
	echo "# read8_ctl / read8, medians over rounds and sizes; a fair"
	echo "# interleaving gives about 1.00."
	awk -F, "$AWK_MEDIAN"'
	function show(x) { return x == "n/a" ? x : sprintf("%.2f", x) }
	NR > 1 && $3 ~ /^aa_/ && ($6 == "read8" || $6 == "read8_ctl") {
		k = $3 SUBSEP $1 SUBSEP $7
		keys[k] = $3
		p50[k, $6] = $9
		p99[k, $6] = $10
	}
	END {
		for (k in keys) {
			t = keys[k]
			seen[t] = 1
			if (p50[k, "read8"] > 0 && (k, "read8_ctl") in p50)
				a[t] = a[t] " " p50[k, "read8_ctl"] / p50[k, "read8"]
			if (p99[k, "read8"] > 0 && (k, "read8_ctl") in p99)
				b[t] = b[t] " " p99[k, "read8_ctl"] / p99[k, "read8"]
		}
		for (t in seen)
			printf "A/A %-8s p50 %s  p99 %s\n", substr(t, 4),
			       show(median(a[t])), show(median(b[t]))
	}' "$CSV" | sort
}

# Per throughput row, one line "config mode ops per_write": the median of
# writes/s over rounds and the median of the per-round ratios to fi_write
# in the same run.
throughput_cells() {
	awk -F, -v s="$BW_SIZE" "$AWK_MEDIAN"'
	NR > 1 && $6 == s {
		k = $2 " " $5
		cells[k] = 1
		ops[k, $1] = $11
		list[k] = list[k] " " $11
		runs[k] = runs[k] " " $1
	}
	END {
		for (k in cells) {
			split(k, cm, " ")
			ratios = ""
			n = split(runs[k], r, " ")
			for (i = 1; i <= n; i++)
				if ((cm[1] " write", r[i]) in ops &&
				    ops[cm[1] " write", r[i]] > 0)
					ratios = ratios " " ops[k, r[i]] / \
						 ops[cm[1] " write", r[i]]
			print k, median(list[k]), median(ratios)
		}
	}' "$BW_CSV"
}

divide() {
	awk -v a="$1" -v b="$2" \
		'BEGIN {if (a != "n/a" && a != "" && b + 0 > 0) printf "%.2f", a / b; else print "n/a"}'
}

# A number to $2 decimals, or n/a.
fmt() {
	if [ -z "$1" ] || [ "$1" = n/a ]; then echo n/a
	else printf "%.${2}f" "$1"; fi
}

# PASS or MISS: ratio $1 against limit $3, $2 le or ge; n/a without one.
verdict() {
	[ "$1" = n/a ] && { echo n/a; return; }
	awk -v r="$1" -v c="$2" -v l="$3" \
		'BEGIN {print ((c == "le" ? r <= l : r >= l) ? "PASS" : "MISS")}'
}

# The profile a config's target reported, else its granularity's name.
profile_of() {
	local p
	p=$(awk -F, -v c="$1" '$2 == c {print $5; exit}' "$CSV")
	[ -n "$p" ] || p=$(awk -F, -v c="$1" '$2 == c {print $4; exit}' "$BW_CSV")
	[ -n "$p" ] && { echo "$p"; return; }
	case $(granularity_of "$1") in
	page) echo PAGE ;; cache_line) echo DMP ;; byte) echo MHP ;; *) echo "?" ;;
	esac
}

# The method a config's commits took (fi_pmem_lat's report), else the
# forced or the profile's default one.
method_of() {
	local m
	m=$(awk -F, -v c="$1" '$2 == c && $6 == "commit" {print $13; exit}' "$CSV")
	[ -n "$m" ] && { echo "$m"; return; }
	m=$(method_in "$1")
	[ -n "$m" ] && { echo "$m"; return; }
	echo agent # the method fi_pmem_lat did not report
}

# One latency row: config $1 (profile $2, method $3, limit $4), size $5.
latency_row() {
	local c=$1 p=$2 m=$3 limit=$4 s=$5 t n ratio commit read8 v line
	line=$(printf '%-7s %-10s %5s' "$p" "$m" "$s")
	for t in $TARGETS; do
		read -r n ratio commit read8 <<<"${LAT["$c $t $s"]:-0 n/a n/a n/a}"
		ratio=$(fmt "$ratio" 2)
		v=$(verdict "$ratio" le "$limit")
		line+=$(printf '  %-26s' "$ratio $v $(fmt "$commit" 1)/$(fmt "$read8" 1)")
		echo "$p,$m,$c,$t,$s,$n,$commit,$read8,$ratio,$limit,$v" >>"$SUMMARY"
	done
	echo "$line  <= $limit"
}

latency_table() {
	local c s m p limit line t cell
	declare -gA LAT=()
	while read -r c t s cell; do
		LAT["$c $t $s"]=$cell
	done < <(latency_cells)
	echo "profile,method,config,target,size,rounds,commit_p50_us,read8_p50_us,commit_per_read8,limit,verdict" >"$SUMMARY"
	echo "# commit p50 / 8-byte fi_read p50 in the same process pair, median over"
	echo "# $ROUNDS rounds; cell: ratio, verdict, commit p50 / read8 p50 in us."
	echo "# busy: target busy-polls (fi_cq_read); passive: target in fi_cq_sread;"
	echo "# idle: passive target, $IDLE_US us idle before each operation;"
	echo "# cntr_busy, cntr_passive: target in fi_cntr_read, fi_cntr_wait."
	echo "# Target on CPU 0, initiator on CPU 1, files in $FILE_DIR."
	line=$(printf '%-7s %-10s %5s' profile method size)
	for t in $TARGETS; do line+=$(printf '  %-26s' "$t"); done
	echo "$line  goal"
	for c in $CONFIGS; do
		m=$(method_of "$c")
		p=$(profile_of "$c")
		limit=$GOAL_AGENT
		[ "$m" = read_flush ] && limit=$GOAL_FLUSH
		for s in $(sizes_for "$c" | tr , ' '); do
			latency_row "$c" "$p" "$m" "$limit" "$s"
		done
	done
}

# One throughput row: config, mode, label, the goal's column and limit.
bw_row() {
	local c=$1 mode=$2 label=$3 goal_col=$4 limit=$5 p=tcp m=core
	local ops per_w per_t tcp v=- vw='' vt=''
	if [ "$c" != tcp ]; then
		p=$(profile_of "$c")
		m=$(method_of "$c")
	fi
	read -r ops per_w <<<"${BW["$c $mode"]:-n/a n/a}"
	per_w=$(fmt "$per_w" 2)
	tcp=${BW["tcp core_commit"]:-n/a}
	per_t=$(divide "$ops" "${tcp%% *}")
	if [ "$goal_col" = write ]; then
		v=$(verdict "$per_w" ge "$limit")
		vw=" $v >=$limit"
	elif [ "$goal_col" = tcp ]; then
		v=$(verdict "$per_t" ge "$limit")
		vt=" $v >=$limit"
	fi
	printf '%-7s %-10s %-28s %10s  %-16s %-16s\n' "$p" "$m" "$label" \
		"$(fmt "$ops" 0)" "$per_w$vw" "$per_t$vt"
	echo "$p,$m,$c,$mode,$BW_SIZE,$BW_DEPTH,$ops,$per_w,$per_t,$goal_col,$limit,$v" \
		>>"$BW_SUMMARY"
}

throughput_table() {
	local c mode cell
	declare -gA BW=()
	while read -r c mode cell; do
		BW["$c $mode"]=$cell
	done < <(throughput_cells)
	echo "profile,method,config,mode,size,depth,ops_per_s,per_fi_write,per_tcp_commit,goal_on,limit,verdict" >"$BW_SUMMARY"
	echo
	echo "# throughput: $BW_SIZE B writes, $BW_DEPTH operations outstanding,"
	echo "# passive target; writes/s, median over $ROUNDS rounds of $BW_MS ms;"
	echo "# /fi_write: against plain fi_write in the same process pair (median of"
	echo "# the per-round ratios); /tcp commit: against the tcp core's"
	echo "# FI_COMMIT_COMPLETE on every write."
	printf '%-7s %-10s %-28s %10s  %-16s %-16s\n' profile method measure \
		writes/s /fi_write "/tcp commit"
	for c in $CONFIGS; do
		[ "$(method_in "$c")" = send ] && continue
		bw_row "$c" core_commit "commit every write" write "$GOAL_PIPE"
		bw_row "$c" commit_flush "$BW_BATCH writes + 1 commit" tcp \
			"$GOAL_BATCH"
	done
	bw_row tcp write "fi_write (tcp core)" - -
	bw_row tcp core_commit "FI_COMMIT_COMPLETE each" - -
}

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
