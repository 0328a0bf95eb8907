#!/bin/sh
# The Redis example's workload: waits until both replicas are online, then SET commit:1 ..
# commit:COUNT on the master, each followed by `WAIT 2` on the same connection, and acks a commit
# only once WAIT answered 2 (both replicas have it).
# Usage: workload.sh [COUNT] [WAIT_SECONDS]
exec python3 "$(dirname "$0")/resp.py" publish "${1:-20}" "${2:-180}"
