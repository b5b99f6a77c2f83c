#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Dead and frozen targets (issue 11 item 1): fi_pmem_peerfail's initiator
# keeps commits in flight, reading only its CQ; when it says PEERFAIL-NOW
# the target is killed (SIGKILL: the socket resets) or frozen (SIGSTOP: the
# socket stays open).  Every commit must end (in success or an error
# completion), a new commit must be refused, the endpoint must close, and
# a new connection to a second target must commit.  One PASS|FAIL line per
# case, then "N passed, N failed".
#
# usage: run_peerfail.sh BUILD_DIR [PORT_BASE]
# The initiator runs with FI_PMEMVERBS_PEER_TIMEOUT_MS=2000 (a frozen
# target is declared gone after 2 s without an answer) and
# FI_LOG_LEVEL=warn: its three commits after the failure are refused, and
# "commit: endpoint unusable" is warned once, not once per retry.
set -u

BUILD=$1
PORT=${2:-9380}
BIN=$BUILD/fabtests/functional/fi_pmem_peerfail
export FI_PROVIDER_PATH=${PMV_PLUGIN_DIR:-$BUILD/.libs} # PMV_PLUGIN_DIR: another build's plugin
WORK=$(mktemp -d)
passed=0
failed=0
pids=()

cleanup() {
	local p
	for p in "${pids[@]}"; do
		kill -CONT "$p" 2>/dev/null
		kill -KILL "$p" 2>/dev/null
	done
	wait 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT

# Waits (at most 30 s) until file holds a line matching pattern.
await_line() {
	local file=$1 pattern=$2 i
	for ((i = 0; i < 300; i++)); do
		grep -q "$pattern" "$file" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# One case: gran (target profile), signal (KILL or STOP).
run_case() {
	local gran=$1 sig=$2 name="peerfail-$1-$(tr 'A-Z' 'a-z' <<<"$2")"
	local a b ini out=$WORK/$name.out err=$WORK/$name.err rc warned
	PMEM2_FORCE_GRANULARITY=$gran "$BIN" -B "$PORT" -f "$WORK/a-$name" \
		>/dev/null 2>"$WORK/$name.a" &
	a=$!
	PMEM2_FORCE_GRANULARITY=$gran "$BIN" -B "$((PORT + 1))" \
		-f "$WORK/b-$name" >/dev/null 2>"$WORK/$name.b" &
	b=$!
	pids+=("$a" "$b")
	await_line "$WORK/$name.a" listening && await_line "$WORK/$name.b" listening
	FI_LOG_LEVEL=warn FI_LOG_PROV=pmemverbs \
	FI_PMEMVERBS_PEER_TIMEOUT_MS=2000 timeout 120 "$BIN" -s 127.0.0.1 \
		-B "$PORT" -R "$((PORT + 1))" >"$out" 2>"$err" &
	ini=$!
	if await_line "$out" PEERFAIL-NOW; then
		kill -"$sig" "$a"
	fi
	wait "$ini"
	rc=$?
	kill -CONT "$a" 2>/dev/null
	kill -KILL "$a" "$b" 2>/dev/null
	PORT=$((PORT + 2))
	warned=$(grep -c 'commit: endpoint unusable' "$err")
	if [[ $rc -eq 0 ]] && grep -q 'PASS no-hang' "$err" &&
	   grep -q 'PASS new-connection' "$err" && [[ $warned -eq 1 ]]; then
		echo "PASS $name: $(grep -o 'every commit ended.*' "$err"); 3 refused commits warned once"
		passed=$((passed + 1))
	else
		echo "FAIL $name (initiator exit $rc, 'endpoint unusable' warned $warned times, expected once): $(grep -v 'libfabric:' "$err" | tail -n 3 | tr '\n' ' ')"
		failed=$((failed + 1))
	fi
}

for gran in page cache_line byte; do
	run_case "$gran" KILL
	run_case "$gran" STOP
done
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
