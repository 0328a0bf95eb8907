#!/bin/sh
# The workload of the 3-node etcd example (docs/cluster.md): waits until a quorum serves, then
# puts commit:1 .. commit:COUNT with etcdctl and acks each once etcdctl returned. etcd answers a
# put only after a quorum of members wrote it to their WALs and fdatasynced them, so every ack
# must survive a coordinated cut while the drives honour flushes.
# Usage: workload.sh [COUNT] [WAIT_SECONDS]
set -u
count=${1:-20}
wait=${2:-180}
. "$(dirname "$0")/endpoints.sh"
# A linearizable read answers only once a leader was elected and a quorum serves.
deadline=$(($(date +%s) + wait))
until etcdctl --dial-timeout 2s --command-timeout 5s get ready >/dev/null 2>&1; do
  if [ "$(date +%s)" -ge "$deadline" ]; then
    echo "etcd did not serve within $wait s on $ETCDCTL_ENDPOINTS" >&2
    exit 1
  fi
  sleep 0.2 # polling with a deadline: each try fails fast while a node is still starting
done
i=1
while [ "$i" -le "$count" ]; do
  # A put that fails while a member is down (its connection reset, "leader changed" during an
  # election) is tried again: the same key and value, so a put that did commit is harmless to
  # repeat, and the ack comes only after one that etcd acknowledged.
  tries=1
  until etcdctl --command-timeout 30s put "commit:$i" "value $i" >/dev/null; do
    if [ "$tries" -ge 5 ]; then
      echo "etcdctl put commit:$i failed $tries times" >&2
      exit 1
    fi
    tries=$((tries + 1))
    sleep 1 # a member lost its power: the next try waits out an election
  done
  echo "ack $i" >&"$POWERCUT_ACK_FD"
  i=$((i + 1))
done
