# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# pmv_commit_modes_tables.sh: the tables of pmv_commit_modes.sh, which
# sources it (as it does pmv_commit_modes_rdm.sh): the medians over rounds
# of its CSVs (commit_modes.csv, commit_modes_bw.csv) and the latency,
# wait-mode, A/A control and throughput tables with their verdicts, which
# also write commit_modes_summary.csv and commit_modes_bw_summary.csv.
# It uses that script's settings, CSV paths, granularity_of, method_in and
# sizes_for; pmv_commit_modes_rdm.sh uses its ratio_cells,
# granularity_profile, fmt and LAT.

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

# Per cell of the targets matching awk regex $1 (all for ""), one line
# "config target size rounds p50_ratio p99_ratio commit_p50 read8_p50":
# the medians over rounds of commit p50 / read8 p50 and of commit p99 /
# read8 $2 (p50 or p99) of the same run, and the medians of the two p50s.
ratio_cells() {
	awk -F, -v pre="$1" -v den="$2" "$AWK_MEDIAN"'
	NR > 1 && $3 ~ pre && ($6 == "commit" || $6 == "read8") {
		k = $2 " " $3 " " $7
		cells[k] = 1
		p50[k, $6, $1] = $9
		p99[k, $6, $1] = $10
		list[k, $6] = list[k, $6] " " $9
		if ($6 == "commit")
			runs[k] = runs[k] " " $1
	}
	END {
		for (k in cells) {
			a = b = ""
			n = split(runs[k], r, " ")
			for (i = 1; i <= n; i++) {
				if (!((k, "read8", r[i]) in p50) ||
				    p50[k, "read8", r[i]] <= 0 ||
				    (den == "p99" && p99[k, "read8", r[i]] <= 0))
					continue
				a = a " " p50[k, "commit", r[i]] / p50[k, "read8", r[i]]
				b = b " " p99[k, "commit", r[i]] / \
				    (den == "p99" ? p99[k, "read8", r[i]] : p50[k, "read8", r[i]])
			}
			print k, n, median(a), median(b), median(list[k, "commit"]),
			      median(list[k, "read8"])
		}
	}' "$CSV"
}

# The wait-mode tables: per config and size, per target its p50 and p99
# ratios (commit over read8 p50), PASS if within the goals; the targets
# waiting as fi_pmem_lat -w says (w_), then the initiators as -x says (x_).
wait_table() {
	wait_cells w "$WAIT_CONFIGS" "$WAIT_TARGETS" \
		"a passive target waiting as fi_pmem_lat -w says"
	wait_cells x "$INI_WAIT_CONFIGS" "$INI_WAIT_TARGETS" \
		"a passive target, the initiator waiting as fi_pmem_lat -x says"
}

# One wait-mode table: configs $2 by targets $3 (prefix $1_), titled $4.
wait_cells() {
	local pre=$1 configs=$2 targets=$3 title=$4 c s t n a b v line
	declare -A W=()
	while read -r c t s n a b _; do
		W["$c $t $s"]="$a $b"
	done < <(ratio_cells "^${pre}_" p50)
	[ ${#W[@]} -gt 0 ] || return 0
	echo
	echo "# wait modes: $title;"
	echo "# cell: commit p50/read8 p50, commit p99/read8 p50 (medians over"
	echo "# $WAIT_ROUNDS rounds), PASS if p50 <= $GOAL_AGENT and p99 <= $GOAL_WAIT_P99;"
	echo "# _idle: $IDLE_US us idle before each operation."
	for c in $configs; do
		for s in $WAIT_SIZES; do
			line="$(profile_of "$c") $s:"
			for t in $targets; do
				read -r a b <<<"${W["$c $t $s"]:-n/a n/a}"
				a=$(fmt "$a" 2); b=$(fmt "$b" 1)
				v=$(verdict "$a" le "$GOAL_AGENT")
				[ "$v" = PASS ] && v=$(verdict "$b" le "$GOAL_WAIT_P99")
				line+=" ${t#"${pre}"_}=$a/$b/$v"
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
	granularity_profile "$1"
}

# The profile a config's granularity gives (RDM rows print n/a).
granularity_profile() {
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
	local c s m p limit line t n ratio commit read8
	declare -gA LAT=()
	while read -r c t s n ratio _ commit read8; do
		LAT["$c $t $s"]="$n $ratio $commit $read8"
	done < <(ratio_cells "" p50)
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
