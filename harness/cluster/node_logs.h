// The nodes' whole logs of a cluster's recording, a file a node beside the recording
// (docs/cluster.md, "The nodes' logs").
//
// In the guest each node's stdout and stderr go to node-K.log in the launcher's private folder;
// after the workload the launcher appends them to $POWERCUT_OUTPUT, each after a header line
// `=== node K (127.0.0.1K): <its path in the guest>` (harness/cluster/launcher.h), and the host
// keeps that file as output.txt beside the recording. SplitNodeLogs takes it apart again into
// node-1.log ... node-N.log, so that a report can name each node's log.
//
// Bounded: a node's file holds at most `cap_bytes` of its log (kNodeLogCapBytes by default): a
// longer log keeps its first quarter and its last three quarters, cut at line ends, with one line
// between them saying how many bytes were left out. Lines before node 1's header (the workload's
// own $POWERCUT_OUTPUT) are not a node's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace powercut::cluster {

// 4 MiB a node: an etcd 3.4 member's log of a 20-ack recording is 7.4-7.9 KiB, a Redis 7 node's
// of 3 acks 3.2 KiB (docs/cluster.md, "The nodes' logs"), and 7 nodes at the cap stay under 30 MiB
// beside a recording of hundreds of MiB.
inline constexpr uint64_t kNodeLogCapBytes = uint64_t{4} << 20;

// `dir`/node-K.log.
std::string NodeLogPath(const std::string& dir, uint32_t node);

struct NodeLog {
  uint32_t node = 0;
  std::string path;       // NodeLogPath(dir, node)
  uint64_t bytes = 0;     // of the file written
  uint64_t left_out = 0;  // bytes of the node's log beyond the cap, not in the file
};

// Writes `dir`/node-K.log for every node whose header `output` holds (in node order; a node whose
// header is missing, as when the launcher could not start, gets no file). A missing `output` is
// no logs, not an error; one that cannot be read, or a file that cannot be written, is.
absl::StatusOr<std::vector<NodeLog>> SplitNodeLogs(const std::string& output,
                                                   const std::string& dir, uint32_t nodes,
                                                   uint64_t cap_bytes = kNodeLogCapBytes);

}  // namespace powercut::cluster
