#!/bin/sh
# One etcd 3.4 member of a cluster (docs/cluster.md, the worked example): the node command of
# `powercut run --nodes 3 --node 'sh workloads/cluster/etcd/node.sh'`. It runs in the foreground
# until it is killed, on the node's own address, its data on the node's own disk. Started again
# on a crash image with the same environment, etcd finds its member folder and ignores the
# --initial-cluster flags (they only bootstrap an empty data folder).
set -eu
cluster=""
node=1
for address in $(echo "$POWERCUT_NODE_ADDRS" | tr , ' '); do
  cluster="$cluster${cluster:+,}n$node=http://$address:2380"
  node=$((node + 1))
done
# Heartbeat and election timeout are raised from 100 ms / 1 s: under TCG a guest runs three
# members on one slow CPU, and elections that never settle would be a test of the emulator.
exec etcd --name "n$POWERCUT_NODE" --data-dir "$POWERCUT_NODE_DIR/etcd" \
  --listen-peer-urls "http://$POWERCUT_NODE_ADDR:2380" \
  --initial-advertise-peer-urls "http://$POWERCUT_NODE_ADDR:2380" \
  --listen-client-urls "http://$POWERCUT_NODE_ADDR:2379" \
  --advertise-client-urls "http://$POWERCUT_NODE_ADDR:2379" \
  --initial-cluster "$cluster" --initial-cluster-state new --initial-cluster-token powercut \
  --heartbeat-interval 300 --election-timeout 3000
