# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# runfabtests_pmem_ratios.sh: the ratio table of runfabtests_pmem.sh, which
# sources it: the medians of its CSVs (commit_latency.csv, commit_bw.csv,
# remotelog.csv, pmv_commit_modes.sh's summaries), the profile labels, and
# ratios(), which prints each goal's ratio and verdict and writes
# ratios.csv.  It uses that script's OUT, *_CONFIGS, LAT_SIZES, LOG_SIZES
# and PMV_GOAL_* thresholds; runfabtests_pmem_plots.sh uses its helpers.

median() {
	sort -g | awk '{v[NR] = $1}
		END {if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}

divide() {
	awk -v a="$1" -v b="$2" 'BEGIN {if (a != "" && b > 0) printf "%.2f", a / b; else print "n/a"}'
}

# Median p50 of commit_latency.csv rows: config, mode, size.
lat_p50() {
	awk -F, -v c="$1" -v m="$2" -v s="$3" \
		'NR > 1 && $2 == c && $5 == m && $6 == s {print $8}' \
		"$OUT/commit_latency.csv" | median
}

# p50 of a remotelog.csv row: profile (label), mode, size.
log_p50() {
	awk -F, -v p="$1" -v m="$2" -v s="$3" \
		'NR > 1 && $2 == p && $3 == m && $4 == s {print $6}' \
		"$OUT/remotelog.csv" | median
}

# Median of a commit_bw.csv column (mbps or ops_per_s) for provider,
# profile, mode, size, batch.
bw_of() {
	awk -F, -v p="$1" -v r="$2" -v m="$3" -v s="$4" -v b="$5" -v col="$6" '
		NR == 1 {for (i = 1; i <= NF; i++) idx[$i] = i; next}
		$1 == p && $2 == r && $3 == m && $4 == s && $5 == b {print $idx[col]}' \
		"$OUT/commit_bw.csv" | median
}

# The profile label of a config: PAGE, DMP, MHP; with a forced method,
# PROFILE/METHOD (byte:agent is MHP/agent).
profile_of() {
	local p=
	case ${1%%:*} in page) p=PAGE ;; cache_line) p=DMP ;; byte) p=MHP ;; esac
	[[ $1 == *:* ]] && p=$p/${1#*:}
	echo "$p"
}

# CSV rows on stdin, with the profile column ($2) labelled by config $1's
# forced method, so that both methods' rows stay apart.
label_method() {
	if [[ $1 == *:* ]]; then
		awk -F, -v OFS=, -v m="${1#*:}" '{$2 = $2 "/" m; print}'
	else
		cat
	fi
}

# The method a latency config's commits took (commit_latency.csv).
lat_method() {
	awk -F, -v c="pmemverbs/$1" '$2 == c && $5 == "commit" {print $12; exit}' \
		"$OUT/commit_latency.csv"
}

# Prints a ratio line and appends it to ratios.csv; $6: le or ge.
ratio_row() {
	local goal=$1 what=$2 profile=$3 size=$4 ratio=$5 cmp=$6 limit=$7 verdict
	if [ "$ratio" = n/a ]; then verdict=n/a
	elif awk -v r="$ratio" -v l="$limit" -v c="$cmp" \
		'BEGIN {exit !(c == "le" ? r <= l : r >= l)}'; then verdict=met
	else verdict=MISSED; fi
	printf '%-3s %-44s %-8s %8s %7s %5s %-6s\n' "$goal" "$what" "$profile" \
		"$size" "$ratio" "$([ "$cmp" = le ] && echo "<=" || echo ">=")$limit" \
		"$verdict"
	echo "$goal,$what,$profile,$size,$ratio,$cmp,$limit,$verdict" >>"$OUT/ratios.csv"
}

# Goal (a) for config $1 with target $2 (pmv_commit_modes.sh's summary):
# the largest commit / read8 ratio over its sizes up to 4 KiB, n/a if
# one of them is missing.
modes_row() {
	local g=$1 t=$2 m ratio limit sizes
	read -r m ratio limit sizes < <(awk -F, -v c="$g" -v t="$t" '
		NR > 1 && $3 == c && $4 == t && $5 <= 4096 {
			m = $2; l = $10
			if (lo == "" || $5 + 0 < lo) lo = $5 + 0
			if (hi == "" || $5 + 0 > hi) hi = $5 + 0
			if ($9 == "n/a") na = 1
			else if (r == "" || $9 + 0 > r + 0) r = $9
		}
		END {
			if (m != "")
				print m, (na || r == "" ? "n/a" : r), l,
				      lo == hi ? lo : lo "-" hi
		}' "$OUT/commit_modes_summary.csv")
	[ -n "${m:-}" ] || return 0
	ratio_row a "commit ($m)/read8 p50, $t, max" \
		"$(profile_of "$g")" "$sizes" "$ratio" le "$limit"
}

# Goals (d) and (f) from pmv_commit_modes.sh's throughput summary, a row
# per config of CM_CONFIGS (none for :send ones: 4 KiB does not go by
# send): goal $1, mode $2, ratio column $3, label $4, limit $5.
modes_bw_rows() {
	local g ratio
	for g in $CM_CONFIGS; do
		[[ $g == *:send ]] && continue
		ratio=$(awk -F, -v c="$g" -v m="$2" -v col="$3" '
			NR == 1 {for (i = 1; i <= NF; i++) idx[$i] = i; next}
			$3 == c && $4 == m {print $idx[col]; exit}' \
			"$OUT/commit_modes_bw_summary.csv")
		ratio_row "$1" "$4" "$(profile_of "$g")" 4096 "${ratio:-n/a}" ge "$5"
	done
}

ratios() {
	local g p t size num den mib
	echo "goal,comparison,profile,size,ratio,cmp,limit,verdict" >"$OUT/ratios.csv"
	echo
	echo "# ratios vs the goals (medians over rounds; thresholds: PMV_GOAL_*)"
	printf '%-3s %-44s %-8s %8s %7s %5s %-6s\n' goal comparison profile size \
		ratio limit verdict
	if [ -s "$OUT/commit_modes_summary.csv" ]; then
		for g in $CM_CONFIGS; do
			for t in $CM_TARGETS; do
				modes_row "$g" "$t"
			done
		done
	fi
	if [ -s "$OUT/commit_latency.csv" ]; then
		for g in $CONFIGS; do
			for size in $LAT_SIZES; do
				[ "$size" -le 4096 ] || continue
				num=$(lat_p50 "pmemverbs/$g" commit "$size")
				den=$(lat_p50 tcp commit "$size")
				ratio_row b "commit ($(lat_method "$g")) p50 / tcp FI_COMMIT_COMPLETE p50" \
					"$(profile_of "$g")" "$size" \
					"$(divide "$num" "$den")" le "$GOAL_TCP"
			done
		done
	fi
	if [ -s "$OUT/commit_bw.csv" ]; then
		for g in $CONFIGS; do
			p=$(profile_of "$g")
			size=65536
			mib=$(((1048576 + size - 1) / size))
			num=$(bw_of pmemverbs "$p" commit $size $mib mbps)
			den=$(bw_of pmemverbs "$p" write $size 0 mbps)
			ratio_row c "64K writes, commit/MiB MB/s / fi_write MB/s" \
				"$p" $size "$(divide "$num" "$den")" ge "$GOAL_BW_MIB"
		done
		# the same against pmemverbs's own commit of every write, measured
		# in the same run (the tcp baseline's target progresses only in
		# fi_cq_sread, pmemverbs's agent polls the core)
		for g in $CONFIGS; do
			p=$(profile_of "$g")
			for size in 4096 65536; do
				num=$(bw_of pmemverbs "$p" commit $size 16 ops_per_s)
				den=$(bw_of pmemverbs "$p" core_commit $size 1 ops_per_s)
				ratio_row "d'" "16 writes+1 commit / pmemverbs commit each" \
					"$p" $size "$(divide "$num" "$den")" ge "$GOAL_BATCH16"
			done
		done
	fi
	if [ -s "$OUT/commit_modes_bw_summary.csv" ]; then
		modes_bw_rows d commit_flush per_tcp_commit \
			"16 writes+1 commit / tcp commits, 16 deep" "$GOAL_BATCH16"
		modes_bw_rows f core_commit per_fi_write \
			"commit each / fi_write, 16 deep, writes/s" "$GOAL_PIPE"
	fi
	if [ -s "$OUT/remotelog.csv" ]; then
		for g in $FENCE_CONFIGS; do
			p=$(profile_of "${g%%:*}")
			for size in ${LOG_SIZES//,/ }; do
				num=$(log_p50 "$p" compound "$size")
				den=$(log_p50 "$(profile_of "$g")" compound "$size")
				ratio_row e "compound append p50, send / agent fence" \
					"$p" "$size" "$(divide "$num" "$den")" le "$GOAL_SEND"
			done
		done
	fi
}
