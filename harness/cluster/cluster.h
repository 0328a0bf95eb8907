// A cluster under test (docs/cluster.md): N nodes, each a server process tree with its own
// recorded disk and its own loopback address, and two clients that never lose power, the
// workload and the checker.
//
// `powercut run --nodes N --node CMD` is a `--disks N` run whose workload and checker are wrapped
// by the launcher `powercut-cluster` (harness/cluster/launcher.h): in the recording it starts the
// node command on every node, runs the workload, then kills the nodes; on each crash state it
// starts every node on its crash image, runs the checker and kills the nodes. This header is
// what both sides share: the node's environment, its address, and the wrapped commands.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "base/shell_quote.h"
#include "harness/cluster/node_cut.h"

namespace powercut::cluster {

// Most nodes a cluster may have: each is a recorded disk with its own NBD server and guest
// device, and 7 tolerates three failures, more than any system here is run with.
inline constexpr uint32_t kMaxNodes = 7;

// Node `node` (1-based) listens on 127.0.0.<10 + node>: 127.0.0.11, 127.0.0.12, ... Every port
// is free on it: the launcher runs the cluster in a network namespace of its own, where nothing
// else listens and no packet leaves (its only interface is its own loopback).
std::string NodeAddress(uint32_t node);
// Every node's address, comma-separated, in node order (POWERCUT_NODE_ADDRS).
std::string NodeAddresses(uint32_t nodes);

// `--nodes N`: at least 2 (one node is a plain run), at most kMaxNodes.
absl::Status ValidateNodeCount(uint32_t nodes);

// The environment a node's command gets (docs/cluster.md): POWERCUT_NODE (1..N),
// POWERCUT_NODE_DIR (its disk, mounted), POWERCUT_NODE_ADDR, POWERCUT_NODE_ADDRS,
// POWERCUT_NODES.
std::vector<std::pair<std::string, std::string>> NodeEnvironment(uint32_t node, uint32_t nodes,
                                                                 const std::string& node_dir);
// The environment the workload and the checker get on top of the protocol's: POWERCUT_NODES,
// POWERCUT_NODE_ADDRS.
std::vector<std::pair<std::string, std::string>> ClientEnvironment(uint32_t nodes);

// What a cluster run's workload and checker become: the launcher at `launcher` (an absolute
// path; the guest sees the host's root) wrapped around the user's commands.
struct ClusterCommands {
  std::string workload;
  std::string checker;
};
struct ClusterSpec {
  uint32_t nodes = 0;
  std::string node_command;
  std::string workload;
  std::string checker;
  // The user's checker may run this long (it waits for a quorum itself); past it the cluster is
  // reported unavailable on that state.
  double checker_timeout_s = 60;
  // One node's power cut in the recording (node_cut.h): the workload's launcher gets it, and
  // runs `node_cut->checker` (the user's checker) against the live cluster at the end.
  std::optional<NodeCutPlan> node_cut;
};
// `keep_logs`, when set, is the checker's `--keep-logs DIR`: the nodes' logs of that check stay
// there (`powercut repro` of a cluster state).
ClusterCommands WrapForCluster(const ClusterSpec& spec, const std::string& launcher,
                               const std::string& keep_logs = "");
// The arguments of `powercut repro` that judge a crash state of this cluster as the run did:
// " --nodes N --node CMD --checker CMD --checker-timeout S" (the user's commands: repro wraps them
// itself, so the command starts every node on its crash image).
std::string ReproArgs(const ClusterSpec& spec);
// The wrapped checker's own time on top of the user's checker: starting and killing the nodes.
inline constexpr double kLauncherSlackSeconds = 15;

// The stdout line the launcher prints for a state on which the cluster did not come back (the
// checker timed out or failed: no quorum answered), followed by the reason: the protocol's
// `unavailable <text>` line (docs/protocol.md, parsed by harness/check/checker.h's
// ParseCheckerLine), so the engine counts the state as `unavailable`, the system's own outcome,
// apart from violations (docs/cluster.md, "When the cluster does not come back").
inline constexpr char kUnavailablePrefix[] = "unavailable the cluster did not come back:";
// How much of the nodes' logs the launcher quotes on stderr for such a state, all nodes together:
// the engine keeps the last 2 KiB of a checker's stderr, and every node's lines must fit in it.
inline constexpr size_t kNodeLogBytes = 1800;

}  // namespace powercut::cluster
