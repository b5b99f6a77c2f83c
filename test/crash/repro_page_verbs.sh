#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# repro_page_verbs.sh: are committed bytes of a page-cache file (PAGE) on
# the disk, over the verbs core and over tcp?  Part of the fsdax boot of
# test/verbs/in_guest.sh.  No power cut is needed: an
# O_DIRECT read returns what the disk holds (the kernel first writes back
# the range's dirty cached pages), read while the target still runs.  Runs
# in the QEMU guest of test/verbs/vm.sh (rxe0 and 10.0.2.15):
#
#   test/verbs/vm.sh -- test/crash/repro_page_verbs.sh BUILD_DIR
#
# For each core, 200 singleton appends to a file on an ext4 loop device
# (in the guest's /dev/shm), then two VERIFY lines: the page cache (the
# file as mapped) and the disk (an O_DIRECT copy).  Both must be "ok".
# Found: over verbs the disk held the first records only (8 of 200): RDMA
# writes into pages that ibv_reg_mr pinned do not dirty them, so the
# agent's msync found them clean once they were written back.  Over tcp
# the core's recv() stores through the mapping and all 200 were on disk.
# Fixed: the PAGE persist stores through the mapping into each page first
# (pmv_profile.c, pmv_dirty_pages); now 200 of 200 over both cores.
set -u

if [[ $# -ne 1 || ! -d $1 ]]; then
	sed -n '8,9p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
fi
BUILD=$(cd "$1" && pwd)
BIN=$BUILD/test/crash/pmv_crashlog
export FI_PROVIDER_PATH=$BUILD/.libs
WORK=$(mktemp -d /dev/shm/pmv_repro.XXXXXX)
MNT=$WORK/mnt
status=0

modprobe ext4
modprobe loop
truncate -s 128M "$WORK/disk.img"
mkfs.ext4 -q -F "$WORK/disk.img"
mkdir -p "$MNT"
mount -o loop "$WORK/disk.img" "$MNT" || exit 1

# 200 appends over one core, then the page cache's and the disk's view.
run_core() {
	local core=$1 addr=$2 log=$MNT/log-$1 tpid line rc=0
	"$BIN" init -f "$log" -m singleton -c $((8 << 20)) -M 4096 >/dev/null
	"$BIN" target -f "$log" -a "$addr" -P 12450 -t 300 >"$WORK/t.$core" 2>&1 &
	tpid=$!
	"$BIN" append -a "$addr" -P 12450 -n 200 -w 120 >"$WORK/acks.$core" \
		2>"$WORK/a.$core"
	dd if="$log" of="$WORK/disk.$core" bs=1M iflag=direct status=none
	echo "core $core: $(grep '^END' "$WORK/acks.$core")"
	"$BIN" verify -f "$log" -A "$WORK/acks.$core" -N "page-cache-$core"
	line=$("$BIN" verify -f "$WORK/disk.$core" -A "$WORK/acks.$core" \
	       -N "disk-$core") || rc=1
	echo "$line"
	kill "$tpid"
	wait "$tpid" 2>/dev/null
	return $rc
}

(unset FI_PMEMVERBS_CORE_PROV; run_core verbs 10.0.2.15) || status=1
(export FI_PMEMVERBS_CORE_PROV=tcp; run_core tcp 127.0.0.1) || status=1
umount "$MNT"
rm -rf "$WORK"
exit $status
