#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Every file of the source tree names its licence (libfabric's dual
# BSD-2-Clause / GPL-2.0, see COPYING) with an SPDX-License-Identifier
# line, so that the provider can be distributed and proposed upstream.
# Exempt: the fuzzer's corpus (raw inputs), images, empty placeholders.
# Usage: check_spdx.sh [SOURCE_DIR]; prints PASS or FAIL and the files.
set -u
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$root" || exit 2

# The tracked files in a git checkout, else every file but build trees.
list_files() {
	if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		git ls-files
	else
		find . -type f ! -path './.git/*' ! -path './build*' \
			! -path './results/*' | sed 's|^\./||'
	fi
}

missing=()
while IFS= read -r f; do
	case $f in
	test/fuzz/corpus/*|*.png) continue ;;
	esac
	[ -s "$f" ] || continue
	grep -q 'SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only' "$f" ||
		missing+=("$f")
done < <(list_files)

if [ ${#missing[@]} -eq 0 ]; then
	echo "PASS spdx: every file names its licence (SPDX-License-Identifier)"
	exit 0
fi
echo "FAIL spdx: ${#missing[@]} files without an SPDX-License-Identifier line: ${missing[*]}"
exit 1
