# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# run_all_checks.sh: the single-build checks of test/run_all.sh: layout
# and fuzzer, fi_info and fi_pmem_probe, configuration errors, the
# examples, the fabtests and benchmark programs as tests (fi_pmem_commit,
# RemoteLog, idle targets, counter targets, fi_pmem_lat on RDM),
# fi_pingpong, and the Debian package.  Sourced by test/run_all.sh; uses
# its ROOT, BUILD, add and add_suite (pmv_suite.sh).

# Runs a server in the background, then its client; PASS NAME when both
# exit 0, else FAIL NAME and the server's last lines.
# check_pair NAME SERVER_CMD... -- CLIENT_CMD...
check_pair() {
	local name=$1 srv_out srv scmd=()
	shift
	while [[ $1 != -- ]]; do scmd+=("$1"); shift; done
	shift
	srv_out=$(mktemp)
	"${scmd[@]}" >"$srv_out" 2>&1 &
	srv=$!
	sleep 0.5
	if "$@" >/dev/null 2>&1 && wait "$srv"; then
		echo "PASS $name"
		add 1 0
	else
		wait "$srv" 2>/dev/null
		echo "FAIL $name"; tail -5 "$srv_out"
		add 0 1
	fi
	rm -f "$srv_out"
}

# Runs libfabric's own fi_pingpong through pmemverbs, data checks on.
run_pingpong() {
	local ep=$1 size=$2 port=$3
	check_pair "fi_pingpong -e $ep -S $size" \
		timeout 60 fi_pingpong -p pmemverbs -e "$ep" -B "$port" \
		-S "$size" -I 200 -c -- \
		timeout 60 fi_pingpong -p pmemverbs -e "$ep" -P "$port" \
		-S "$size" -I 200 -c 127.0.0.1
}

# fi_pmem_probe reports the profile each forced granularity gives a file,
# and the method the provider's selection gives it over the tcp core
# (read_flush for MHP: the agent takes every profile over tcp only toward a
# target that offers a gate, which a local probe has not; the same with
# FI_PMEMVERBS_JOIN_REQUEST=0); it opens the file
# read-only (a file its user cannot write, as nobody when run as root).
run_probe() {
	local file case gran want method env got
	file=$(mktemp)
	truncate -s 1M "$file"
	for case in page:PAGE:agent: cache_line:DMP:agent: byte:MHP:read_flush: \
		    byte:MHP:read_flush:FI_PMEMVERBS_JOIN_REQUEST=0; do
		IFS=: read -r gran want method env <<<"$case"
		got=$(env FI_PMEMVERBS_CORE_PROV=tcp PMEM2_FORCE_GRANULARITY=$gran $env \
		      "$BUILD/util/fi_pmem_probe" "$file" |
		      awk '/^profile:/ {p = $2} /^method:/ {m = $2} END {print p, m}')
		if [ "$got" = "$want $method" ]; then
			echo "PASS fi_pmem_probe $gran ${env:+($env) }-> $want, $method"
			add 1 0
		else
			echo "FAIL fi_pmem_probe $gran ${env:+($env) }: want '$want $method', got '$got'"
			add 0 1
		fi
	done
	chmod 0444 "$file"
	local asuser=()
	[ "$(id -u)" -eq 0 ] && asuser=(setpriv --reuid=65534 --regid=65534 --clear-groups)
	if got=$("${asuser[@]}" "$BUILD/util/fi_pmem_probe" "$file" 2>&1) &&
	   grep -q '^profile:' <<<"$got"; then
		echo "PASS fi_pmem_probe on a read-only file: $(grep '^profile:' <<<"$got" | tr -s ' ')"
		add 1 0
	else
		echo "FAIL fi_pmem_probe on a read-only file: $(tr '\n' ' ' <<<"$got")"
		add 0 1
	fi
	rm -f "$file"
	run_probe_remote "${PMV_PROBE_PORT:-9475}"
}

# fi_pmem_probe -r: the profile table a demo target (MHP file) pushes.
run_probe_remote() {
	local port=$1 file tpid got rc=0
	file=$(mktemp /dev/shm/pmv_probe.XXXXXX)
	FI_PROVIDER_PATH=$BUILD/.libs PMEM2_FORCE_GRANULARITY=byte timeout 30 \
		"$BUILD/examples/pmv_demo" target -p "$port" -f "$file" >/dev/null 2>&1 &
	tpid=$!
	sleep 0.5
	got=$(FI_PROVIDER_PATH=$BUILD/.libs FI_PMEMVERBS_CORE_PROV=tcp timeout 30 \
	      "$BUILD/util/fi_pmem_probe" -r 127.0.0.1 "$port" 2>&1) || rc=$?
	kill "$tpid" 2>/dev/null
	wait "$tpid" 2>/dev/null
	rm -f "$file"
	if [[ $rc -eq 0 ]] && grep -q '^key .*profile MHP *method read_flush' <<<"$got"; then
		echo "PASS fi_pmem_probe -r: $(grep '^key' <<<"$got" | tr -s ' ' | head -1)"
		add 1 0
	else
		echo "FAIL fi_pmem_probe -r (exit $rc): want a key of profile MHP, method read_flush: $(tr '\n' ' ' <<<"$got")"
		add 0 1
	fi
}

# An invalid FI_PMEMVERBS_* value: no pmemverbs endpoint, a warning at
# FI_LOG_LEVEL=warn, and the shipped tools say to set it
# (test/failure/run_config_errors.sh; nothing listens on the port).
run_config_errors() {
	local out
	out=$(bash "$ROOT/test/failure/run_config_errors.sh" "$BUILD" "$1" 2>&1)
	printf '%s\n' "$out" | grep -E '^FAIL|passed'
	add_suite "${FUNCNAME[0]}" "$out"
}

# The examples as make built them in the build tree (the package test
# builds them again from copies, with their pkg-config Makefiles).
run_examples_built() {
	local out
	out=$(FI_PROVIDER_PATH=$BUILD/.libs bash "$ROOT/examples/run_examples.sh" "$1" "$BUILD" 2>&1)
	printf '%s\n' "$out"
	add_suite "${FUNCNAME[0]}" "$out"
}

# The measurement build (configure --enable-timeline, in build-timeline/):
# it builds, and its timeline of 300 commits lines every step up on both
# sides (test/integration/run_timeline.sh).
run_timeline() {
	local out
	out=$(bash "$ROOT/test/integration/run_timeline.sh" "$ROOT" \
		"$ROOT/build-timeline" "$1" 2>&1)
	echo "$out"
	if [[ $out == PASS* ]]; then add 1 0; else add 0 1; fi
}

# The source layout (DESIGN.md section 3): no call cycle between files,
# initiator/ and target/ never call each other (from the build's objects),
# no include circle or include across folders, no header inline calling
# across folders (check_cycles.py);
# every file names its licence (SPDX); the man pages match the code
# (parameters, error codes, extension functions, tools: check_man.py);
# the README's install table names every installed file
# (check_install_table.sh).
run_layout() {
	local out
	out=$(python3 "$ROOT/test/layout/check_cycles.py" "$BUILD" 2>&1)
	echo "$out"
	if [[ $out == PASS* ]]; then add 1 0; else add 0 1; fi
	out=$(bash "$ROOT/test/layout/check_spdx.sh" "$ROOT" 2>&1)
	echo "$out"
	if [[ $out == PASS* ]]; then add 1 0; else add 0 1; fi
	out=$(python3 "$ROOT/test/layout/check_man.py" "$ROOT" 2>&1)
	echo "$out"
	if [[ $out == PASS* ]]; then add 1 0; else add 0 1; fi
	out=$(bash "$ROOT/test/layout/check_install_table.sh" "$BUILD" "$ROOT" 2>&1)
	echo "$out"
	if [[ $out == PASS* ]]; then add 1 0; else add 0 1; fi
}

# libFuzzer over the wire format's decoder and validator (test/fuzz), for a
# bounded time (PMV_FUZZ_SECONDS, default 60).
run_fuzz() {
	local out
	section "fuzzing the wire format (libFuzzer)"
	out=$(bash "$ROOT/test/fuzz/run_fuzz.sh" 2>&1)
	printf '%s\n' "$out" | grep -v 'passed, '
	add_suite "${FUNCNAME[0]}" "$out"
}

# Idle cost (issue 13 #5): 256 FI_RMA_PMEM connections between two
# processes, idle for 2 s with nobody polling (fi_pmem_idle): each side
# must use under 2% of a core (CPU time, not wall-clock; a sleeping agent
# uses about 0.01%, the napping one used 9%), and a commit on every
# connection must complete after the idle period.
run_idle() {
	local rc=0 tout iout tcpu icpu
	section "idle cost: 256 connections, nobody polling (fi_pmem_idle)"
	tout=$(mktemp) iout=$(mktemp)
	pmv_idle_pair "$BUILD" 9420 "$tout" "$iout" -n 256 -t 2 -- \
		-n 256 -t 2 || rc=$?
	tcpu=$(sed -n 's/^IDLE role=target .*cpu_pct=//p' "$tout")
	icpu=$(sed -n 's/^IDLE role=initiator .*cpu_pct=//p' "$iout")
	if [[ $rc -eq 0 && -n $tcpu && -n $icpu ]] &&
	   awk -v t="$tcpu" -v i="$icpu" 'BEGIN { exit !(t < 2 && i < 2) }'; then
		echo "PASS idle-256: target ${tcpu}%, initiator ${icpu}% of a core; commits after idle completed"
		add 1 0
	else
		echo "FAIL idle-256: exit $rc, target ${tcpu:-?}%, initiator ${icpu:-?}% (limit 2%): $(tail -n 2 "$iout" | tr '\n' ' ')"
		add 0 1
	fi
	rm -f "$tout" "$iout"
}

# The end of an fi_cq_sread the agent relied on hands the endpoint back
# to it (test/idle/run_sread_then_sleep.sh; the Debian 13 pass runs it too).
run_sread_then_sleep() {
	local out
	section "the end of an fi_cq_sread hands its endpoint back to the agent (fi_pmem_idle -m sread-sleep)"
	out=$(bash "$ROOT/test/idle/run_sread_then_sleep.sh" "$BUILD" 9425 2>&1)
	printf '%s\n' "$out" | grep -v 'passed, '
	add_suite "${FUNCNAME[0]}" "$out"
}

# Idle between commits: a passive target (fi_pmem_lat: separate transmit
# and receive CQs, the application in fi_cq_sread on one) gets a 64-byte
# agent commit every 200 ms; between them its process must use under 10%
# of a core (CPU time from /proc, sampled over 1.5 s).  The agent used to
# spin at 100% once the first ack's completion had signalled the transmit
# CQ, a signal only a thread waiting in that CQ would drain.  Run for
# the target's wait modes whose waits pmemverbs makes itself (fi_pmem_lat
# -w: fi_cq_sread on FI_WAIT_UNSPEC, FI_WAIT_NONE, FI_WAIT_FD CQs;
# fi_cntr_wait), each on port $1.
run_idle_commits() {
	local bin=$BUILD/fabtests/benchmarks/fi_pmem_lat port=$1 wait=$2 rc=0
	local tpid a b ticks limit out
	section "idle between commits: passive target (-w $wait), a commit every 200 ms"
	out=$(mktemp)
	FI_PROVIDER_PATH=$BUILD/.libs PMEM2_FORCE_GRANULARITY=page TMPDIR=/dev/shm \
		timeout 60 "$bin" -B $port -S 64 -w "$wait" >/dev/null 2>&1 &
	tpid=$!
	sleep 0.5
	tpid=$(pgrep -P "$tpid" -f fi_pmem_lat || echo "$tpid")
	FI_PROVIDER_PATH=$BUILD/.libs timeout 60 "$bin" -s 127.0.0.1 \
		-B $port -S 64 -I 12 -W 1 -i 200000 -m commit >"$out" 2>&1 &
	sleep 0.5
	a=$(awk '{ print $14 + $15 }' "/proc/$tpid/stat" 2>/dev/null)
	sleep 1.5
	b=$(awk '{ print $14 + $15 }' "/proc/$tpid/stat" 2>/dev/null)
	wait $! || rc=$?
	wait || true
	ticks=$(( ${b:-0} - ${a:-0} ))
	limit=$(( $(getconf CLK_TCK) * 15 / 100 )) # 10% of 1.5 s
	if [[ $rc -eq 0 && -n $a && -n $b && $ticks -lt $limit ]]; then
		echo "PASS idle-commits-$wait: target used $ticks of $limit clock ticks allowed over 1.5 s; commits completed"
		add 1 0
	else
		echo "FAIL idle-commits-$wait: exit $rc, target used ${ticks} clock ticks over 1.5 s (limit $limit): $(tail -n 2 "$out" | tr '\n' ' ')"
		add 0 1
	fi
	rm -f "$out"
}

# A target that tracks its receives with a FI_RECV counter instead of its
# CQ (fi_pmem_lat -K): busy in fi_cntr_read, whose reads serve the
# endpoint's commit requests, or waiting in fi_cntr_wait, which leaves
# them to the agent; its commits and the end of the session must complete.
run_cntr_target() {
	local port=$1 gran=$2 poll=$3 bin=$BUILD/fabtests/benchmarks/fi_pmem_lat
	local busy=()
	[[ $poll == busy ]] && busy=(-y)
	check_pair "fi_pmem_lat, target on a FI_RECV counter ($gran, $poll)" \
		env FI_PROVIDER_PATH="$BUILD/.libs" TMPDIR=/dev/shm \
		PMEM2_FORCE_GRANULARITY="$gran" timeout 60 "$bin" -B "$port" \
		-S 64,4096 -K "${busy[@]}" -- \
		env FI_PROVIDER_PATH="$BUILD/.libs" timeout 60 "$bin" \
		-s 127.0.0.1 -B "$port" -S 64,4096 -I 200 -W 10 \
		-m read8,write,commit
}

# FI_PMEMVERBS_AGENT_THREAD=0: targets with no agent thread served by
# their own reads and waits, every commit checked by the oracle
# (test/integration/run_agent_thread.sh).
run_agent_thread() {
	local out
	out=$(bash "$ROOT/test/integration/run_agent_thread.sh" "$ROOT" \
		"$BUILD" "$1" 2>&1)
	printf '%s\n' "$out"
	add_suite "${FUNCNAME[0]}" "$out"
}

# fi_info through libfabric: FI_RMA_PMEM on MSG entries; RDM entries carry
# it only for hints that ask for it (fi_info cannot: pmv_rdm_test and the
# unit tests check those), so the pass-through pmemverbs;ofi_rxm RDM
# entries an application that does not ask gets carry none.
run_advertisement() {
	local msg rdm
	msg=$(FI_PROVIDER_PATH=$BUILD/.libs fi_info -p pmemverbs -t FI_EP_MSG -v 2>/dev/null | grep -c '^    caps:.*FI_RMA_PMEM')
	rdm=$(FI_PROVIDER_PATH=$BUILD/.libs fi_info -p pmemverbs -t FI_EP_RDM -v 2>/dev/null | grep -c 'FI_RMA_PMEM')
	if [[ $msg -gt 0 && $rdm -eq 0 ]]; then
		echo "PASS fi_info: FI_RMA_PMEM on $msg MSG entries, on no RDM entry"
		add 1 0
	else
		echo "FAIL fi_info: FI_RMA_PMEM on $msg MSG and $rdm RDM entries"
		add 0 1
	fi
}

# The fabtests functional test of commit, fence, FI_IMMED and flush, on a
# target of granularity GRAN, with the initiator's FI_PMEMVERBS_METHOD
# METHOD (default auto: read_flush for MHP, the agent for the others), over
# endpoints of type EP (msg, or rdm: ofi_rxm over pmemverbs MSG; the old
# tools printed "FI_EP_RDM: unsupported" and exited 61 there: a FAIL).
run_fabtest_commit() {
	local port=$1 gran=$2 method=${3:-auto} ep=${4:-msg}
	local bin=$BUILD/fabtests/functional/fi_pmem_commit
	check_pair "fi_pmem_commit (fabtests functional, $gran, $method${4:+, -e $ep})" \
		env FI_PROVIDER_PATH="$BUILD/.libs" \
		PMEM2_FORCE_GRANULARITY="$gran" timeout 60 "$bin" -e "$ep" \
		-B "$port" -- \
		env FI_PROVIDER_PATH="$BUILD/.libs" FI_PMEMVERBS_METHOD="$method" \
		timeout 60 "$bin" -e "$ep" -s 127.0.0.1 -B "$port"
}

# RemoteLog compound appends (a record's commit, then the tail pointer
# with FI_FENCE) from an application that progresses with fi_cq_read(cq,
# NULL, 0) while its fenced commit returns -FI_EAGAIN: the engine must
# still take its internal completions (it did not: every append failed).
# Over EP (msg or rdm); with rdm, the log is then recovered (-r) and must be
# consistent with every record appended, (300 + 10) x 2.
run_remotelog_compound() {
	local port=$1 gran=$2 method=$3 ep=${4:-msg}
	local bin=$BUILD/fabtests/benchmarks/fi_pmem_remotelog file out
	file=$(mktemp /dev/shm/pmv_rl.XXXXXX)
	check_pair "fi_pmem_remotelog compound ($gran, $method${4:+, -e $ep})" \
		env FI_PROVIDER_PATH="$BUILD/.libs" \
		PMEM2_FORCE_GRANULARITY="$gran" timeout 60 "$bin" -e "$ep" \
		-B "$port" -f "$file" -- \
		env FI_PROVIDER_PATH="$BUILD/.libs" FI_PMEMVERBS_METHOD="$method" \
		timeout 60 "$bin" -e "$ep" -s 127.0.0.1 -B "$port" -m compound \
		-S 64,4096 -I 300 -W 10
	if [[ $ep == rdm ]]; then
		out=$(timeout 60 "$bin" -r "$file" 2>&1)
		if [[ $out == *consistent* && $out == *records=620* ]]; then
			echo "PASS fi_pmem_remotelog recovery ($gran, -e $ep): 620 records, consistent"
			add 1 0
		else
			echo "FAIL fi_pmem_remotelog recovery ($gran, -e $ep): $(tail -2 <<<"$out" | tr '\n' ' ')"
			add 0 1
		fi
	fi
	rm -f "$file"
}

# fi_pmem_lat over RDM endpoints, a few iterations of read8, commit and
# write at 64 B and 4 KiB to a target of granularity GRAN, its commits
# checked at completion against the target's file (-D: no dirty page, -V:
# the bytes in place): it must end with "early: 0 of N commits".
run_lat_rdm() {
	local port=$1 gran=$2 bin=$BUILD/fabtests/benchmarks/fi_pmem_lat file
	file=$(mktemp /dev/shm/pmv_lat.XXXXXX)
	check_pair "fi_pmem_lat -e rdm ($gran, read8/commit/write, 0 early)" \
		env FI_PROVIDER_PATH="$BUILD/.libs" \
		PMEM2_FORCE_GRANULARITY="$gran" timeout 60 "$bin" -e rdm \
		-B "$port" -S 64,4096 -f "$file" -- \
		bash -c 'o=$("$@" 2>&1) && grep -q "^early: 0 of [1-9]" <<<"$o"' _ \
		env FI_PROVIDER_PATH="$BUILD/.libs" timeout 60 "$bin" -e rdm \
		-s 127.0.0.1 -B "$port" -S 64,4096 -I 50 -W 5 \
		-m read8,commit,write -D "$file" -V "$file"
	rm -f "$file"
}

# The Debian package (./run package): built from this tree as a release
# (packaging/build_deb.sh, in PMV_PKG_BUILD, default BUILD_DIR-pkg) and used
# as installed (test/package/run_package_test.sh: its files, the plugin in
# libfabric's directory, no test-only parameter, pkg-config, the demo).
run_package() {
	local port=$1 pkgbuild=${PMV_PKG_BUILD:-$BUILD-pkg} deb out
	section "the Debian package, installed and used"
	if ! deb=$(bash "$ROOT/packaging/build_deb.sh" "$ROOT" "$pkgbuild" \
		   "$pkgbuild/deb" 2>"$pkgbuild.log" | tail -1) || [[ ! -f $deb ]]; then
		echo "FAIL package: packaging/build_deb.sh failed: $(tail -3 "$pkgbuild.log" | tr '\n' ' ')"
		add 0 1
		return
	fi
	out=$(bash "$ROOT/test/package/run_package_test.sh" "$deb" "$BUILD" "$port" 2>&1)
	printf '%s\n' "$out" | grep -v 'passed, '
	add_suite "${FUNCNAME[0]}" "$out"
}
