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
  etcdctl --command-timeout 30s put "commit:$i" "value $i" >/dev/null || {
    echo "etcdctl put commit:$i failed" >&2
    exit 1
  }
  echo "ack $i" >&"$POWERCUT_ACK_FD"
  i=$((i + 1))
done
