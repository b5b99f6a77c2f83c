#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# powercut_guest.sh: one boot of the power-cut test (issue 11 item 4), run
# inside the QEMU guest by test/crash/run_powercut.sh through
# test/verbs/vm.sh --disk IMG --nvdimm-file FILE.
#
# usage (in the guest): powercut_guest.sh BUILD_DIR STATE_DIR BOOT LAST
#
# The logs (pmv_crashlog):
#   page-singleton, page-compound  files on the ext4 filesystem of the
#       virtio disk /dev/vda (PAGE profile: the agent's msync must reach
#       the disk), singleton over verbs (RDMA writes into page-cache pages,
#       which do not dirty them: the agent must), compound over tcp on
#       127.0.0.1
#   dax-singleton, dax-compound    /dev/dax0.0 at 0 and at 128 MiB
#       (device-DAX on the emulated NVDIMM: DMP, the agent flushes CPU
#       caches), core verbs (soft-RoCE rxe0, 10.0.2.15)
#   page-verbs (PMV_POWERCUT_PAGE_VERBS=1 only) a file on the disk, core
#       verbs, compound: served at every boot
# Boot 0 creates them.  Every later boot first checks all of them, in one
# process, against the ACK lines the host saved from the consoles of the
# boots before (STATE_DIR/acks): "PMVCUT VERIFY ..." lines; a log that
# failed its check or is nearly full is made anew.  Unless LAST is "yes",
# it then serves two of them (even boots page-singleton and dax-compound,
# odd boots page-compound and dax-singleton: process starts are slow under
# emulation), each by a target and an initiator; the initiators print
# their "ACK LOGID SEQ CHK" lines on the serial console, which the host
# keeps, and start appending at "PMVCUT-GO"; the host then cuts the power
# (kills QEMU) at a random moment.  Ports 12400-12404 (the guest's own
# network).
set -u

if [[ $# -ne 4 ]]; then
	echo "usage: $0 BUILD_DIR STATE_DIR BOOT LAST (inside the guest)" >&2
	exit 2
fi
BUILD=$(cd "$1" && pwd)
STATE=$2
BOOT=$3
LAST=$4
BIN=$BUILD/test/crash/pmv_crashlog
export FI_PROVIDER_PATH=$BUILD/.libs
unset FI_PMEMVERBS_CORE_PROV FI_PROVIDER PMEM2_FORCE_GRANULARITY
MNT=/mnt/pmvcrash
CAPACITY=$((64 << 20))    # about 1 MiB per cut: made anew every ~50 cuts
MAXREC=16384
REINIT_LEFT=$((8 << 20))
DAX_SECOND=$((128 << 20)) # base of the second log on /dev/dax0.0
# name|file|base|mode|core|address|port|boots served (even, odd, all)
LOGS=("page-singleton|$MNT/page-singleton.log|0|singleton|verbs|10.0.2.15|12400|even"
      "page-compound|$MNT/page-compound.log|0|compound|tcp|127.0.0.1|12401|odd"
      "dax-singleton|/dev/dax0.0|0|singleton|verbs|10.0.2.15|12402|odd"
      "dax-compound|/dev/dax0.0|$DAX_SECOND|compound|verbs|10.0.2.15|12403|even")
[[ ${PMV_POWERCUT_PAGE_VERBS:-0} == 1 ]] &&
	LOGS+=("page-verbs|$MNT/page-verbs.log|0|compound|verbs|10.0.2.15|12404|all")
WORK=$(mktemp -d /dev/shm/pmv_powercut.XXXXXX)
PARITY=$([[ $((BOOT % 2)) -eq 0 ]] && echo even || echo odd)

# The disk: its journal is replayed at mount, as after any power loss.
mount_disk() {
	local i
	for ((i = 0; i < 100; i++)); do
		[[ -b /dev/vda ]] && break
		sleep 0.1
	done
	modprobe ext4 2>/dev/null
	mkdir -p "$MNT"
	if ! mount -t ext4 /dev/vda "$MNT"; then
		echo "PMVCUT-ERROR cannot mount /dev/vda"
		exit 1
	fi
}

# Environment of a log's processes: its core (verbs: the default).
core_env() {
	if [[ $1 == tcp ]]; then
		echo FI_PMEMVERBS_CORE_PROV=tcp
	else
		echo PMV_CORE_DEFAULT=1
	fi
}

# Creates (or empties) a log.
init_log() {
	local name=$1 file=$2 base=$3 mode=$4
	"$BIN" init -f "$file" -o "$base" -m "$mode" -c $CAPACITY -M $MAXREC |
		sed "s/^/PMVCUT INIT $name /"
}

# Checks every log in one process ("PMVCUT VERIFY" lines), then makes
# anew those that failed (the FAIL is out) or are nearly full.
verify_all() {
	local spec name file base mode core addr port when args=() line left
	for spec in "${LOGS[@]}"; do
		IFS='|' read -r name file base mode core addr port when <<<"$spec"
		args+=(-L "$name=$file@$base")
	done
	"$BIN" verify -A "$STATE/acks" "${args[@]}" >"$WORK/verify" 2>&1
	sed 's/^/PMVCUT /' "$WORK/verify"
	[[ $LAST == yes ]] && return
	for spec in "${LOGS[@]}"; do
		IFS='|' read -r name file base mode core addr port when <<<"$spec"
		line=$(grep -a "^VERIFY $name " "$WORK/verify")
		left=$(sed -n 's/.* left \([0-9]*\).*/\1/p' <<<"$line")
		if [[ $line != "VERIFY $name ok "* || ${left:-0} -lt $REINIT_LEFT ]]; then
			init_log "$name" "$file" "$base" "$mode"
		fi
	done
}

# Whether a file has a line starting with a prefix (builtins only: forks
# are slow under emulation).
has_line() {
	local l
	[[ -f $1 ]] || return 1
	while IFS= read -r l; do
		[[ $l == "$2"* ]] && return 0
	done <"$1"
	return 1
}

# Starts a log's target; sets TPID[name].
start_target() {
	local name=$1 file=$2 base=$3 core=$4 addr=$5 port=$6
	env "$(core_env "$core")" "$BIN" target -f "$file" -o "$base" -a "$addr" \
		-P "$port" -t 900 >"$WORK/$name.t" 2>&1 &
	TPID[$name]=$!
}

# Starts a log's initiator: it connects (retrying until its target
# listens), prints START, waits for the go file, then appends; its START
# and ACK lines go to the console.
start_initiator() {
	local name=$1 core=$2 addr=$3 port=$4
	env "$(core_env "$core")" FI_PMEMVERBS_PEER_TIMEOUT_MS=10000 \
		"$BIN" append -a "$addr" -P "$port" -t 900 -w 300 -d 4 \
		-g "$WORK/go" ${PMV_POWERCUT_UNSAFE:+-u "$PMV_POWERCUT_UNSAFE"} \
		2>"$WORK/$name.i" &
}

# Waits (bounded) for a target's READY; false if it ended without one.
await_ready() {
	local name=$1 i
	for ((i = 0; i < 3000; i++)); do
		has_line "$WORK/$name.t" READY && return 0
		kill -0 "${TPID[$name]}" 2>/dev/null || break
		sleep 0.1
	done
	has_line "$WORK/$name.t" READY
}

# The logs this boot serves, in SERVED (no process substitution: the
# guest has no /dev/fd).
pick_served() {
	local spec when
	SERVED=()
	for spec in "${LOGS[@]}"; do
		when=${spec##*|}
		[[ $when == all || $when == "$PARITY" ]] && SERVED+=("$spec")
	done
}

declare -A TPID
mount_disk
echo "PMVCUT-BOOT $BOOT [t+${SECONDS}s]"
if [[ $BOOT -eq 0 ]]; then
	for spec in "${LOGS[@]}"; do
		IFS='|' read -r name file base mode core addr port when <<<"$spec"
		init_log "$name" "$file" "$base" "$mode"
	done
else
	verify_all
fi
echo "PMVCUT-VERIFIED $BOOT [t+${SECONDS}s]"
if [[ $LAST == yes ]]; then
	umount "$MNT"
	exit 0
fi
pick_served
for spec in "${SERVED[@]}"; do
	IFS='|' read -r name file base mode core addr port when <<<"$spec"
	start_target "$name" "$file" "$base" "$core" "$addr" "$port"
	start_initiator "$name" "$core" "$addr" "$port"
done
for spec in "${SERVED[@]}"; do
	IFS='|' read -r name file base mode core addr port when <<<"$spec"
	if ! await_ready "$name"; then
		echo "PMVCUT-ERROR target $name: $(tail -n 2 "$WORK/$name.t" | tr '\n' ' ')"
		exit 1
	fi
done
: >"$WORK/go"
echo "PMVCUT-GO $BOOT ${#SERVED[@]} [t+${SECONDS}s]"
wait
echo "PMVCUT-ERROR the initiators ended before the power cut"
for spec in "${SERVED[@]}"; do
	IFS='|' read -r name file base mode core addr port when <<<"$spec"
	echo "  $name: $(tail -n 2 "$WORK/$name.i" | tr '\n' ' ')"
done
exit 1
