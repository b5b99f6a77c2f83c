#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Builds the Debian package libfabric-pmemverbs from a source tree: the
# plugin (in libfabric's own provider directory, so an installed libfabric
# finds it with no FI_PROVIDER_PATH), fi_ext_pmem.h, pmemverbs.pc, the man
# pages and the tools, i.e. everything `make install` installs with
# --prefix=/usr.  A release build: no test-only parameters
# (no --enable-fault-injection).  Packaged on its own, as libfabric's
# prov/cxi/libfabric-cxi.spec.in packages a provider.
#
# usage: packaging/build_deb.sh SOURCE_DIR BUILD_DIR OUT_DIR
# Prints the path of the .deb as its last line.  Exit 0, or 1 on a failure.
set -euo pipefail

[ $# -eq 3 ] || { sed -n '11p' "$0" | sed 's/^# //' >&2; exit 2; }
SRC=$(cd "$1" && pwd)
mkdir -p "$2" "$3"
BUILD=$(cd "$2" && pwd)
OUT=$(cd "$3" && pwd)
NAME=libfabric-pmemverbs
LIBDIR=$(pkg-config --variable=libdir libfabric)
ARCH=$(dpkg --print-architecture)

# Configures (once, release options) and builds the tree.
build_release() {
	[ -x "$SRC/configure" ] || (cd "$SRC" && ./autogen.sh >/dev/null)
	if [ ! -f "$BUILD/Makefile" ]; then
		(cd "$BUILD" && "$SRC/configure" --prefix=/usr --libdir="$LIBDIR" \
			--sysconfdir=/etc) >"$BUILD/configure.out"
	fi
	make -C "$BUILD" -j"$(nproc)" all >/dev/null
}

# The Debian packages providing the libraries the installed ELF files need.
shlib_depends() {
	local stage=$1 f lib path pkgs=()
	while IFS= read -r f; do
		for lib in $(objdump -p "$f" 2>/dev/null | awk '$1 == "NEEDED" { print $2 }'); do
			path=$(ldconfig -p | awk -v l="$lib" '$1 == l { print $NF; exit }')
			[ -n "$path" ] || continue
			pkgs+=("$(dpkg -S "$(readlink -f "$path")" 2>/dev/null | head -1 | cut -d: -f1)")
		done
	done < <(find "$stage" -type f \( -name '*.so' -o -perm -u+x \) ! -name '*.sh')
	printf '%s\n' "${pkgs[@]}" | grep -v '^$' | grep -v '^libc6$' | sort -u |
		sed 's/^libfabric1$/libfabric1 (>= 1.17)/' | paste -sd, - | sed 's/,/, /g'
}

# Writes DEBIAN/control for the staged files.
write_control() {
	local stage=$1 version size
	version=$(sed -n 's/^#define PACKAGE_VERSION "\(.*\)"/\1/p' "$BUILD/config.h")
	size=$(du -sk "$stage" | cut -f1)
	mkdir -p "$stage/DEBIAN"
	cat >"$stage/DEBIAN/control" <<CONTROL
Package: $NAME
Version: $version
Architecture: $ARCH
Maintainer: pmemverbs developers <pmemverbs@users.noreply.github.com>
Section: libs
Priority: optional
Installed-Size: $size
Depends: $(shlib_depends "$stage")
Homepage: https://github.com/pmemverbs/pmemverbs
Description: libfabric provider for durable RDMA writes to persistent memory
 pmemverbs is a libfabric provider plugin, layered on the verbs or tcp
 core, whose FI_COMMIT_COMPLETE writes are durable at the target when they
 complete (FI_RMA_PMEM).  This package holds the plugin (found by
 libfabric with no FI_PROVIDER_PATH), <rdma/fi_ext_pmem.h>, pmemverbs.pc,
 the man pages fi_pmemverbs(7) and fi_ext_pmem(3), fi_pmem_probe and the
 pmem fabtests.
CONTROL
}

build_release
STAGE=$BUILD/deb-stage
rm -rf "$STAGE"
make -C "$BUILD" install DESTDIR="$STAGE" >/dev/null
find "$STAGE" -name '*.la' -delete
gzip -9nf "$STAGE"/usr/share/man/man*/*.[0-9]
write_control "$STAGE"
DEB=$OUT/${NAME}_$(sed -n 's/^Version: //p' "$STAGE/DEBIAN/control")_$ARCH.deb
dpkg-deb --root-owner-group --build "$STAGE" "$DEB" >/dev/null
echo "$DEB"
