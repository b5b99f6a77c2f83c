#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Durability tests of pmemverbs: runs every pmv_commit_test test (and
# profile) as a target/initiator pair over 127.0.0.1, prints one
# "PASS|FAIL name" line per check, and as its last line "N passed, N failed".
#
# usage: run_pmem_tests.sh BIN
#   BIN   the pmv_commit_test binary
# env:
#   PMV_PORT_BASE     first TCP port (default 9800); every run takes a fresh one
#   FI_PROVIDER_PATH  directory of libpmemverbs-fi.so (default: build/.libs)
#   PMV_ADDR          address both sides use (default 127.0.0.1; over the
#                     verbs core, an address of the RDMA device's netdev)
#   PMV_REGION        a file or device (/dev/dax0.0) every target uses as its
#                     region, instead of a fresh /dev/shm file per run.  Then
#                     no granularity is forced: the oracle, contents, fault,
#                     badinput and exit tests run once each with -g auto (the
#                     profile the region really has)
#   PMV_EXPECT_PROFILE  with PMV_REGION: the profiles the region may report,
#                     comma-separated (e.g. DMP,MHP or PAGE; default: any
#                     persistent profile)
#   PMV_RUNS          only the runs named here (space-separated; a name no
#                     run has is a FAIL; e.g.
#                     "oracle-byte contents-byte"); default: all
#   PMV_TARGET_ENV    VAR=VALUE words added to every target's environment
#                     (e.g. FI_PMEMVERBS_WSP=1)
#   PMV_KEEP          set: keep the scratch directory (its path is printed)
#   PMV_SUITE         rdm: only the FI_EP_RDM runs (pmv_rdm_test, next to
#                     BIN), each commit checked by the oracle or the
#                     target's file; two ports for a two-peer run.
#                     threadless: targets without the agent thread
#                     (FI_PMEMVERBS_AGENT_THREAD=0), the runs named in
#                     THREADLESS_RUNS below, MSG then RDM
set -u

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../common/pmv_pair.sh
. "$ROOT/test/common/pmv_pair.sh" || { echo "no test/common/pmv_pair.sh" >&2; exit 2; }
pmv_runner_args 'BIN (an executable pmv_commit_test)' '' "$@"
PORT=${PMV_PORT_BASE:-9800}
ADDR=${PMV_ADDR:-127.0.0.1}
REGION=${PMV_REGION:-}
EXPECT=${PMV_EXPECT_PROFILE:-}
RUNS=${PMV_RUNS:-}
read -r -a TARGET_ENV <<<"${PMV_TARGET_ENV:-}"
# Without the agent thread only the target's own reads serve its peers
# (FI_PROGRESS_MANUAL).  These runs' targets read the CQs of the
# connections commits come on: oracle and contents, the oracle's own fault
# runs, bad input, failed persists (a real writeback error too), a
# truncated region, a sparse scope, fences after failures, exit with
# endpoints open, every re-registration, reopen, move, overtake,
# late-serve, many-connection, counter, wait-mode, initiator-wait and
# delivery scenario, the RDM runs.  The initiator is told
# (PMV_TARGET_AGENT_THREAD=0): bad input's commit-while-target-idle
# pauses the target (it calls nothing) and checks that the commit
# completes only after it calls libfabric again; wait-modes
# reads the marker and writes the flag over the waited connection and
# leaves out the EQ wait and the target that calls nothing.  Left out by
# design: immed-flood (the target waits on one connection while the
# initiator reads another's marker over RMA: only an agent serves it).
THREADLESS_RUNS="oracle-page oracle-byte-read_flush oracle-cache_line-send
	contents-cache_line fault-extent-3 fault-extent-777 badinput
	badinput-byte badinput-byte-no-table persist-fails-page writeback-error
	writeback-error-kept truncated-region-byte
	fence-after-many-failures-cache_line-send
	sparse-scope-page send-then-overlap-cache_line-send
	exit-with-endpoints-open scenario-reopen-page scenario-reopen-byte-joined
	scenario-rereg-byte scenario-rereg-byte-joined
	scenario-rereg-byte-no-table scenario-move-byte
	scenario-move-byte-read_flush scenario-overtake-byte
	scenario-late-serve-page scenario-late-serve-page-two-writes
	scenario-many-64x32-cache_line scenario-counters-page
	scenario-wait-modes-page scenario-wait-modes-cache_line
	scenario-initiator-waits-page scenario-delivery-page-1
	scenario-delivery-page-0 rdm-page rdm-byte-agent rdm2-byte
	rdm-sos-page rdm-close-byte-1 rdm-close-byte-2 rdm-close-byte-3
	rdm-close-byte-4"
if [[ ${PMV_SUITE:-} == threadless ]]; then
	TARGET_ENV+=(FI_PMEMVERBS_AGENT_THREAD=0)
	RUNS=${RUNS:-$(tr -s '\t\n' '  ' <<<"$THREADLESS_RUNS")}
fi
PROC_TIMEOUT=150 # seconds, per process
READY_POLLS=300  # x 0.1 s waiting for the target's READY line (registering
                 # takes seconds in an emulated guest)

# Region files and oracle logs live in shared memory when there is some.
pmv_scratch pmv_commit_test
TARGET_PID=""

# Stops a target still running (ours, by pid) and removes the scratch files.
cleanup() {
	pmv_stop "$TARGET_PID"
	pmv_scratch_remove "${PMV_KEEP:+1}"
}
trap cleanup EXIT

passed=0
failed=0

# libfabric 1.17's tcp core frees a read's transfer entry twice when an
# endpoint closes mid read response, and a later endpoint on the same CQ
# loses its framing (test/failure/tcp_read_close.c shows it on the plain
# core).  Over 127.0.0.1 (the tcp core) the probe runs once; where it shows
# the defect, the reopen scenarios let A's plain reads end before A closes.
probe_read_close_defect() {
	local probe
	probe=$(dirname "$BIN")/../failure/tcp_read_close
	[[ $ADDR == 127.0.0.1 && -x $probe ]] || return 0
	if ! timeout 120 "$probe" -P "$((PORT + 900))" >"$WORK/probe.out" 2>&1; then
		export PMV_CORE_READ_CLOSE_DEFECT=1
		echo "core defect: $(tail -n 1 "$WORK/probe.out") (tcp_read_close); reopen scenarios wait for A's plain reads before closing A"
	fi
}
[[ ${PMV_SUITE:-} == rdm ]] || probe_read_close_defect # no reopen in rdm

# The target's region: PMV_REGION, or a fresh file of this run.
region_of() {
	if [[ -n $REGION ]]; then
		echo "$REGION"
	elif [[ -n ${REGION_DIR:-} ]]; then
		echo "$REGION_DIR/$(basename "$1").data"
	else
		echo "$SHM/$(basename "$1").data"
	fi
}

# NS: what both processes of a run start under (run_on_loop_fs: nsenter
# into the mount namespace holding the run's file system); empty: nothing.
NS=()

# Starts the target of run DIR in the background (TARGET_PID); 0 if READY.
start_target() {
	local dir=$1 test=$2 port=$3
	shift 3
	"${NS[@]}" env "$@" timeout "$PROC_TIMEOUT" "$BIN" -r target -t "$test" \
		-a "$ADDR" -P "$port" -f "$(region_of "$dir")" \
		>"$dir/target.out" 2>"$dir/target.err" &
	TARGET_PID=$!
	wait_line "$TARGET_PID" "$dir/target.out"
}

# Waits for the target (it ends by itself, under its timeout); sets TRC.
finish_target() {
	wait "$TARGET_PID" 2>/dev/null # no job notice for a SIGKILLed one
	TRC=$?
	TARGET_PID=""
}

# Judges a run whose initiator reports its own checks, line by line; the
# target must exit 0, or with the status $4 names (judge_killed).
judge_lines() {
	local name=$1 dir=$2 irc=$3 trc_ok=${4:-0}
	forward "" "$dir/initiator.out"
	if [[ $irc -ne 0 && $NFAIL -eq 0 ]]; then
		report FAIL "$name" "$(describe_side initiator "$irc" "$dir/initiator.err")"
	fi
	if [[ $TRC -ne $trc_ok && $trc_ok -eq 0 ]]; then
		report FAIL "$name/target" "$(describe_side target "$TRC" "$dir/target.err")"
	elif [[ $TRC -ne $trc_ok ]]; then
		report FAIL "$name/target" "expected SIGKILL ($trc_ok) by the initiator, got $(describe_side target "$TRC" "$dir/target.err")"
	fi
}

# As judge_lines, but the initiator SIGKILLs the target (rdm-sos): the
# target must have died of it (137), not exited by itself.
judge_killed() {
	judge_lines "$1" "$2" "$3" 137
}

# The oracle must catch the skipped extent: the initiator exits 3.
judge_fault() {
	local name=$1 dir=$2 irc=$3
	if [[ $irc -eq 3 ]]; then
		report PASS "$name" "$(grep -m1 '^DETECTED' "$dir/initiator.out" | cut -c1-200)"
	else
		report FAIL "$name" "expected exit 3 (the oracle finds the skipped extent) got $(describe_side initiator "$irc" "$dir/initiator.err")"
	fi
}

# Both processes exit (with everything open) and must do so cleanly.
judge_exit() {
	local name=$1 dir=$2 irc=$3
	forward "" "$dir/initiator.out"
	if [[ $irc -eq 0 && $TRC -eq 0 ]]; then
		report PASS "$name" "initiator and target exited 0 with their FI_RMA_PMEM endpoints open"
		return
	fi
	[[ $irc -ne 0 ]] && report FAIL "$name/initiator" "expected exit 0 got $(describe_side initiator "$irc" "$dir/initiator.err")"
	[[ $TRC -ne 0 ]] && report FAIL "$name/target" "expected exit 0 got $(describe_side target "$TRC" "$dir/target.err")"
}

# What the initiator must know of TARGET_ENV, into run's ienv: the
# target's FI_PMEMVERBS_AGENT_THREAD as PMV_TARGET_AGENT_THREAD (unset:
# the thread runs).
target_env_for_initiator() {
	local v
	for v in "${TARGET_ENV[@]}"; do
		[[ $v == FI_PMEMVERBS_AGENT_THREAD=* ]] &&
			ienv+=(PMV_TARGET_AGENT_THREAD="${v#*=}")
	done
	return 0
}

# run NAME TEST GRANULARITY JUDGE ORACLE(yes|no) [FAULT_EXTENT]
# With METHOD set (METHOD=agent run ...), the initiator's provider gets
# FI_PMEMVERBS_METHOD=$METHOD, and the initiator expects it; with JOIN=1
# the initiator sends data and request as one write; with DELIVERY=1 its
# FI_DELIVERY_COMPLETE writes are commits; with PUSH=0 it reads
# no profile table of the target (a key's first commit goes to the agent);
# with CASE set,
# badinput runs only that case (scenario: runs that case); with
# FAULT_PERSIST=N, the target's N-th persist call fails
# (FI_PMEMVERBS_FAULT_PERSIST); with FILL_HOLES=0 the target leaves its
# regions' holes unallocated (FI_PMEMVERBS_FILL_HOLES).
run() {
	local name=$1 test=$2 gran=$3 judge=$4 use_oracle=$5 fault=${6:-}
	local dir=$WORK/$name port=$PORT irc oracle=$SHM/$name.oracle
	local tenv=(PMEM2_FORCE_GRANULARITY="$gran") iargs=()
	local ienv=(-u PMEM2_FORCE_GRANULARITY -u FI_PMEMVERBS_METHOD
		-u FI_PMEMVERBS_DELIVERY_IS_COMMIT -u PMV_TARGET_AGENT_THREAD)
	[[ -z $RUNS || " $RUNS " == *" $name "* ]] || return 0
	RAN+=" $name"
	[[ -n ${METHOD:-} ]] && ienv+=(FI_PMEMVERBS_METHOD="$METHOD")
	[[ -n ${JOIN:-} ]] && ienv+=(FI_PMEMVERBS_JOIN_REQUEST="$JOIN")
	[[ -n ${PUSH:-} ]] && ienv+=(FI_PMEMVERBS_PUSH_PROFILES="$PUSH")
	[[ -n ${DELIVERY:-} ]] &&
		ienv+=(FI_PMEMVERBS_DELIVERY_IS_COMMIT="$DELIVERY")
	[[ -n ${CASE:-} ]] && iargs+=(-c "$CASE")
	target_env_for_initiator
	iargs+=(-F "$(region_of "$dir")")
	PORT=$((PORT + 1))
	mkdir -p "$dir"
	if [[ $gran == auto ]]; then
		# nothing forced: the region's own granularity
		tenv=(-u PMEM2_FORCE_GRANULARITY)
		[[ -n $EXPECT ]] && iargs+=(-E "$EXPECT")
	fi
	if [[ $use_oracle == yes ]]; then
		tenv+=(FI_PMEMVERBS_ORACLE="$oracle")
		iargs+=(-o "$oracle")
	fi
	[[ -n $fault ]] && tenv+=(FI_PMEMVERBS_FAULT_SKIP_EXTENT="$fault")
	[[ -n ${FAULT_PERSIST:-} ]] &&
		tenv+=(FI_PMEMVERBS_FAULT_PERSIST="$FAULT_PERSIST")
	[[ -n ${FILL_HOLES:-} ]] &&
		tenv+=(FI_PMEMVERBS_FILL_HOLES="$FILL_HOLES")
	[[ -n ${FILL_DIR:-} ]] && tenv+=(PMV_WBERR_FILL_DIR="$FILL_DIR")
	tenv+=("${TARGET_ENV[@]}")
	start_target "$dir" "$test" "$port" "${tenv[@]}"
	case $? in
	1)
		finish_target
		report FAIL "$name" "$(describe_side target "$TRC" "$dir/target.err") (before READY)"
		return
		;;
	2)
		kill "$TARGET_PID" 2>/dev/null
		finish_target
		report FAIL "$name" "target printed no READY within $((READY_POLLS / 10))s"
		return
		;;
	esac
	"${NS[@]}" env "${ienv[@]}" \
		timeout "$PROC_TIMEOUT" "$BIN" -r initiator -t "$test" -g "$gran" \
		-a "$ADDR" -P "$port" "${iargs[@]}" \
		>"$dir/initiator.out" 2>"$dir/initiator.err"
	irc=$?
	finish_target
	"judge_$judge" "$name" "$dir" "$irc"
}

# The file system of run_on_loop_fs, made in a private mount namespace by
# its last process, which then says so ($1/ready) and sleeps $2 seconds:
# ext4 on a loop device whose image lies on a 64 MiB tmpfs (at $1/t) that
# the target can fill, mounted at $1/m.  The block groups' metadata is
# written first (a file kept), so that only data blocks need new room in
# the image.
LOOP_FS_SETUP='set -e
mount -t tmpfs -o size=64m tmpfs "$1/t"
truncate -s 96M "$1/t/img"
mkfs.ext4 -q -F -O ^has_journal -E lazy_itable_init=0 "$1/t/img" >/dev/null
mount -o loop "$1/t/img" "$1/m"
dd if=/dev/zero of="$1/m/kept" bs=64k count=16 conv=fsync status=none
touch "$1/ready"
exec sleep "$2"'

# The propagation run_on_loop_fs's namespace takes: private, so that its
# mounts never reach this one.  In a chroot (the Debian 13 pass) / is no
# mount point and cannot be made private; there "unchanged" is as safe if
# no mount of this namespace is shared (the pass's own namespace is made
# private), and the setup fails otherwise (mountinfo's "shared:" field).
loop_fs_propagation() {
	if unshare -m --propagation private true 2>/dev/null ||
	   grep -q ' shared:' /proc/self/mountinfo; then
		echo private
	else
		echo unchanged
	fi
}

# run_on_loop_fs NAME ARGS...: run NAME ARGS... with the region file on a
# file system of its own, in a private mount namespace both processes
# enter (nsenter), whose writeback the target can make fail
# (PMV_WBERR_FILL_DIR): the case writeback-error.  Needs root, a free loop
# device and mkfs.ext4; where they are missing the run is a FAIL, never
# left out.  The namespace, its mounts and the loop device go with it.
run_on_loop_fs() {
	local name=$1 dir ns tries=0 prop
	[[ -z $RUNS || " $RUNS " == *" $name "* ]] || return 0
	dir=$(mktemp -d /tmp/pmv_loopfs.XXXXXX)
	mkdir "$dir/t" "$dir/m"
	prop=$(loop_fs_propagation)
	unshare -m --propagation "$prop" bash -c "$LOOP_FS_SETUP" _ "$dir" \
		$((PROC_TIMEOUT * 2)) 2>"$dir/setup.err" &
	ns=$!
	while [[ ! -e $dir/ready ]] && kill -0 "$ns" 2>/dev/null &&
	      ((tries++ < 300)); do
		sleep 0.1
	done
	if [[ ! -e $dir/ready ]]; then
		RAN+=" $name"
		report FAIL "$name" "could not make its file system (needs root, a free loop device, mkfs.ext4): $(tail -n 1 "$dir/setup.err")"
	else
		# -r -w: its root and directory (entering a mount namespace
		# resets both to the namespace's: in a chroot, outside it)
		NS=(nsenter -t "$ns" -m -r -w)
		REGION_DIR=$dir/m FILL_DIR=$dir/t run "$@"
		NS=()
	fi
	kill "$ns" 2>/dev/null
	wait "$ns" 2>/dev/null
	rm -rf "$dir"
}

# Every run PMV_RUNS (or THREADLESS_RUNS) names must have run: a
# misspelt name is a FAIL, not a run quietly left out.  Then the verdict
# line and the exit status.
RAN=
finish() {
	local name
	for name in $RUNS; do
		[[ " $RAN " == *" $name "* ]] ||
			report FAIL "$name" "named in PMV_RUNS, but no such run here"
	done
	echo "$passed passed, $failed failed"
	[[ $failed -eq 0 ]]
	exit
}

echo "pmemverbs durability tests: $BIN (FI_PROVIDER_PATH=$FI_PROVIDER_PATH, $ADDR, ports from $PORT)"

# FI_EP_RDM (ofi_rxm over pmemverbs MSG): commits, pure flushes, fenced
# pairs, FI_IMMED (checked by the target at arrival), fi_inject_write in a
# commit's scope, FI_COMMIT_COMPLETE with FI_INJECT refused; one peer (rdm)
# or two through one AV (rdm2, ports PORT and PORT+1): pmv_rdm_test, next
# to BIN.
rdm_runs() {
	local RDM_BIN gran i
	RDM_BIN=$(dirname "$BIN")/pmv_rdm_test
	for gran in page cache_line byte; do
		BIN=$RDM_BIN run "rdm-$gran" rdm "$gran" lines yes
	done
	BIN=$RDM_BIN METHOD=agent run rdm-byte-agent rdm byte lines yes
	for gran in page byte; do
		BIN=$RDM_BIN run "rdm2-$gran" rdm2 "$gran" lines yes
		PORT=$((PORT + 1))
	done
	# Sandia OpenSHMEM's pattern: FI_DELIVERY_COMPLETE puts counted by an
	# FI_WRITE counter, fi_cntr_wait as shmem_quiet; durable at the wait
	# under FI_PMEMVERBS_DELIVERY_IS_COMMIT (the agent persists, so the
	# oracle checks byte granularity too); after the last wait the
	# initiator SIGKILLs the target and finds every counted put in its file
	for gran in page cache_line byte; do
		BIN=$RDM_BIN DELIVERY=1 METHOD=agent \
			run "rdm-sos-$gran" rdm-sos "$gran" killed yes
	done
	# The target closes its RDM endpoint once the initiator has exited
	# (rdm-close): its agent's acks that failed on the broken connection
	# come out during ofi_rxm's fi_close; looped (PMV_RDM_CLOSE_RUNS), as
	# a context-less error there crashed ofi_rxm in only some runs
	for ((i = 1; i <= ${PMV_RDM_CLOSE_RUNS:-16}; i++)); do
		BIN=$RDM_BIN run "rdm-close-byte-$i" rdm-close byte lines yes
	done
}

if [[ ${PMV_SUITE:-} == rdm ]]; then
	rdm_runs
	finish
fi

if [[ -n $REGION ]]; then
	echo "region: $REGION for every run, no granularity forced (-g auto${EXPECT:+, expecting $EXPECT})"
	run oracle-auto oracle auto lines yes
	METHOD=agent run oracle-auto-agent oracle auto lines yes
	run contents-auto contents auto lines no
	METHOD=agent run fault-extent-3 fault auto fault yes 3
	METHOD=agent run fault-extent-777 fault auto fault yes 777
	run badinput badinput auto lines no
	FAULT_PERSIST=1 CASE=persist-fails \
		run persist-fails-auto badinput auto lines no
	run exit-with-endpoints-open exit auto exit no
	finish
fi

for gran in page cache_line byte; do
	run "oracle-$gran" oracle "$gran" lines yes
done
# byte (MHP): read-flush by default (the write, then the read of the
# generation word, as over RDMA); the agent forced; read-flush forced; no
# table (a key's first commit to the agent, then read-flush); joined
# (FI_PMEMVERBS_JOIN_REQUEST=1: the agent, one write per commit)
METHOD=agent run oracle-byte-agent oracle byte lines yes
METHOD=read_flush run oracle-byte-read_flush oracle byte lines yes
PUSH=0 run oracle-byte-no-table oracle byte lines yes
JOIN=1 run oracle-byte-joined oracle byte lines yes
# the two-write path (JOIN=0: read_flush for MHP keys, agent commits as
# data then request, FI_ORDER_WAW)
JOIN=0 run oracle-byte-two-writes oracle byte lines yes
# an agent commit's data and request go as two writes (FI_ORDER_WAW); the
# joined path (one write, FI_PMEMVERBS_JOIN_REQUEST=1) is checked here too
JOIN=1 run oracle-page-joined oracle page lines yes
JOIN=1 run contents-cache_line-joined contents cache_line lines no
# send for every commit that fits a request, fenced or not
METHOD=send run oracle-cache_line-send oracle cache_line lines yes
for gran in page cache_line byte; do
	run "contents-$gran" contents "$gran" lines no
done
# a file truncated under the target's live registration: a pure flush and
# a fenced commit past its new end fail (FI_EIO), the target lives (send
# forced, so that byte's commits reach the agent too)
for gran in page cache_line byte; do
	METHOD=send CASE=truncated-region \
		run "truncated-region-$gran" badinput "$gran" lines no
done
METHOD=read_flush run contents-byte-read_flush contents byte lines no
run fault-extent-3 fault cache_line fault yes 3
METHOD=agent run fault-extent-777 fault byte fault yes 777
run badinput badinput page lines no
run badinput-byte badinput byte lines no
PUSH=0 run badinput-byte-no-table badinput byte lines no
# an override incorrect for the profile is refused, never used (at the
# first commit when the target's table named the profile, else after it)
METHOD=read_flush CASE=method-after-first-commit \
	run method-refused-page badinput page lines no
METHOD=read_flush PUSH=0 CASE=method-after-first-commit \
	run method-refused-page-no-table badinput page lines no
# a persist that fails (msync's error) fails its commit: FI_EIO, never success
for gran in page cache_line; do
	FAULT_PERSIST=1 CASE=persist-fails \
		run "persist-fails-$gran" badinput "$gran" lines no
done
# a real writeback error on ext4 that the application's own msync took
# first (Linux reports it once per open file): the region's commits fail
# with FI_EIO until it is registered again; then a commit into the page
# that failed is on the disk, whether that page left memory (-error) or
# stayed (-kept: ext4 leaves its block's extent unwritten under later
# stores, which pmemverbs reads back and writes again)
CASE=writeback-error run_on_loop_fs writeback-error badinput auto lines no
CASE=writeback-error-kept \
	run_on_loop_fs writeback-error-kept badinput auto lines no
# issue 25: a fence after a failure to its key fails however many other
# keys failed in between (item 6); an older send never overwrites a later
# commit over its range (item 7); by default, on cache_line, send forced
for gran in page cache_line byte; do
	CASE=fence-after-many-failures \
		run "fence-after-many-failures-$gran" badinput "$gran" lines no
	CASE=send-then-overlapping-commit \
		run "send-then-overlap-$gran" badinput "$gran" lines no
done
METHOD=send CASE=fence-after-many-failures \
	run fence-after-many-failures-cache_line-send badinput cache_line lines no
METHOD=send CASE=send-then-overlapping-commit \
	run send-then-overlap-cache_line-send badinput cache_line lines no
run exit-with-endpoints-open exit cache_line exit no
# the scope persists only what was written: on a sparse region (its holes
# left unallocated) five scattered writes and a commit allocate their pages
for gran in page cache_line; do
	FILL_HOLES=0 CASE=sparse-scope \
		run "sparse-scope-$gran" badinput "$gran" lines no
done
# scenarios: ways a commit could complete before it is durable, or a
# completion be lost (README.md, Scenarios)
for gran in page cache_line byte; do
	CASE=reopen run "scenario-reopen-$gran" scenario "$gran" lines yes
done
# joined (JOIN=1), MHP keys take the agent, one write per commit
JOIN=1 CASE=reopen run scenario-reopen-byte-joined scenario byte lines yes
# re-registration: the agent checks the generation of the request's oldest
# write; read-flush's read brings the target's
CASE=rereg run scenario-rereg-byte scenario byte lines yes
JOIN=1 CASE=rereg run scenario-rereg-byte-joined scenario byte lines yes
PUSH=0 CASE=rereg run scenario-rereg-byte-no-table scenario byte lines yes
# a key registered again on other memory (another file or offset) after a
# write was placed: the commit that covers it fails (FI_EIO), never succeeds
CASE=move run scenario-move-byte scenario byte lines yes
METHOD=read_flush CASE=move run scenario-move-byte-read_flush scenario byte lines yes
# issue 24, scenario 1: the target's new table queued behind its writes
# back; a commit to the key must be durable or fail (FI_EIO), never
# complete on the old profile (the agent by default; read-flush forced)
CASE=overtake run scenario-overtake-byte scenario byte lines yes
METHOD=read_flush CASE=overtake run scenario-overtake-byte-read_flush scenario byte lines yes
# issue 24, scenario 2: a request served by the target's CQ read after its
# key was registered on other memory fails (FI_EIO), raises no FI_IMMED
CASE=late-serve run scenario-late-serve-page scenario page lines yes
JOIN=0 CASE=late-serve run scenario-late-serve-page-two-writes scenario page lines yes
for gran in page cache_line byte; do
	CASE=many-64x32 run "scenario-many-64x32-$gran" scenario "$gran" lines yes
done
CASE=many-128x32 run scenario-many-128x32-cache_line scenario cache_line lines yes
CASE=immed-flood run scenario-immed-flood-cache_line scenario cache_line lines yes
CASE=counters run scenario-counters-page scenario page lines yes
CASE=no-pmem-caps run scenario-no-pmem-caps scenario page lines no
# a passive target waiting in each wait mode (fi_cq_sread on every wait
# object, epoll with fi_trywait, fi_cntr_wait, fi_eq_sread, no reads; with
# libfabric 1.x fi_wait on a wait set and fi_poll on a poll set) is served
# at once after 0-1000 ms idle: PAGE and DMP (the agent's profiles)
for gran in page cache_line; do
	CASE=wait-modes run "scenario-wait-modes-$gran" scenario "$gran" lines yes
done
# the initiator waiting for its commits in each way (polling, fi_cq_sread
# on every wait object, epoll on the CQ's fd and poll on the FI_WRITE
# counter's fd after fi_trywait, fi_cntr_wait) is woken at once after
# 0-1000 ms idle, each commit durable when it completes: every profile
for gran in page cache_line byte; do
	CASE=initiator-waits run "scenario-initiator-waits-$gran" scenario "$gran" lines yes
done

# FI_PMEMVERBS_DELIVERY_IS_COMMIT: FI_DELIVERY_COMPLETE writes (flag and
# default op_flags) are durable at completion with it, plain writes without
for dc in 1 0; do
	DELIVERY=$dc CASE=delivery run "scenario-delivery-page-$dc" scenario page lines yes
done
if [[ ${PMV_SUITE:-} == threadless ]]; then
	PMV_RDM_CLOSE_RUNS=4 rdm_runs
fi

finish
