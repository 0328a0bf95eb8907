#!/bin/sh
# The checker of the 3-node etcd example (docs/cluster.md): the cluster was started on the crash
# images; reads every commit: key with a linearizable read (answered only by a quorum) and prints
# `have <id>` for a key whose value is intact, `corrupt <id>` for one that is not. It retries
# until a quorum answers: powercut-cluster kills it at --checker-timeout and reports the state's
# cluster as unavailable.
set -u
. "$(dirname "$0")/endpoints.sh"
until out=$(etcdctl --dial-timeout 2s --command-timeout 5s get --prefix commit:); do
  sleep 0.2 # polling; the launcher's deadline ends it
done
# Key and value lines alternate.
echo "$out" | awk 'NR % 2 == 1 { key = substr($0, 8) }
  NR % 2 == 0 { print ($0 == "value " key ? "have " : "corrupt ") key }'
