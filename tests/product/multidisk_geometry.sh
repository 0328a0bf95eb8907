#!/bin/sh
# Two recorded disks of different geometry (docs/run.md, "Several disks"): disk 1 512e (512-byte
# logical, 4 KiB physical sectors), disk 2 4kn (4 KiB logical and physical). The guest must see
# each disk's own sectors (the workload exits non-zero otherwise), the manifest must record them,
# and the correct two-disk program (log on disk 1, data on disk 2, each with fdatasync) must
# record and replay: it survives off and on (`--expect`: exit 0 only when both match).
# Usage: multidisk_geometry.sh POWERCUT
set -u
powercut=$1

# The device under a folder and its logical sector as the guest kernel reports it.
sectors='dev=$(findmnt -n -o SOURCE --target "$1") && blockdev --getss "$dev"'
check_geometry="[ \"\$(sh -c '$sectors' - \"\$POWERCUT_DIR\")\" = 512 ] &&
[ \"\$(sh -c '$sectors' - \"\$POWERCUT_DIR_2\")\" = 4096 ]"
. "$(dirname "$0")/multidisk_programs.sh"
multidisk_scratch multidisk-geometry
workload=$(multidisk_workload "1 2 3" \
  "$multidisk_block | $multidisk_data conv=notrunc,fdatasync 2>/dev/null" "$check_geometry")
checker=$(multidisk_checker "1 2 3")

"$powercut" run --disks 2 --fs ext4,xfs --sector 512e,4kn --disk-size 512MiB,300MiB \
  --workload "$workload" --checker "$checker" --cache off,on --expect off=survives,on=survives \
  --keep "$out/rec" --json "$out/run.json" --quiet
rc=$?
echo "== powercut run: exit $rc"
python3 - "$out/rec/trace.log.manifest.json" "$out/run.json" "$rc" <<'EOF'
import json, sys
problems = []
if sys.argv[3] != "0":
    problems.append(f"powercut run exited {sys.argv[3]} (want 0: recorded, both models survive)")
try:
    manifest = json.load(open(sys.argv[1]))
except OSError as e:
    manifest = {}
    problems.append(f"no manifest: {e}")
disks = manifest.get("disks", [])
want = [(512, 4096, 512 << 20), (4096, 4096, 300 << 20)]
got = [(d.get("logical_sector"), d.get("physical_sector"), d.get("bytes")) for d in disks]
print("manifest disks (logical, physical, bytes):", got)
if got != want:
    problems.append(f"the manifest's disks are {got}, want {want}")
if manifest and manifest.get("block_size") != 512:
    problems.append(f"the trace's sectorsize is {manifest.get('block_size')}, want 512 "
                    "(the smallest logical sector of the set)")
try:
    report = json.load(open(sys.argv[2]))
    print("run:", report["run"]["sector"], report["run"]["status"], report["run"]["error"])
except (OSError, KeyError) as e:
    problems.append(f"no run report: {e}")
for p in problems:
    print("FAIL:", p)
print("both geometries recorded and replayed" if not problems else "UNEXPECTED")
sys.exit(1 if problems else 0)
EOF
