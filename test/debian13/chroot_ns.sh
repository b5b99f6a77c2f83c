#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# chroot_ns.sh: runs CMD chrooted into ROOT with /proc, /sys, /dev,
# /dev/pts and /dev/shm mounted.  run_debian13.sh starts it under
# "unshare -m --propagation private": the mounts live in that mount
# namespace alone and go with it however the pass ends, killed included,
# so a killed pass cannot leave them on the host for the next one to trip
# on (mount(8) then fails with "sysfs already mounted").
#
# usage: unshare -m --propagation private chroot_ns.sh ROOT CMD [ARG...]
# exit:  CMD's status, or 125 (with a line on stderr) when a mount failed.
set -u
root=$1
shift

# Mounts one file system in ROOT or exits 125 saying which.
must_mount() {
	mount "$@" || { echo "chroot_ns: could not mount ${*: -1}" >&2; exit 125; }
}

must_mount -t proc proc "$root/proc"
must_mount -t sysfs sysfs "$root/sys"
for m in /dev /dev/pts /dev/shm; do
	mkdir -p "$root$m"
	must_mount --bind "$m" "$root$m"
done
exec chroot "$root" "$@"
