#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Runs the whole pmemverbs test suite against a normal build and a
# sanitizer (ASan+UBSan) build, the threads tests against a ThreadSanitizer
# build and the two-process tests under valgrind (test/threads/README.md),
# then the verbs-core tests in a QEMU guest
# (soft-RoCE and an emulated NVDIMM, test/verbs: two boots, devdax and
# fsdax) and the power cuts (test/crash: 20 cuts of the guest), and prints
# the total as its last line: "N passed, N failed".  Then the Debian 13
# pass (test/debian13/run_debian13.sh): the same build, unit, durability,
# hostile, threads, crash-loop, fi_pingpong and upstream fabtests tests
# against libfabric 2.1 in a cached trixie root made with debootstrap; PMV_TEST_DEBIAN13=0
# leaves it out (a root that cannot be made is a FAIL, never a skip).
#
# usage: test/run_all.sh BUILD_DIR ASAN_BUILD_DIR [TSAN_BUILD_DIR]
#        test/run_all.sh --verbs BUILD_DIR      (the two guest boots only)
#        test/run_all.sh --soak BUILD_DIR       (crash loop, 2000 cycles,
#                                                and 60 power cuts)
#
# Exit status: 0 all passed, 1 a failure, 2 usage.
#
# The guest needs qemu-system-x86_64 and a kernel in /boot: this script has
# test/verbs/vm.sh install them (and the guest's other packages) before it
# looks for them.  A guest that cannot be prepared or does not boot is a
# FAIL, never a silent skip; only PMV_TEST_VERBS=0 leaves the guests out.
set -u

ROOT=$(cd "$(dirname "$0")/.." && pwd)
VERBS_ONLY=""
SOAK=""
if [[ ${1:-} == --verbs ]]; then
	VERBS_ONLY=yes
	shift
elif [[ ${1:-} == --soak ]]; then
	SOAK=yes
	VERBS_ONLY=yes # one build directory, as --verbs
	shift
fi
if [[ ($# -lt 2 || $# -gt 3) && -z $VERBS_ONLY ]] || [[ $# -ne 1 && -n $VERBS_ONLY ]]; then
	sed -n '11,14p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
fi
BUILD=$(cd "$1" && pwd)
ASAN_BUILD=${2:-}
TSAN_BUILD=${3:-}
passed=0
failed=0

# Adds a result: add PASSED FAILED.
add() {
	passed=$((passed + $1))
	failed=$((failed + $2))
}

# Runs the Criterion unit tests of one build and counts its synthesis line.
run_unit() {
	local label=$1 dir=$2 out synth
	echo "== unit tests ($label)"
	out=$("$dir/prov/pmemverbs/test/pmv_unit" --jobs 1 2>&1)
	printf '%s\n' "$out" | grep -E '^\[(FAIL|----)\]' | head -40
	synth=$(printf '%s\n' "$out" | grep -a 'Synthesis:' | tail -1)
	echo "${synth:-unit tests did not report (crashed?)}"
	if [[ $synth =~ Passing:\ ([0-9]+)\ \|\ Failing:\ ([0-9]+)\ \|\ Crashing:\ ([0-9]+) ]]; then
		add "${BASH_REMATCH[1]}" $((BASH_REMATCH[2] + BASH_REMATCH[3]))
	else
		add 0 1
	fi
}

# Runs the two-process integration tests through pmemverbs on one build.
run_integration() {
	local label=$1 dir=$2 port_base=$3 out
	echo "== two-process integration tests through pmemverbs ($label)"
	out=$(FI_PROVIDER_PATH=$dir/.libs PMV_PROV=pmemverbs PMV_PROV_RDM=pmemverbs \
	      PMV_PORT_BASE=$port_base \
	      bash "$ROOT/test/integration/run_itests.sh" \
	      "$dir/test/integration/pmv_itest" pmemverbs 2>&1)
	printf '%s\n' "$out"
	count_result "$out"
}

# libfabric's own fabtests 1.17 (built once into /var/cache/pmemverbs from
# ../shared/ext): fi_rma_bw on RDM and MSG endpoints and fi_ubertest's RDM
# RMA set, each through tcp and through pmemverbs; a case pmemverbs fails
# where tcp passes is a FAIL (test/fabtests/run_upstream.sh; ports
# port_base..port_base+99; about 2 minutes with the build cached).
run_upstream_fabtests() {
	local dir=$1 port_base=$2 out
	if [[ ${PMV_TEST_FABTESTS:-1} == 0 ]]; then
		echo "== upstream fabtests: not run (PMV_TEST_FABTESTS=0)"
		return
	fi
	echo "== upstream fabtests (fi_rma_bw, fi_ubertest RDM RMA) through pmemverbs as through tcp"
	out=$(bash "$ROOT/test/fabtests/run_upstream.sh" "$dir" "$port_base" 2>&1)
	printf '%s\n' "$out" | grep -a -v -E '^PASS [^:]*: tcp passes too'
	count_result "$out"
}

# Runs the durability tests (oracle, contents, fault, bad input, exit).
run_pmem() {
	local label=$1 dir=$2 port_base=$3 out
	echo "== durability tests through pmemverbs ($label)"
	out=$(FI_PROVIDER_PATH=$dir/.libs PMV_PORT_BASE=$port_base \
	      bash "$ROOT/test/pmem/run_pmem_tests.sh" \
	      "$dir/test/pmem/pmv_commit_test" 2>&1)
	printf '%s\n' "$out" | grep -v '^PASS'
	count_result "$out"
}

# The durability tests through FI_EP_RDM endpoints (ofi_rxm over pmemverbs
# MSG; run_pmem_tests.sh with PMV_SUITE=rdm; ports 29000-29007, and
# 29100-29107 for the sanitizer build).
run_pmem_rdm() {
	local label=$1 dir=$2 port_base=$3 out
	echo "== durability tests through pmemverbs RDM endpoints ($label)"
	out=$(FI_PROVIDER_PATH=$dir/.libs PMV_PORT_BASE=$port_base PMV_SUITE=rdm \
	      bash "$ROOT/test/pmem/run_pmem_tests.sh" \
	      "$dir/test/pmem/pmv_commit_test" 2>&1)
	printf '%s\n' "$out" | grep -v '^PASS'
	count_result "$out"
}

# A hostile peer on the plain tcp core writes crafted requests into a
# pmemverbs target's inbox while an honest initiator commits: the target
# survives, its guard bytes hold, the honest commits all complete
# (test/hostile/run_hostile.sh, one port per granularity from port_base).
run_hostile() {
	local label=$1 dir=$2 port_base=$3 out
	echo "== hostile peer against a pmemverbs target ($label)"
	out=$(FI_PROVIDER_PATH=$dir/.libs \
	      bash "$ROOT/test/hostile/run_hostile.sh" \
	      "$dir/test/hostile/pmv_hostile" "$port_base" 2>&1)
	printf '%s\n' "$out" | grep -v '^PASS'
	count_result "$out"
}

# Threads (issue 11 item 7): FI_THREAD_SAFE domains, threads committing on
# one endpoint and on several at once, each completion checked by the
# oracle, and the initiator's fault sweeps (test/threads/run_threads.sh;
# ports port_base..port_base+48).
run_threads() {
	local label=$1 dir=$2 port_base=$3 out
	echo "== threads committing at once ($label)"
	out=$(FI_PROVIDER_PATH=$dir/.libs \
	      bash "$ROOT/test/threads/run_threads.sh" \
	      "$dir/test/threads/pmv_threads" "$port_base" 2>&1)
	printf '%s\n' "$out" | grep -v '^PASS'
	count_result "$out"
}

# The threads tests against the ThreadSanitizer build: a race TSan reports
# ends that process (exit 66) and fails its run.  test/threads/tsan.supp
# names the only races suppressed (inside libfabric and libibverbs).
# history_size=7 (the largest) keeps enough of each thread's history for
# TSan to restore the earlier access's stack: with the default, the tcp
# core's memcpy into the inbox was sometimes reported as "failed to restore
# the stack", no frame matched the libfabric entry, and a suppressed race
# failed the run (one run in three of mix-T4 after 874ed6c).  The
# Criterion unit tests cannot run under TSan (Criterion cannot map its
# arena under TSan: Snaipe/Criterion#274).
run_threads_tsan() {
	local dir=$1 port_base=$2
	if [[ -z $dir ]]; then
		echo "== threads under ThreadSanitizer: FAIL, no TSAN_BUILD_DIR given"
		add 0 1
		return
	fi
	# the fault sweeps run in the normal, sanitizer, valgrind and Debian 13
	# passes; under TSan they would add minutes for no new interleaving
	PMV_THREADS_SWEEP=0 \
	TSAN_OPTIONS="halt_on_error=1 history_size=7 second_deadlock_stack=1 suppressions=$ROOT/test/threads/tsan.supp" \
		run_threads tsan "$dir" "$port_base"
}

# The two-process tests under valgrind, on the normal build: pmv_threads
# and a subset of pmv_commit_test (test/run_valgrind.sh, about 4 minutes;
# PMV_TEST_VALGRIND=0 leaves it out).
run_valgrind() {
	local dir=$1 port_base=$2 out
	if [[ ${PMV_TEST_VALGRIND:-1} == 0 ]]; then
		echo "== two-process tests under valgrind: not run (PMV_TEST_VALGRIND=0)"
		return
	fi
	echo "== two-process tests under valgrind"
	out=$(bash "$ROOT/test/run_valgrind.sh" "$dir" "$port_base" 2>&1)
	printf '%s\n' "$out" | grep -v '^PASS'
	count_result "$out"
}

# Sandia OpenSHMEM's own tests (a subset of its `make check`, 2 PEs) through
# pmemverbs as through tcp (test/sos/run_sos.sh: SOS built once into
# /var/cache/pmemverbs; about 5 minutes; ports port_base .. +499).
run_sos() {
	local dir=$1 port_base=$2 out start=$SECONDS
	echo "== Sandia OpenSHMEM's tests through pmemverbs as through tcp"
	out=$(bash "$ROOT/test/sos/run_sos.sh" "$dir" "$port_base" 2>&1)
	printf '%s\n' "$out" | grep -a -v '^PASS [^:]*$'
	count_result "$out"
	echo "(SOS tests: $((SECONDS - start)) s)"
}

# Counts a suite's last line ("N passed, N failed"); none is a failure.
count_result() {
	local last
	last=$(printf '%s\n' "$1" | tail -1)
	if [[ $last =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed ]]; then
		add "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}"
	else
		add 0 1
	fi
}

# Dead and frozen targets: commits end, the endpoint closes, a new
# connection works (test/failure/run_peerfail.sh).
run_failure() {
	local label=$1 dir=$2 port_base=$3 out
	echo "== dead and frozen targets ($label)"
	out=$(bash "$ROOT/test/failure/run_peerfail.sh" "$dir" "$port_base" 2>&1)
	printf '%s\n' "$out" | grep -E '^(PASS|FAIL)|passed'
	count_result "$out"
}

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
	count_result "$out"
}

# The examples as make built them in the build tree (the package test
# builds them again from copies, with their pkg-config Makefiles).
run_examples_built() {
	local out
	out=$(FI_PROVIDER_PATH=$BUILD/.libs bash "$ROOT/examples/run_examples.sh" "$1" "$BUILD" 2>&1)
	printf '%s\n' "$out"
	count_result "$out"
}

# Installs what the guest needs (vm.sh --install: qemu, Debian's kernel,
# busybox, rdma-core, ndctl), once, before anything looks for it.
prepare_guest() {
	[[ -n ${guest_prepared:-} ]] && return
	guest_prepared=yes
	"$ROOT/test/verbs/vm.sh" --install 2>&1 | sed 's/^/  /'
}

# Why the QEMU guest cannot run here, or nothing if it can.
guest_unavailable() {
	if ! compgen -G '/boot/vmlinuz-*' >/dev/null; then
		echo "no kernel in /boot (vmlinuz-*) after installing linux-image-amd64"
	elif ! command -v qemu-system-x86_64 >/dev/null; then
		echo "qemu-system-x86_64 missing after installing qemu-system-x86"
	fi
}

# Installs what the guest needs; if it still cannot run, one FAIL NAME
# (with the reason) and a nonzero status.
guest_ready() {
	local name=$1 why
	prepare_guest
	why=$(guest_unavailable)
	[[ -z $why ]] && return 0
	echo "FAIL $name: $why"
	add 0 1
	return 1
}

# One guest boot: vm.sh --MODE -- in_guest.sh BUILD MODE.  Its result line
# is counted; a guest that cannot be prepared, does not boot or gives no
# result line is a failure (nothing was tested, and that must show).
run_guest() {
	local mode=$1 out rc last start=$SECONDS
	echo "== verbs core in a QEMU guest ($mode): soft-RoCE rxe0, emulated NVDIMM"
	guest_ready "verbs-guest-$mode" || return
	# (the guest's serial console ends its lines with CR LF)
	out=$(cd "$ROOT" && "$ROOT/test/verbs/vm.sh" "--$mode" --timeout 900 -- \
	      "$ROOT/test/verbs/in_guest.sh" "$BUILD" "$mode" 2>&1)
	rc=$?
	out=${out//$'\r'/}
	if ! grep -q '^pmemverbs verbs-core tests in the guest' <<<"$out"; then
		echo "FAIL verbs-guest-$mode: the guest did not boot or did not start its tests (vm.sh exit $rc): $(grep -v '^\s*$' <<<"$out" | tail -n 5 | tr '\n' ' ')"
		add 0 1
		return
	fi
	if [[ -n $VERBS_ONLY ]]; then
		printf '%s\n' "$out"
	else
		printf '%s\n' "$out" | grep -a -v '^PASS'
	fi
	# only the guest's own total: a suite's line must not stand for it
	last=$(printf '%s\n' "$out" | grep -a -E '^guest-total: [0-9]+ passed, [0-9]+ failed$' | tail -n 1)
	if [[ $last =~ ^guest-total:\ ([0-9]+)\ passed,\ ([0-9]+)\ failed ]]; then
		add "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}"
	else
		echo "FAIL verbs-guest-$mode: no guest-total line: the guest stopped before the end of its tests (vm.sh exit $rc)"
		add 0 1
	fi
	echo "(guest $mode: $((SECONDS - start)) s, software emulation; no timing from the guest is a performance figure)"
}

# Crash loop and target restart (issue 11 items 2 and 3): the target of a
# RemoteLog-style log killed (SIGKILL) at random points, restarted on the
# same file, the log recovered and checked against every acknowledged
# append; the old process's keys refused (test/crash/run_crash.sh).  MSG
# and RDM endpoints (issue 27: six streams each; in the restart-probe
# cycles an RDM initiator reconnects to the restarted target).
# run_crash LABEL DIR PORT_BASE CYCLES [RESTART_EVERY]
run_crash() {
	local label=$1 dir=$2 port_base=$3 cycles=$4 every=${5:-10} out
	echo "== crash loop: SIGKILL of the target, restart, recovery ($label, $cycles cycles)"
	out=$(PMV_CRASH_CYCLES=$cycles PMV_CRASH_RESTART_EVERY=$every \
	      bash "$ROOT/test/crash/run_crash.sh" "$dir" "$port_base" 2>&1)
	printf '%s\n' "$out" | grep -a -v '^PASS'
	count_result "$out"
}

# Power cuts (issue 11 item 4): the QEMU guest killed at random points
# while its initiators append to logs on a virtio disk (PAGE) and on
# device-DAX, rebooted on the same images, every acknowledged append
# checked (test/crash/run_powercut.sh).  A boot that fails is a FAIL.
run_powercut() {
	local cuts=$1 out start=$SECONDS
	echo "== power cuts of the QEMU guest ($cuts cuts): virtio disk (PAGE) and device-DAX"
	guest_ready powercut || return
	out=$(bash "$ROOT/test/crash/run_powercut.sh" "$BUILD" "$cuts" 2>&1)
	printf '%s\n' "$out" | grep -a -v '^PASS'
	count_result "$out"
	echo "(power cuts: $((SECONDS - start)) s, software emulation)"
}

if [[ -n $SOAK ]]; then
	run_crash soak "$BUILD" 12000 "${PMV_CRASH_CYCLES:-2000}"
	run_powercut "${PMV_POWERCUT_CUTS:-60}"
	echo "$passed passed, $failed failed"
	[[ $failed -eq 0 ]]
	exit
fi

if [[ -n $VERBS_ONLY ]]; then
	run_guest devdax
	run_guest fsdax
	echo "$passed passed, $failed failed"
	[[ $failed -eq 0 ]]
	exit
fi

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
	echo "== fuzzing the wire format (libFuzzer)"
	out=$(bash "$ROOT/test/fuzz/run_fuzz.sh" 2>&1)
	printf '%s\n' "$out" | grep -v 'passed, '
	count_result "$out"
}

# Idle cost (issue 13 #5): 256 FI_RMA_PMEM connections between two
# processes, idle for 2 s with nobody polling (fi_pmem_idle): each side
# must use under 2% of a core (CPU time, not wall-clock; a sleeping agent
# uses about 0.01%, the napping one used 9%), and a commit on every
# connection must complete after the idle period.
run_idle() {
	local bin=$BUILD/fabtests/functional/fi_pmem_idle port=9420 out rc=0
	local tout iout tcpu icpu
	echo "== idle cost: 256 connections, nobody polling (fi_pmem_idle)"
	tout=$(mktemp) iout=$(mktemp)
	FI_PROVIDER_PATH=$BUILD/.libs timeout 120 "$bin" -B $port -n 256 -t 2 \
		>"$tout" 2>&1 &
	sleep 0.5
	FI_PROVIDER_PATH=$BUILD/.libs timeout 120 "$bin" -s 127.0.0.1 -B $port \
		-n 256 -t 2 >"$iout" 2>&1 || rc=$?
	wait $! || rc=$?
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
	echo "== idle between commits: passive target (-w $wait), a commit every 200 ms"
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
	echo "== the Debian package, installed and used"
	if ! deb=$(bash "$ROOT/packaging/build_deb.sh" "$ROOT" "$pkgbuild" \
		   "$pkgbuild/deb" 2>"$pkgbuild.log" | tail -1) || [[ ! -f $deb ]]; then
		echo "FAIL package: packaging/build_deb.sh failed: $(tail -3 "$pkgbuild.log" | tr '\n' ' ')"
		add 0 1
		return
	fi
	out=$(bash "$ROOT/test/package/run_package_test.sh" "$deb" "$BUILD" "$port" 2>&1)
	printf '%s\n' "$out" | grep -v 'passed, '
	count_result "$out"
}

run_unit normal "$BUILD"
echo "== layout"
run_layout
run_fuzz
echo "== fi_info and fi_pmem_probe"
run_advertisement
run_probe
run_config_errors 9476
run_examples_built 9477
echo "== fabtests"
run_fabtest_commit 9360 cache_line
run_fabtest_commit 9361 byte
run_fabtest_commit 9365 byte read_flush
run_remotelog_compound 9362 cache_line agent
run_remotelog_compound 9363 page agent
run_remotelog_compound 9364 byte read_flush
run_fabtest_commit 9366 cache_line auto rdm
run_remotelog_compound 9367 cache_line agent rdm
run_lat_rdm 9368 page
run_integration normal "$BUILD" 9230
run_upstream_fabtests "$BUILD" 30500
run_sos "$BUILD" 31000
run_pmem normal "$BUILD" 9800
run_pmem_rdm normal "$BUILD" 29000
run_hostile normal "$BUILD" 10400
run_threads normal "$BUILD" 12500
run_failure normal "$BUILD" 9380
run_crash normal "$BUILD" 12000 "${PMV_CRASH_CYCLES:-360}"
run_idle
run_idle_commits 9440 unspec
run_idle_commits 9441 none
run_idle_commits 9442 fd
run_idle_commits 9443 cntr
echo "== targets on a counter"
run_cntr_target 9450 cache_line busy
run_cntr_target 9451 page passive
run_package 9470
echo "== fi_pingpong through pmemverbs"
export FI_PROVIDER_PATH=$BUILD/.libs
port=9330
for ep in msg rdm; do
	for size in 64 65536; do
		run_pingpong "$ep" "$size" $port
		port=$((port + 1))
	done
done
unset FI_PROVIDER_PATH

# libfabric itself leaks a little at exit; leaks in pmemverbs objects are
# caught by the unit tests, which close everything they open.
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
run_unit sanitizers "$ASAN_BUILD"
run_integration sanitizers "$ASAN_BUILD" 9530
run_pmem sanitizers "$ASAN_BUILD" 10100
run_pmem_rdm sanitizers "$ASAN_BUILD" 29100
run_hostile sanitizers "$ASAN_BUILD" 10450
run_threads sanitizers "$ASAN_BUILD" 12600
run_failure sanitizers "$ASAN_BUILD" 9400
run_crash sanitizers "$ASAN_BUILD" 12100 60 4
unset ASAN_OPTIONS UBSAN_OPTIONS
run_threads_tsan "$TSAN_BUILD" 12700
run_valgrind "$BUILD" 12800

# The verbs core, in a QEMU guest (soft-RoCE, emulated NVDIMM): about ten
# minutes under software emulation, then the power cuts (about eleven).
# run_guest and run_powercut install what they need first and count a
# guest that cannot run as a failure; PMV_TEST_VERBS=0 leaves them out
# (./run test-verbs runs the two boots alone, ./run soak the power cuts).
if [[ ${PMV_TEST_VERBS:-1} != 0 ]]; then
	run_guest devdax
	run_guest fsdax
	run_powercut "${PMV_POWERCUT_CUTS:-20}"
else
	echo "== verbs core in a QEMU guest: not run (PMV_TEST_VERBS=0)"
fi

# libfabric 2.1 (Debian 13): about 5 minutes with the root cached (2 of
# them upstream fabtests 2.1, test/fabtests/README.md), one
# more to make it, SOS about 12 more (test/debian13/run_debian13.sh; ports 28000-29499 and 29700).
run_debian13() {
	local out
	if [[ ${PMV_TEST_DEBIAN13:-1} == 0 ]]; then
		echo "== Debian 13 (libfabric 2.1): not run (PMV_TEST_DEBIAN13=0)"
		return
	fi
	echo "== Debian 13 (libfabric 2.1) in a debootstrap root"
	out=$(bash "$ROOT/test/debian13/run_debian13.sh" 28000 2>&1)
	printf '%s\n' "$out" | grep -a -v '^PASS'
	count_result "$out"
}
run_debian13

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
