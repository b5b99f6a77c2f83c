#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Two-process libfabric integration tests: runs every pmv_itest test as a
# server/client pair on 127.0.0.1 and prints one PASS|FAIL|SKIP line each.
#
# usage: run_itests.sh BIN PROVIDER_LABEL
#   BIN             path to the pmv_itest binary
#   PROVIDER_LABEL  free text naming the provider under test (for the header)
# env:
#   PMV_PROV        provider for msg endpoints   (default: tcp)
#   PMV_PROV_RDM    provider for rdm endpoints   (default: tcp;ofi_rxm)
#   PMV_ITEST_RDM   0: msg endpoints only (the run says so)
#   PMV_PORT_BASE   first TCP port to use        (default: 9230)
#   PMV_ADDR        address of both sides        (default: 127.0.0.1)
#   PMV_REF_PROV, PMV_REF_PROV_RDM
#                   the core providers the provider under test layers on
#                   (e.g. verbs and 'verbs;ofi_rxm'), for a layered
#                   provider that must behave exactly like its core: a case
#                   that fails is run again through the core, and if the
#                   core fails it for the same reasons (the same failure
#                   lines) it is a SKIP, not a FAIL: the case cannot run
#                   over this core (default: unset, every failure counts)
set -u

if [[ $# -ne 2 ]]; then
	echo "usage: $0 BIN PROVIDER_LABEL" >&2
	exit 2
fi
BIN=$1
LABEL=$2
MSG_PROV=${PMV_PROV:-tcp}
RDM_PROV=${PMV_PROV_RDM:-tcp;ofi_rxm}
PORT=${PMV_PORT_BASE:-9230}
ADDR=${PMV_ADDR:-127.0.0.1}  # the verbs tests in the guest use its eth0 address
REF_MSG_PROV=${PMV_REF_PROV:-}
REF_RDM_PROV=${PMV_REF_PROV_RDM:-}
PROC_TIMEOUT=30 # seconds, per process
READY_POLLS=100 # x 0.1 s waiting for the server's READY line

if [[ ! -x $BIN ]]; then
	echo "not an executable: $BIN" >&2
	exit 2
fi

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../common/pmv_pair.sh
. "$ROOT/test/common/pmv_pair.sh" || { echo "no test/common/pmv_pair.sh" >&2; exit 2; }
pmv_scratch pmv_itests
# a failure's reason is compared with the core's (run_judged): its
# sanitizer summary, else its last line
REASON_RE='^SUMMARY:'
trap 'pmv_scratch_remove' EXIT

passed=0
failed=0
skipped=0
ENV_PREFIX=() # extra environment for both processes of a case

# Sets CMD to the command line of one side, under a hard timeout.
side_cmd() {
	local role=$1 port=$2
	shift 2
	CMD=(env "${ENV_PREFIX[@]}" timeout "$PROC_TIMEOUT" "$BIN" "$@"
		-r "$role" -a "$ADDR" -P "$port")
}

# Records and prints the outcome of one case (or, while JUDGE_ONLY is set,
# only keeps it in VERDICT and REASON).
JUDGE_ONLY=""
report() {
	local verdict=$1 name=$2 reason=${3:-}
	if [[ -n $JUDGE_ONLY ]]; then
		VERDICT=$verdict
		REASON=$reason
		return
	fi
	case $verdict in
	PASS) passed=$((passed + 1)) ;;
	SKIP) skipped=$((skipped + 1)) ;;
	FAIL) failed=$((failed + 1)) ;;
	esac
	if [[ -n $reason ]]; then
		echo "$verdict $name: $reason"
	else
		echo "$verdict $name"
	fi
}

# Why a side skipped: its "SKIP: " line, else reason_of its stderr ERR.
skip_reason() {
	local line
	line=$(grep -m1 '^SKIP: ' "$1" 2>/dev/null) || line=$(reason_of "$1")
	echo "${line#SKIP: }"
}

# Turns the two exit statuses (-1: side not run) into a verdict line.
judge() {
	local name=$1 dir=$2 src=$3 crc=$4
	if [[ $src -le 0 && $crc -eq 0 ]]; then
		report PASS "$name"
	elif [[ ($src -eq 77 || $src -eq -1) && $crc -eq 77 ]]; then
		report SKIP "$name" "$(skip_reason "$dir/client.err")"
	elif [[ $src -eq 77 && $crc -eq 0 ]]; then
		report FAIL "$name" "server skipped but client passed"
	else
		local why=()
		[[ $src -gt 0 ]] && why+=("$(describe_side server "$src" "$dir/server.err")")
		[[ $crc -gt 0 && $crc -ne 77 ]] && why+=("$(describe_side client "$crc" "$dir/client.err")")
		[[ $crc -eq 77 ]] && why+=("client skipped: $(reason_of "$dir/client.err")")
		local IFS=';'
		report FAIL "$name" "${why[*]}"
	fi
}

# run_case TEST EP LABEL_EP CLIENT_ONLY PROVIDER-ARGS...
run_case() {
	local test=$1 ep=$2 label=$3 client_only=$4
	shift 4
	local name="$test $label" port=$PORT dir="$WORK/$test-$label"
	local spid="" src=-1 crc
	PORT=$((PORT + 1))
	mkdir -p "$dir"
	if [[ $client_only == no ]]; then
		side_cmd server "$port" "$@" -e "$ep" -t "$test"
		"${CMD[@]}" >"$dir/server.out" 2>"$dir/server.err" &
		spid=$!
		wait_line "$spid" "$dir/server.out"
		case $? in
		1)
			wait "$spid"
			src=$?
			if [[ $src -eq 0 ]]; then
				report FAIL "$name" "server exited 0 without READY"
				return
			elif [[ $src -ne 77 ]]; then
				judge "$name" "$dir" "$src" -1
				return
			fi
			;;
		2)
			kill "$spid" 2>/dev/null
			wait "$spid"
			report FAIL "$name" "server printed no READY within $((READY_POLLS / 10))s"
			return
			;;
		esac
	fi
	side_cmd client "$port" "$@" -e "$ep" -t "$test"
	"${CMD[@]}" >"$dir/client.out" 2>"$dir/client.err"
	crc=$?
	if [[ -n $spid && $src -eq -1 ]]; then
		wait "$spid"
		src=$?
	fi
	judge "$name" "$dir" "$src" "$crc"
}

# Runs one case and, if it fails and a reference core is named for its
# endpoint type, runs it again through that core: a failure the core shares
# (the same reason, provider names aside) means the case cannot run over
# this core, and it is reported as SKIP.
# run_judged TEST EP CLIENT_ONLY PROV REF_PROV
run_judged() {
	local test=$1 ep=$2 client_only=$3 prov=$4 ref=$5 verdict reason
	JUDGE_ONLY=yes
	run_case "$test" "$ep" "$ep" "$client_only" -p "$prov"
	verdict=$VERDICT reason=$REASON
	if [[ $verdict == FAIL && -n $ref ]]; then
		run_case "$test" "$ep" "$ep" "$client_only" -p "$ref"
		if [[ $VERDICT == FAIL && ${REASON//"$ref"/P} == "${reason//"$prov"/P}" ]]; then
			JUDGE_ONLY=""
			report SKIP "$test $ep" "the core '$ref' fails it the same way ($reason)"
			return
		fi
		reason="$reason [through the core '$ref' alone: $VERDICT${REASON:+: $REASON}]"
	fi
	JUDGE_ONLY=""
	report "$verdict" "$test $ep" "$reason"
}

# Runs TEST on msg and, unless msg-only, on rdm endpoints.
run_test() {
	local test=$1 msg_only=$2 client_only=$3
	run_judged "$test" msg "$client_only" "$MSG_PROV" "$REF_MSG_PROV"
	[[ $msg_only == yes || ${PMV_ITEST_RDM:-1} == 0 ]] ||
		run_judged "$test" rdm "$client_only" "$RDM_PROV" "$REF_RDM_PROV"
}

echo "pmv integration tests: $LABEL (msg: '$MSG_PROV', rdm: '$RDM_PROV'${PMV_ITEST_RDM:+ (PMV_ITEST_RDM=$PMV_ITEST_RDM)}, $ADDR, ports from $PORT)"
[[ -n $REF_MSG_PROV$REF_RDM_PROV ]] &&
	echo "a failing case is run again through the core ('$REF_MSG_PROV', '$REF_RDM_PROV'); a failure the core shares is a SKIP"

#        test      msg-only client-only
run_test sendrecv no no
run_test tagged no no
run_test rma no no
run_test atomic no no
run_test cmdata yes no
run_test shutdown yes no
run_test reject yes no
run_test badaddr no yes
run_test waitobj no no
run_test cntr no no
run_test cqerr no no

# Provider chosen through FI_PROVIDER instead of hints->fabric_attr->prov_name.
ENV_PREFIX=("FI_PROVIDER=$MSG_PROV")
run_case sendrecv msg msg-env-FI_PROVIDER no -n
ENV_PREFIX=()

echo "skipped: $skipped"
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
