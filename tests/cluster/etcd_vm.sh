#!/bin/sh
# A 3-node etcd 3.4 cluster (workloads/cluster/etcd, docs/cluster.md) recorded once in the VM and
# replayed as coordinated cuts under the cache off and lying, with the verdicts physics gives: etcd
# fdatasyncs its WAL on a quorum before it answers a put, so every ack survives while the drives
# honour flushes (off) and is lost when they do not (lying). `--expect` makes the exit 0 only when
# both come out so. Then one live coordinated cut (`--live-cuts 1`, docs/cluster.md "Live
# coordinated cuts"): the same cluster recorded again and qemu killed at a seeded write, every
# node's disk image must be inside the replay model on its own disk, and the cut, judged with every
# node started on its cut image, survives (a drive that honours flushes: cache on). Kept small for
# CI (6 acks, 3 states a point, one cut): 55 s idle, 99 s in a loaded ctest run under TCG (the
# cut about 16 s of it). Judged on this host (`--check-in host`, root): three etcd servers start
# natively for each state there, in a TCG guest they take seconds (179 s for this test); the
# guest judging of a cluster runs in product_unprivileged_vm_test, as an ordinary user.
# Then two single-node cuts (`--node-cuts 2`, docs/cluster.md "Single-node cuts"): two more
# recordings, in each of which one member (drawn from the seed) loses its power while the workload
# runs: its processes frozen and killed, its drive keeping what a cache that honours flushes allows
# at that instant, and after 1 s it starts again on that image while the other two serve on. After
# the workload the checker reads every key from the live cluster: etcd acked each put once a quorum
# fdatasynced it, so nothing may be missing, and each cut disk's image must be inside the model.
# Usage: etcd_vm.sh POWERCUT EXAMPLE_DIR
set -u
powercut=$1
example=$2
out=$(mktemp -d /var/tmp/powercut-cluster-etcd-XXXXXX)
trap 'rm -rf "$out"' EXIT
"$powercut" run --nodes 3 --node "sh $example/node.sh" \
  --workload "sh $example/workload.sh 6" --checker "sh $example/check.sh" \
  --cache off,lying --states 3 --checker-timeout 40 --timeout 400 --live-cuts 1 --check-in host \
  --node-cuts 2 --node-down 1s \
  --expect off=survives,lying=loses,live=survives,node-cut=survives --json "$out/etcd.json" --quiet
rc=$?
echo "== exit $rc"
[ $rc -eq 0 ] || exit 1
# The report names the cluster and its user's commands.
grep -q '"nodes": 3' "$out/etcd.json" || { echo "no cluster section in the JSON"; exit 1; }
# A state on which the cluster did not come back is counted apart (docs/cluster.md), per model.
grep -q '"unavailable":' "$out/etcd.json" || { echo "no unavailable count in the JSON"; exit 1; }
# The live cut: made, inside the model on every node (each node named, with its own check), and
# the cluster came back with every ack before the cut.
python3 - "$out/etcd.json" <<'PY'
import json, sys
live = json.load(open(sys.argv[1]))["run"]["live_cuts"]
problems = []
if live["requested"] != 1 or live["counted"] != 1:
    problems.append(f"{live['counted']} of {live['requested']} cuts made and checked: {live['cuts']}")
for cut in live["cuts"]:
    print(f"seed {cut['seed']}: cut {cut['cut']} after ack {cut['cut_after_ack']}, "
          f"{cut['acks_before_cut']} acks before, {cut['volatile_writes']} volatile writes, "
          f"in_model {cut['in_model']}, nodes {cut.get('nodes')}, lost {cut['lost']}, "
          f"unavailable {cut.get('unavailable', '')!r}")
    if "error" in cut:
        continue
    nodes = cut.get("nodes", [])
    if [n["node"] for n in nodes] != [1, 2, 3]:
        problems.append(f"the cut names nodes {[n.get('node') for n in nodes]}, want 1 2 3")
    for n in nodes:
        if not n["in_model"]:
            problems.append(f"node {n['node']} OUTSIDE THE MODEL: {n.get('evidence', '')}")
    if sum(n["volatile_writes"] for n in nodes) != cut["volatile_writes"]:
        problems.append("the nodes' volatile writes do not add up to the cut's")
    if not cut["in_model"]:
        problems.append(f"the cut is outside the model: {cut.get('evidence', '')}")
    # etcd acks a put once a quorum fdatasynced it: a zone outage with drives that honour flushes
    # loses nothing, and every member restarts on its WAL (a cluster that does not come back here
    # would be a finding, not this test's pass).
    if cut["violation"] or cut["lost"]:
        problems.append(f"the cut lost acks {cut['lost']}: {cut.get('summary', '')}")
    if cut.get("unavailable"):
        problems.append(f"the cluster did not come back: {cut['unavailable']}\n"
                        f"{cut.get('unavailable_stderr', '')}")
if live["in_model"] != live["counted"] or live["violations"] != 0:
    problems.append(f"summary: {live['in_model']} in model, {live['violations']} violating")
# The single-node cuts.
report = json.load(open(sys.argv[1]))
cuts = report["run"]["node_cuts"]
if cuts["requested"] != 2 or cuts["errors"] != 0:
    problems.append(f"{cuts['errors']} of {cuts['requested']} cuts could not be made: {cuts['cuts']}")
fired = [c for c in cuts["cuts"] if c["fired"]]
if not fired:
    problems.append("no cut was made (each is planned before the workload's last ack)")
for c in cuts["cuts"]:
    print(f"seed {c['seed']}: node {c['node']} fired {c['fired']} after ack {c['acks_before_cut']} "
          f"(planned {c['after_ack']} + {c['delay_ms']} ms) at entry {c['point']}, "
          f"{c['volatile_writes']} volatile ({c['kept']} kept, {c['dropped']} dropped, "
          f"{c['torn']} torn), in_model {c['in_model']}, down {c['down_seconds']:.1f} s, "
          f"acks {c['acks']}, lost {c['lost']}, unavailable {c['unavailable']!r}, "
          f"error {c['error']!r}")
    if not c["fired"]:
        continue
    if not 1 <= c["node"] <= 3:
        problems.append(f"node {c['node']} is not one of 1..3")
    if not c["in_model"]:
        problems.append(f"node {c['node']}'s disk OUTSIDE THE MODEL: {c['evidence']}")
    if c["acks"] != report["run"]["acks"]:
        problems.append(f"the cut's run acked {c['acks']}, the replay's {report['run']['acks']}")
    if c["lost"] or c["corrupt"]:
        problems.append(f"the live cluster lost {c['lost']} (corrupt {c['corrupt']})")
    if c["unavailable"]:
        problems.append(f"the cluster did not answer after the cut: {c['unavailable']}\n"
                        f"{c['checker_stderr']}")
    if c["down_seconds"] < 1.0:
        problems.append(f"the node was down {c['down_seconds']} s, less than --node-down 1s")
for p in problems:
    print("FAIL:", p)
sys.exit(1 if problems else 0)
PY
