# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# The verdict bookkeeping a pass of several suites shares (sourced by
# test/verbs/in_guest.sh and test/debian13/in_root.sh): counts in the
# caller's $passed and $failed, one line per verdict.

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
