# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# shellcheck shell=bash
# pmv_bench_lib.sh: what the benchmark scripts share (sourced by
# pmv_commit_lat.sh, pmv_commit_modes.sh, pmv_core_compare.sh,
# pmv_engine_compare.sh, pmv_idle.sh and runfabtests_pmem.sh): their error
# exit, the CPUs of the two processes, the target they may leave running,
# and the time a process may still run.
#
# The caller sets PMV_SCRIPT (its name in messages) and may set
# PMV_DIE_STATUS (die's exit status, default 1); time_left reads BUDGET
# (seconds since the start, bash's SECONDS) and RUN_TIMEOUT.

# Prints "PMV_SCRIPT: message" on stderr and exits.
die() {
	echo "$PMV_SCRIPT: $*" >&2
	exit "${PMV_DIE_STATUS:-1}"
}

# Sets pin_target and pin_initiator to taskset -c 0 and -c 1 where there
# are two CPUs and taskset, else to nothing, saying so if $1 is "say"
# (rather than "quiet").
# shellcheck disable=SC2034 # the caller's
pmv_pin() {
	pin_target=()
	pin_initiator=()
	if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
		pin_target=(taskset -c 0)
		pin_initiator=(taskset -c 1)
	elif [ "${1:-}" = say ]; then
		echo "$PMV_SCRIPT: fewer than 2 CPUs or no taskset: unpinned" >&2
	fi
}

# Kills the target whose pid is target_pid, if one was started (the
# scripts' EXIT trap).
# shellcheck disable=SC2317 # invoked by the trap
pmv_kill_target() {
	[ -z "${target_pid:-}" ] || kill "$target_pid" 2>/dev/null || true
}

# Seconds a process may still run: RUN_TIMEOUT, or what is left of
# BUDGET; 0 once it is spent.
time_left() {
	local left=$((BUDGET - SECONDS))
	if [ "$left" -le 5 ]; then echo 0
	elif [ "$left" -lt "$RUN_TIMEOUT" ]; then echo "$left"
	else echo "$RUN_TIMEOUT"; fi
}
