#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Pass-through overhead of pmemverbs: fi_pingpong latency through the core
# provider and through pmemverbs, measured side by side in one run.  Rounds
# alternate the two providers so that drift on the machine hits both alike;
# each figure is the median over the rounds.  Each round's two runs make a
# pair: the summary also gives the median of the per-pair ratios and its 95%
# bootstrap confidence interval (2000 resamples), which says whether the
# run can tell a 2% difference from noise.  Writes OUT/overhead.csv (one
# row per measurement), OUT/overhead_summary.csv, OUT/overhead.png.
#
# Then the same comparison with fi_pmem_overhead, which runs both stacks in
# one process pair, interleaved in blocks of round trips a millisecond
# apart, so that the machine's drift, which makes separate fi_pingpong
# runs differ by 5-15% here, hits both alike.  Two identical stacks in one
# process pair still differ by a few percent by their place (which socket,
# which buffers: fi_pmem_overhead -P tcp shows it), so the launches
# alternate which stack is opened first, and the figure per size is the
# median over launches of pmemverbs / core, with its 95% bootstrap
# interval.  Writes OUT/overhead_interleaved.csv (one row per launch and
# size) and OUT/overhead_interleaved_summary.csv.
#
# Usage: pmv_overhead.sh OUT_DIR   (FI_PROVIDER_PATH must reach the plugin)
# Env:   PMV_BENCH_ROUNDS (7), PMV_BENCH_SIZES ("64 256 1024 4096 16384 65536"),
#        PMV_BENCH_CORE (tcp), PMV_BENCH_PORT (9700),
#        PMV_BENCH_ITERS (20000 up to 4 KiB, 5000 above),
#        PMV_BENCH_RT (auto): 1 runs both sides SCHED_FIFO (chrt -f 50),
#          which keeps other threads from preempting them; auto does so
#          where chrt is allowed (root); 0 never
#        FI_OFI_RXM_USE_SRX (1), FI_OFI_RXM_ENABLE_DYN_RBUF (0): the same
#          for both RDM stacks (see below)
#        PMV_OVERHEAD_BIN (fi_pmem_overhead in PATH), PMV_BENCH_LAUNCHES
#          (20; 0 leaves the interleaved part out), PMV_BENCH_BLOCKS
#          ("-b 400 -I 100": blocks per size and round trips per block)
set -euo pipefail

OUT=$1
ROUNDS=${PMV_BENCH_ROUNDS:-7}
SIZES=${PMV_BENCH_SIZES:-"64 256 1024 4096 16384 65536"}
CORE=${PMV_BENCH_CORE:-tcp}
port=${PMV_BENCH_PORT:-9700}
CSV=$OUT/overhead.csv
SUMMARY=$OUT/overhead_summary.csv

RT=()
if [ "${PMV_BENCH_RT:-auto}" = auto ]; then
	chrt -f 1 true 2>/dev/null && RT=(chrt -f 50)
elif [ "${PMV_BENCH_RT}" = 1 ]; then
	RT=(chrt -f 50)
fi
# ofi_rxm shares one receive context among its connections by default only
# when the core's name contains "tcp", and it receives into its own buffers
# through the core's dynamic receive buffers (fi_set_ops on the core CQ),
# which pmemverbs refuses (the core would hand ofi_rxm core fids).  Pin both
# for the two RDM stacks, so that they receive the same way and the
# comparison is of pmemverbs alone.  (Left at their defaults, tcp;ofi_rxm's
# dynamic receive buffers made it about 15-25% slower than pmemverbs;ofi_rxm
# at 64 KiB here.)
export FI_OFI_RXM_USE_SRX=${FI_OFI_RXM_USE_SRX:-1}
export FI_OFI_RXM_ENABLE_DYN_RBUF=${FI_OFI_RXM_ENABLE_DYN_RBUF:-0}

# Iterations per run: enough for a stable mean, bounded in time.
iterations_for() {
	if [ -n "${PMV_BENCH_ITERS:-}" ]; then echo "$PMV_BENCH_ITERS"
	elif [ "$1" -le 4096 ]; then echo 20000; else echo 5000; fi
}

# One fi_pingpong run; prints usec/xfer.  Server and client on separate CPUs.
pingpong_usec() {
	local prov=$1 ep=$2 size=$3 iters line
	iters=$(iterations_for "$size")
	port=$((port + 1))
	"${RT[@]}" taskset -c 0 timeout 120 fi_pingpong -p "$prov" -e "$ep" -B "$port" \
		-S "$size" -I "$iters" >/dev/null 2>&1 &
	sleep 0.3
	line=$("${RT[@]}" taskset -c 1 timeout 120 fi_pingpong -p "$prov" -e "$ep" \
		-P "$port" -S "$size" -I "$iters" 127.0.0.1 2>/dev/null |
		awk '$1 ~ /^[0-9]/ {print $7}' | tail -1)
	wait || true
	[ -n "$line" ] || { echo "fi_pingpong -p $prov -e $ep -S $size failed" >&2; return 1; }
	echo "$line"
}

median() {
	sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}

if [ "$ROUNDS" -gt 0 ]; then
	echo "ep,size,provider,round,usec_per_xfer" >"$CSV"
	for ep in msg rdm; do
		core_prov=$CORE
		[ "$ep" = rdm ] && core_prov="$CORE;ofi_rxm"
		for size in $SIZES; do
			for round in $(seq 1 "$ROUNDS"); do
				# the pair's order alternates too: no provider is always
				# the one that starts right after the other's run
				order=("$core_prov" pmemverbs)
				[ $((round % 2)) -eq 0 ] && order=(pmemverbs "$core_prov")
				for prov in "${order[@]}"; do
					usec=$(pingpong_usec "$prov" "$ep" "$size")
					echo "$ep,$size,$prov,$round,$usec" >>"$CSV"
				done
			done
		done
	done
fi

# Per-round ratios pmemverbs / core for ep $1, size $2, one per line.
pair_ratios() {
	awk -F, -v e="$1" -v s="$2" '$1 == e && $2 == s {
			if ($3 == "pmemverbs") p[$4] = $5; else c[$4] = $5 }
		END {for (r in p) if (c[r] > 0) printf "%.5f\n", p[r] / c[r]}' "$CSV"
}

# Median of the numbers on stdin and its 95% bootstrap interval: "m lo hi".
median_ci() {
	awk 'function med(a, n,   i, j, t) {
			for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) {
				t = a[j]; a[j] = a[j-1]; a[j-1] = t }
			return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
		{v[++n] = $1}
		END {
			srand(12345)
			for (i = 1; i <= n; i++) w[i] = v[i]
			m = med(w, n)
			for (b = 1; b <= 2000; b++) {
				for (i = 1; i <= n; i++) w[i] = v[int(rand() * n) + 1]
				bs[b] = med(w, n)
			}
			med(bs, 2000)
			printf "%.3f %.3f %.3f\n", m, bs[50], bs[1951]
		}'
}

if [ "$ROUNDS" -gt 0 ]; then
	echo "ep,size,core_median_usec,pmemverbs_median_usec,ratio,pair_ratio_median,pair_ratio_ci95_lo,pair_ratio_ci95_hi" >"$SUMMARY"
	printf '%-4s %8s %12s %12s %8s %10s %17s\n' ep size "core us" "pmemverbs us" \
		ratio "pair ratio" "95% CI"
	for ep in msg rdm; do
		for size in $SIZES; do
			core=$(awk -F, -v e="$ep" -v s="$size" '$1==e && $2==s && $3!="pmemverbs" {print $5}' "$CSV" | median)
			pmv=$(awk -F, -v e="$ep" -v s="$size" '$1==e && $2==s && $3=="pmemverbs" {print $5}' "$CSV" | median)
			ratio=$(awk -v a="$pmv" -v b="$core" 'BEGIN {printf "%.3f", a / b}')
			read -r pm lo hi < <(pair_ratios "$ep" "$size" | median_ci)
			echo "$ep,$size,$core,$pmv,$ratio,$pm,$lo,$hi" >>"$SUMMARY"
			printf '%-4s %8s %12s %12s %8s %10s %8s-%-8s\n' "$ep" "$size" \
				"$core" "$pmv" "$ratio" "$pm" "$lo" "$hi"
		done
	done
fi

# ------------------------------------------------ interleaved (one process pair)

LAUNCHES=${PMV_BENCH_LAUNCHES:-20}
IBIN=${PMV_OVERHEAD_BIN:-fi_pmem_overhead}
read -r -a IARGS <<<"${PMV_BENCH_BLOCKS:--b 400 -I 100}"
ICSV=$OUT/overhead_interleaved.csv
ISUMMARY=$OUT/overhead_interleaved_summary.csv

# One launch of fi_pmem_overhead for ep $1 with stacks $2 (opened first)
# and $3; its CSV rows, prefixed with launch number $4.
interleaved_launch() {
	local ep=$1 first=$2 second=$3 launch=$4 sizes
	sizes=$(echo "$SIZES" | tr ' ' ',')
	port=$((port + 2))
	"${RT[@]}" taskset -c 0 timeout 300 "$IBIN" -e "$ep" -c "$first" \
		-P "$second" -B "$port" -S "$sizes" "${IARGS[@]}" >/dev/null 2>&1 &
	sleep 0.3
	"${RT[@]}" taskset -c 1 timeout 300 "$IBIN" -e "$ep" -c "$first" \
		-P "$second" -B "$port" -S "$sizes" "${IARGS[@]}" --csv \
		-s 127.0.0.1 | tail -n +2 | sed "s/^/$launch,/"
	wait || true
}

# pmemverbs / core per launch row of ep $1, size $2, one per line.
launch_ratios() {
	awk -F, -v e="$1" -v s="$2" '$2 == e && $3 == s {
			print ($5 == "pmemverbs") ? $7 / $6 : $6 / $7 }' "$ICSV"
}

if [ "$LAUNCHES" -gt 0 ]; then
	echo "launch,ep,size,first,second,first_usec,second_usec,ratio,pair_ratio_median,pair_ratio_ci95_lo,pair_ratio_ci95_hi,blocks,iters_per_block" >"$ICSV"
	for launch in $(seq 1 "$LAUNCHES"); do
		first=$CORE second=pmemverbs
		[ $((launch % 2)) -eq 0 ] && first=pmemverbs second=$CORE
		for ep in msg rdm; do
			interleaved_launch "$ep" "$first" "$second" "$launch" >>"$ICSV"
		done
	done
	echo "ep,size,core_median_usec,pmemverbs_median_usec,ratio_median,ratio_ci95_lo,ratio_ci95_hi,launches" >"$ISUMMARY"
	echo
	echo "fi_pmem_overhead, both stacks in one process pair, $LAUNCHES launches:"
	printf '%-4s %8s %12s %12s %8s %17s\n' ep size "core us" "pmemverbs us" \
		ratio "95% CI"
	for ep in msg rdm; do
		for size in $SIZES; do
			core=$(awk -F, -v e="$ep" -v s="$size" '$2 == e && $3 == s {
				print ($4 == "pmemverbs") ? $7 : $6 }' "$ICSV" | median)
			pmv=$(awk -F, -v e="$ep" -v s="$size" '$2 == e && $3 == s {
				print ($4 == "pmemverbs") ? $6 : $7 }' "$ICSV" | median)
			n=$(launch_ratios "$ep" "$size" | wc -l)
			[ "$n" -gt 0 ] || { echo "$ep $size: no launch finished" >&2; continue; }
			read -r pm lo hi < <(launch_ratios "$ep" "$size" | median_ci)
			echo "$ep,$size,$core,$pmv,$pm,$lo,$hi,$n" >>"$ISUMMARY"
			printf '%-4s %8s %12s %12s %8s %8s-%-8s\n' "$ep" "$size" \
				"$core" "$pmv" "$pm" "$lo" "$hi"
		done
	done
fi

# The plot: each part that ran, as pmemverbs / core per size.
if command -v gnuplot >/dev/null && { [ "$ROUNDS" -gt 0 ] || [ "$LAUNCHES" -gt 0 ]; }; then
	series=()
	if [ "$ROUNDS" -gt 0 ]; then
		series+=("\"< grep '^msg' $SUMMARY\" using 2:5 with linespoints title \"MSG, fi\\\\_pingpong, $ROUNDS rounds\"")
		series+=("\"< grep '^rdm' $SUMMARY\" using 2:5 with linespoints title \"RDM, fi\\\\_pingpong, $ROUNDS rounds\"")
	fi
	if [ "$LAUNCHES" -gt 0 ]; then
		series+=("\"< grep '^msg' $ISUMMARY\" using 2:5:6:7 with yerrorlines title \"MSG, fi\\\\_pmem\\\\_overhead, $LAUNCHES launches (95% CI)\"")
		series+=("\"< grep '^rdm' $ISUMMARY\" using 2:5:6:7 with yerrorlines title \"RDM, fi\\\\_pmem\\\\_overhead, $LAUNCHES launches (95% CI)\"")
	fi
	plot=$(printf '%s, ' "${series[@]}")
	gnuplot <<GP
set terminal pngcairo size 900,500
set output "$OUT/overhead.png"
set datafile separator ","
set logscale x 2
set xlabel "message size (bytes)"
set ylabel "pmemverbs latency / $CORE latency (median)"
set yrange [0.85:1.15]
set key bottom right
set title "pmemverbs vs. the $CORE core over 127.0.0.1, one run (RDM: both over ofi\\\\_rxm)"
plot ${plot}1 with lines dt 2 title "parity", 1.02 with lines dt 3 lc rgb "gray" title "+-2%", 0.98 with lines dt 3 lc rgb "gray" notitle
GP
fi
