// A single node's power cut in a cluster's recording (docs/cluster.md, "Single-node cuts"): what
// the launcher (launcher.h) and the product (harness/product/faults/node_cuts.h) share.
//
// The launcher, with a NodeCutPlan, interposes on the workload's ack descriptor and counts its
// acks. `delay_ms` after ack `after_ack` it
//   1. freezes the node's process tree (its own cgroup: nothing of it runs from then on),
//   2. writes `power-off` on the ack descriptor: the guest agent switches the node's disk to dm
//      `error` once every request in flight completed, and the host applies the drive's cache to
//      that disk (the instant of the cut, marked in the trace); the agent answers `ok power-off`
//      on POWERCUT_ACK_SYNC_FD,
//   3. kills the frozen tree (cgroup.kill) and waits until it is gone,
//   4. after `down_ms`, writes `power-on`: the agent unmounts the dead node's file system, makes
//      the disk linear again and takes it through its boot path to the same mount point,
//   5. starts the node command again with the same environment,
// while the workload and the other nodes run on. After the workload the checker runs against the
// live cluster (with the launcher's --timeout). The outcome is written, as a section of
// $POWERCUT_OUTPUT ahead of the nodes' logs, in the format of FormatNodeCutSection.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace powercut::cluster {

struct NodeCutPlan {
  uint32_t node = 0;        // 1..N
  uint64_t after_ack = 0;   // >= 1
  uint64_t delay_ms = 0;    // after that ack
  uint64_t down_ms = 2000;  // from the cut to the node's power coming back
  std::string checker;      // the user's checker, run against the live cluster at the end
};

// What the launcher saw (the section of $POWERCUT_OUTPUT).
struct NodeCutOutcome {
  uint32_t node = 0;
  bool fired = false;        // false: the workload ended before the planned instant
  uint64_t acks_before = 0;  // acks forwarded before the node was frozen
  double at_seconds = 0;     // the freeze, after the workload's start
  double down_seconds = 0;   // from the freeze to the node's new start
  std::string error;         // the cut could not be made (the agent's or the host's words)
  bool checker_ran = false;
  int checker_exit = -1;
  bool checker_timed_out = false;
  std::string checker_stdout;  // its `have` lines
  std::string checker_stderr;  // its last lines
};

std::string FormatNodeCutSection(const NodeCutOutcome& outcome);
// Finds the section in `output` (a workload's $POWERCUT_OUTPUT); NotFound when there is none.
absl::Status ParseNodeCutSection(std::string_view output, NodeCutOutcome* outcome);

// The node's own cgroup (v2) under the launcher's, so that its whole tree can be frozen at one
// instant and killed: a server's children and threads stop with it. Needs a writable cgroup2
// hierarchy (the guest, as root).
class NodeCgroup {
 public:
  // Makes <the launcher's cgroup>/powercut-node-<node>.
  static absl::Status Create(uint32_t node, NodeCgroup* out);
  NodeCgroup() = default;
  NodeCgroup(const NodeCgroup&) = delete;
  NodeCgroup& operator=(const NodeCgroup&) = delete;
  NodeCgroup(NodeCgroup&& other) noexcept;
  NodeCgroup& operator=(NodeCgroup&& other) noexcept;
  ~NodeCgroup();

  // In the forked child, before exec: moves the caller in (async-signal-safe).
  void EnterFromChild() const;
  // Freezes (true) or thaws the tree; waits until the kernel says it is frozen.
  absl::Status Freeze(bool frozen) const;
  // SIGKILL to every member (frozen or not), then waits until none is left, calling `reap`
  // meanwhile (the caller is their parent: a zombie may still count as a member).
  absl::Status KillAndWait(const std::function<void()>& reap) const;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::string procs_;  // path_ + "/cgroup.procs", ready for the child
};

}  // namespace powercut::cluster
