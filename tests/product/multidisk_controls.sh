#!/bin/sh
# The issue's three two-disk control programs (docs/run.md, "Several disks"), each recorded once in
# the VM on two recorded disks (log on disk 1, data on disk 2) and replayed under off, on and lying,
# with the verdicts they must give (`powercut run --expect`: exit 0 only when every model matches).
# Usage: multidisk_controls.sh POWERCUT [FS]   (FS: one for both disks or one per disk, ext4,xfs)
set -u
powercut=$1
fs=${2:-ext4}

. "$(dirname "$0")/multidisk_programs.sh"
multidisk_scratch multidisk
checker=$(multidisk_checker "1 2 3 4 5")
block=$multidisk_block
data=$multidisk_data

run() {  # name, data write, expectation
  name=$1
  workload=$(multidisk_workload "1 2 3 4 5" "$2")
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
