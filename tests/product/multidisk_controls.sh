#!/bin/sh
# The issue's three two-disk control programs (docs/run.md, "Several disks"), each recorded once in
# the VM on two recorded disks (log on disk 1, data on disk 2) and replayed under off, on and lying,
# with the verdicts they must give (`powercut run --expect`: exit 0 only when every model matches).
# Usage: multidisk_controls.sh POWERCUT [FS]   (FS: one for both disks or one per disk, ext4,xfs)
set -u
powercut=$1
fs=${2:-ext4}
out=$(mktemp -d /var/tmp/powercut-multidisk.XXXXXX)
trap 'rm -rf "$out"' EXIT

# Both files are preallocated and synced before the first ack, so every later write overwrites
# data in place (no metadata), as the design brief's barrier table assumes.
prepare='dd if=/dev/zero of="$POWERCUT_DIR/log" bs=4096 count=8 2>/dev/null &&
dd if=/dev/zero of="$POWERCUT_DIR_2/data" bs=4096 count=8 2>/dev/null && sync'
block='{ printf "dat %04d" $i; head -c 4088 /dev/zero; }'
# iflag=fullblock: the block reaches dd's pipe in two writes, and a read that returns only the
# first 8 bytes makes GNU dd write that short block without O_DIRECT and then fsync the file
# (coreutils' iwrite), which turned the O_DIRECT control into a synced one on a loaded machine.
data='dd of="$POWERCUT_DIR_2/data" bs=4096 seek=$i count=1 iflag=fullblock'
log='printf "log %04d" $i | dd of="$POWERCUT_DIR/log" bs=4096 seek=$i conv=notrunc,fdatasync 2>/dev/null'
checker='for i in 1 2 3 4 5; do
l=$(dd if="$POWERCUT_DIR/log" bs=4096 skip=$i count=1 2>/dev/null | head -c 8)
d=$(dd if="$POWERCUT_DIR_2/data" bs=4096 skip=$i count=1 2>/dev/null | head -c 8)
[ "$l" = "$(printf "log %04d" $i)" ] && [ "$d" = "$(printf "dat %04d" $i)" ] && echo "have $i"
done; true'

run() {  # name, data write, expectation
  name=$1
  workload="$prepare && for i in 1 2 3 4 5; do $log && $2 && echo \"ack \$i\" >&\$POWERCUT_ACK_FD; done"
  echo "== $name (expect $3)"
  "$powercut" run --disks 2 --fs "$fs" --workload "$workload" --checker "$checker" --cache all \
    --expect "$3" --json "$out/$name.json" --quiet
  rc=$?
  echo "== $name: exit $rc"
  [ $rc -eq 0 ] || failed="$failed $name"
}

failed=""
run correct "$block | $data conv=notrunc,fdatasync 2>/dev/null" \
  off=survives,on=survives,lying=loses
run direct "$block | $data oflag=direct conv=notrunc 2>/dev/null" \
  off=survives,on=loses,lying=loses
run never-synced "$block | $data conv=notrunc 2>/dev/null" \
  off=loses,on=loses,lying=loses
if [ -n "$failed" ]; then
  echo "UNEXPECTED:$failed"
  exit 1
fi
echo "every control as expected"
