#!/usr/bin/env bash
# The power-cut harness's guest (Docs/Reliability.md, "Power loss"): a small
# Linux virtual machine under qemu's software emulation whose power the tests
# cut by killing qemu with SIGKILL.
#
#   Scripts/power-guest.sh build DIR BINARY...   kernel, initramfs and a system disk in DIR
#   Scripts/power-guest.sh disk IMAGE ext4|xfs [MiB]   a new, empty data disk
#   Scripts/power-guest.sh run DIR IMAGE ext4|xfs COMMAND...
#                                                boots the guest (exec qemu: the caller's
#                                                pid is qemu's), which mounts IMAGE at /data
#                                                and runs COMMAND (a binary given to build,
#                                                by its base name, and its arguments)
#                                                (POWER_GUEST_PORT=N: the guest's port 8080
#                                                on 127.0.0.1:N, through qemu's user network)
#   Scripts/power-guest.sh check                 exits 0 when qemu, the kernel, busybox
#                                                and mkfs are installed (prints what is missing)
#
# The guest: Debian's kernel (linux-image-amd64), an initramfs with
# busybox-static and the modules for virtio disks, ext4 and xfs, and a
# read-only system disk holding the binaries with every shared library `ldd`
# names, at their host paths (the guest chroots into it). COMMAND's standard
# output goes to the guest's second serial port, which is qemu's standard
# output; the kernel's console goes to DIR/console.log. The data disk is
# attached with cache=none: what the guest flushed is in the host file, what
# its page cache held is lost with qemu.
set -euo pipefail

usage() { sed -n '2,24p' "$0" >&2; exit 2; }

kernel_version() {
    local vmlinuz
    vmlinuz=$(ls /boot/vmlinuz-* 2>/dev/null | sort -V | tail -1)
    [ -n "$vmlinuz" ] || return 1
    basename "$vmlinuz" | sed 's/^vmlinuz-//'
}

check() {
    local missing=()
    command -v qemu-system-x86_64 >/dev/null || missing+=(qemu-system-x86)
    kernel_version >/dev/null || missing+=(linux-image-amd64)
    [ -x /bin/busybox ] && file_is_static /bin/busybox || missing+=(busybox-static)
    command -v mkfs.ext4 >/dev/null || missing+=(e2fsprogs)
    command -v mkfs.xfs >/dev/null || missing+=(xfsprogs)
    command -v cpio >/dev/null || missing+=(cpio)
    command -v modprobe >/dev/null || missing+=(kmod)
    command -v xz >/dev/null || missing+=(xz-utils)
    if [ ${#missing[@]} -gt 0 ]; then
        echo "missing: ${missing[*]}"
        return 1
    fi
}

file_is_static() { ! ldd "$1" >/dev/null 2>&1; }

build() {
    local dir="$1"
    shift
    [ $# -gt 0 ] || usage
    check >&2 || exit 1
    mkdir -p "$dir"
    local version
    version=$(kernel_version)
    # The kernel uncompressed (an ELF with a PVH entry, which qemu boots
    # directly): decompressing the xz bzImage under emulation took ~4 s a boot.
    local image="/boot/vmlinuz-$version" offset
    offset=$(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "$image" | head -1 | cut -d: -f1 || true)
    rm -f "$dir/vmlinux"
    if [ -n "$offset" ] && tail -c +"$((offset + 1))" "$image" | xz -dcq >"$dir/vmlinux" 2>/dev/null; [ -s "$dir/vmlinux" ] \
        && [ "$(head -c 4 "$dir/vmlinux" | od -An -c | tr -d ' ')" = '177ELF' ]; then
        :
    else
        cp "$image" "$dir/vmlinux"
    fi

    # The initramfs: busybox, the modules in dependency order, /init.
    local initrd="$dir/initrd.root"
    rm -rf "$initrd"
    mkdir -p "$initrd"/{bin,dev,proc,sys,system,modules}
    cp /bin/busybox "$initrd/bin/busybox"
    local order="$initrd/modules/order" module
    : >"$order"
    for module in virtio_pci virtio_blk ext4 xfs virtio_net; do
        modprobe -S "$version" --show-depends "$module" | awk '$1 == "insmod" {print $2}'
    done | awk '!seen[$0]++' | while read -r module; do
        local name
        name=$(basename "$module")
        case "$name" in
            *.xz) xz -dc "$module" >"$initrd/modules/${name%.xz}"; name=${name%.xz} ;;
            *.zst) zstd -qdc "$module" >"$initrd/modules/${name%.zst}"; name=${name%.zst} ;;
            *) cp "$module" "$initrd/modules/$name" ;;
        esac
        echo "$name" >>"$order"
    done
    cat >"$initrd/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
arg() { sed -n "s/.*\bpower\.$1=\([^ ]*\).*/\1/p" /proc/cmdline; }
fs=$(arg fs)
for module in $(cat /modules/order); do
    # xfs takes ~2 s to load under emulation: only when the data disk needs it.
    case "$module" in
        xfs.ko) [ "$fs" = xfs ] || continue ;;
        failover.ko|net_failover.ko|virtio_net.ko) [ "$(arg net)" = 1 ] || continue ;;
    esac
    insmod /modules/$module 2>/dev/null
done
command=$(arg command | tr ',' ' ')
for i in $(seq 1 100); do [ -b /dev/vdb ] && break; sleep 0.05; done
mount -o ro /dev/vda /system || { echo "power-guest: no system disk" >/dev/ttyS1; poweroff -f; }
mount -t devtmpfs devtmpfs /system/dev
mount -t proc proc /system/proc
mount -t "$fs" /dev/vdb /system/data || { echo "power-guest: cannot mount the data disk ($fs)" >/dev/ttyS1; poweroff -f; }
if [ "$(arg net)" = 1 ]; then
    # qemu's user network (restrict=on: nothing leaves qemu); the host reaches
    # the guest's port 8080 through a forward on 127.0.0.1.
    ip link set lo up
    for i in $(seq 1 100); do [ -e /sys/class/net/eth0 ] && break; sleep 0.05; done
    ip link set eth0 up
    ip addr add 10.0.2.15/24 dev eth0
fi
stty -F /dev/ttyS1 raw -echo 2>/dev/null
echo "power-guest: booted $fs" >/dev/ttyS1
chroot /system /bin/$command >/dev/ttyS1 2>&1
echo "power-guest: exit $?" >/dev/ttyS1
sync
umount /system/data
poweroff -f
EOF
    chmod 755 "$initrd/init"
    (cd "$initrd" && find . | cpio -o -H newc --quiet) >"$dir/initrd.cpio"
    rm -rf "$initrd"

    # The system disk: the binaries and their libraries at their host paths.
    local root="$dir/system.root"
    rm -rf "$root"
    mkdir -p "$root"/{bin,dev,proc,data,tmp}
    local binary lib
    for binary in "$@"; do
        cp "$binary" "$root/bin/"
        for lib in $(ldd "$binary" | awk '/=>/ {print $3} /^\t\/lib/ {print $1}'); do
            [ -e "$root$lib" ] && continue
            mkdir -p "$root$(dirname "$lib")"
            cp -L "$lib" "$root$lib"
        done
    done
    # The Swift libraries find ICU data and the like next to themselves; the
    # dynamic loader needs nothing else (no ld.so.cache: ldd's paths are absolute
    # or in the binaries' RUNPATH).
    local size
    size=$(du -sm "$root" | cut -f1)
    rm -f "$dir/system.img"
    mkfs.ext4 -q -F -d "$root" -L system "$dir/system.img" "$((size + 32))M"
    rm -rf "$root"
}

disk() {
    local image="$1" fs="$2" size="${3:-256}"
    rm -f "$image"
    truncate -s "${size}M" "$image"
    case "$fs" in
        ext4) mkfs.ext4 -q -F "$image" ;;
        xfs) mkfs.xfs -q -f "$image" ;;
        *) usage ;;
    esac
}

run() {
    local dir="$1" image="$2" fs="$3"
    shift 3
    [ $# -gt 0 ] || usage
    local command
    command=$(IFS=,; echo "$*")
    # cache=none: writes go to the host file with O_DIRECT and a guest flush
    # is an fdatasync of it; fall back to writeback (also honours flushes)
    # where the host file system has no O_DIRECT (tmpfs).
    local cache=none
    if ! dd if="$image" of=/dev/null bs=4096 count=1 iflag=direct status=none 2>/dev/null; then
        cache=writeback
    fi
    # POWER_GUEST_PORT=N: a network card, the guest's port 8080 forwarded
    # from 127.0.0.1:N (the server-side harness runs ingest-server there).
    local network=() net=0
    if [ -n "${POWER_GUEST_PORT:-}" ]; then
        network=(-netdev "user,id=net0,restrict=on,hostfwd=tcp:127.0.0.1:${POWER_GUEST_PORT}-10.0.2.15:8080"
                 -device virtio-net-pci,netdev=net0)
        net=1
    fi
    exec qemu-system-x86_64 -accel tcg -cpu max -m 768 -smp 1 \
        -display none -monitor none -no-reboot \
        -kernel "$dir/vmlinux" -initrd "$dir/initrd.cpio" \
        -append "console=ttyS0 quiet panic=-1 power.fs=$fs power.net=$net power.command=$command" \
        "${network[@]}" \
        -drive "file=$dir/system.img,format=raw,if=virtio,readonly=on" \
        -drive "file=$image,format=raw,if=virtio,cache=$cache" \
        -serial "file:$dir/console-$$.log" -serial stdio
}

[ $# -gt 0 ] || usage
case "$1" in
    check) check ;;
    build) shift; [ $# -ge 2 ] || usage; build "$@" ;;
    disk) shift; [ $# -ge 2 ] || usage; disk "$@" ;;
    run) shift; [ $# -ge 4 ] || usage; run "$@" ;;
    *) usage ;;
esac
