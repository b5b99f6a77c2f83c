# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# run_all_guest.sh: what test/run_all.sh runs in or around a QEMU guest and
# a killed target: preparing the guest, the verbs-core boots (devdax,
# fsdax), the crash loop and the power cuts.  Sourced by test/run_all.sh;
# uses its ROOT, BUILD, VERBS_ONLY, add and add_suite (pmv_suite.sh).

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
	section "verbs core in a QEMU guest ($mode): soft-RoCE rxe0, emulated NVDIMM"
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
	section "crash loop: SIGKILL of the target, restart, recovery ($label, $cycles cycles)"
	out=$(PMV_CRASH_CYCLES=$cycles PMV_CRASH_RESTART_EVERY=$every \
	      bash "$ROOT/test/crash/run_crash.sh" "$dir" "$port_base" 2>&1)
	printf '%s\n' "$out" | grep -a -v '^PASS'
	add_suite "${FUNCNAME[0]}" "$out"
}

# Power cuts (issue 11 item 4): the QEMU guest killed at random points
# while its initiators append to logs on a virtio disk (PAGE) and on
# device-DAX, rebooted on the same images, every acknowledged append
# checked (test/crash/run_powercut.sh).  A boot that fails is a FAIL.
run_powercut() {
	local cuts=$1 out start=$SECONDS
	section "power cuts of the QEMU guest ($cuts cuts): virtio disk (PAGE) and device-DAX"
	guest_ready powercut || return
	out=$(bash "$ROOT/test/crash/run_powercut.sh" "$BUILD" "$cuts" 2>&1)
	printf '%s\n' "$out" | grep -a -v '^PASS'
	add_suite "${FUNCNAME[0]}" "$out"
	echo "(power cuts: $((SECONDS - start)) s, software emulation)"
}
