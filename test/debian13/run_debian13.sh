#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# run_debian13.sh: the Debian 13 pass.  Builds and tests pmemverbs against
# libfabric 2.1 (gcc 14, libpmem2 1.13) from Debian's own trixie packages,
# in a chroot made with debootstrap from the Debian mirror this machine's
# apt uses.  The root is cached outside the repository (rebuilt when its
# stamp, the suite, mirror and package list, differs), the source tree is
# copied in, and test/debian13/chroot_ns.sh mounts /proc, /sys, /dev,
# /dev/pts and /dev/shm in a mount namespace of the pass's own (unshare -m),
# so that no exit, not even a kill, leaves them mounted on the host; mounts
# that an older, killed pass left under the root are taken down first.
# test/debian13/in_root.sh then builds with
# -Werror and runs the unit tests, fi_info, the demo, the durability suite
# (oracle; MSG, and RDM with PMV_SUITE=rdm), hostile, threads, the crash
# loop, fi_pingpong, the integration tests, upstream fabtests 2.1 and
# Sandia OpenSHMEM's own tests (test/sos/run_sos.sh).  A root that
# cannot be made (mirror unreachable, debootstrap failing) is a FAIL with
# the reason, never a skip.  The last line is "N passed, N failed".
#
# usage: test/debian13/run_debian13.sh [--bench OUT_DIR | --fabtests] [PORT_BASE]
#        (as root; default 28000, uses PORT_BASE .. PORT_BASE+1546, +1700 and +2400 on
#        127.0.0.1).  --bench: the benchmarks of ./run bench-deb13 instead
#        of the tests (in_root.sh bench); their results go to OUT_DIR.
#        --fabtests: the build and upstream fabtests 2.1 alone (in_root.sh
#        fabtests, ports PORT_BASE .. +99).  The pass copies
#        ../shared/ext/fabtests-2.1.0.tar.gz into the root for them, and
#        sos-1.5.3-with-tests.tar.gz for the SOS tests (+1000 .. +1499).
# environment: PMV_DEBIAN13_ROOT   where the root is cached
#                                  (default /var/cache/pmemverbs/trixie-root)
#              PMV_DEBIAN13_MIRROR the mirror (default: apt's Debian URI here)
#              PMV_DEBIAN13_CRASH_CYCLES crash loop cycles (default 48: 4 per stream)
#              PMV_DEBIAN13_SOS_ALL 1: every SOS test of test/sos/tests.list
#                                  (default: every sixth, about 2 minutes)
#              PMV_BENCH_PARTS     with --bench, the parts to run among
#                                  core_compare core_compare_rdm
#                                  commit_modes (default: all)
set -u

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../common/pmv_suite.sh
. "$ROOT/test/common/pmv_suite.sh" # pmv_ext_file
BENCH_OUT=
MODE=
if [[ ${1:-} == --bench ]]; then
	[[ -n ${2:-} ]] || { echo "usage: $0 [--bench OUT_DIR | --fabtests] [PORT_BASE]" >&2; exit 2; }
	BENCH_OUT=$2
	MODE=bench
	shift 2
elif [[ ${1:-} == --fabtests ]]; then
	MODE=fabtests
	shift
fi
PORT_BASE=${1:-28000}
CACHE=${PMV_DEBIAN13_ROOT:-/var/cache/pmemverbs/trixie-root}
SUITE=trixie
PKGS=(gcc make autoconf automake libtool pkg-config libfabric-dev
      libfabric-bin libibverbs-dev librdmacm-dev libpmem2-dev
      libcriterion-dev libisal-dev procps iproute2 e2fsprogs)
IN_SRC=/work/pmemverbs        # the copy of the tree, inside the root
IN_BUILD=/work/pmemverbs-build
IN_EXT=/work/shared/ext       # what of ../shared/ext the root needs
EXT_FILES=(fabtests-2.1.0.tar.gz sos-1.5.3-with-tests.tar.gz)
START=$SECONDS

fail() {
	echo "FAIL debian13: $*"
	echo "0 passed, 1 failed"
	exit 1
}

# The Debian mirror apt uses on this machine (deb822 or one-line sources).
mirror() {
	local uri
	[[ -n ${PMV_DEBIAN13_MIRROR:-} ]] && { echo "$PMV_DEBIAN13_MIRROR"; return; }
	uri=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
	      awk '/^URIs:/ && $2 !~ /security/ { print $2; exit }')
	[[ -z $uri ]] && uri=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
	      awk '$1 == "deb" && $2 ~ /debian/ && $2 !~ /security/ { print $2; exit }')
	echo "${uri:-http://deb.debian.org/debian}"
}

# Makes the root with debootstrap unless the cached one has this stamp.
make_root() {
	local stamp log t0=$SECONDS
	stamp="$SUITE minbase $(mirror) ${PKGS[*]}"
	if [[ -f $CACHE/.pmv-stamp && $(cat "$CACHE/.pmv-stamp") == "$stamp" ]]; then
		echo "debian13: cached root $CACHE ($SUITE, libfabric $(chroot "$CACHE" pkg-config --modversion libfabric 2>/dev/null))"
		return 0
	fi
	if ! command -v debootstrap >/dev/null; then
		(apt-get update -q && DEBIAN_FRONTEND=noninteractive \
			apt-get install -y -q debootstrap) >/dev/null 2>&1 ||
			fail "debootstrap is not installed and apt-get could not install it"
	fi
	echo "debian13: making the $SUITE root in $CACHE from $(mirror) (debootstrap, minbase)"
	mkdir -p "$(dirname "$CACHE")"
	rm -rf "$CACHE.tmp"
	log=$(mktemp)
	local inc
	inc=$(IFS=,; echo "${PKGS[*]}")
	if ! nice unshare -m --propagation private debootstrap --variant=minbase --include="$inc" "$SUITE" \
	     "$CACHE.tmp" "$(mirror)" >"$log" 2>&1; then
		tail -n 5 "$log"
		rm -rf "$CACHE.tmp" "$log"
		fail "debootstrap could not make the $SUITE root from $(mirror) (registry unreachable or a package missing: see above)"
	fi
	rm -f "$log"
	echo "$stamp" >"$CACHE.tmp/.pmv-stamp"
	rm -rf "$CACHE"
	mv "$CACHE.tmp" "$CACHE"
	echo "debian13: root made in $((SECONDS - t0)) s"
}

# Takes down mounts under the root (or its half-made .tmp) that a pass
# killed before its cleanup ran left on the host, as passes did before they
# mounted in a namespace of their own: mounting over them fails, and
# make_root's rm -rf would walk into them.  Run with the root's lock held.
umount_leftovers() {
	local t
	findmnt -rn -o TARGET |
		awk -v a="$CACHE/" -v b="$CACHE.tmp/" 'index($0, a) == 1 || index($0, b) == 1' |
		sort -r | while read -r t; do
			echo "debian13: unmounting $t, left by a pass that was killed"
			umount -l "$t" || return 1
		done
}

# Removes the copy of the tree from the root (trap EXIT).
# shellcheck disable=SC2317 # invoked by the trap
cleanup() {
	rm -rf "${CACHE:?}$IN_SRC" "${CACHE:?}$IN_BUILD" "${CACHE:?}$IN_BUILD.log" \
	       "${CACHE:?}$IN_EXT"
}

# Copies the source tree into the root (no .git, no build trees, no results).
copy_tree() {
	rm -rf "${CACHE:?}$IN_SRC" "${CACHE:?}$IN_BUILD"
	mkdir -p "$CACHE$IN_SRC"
	tar -C "$ROOT" --exclude=./.git --exclude='./build*' --exclude=./results \
	    -cf - . | tar -C "$CACHE$IN_SRC" -xf - || return 1
	copy_ext
}

# Copies EXT_FILES from ../shared/ext into the root (one missing there is
# left out: the suite that needs it fails for it).
copy_ext() {
	local f p
	mkdir -p "$CACHE$IN_EXT" || return 1
	for f in "${EXT_FILES[@]}"; do
		p=$(pmv_ext_file "$f" "$ROOT") || continue
		cp "$p" "$CACHE$IN_EXT/" || return 1
	done
	return 0
}

if [[ $(id -u) -ne 0 ]]; then
	fail "needs root (debootstrap, chroot, mounts)"
fi
# One pass at a time per cached root (the copy of the tree lives in it).
mkdir -p "$(dirname "$CACHE")" && exec 9>"$CACHE.lock" ||
	fail "cannot create $CACHE.lock"
flock -w 3600 9 || fail "another Debian 13 pass held the root's lock for an hour"
umount_leftovers || fail "could not unmount what a killed pass left mounted under $CACHE"
make_root
trap cleanup EXIT
copy_tree || fail "could not copy the tree into $CACHE$IN_SRC"
t0=$SECONDS
out=$(unshare -m --propagation private "$ROOT/test/debian13/chroot_ns.sh" "$CACHE" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
      HOME=/root LANG=C.UTF-8 TMPDIR=/tmp \
      PMV_DEBIAN13_CRASH_CYCLES="${PMV_DEBIAN13_CRASH_CYCLES:-48}" \
      PMV_BENCH_PARTS="${PMV_BENCH_PARTS:-}" \
      PMV_DEBIAN13_SOS_ALL="${PMV_DEBIAN13_SOS_ALL:-0}" \
      bash "$IN_SRC/test/debian13/in_root.sh" "$IN_SRC" "$IN_BUILD" "$PORT_BASE" \
      $MODE 2>&1)
rc=$?
printf '%s\n' "$out" | sed '$d'
if [[ -n $BENCH_OUT && -d $CACHE$IN_BUILD/results ]]; then
	mkdir -p "$BENCH_OUT" && cp -r "$CACHE$IN_BUILD/results/." "$BENCH_OUT/" &&
		echo "debian13: benchmark results in $BENCH_OUT"
fi
last=$(printf '%s\n' "$out" | tail -n 1)
[[ $rc -eq 125 ]] && fail "could not mount /proc, /sys, /dev, /dev/pts or /dev/shm in $CACHE ($last)"
echo "debian13: build and tests in the root $((SECONDS - t0)) s, whole pass $((SECONDS - START)) s"
if [[ $last =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
	echo "$last"
	[[ ${BASH_REMATCH[2]} -eq 0 ]]
	exit
fi
echo "FAIL debian13: in_root.sh printed no result line (last: '$last')"
echo "0 passed, 1 failed"
exit 1
