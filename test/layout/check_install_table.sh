#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# The README's install table names everything `make install` installs:
# installs BUILD_DIR into a scratch DESTDIR and looks for each file's name
# (a man page by its program's or page's name) in README.md's Install
# section.  Prints one PASS or FAIL line naming what is missing.
#
# usage: check_install_table.sh BUILD_DIR SOURCE_DIR
set -u

[ $# -eq 2 ] || { sed -n '8p' "$0" | sed 's/^# //' >&2; exit 2; }
BUILD=$1
SRC=$2
DEST=$(mktemp -d)
trap 'rm -rf "$DEST"' EXIT

if ! make -s -C "$BUILD" install DESTDIR="$DEST" >"$DEST.log" 2>&1; then
	echo "FAIL install table: make install failed: $(tail -2 "$DEST.log" | tr '\n' ' ')"
	rm -f "$DEST.log"
	exit 1
fi
rm -f "$DEST.log"
section=$(sed -n '/^## Install/,/^## [^I]/p' "$SRC/README.md")
missing=()
count=0
while IFS= read -r f; do
	name=$(basename "$f")
	[[ $f == */man/man* ]] && name=${name%.gz} && name=${name%.[0-9]}
	count=$((count + 1))
	grep -qF -- "$name" <<<"$section" || missing+=("$name")
done < <(find "$DEST" -type f -o -type l | sort)
if [[ $count -gt 0 && ${#missing[@]} -eq 0 ]]; then
	echo "PASS install table: README.md's Install section names all $count installed files"
else
	echo "FAIL install table: README.md's Install section does not name ${missing[*]:-anything (nothing installed)}"
	exit 1
fi
