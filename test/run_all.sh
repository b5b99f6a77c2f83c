#!/usr/bin/env bash
# Runs the whole pmemverbs test suite against a normal build and a
# sanitizer (ASan+UBSan) build, and prints the total as its last line:
# "N passed, N failed".  Usage: test/run_all.sh BUILD_DIR ASAN_BUILD_DIR
set -u

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$1
ASAN_BUILD=$2
passed=0
failed=0

# Adds a result: add PASSED FAILED.
add() {
	passed=$((passed + $1))
	failed=$((failed + $2))
}

# Runs the Criterion unit tests of one build and counts its synthesis line.
run_unit() {
	local label=$1 dir=$2 out synth
	echo "== unit tests ($label)"
	out=$("$dir/prov/pmemverbs/test/pmv_unit" --jobs 1 2>&1)
	printf '%s\n' "$out" | grep -E '^\[(FAIL|----)\]' | head -40
	synth=$(printf '%s\n' "$out" | grep -a 'Synthesis:' | tail -1)
	echo "${synth:-unit tests did not report (crashed?)}"
	if [[ $synth =~ Passing:\ ([0-9]+)\ \|\ Failing:\ ([0-9]+)\ \|\ Crashing:\ ([0-9]+) ]]; then
		add "${BASH_REMATCH[1]}" $((BASH_REMATCH[2] + BASH_REMATCH[3]))
	else
		add 0 1
	fi
}

# Runs the two-process integration tests through pmemverbs on one build.
run_integration() {
	local label=$1 dir=$2 port_base=$3 out last
	echo "== two-process integration tests through pmemverbs ($label)"
	out=$(FI_PROVIDER_PATH=$dir/.libs PMV_PROV=pmemverbs PMV_PROV_RDM=pmemverbs \
	      PMV_PORT_BASE=$port_base \
	      bash "$ROOT/test/integration/run_itests.sh" \
	      "$dir/test/integration/pmv_itest" pmemverbs 2>&1)
	printf '%s\n' "$out"
	last=$(printf '%s\n' "$out" | tail -1)
	if [[ $last =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed ]]; then
		add "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}"
	else
		add 0 1
	fi
}

# Runs the durability tests (oracle, contents, fault, bad input, exit).
run_pmem() {
	local label=$1 dir=$2 port_base=$3 out last
	echo "== durability tests through pmemverbs ($label)"
	out=$(FI_PROVIDER_PATH=$dir/.libs PMV_PORT_BASE=$port_base \
	      bash "$ROOT/test/pmem/run_pmem_tests.sh" \
	      "$dir/test/pmem/pmv_commit_test" 2>&1)
	printf '%s\n' "$out" | grep -v '^PASS'
	last=$(printf '%s\n' "$out" | tail -1)
	if [[ $last =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed ]]; then
		add "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}"
	else
		add 0 1
	fi
}

# Runs libfabric's own fi_pingpong through pmemverbs, data checks on.
run_pingpong() {
	local ep=$1 size=$2 port=$3 srv_out
	srv_out=$(mktemp)
	timeout 60 fi_pingpong -p pmemverbs -e "$ep" -B "$port" -S "$size" \
		-I 200 -c >"$srv_out" 2>&1 &
	local srv=$!
	sleep 0.5
	if timeout 60 fi_pingpong -p pmemverbs -e "$ep" -P "$port" -S "$size" \
		-I 200 -c 127.0.0.1 >/dev/null 2>&1 && wait "$srv"; then
		echo "PASS fi_pingpong -e $ep -S $size"
		add 1 0
	else
		wait "$srv" 2>/dev/null
		echo "FAIL fi_pingpong -e $ep -S $size"; tail -5 "$srv_out"
		add 0 1
	fi
	rm -f "$srv_out"
}

# fi_pmem_probe reports the profile each forced granularity gives a file.
run_probe() {
	local file granularity want got
	file=$(mktemp)
	truncate -s 1M "$file"
	for granularity in page:PAGE cache_line:DMP byte:MHP; do
		want=${granularity#*:}
		got=$(PMEM2_FORCE_GRANULARITY=${granularity%%:*} \
		      "$BUILD/util/fi_pmem_probe" "$file" | awk '/^profile:/ {print $2}')
		if [ "$got" = "$want" ]; then
			echo "PASS fi_pmem_probe ${granularity%%:*} -> $want"
			add 1 0
		else
			echo "FAIL fi_pmem_probe ${granularity%%:*}: want $want, got '$got'"
			add 0 1
		fi
	done
	rm -f "$file"
}

run_unit normal "$BUILD"
echo "== fi_pmem_probe"
run_probe
run_integration normal "$BUILD" 9230
run_pmem normal "$BUILD" 9800
echo "== fi_pingpong through pmemverbs"
export FI_PROVIDER_PATH=$BUILD/.libs
port=9330
for ep in msg rdm; do
	for size in 64 65536; do
		run_pingpong "$ep" "$size" $port
		port=$((port + 1))
	done
done
unset FI_PROVIDER_PATH

# libfabric itself leaks a little at exit; leaks in pmemverbs objects are
# caught by the unit tests, which close everything they open.
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
run_unit sanitizers "$ASAN_BUILD"
run_integration sanitizers "$ASAN_BUILD" 9530
run_pmem sanitizers "$ASAN_BUILD" 10100

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
