#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Latency of a durable commit (fi_writemsg with FI_COMMIT_COMPLETE) through
# pmemverbs, for each persistence profile, against two yardsticks: an 8-byte
# fi_read measured in the same run on the same connection (the floor of a
# one-round-trip commit) and the tcp core's own FI_COMMIT_COMPLETE write
# (acknowledged after placement, nothing flushed).  Rounds alternate the
# pmemverbs profiles with tcp runs so that drift on the machine hits all
# alike.  Target and initiator run on 127.0.0.1, the target (with its
# commit agent thread) pinned to CPU 0 and the initiator to CPU 1, as in
# pmv_overhead.sh.  Unpinned on a 2-core machine the agent's spin phase
# (FI_PMEMVERBS_AGENT_SPIN_US, 200 us) and the spinning initiator can hold
# both CPUs while the thread that must place the commit request waits: the
# commit p50 then follows the spin time (about spin + 70 us), which measures
# the scheduler rather than the commit path.
#
# Each pmemverbs configuration is a granularity, optionally with the method
# forced on the initiator (FI_PMEMVERBS_METHOD): "byte" takes the default
# method for MHP (read_flush; the agent over tcp with
# FI_PMEMVERBS_JOIN_REQUEST=1), "byte:agent" the agent forced, so the
# default and the forced method are measured side by side.
#
# Writes OUT/commit_latency.csv (every fi_pmem_lat row, prefixed with its
# round and configuration), OUT/commit_latency_summary.csv and prints the
# summary: per profile and size, the commit's p50 and p99 (medians over the
# rounds), p50 / read8 p50 (median over the rounds of the same-run ratio)
# and p50 / tcp commit p50 (medians over the rounds, same size).
#
# Usage: pmv_commit_lat.sh OUT_DIR
# Env:   PMV_LAT_BIN (required): the fi_pmem_lat binary
#        FI_PROVIDER_PATH (required): the directory of libpmemverbs-fi.so
#        PMV_LAT_ROUNDS (3), PMV_LAT_ITERS (2000), PMV_LAT_WARMUP (200),
#        PMV_LAT_PORT (first port; a random one in 20000-39999 by default),
#        PMV_LAT_SIZES ("64 4096 65536"),
#        PMV_LAT_CONFIGS ("page cache_line byte byte:agent")
set -euo pipefail
export LC_ALL=C # decimal points and byte-wise sort for join

PMV_SCRIPT=pmv_commit_lat.sh
# shellcheck source=pmv_bench_lib.sh
. "$(dirname "$0")/pmv_bench_lib.sh" ||
	{ echo "pmv_commit_lat.sh: no pmv_bench_lib.sh" >&2; exit 2; }

[ $# -eq 1 ] || die "usage: pmv_commit_lat.sh OUT_DIR"
[ -n "${PMV_LAT_BIN:-}" ] ||
	die "set PMV_LAT_BIN to the fi_pmem_lat binary (e.g. \$BUILD/fabtests/fi_pmem_lat)"
[ -x "$PMV_LAT_BIN" ] || die "PMV_LAT_BIN=$PMV_LAT_BIN is not an executable"
[ -n "${FI_PROVIDER_PATH:-}" ] ||
	die "set FI_PROVIDER_PATH to the directory holding libpmemverbs-fi.so"

OUT=$1
ROUNDS=${PMV_LAT_ROUNDS:-3}
ITERS=${PMV_LAT_ITERS:-2000}
WARMUP=${PMV_LAT_WARMUP:-200}
port=${PMV_LAT_PORT:-$((20000 + RANDOM % 20000))}
PROFILES=${PMV_LAT_CONFIGS:-"page cache_line byte byte:agent"}
SIZES=${PMV_LAT_SIZES:-"64 4096 65536"}
PMV_MODES=read8,write,write_read,commit
TCP_MODES=read8,write,commit
RUN_TIMEOUT=120 # seconds, per fi_pmem_lat process
CSV=$OUT/commit_latency.csv
SUMMARY=$OUT/commit_latency_summary.csv
LOGS=$OUT/logs

mkdir -p "$LOGS"
target_pid=

# Ends the target of an interrupted run (only the process this script started).
trap pmv_kill_target EXIT

# Target on CPU 0, initiator on CPU 1 when there are two (see the header).
pmv_pin quiet

# One fi_pmem_lat run on a fresh port; appends its rows, prefixed with
# "round,config", to the CSV.  $cfg is empty for tcp, else GRAN[:METHOD].
run_once() {
	local round=$1 prov=$2 cfg=$3 modes=$4
	local config=$prov${cfg:+/$cfg} rows status=0 tstatus=0
	local granularity=${cfg%%:*} method=
	[[ $cfg == *:* ]] && method=${cfg#*:}
	port=$((port + 1))
	local log=$LOGS/round$round-port$port-${config//[\/:]/-}
	"${pin_target[@]}" env ${granularity:+PMEM2_FORCE_GRANULARITY=$granularity} \
		timeout -k 10 "$RUN_TIMEOUT" "$PMV_LAT_BIN" -p "$prov" -B "$port" \
		-S "${SIZES// /,}" >"$log.target.log" 2>&1 &
	target_pid=$!
	rows=$("${pin_initiator[@]}" env ${method:+FI_PMEMVERBS_METHOD=$method} \
		timeout -k 10 "$RUN_TIMEOUT" "$PMV_LAT_BIN" -p "$prov" \
		-s 127.0.0.1 -B "$port" -S "${SIZES// /,}" -I "$ITERS" \
		-W "$WARMUP" -m "$modes" --csv 2>"$log.initiator.log") || status=$?
	wait "$target_pid" || tstatus=$?
	target_pid=
	if [ "$status" -ne 0 ] || [ "$tstatus" -ne 0 ] || [ -z "$rows" ]; then
		cat "$log.target.log" "$log.initiator.log" >&2
		die "round $round, $config: fi_pmem_lat failed (logs in $LOGS)"
	fi
	echo "$rows" | tail -n +2 | sed "s|^|$round,$config,|" >>"$CSV"
	echo "round $round: $config done" >&2
}

# Median of the numbers on stdin (one per line).
median() {
	sort -g | awk '{v[NR] = $1}
		END {if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}

# Prints field $4 (a column name) of the rows for config $1, mode $2, size $3.
column_of() {
	awk -F, -v c="$1" -v m="$2" -v s="$3" -v col="$4" '
		NR == 1 {for (i = 1; i <= NF; i++) idx[$i] = i; next}
		$2 == c && $5 == m && $6 == s {print $1 "," $idx[col]}' "$CSV"
}

# Per round "p50 of mode A / p50 of mode B" in the same run, for config, size.
same_run_ratios() {
	join -t, <(column_of "$1" "$2" "$4" p50_us | sort -t, -k1,1) \
		<(column_of "$1" "$3" "$4" p50_us | sort -t, -k1,1) |
		awk -F, '$3 > 0 {printf "%.6f\n", $2 / $3}'
}

# Median over rounds of a column of config/mode/size.
median_of() {
	column_of "$1" "$2" "$3" "$4" | cut -d, -f2 | median
}

divide() {
	awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.2f", a / b; else print "n/a"}'
}

# The profile the target reported for a config (PAGE, DMP, MHP).
profile_of() {
	awk -F, -v c="$1" '$2 == c {print $4; exit}' "$CSV"
}

# The method a config's commits took (fi_pmem_lat's method column).
method_of() {
	awk -F, -v c="$1" '$2 == c && $5 == "commit" {print $12; exit}' "$CSV"
}

summarize() {
	local g config size p50 p99 read8 tcp per_read8 per_tcp
	echo "profile,config,method,size,commit_p50_us,commit_p99_us,read8_p50_us,commit_per_read8,tcp_commit_p50_us,commit_per_tcp_commit" >"$SUMMARY"
	printf '%-8s %-16s %-10s %6s %10s %10s %10s %10s %10s %10s\n' profile \
		config method size "p50 us" "p99 us" "read8 us" "p50/read8" \
		"tcp us" "p50/tcp"
	for g in $PROFILES; do
		config=pmemverbs/$g
		for size in $SIZES; do
			p50=$(median_of "$config" commit "$size" p50_us)
			p99=$(median_of "$config" commit "$size" p99_us)
			read8=$(median_of "$config" read8 "$size" p50_us)
			tcp=$(median_of tcp commit "$size" p50_us)
			per_read8=$(same_run_ratios "$config" commit read8 "$size" | median)
			per_read8=$(printf '%.2f' "$per_read8")
			per_tcp=$(divide "$p50" "$tcp")
			echo "$(profile_of "$config"),$g,$(method_of "$config"),$size,$p50,$p99,$read8,$per_read8,$tcp,$per_tcp" >>"$SUMMARY"
			printf '%-8s %-16s %-10s %6s %10s %10s %10s %10s %10s %10s\n' \
				"$(profile_of "$config")" "$g" "$(method_of "$config")" \
				"$size" "$p50" "$p99" "$read8" "$per_read8" "$tcp" \
				"$per_tcp"
		done
	done
}

echo "round,config,provider,profile,mode,size,iters,p50_us,p99_us,max_us,mean_us,method" >"$CSV"
for round in $(seq 1 "$ROUNDS"); do
	for g in $PROFILES; do
		run_once "$round" pmemverbs "$g" "$PMV_MODES"
		run_once "$round" tcp "" "$TCP_MODES"
	done
done
summarize
