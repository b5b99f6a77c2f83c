#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# in_guest.sh: the verbs-core tests of pmemverbs, run inside the QEMU guest
# that test/verbs/vm.sh boots (soft-RoCE rxe0 on eth0, 10.0.2.15, and an
# emulated NVDIMM).  Prints one "PASS|FAIL name" line per check (the suites
# it runs print their own) and, as its last line, "N passed, N failed".
#
# usage: test/verbs/vm.sh --devdax -- test/verbs/in_guest.sh BUILD_DIR devdax
#        test/verbs/vm.sh --fsdax  -- test/verbs/in_guest.sh BUILD_DIR fsdax
#
# devdax: the default core is verbs (fi_info shows rxe0); the integration
#         suite, fi_pingpong, the durability tests on /dev/dax0.0 (DMP or
#         MHP, nothing forced) and on a /dev/shm file (PAGE), and the demo,
#         all through pmemverbs over verbs.
# fsdax:  over verbs, registering a file of the DAX filesystem at /mnt/pmem
#         fails with -FI_EOPNOTSUPP and a warning that names the cause; over
#         tcp (127.0.0.1) the same filesystem works: profile DMP without
#         forcing, the durability tests and the demo pass on it.
# Ports 11000-11999.  Timings in this guest are not performance figures.
set -u

if [[ $# -ne 2 || ! -d $1 || ! $2 =~ ^(devdax|fsdax)$ ]]; then
	echo "usage: $0 BUILD_DIR devdax|fsdax (inside the guest)" >&2
	exit 2
fi
BUILD=$(cd "$1" && pwd)
MODE=$2
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
ADDR=10.0.2.15 # the guest's eth0, where rxe0 lives
LOOPBACK=127.0.0.1
export FI_PROVIDER_PATH=$BUILD/.libs
# The default core must be found, granularities must not be forced.
unset FI_PMEMVERBS_CORE_PROV FI_PROVIDER PMEM2_FORCE_GRANULARITY PMV_REGION \
	PMV_EXPECT_PROFILE

COMMIT_TEST=$BUILD/test/pmem/pmv_commit_test
DEMO=$BUILD/examples/pmv_demo
PROBE=$BUILD/util/fi_pmem_probe
# /tmp is 9p in the guest (no shared mappings): scratch files go to /dev/shm.
WORK=$(mktemp -d /dev/shm/pmv_in_guest.XXXXXX)
PIDS=()

cleanup() {
	local pid
	for pid in "${PIDS[@]}"; do
		kill "$pid" 2>/dev/null
	done
	rm -rf "$WORK"
}
trap cleanup EXIT

passed=0
failed=0

# report, add_suite and section (its seconds run on the emulated
# clock: not a performance figure)
. "$ROOT/test/common/pmv_suite.sh"

# The first line of a file matching a pattern, for details.
first_match() {
	grep -m1 -E "$1" "$2" 2>/dev/null | cut -c1-240
}

# Starts a server in the background: bg OUTFILE CMD...; sets BG_PID.
bg() {
	local out=$1
	shift
	"$@" >"$out" 2>&1 &
	BG_PID=$!
	PIDS+=("$BG_PID")
}

# Waits for a background process; sets BG_RC.
bg_wait() {
	wait "$1"
	BG_RC=$?
}

# ---------------------------------------------------------------- devdax

# The placement's 8-byte stores under write watchpoints (unit tests
# place/*): the host's virtual CPU may not raise them, QEMU's does, so
# here they are required (PMV_WATCH_REQUIRED=1) and all five must pass.
# Criterion's socket and the tests' mapped files go to /tmp, which is 9p
# here: they run in a mount namespace of their own with a tmpfs on /tmp.
check_place_watchpoints() {
	local out verdict
	section "the agent's placement under hardware write watchpoints"
	out=$(PMV_WATCH_REQUIRED=1 timeout 600 unshare -m sh -c \
		'mount -t tmpfs pmv_tmp /tmp && exec "$0" --filter "place/*"' \
		"$BUILD/prov/pmemverbs/test/pmv_unit" 2>&1)
	verdict=$(unit_verdict "$out") || verdict="0 1"
	if [[ $verdict == "5 0" ]]; then
		report PASS "place-watchpoints" "5 of 5 place tests, every watched word seen stored whole"
	else
		report FAIL "place-watchpoints" "passed/failed $verdict of 5: $(grep -a -m2 -E 'FAIL|Assertion|watchpoints' <<<"$out" | tr '\n' ' ' | cut -c1-240)"
	fi
}

# (a) With FI_PMEMVERBS_CORE_PROV unset, pmemverbs layers on verbs.
check_default_core() {
	local out
	section "default core: fi_info -p pmemverbs -t FI_EP_MSG"
	out=$(fi_info -p pmemverbs -t FI_EP_MSG 2>&1)
	if grep -q 'domain: rxe0' <<<"$out" &&
	   grep -q 'FI_PROTO_RDMA_CM_IB_RC' <<<"$out"; then
		report PASS "default-core-is-verbs" "fi_info shows domain rxe0, protocol FI_PROTO_RDMA_CM_IB_RC"
	else
		report FAIL "default-core-is-verbs" "expected domain rxe0 got: $(grep -m2 -E 'domain:|protocol:' <<<"$out" | tr -s ' \n' ' ')"
	fi
}

# (b) The two-process integration suite, through pmemverbs over verbs.  A
# case that fails is run again through the verbs core alone: a failure the
# core shares is a SKIP (not counted; verbs MSG endpoints have no counters,
# no fi_cancel and no atomics by fi_query_atomic), anything pmemverbs alone
# fails is a FAIL.  The sendrecv, rma and waitobj msg cases skip themselves:
# verbs gives cq_data_size 0 to an application that does not take the
# FI_RX_CQ_DATA mode, and pmv_itest does not.
run_integration() {
	local out
	section "integration tests through pmemverbs over verbs ($ADDR)"
	out=$(PMV_ADDR=$ADDR PMV_PROV=pmemverbs PMV_PROV_RDM=pmemverbs \
	      PMV_REF_PROV=verbs PMV_REF_PROV_RDM='verbs;ofi_rxm' \
	      PMV_PORT_BASE=11000 bash "$ROOT/test/integration/run_itests.sh" \
	      "$BUILD/test/integration/pmv_itest" "pmemverbs over verbs (rxe0)" 2>&1)
	printf '%s\n' "$out"
	add_suite integration "$out"
}

# (c) fi_pingpong, data checks on: pingpong EP SIZE PORT.  The server
# listens on a TCP control port (-B) first; the client connects to it.
run_pingpong() {
	local ep=$1 size=$2 port=$3 name="fi_pingpong -e $1 -S $2" srv=$WORK/pp.$1.$2 i
	bg "$srv" timeout 120 fi_pingpong -p pmemverbs -e "$ep" -B "$port" \
		-S "$size" -I 200 -c
	for ((i = 0; i < 300; i++)); do
		[[ -n $(ss -Hltn "sport = :$port" 2>/dev/null) ]] && break
		kill -0 "$BG_PID" 2>/dev/null || break
		sleep 0.1
	done
	if timeout 120 fi_pingpong -p pmemverbs -e "$ep" -P "$port" -S "$size" \
		-I 200 -c "$ADDR" >"$srv.client" 2>&1; then
		bg_wait "$BG_PID"
		if [[ $BG_RC -eq 0 ]]; then
			report PASS "$name" "over verbs, $ADDR"
			return
		fi
		report FAIL "$name" "server exit $BG_RC: $(tail -n 2 "$srv" | tr '\n' ' ')"
		return
	fi
	kill "$BG_PID" 2>/dev/null
	bg_wait "$BG_PID"
	report FAIL "$name" "client: $(tail -n 2 "$srv.client" | tr '\n' ' ') / server: $(tail -n 2 "$srv" | tr '\n' ' ')"
}

# fi_pmem_probe on a file or device: probe NAME FILE WANT_REGEX [-n]
# (-n: mapped without MAP_SYNC)
probe_profile() {
	local name=$1 file=$2 want=$3 got
	got=$("$PROBE" ${4:-} "$file" 2>&1 | awk '/^profile:/ {print $2}')
	if [[ $got =~ ^($want)$ ]]; then
		report PASS "$name" "profile $got, no granularity forced"
	else
		report FAIL "$name" "expected profile $want got '${got:-nothing}'"
	fi
}

# (d) The durability tests: durability LABEL REGION EXPECT ADDR PORT
# [RUNS [TARGET_ENV]] (REGION empty: fresh /dev/shm files, granularities
# forced; RUNS: only these runs of run_pmem_tests.sh)
run_durability() {
	local label=$1 region=$2 expect=$3 addr=$4 port=$5 runs=${6:-} \
		tenv=${7:-} out
	section "durability tests through pmemverbs: $label"
	out=$(PMV_ADDR=$addr PMV_PORT_BASE=$port PMV_REGION=$region \
	      PMV_EXPECT_PROFILE=$expect PMV_RUNS=$runs PMV_TARGET_ENV=$tenv \
	      bash "$ROOT/test/pmem/run_pmem_tests.sh" "$COMMIT_TEST" 2>&1)
	printf '%s\n' "$out"
	add_suite "durability-$label" "$out"
}

# Runs the demo: demo NAME ADDR PORT FILE; sets DEMO_TRC, DEMO_IRC and the
# outputs $WORK/NAME.target, $WORK/NAME.initiator.
run_demo_pair() {
	local name=$1 addr=$2 port=$3 file=$4 i
	bg "$WORK/$name.target" timeout 90 "$DEMO" target -a "$addr" -p "$port" -f "$file"
	for ((i = 0; i < 300; i++)); do
		grep -q 'listening on' "$WORK/$name.target" && break
		kill -0 "$BG_PID" 2>/dev/null || break
		sleep 0.1
	done
	timeout 90 "$DEMO" initiator -a "$addr" -p "$port" >"$WORK/$name.initiator" 2>&1
	DEMO_IRC=$?
	bg_wait "$BG_PID"
	DEMO_TRC=$BG_RC
}

# (e), (g): the demo must complete a durable commit: demo NAME ADDR PORT FILE CORE
check_demo_commit() {
	local name=$1 addr=$2 port=$3 file=$4 core=$5 line want
	run_demo_pair "$name" "$addr" "$port" "$file"
	want="committed durably with FI_COMMIT_COMPLETE"
	line=$(dd if="$file" bs=1 skip=128 count=${#want} 2>/dev/null)
	if [[ $DEMO_IRC -eq 0 && $DEMO_TRC -eq 0 ]] &&
	   grep -q "over core $core" "$WORK/$name.initiator" &&
	   grep -q 'durable commit of .* complete' "$WORK/$name.initiator" &&
	   [[ $line == "$want" ]]; then
		report PASS "$name" "$(first_match 'durable commit' "$WORK/$name.initiator" | sed 's/^\[initiator\] //'); the file holds the line at offset 128"
	else
		report FAIL "$name" "initiator exit $DEMO_IRC, target exit $DEMO_TRC, file at 128: '$line'; $(grep -v '^\[' "$WORK/$name.initiator" "$WORK/$name.target" | head -n 2 | tr '\n' ' ')"
		sed 's/^/    /' "$WORK/$name.initiator" "$WORK/$name.target" | tail -n 12
	fi
}

run_devdax() {
	local port
	check_default_core
	check_place_watchpoints
	run_integration

	section "fi_pingpong through pmemverbs over verbs ($ADDR)"
	port=11100
	for ep in msg rdm; do
		for size in 64 65536; do
			run_pingpong "$ep" "$size" "$port"
			port=$((port + 1))
		done
	done

	section "persistence profiles (fi_pmem_probe, nothing forced)"
	probe_profile "probe-devdax" /dev/dax0.0 "DMP|MHP"
	truncate -s 1M "$WORK/probe"
	probe_profile "probe-shm" "$WORK/probe" "PAGE"

	run_durability "verbs, /dev/dax0.0 (device-DAX)" /dev/dax0.0 DMP,MHP "$ADDR" 11200
	run_durability "verbs, /dev/shm file (page cache)" "$WORK/region" PAGE "$ADDR" 11300
	# the methods that need no agent, over RDMA: read_flush on MHP (byte
	# forced on /dev/shm files), completion on WSP (declared, device-DAX)
	run_durability "verbs, MHP forced: read_flush and agent" "" "" "$ADDR" \
		11600 "oracle-byte oracle-byte-agent contents-byte badinput-byte"
	run_durability "verbs, /dev/dax0.0 declared WSP: completion" /dev/dax0.0 \
		WSP "$ADDR" 11700 "oracle-auto contents-auto" FI_PMEMVERBS_WSP=1

	section "demo through pmemverbs over verbs"
	check_demo_commit "demo-verbs-shm" "$ADDR" 11400 "$WORK/f" verbs
}

# ----------------------------------------------------------------- fsdax

# (f) Over verbs, an fsdax file cannot be registered: mrreg and the demo.
check_fsdax_refused_on_verbs() {
	local out=$WORK/mrreg.out err=$WORK/mrreg.err rc name
	section "verbs core: registering a file on the DAX filesystem /mnt/pmem"
	FI_LOG_LEVEL=warn timeout 60 "$COMMIT_TEST" -r target -t mrreg \
		-f /mnt/pmem/mrreg -a "$ADDR" -P 11500 >"$out" 2>"$err"
	rc=$?
	name="fsdax-verbs-mr-reg-refused"
	if [[ $rc -eq 4 ]] && grep -q '^MRREG FI_EOPNOTSUPP (-95) - domain rxe0' "$out"; then
		report PASS "$name" "fi_mr_reg(FI_RMA_PMEM) on rxe0: -FI_EOPNOTSUPP"
	else
		report FAIL "$name" "expected -FI_EOPNOTSUPP on rxe0 (exit 4) got exit $rc: $(head -c 200 "$out") $(first_match '^ERROR' "$err")"
	fi
	name="fsdax-verbs-warning"
	if grep -q 'DAX filesystem' "$err" && grep -q 'device-DAX' "$err" &&
	   grep -q 'FI_PMEMVERBS_CORE_PROV=tcp' "$err"; then
		report PASS "$name" "$(first_match 'DAX filesystem' "$err" | sed 's/.*<warn> //' | cut -c1-160)..."
	else
		report FAIL "$name" "expected a warning naming the DAX filesystem and the remedies (device-DAX, FI_PMEMVERBS_CORE_PROV=tcp) got: $(grep -m2 -i 'warn' "$err" | cut -c1-200)"
	fi

	FI_LOG_LEVEL=warn run_demo_pair "demo-verbs-fsdax" "$ADDR" 11501 /mnt/pmem/demo
	name="fsdax-verbs-demo-refused"
	if [[ $DEMO_TRC -ne 0 && $DEMO_IRC -ne 0 ]] &&
	   grep -q 'DAX filesystem' "$WORK/demo-verbs-fsdax.target"; then
		report PASS "$name" "the demo target exits $DEMO_TRC, its log names the DAX filesystem"
	else
		report FAIL "$name" "expected both sides to fail and the target's log to name the DAX filesystem got target exit $DEMO_TRC, initiator exit $DEMO_IRC"
		sed 's/^/    /' "$WORK/demo-verbs-fsdax.target" | tail -n 8
	fi
}

# (g) Over tcp the same fsdax filesystem works.
check_fsdax_on_tcp() {
	local out=$WORK/mrreg-tcp.out err=$WORK/mrreg-tcp.err rc
	export FI_PMEMVERBS_CORE_PROV=tcp
	section "tcp core ($LOOPBACK): the DAX filesystem /mnt/pmem"
	truncate -s 1M /mnt/pmem/probe
	probe_profile "probe-fsdax" /mnt/pmem/probe "DMP"
	# without MAP_SYNC the file system may still have work: msync (PAGE)
	probe_profile "probe-fsdax-without-map-sync" /mnt/pmem/probe "PAGE" -n
	rm -f /mnt/pmem/probe
	timeout 60 "$COMMIT_TEST" -r target -t mrreg -f /mnt/pmem/mrreg \
		-a "$LOOPBACK" -P 11600 >"$out" 2>"$err"
	rc=$?
	if [[ $rc -eq 0 ]] && grep -q '^MRREG 0 (0) DMP domain lo' "$out"; then
		report PASS "fsdax-tcp-mr-reg" "fi_mr_reg(FI_RMA_PMEM) succeeds, profile DMP, core tcp (domain lo)"
	else
		report FAIL "fsdax-tcp-mr-reg" "expected success with profile DMP on domain lo got exit $rc: $(head -c 200 "$out") $(first_match '^ERROR' "$err")"
	fi
	run_durability "tcp, /mnt/pmem file (fsdax)" /mnt/pmem/region DMP "$LOOPBACK" 11700
	section "demo through pmemverbs over tcp on /mnt/pmem"
	check_demo_commit "demo-tcp-fsdax" "$LOOPBACK" 11800 /mnt/pmem/demo-tcp tcp
	unset FI_PMEMVERBS_CORE_PROV
}

# (h) A PAGE region of a file on a disk, over verbs: RDMA writes into
# pages that ibv_reg_mr pinned do not dirty them, so every committed record
# must still reach the disk (test/crash/repro_page_verbs.sh reads it back
# with O_DIRECT while the target runs; without the agent's page dirtying
# the disk held 8 of 200 acknowledged records).  Four VERIFY lines.
check_page_disk() {
	local out lines n=0 name verdict rest
	section "PAGE over verbs and tcp: committed records on the disk (ext4 on a loop device)"
	out=$("$ROOT/test/crash/repro_page_verbs.sh" "$BUILD" 2>&1)
	# (no process substitution: the guest has no /dev/fd)
	lines=$(grep -a '^VERIFY ' <<<"$out")
	while read -r _ name verdict rest; do
		[[ -n $name ]] || continue
		n=$((n + 1))
		[[ $verdict == ok ]] && report PASS "page-disk-$name" "${rest:0:160}" ||
			report FAIL "page-disk-$name" "${rest:0:240}"
	done <<<"$lines"
	[[ $n -eq 4 ]] || report FAIL "page-disk" "$n VERIFY lines, not 4: $(tail -n 3 <<<"$out" | tr '\n' ' ')"
}

run_fsdax() {
	if ! mountpoint -q /mnt/pmem || ! grep -q ' /mnt/pmem .*dax' /proc/mounts; then
		report FAIL "fsdax-mount" "/mnt/pmem is not a DAX filesystem: $(grep /mnt/pmem /proc/mounts)"
	fi
	check_fsdax_refused_on_verbs
	check_fsdax_on_tcp
	check_page_disk
}

echo "pmemverbs verbs-core tests in the guest ($MODE): $(uname -r), $(ls /sys/class/infiniband 2>/dev/null | tr '\n' ' ')"
if [[ $MODE == devdax ]]; then
	[[ -c /dev/dax0.0 ]] || report FAIL "devdax-device" "/dev/dax0.0 is missing"
	run_devdax
else
	run_fsdax
fi
echo "(in the guest: ${SECONDS}s, software emulation; timings here are not performance figures)"
# the host counts this line only: a guest that stops early has none
echo "guest-total: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
