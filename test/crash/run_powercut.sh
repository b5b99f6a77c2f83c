#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Power cuts (issue 11 item 4): the targets and initiators of
# test/crash/powercut_guest.sh run in the QEMU guest of test/verbs/vm.sh,
# with logs on the ext4 filesystem of a virtio disk (PAGE: the agent's
# msync must reach the disk) and on device-DAX (each boot appends to one
# of each, singleton and compound in turn); the initiators print one
# ACK line per completed append on the serial console, which this script
# keeps on the host, where the cut cannot lose it.  At a random moment
# after the appends started, QEMU is killed (SIGKILL: the guest's page
# cache and everything QEMU had not written to the disk image are gone),
# and the next boot, on the same disk image and NVDIMM file, checks every
# log against every ACK line so far before it starts the next round.
# CUTS cuts take CUTS + 1 boots (the last boot only checks).
#
# usage: run_powercut.sh BUILD_DIR [CUTS]
#   CUTS  power cuts (default PMV_POWERCUT_CUTS, else 20)
# env:
#   PMV_POWERCUT_DELAY_MS "MIN MAX" of the cut after the appends started
#                         (default "200 3000")
#   PMV_POWERCUT_UNSAFE   early|visible: a deliberately wrong initiator in
#                         the guest (test of the test: both must FAIL here)
#   PMV_POWERCUT_PAGE_VERBS=1  also a log on the disk served over verbs
#   PMV_POWERCUT_KEEP=1   keep the state directory (kept after a failure)
# Prints PASS|FAIL lines (one per log and cut), the totals and, as its last
# line, "N passed, N failed".  A boot that does not come up or does not
# start its appends is a FAIL, never a skip.
set -u

if [[ $# -lt 1 || $# -gt 2 || ! -d $1 ]]; then
	sed -n '15,25p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
fi
BUILD=$(cd "$1" && pwd)
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CUTS=${2:-${PMV_POWERCUT_CUTS:-20}}
read -r DELAY_MIN DELAY_MAX <<<"${PMV_POWERCUT_DELAY_MS:-200 3000}"
BOOT_BOUND=420 # seconds from QEMU's start to the guest's PMVCUT-GO
NLOGS=4 # logs checked at each boot (two of them served, see powercut_guest.sh)
[[ ${PMV_POWERCUT_PAGE_VERBS:-0} == 1 ]] && NLOGS=5
export PMV_POWERCUT_UNSAFE=${PMV_POWERCUT_UNSAFE:-}
[[ -n $PMV_POWERCUT_UNSAFE ]] || unset PMV_POWERCUT_UNSAFE
# the guest gets FI_*, PMEM2_* and PMV_* from vm.sh: none of the caller's
unset FI_PROVIDER FI_PMEMVERBS_CORE_PROV PMEM2_FORCE_GRANULARITY \
	FI_PMEMVERBS_METHOD FI_LOG_LEVEL

STATE=$(mktemp -d /var/tmp/pmv_powercut.XXXXXX)
passed=0
failed=0
vm_pid=""
t_boots=0 t_cuts=0 t_acked=0 t_checks=0 t_lost=0 t_torn=0 t_unpub=0
t_bad=0

cleanup() {
	[[ -n $vm_pid ]] && kill_guest
	if [[ ${PMV_POWERCUT_KEEP:-0} == 1 || $failed -gt 0 ]]; then
		echo "state kept: $STATE" >&2
	else
		rm -rf "$STATE"
	fi
}
trap cleanup EXIT

pass() { echo "PASS $*"; passed=$((passed + 1)); }
fail() { echo "FAIL $*"; failed=$((failed + 1)); }
num() { local v; v=$(sed -n "s/.* $2 \([0-9]*\).*/\1/p" <<<"$1" | head -n 1); echo "${v:-0}"; }

# The console of a boot as text lines (CR and NUL bytes dropped).
console_text() { tr -d '\r\000' <"$STATE/console.$1"; }

# Cuts the power: SIGKILL to QEMU (its pid from -pidfile), then vm.sh ends.
kill_guest() {
	local qpid
	qpid=$(cat "$STATE/qemu.pid" 2>/dev/null)
	[[ -n $qpid ]] && kill -KILL "$qpid" 2>/dev/null
	wait "$vm_pid" 2>/dev/null
	vm_pid=""
	rm -f "$STATE/qemu.pid"
}

# Starts boot N of the guest in the background (console in console.N).
start_boot() {
	local boot=$1 last=$2
	rm -f "$STATE/qemu.pid"
	: >"$STATE/console.$boot" # read at once by await_appends
	(cd "$ROOT" && exec "$ROOT/test/verbs/vm.sh" --timeout $((BOOT_BOUND + 600)) \
		--disk "$STATE/disk.img" --nvdimm-file "$STATE/nvdimm.img" \
		--pidfile "$STATE/qemu.pid" -- \
		"$ROOT/test/crash/powercut_guest.sh" "$BUILD" "$STATE" "$boot" "$last") \
		>"$STATE/console.$boot" 2>&1 &
	vm_pid=$!
	t_boots=$((t_boots + 1))
}

# Waits (bounded) until the guest's appends run: "PMVCUT-GO BOOT N" and
# N START lines.  False if the guest ends or stops short.
await_appends() {
	local boot=$1 end=$((SECONDS + BOOT_BOUND)) text go
	while ((SECONDS < end)) && kill -0 "$vm_pid" 2>/dev/null; do
		text=$(console_text "$boot")
		go=$(sed -n 's/^PMVCUT-GO [0-9]* \([0-9]*\).*/\1/p' <<<"$text")
		if [[ -n $go ]] && (($(grep -c '^START ' <<<"$text") >= go)); then
			return 0
		fi
		sleep 0.2
	done
	return 1
}

# Whether boot N appended to log NAME (powercut_guest.sh: even boots
# page-singleton and dax-compound, odd boots the other two).
served_in() {
	case $1 in
	page-verbs) return 0 ;;
	page-singleton | dax-compound) (($2 % 2 == 0)) ;;
	*) (($2 % 2 == 1)) ;;
	esac
}

# Judges the PMVCUT VERIFY lines of a boot (they check the cut before it).
judge_boot() {
	local boot=$1 line name n=0
	while IFS= read -r line; do
		line=${line#PMVCUT }
		name=$(awk '{print $2}' <<<"$line")
		n=$((n + 1))
		t_checks=$((t_checks + $(num "$line" verified)))
		t_lost=$((t_lost + $(num "$line" lost)))
		t_torn=$((t_torn + $(num "$line" torn_rejected)))
		t_unpub=$((t_unpub + $(num "$line" unpublished)))
		t_bad=$((t_bad + $(num "$line" bad_lines)))
		if [[ $line == "VERIFY $name ok "* ]]; then
			pass "powercut-$name-cut$((boot - 1)): $(num "$line" records) records, $(num "$line" verified) acked verified, lost $(num "$line" lost), torn rejected $(num "$line" torn_rejected)$(served_in "$name" $((boot - 1)) || echo ' (idle during this cut)')"
		else
			fail "powercut-$name-cut$((boot - 1)): $line"
		fi
	done < <(console_text "$boot" | grep -a '^PMVCUT VERIFY')
	if ((n != NLOGS)); then
		fail "powercut-boot$boot: $n of $NLOGS logs checked after cut $((boot - 1)): $(console_text "$boot" | grep -a -E 'PMVCUT-ERROR|vm.sh' | head -n 3 | tr '\n' ' ')"
	fi
}

# Keeps the ACK lines a boot's console carries (the only record of what
# was acknowledged; a line the cut truncated is ignored by its check).
save_acks() {
	local boot=$1 before after
	before=$(wc -l <"$STATE/acks")
	console_text "$boot" | grep -a -o 'ACK [0-9a-f]\{16\} [0-9]\+ [0-9a-f]\{4\}' \
		>>"$STATE/acks"
	after=$(wc -l <"$STATE/acks")
	t_acked=$((t_acked + after - before))
	acked_now=$((after - before))
}

# One boot: check the previous cut, start the appends, cut the power.
run_boot() {
	local boot=$1 last=no delay boot_start=$SECONDS
	((boot == CUTS)) && last=yes
	start_boot "$boot" "$last"
	if [[ $last == yes ]]; then
		wait "$vm_pid"
		vm_pid=""
		((boot > 0)) && judge_boot "$boot"
		echo "(boot $boot: checks only, $((SECONDS - boot_start)) s)"
		return
	fi
	if ! await_appends "$boot"; then
		kill_guest
		((boot > 0)) && judge_boot "$boot"
		fail "powercut-boot$boot: the guest did not start its appends: $(console_text "$boot" | grep -a -v -E '^(ACK|START|PMVCUT (VERIFY|INIT))' | tail -n 4 | tr '\n' ' ')"
		save_acks "$boot"
		return
	fi
	delay=$((DELAY_MIN + (RANDOM * 32768 + RANDOM) % (DELAY_MAX - DELAY_MIN + 1)))
	sleep "$(printf '%d.%03d' $((delay / 1000)) $((delay % 1000)))"
	kill_guest
	t_cuts=$((t_cuts + 1))
	((boot > 0)) && judge_boot "$boot"
	save_acks "$boot"
	echo "(boot $boot: cut $boot ${delay} ms after the appends started, $acked_now ACK lines kept, $((SECONDS - boot_start)) s)"
}

start=$SECONDS
"$ROOT/test/verbs/vm.sh" --install >/dev/null 2>&1
if ! compgen -G '/boot/vmlinuz-*' >/dev/null || ! command -v qemu-system-x86_64 >/dev/null ||
   ! command -v mkfs.ext4 >/dev/null; then
	fail "powercut: the guest cannot run here (kernel in /boot, qemu-system-x86_64, mkfs.ext4)"
	echo "$passed passed, $failed failed"
	exit 1
fi
truncate -s 384M "$STATE/disk.img" # room for three 64 MiB logs
mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$STATE/disk.img"
: >"$STATE/acks"
echo "power cuts: $CUTS cuts ($((CUTS + 1)) boots), $NLOGS logs, cut ${DELAY_MIN}-${DELAY_MAX} ms after the appends started${PMV_POWERCUT_UNSAFE:+, UNSAFE initiator: $PMV_POWERCUT_UNSAFE}"
for ((boot = 0; boot <= CUTS; boot++)); do
	run_boot "$boot"
done
echo "powercut totals: boots $t_boots, power cuts $t_cuts, ACK lines kept $t_acked," \
     "acked records verified $t_checks (each acked record, once per later boot)," \
     "records lost $t_lost, torn records rejected $t_torn, unpublished records $t_unpub," \
     "unreadable ACK lines $t_bad, $((SECONDS - start)) s"
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
