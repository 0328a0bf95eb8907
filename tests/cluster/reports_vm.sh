#!/bin/sh
# A cluster run's reports on a real cluster (docs/cluster.md, "Reports" and "Reproducing a
# state"): the 3-node Redis example with `appendfsync always` (workloads/cluster/redis), recorded
# once in the VM and replayed under the cache off (it survives) and lying (it loses, so there is a
# violating state to draw and to reproduce). Then:
#   - the text, JSON, JUnit and HTML name each node: its writes, flushes and FUA writes, its whole
#     log kept beside the recording (--keep), the worst state's instant and each node's dropped
#     writes, the HTML a write and a flush lane per node;
#   - the worst lying state's `repro` command from the JSON, run as printed with --keep-logs,
#     starts every node on its crash image and still violates, each node's log of that state kept;
#   - its bundle's cluster.sh, the same by hand (each node's image rebuilt, through its boot path,
#     mounted, the nodes started by powercut-cluster --mode check), prints the checker's lines and
#     leaves no mount, folder or process.
# Judged on this host (`--check-in host`): repro of a cluster state is root's (docs/cluster.md).
# Usage: reports_vm.sh POWERCUT EXAMPLE_DIR
set -u
powercut=$1
example=$2
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (host loop mounts for the repro)"; exit 77; }
out=$(mktemp -d /var/tmp/powercut-cluster-reports-XXXXXX)
trap 'rm -rf "$out"' EXIT
node="sh $example/node.sh always"
checker="sh $example/check.sh"
start=$(date +%s)
"$powercut" run --nodes 3 --node "$node" --workload "sh $example/workload.sh 3" \
  --checker "$checker" --cache off,lying --states 2 --checker-timeout 40 --timeout 400 \
  --check-in host --keep "$out/rec" --expect off=survives,lying=loses \
  --json "$out/run.json" --junit "$out/run.xml" --html "$out/run.html" --quiet > "$out/run.txt"
rc=$?
cat "$out/run.txt"
echo "== run: exit $rc in $(($(date +%s) - start)) s"
[ $rc -eq 0 ] || exit 1
fail() { echo "FAIL: $*"; exit 1; }
grep -q '^node 3 (ext4, [0-9]* MiB): [0-9]* writes, [0-9]* flushes, [0-9]* FUA; its log: ' \
  "$out/run.txt" || fail "the text has no line for node 3"
grep -q 'every node cut at once after entry' "$out/run.txt" || fail "the text names no instant"
grep -q 'dropped per node: node 1: ' "$out/run.txt" || fail "the text names no node's drops"
grep -q '^  reproduce it: .* repro pc1_.* --nodes 3 ' "$out/run.txt" || fail "no repro command"
grep -q 'dropped per node' "$out/run.xml" || fail "the JUnit names no node"
for n in 1 2 3; do
  grep -q ">node $n write</text>" "$out/run.html" || fail "the HTML has no write lane of node $n"
  grep -q ">node $n flush</text>" "$out/run.html" || fail "the HTML has no flush lane of node $n"
done
grep -q 'id="nodes-0"' "$out/run.html" || fail "the HTML has no section of the nodes"
grep -q 'node-2.log</a>' "$out/run.html" || fail "the HTML does not link node 2's log"
# The JSON: each node's counts and whole log, the worst lying state's drops per node and its
# repro command; prints the command and the state for the steps below.
python3 - "$out/run.json" "$out/rec" > "$out/worst.txt" <<'PY' || exit 1
import json, os, sys
j = json.load(open(sys.argv[1]))
rec = sys.argv[2]
problems = []
nodes = j.get("nodes") or []
if "disks" in j or [n.get("node") for n in nodes] != [1, 2, 3]:
    problems.append(f"want nodes 1 2 3 and no disks: {j.get('disks')} {nodes}")
for n in nodes:
    log = n.get("log", "")
    if os.path.dirname(log) != rec or not os.path.isfile(log):
        problems.append(f"node {n['node']}'s log {log!r} is not kept in {rec}")
        continue
    text = open(log, errors="replace").read()
    if len(text.encode()) != n["log_bytes"]:
        problems.append(f"node {n['node']}: log_bytes {n['log_bytes']}, file {len(text)}")
    # The whole log of the recording: the server's start, not only the last lines.
    if "Server initialized" not in text or "Ready to accept connections" not in text:
        problems.append(f"node {n['node']}'s log lacks the server's start:\n{text[:400]}")
    if n["writes"] <= 0 or n["flushes"] <= 0:
        problems.append(f"node {n['node']}: {n['writes']} writes, {n['flushes']} flushes")
    sys.stderr.write(f"node {n['node']}: {n['writes']} writes, {n['flushes']} flushes, "
                     f"{n['fua']} FUA, log {n['log_bytes']} bytes\n")
lying = [r for r in j["results"] if r["cache"] == "lying"][0]
worst = lying["worst_violation"] or {}
per_node = worst.get("dropped_entries_per_node", [])
if len(per_node) != 3 or sum(map(len, per_node)) != len(worst.get("dropped_entries", [])):
    problems.append(f"the worst state's drops per node {per_node} != {worst.get('dropped_entries')}")
if worst.get("dropped_per_node") != [len(e) for e in per_node]:
    problems.append(f"dropped_per_node {worst.get('dropped_per_node')}")
repro = worst.get("repro", "")
if f"repro {worst.get('state')} --trace {rec}/trace.log --nodes 3 " not in repro:
    problems.append(f"repro command {repro!r}")
for p in problems:
    sys.stderr.write(f"FAIL: {p}\n")
if problems:
    sys.exit(1)
print(worst["state"])
print(repro)
PY
state=$(sed -n 1p "$out/worst.txt")
repro=$(sed -n 2p "$out/worst.txt")
# The repro command as the report printed it: every node started on its crash image, and the
# state still loses acks (exit 1); each node's log of that state kept.
start=$(date +%s)
sh -c "$repro --keep-logs '$out/logs'" > "$out/repro.txt" 2>&1
rc=$?
cat "$out/repro.txt"
echo "== repro: exit $rc in $(($(date +%s) - start)) s"
[ $rc -eq 1 ] || fail "the repro of $state exited $rc, not 1 (violates)"
grep -q 'lost' "$out/repro.txt" || fail "the repro names no lost ack"
for n in 1 2 3; do
  grep -q 'Ready to accept connections' "$out/logs/$state/node-$n.log" ||
    fail "node $n's log of the repro lacks the server's start"
done
# The bundle's cluster.sh: the same by hand.
"$powercut" repro "$state" --trace "$out/rec/trace.log" --nodes 3 --node "$node" \
  --checker "$checker" --checker-timeout 40 --no-shrink --bundle "$out/bundle" > /dev/null 2>&1
[ $? -eq 1 ] || fail "repro --bundle did not find the state violating"
grep -q 'sh cluster.sh' "$out/bundle/README.md" || fail "the README does not name cluster.sh"
start=$(date +%s)
(cd /tmp && sh "$out/bundle/cluster.sh") > "$out/by-hand.txt" 2> "$out/by-hand.err"
rc=$?
cat "$out/by-hand.txt" "$out/by-hand.err"
echo "== cluster.sh: exit $rc in $(($(date +%s) - start)) s"
[ $rc -eq 0 ] || fail "cluster.sh exited $rc"
# By hand the state loses what the run said it loses.
python3 - "$out/run.json" "$out/by-hand.txt" <<'PY' || fail "by hand, the state is not the run's"
import json, sys
lying = [r for r in json.load(open(sys.argv[1]))["results"] if r["cache"] == "lying"][0]
lost = set(lying["worst_violation"]["lost"])
have = {line.split()[1] for line in open(sys.argv[2]) if line.startswith("have ")}
print(f"by hand: have {sorted(have)}, the run lost {sorted(lost)}")
sys.exit(1 if not lost or lost & have else 0)
PY
for n in 1 2 3; do
  [ -s "$out/bundle/logs/$state/node-$n.log" ] || fail "cluster.sh kept no log of node $n"
done
if grep -q ' /var/tmp/powercut-cluster-repro-' /proc/mounts; then fail "cluster.sh left a mount"; fi
if ls -d /var/tmp/powercut-cluster-repro-* 2>/dev/null; then fail "cluster.sh left a folder"; fi
echo "== every report names the nodes; the repro and cluster.sh start them"
