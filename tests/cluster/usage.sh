#!/bin/sh
# Bad `powercut run --nodes` input is a usage error (exit 2) before any guest boots
# (docs/cluster.md, "Bad input"): each case must fail at once and name what is wrong.
set -u
powercut=$1
failed=0
expect_usage() {  # description, expected text, args...
  what=$1
  want=$2
  shift 2
  start=$(date +%s)
  msg=$("$powercut" run --workload true --checker true "$@" 2>&1)
  rc=$?
  took=$(($(date +%s) - start))
  if [ $rc -ne 2 ] || [ $took -gt 10 ] || ! printf '%s' "$msg" | grep -qF -- "$want"; then
    echo "FAIL $what: exit $rc after ${took}s (want 2 and \"$want\"): $msg"
    failed=1
  else
    echo "ok   $what: $msg" | head -c 300
    echo
  fi
}
expect_usage "--nodes 1" "--nodes 1: a cluster has at least 2 nodes" --nodes 1 --node true
expect_usage "--nodes without --node" "--nodes N needs --node CMD" --nodes 3
expect_usage "--node without --nodes" "--node CMD needs --nodes N" --node true
expect_usage "--nodes 9" "at most 7 nodes" --nodes 9 --node true
expect_usage "--disks beside --nodes" "drop --disks 2" --nodes 3 --node true --disks 2
expect_usage "--cache-per-disk beside --nodes" "--cache-per-node" --nodes 3 --node true \
  --cache-per-disk 2=lying
expect_usage "--cache-per-node without --nodes" "--cache-per-node needs --nodes N" \
  --cache-per-node 2=lying
expect_usage "--cache-per-node naming node 4 of 3" "names node 4, but there are 3 nodes" --nodes 3 --node true \
  --cache-per-node 4=lying
expect_usage "--fs values for 2 of 3 nodes" "--fs ext4,xfs" --nodes 3 --node true --fs ext4,xfs
expect_usage "--fs raw" "--fs raw is not for clusters" --nodes 3 --node true --fs raw
expect_usage "--flakey" "--flakey is not built for clusters yet" --nodes 3 --node true \
  --flakey error_writes --flakey-after-acks 2
# --live-cuts is built for clusters: the flags pass the cluster's rules and stop only at --trace
# (live cuts need the VM), not at "not built".
msg=$("$powercut" run --workload true --checker true --nodes 3 --node true --live-cuts 2 \
  --trace /nonexistent/trace.log 2>&1)
rc=$?
if [ $rc -ne 2 ] || ! printf '%s' "$msg" | grep -qF -- "--live-cuts and --flakey need the VM" ||
  printf '%s' "$msg" | grep -qF "not built"; then
  echo "FAIL --live-cuts with --nodes: exit $rc: $msg"
  failed=1
else
  echo "ok   --live-cuts with --nodes passes the cluster's rules: $msg"
fi
exit $failed
