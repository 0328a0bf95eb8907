#!/bin/sh
# The 3-node Redis example (workloads/cluster/redis, docs/cluster.md) recorded in the VM and
# replayed as coordinated cuts with the cache off, with the verdict its documentation gives: under
# `everysec` the reply (and WAIT 2: the replicas hold it in memory) comes before the fsync, so a
# cut of every node at once loses acks even with write-through drives. `--expect` makes it exit 0
# only when it comes out so. Kept small for CI: 4 acks, about 2 states a point. Its durable
# setting, `appendfsync always` (the master fsyncs the AOF before the reply: every ack survives),
# runs as an ordinary user in product_unprivileged_vm_test
# (UnprivilegedVmTest.AThreeNodeClusterIsJudgedInGuestsAsOrdinaryUser).
# Usage: redis_vm.sh POWERCUT EXAMPLE_DIR
set -u
powercut=$1
example=$2
out=$(mktemp -d /var/tmp/powercut-cluster-redis-XXXXXX)
trap 'rm -rf "$out"' EXIT
for case in everysec:loses; do
  setting=${case%%:*}
  verdict=${case#*:}
  "$powercut" run --nodes 3 --node "sh $example/node.sh $setting" \
    --workload "sh $example/workload.sh 4" --checker "sh $example/check.sh" \
    --cache off --states 2 --checker-timeout 40 --timeout 400 \
    --expect "off=$verdict" --json "$out/$setting.json" --quiet
  rc=$?
  echo "== $setting: exit $rc (expected off=$verdict)"
  [ $rc -eq 0 ] || exit 1
  grep -q '"nodes": 3' "$out/$setting.json" || { echo "no cluster section in the JSON"; exit 1; }
done
# everysec lost acks: its first violating state names them.
grep -q '"lost"' "$out/everysec.json" || { echo "everysec: no lost acks in the JSON"; exit 1; }
