#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# pmv_core_compare.sh: pmemverbs side by side with the tcp core's own
# FI_COMMIT_COMPLETE on FI_RMA_PMEM memory (libfabric 2.1 on Debian 13:
# cache flushes of the written ranges, no msync; libfabric 1.17's tcp core
# has the same flush).  Two parts, over 127.0.0.1 with fi_pmem_lat:
#
# (1) early completions: how many of ORACLE_N commits (one at a time,
#     64 B and 4 KiB, rotating offsets, never the same bytes twice) had
#     completed before their bytes were persistent, checked right after
#     each completion by the initiator (fi_pmem_lat -D, -O):
#       dirty   the target's file is on a page-cache file system (ORACLE_DIR,
#               not tmpfs): a commit is early if a page of its range is
#               still dirty or under writeback (cachestat(2)).  PAGE only,
#               where persistence is writeback; any provider.
#       oracle  pmemverbs' persistence oracle (FI_PMEMVERBS_ORACLE, test
#               builds): early if the extents persisted so far do not cover
#               its range.  PAGE, DMP and MHP; pmemverbs only.
#     The core's commit is the same operation whatever the target (it
#     knows no profile): on DMP its cache flush is what persistence needs
#     and MHP needs none, which no software check can observe; those cells
#     say so.  A control run (pmemverbs PAGE with
#     FI_PMEMVERBS_FAULT_SKIP_EXTENT=3) must count at least one early
#     commit, or the oracle check could not fail.
# (2) latency: commit p50 and p99 over the 8-byte fi_read p50 of the same
#     process pair (fi_pmem_lat -m read8,commit, interleaved), 64 B and
#     4 KiB, busy (fi_cq_read) and passive (fi_cq_sread) targets, for the
#     core (-p CORE -P) and pmemverbs on PAGE, DMP and MHP targets (files in
#     LAT_DIR, /dev/shm); rounds alternate everything (configurations and
#     target modes rotate); cells are medians over rounds of the per-round
#     ratios.  PMV_CC_EP=rdm: every run on FI_EP_RDM endpoints
#     (fi_pmem_lat -e rdm, fi_pmem_bw -e rdm: pmemverbs' rxm over its MSG
#     endpoints beside the core's own RDM endpoints; issue 27 item 5).
# (3) throughput (with PMV_BW_BIN): fi_pmem_bw -m write,core_commit, 4 KiB
#     writes, 16 outstanding, passive target, BW_MS per measurement: a
#     commit on every write, in writes/s and over fi_write in the same
#     process pair (median over rounds), for the core and each profile.
#
# A benchmark, not a test: nothing is asserted on time.  The machine may
# be shared; figures are noisy, which is why they are ratios to a read of
# the same run.  Every process is bounded (timeout), every run takes the
# next port from PORT_BASE (at most PORT_BASE+199).
#
# Usage: pmv_core_compare.sh OUT_DIR PORT_BASE
# Env:   PMV_LAT_BIN (required): fi_pmem_lat; PMV_BW_BIN: fi_pmem_bw (no
#        throughput without it); FI_PROVIDER_PATH (required):
#        the directory of libpmemverbs-fi.so; PMV_CC_CORE (tcp),
#        PMV_CC_ROUNDS (7), PMV_CC_ITERS (1000), PMV_CC_WARMUP (100),
#        PMV_CC_ORACLE_N (200), PMV_CC_SIZES ("64 4096"),
#        PMV_CC_CONFIGS ("core page cache_line byte"),
#        PMV_CC_TARGETS ("busy passive"), PMV_CC_ORACLE_DIR (/var/tmp),
#        PMV_CC_LAT_DIR (/dev/shm), PMV_CC_BW_MS (250),
#        PMV_CC_BUDGET (600 s: later runs skipped), PMV_CC_EP (msg or
#        rdm: the endpoint type of every run; rdm names the files
#        core_compare_rdm*)
# Writes OUT_DIR/core_compare.csv (every fi_pmem_lat row, prefixed with
# round,config,target), core_compare_early.csv, core_compare_bw.csv (every
# fi_pmem_bw row, prefixed with round,config), core_compare.txt (the
# tables) and logs/core_compare/.  Exit: 0 if every run succeeded, 1 if
# one failed or was skipped, 2 on a usage error.
set -uo pipefail
export LC_ALL=C

PMV_SCRIPT=pmv_core_compare.sh
PMV_DIE_STATUS=2
# shellcheck source=pmv_bench_lib.sh
. "$(dirname "$0")/pmv_bench_lib.sh" ||
	{ echo "pmv_core_compare.sh: no pmv_bench_lib.sh" >&2; exit 2; }

[ $# -eq 2 ] || die "usage: pmv_core_compare.sh OUT_DIR PORT_BASE"
[[ $2 =~ ^[0-9]+$ ]] && [ "$2" -ge 1024 ] && [ "$2" -le 65335 ] ||
	die "PORT_BASE must be a number from 1024 to 65335"
[ -x "${PMV_LAT_BIN:-}" ] || die "set PMV_LAT_BIN to the fi_pmem_lat binary"
[ -e "${FI_PROVIDER_PATH:-}/libpmemverbs-fi.so" ] ||
	die "set FI_PROVIDER_PATH to the directory holding libpmemverbs-fi.so"
export FI_PROVIDER_PATH
unset FI_PROVIDER FI_PMEMVERBS_METHOD PMEM2_FORCE_GRANULARITY

OUT=$1
PORT_BASE=$2
port=$PORT_BASE
PORT_LAST=$((PORT_BASE + 199))
CORE=${PMV_CC_CORE:-tcp}
ROUNDS=${PMV_CC_ROUNDS:-7}
ITERS=${PMV_CC_ITERS:-1000}
WARMUP=${PMV_CC_WARMUP:-100}
ORACLE_N=${PMV_CC_ORACLE_N:-200}
[ "$ORACLE_N" -ge 1 ] && [ "$ORACLE_N" -le 255 ] ||
	die "PMV_CC_ORACLE_N must be 1 to 255 (4 KiB commits must not reuse a slot of the 1 MiB region)"
SIZES=${PMV_CC_SIZES:-"64 4096"}
CONFIGS=${PMV_CC_CONFIGS:-"core page cache_line byte"}
TARGETS=${PMV_CC_TARGETS:-"busy passive"}
ORACLE_DIR=${PMV_CC_ORACLE_DIR:-/var/tmp}
LAT_DIR=${PMV_CC_LAT_DIR:-/dev/shm}
BUDGET=${PMV_CC_BUDGET:-600}
BW_MS=${PMV_CC_BW_MS:-250}
BW_BIN=${PMV_BW_BIN:-}
EP=${PMV_CC_EP:-msg}
[[ $EP == msg || $EP == rdm ]] || die "PMV_CC_EP must be msg or rdm"
SUFFIX= EP_ARGS=
[ "$EP" = rdm ] && SUFFIX=_rdm EP_ARGS="-e rdm"
RUN_TIMEOUT=120
KILL_AFTER=10
LOGS=$OUT/logs/core_compare$SUFFIX
CSV=$OUT/core_compare$SUFFIX.csv
EARLY_CSV=$OUT/core_compare${SUFFIX}_early.csv
BW_CSV=$OUT/core_compare${SUFFIX}_bw.csv
TABLE=$OUT/core_compare$SUFFIX.txt
SZ=$(echo $SIZES | tr ' ' ,)

mkdir -p "$LOGS" || die "cannot create $LOGS"
[ -d "$LAT_DIR" ] && [ -w "$LAT_DIR" ] || LAT_DIR=${TMPDIR:-/tmp}
[ -d "$ORACLE_DIR" ] && [ -w "$ORACLE_DIR" ] ||
	die "PMV_CC_ORACLE_DIR=$ORACLE_DIR is not a writable directory"
if [ "$(stat -f -c %T "$ORACLE_DIR")" = tmpfs ]; then
	echo "pmv_core_compare.sh: $ORACLE_DIR is tmpfs: its pages are never" \
		"written back, the dirty check means nothing there" >&2
fi

pmv_pin quiet

target_pid=
failures=0
skipped=0
WORK=$(mktemp -d "$ORACLE_DIR/pmv_cc.XXXXXX") || die "mktemp in $ORACLE_DIR"
# Ends the target this script started, removes the targets' files.
cleanup() {
	pmv_kill_target
	rm -rf "$WORK"
}
trap cleanup EXIT

# What this libfabric's core offers: FI_RMA_PMEM on MSG and on RDM.
core_caps() {
	local t info
	for t in FI_EP_MSG FI_EP_RDM; do
		info=$(fi_info -p "$CORE" -t "$t" -v 2>/dev/null)
		if grep -q 'caps:.*FI_RMA_PMEM' <<<"$info"; then
			echo "$t=yes"
		else
			echo "$t=no"
		fi
	done | tr '\n' ' '
}

PAIR_BIN=$PMV_LAT_BIN # the program pair runs (fi_pmem_bw for throughput)
# pair NAME OUT TARGET_ENV... -- TARGET_ARGS... -- INITIATOR_ARGS...: a
# target (CPU 0) and an initiator (CPU 1) on the next port; the
# initiator's stdout to OUT.  0 on success, 2 if the budget is spent.
pair() {
	local name=$1 out=$2 t status=0 tstatus=0 log
	shift 2
	local tenv=() targs=() iargs=()
	while [ "$1" != -- ]; do tenv+=("$1"); shift; done
	shift
	while [ "$1" != -- ]; do targs+=("$1"); shift; done
	shift
	iargs=("$@")
	t=$(time_left)
	if [ "$t" -eq 0 ] || [ "$port" -ge "$PORT_LAST" ]; then
		echo "$name: skipped (budget of $BUDGET s or ports spent)" >&2
		return 2
	fi
	port=$((port + 1))
	log=$LOGS/$name-port$port
	"${pin_target[@]}" env "${tenv[@]}" timeout -k "$KILL_AFTER" "$t" \
		"$PAIR_BIN" "${targs[@]}" -B "$port" >"$log.target.log" 2>&1 &
	target_pid=$!
	"${pin_initiator[@]}" timeout -k "$KILL_AFTER" "$t" "$PAIR_BIN" \
		"${iargs[@]}" -s 127.0.0.1 -B "$port" >"$out" \
		2>"$log.initiator.log" || status=$?
	if [ "$status" -ne 0 ]; then
		sleep 1
		kill "$target_pid" 2>/dev/null || true
	fi
	wait "$target_pid" || tstatus=$?
	target_pid=
	if [ "$status" -ne 0 ] || [ "$tstatus" -ne 0 ]; then
		echo "$name: initiator exit $status, target exit $tstatus; logs $log.*" >&2
		tail -n 3 "$log.target.log" "$log.initiator.log" >&2
		return 1
	fi
}

count() {
	case $1 in
	0) return 0 ;;
	2) skipped=$((skipped + 1)) ;;
	*) failures=$((failures + 1)) ;;
	esac
	return 1
}

# fi_pmem_lat's provider and endpoint arguments for a config (core: -p
# CORE -P).
prov_args() {
	[ "$1" = core ] && echo "-p $CORE -P $EP_ARGS" || echo "-p pmemverbs $EP_ARGS"
}

# The profile name of a granularity (core: the target's profile it is on).
profile_name() {
	case $1 in page) echo PAGE ;; cache_line) echo DMP ;; byte) echo MHP ;; *) echo "$1" ;; esac
}

# An empty oracle log with its magic ("VMPELCRO", PMV_ORACLE_MAGIC LE).
make_oracle_log() {
	printf 'VMPELCRO' >"$1" && truncate -s 8M "$1"
}

# early_run WHO GRAN CHECKS [CONTROL]: ORACLE_N commits per size against a
# GRAN target file in ORACLE_DIR, checked as CHECKS says (dirty, placed,
# oracle, joined by +).  CONTROL: a number N (FI_PMEMVERBS_FAULT_SKIP_EXTENT
# =N on the target), or "decoy" (the placed check reads a zeroed file of
# the same size instead of the target's).
early_run() {
	local who=$1 gran=$2 checks=$3 control=${4:-} name file log out
	local tenv=(PMEM2_FORCE_GRANULARITY="$gran") iargs=() status=0 line
	name=early-$who-$gran${control:+-$control}
	file=$WORK/$name.region
	log=$WORK/$name.oracle
	out=$LOGS/$name.out
	[[ $checks == *dirty* ]] && iargs+=(-D "$file")
	if [[ $checks == *placed* ]]; then
		if [ "$control" = decoy ]; then
			truncate -s 1M "$file.decoy" && iargs+=(-V "$file.decoy")
		else
			iargs+=(-V "$file")
		fi
	fi
	if [[ $checks == *oracle* ]]; then
		make_oracle_log "$log" || die "cannot create $log"
		tenv+=(FI_PMEMVERBS_ORACLE="$log")
		iargs+=(-O "$log")
	fi
	[[ $control =~ ^[0-9]+$ ]] && tenv+=(FI_PMEMVERBS_FAULT_SKIP_EXTENT="$control")
	# shellcheck disable=SC2046
	pair "$name" "$out" "${tenv[@]}" -- $(prov_args "$who") -f "$file" \
		-S "$SZ" -- $(prov_args "$who") -m commit -S "$SZ" \
		-I "$ORACLE_N" -W 0 "${iargs[@]}" || status=$?
	if ! count "$status"; then
		echo "$who,$(profile_name "$gran"),$checks,$control,n/a,n/a" >>"$EARLY_CSV"
		return
	fi
	line=$(grep '^early:' "$out")
	if [[ $line =~ ^early:\ ([0-9]+)\ of\ ([0-9]+) ]]; then
		echo "$who,$(profile_name "$gran"),$checks,$control,${BASH_REMATCH[1]},${BASH_REMATCH[2]}" >>"$EARLY_CSV"
	else
		failures=$((failures + 1))
		echo "$name: no 'early:' line in $out" >&2
	fi
}

oracle_available() {
	local env
	env=$(fi_info -e 2>/dev/null | tr -d '\000')
	grep -q FI_PMEMVERBS_ORACLE <<<"$env"
}

# The checks that apply to each profile: PAGE persists by writeback
# (dirty), DMP by cache flushes (pmemverbs' oracle; the core's are not
# observable), MHP by placement (placed); the placed check everywhere.
measure_early() {
	local o=
	echo "who,profile,check,control,early,commits" >"$EARLY_CSV"
	if [ "$CORE_PMEM" = yes ]; then
		early_run core page dirty+placed
		early_run core cache_line placed
		early_run core byte placed
	fi
	if oracle_available; then
		o=+oracle
	else
		echo "pmv_core_compare.sh: no FI_PMEMVERBS_ORACLE (a release" \
			"build): pmemverbs not checked by the oracle" >&2
	fi
	early_run pmemverbs page "dirty+placed$o"
	early_run pmemverbs cache_line "placed$o"
	early_run pmemverbs byte placed
	[ -n "$o" ] && early_run pmemverbs page oracle 3
	early_run pmemverbs byte placed decoy
}

# One latency run: config $2 (core or a granularity), target mode $3.
lat_run() {
	local round=$1 config=$2 mode=$3 name rows status=0 tenv=() targs=()
	[ "$config" = core ] && [ "$CORE_PMEM" != yes ] && return 0
	[ "$config" = core ] || tenv=(PMEM2_FORCE_GRANULARITY="$config")
	[ "$mode" = busy ] && targs=(-y)
	name=lat-r$round-$config-$mode
	rows=$LOGS/$name.csv
	# shellcheck disable=SC2046
	pair "$name" "$rows" TMPDIR="$LAT_DIR" "${tenv[@]}" -- \
		$(prov_args "$config") "${targs[@]}" -S "$SZ" -- \
		$(prov_args "$config") -m read8,commit -S "$SZ" -I "$ITERS" \
		-W "$WARMUP" --csv || status=$?
	count "$status" && grep -v '^provider,\|^early' "$rows" |
		sed "s|^|$round,$config,$mode,|" >>"$CSV"
}

# One throughput run of config $2 (round $1): fi_pmem_bw write,core_commit.
bw_run() {
	local round=$1 config=$2 name rows status=0 tenv=(TMPDIR="$LAT_DIR")
	[ "$config" = core ] && [ "$CORE_PMEM" != yes ] && return 0
	[ "$config" = core ] || tenv+=(PMEM2_FORCE_GRANULARITY="$config")
	name=bw-r$round-$config
	rows=$LOGS/$name.csv
	# shellcheck disable=SC2046
	PAIR_BIN=$BW_BIN pair "$name" "$rows" "${tenv[@]}" -- \
		$(prov_args "$config") -- $(prov_args "$config") \
		-m write,core_commit -S 4096 -w 16 -T "$BW_MS" -R 1 -I 100000 \
		--csv || status=$?
	count "$status" && grep -v '^provider,' "$rows" |
		sed "s|^|$round,$config,|" >>"$BW_CSV"
}

# The items of list $2 rotated by $1 places.
rotate() {
	local -a a
	local n i
	read -r -a a <<<"$2"
	n=${#a[@]}
	for ((i = 0; i < n; i++)); do printf '%s ' "${a[$(((i + $1) % n))]}"; done
}

measure_latency() {
	local round config mode
	echo "round,config,target,provider,profile,mode,size,iters,p50_us,p99_us,max_us,mean_us,method" >"$CSV"
	echo "round,config,provider,profile,mode,size,batch,bytes,seconds,mbps,ops_per_s" >"$BW_CSV"
	for round in $(seq 1 "$ROUNDS"); do
		for config in $(rotate "$round" "$CONFIGS"); do
			for mode in $(rotate "$round" "$TARGETS"); do
				lat_run "$round" "$config" "$mode"
			done
			[ -z "$BW_BIN" ] || bw_run "$round" "$config"
		done
		echo "round $round of $ROUNDS done, $SECONDS s" >&2
	done
}

# ------------------------------------------------------------- tables

early_table() {
	local g who
	echo "# (1) commits completed before persistence ($ORACLE_N per size,"
	echo "#     sizes $SIZES; dirty: a page of the range dirty at completion,"
	echo "#     file in $ORACLE_DIR; oracle: pmemverbs' persisted extents)"
	printf '%-14s %-32s %-32s %-32s\n' who PAGE DMP MHP
	for who in core pmemverbs; do
		local line
		line=$(printf '%-14s' "$who$([ "$who" = core ] && echo " ($CORE)")")
		for g in PAGE DMP MHP; do
			local cell
			cell=$(awk -F, -v w="$who" -v p="$g" '$1 == w && $2 == p && $4 == "" {
				printf "%s%s of %s (%s)", s, $5, $6, $3; s = "; " }' "$EARLY_CSV")
			[ -z "$cell" ] && [ "$who" = core ] &&
				[ "$CORE_PMEM" != yes ] && cell="no FI_RMA_PMEM"
			line+=$(printf ' %-32s' "${cell:-n/a}")
		done
		echo "$line"
	done
	echo "# the core's cache flush on DMP is not observable in software: its"
	echo "# DMP cell checks placement only."
	awk -F, '$4 != "" && NR > 1 { printf "control: %s %s %s, %s: %s of %s early (%s)\n", $1, $2, $3, ($4 == "decoy" ? "placed check on a zeroed decoy file" : "FI_PMEMVERBS_FAULT_SKIP_EXTENT=" $4), $5, $6, ($5 > 0 ? "the check can fail" : "MISSED: this check cannot fail") }' "$EARLY_CSV"
}

# awk: median of the numbers in the space-separated list l (n/a if none).
AWK_MEDIAN='
function median(l,   n, v, i, j, x) {
	n = split(l, v, " ")
	if (!n) return "n/a"
	for (i = 2; i <= n; i++) {
		x = v[i] + 0
		for (j = i - 1; j >= 1 && v[j] + 0 > x; j--) v[j + 1] = v[j]
		v[j + 1] = x
	}
	return (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}'

# Per cell "config target size": median over rounds of commit p50 and
# p99 over read8 p50, and the medians of the two p50s in us.
latency_cells() {
	awk -F, "$AWK_MEDIAN"'
	NR > 1 { k = $2 " " $3 " " $7; r = $1; cells[k] = 1
		if ($6 == "read8") rd[k, r] = $9
		if ($6 == "commit") { c50[k, r] = $9; c99[k, r] = $10; runs[k] = runs[k] " " r }
	}
	END { for (k in cells) { a = b = c = d = ""
		n = split(runs[k], rr, " ")
		for (i = 1; i <= n; i++) { r = rr[i]
			if (!((k, r) in rd) || rd[k, r] <= 0) continue
			a = a " " c50[k, r] / rd[k, r]; b = b " " c99[k, r] / rd[k, r]
			c = c " " c50[k, r]; d = d " " rd[k, r] }
		print k, n, median(a), median(b), median(c), median(d) } }' "$CSV"
}

latency_table() {
	local c t s n a b cp rp line
	declare -A L=()
	while read -r c t s n a b cp rp; do L["$c $t $s"]="$a $b $cp $rp"; done < <(latency_cells)
	echo
	echo "# (2) commit p50/read8 p50 and commit p99/read8 p50 (medians over"
	echo "#     $ROUNDS alternating rounds), commit p50/read8 p50 in us;"
	echo "#     busy: target in fi_cq_read; passive: in fi_cq_sread; $EP"
	line=$(printf '%-16s %5s' config size)
	for t in $TARGETS; do line+=$(printf '  %-30s' "$t"); done
	echo "$line"
	for c in $CONFIGS; do
		[ "$c" = core ] && [ "$CORE_PMEM" != yes ] && {
			echo "core ($CORE): no FI_RMA_PMEM here: not measured"; continue; }
		for s in $SIZES; do
			if [ "$c" = core ]; then line=$(printf '%-16s %5s' "$CORE FI_CC" "$s")
			else line=$(printf '%-16s %5s' "pmv $(profile_name "$c")" "$s"); fi
			for t in $TARGETS; do
				read -r a b cp rp <<<"${L["$c $t $s"]:-n/a n/a n/a n/a}"
				line+=$(printf '  %-30s' "$(printf '%.2f p99 %.1f (%.1f/%.1f)' "$a" "$b" "$cp" "$rp" 2>/dev/null || echo n/a)")
			done
			echo "$line"
		done
	done
}

# Per config: median over rounds of core_commit writes/s and of its
# per-round ratio to fi_write in the same run.
throughput_table() {
	[ -n "$BW_BIN" ] || { echo; echo "# (3) throughput: not measured (PMV_BW_BIN unset)"; return; }
	echo
	echo "# (3) a commit on every 4 KiB write, 16 outstanding, passive target:"
	echo "#     writes/s and over fi_write in the same process pair (medians"
	echo "#     over $ROUNDS rounds of $BW_MS ms)"
	awk -F, "$AWK_MEDIAN"'
	BEGIN { name["page"] = "PAGE"; name["cache_line"] = "DMP"; name["byte"] = "MHP" }
	# the profile by config: fi_pmem_bw prints n/a where it cannot ask (RDM)
	NR > 1 { ops[$2, $1, $5] = $11; cfg[$2] = ($2 in name) ? name[$2] : $4
		 rounds[$2] = rounds[$2] " " $1 }
	END { for (c in cfg) { a = b = ""; n = split(rounds[c], r, " ")
		for (i = 1; i <= n; i++) if ((c, r[i], "core_commit") in ops &&
		    !seen[c, r[i]]++) { a = a " " ops[c, r[i], "core_commit"]
			if (ops[c, r[i], "write"] > 0)
				b = b " " ops[c, r[i], "core_commit"] / ops[c, r[i], "write"] }
		printf "%-16s %10.0f writes/s  %.2f of fi_write  (fi_write %s)\n",
		       (c == "core" ? "core FI_CC" : "pmv " cfg[c]), median(a),
		       median(b), "" }
	}' "$BW_CSV" | sed 's/  (fi_write )//' | sort
}

FI_VER=$(fi_info --version 2>/dev/null | awk '/^libfabric:/ {print $2}')
CAPS=$(core_caps)
CORE_PMEM=no
[[ $CAPS == *FI_EP_${EP^^}=yes* ]] && CORE_PMEM=yes
{
	echo "# pmv_core_compare.sh: libfabric ${FI_VER:-?}, core $CORE: FI_RMA_PMEM $CAPS"
	echo "# endpoints: FI_EP_${EP^^} (PMV_CC_EP=$EP)"
	[ "$CORE_PMEM" = yes ] ||
		echo "# the $CORE core offers no FI_RMA_PMEM here: pmemverbs only"
} | tee "$OUT/core_compare${SUFFIX}_head.txt"
measure_early
measure_latency
{
	cat "$OUT/core_compare${SUFFIX}_head.txt"
	early_table
	latency_table
	throughput_table
} | tee "$TABLE"
rm -f "$OUT/core_compare${SUFFIX}_head.txt"
echo "# $SECONDS s; $failures failed runs, $skipped skipped (logs in $LOGS)"
[ "$failures" -eq 0 ] && [ "$skipped" -eq 0 ]
