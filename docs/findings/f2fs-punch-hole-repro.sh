#!/bin/sh
# Records repro.c's workload on f2fs through dm-log-writes and prints, for every acknowledgement,
# the writes that were not durable when it was given (repro.c, `log`). Needs root, a C compiler,
# losetup, dmsetup, mkfs.f2fs and the kernel's dm-log-writes; uses two sparse files in WORKDIR.
#   sudo sh repro.sh [WORKDIR]     (exit 1: an acknowledgement was given with writes not durable)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
work=${1:-/var/tmp/powercut-fstest-report}
mkdir -p "$work" && cd "$work"
cc -O2 -o repro "$here/repro.c"
truncate -s 268435456 data.img && truncate -s 268435456 log.img
data=$(losetup -f --show data.img)
log=$(losetup -f --show log.img)
cleanup() { umount mnt 2>/dev/null || true; dmsetup remove powercut-lw 2>/dev/null || true
  losetup -d "$data" "$log"; }
trap cleanup EXIT
mkfs.f2fs -f -q "$data"
modprobe dm-log-writes
dd if=/dev/zero of="$log" bs=1M count=1 conv=notrunc status=none
dmsetup create powercut-lw --table "0 $(blockdev --getsz "$data") log-writes $data $log"
mkdir -p mnt
mount /dev/mapper/powercut-lw mnt
./repro run mnt "dmsetup message powercut-lw 0 mark"
umount mnt
dmsetup remove powercut-lw
./repro log "$log"
