# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# The verdict bookkeeping a pass of several suites shares (sourced by
# test/run_all.sh, test/verbs/in_guest.sh, test/debian13/in_root.sh and
# test/idle/run_sread_then_sleep.sh): counts in the caller's $passed and
# $failed, one line per verdict; and the fi_pmem_idle pair the idle checks
# run.

# A section's header, with the seconds since the pass started, after
# $PMV_SECTION_PREFIX (in_root.sh: "debian13: ").
section() {
	echo "== ${PMV_SECTION_PREFIX:-}$* [t+${SECONDS}s]"
}

# report PASS|FAIL NAME [DETAIL]
report() {
	local verdict=$1 name=$2 detail=${3:-}
	if [[ $verdict == PASS ]]; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
	fi
	echo "$verdict $name${detail:+: $detail}"
}

# Adds the "N passed, N failed" last line of a suite's output (a suite
# that did not end with one counts as one failure).
add_suite() {
	local name=$1 out=$2 last
	last=$(printf '%s\n' "$out" | tail -n 1)
	if [[ $last =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed ]]; then
		passed=$((passed + BASH_REMATCH[1]))
		failed=$((failed + BASH_REMATCH[2]))
	else
		report FAIL "$name" "the suite printed no result line (last: '$last')"
	fi
}

# The verdict of the Criterion unit tests' output $1: "PASSED FAILED"
# from its synthesis line, where a test that crashed or exited in its
# setup or teardown (Criterion counts it passed, with a warning) is a
# failure; false if there is no synthesis line.
unit_verdict() {
	local out=$1 synth torn
	synth=$(printf '%s\n' "$out" | grep -a 'Synthesis:' | tail -n 1)
	[[ $synth =~ Passing:\ ([0-9]+)\ \|\ Failing:\ ([0-9]+)\ \|\ Crashing:\ ([0-9]+) ]] ||
		return 1
	torn=$(printf '%s\n' "$out" | grep -ac 'during its setup or teardown')
	echo "$((BASH_REMATCH[1] - torn)) $((BASH_REMATCH[2] + BASH_REMATCH[3] + torn))"
}

# The path of a third-party archive NAME (../shared/ext of the project):
# the first of $PMV_EXT_DIR, ROOT/../shared/ext and /work/shared/ext that
# holds it (a clone elsewhere, a Debian 13 root), or nothing.
pmv_ext_file() {
	local name=$1 root=$2 dir
	for dir in ${PMV_EXT_DIR:+"$PMV_EXT_DIR"} "$root/../shared/ext" \
		/work/shared/ext; do
		[[ -f $dir/$name ]] && { echo "$dir/$name"; return 0; }
	done
	return 1
}

# Runs BUILD's fi_pmem_idle as the target (TARGET_ARGS) on PORT in the
# background, then as the initiator against it on 127.0.0.1
# (INITIATOR_ARGS), each within 120 s, outputs into TOUT and IOUT;
# returns 0 if both exited 0.
# pmv_idle_pair BUILD PORT TOUT IOUT TARGET_ARGS... -- INITIATOR_ARGS...
pmv_idle_pair() {
	local build=$1 port=$2 tout=$3 iout=$4 bin targs=() rc=0
	shift 4
	bin=$build/fabtests/functional/fi_pmem_idle
	while [[ $1 != -- ]]; do targs+=("$1"); shift; done
	shift
	FI_PROVIDER_PATH=$build/.libs timeout 120 "$bin" -B "$port" \
		"${targs[@]}" >"$tout" 2>&1 &
	sleep 0.5
	FI_PROVIDER_PATH=$build/.libs timeout 120 "$bin" -s 127.0.0.1 \
		-B "$port" "$@" >"$iout" 2>&1 || rc=$?
	wait $! || rc=$?
	return $rc
}
