#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Builds each example (01-commit, 02-fence-and-immed, 03-profile-query) as
# a user would, from a copy, with its Makefile and pkg-config (the caller's
# PKG_CONFIG_PATH / PKG_CONFIG_SYSROOT_DIR find pmemverbs.pc), then runs
# its target and its initiator over 127.0.0.1: both must print OK.
# FI_PROVIDER_PATH, if set, names the plugin; otherwise libfabric finds
# an installed one.
#
# usage: run_examples.sh PORT_BASE [BUILD_DIR]   (one port per example)
# With BUILD_DIR, runs the examples make built there (examples/NN-*/)
# instead of building copies.
# Prints PASS/FAIL per example, then "N passed, N failed".
set -u

[ $# -eq 1 ] || [ $# -eq 2 ] || { sed -n '10p' "$0" | sed 's/^# //' >&2; exit 2; }
SRC=$(cd "$(dirname "$0")" && pwd)
PORT=$1
BUILT=${2:+$(cd "$2" && pwd)}
WORK=$(mktemp -d)
passed=0
failed=0
trap 'rm -rf "$WORK"' EXIT
cp -r "$SRC/common" "$WORK/"

# Waits (at most 20 s) until file holds a line matching pattern.
await_line() {
	for ((i = 0; i < 200; i++)); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# Builds and runs one example; prints PASS or FAIL with the reason.
run_example() {
	local name=$1 port=$2 dir=$WORK/$1 t trc=0 irc=0
	cp -r "$SRC/$name" "$dir"
	if [[ -n $BUILT ]]; then
		cp "$BUILT/examples/$name/target" "$BUILT/examples/$name/initiator" "$dir/" ||
			{ echo "FAIL example $name: not built in $BUILT"; failed=$((failed + 1)); return; }
	elif ! make -s -C "$dir" >"$dir/make.log" 2>&1; then
		echo "FAIL example $name: make: $(tail -3 "$dir/make.log" | tr '\n' ' ')"
		failed=$((failed + 1))
		return
	fi
	(cd "$dir" && timeout 60 ./target "$port" "$WORK/$name.region") \
		>"$dir/target.out" 2>&1 &
	t=$!
	await_line "$dir/target.out" listening
	(cd "$dir" && timeout 60 ./initiator 127.0.0.1 "$port") \
		>"$dir/initiator.out" 2>&1 || irc=$?
	wait "$t" || trc=$?
	if [[ $trc -eq 0 && $irc -eq 0 ]] && grep -qx OK "$dir/target.out" &&
	   grep -qx OK "$dir/initiator.out"; then
		echo "PASS example $name: $(grep -v '^OK$' "$dir/initiator.out" | tail -1)"
		passed=$((passed + 1))
	else
		echo "FAIL example $name (target exit $trc, initiator exit $irc): $(cat "$dir/target.out" "$dir/initiator.out" | tail -4 | tr '\n' ' ')"
		failed=$((failed + 1))
	fi
}

for ex in 01-commit 02-fence-and-immed 03-profile-query; do
	run_example "$ex" "$PORT"
	PORT=$((PORT + 1))
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
