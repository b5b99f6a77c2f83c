#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Configuration errors a user sees (issue 28): with an invalid
# FI_PMEMVERBS_* value, pmemverbs offers no endpoint instead of running
# otherwise than asked; libfabric prints nothing unless FI_LOG_LEVEL is set,
# so with FI_LOG_LEVEL=warn the provider's warning must name the parameter,
# and the tools we ship (fi_pmem_probe, the demo, an example) must fail and
# tell the user to set FI_LOG_LEVEL=warn.  One PASS|FAIL line per check,
# then "N passed, N failed".
#
# usage: run_config_errors.sh BUILD_DIR PORT   (PORT: nothing listens on it)
set -u

[ $# -eq 2 ] || { sed -n '11p' "$0" | sed 's/^# //' >&2; exit 2; }
BUILD=$(cd "$1" && pwd)
PORT=$2
. "$(dirname "$0")/../common/pmv_suite.sh"
export FI_PROVIDER_PATH=$BUILD/.libs
passed=0
failed=0
FILE=$(mktemp)
OUT=$(mktemp)
trap 'rm -f "$FILE" "$OUT"' EXIT
truncate -s 1M "$FILE"
HINT='set FI_LOG_LEVEL=warn to see why'

# fi_info finds no pmemverbs entry; FI_LOG_LEVEL=warn shows the warning.
check_fi_info() {
	local setting=$1 param=${1%%=*} rc=0
	env "$setting" timeout 30 fi_info -p pmemverbs >"$OUT" 2>&1 || rc=$?
	if [[ $rc -ne 0 ]] && ! grep -q '^provider: pmemverbs' "$OUT"; then
		report PASS "$setting: fi_info -p pmemverbs finds nothing (exit $rc)"
	else
		report FAIL "$setting: fi_info -p pmemverbs" "exit $rc, $(grep -c '^provider:' "$OUT") entries"
	fi
	env "$setting" FI_LOG_LEVEL=warn timeout 30 fi_info -p pmemverbs >"$OUT" 2>&1
	if grep -q "pmemverbs:.*<warn> $param=" "$OUT"; then
		report PASS "$setting: FI_LOG_LEVEL=warn shows pmemverbs's warning"
	else
		report FAIL "$setting: FI_LOG_LEVEL=warn" "no pmemverbs warning naming $param: $(grep pmemverbs "$OUT" | head -2 | tr '\n' ' ')"
	fi
}

# A tool fails (exit != 0) and its message tells to set FI_LOG_LEVEL=warn.
check_tool() {
	local setting=$1 name=$2 rc=0
	shift 2
	env "$setting" timeout 30 "$@" >"$OUT" 2>&1 || rc=$?
	if [[ $rc -ne 0 ]] && grep -qF "$HINT" "$OUT"; then
		report PASS "$setting: $name fails and says '$HINT'"
	else
		report FAIL "$setting: $name" "exit $rc: $(tail -2 "$OUT" | tr '\n' ' ')"
	fi
}

for setting in FI_PMEMVERBS_CORE_PROV=bogus FI_PMEMVERBS_METHOD=read-flush \
	       FI_PMEMVERBS_WSP=maybe FI_PMEMVERBS_SCOPE_GAP=-1; do
	check_fi_info "$setting"
	check_tool "$setting" fi_pmem_probe "$BUILD/util/fi_pmem_probe" "$FILE"
	check_tool "$setting" "pmv_demo initiator" "$BUILD/examples/pmv_demo" \
		initiator -a 127.0.0.1 -p "$PORT"
	check_tool "$setting" "example 01-commit initiator" \
		"$BUILD/examples/01-commit/initiator" 127.0.0.1 "$PORT"
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
