# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# pmv_commit_modes_rdm.sh: the RDM section of pmv_commit_modes.sh, which
# sources it (it uses that script's pair, lat_run, count and CSV, and
# ratio_cells, granularity_profile and fmt of pmv_commit_modes_tables.sh).
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

# One RDM table row: config $1, size $2; a cell per RDM target.
rdm_row() {
	local c=$1 s=$2 t a b cp rp msg line
	line=$(printf '%-7s %-10s %5s' "$(granularity_profile "$c")" "$c" "$s")
	for t in $RDM_TARGETS; do
		read -r a b cp rp <<<"${RDM["$c $t $s"]:-n/a n/a n/a n/a}"
		read -r _ msg _ <<<"${LAT["$c ${t#rdm_} $s"]:-0 n/a n/a}"
		a=$(fmt "$a" 2); b=$(fmt "$b" 2)
		line+=$(printf '  %-34s' "$a/$b $(fmt "$cp" 1)/$(fmt "$rp" 1) msg $(fmt "$msg" 2)")
		echo "$(granularity_profile "$c"),$c,$t,$s,$cp,$rp,$a,$b,$msg" >>"$RDM_SUMMARY"
	done
	echo "$line"
}

# The RDM table (after latency_table, whose LAT cells it shows beside).
rdm_table() {
	local c s t line
	[ -n "$RDM_TARGETS" ] || return 0
	declare -A RDM=()
	while read -r c t s _ line; do
		RDM["$c $t $s"]=$line
	done < <(ratio_cells '^rdm_' p99)
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
