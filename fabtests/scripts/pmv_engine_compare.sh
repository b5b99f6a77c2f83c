#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#
# Side-by-side commit latency and commit throughput of two pmemverbs builds
# (A, the baseline, e.g. the code before a change; B, the candidate), per
# persistence profile and commit method, in one run.
#
# Each build is run with its own plugin (FI_PROVIDER_PATH) and its own
# fi_pmem_lat and fi_pmem_bw, target and initiator on 127.0.0.1 (the target
# pinned to CPU 0, the initiator to CPU 1), the target's region a file under
# /dev/shm.  For every round and configuration the two builds run back to
# back, their order alternating from round to round (A,B then B,A, ...), so
# that drift on the machine hits both alike.  Every process runs under
# timeout(1); a run that fails or times out is recorded as such and the
# rest goes on.
#
# A configuration is GRANULARITY:METHOD: PMEM2_FORCE_GRANULARITY on the
# target (page, cache_line, byte: the PAGE, DMP, MHP profiles) and
# FI_PMEMVERBS_METHOD on the initiator (agent, read_flush, send, completion;
# "default" sets none).  The default set is PAGE/agent, DMP/agent,
# MHP/read_flush, MHP/agent and DMP/send.  DMP/send forces every commit
# that fits a request onto send, unfenced: fi_pmem_lat issues no FI_FENCE,
# so fenced commits are not measured here (the script says so when the
# binaries offer no fenced mode; fi_pmem_remotelog -m compound drives them).
#
# Metrics per configuration and size:
#   lat_p50_us, lat_p99_us  fi_pmem_lat -m commit (one commit at a time)
#   bw_pipe_MBps            fi_pmem_bw -m commit -b 1: every write a commit,
#                           WINDOW commits outstanding (pipelined commits)
#   bw_mib_MBps             fi_pmem_bw -m commit -b mib: writes plus one
#                           commit per MiB written
# The target reports the profile and fi_pmem_lat the method its commits
# took; both are kept in the raw CSV and checked against the configuration.
#
# Options of the two builds' binaries are read from their usage text; a
# missing -T is replaced by a bounded -I, a missing "mib" batch by the
# numeric batch per size, a missing -f by TMPDIR on /dev/shm, a missing
# method column by "n/a".  A configuration one build refuses (a method the
# profile does not allow, an unknown method) shows as FAIL rows for it and
# n/a in the summary.
#
# Output in OUT_DIR: lat_raw.csv and bw_raw.csv (one row per round, build,
# configuration and size, with the status), summary.csv, summary.txt (the
# table printed at the end), env.txt (builds, settings, load), logs/.
# summary: per cell, the rounds each build has, the medians over rounds,
# ratio = median B / median A, the range of the per-round ratios (B and A of
# the same round, run back to back) and in how many rounds B was worse
# (higher latency, lower throughput).
#
# Usage:
#   pmv_engine_compare.sh [-r ROUNDS] [-I ITERS] [-W WARMUP] [-T MS] [-w WINDOW]
#       [-S SIZES] [-c CONFIGS] [-n NAME_A,NAME_B] [-o OUT_DIR]
#       A_PROV_DIR A_FI_PMEM_LAT A_FI_PMEM_BW B_PROV_DIR B_FI_PMEM_LAT B_FI_PMEM_BW
#   -r rounds (5, at least 1)           -I commits per latency point (2000)
#   -W warmup commits (200)             -T ms per throughput point (300)
#   -w outstanding ops for bw (64)      -S sizes in bytes ("64,4096,65536")
#   -c configs ("page:agent cache_line:agent byte:read_flush byte:agent
#      cache_line:send")                -n labels of A and B (old,new)
#   -o output directory (./pmv_engine_compare.<date>)
# Env: PMV_CMP_PORT first port (random in 20000-39999), PMV_CMP_TIMEOUT
#      seconds per process (120), PMV_CMP_SKIP_BW=1 / PMV_CMP_SKIP_LAT=1.
#
# Example (old build in /tmp/bench-old/b, new in /tmp/bench-new):
#   fabtests/scripts/pmv_engine_compare.sh -r 5 -o /tmp/cmp \
#       /tmp/bench-old/b/.libs /tmp/bench-old/b/fabtests/benchmarks/fi_pmem_lat \
#       /tmp/bench-old/b/fabtests/benchmarks/fi_pmem_bw \
#       /tmp/bench-new/.libs /tmp/bench-new/fabtests/benchmarks/fi_pmem_lat \
#       /tmp/bench-new/fabtests/benchmarks/fi_pmem_bw
set -euo pipefail
export LC_ALL=C

PMV_SCRIPT=pmv_engine_compare.sh
# shellcheck source=pmv_bench_lib.sh
. "$(dirname "$0")/pmv_bench_lib.sh" ||
	{ echo "pmv_engine_compare.sh: no pmv_bench_lib.sh" >&2; exit 2; }
note() {
	echo "pmv_engine_compare.sh: $*" >&2
}

ROUNDS=5
ITERS=2000
WARMUP=200
BW_MS=300
WINDOW=64
SIZES=64,4096,65536
CONFIGS="page:agent cache_line:agent byte:read_flush byte:agent cache_line:send"
NAMES=old,new
OUT=
while getopts "r:I:W:T:w:S:c:n:o:h" opt; do
	case $opt in
	r) ROUNDS=$OPTARG ;;
	I) ITERS=$OPTARG ;;
	W) WARMUP=$OPTARG ;;
	T) BW_MS=$OPTARG ;;
	w) WINDOW=$OPTARG ;;
	S) SIZES=$OPTARG ;;
	c) CONFIGS=$OPTARG ;;
	n) NAMES=$OPTARG ;;
	o) OUT=$OPTARG ;;
	h) sed -n '3,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) die "bad option (-h for help)" ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 6 ] || die "usage: pmv_engine_compare.sh [options] A_PROV_DIR A_LAT A_BW B_PROV_DIR B_LAT B_BW (-h for help)"
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "-r $ROUNDS: a positive number"
SIZES=${SIZES// /,}

declare -A PROV LAT BW NAME
PROV[A]=$1 LAT[A]=$2 BW[A]=$3 PROV[B]=$4 LAT[B]=$5 BW[B]=$6
NAME[A]=${NAMES%%,*} NAME[B]=${NAMES#*,}
for s in A B; do
	[ -f "${PROV[$s]}/libpmemverbs-fi.so" ] ||
		die "${PROV[$s]}: no libpmemverbs-fi.so (build $s)"
	[ -x "${LAT[$s]}" ] || die "${LAT[$s]}: not an executable (build $s)"
	[ -x "${BW[$s]}" ] || die "${BW[$s]}: not an executable (build $s)"
done
command -v taskset >/dev/null || die "taskset is needed (util-linux)"
command -v timeout >/dev/null || die "timeout is needed (coreutils)"
[ "$(nproc)" -ge 2 ] || die "needs two CPUs (target on CPU 0, initiator on CPU 1)"
{ [ -d /dev/shm ] && [ -w /dev/shm ]; } || die "/dev/shm is not writable"

OUT=${OUT:-./pmv_engine_compare.$(date +%Y%m%d-%H%M%S)}
LOGS=$OUT/logs
mkdir -p "$LOGS"
SHM=$(mktemp -d /dev/shm/pmv_engine_compare.XXXXXX)
RUN_TIMEOUT=${PMV_CMP_TIMEOUT:-120}
port=${PMV_CMP_PORT:-$((20000 + RANDOM % 20000))}
LAT_CSV=$OUT/lat_raw.csv
BW_CSV=$OUT/bw_raw.csv
SUMMARY=$OUT/summary.csv
target_pid=

cleanup() {
	pmv_kill_target
	rm -rf "$SHM"
}
trap cleanup EXIT

# ---- what each build's binaries accept ------------------------------------
declare -A LAT_USAGE BW_USAGE
for s in A B; do
	LAT_USAGE[$s]=$("${LAT[$s]}" -h 2>&1 || true)
	BW_USAGE[$s]=$("${BW[$s]}" -h 2>&1 || true)
	grep -q -- '--csv' <<<"${LAT_USAGE[$s]}" ||
		die "${LAT[$s]} has no --csv"
	grep -q 'commit' <<<"${LAT_USAGE[$s]}" ||
		die "${LAT[$s]} has no commit mode"
	if ! grep -qi 'fence' <<<"${LAT_USAGE[$s]}"; then
		note "build $s (${NAME[$s]}): fi_pmem_lat drives no fenced commits; DMP fenced not measured (cache_line:send forces send, unfenced)"
	else
		note "build $s (${NAME[$s]}): fi_pmem_lat mentions fences; this script does not drive them yet"
	fi
done
has() { grep -q -- "$2" <<<"$1"; }

# ---- one run of each tool ---------------------------------------------------
# Starts the target pinned to CPU 0 and waits for it after the initiator.
# Arguments: side, granularity, tool binary, target args...; sets $target_pid.
start_target() {
	local side=$1 gran=$2 bin=$3 log=$4
	shift 4
	taskset -c 0 env FI_PROVIDER_PATH="${PROV[$side]}" TMPDIR="$SHM" \
		PMEM2_FORCE_GRANULARITY="$gran" \
		timeout -k 5 "$RUN_TIMEOUT" "$bin" "$@" >"$log" 2>&1 &
	target_pid=$!
}

# Initiator pinned to CPU 1; prints its stdout, returns its status.
run_initiator() {
	local side=$1 method=$2 bin=$3 log=$4
	shift 4
	local menv=()
	[ "$method" = default ] || menv=(FI_PMEMVERBS_METHOD="$method")
	taskset -c 1 env FI_PROVIDER_PATH="${PROV[$side]}" TMPDIR="$SHM" \
		"${menv[@]}" timeout -k 5 "$RUN_TIMEOUT" "$bin" "$@" 2>"$log"
}

# Status of a finished pair: ok, or FAIL:<what>.
pair_status() {
	local ist=$1 tst=$2 rows=$3
	if [ "$ist" -eq 124 ] || [ "$ist" -eq 137 ]; then
		echo "FAIL:initiator_timeout"
	elif [ "$ist" -ne 0 ]; then
		echo "FAIL:initiator_exit_$ist"
	elif [ "$tst" -eq 124 ] || [ "$tst" -eq 137 ]; then
		echo "FAIL:target_timeout"
	elif [ "$tst" -ne 0 ]; then
		echo "FAIL:target_exit_$tst"
	elif [ -z "$rows" ]; then
		echo "FAIL:no_output"
	else
		echo ok
	fi
}

expected_profile() {
	case $1 in
	page) echo PAGE ;; cache_line) echo DMP ;; byte) echo MHP ;; *) echo "?" ;;
	esac
}

echo "round,pos,side,build,config,granularity,method_forced,profile,size,iters,p50_us,p99_us,max_us,mean_us,method_taken,status" >"$LAT_CSV"
echo "round,pos,side,build,config,granularity,method_forced,profile,mode,size,batch,bytes,seconds,mbps,ops_per_s,status" >"$BW_CSV"

# fi_pmem_lat, all sizes in one process pair.
run_lat() {
	local round=$1 pos=$2 side=$3 cfg=$4
	local gran=${cfg%%:*} method=${cfg#*:} ist=0 tst=0 rows status
	local label
	label="$(expected_profile "$gran")/$method"
	local tag="r$round-${NAME[$side]}-${cfg//:/-}-lat"
	local targs=(-B $((++port)) -S "$SIZES")
	has "${LAT_USAGE[$side]}" '-f' && targs+=(-f "$SHM/$tag.region")
	start_target "$side" "$gran" "${LAT[$side]}" "$LOGS/$tag.target.log" "${targs[@]}"
	rows=$(run_initiator "$side" "$method" "${LAT[$side]}" \
		"$LOGS/$tag.initiator.log" -s 127.0.0.1 -B "$port" -S "$SIZES" \
		-I "$ITERS" -W "$WARMUP" -m commit --csv) || ist=$?
	wait "$target_pid" || tst=$?
	target_pid=
	rm -f "$SHM/$tag.region"
	printf '%s\n' "$rows" >"$LOGS/$tag.csv"
	status=$(pair_status "$ist" "$tst" "$(tail -n +2 <<<"$rows")")
	if [ "$status" != ok ]; then
		for size in ${SIZES//,/ }; do
			echo "$round,$pos,$side,${NAME[$side]},$label,$gran,$method,,$size,,,,,,,$status" >>"$LAT_CSV"
		done
		note "round $round ${NAME[$side]} $label lat: $status (logs $LOGS/$tag.*)"
		return 0
	fi
	# Columns by name: older binaries may lack some (method -> n/a).
	awk -F, -v pre="$round,$pos,$side,${NAME[$side]},$label,$gran,$method" '
		NR == 1 {for (i = 1; i <= NF; i++) c[$i] = i; next}
		function f(n) {return (n in c) ? $c[n] : "n/a"}
		f("mode") == "commit" {
			print pre "," f("profile") "," f("size") "," f("iters") "," \
			    f("p50_us") "," f("p99_us") "," f("max_us") "," \
			    f("mean_us") "," f("method") ",ok"
		}' <<<"$rows" >>"$LAT_CSV"
}

# fi_pmem_bw, commit mode, batches 1 and one commit per MiB.
run_bw() {
	local round=$1 pos=$2 side=$3 cfg=$4
	local gran=${cfg%%:*} method=${cfg#*:} ist=0 tst=0 rows status label size
	label="$(expected_profile "$gran")/$method"
	local tag="r$round-${NAME[$side]}-${cfg//:/-}-bw"
	local common=(-w "$WINDOW" -m commit --csv)
	if has "${BW_USAGE[$side]}" '-T'; then
		common+=(-T "$BW_MS")
	else
		common+=(-I 4096) # bounded without -T
	fi
	local groups=("$SIZES:1,mib")
	if ! has "${BW_USAGE[$side]}" 'mib'; then
		groups=()
		for size in ${SIZES//,/ }; do
			groups+=("$size:1,$(((1048576 + size - 1) / size))")
		done
	fi
	local g n=0
	for g in "${groups[@]}"; do
		n=$((n + 1))
		ist=0 tst=0
		local targs=(-B $((++port)))
		has "${BW_USAGE[$side]}" '-f' && targs+=(-f "$SHM/$tag.region")
		start_target "$side" "$gran" "${BW[$side]}" "$LOGS/$tag.$n.target.log" "${targs[@]}"
		rows=$(run_initiator "$side" "$method" "${BW[$side]}" \
			"$LOGS/$tag.$n.initiator.log" -s 127.0.0.1 -B "$port" \
			-S "${g%%:*}" -b "${g#*:}" "${common[@]}") || ist=$?
		wait "$target_pid" || tst=$?
		target_pid=
		rm -f "$SHM/$tag.region"
		printf '%s\n' "$rows" >"$LOGS/$tag.$n.csv"
		status=$(pair_status "$ist" "$tst" "$(tail -n +2 <<<"$rows")")
		if [ "$status" != ok ]; then
			local gsizes=${g%%:*}
			for size in ${gsizes//,/ }; do
				for b in 1 mib; do
					echo "$round,$pos,$side,${NAME[$side]},$label,$gran,$method,,commit,$size,$b,,,,,$status" >>"$BW_CSV"
				done
			done
			note "round $round ${NAME[$side]} $label bw: $status (logs $LOGS/$tag.$n.*)"
			continue
		fi
		awk -F, -v pre="$round,$pos,$side,${NAME[$side]},$label,$gran,$method" '
			NR == 1 {for (i = 1; i <= NF; i++) c[$i] = i; next}
			function f(n) {return (n in c) ? $c[n] : "n/a"}
			{
				b = f("batch")
				if (b != 1) b = "mib" # the one-commit-per-MiB batch
				print pre "," f("profile") "," f("mode") "," f("size") "," \
				    b "," f("bytes") "," f("seconds") "," f("mbps") "," \
				    f("ops_per_s") ",ok"
			}' <<<"$rows" >>"$BW_CSV"
	done
}

# ---- the rounds ------------------------------------------------------------
{
	echo "date: $(date -u '+%F %T UTC')"
	echo "host: $(uname -n) $(uname -r), $(nproc) CPUs"
	echo "load before: $(uptime)"
	for s in A B; do
		echo "build $s (${NAME[$s]}): prov ${PROV[$s]} lat ${LAT[$s]} bw ${BW[$s]}"
		echo "  plugin sha256 $(sha256sum "${PROV[$s]}/libpmemverbs-fi.so" | cut -c1-16)"
	done
	echo "rounds $ROUNDS, iters $ITERS, warmup $WARMUP, bw -T $BW_MS ms, window $WINDOW, sizes $SIZES"
	echo "configs: $CONFIGS"
	echo "order: per configuration A,B in odd rounds, B,A in even rounds; lat then bw"
} >"$OUT/env.txt"
cat "$OUT/env.txt" >&2

start=$(date +%s)
for round in $(seq 1 "$ROUNDS"); do
	if [ $((round % 2)) -eq 1 ]; then order="A B"; else order="B A"; fi
	for cfg in $CONFIGS; do
		pos=0
		for side in $order; do
			pos=$((pos + 1))
			[ "${PMV_CMP_SKIP_LAT:-0}" = 1 ] || run_lat "$round" "$pos" "$side" "$cfg"
			[ "${PMV_CMP_SKIP_BW:-0}" = 1 ] || run_bw "$round" "$pos" "$side" "$cfg"
		done
	done
	note "round $round/$ROUNDS done ($(($(date +%s) - start)) s, $(cut -d' ' -f1-3 /proc/loadavg))"
done
echo "load after: $(uptime)" >>"$OUT/env.txt"
echo "elapsed: $(($(date +%s) - start)) s" >>"$OUT/env.txt"

# ---- summary -----------------------------------------------------------------
# Long form: config,size,metric,side,round,value (ok rows only).
long() {
	awk -F, 'NR > 1 && $16 == "ok" {
		print $5 "," $9 ",lat_p50_us," $3 "," $1 "," $11
		print $5 "," $9 ",lat_p99_us," $3 "," $1 "," $12
	}' "$LAT_CSV"
	awk -F, 'NR > 1 && $16 == "ok" && $9 == "commit" {
		m = ($11 == 1) ? "bw_pipe_MBps" : "bw_mib_MBps"
		print $5 "," $10 "," m "," $3 "," $1 "," $14
	}' "$BW_CSV"
}

# Profiles and methods the runs reported that differ from the configuration.
mismatches=$(awk -F, 'NR > 1 && $16 == "ok" {
		split($5, p, "/")
		if ($8 != p[1]) print "profile " $8 " for " $5 " (" $4 ", round " $1 ")"
		if ($7 != "default" && $15 != "n/a" && $15 != $7)
			print "method " $15 " for " $5 " size " $9 " (" $4 ", round " $1 ")"
	}' "$LAT_CSV" | sort | uniq -c | sed 's/^ */  /')

long | awk -F, -v na="${NAME[A]}" -v nb="${NAME[B]}" -v rounds="$ROUNDS" '
	function median(arr, n,    i, j, t, v) {
		for (i = 1; i <= n; i++) v[i] = arr[i]
		for (i = 2; i <= n; i++) {
			t = v[i]
			for (j = i - 1; j >= 1 && v[j] > t; j--) v[j + 1] = v[j]
			v[j + 1] = t
		}
		if (n == 0) return ""
		return (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
	}
	{
		key = $1 "," $2 "," $3
		if (!(key in seen)) {seen[key] = 1; keys[++nk] = key}
		val[key, $4, $5] = $6
	}
	END {
		print "config,size,metric,rounds_" na ",rounds_" nb ",median_" na \
		    ",median_" nb ",ratio_" nb "_" na ",round_ratio_min,round_ratio_max," \
		    nb "_worse_rounds"
		for (k = 1; k <= nk; k++) {
			key = keys[k]
			split(key, kk, ",")
			lower_better = (kk[3] ~ /^lat/)
			na_ = 0; nb_ = 0; nr = 0; worse = 0; rmin = ""; rmax = ""
			delete av; delete bv
			for (r = 1; r <= rounds; r++) {
				ha = ((key, "A", r) in val); hb = ((key, "B", r) in val)
				if (ha) av[++na_] = val[key, "A", r]
				if (hb) bv[++nb_] = val[key, "B", r]
				if (ha && hb && val[key, "A", r] > 0) {
					q = val[key, "B", r] / val[key, "A", r]
					nr++
					if (rmin == "" || q < rmin) rmin = q
					if (rmax == "" || q > rmax) rmax = q
					if ((lower_better && q > 1) || (!lower_better && q < 1)) worse++
				}
			}
			ma = median(av, na_); mb = median(bv, nb_)
			ratio = (ma != "" && mb != "" && ma > 0) ? sprintf("%.3f", mb / ma) : "n/a"
			printf "%s,%d,%d,%s,%s,%s,%s,%s,%s\n", key, na_, nb_, \
			    (ma == "" ? "n/a" : sprintf("%.2f", ma)), \
			    (mb == "" ? "n/a" : sprintf("%.2f", mb)), ratio, \
			    (rmin == "" ? "n/a" : sprintf("%.3f", rmin)), \
			    (rmax == "" ? "n/a" : sprintf("%.3f", rmax)), \
			    (nr ? worse "/" nr : "n/a")
		}
	}' >"$SUMMARY"

{
	echo "pmemverbs engine comparison: B=${NAME[B]} / A=${NAME[A]}, medians over rounds (lat: lower is better; bw: higher is better)"
	echo "rounds per build: $ROUNDS requested; per cell below (n); round ratio = B/A of the same round"
	printf '%-16s %6s %-13s %5s %10s %10s %7s %15s %6s\n' config size metric n \
		"${NAME[A]}" "${NAME[B]}" "B/A" "round range" worse
	tail -n +2 "$SUMMARY" | sort -t, -k1,1 -k3,3 -k2,2n |
		awk -F, '{printf "%-16s %6s %-13s %2s/%-2s %10s %10s %7s %7s-%-7s %6s\n",
			$1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11}'
	fails=$(awk -F, 'FNR > 1 && $16 != "ok" {print $4 " " $5 " " $16}' "$LAT_CSV" "$BW_CSV" |
		sort | uniq -c)
	if [ -n "$fails" ]; then
		echo "failed runs (count build config status):"
		echo "$fails" | sed 's/^ */  /'
	fi
	if [ -n "$mismatches" ]; then
		echo "reported profile/method differs from the configuration (count):"
		echo "$mismatches"
	fi
	grep '^load\|^elapsed' "$OUT/env.txt"
} | tee "$OUT/summary.txt"
