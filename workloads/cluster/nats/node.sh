#!/bin/sh
# One nats-server 2.9 node of a JetStream cluster (docs/cluster.md): the node command of
# `powercut run --nodes 3 --node 'sh workloads/cluster/nats/node.sh'`. Clients on
# POWERCUT_NODE_ADDR:4222, routes between the nodes on :6222, JetStream's file store on the
# node's disk; every JetStream setting is the default (no sync setting exists in 2.9: it makes no
# fsync before a PubAck).
set -eu
routes=""
for address in $(echo "$POWERCUT_NODE_ADDRS" | tr , ' '); do
  routes="$routes${routes:+,}nats://$address:6222"
done
exec nats-server --name "n$POWERCUT_NODE" --addr "$POWERCUT_NODE_ADDR" --port 4222 \
  --jetstream --store_dir "$POWERCUT_NODE_DIR/nats" \
  --cluster_name powercut --cluster "nats://$POWERCUT_NODE_ADDR:6222" --routes "$routes"
