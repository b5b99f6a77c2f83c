#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# The Debian package (packaging/build_deb.sh) used as a user would: its
# files, its plugin in libfabric's own provider directory, no test-only
# parameter in its `fi_info -e`, pmemverbs.pc giving the header and the
# plugin directory to a program built with pkg-config, the demo
# (examples/pmv_demo) committing through the installed plugin, and the
# examples 01-03 built with their Makefiles and run (examples/run_examples.sh).
#
# usage: run_package_test.sh DEB BUILD_DIR PORT   (ports PORT..PORT+3)
#
# As root, with no libfabric-pmemverbs installed yet, it installs the
# package with dpkg -i, runs with no FI_PROVIDER_PATH (the installed
# libfabric must find the plugin by itself) and removes the package again
# at exit.  Otherwise, or with PMV_TEST_PKG_INSTALL=0, the package is
# unpacked into a scratch root and FI_PROVIDER_PATH names the plugin
# directory inside it.
# Prints PASS/FAIL lines and "N passed, N failed" last.
set -u

[ $# -eq 3 ] || { sed -n '9p' "$0" | sed 's/^# //' >&2; exit 2; }
DEB=$1
BUILD=$(cd "$2" && pwd)
PORT=$3
PKG=libfabric-pmemverbs
ROOTFS=""
scratch=$(mktemp -d)
passed=0
failed=0

result() { # result NAME OK MESSAGE
	if [ "$2" = 0 ]; then echo "PASS $1: $3"; passed=$((passed + 1))
	else echo "FAIL $1: $3"; failed=$((failed + 1)); fi
}

cleanup() {
	[ "${installed:-}" = yes ] && dpkg -r "$PKG" >/dev/null 2>&1
	rm -rf "$scratch"
}
trap cleanup EXIT

# Installs the package (real or in the scratch root) and sets ROOTFS.
install_package() {
	if [ "${PMV_TEST_PKG_INSTALL:-1}" = 1 ] && [ "$(id -u)" = 0 ] &&
	   ! dpkg-query -W "$PKG" >/dev/null 2>&1; then
		dpkg -i "$DEB" >"$scratch/dpkg.log" 2>&1 || return 1
		installed=yes
		ROOTFS=""
		unset FI_PROVIDER_PATH
		return 0
	fi
	dpkg-deb -x "$DEB" "$scratch/root" || return 1
	ROOTFS=$scratch/root
}

# pkg-config on the installed pmemverbs.pc (inside the scratch root, or not).
pc() {
	PKG_CONFIG_PATH=$ROOTFS$(pkg-config --variable=libdir libfabric)/pkgconfig \
	PKG_CONFIG_SYSROOT_DIR=$ROOTFS pkg-config "$@" pmemverbs
}

install_package
result install $? "$(basename "$DEB") installed $([ -n "$ROOTFS" ] && echo "into a scratch root" || echo "with dpkg -i")"

# Every kind of file is in the package.
missing=""
for f in /usr/include/rdma/fi_ext_pmem.h /usr/bin/fi_pmem_probe \
	 /usr/share/man/man7/fi_pmemverbs.7.gz /usr/share/man/man3/fi_ext_pmem.3.gz \
	 /usr/share/man/man1/fi_pmem_probe.1.gz \
	 "$(pkg-config --variable=libdir libfabric)/pkgconfig/pmemverbs.pc"; do
	[ -f "$ROOTFS$f" ] || missing="$missing $f"
done
result contents "$([ -z "$missing" ]; echo $?)" "${missing:+missing:}${missing:-header, tool, man pages and .pc installed}"

# The plugin is in the directory libfabric scans, and the .pc names it.
want=$(pkg-config --variable=libdir libfabric)/libfabric
plugindir=$(pc --variable=plugindir 2>&1)
[ -f "$ROOTFS$want/libpmemverbs-fi.so" ] && [ "$plugindir" = "$ROOTFS$want" ]
result plugindir $? "plugin in $want (libfabric's provider directory); pmemverbs.pc plugindir=$plugindir"
[ -n "$ROOTFS" ] && export FI_PROVIDER_PATH=$ROOTFS$want

# A release package: the test-only parameters do not exist.
params=$(fi_info -e 2>/dev/null | grep -a '^# FI_PMEMVERBS_')
testonly=$(printf '%s\n' "$params" | grep -c 'FAULT_\|ORACLE')
[ -n "$params" ] && [ "$testonly" = 0 ]
result release-params $? "$(printf '%s\n' "$params" | grep -c .) FI_PMEMVERBS_ parameters, $testonly test-only ones"

# A program built with the .pc's cflags finds <rdma/fi_ext_pmem.h>.
printf '#include <rdma/fi_ext_pmem.h>\nint main(void) { return FI_PMEM_METHOD_AGENT == 1 ? 0 : 1; }\n' >"$scratch/t.c"
out=$(cc $(pc --cflags) $(pkg-config --cflags libfabric) "$scratch/t.c" -o "$scratch/t" 2>&1 && "$scratch/t" 2>&1)
result pkg-config-cflags $? "built with \$(pkg-config --cflags pmemverbs)${out:+: $out}"

# The demo commits through the installed plugin (FI_PROVIDER_PATH names it
# in the scratch root; after dpkg -i libfabric must find it by itself).
timeout 60 "$BUILD/examples/pmv_demo" target -p "$PORT" >"$scratch/demo-t" 2>&1 &
tpid=$!
out=$(timeout 60 "$BUILD/examples/pmv_demo" initiator -p "$PORT" 2>&1)
rc=$?
wait $tpid || rc=$?
out="$out $(cat "$scratch/demo-t")"
printf '%s\n' "$out" | grep -q 'durable' && [ $rc = 0 ]
result demo $? "examples/pmv_demo over the installed plugin (exit $rc)$( [ $rc = 0 ] || printf ': %s' "$(printf '%s\n' "$out" | tail -3 | tr '\n' ' ')")"

# The examples, copied, built with their Makefiles (pkg-config on the
# installed pmemverbs.pc) and run through the installed plugin.
out=$(PKG_CONFIG_PATH=$ROOTFS$(pkg-config --variable=libdir libfabric)/pkgconfig \
      PKG_CONFIG_SYSROOT_DIR=$ROOTFS \
      bash "$(dirname "$0")/../../examples/run_examples.sh" "$((PORT + 1))" 2>&1)
printf '%s\n' "$out" | grep '^PASS\|^FAIL'
if [[ $(printf '%s\n' "$out" | tail -1) =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed ]]; then
	passed=$((passed + BASH_REMATCH[1])); failed=$((failed + BASH_REMATCH[2]))
else
	echo "FAIL examples: examples/run_examples.sh did not report: $(printf '%s\n' "$out" | tail -2 | tr '\n' ' ')"
	failed=$((failed + 1))
fi

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
