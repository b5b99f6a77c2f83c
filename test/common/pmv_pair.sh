# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# shellcheck shell=bash
# What the two-process runners share (sourced by test/pmem/run_pmem_tests.sh,
# test/hostile/run_hostile.sh, test/threads/run_threads.sh and
# test/integration/run_itests.sh): their scratch directories, the wait for a
# process's first line, why a process ended as it did, and the forwarding of
# a role's own PASS/FAIL lines.  The verdicts themselves are pmv_suite.sh's
# report, counted in the caller's $passed and $failed.
#
# The caller sets ROOT (the source tree) before it sources this, and
# PROC_TIMEOUT (seconds a process may run: what exit 124 means) and
# READY_POLLS (0.1 s looks for a first line).

# shellcheck source=pmv_suite.sh
. "$(dirname "${BASH_SOURCE[0]}")/pmv_suite.sh"

# A runner's arguments: BIN [PORT], BIN an executable.  Sets BIN (its
# absolute path), PORT (the second argument, else DEFAULT_PORT; with no
# DEFAULT_PORT, PORT is not taken) and FI_PROVIDER_PATH (default
# $ROOT/build/.libs, exported).  On bad arguments prints USAGE (a sed
# range of the caller's header, or a line) and exits 2.
#   pmv_runner_args USAGE DEFAULT_PORT "$@"
# shellcheck disable=SC2034 # BIN and PORT are the caller's
pmv_runner_args() {
	local usage=$1 default_port=$2 most=2
	shift 2
	[ -n "$default_port" ] || most=1
	if [[ $# -lt 1 || $# -gt $most || ! -x $1 ]]; then
		if [[ $usage =~ ^[0-9]+,[0-9]+p$ ]]; then
			sed -n "$usage" "$0" | sed 's/^# \{0,1\}//' >&2
		else
			echo "usage: $0 $usage" >&2
		fi
		exit 2
	fi
	BIN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
	export FI_PROVIDER_PATH=${FI_PROVIDER_PATH:-$ROOT/build/.libs}
	[ -z "$default_port" ] || PORT=${2:-$default_port}
}

# Makes the scratch directories of runner NAME: WORK in $TMPDIR (outputs)
# and SHM, in /dev/shm where it can be written (region files, oracle
# logs), else WORK itself.
pmv_scratch() {
	WORK=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")
	SHM=$WORK
	if [[ -d /dev/shm && -w /dev/shm ]]; then
		SHM=$(mktemp -d "/dev/shm/$1.XXXXXX")
	fi
}

# Removes pmv_scratch's directories; with KEEP not 0 or empty, keeps them
# and says where they are.
pmv_scratch_remove() {
	local keep=${1:-0}
	if [[ $keep != 0 ]]; then
		if [[ $SHM == "$WORK" ]]; then
			echo "outputs kept in $WORK" >&2
		else
			echo "outputs kept in $WORK and $SHM" >&2
		fi
		return
	fi
	rm -rf "$WORK" "$SHM"
}

# Stops the processes named (ours, by pid; an empty name is none) that
# still run: pmv_stop PID...
pmv_stop() {
	local pid
	for pid in "$@"; do
		[[ -n $pid ]] || continue
		kill "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	done
}

# The line of a stderr file that best explains a failure: the first that
# matches $REASON_RE (by default an error line of the program, a lock
# check, a sanitizer or a crash), else its last line.
reason_of() {
	local line re=${REASON_RE:-'^ERROR|^pmemverbs lock check|^==[0-9]+==ERROR|^SUMMARY: |runtime error|Backtrace|terminated with signal|signal [0-9]'}
	line=$(grep -m1 -E "$re" "$1" 2>/dev/null)
	[[ -n $line ]] || line=$(grep -v '^[[:space:]]*$' "$1" 2>/dev/null | tail -n1)
	echo "${line:-no message}"
}

# Why a process ended as it did, from its exit status RC and stderr ERR:
# describe_rc RC ERR.  $SEGV_HINT, if set, names a likely cause of SIGSEGV.
describe_rc() {
	local rc=$1 err=$2
	case $rc in
	124) echo "timed out after ${PROC_TIMEOUT}s" ;;
	134) echo "crashed (SIGABRT); $(reason_of "$err")" ;;
	139) echo "crashed (SIGSEGV${SEGV_HINT:+: $SEGV_HINT}); $(reason_of "$err")" ;;
	*) echo "exit $rc: $(reason_of "$err")" ;;
	esac
}

# describe_rc of one side: describe_side SIDE RC ERR.
describe_side() {
	echo "$1 $(describe_rc "$2" "$3")"
}

# Waits (bounded: READY_POLLS) for a line starting with WORD in FILE while
# PID lives: wait_line PID FILE [WORD (READY)]; 0 seen, 1 exited, 2 timeout.
wait_line() {
	local pid=$1 file=$2 word=${3:-READY} i
	for ((i = 0; i < READY_POLLS; i++)); do
		grep -q "^$word" "$file" 2>/dev/null && return 0
		kill -0 "$pid" 2>/dev/null || return 1
		sleep 0.1
	done
	return 2
}

# Reports the PASS/FAIL lines of a role's output FILE, their names under
# PREFIX/ (none if PREFIX is empty); sets NFAIL to its FAIL lines.
forward() {
	local prefix=${1:+$1/} file=$2 line
	NFAIL=0
	while IFS= read -r line; do
		case $line in
		PASS\ *) report PASS "$prefix${line#PASS }" ;;
		FAIL\ *) report FAIL "$prefix${line#FAIL }"; NFAIL=$((NFAIL + 1)) ;;
		esac
	done <"$file"
}

# Judges a role's exit from DIR/ROLE.out and DIR/ROLE.err: its FAIL lines,
# or a FAIL of its own for an exit RC other than 0 without any:
# judge_role PREFIX ROLE RC DIR.
judge_role() {
	local prefix=$1 role=$2 rc=$3 dir=$4
	forward "$prefix" "$dir/$role.out"
	if [[ $rc -ne 0 && $NFAIL -eq 0 ]]; then
		report FAIL "$prefix/$role" "$(describe_rc "$rc" "$dir/$role.err")"
	fi
}

# An empty persistence-oracle log at $1 (FI_PMEMVERBS_ORACLE of a test
# build's target; fi_pmem_lat -O): its magic ("VMPELCRO", PMV_ORACLE_MAGIC
# little-endian) and room for its records.
pmv_oracle_log() {
	printf 'VMPELCRO' >"$1" && truncate -s 8M "$1"
}
