#!/bin/sh
# Cost per commit with two recorded disks against one (docs/results.md, "Several disks"): the same
# program (a log record fdatasync'ed, then a data block fdatasync'ed, then the ack) recorded once
# with both files on one disk and once with the log on disk 1 and the data on disk 2, interleaved
# ROUNDS times (machines drift 2-3x over minutes: compare runs side by side). Prints, per run, the
# workload's own time as the recording host saw it (`workload` phase) and the time per commit.
# Usage: multidisk_cost.sh POWERCUT [COMMITS] [ROUNDS]
set -u
powercut=$1
commits=${2:-100}
rounds=${3:-3}
out=$(mktemp -d /var/tmp/powercut-multidisk-cost.XXXXXX)
trap 'rm -rf "$out"' EXIT
checker='true'
workload() {  # data directory variable
  echo "dd if=/dev/zero of=\"\$POWERCUT_DIR/log\" bs=4096 count=$((commits + 1)) 2>/dev/null &&
dd if=/dev/zero of=\"\$$1/data\" bs=4096 count=$((commits + 1)) 2>/dev/null && sync &&
i=1; while [ \$i -le $commits ]; do
printf 'log %04d' \$i | dd of=\"\$POWERCUT_DIR/log\" bs=4096 seek=\$i conv=notrunc,fdatasync 2>/dev/null &&
printf 'dat %04d' \$i | dd of=\"\$$1/data\" bs=4096 seek=\$i conv=notrunc,fdatasync 2>/dev/null &&
echo \"ack \$i\" >&\$POWERCUT_ACK_FD; i=\$((i + 1)); done"
}
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
r=1
while [ $r -le $rounds ]; do
  for disks in 1 2; do
    var=POWERCUT_DIR
    [ $disks -eq 2 ] && var=POWERCUT_DIR_2
    "$powercut" run --disks $disks --workload "$(workload $var)" --checker "$checker" --cache off \
      --points acks --quiet > "$out/run.txt" 2>&1
    w=$(grep -o 'workload [0-9.]* s' "$out/run.txt" | head -1 | cut -d' ' -f2)
    echo "round $r disks $disks: workload ${w} s for $commits commits: $(echo "$w $commits" | awk '{printf "%.2f ms/commit", 1000*$1/$2}')"
  done
  r=$((r + 1))
done
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
