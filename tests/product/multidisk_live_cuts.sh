#!/bin/sh
# Live power cuts on two recorded disks (docs/live-cuts.md, "Several disks"): every cut must lie
# inside the replay model of the whole set. The program is the two-disk O_DIRECT control (log on
# disk 1 with fdatasync, data on disk 2 with O_DIRECT and no flush there), so disk 2 holds
# unflushed writes at every cut and each cut draws on both disks' caches. A cut outside the model
# is a tester bug: `powercut run` exits 2 and the JSON says in_model false with its evidence.
# Usage: multidisk_live_cuts.sh POWERCUT [CUTS]
set -u
powercut=$1
cuts=${2:-3}

. "$(dirname "$0")/multidisk_programs.sh"
multidisk_scratch multidisk-cuts
workload=$(multidisk_workload "1 2 3 4 5" \
  "$multidisk_block | $multidisk_data oflag=direct conv=notrunc 2>/dev/null")
checker=$(multidisk_checker "1 2 3 4 5")

"$powercut" run --disks 2 --fs ext4,xfs --workload "$workload" --checker "$checker" --cache on \
  --states 2 --live-cuts "$cuts" --json "$out/run.json" --quiet
rc=$?
echo "== powercut run: exit $rc"
# Exit 1 is the program's own loss under cache on (this control loses acks by design); exit 2 is
# a cut outside the model, a cut that could not be made or checked, or a run that could not run.
if [ $rc -ne 0 ] && [ $rc -ne 1 ]; then
  echo "FAIL: exit $rc (2: a live cut outside the model, or the run could not run)"
  exit 1
fi
python3 - "$out/run.json" "$cuts" <<'EOF'
import json, sys
report = json.load(open(sys.argv[1]))
want = int(sys.argv[2])
live = report["run"]["live_cuts"]
problems = []
if live["requested"] != want:
    problems.append(f"requested {live['requested']} cuts, want {want}")
if live["counted"] != want:
    problems.append(f"{want - live['counted']} cut(s) could not be made or checked")
if live["in_model"] != want:
    problems.append(f"{live['in_model']} of {want} cuts inside the model")
for cut in live["cuts"]:
    line = (f"seed {cut['seed']}: cut {cut['cut']}, after ack {cut['cut_after_ack']}, "
            f"{cut['volatile_writes']} volatile writes ({cut['kept']} kept, {cut['dropped']} "
            f"dropped, {cut['torn']} torn), in_model {cut['in_model']}, lost {cut['lost']}")
    print(line)
    if "error" in cut:
        problems.append(f"seed {cut['seed']}: {cut['error']}")
    elif not cut["in_model"]:
        problems.append(f"seed {cut['seed']} OUTSIDE THE MODEL: {cut.get('evidence', '')}")
# A cut with nothing unflushed proves nothing about the model: at least one must draw.
if not any(c["cut"] and c["volatile_writes"] > 0 for c in live["cuts"]):
    problems.append("no cut landed with unflushed writes: the test showed nothing")
for p in problems:
    print("FAIL:", p)
print("every live cut inside the model" if not problems else "UNEXPECTED")
sys.exit(1 if problems else 0)
EOF
