#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# vm.sh: runs a command in a QEMU guest booted from this machine's Debian
# kernel, with a soft-RoCE device (rdma_rxe on the guest's eth0, the real
# verbs stack) and optionally persistent memory on an emulated NVDIMM:
#
#   test/verbs/vm.sh [--devdax | --fsdax] [--timeout S] [--disk IMG]
#                    [--nvdimm-file FILE] [--pidfile FILE] -- COMMAND [ARGS...]
#   test/verbs/vm.sh --install   (only install what the guest needs, as root)
#
# --devdax: /dev/dax0.0, a device-DAX character device RDMA can register.
# --fsdax:  an ext4 filesystem mounted with -o dax at /mnt/pmem (Linux will
#           not pin its file pages for RDMA).
# --disk IMG: IMG (a raw image, kept) is the guest's virtio disk /dev/vda.
# --nvdimm-file FILE: the NVDIMM's backing file is FILE, kept from boot to
#           boot (created if missing); implies --devdax, and the namespace
#           is created only if the guest finds no /dev/dax0.0 in its labels.
# --pidfile FILE: QEMU writes its pid to FILE (to cut the guest's power:
#           kill -KILL; vm.sh then exits 124, the guest did not finish).
# The guest's root is this machine's root over 9p, so the command sees this
# build tree; it runs as root in the current directory, with FI_*, PMEM2_*,
# PMV_*, PATH and LD_LIBRARY_PATH passed in.  Its exit status is returned.
# Software emulation: nothing timed here means anything.
set -euo pipefail

nvdimm=none
timeout_s=900
install_only=""
disk=""
nvdimm_file=""
pidfile=""
while [ $# -gt 0 ]; do
	case "$1" in
	--devdax) nvdimm=devdax; shift ;;
	--fsdax) nvdimm=fsdax; shift ;;
	--timeout) timeout_s=$2; shift 2 ;;
	--install) install_only=yes; shift ;;
	--disk) disk=$2; shift 2 ;;
	--nvdimm-file) nvdimm=devdax; nvdimm_file=$2; shift 2 ;;
	--pidfile) pidfile=$2; shift 2 ;;
	--) shift; break ;;
	*) echo "usage: vm.sh [--devdax|--fsdax] [--timeout S] [--disk IMG] [--nvdimm-file F] [--pidfile F] -- CMD..." >&2; exit 2 ;;
	esac
done
[ $# -gt 0 ] || [ -n "$install_only" ] || { echo "vm.sh: no command" >&2; exit 2; }

GUEST_PKGS=(qemu-system-x86 busybox-static linux-image-amd64 iproute2
	    ibverbs-providers rdma-core ndctl e2fsprogs cpio)

# Installs what booting the guest needs (Debian packages, as root).
install_guest_packages() {
	local missing=() pkg
	for pkg in "${GUEST_PKGS[@]}"; do
		dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null |
			grep -q 'install ok installed' || missing+=("$pkg")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	echo "vm.sh: installing ${missing[*]}" >&2
	apt-get update -qq >/dev/null 2>&1 || true
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

# Extracts one kernel module, decompressed, into a directory.
copy_module() {
	local kver=$1 name=$2 dir=$3 file
	file=$(modinfo -k "$kver" -n "$name")
	case "$file" in
	*.xz) xz -dc "$file" >"$dir/$name.ko" ;;
	*.zst) zstd -dcq "$file" >"$dir/$name.ko" ;;
	*) cp "$file" "$dir/$name.ko" ;;
	esac
}

# Builds (once per kernel) an initramfs that mounts the host root over 9p
# and runs the script named on the kernel command line in a chroot.
build_initramfs() {
	local kver=$1 dir=$2 mods m
	mods="virtio_ring virtio virtio_pci_legacy_dev virtio_pci_modern_dev virtio_pci netfs fscache 9pnet 9pnet_virtio 9p"
	[ -f "$dir/initramfs.gz" ] && return 0
	mkdir -p "$dir/root/bin" "$dir/root/mod" "$dir/root/mnt" "$dir/root/proc" \
		 "$dir/root/sys" "$dir/root/dev"
	cp /bin/busybox "$dir/root/bin/"
	for m in $mods; do copy_module "$kver" "$m" "$dir/root/mod"; done
	cat >"$dir/root/init" <<INIT
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for m in $mods; do insmod /mod/\$m.ko; done
mount -t 9p -o trans=virtio,version=9p2000.L,msize=524288 hostroot /mnt || { echo "PMV-GUEST-EXIT 125"; poweroff -f; }
mount -t proc proc /mnt/proc; mount -t sysfs sys /mnt/sys; mount -t devtmpfs dev /mnt/dev
mkdir -p /mnt/dev/shm /mnt/dev/pts; mount -t tmpfs shm /mnt/dev/shm; mount -t devpts pts /mnt/dev/pts
script=\$(sed -n 's/.*pmvscript=\([^ ]*\).*/\1/p' /proc/cmdline)
chroot /mnt /bin/bash "\$script"
echo "PMV-GUEST-EXIT \$?"
poweroff -f
INIT
	chmod +x "$dir/root/init"
	(cd "$dir/root" && find . | cpio -o -H newc 2>/dev/null | gzip >"$dir/initramfs.gz")
}

# Writes the script the guest runs: devices up, environment, the command.
write_guest_script() {
	local out=$1 kv
	shift
	{
		echo 'set -e'
		echo 'modprobe virtio_net; modprobe crc32_generic; modprobe rdma_rxe; modprobe ib_uverbs; modprobe rdma_ucm'
		echo 'ip link set lo up; ip link set eth0 up; ip addr add 10.0.2.15/24 dev eth0'
		echo 'rdma link add rxe0 type rxe netdev eth0'
		[ -z "$disk" ] || echo 'modprobe virtio_blk'
		case $nvdimm in
		fsdax)
			echo 'modprobe nfit; modprobe nd_pmem; modprobe ext4'
			echo 'ndctl create-namespace -f -e namespace0.0 -m fsdax >/dev/null 2>&1'
			echo 'mkfs.ext4 -q -F -b 4096 /dev/pmem0; mkdir -p /mnt/pmem; mount -o dax /dev/pmem0 /mnt/pmem' ;;
		devdax)
			echo 'modprobe nfit; modprobe nd_pmem; modprobe dax_pmem; modprobe device_dax 2>/dev/null || true'
			if [ -n "$nvdimm_file" ]; then # a kept NVDIMM: its labels hold the namespace
				echo 'for i in $(seq 50); do test -c /dev/dax0.0 && break; sleep 0.1; done'
				echo 'test -c /dev/dax0.0 || ndctl create-namespace -f -e namespace0.0 -m devdax >/dev/null 2>&1; test -c /dev/dax0.0'
			else
				echo 'ndctl create-namespace -f -e namespace0.0 -m devdax >/dev/null 2>&1; test -c /dev/dax0.0'
			fi ;;
		esac
		echo 'export FI_UNIVERSE_SIZE=16   # rxe CQs are smaller than ofi_rxm defaults'
		while IFS= read -r -d '' kv; do
			case "$kv" in FI_*=*|PMEM2_*=*|PMV_*=*|PATH=*|LD_LIBRARY_PATH=*|CI=*) printf 'export %q\n' "$kv" ;; esac
		done < <(env -0)
		echo 'set +e'
		printf 'cd %q\n' "$PWD"
		printf '%q ' "$@"
		echo
	} >"$out"
}

install_guest_packages
[ -z "$install_only" ] || exit 0
kver=$(ls /boot/vmlinuz-* | sort -V | tail -n 1 | sed 's|/boot/vmlinuz-||')
cache=${PMV_VM_CACHE:-/var/tmp/pmemverbs-vm}/$kver
work=$(mktemp -d /var/tmp/pmemverbs-vm.XXXXXX)
trap 'rm -rf "$work"' EXIT
build_initramfs "$kver" "$cache"
write_guest_script "$work/guest.sh" "$@"

qemu=(qemu-system-x86_64 -machine pc -m 2048 -smp 2 -nographic -no-reboot
      -kernel "/boot/vmlinuz-$kver" -initrd "$cache/initramfs.gz"
      -append "console=ttyS0 quiet panic=-1 pmvscript=$work/guest.sh"
      -virtfs "local,path=/,mount_tag=hostroot,security_model=passthrough,id=hr,multidevs=remap"
      -nic user,model=virtio-net-pci)
if [ $nvdimm != none ]; then
	nvimg=${nvdimm_file:-$work/nvdimm.img}
	[ -e "$nvimg" ] || truncate -s 524416K "$nvimg" # 512 MiB region, 128 KiB labels
	qemu[2]="pc,nvdimm=on"
	qemu[4]="2048M,slots=2,maxmem=3072M"
	qemu+=(-object "memory-backend-file,id=nv,share=on,mem-path=$nvimg,size=524416K"
	       -device nvdimm,id=nvdimm0,memdev=nv,label-size=128K)
fi
# A kept disk: what the guest wrote to it survives a kill of QEMU (the
# host keeps the image's page cache); what was only in the guest's page
# cache does not.
[ -z "$disk" ] || qemu+=(-drive "file=$disk,format=raw,if=virtio,cache=writeback")
[ -z "$pidfile" ] || qemu+=(-pidfile "$pidfile")
# The serial console sometimes carries NUL bytes: dropped (tr), and grep
# -a, so that it never switches to "binary file matches" and swallows the
# rest of the guest's output.
timeout "$timeout_s" "${qemu[@]}" </dev/null 2>&1 | tee "$work/console.log" |
	tr -d '\000' |
	sed -u -e 's/\x1bc//g' -e 's/\x1b\[[0-9;?]*[a-zA-Z]//g' -e '/^\s*$/d' |
	grep -a --line-buffered -v -E '^(SeaBIOS|iPXE|Press Ctrl-B|Booting from ROM|No TPM handle|failed to open file /etc/ndctl|\[ *[0-9.]+\] reboot: Power down|PMV-GUEST-EXIT )' || true
status=$(sed -n 's/.*PMV-GUEST-EXIT \([0-9]*\).*/\1/p' "$work/console.log" | tail -n 1)
[ -n "$status" ] || { echo "vm.sh: the guest did not finish (timeout or boot failure)" >&2; exit 124; }
exit "$status"
