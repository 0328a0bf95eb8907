#!/bin/sh
# dm-flakey on one disk of two (docs/live-cuts.md, "Failing disks"): `--disks 2 --flakey
# error_writes --flakey-disk 2` fails disk 2 only, while disk 1 keeps working. The workload writes
# each commit's log record on disk 1 (fdatasync, then `ack lI`) and its data on disk 2
# (fdatasync, then `ack dI`), and goes on when a write fails. Disk 2 fails after 2 acks (l1, d1):
# from then on every fdatasync on disk 2 fails, so no further `dI` is acked, while every `lI`
# still is (6 of them), and the final image must hold every one of them.
# Usage: multidisk_flakey.sh POWERCUT
set -u
powercut=$1
. "$(dirname "$0")/multidisk_programs.sh"
multidisk_scratch multidisk-flakey

prepare='dd if=/dev/zero of="$POWERCUT_DIR/log" bs=4096 count=8 2>/dev/null &&
dd if=/dev/zero of="$POWERCUT_DIR_2/data" bs=4096 count=8 2>/dev/null && sync'
log='printf "log %04d" $i | dd of="$POWERCUT_DIR/log" bs=4096 seek=$i conv=notrunc,fdatasync 2>/dev/null'
data='printf "dat %04d" $i | dd of="$POWERCUT_DIR_2/data" bs=4096 seek=$i conv=notrunc,fdatasync 2>/dev/null'
workload="$prepare && for i in 1 2 3 4 5 6; do
  $log && echo \"ack l\$i\" >&\$POWERCUT_ACK_FD
  $data && echo \"ack d\$i\" >&\$POWERCUT_ACK_FD
done; true"
checker='for i in 1 2 3 4 5 6; do
[ "$(dd if="$POWERCUT_DIR/log" bs=4096 skip=$i count=1 2>/dev/null | head -c 8)" = "$(printf "log %04d" $i)" ] && echo "have l$i"
[ "$(dd if="$POWERCUT_DIR_2/data" bs=4096 skip=$i count=1 2>/dev/null | head -c 8)" = "$(printf "dat %04d" $i)" ] && echo "have d$i"
done; true'

"$powercut" run --disks 2 --fs ext4 --workload "$workload" --checker "$checker" \
  --flakey error_writes --flakey-after-acks 2 --flakey-disk 2 --json "$out/run.json" --quiet
rc=$?
echo "== powercut run: exit $rc"
python3 - "$out/run.json" "$rc" <<'EOF'
import json, sys
problems = []
if sys.argv[2] != "0":
    problems.append(f"powercut run exited {sys.argv[2]} (want 0: every ack on the final image)")
try:
    f = json.load(open(sys.argv[1]))["run"]["flakey"]
except (OSError, KeyError, TypeError) as e:
    f = {}
    problems.append(f"no flakey report: {e}")
print("flakey:", json.dumps(f))
def want(key, value):
    if f.get(key) != value:
        problems.append(f"{key} is {f.get(key)!r}, want {value!r}")
if f:
    want("disk", 2)
    want("disks", 2)
    want("acks_before_failure", 2)
    # l1..l6 (disk 1 kept working) and d1 only (disk 2 failed after it).
    want("acks", 7)
    want("acks_after_failure", [])
    want("lost_before_failure", [])
    want("violations", 0)
for p in problems:
    print("FAIL:", p)
print("disk 2 failed while disk 1 went on" if not problems else "UNEXPECTED")
sys.exit(1 if problems else 0)
EOF
