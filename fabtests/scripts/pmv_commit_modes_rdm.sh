# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# pmv_commit_modes_rdm.sh: the RDM section of pmv_commit_modes.sh, which
# sources it (it uses that script's pair, lat_run, count, fmt and CSV).
#
#   rdm_busy, rdm_passive, rdm_idle  fi_pmem_lat -e rdm (ofi_rxm over
#            pmemverbs MSG) on both sides, -m read8,commit: the commit and
#            the 8-byte fi_read on the same RDM endpoint, interleaved;
#            busy (-y), passive (fi_cq_sread) and idle (IDLE_US before each
#            operation) targets, on PMV_CM_RDM_CONFIGS at PMV_CM_RDM_SIZES,
#            in the first PMV_CM_RDM_ROUNDS rounds (1: RDM runs are fewer
#            to keep ./run bench within its budget).
#   The table: per profile and size, per target, commit p50 / read8 p50 and
#   commit p99 / read8 p99 (medians over those rounds), beside the MSG
#   cell's p50 ratio of the main table where it was measured.
#   The tcp core's own RDM commit (fi_pmem_lat -p tcp -P -e rdm) is run
#   where fi_getinfo offers tcp RDM endpoints with FI_RMA_PMEM; otherwise
#   the table says why not (fi_pmem_lat's "FI_EP_RDM: unsupported" line).
# Env:   PMV_CM_RDM_TARGETS ("rdm_busy rdm_passive rdm_idle"; "" for none),
#        PMV_CM_RDM_CONFIGS ("page cache_line byte"), PMV_CM_RDM_SIZES
#        ("64 4096"), PMV_CM_RDM_ROUNDS (1)
# Writes: commit_modes.csv rows with target rdm_*, and
#         commit_modes_rdm_summary.csv (the table's cells).

RDM_TARGETS=${PMV_CM_RDM_TARGETS-"rdm_busy rdm_passive rdm_idle"}
RDM_CONFIGS=${PMV_CM_RDM_CONFIGS:-"page cache_line byte"}
RDM_SIZES=${PMV_CM_RDM_SIZES:-"64 4096"}
RDM_ROUNDS=${PMV_CM_RDM_ROUNDS:-1}
RDM_SUMMARY=$OUT/commit_modes_rdm_summary.csv
RDM_TCP_NOTE=$LOGS/rdm-tcp.note

# Round $1's RDM cells, then (round 1) the tcp core's RDM commit.
rdm_measure() {
	local round=$1 config mode
	[ -n "$RDM_TARGETS" ] && [ "$round" -le "$RDM_ROUNDS" ] || return 0
	for config in $RDM_CONFIGS; do
		for mode in $RDM_TARGETS; do
			lat_run "$round" "$config" "$mode"
		done
	done
	[ "$round" -eq 1 ] && rdm_tcp_run
}

# The tcp core's FI_COMMIT_COMPLETE on RDM endpoints (-P), passive target;
# when fi_pmem_lat says the endpoint is not offered, only the reason is
# kept (in RDM_TCP_NOTE) and nothing is counted as failed.
rdm_tcp_run() {
	local name=lat-r1-tcp-rdm_passive rows status=0 sizes
	sizes=$(echo $RDM_SIZES | tr ' ' ,)
	rows=$LOGS/$name.csv
	pair "$name" tcp "$rows" "$PMV_LAT_BIN" -p tcp -P -e rdm -S "$sizes" -- \
		"$PMV_LAT_BIN" -p tcp -P -e rdm -S "$sizes" -I "$ITERS" \
		-W "$WARMUP" -m read8,commit --csv || status=$?
	if grep -q '^FI_EP_RDM: unsupported' "$rows"; then
		grep '^FI_EP_RDM: unsupported' "$rows" | head -n 1 >"$RDM_TCP_NOTE"
		return 0
	fi
	count "$status" && tail -n +2 "$rows" |
		sed "s|^|1,tcp,rdm_passive,|" >>"$CSV"
}

# Per RDM cell, one line "config target size p50_ratio p99_ratio commit_p50
# read8_p50": medians over rounds of the per-round ratios and p50s.
rdm_cells() {
	awk -F, "$AWK_MEDIAN"'
	NR > 1 && $3 ~ /^rdm_/ && ($6 == "commit" || $6 == "read8") {
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
				    p99[k, "read8", r[i]] <= 0)
					continue
				a = a " " p50[k, "commit", r[i]] / p50[k, "read8", r[i]]
				b = b " " p99[k, "commit", r[i]] / p99[k, "read8", r[i]]
			}
			print k, median(a), median(b), median(list[k, "commit"]),
			      median(list[k, "read8"])
		}
	}' "$CSV"
}

# The profile a config's granularity gives (RDM rows print n/a).
rdm_profile() {
	case $(granularity_of "$1") in
	page) echo PAGE ;; cache_line) echo DMP ;; byte) echo MHP ;; *) echo "?" ;;
	esac
}

# One RDM table row: config $1, size $2; a cell per RDM target.
rdm_row() {
	local c=$1 s=$2 t a b cp rp msg line
	line=$(printf '%-7s %-10s %5s' "$(rdm_profile "$c")" "$c" "$s")
	for t in $RDM_TARGETS; do
		read -r a b cp rp <<<"${RDM["$c $t $s"]:-n/a n/a n/a n/a}"
		read -r _ msg _ <<<"${LAT["$c ${t#rdm_} $s"]:-0 n/a n/a}"
		a=$(fmt "$a" 2); b=$(fmt "$b" 2)
		line+=$(printf '  %-34s' "$a/$b $(fmt "$cp" 1)/$(fmt "$rp" 1) msg $(fmt "$msg" 2)")
		echo "$(rdm_profile "$c"),$c,$t,$s,$cp,$rp,$a,$b,$msg" >>"$RDM_SUMMARY"
	done
	echo "$line"
}

# The RDM table (after latency_table, whose LAT cells it shows beside).
rdm_table() {
	local c s t line
	[ -n "$RDM_TARGETS" ] || return 0
	declare -A RDM=()
	while read -r c t s line; do RDM["$c $t $s"]=$line; done < <(rdm_cells)
	echo "profile,config,target,size,commit_p50_us,read8_p50_us,p50_ratio,p99_ratio,msg_p50_ratio" >"$RDM_SUMMARY"
	echo
	echo "# RDM endpoints (fi_pmem_lat -e rdm: ofi_rxm over pmemverbs MSG):"
	echo "# commit / 8-byte fi_read on the same RDM endpoint, interleaved;"
	echo "# cell: p50 ratio/p99 ratio, commit p50/read8 p50 in us, and msg: the"
	echo "# MSG p50 ratio of the table above (n/a: not measured at that size)."
	echo "# Medians over $RDM_ROUNDS round(s); idle: $IDLE_US us before each operation."
	line=$(printf '%-7s %-10s %5s' profile config size)
	for t in $RDM_TARGETS; do line+=$(printf '  %-34s' "$t"); done
	echo "$line"
	for c in $RDM_CONFIGS; do
		for s in $RDM_SIZES; do rdm_row "$c" "$s"; done
	done
	rdm_tcp_line
}

# The tcp core's RDM commit: its ratio, or why it was not run.
rdm_tcp_line() {
	local s a b cp rp
	if [ -s "$RDM_TCP_NOTE" ]; then
		echo "tcp core, RDM: not run: $(cat "$RDM_TCP_NOTE")"
		return
	fi
	for s in $RDM_SIZES; do
		read -r a b cp rp <<<"${RDM["tcp rdm_passive $s"]:-n/a n/a n/a n/a}"
		echo "tcp core (-P), RDM, passive, $s B: $(fmt "$a" 2)/$(fmt "$b" 2)" \
			"$(fmt "$cp" 1)/$(fmt "$rp" 1)"
	done
}
