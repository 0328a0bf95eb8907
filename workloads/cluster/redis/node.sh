#!/bin/sh
# One redis-server 7.0 node of the 3-node Redis example (docs/cluster.md): the node command of
# `powercut run --nodes 3 --node 'sh workloads/cluster/redis/node.sh always'`. Node 1 is the
# master, every other node its replica (`replicaof` node 1), each on its own address, its
# append-only file on its own disk. Started again on a crash image with the same environment,
# each node loads its own AOF; the replicas then resynchronise from the master (the master's data
# is the cluster's).
# Usage: node.sh APPENDFSYNC (always, everysec or no: the durability setting under test)
set -eu
appendfsync=${1:?usage: node.sh always|everysec|no}
master=$(echo "$POWERCUT_NODE_ADDRS" | cut -d, -f1)
replicaof=""
[ "$POWERCUT_NODE" -eq 1 ] || replicaof="--replicaof $master 6379"
mkdir -p "$POWERCUT_NODE_DIR/redis"
# No RDB snapshots (`save ""`): the AOF is the persistence under test. A diskless full sync
# without its 5 s delay keeps the replicas' first synchronisation short (not a durability
# setting). $replicaof is split into its words on purpose.
# shellcheck disable=SC2086
exec redis-server --bind "$POWERCUT_NODE_ADDR" --port 6379 --protected-mode no \
  --dir "$POWERCUT_NODE_DIR/redis" --appendonly yes --appendfsync "$appendfsync" --save "" \
  --repl-diskless-sync-delay 0 --daemonize no --logfile "" $replicaof
