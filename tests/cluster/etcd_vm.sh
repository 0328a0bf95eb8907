#!/bin/sh
# A 3-node etcd 3.4 cluster (workloads/cluster/etcd, docs/cluster.md) recorded once in the VM and
# replayed as coordinated cuts under the cache off and lying, with the verdicts physics gives: etcd
# fdatasyncs its WAL on a quorum before it answers a put, so every ack survives while the drives
# honour flushes (off) and is lost when they do not (lying). `--expect` makes the exit 0 only when
# both come out so. Kept small for CI (6 acks, 3 states a point): about 3-4 minutes under TCG.
# Usage: etcd_vm.sh POWERCUT EXAMPLE_DIR
set -u
powercut=$1
example=$2
out=$(mktemp -d /var/tmp/powercut-cluster-etcd-XXXXXX)
trap 'rm -rf "$out"' EXIT
"$powercut" run --nodes 3 --node "sh $example/node.sh" \
  --workload "sh $example/workload.sh 6" --checker "sh $example/check.sh" \
  --cache off,lying --states 3 --checker-timeout 40 --timeout 400 \
  --expect off=survives,lying=loses --json "$out/etcd.json" --quiet
rc=$?
echo "== exit $rc"
[ $rc -eq 0 ] || exit 1
# The report names the cluster and its user's commands.
grep -q '"nodes": 3' "$out/etcd.json" || { echo "no cluster section in the JSON"; exit 1; }
# A state on which the cluster did not come back is counted apart (docs/cluster.md), per model.
grep -q '"unavailable":' "$out/etcd.json" || { echo "no unavailable count in the JSON"; exit 1; }
