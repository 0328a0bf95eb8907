# Sourced by workload.sh and check.sh: ETCDCTL_ENDPOINTS, every node's client URL, from the
# addresses `powercut run --nodes` gives the clients.
ETCDCTL_ENDPOINTS=$(echo "$POWERCUT_NODE_ADDRS" | sed 's|\([^,]*\)|http://\1:2379|g')
ETCDCTL_API=3
export ETCDCTL_ENDPOINTS ETCDCTL_API
