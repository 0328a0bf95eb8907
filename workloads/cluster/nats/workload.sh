#!/bin/sh
# The NATS example's workload: a stream of 3 replicas, COUNT publishes, each acked on its PubAck.
# Usage: workload.sh [COUNT] [WAIT_SECONDS]
exec python3 "$(dirname "$0")/jetstream.py" publish "${1:-20}" "${2:-180}"
