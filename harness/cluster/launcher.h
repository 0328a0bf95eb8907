// The cluster launcher (`powercut-cluster`, docs/cluster.md): the program a cluster run's
// workload and checker really are.
//
//   powercut-cluster --mode workload --nodes N --node CMD -- WORKLOAD
//   powercut-cluster --mode check --nodes N --node CMD --timeout S -- CHECKER
//
// Both modes take node K's disk from the protocol's POWERCUT_DIR (K = 1) or POWERCUT_DIR_K,
// enter a network and a process namespace of their own, bring that namespace's loopback up, and
// start the node command on every node (`/bin/sh -c CMD`, its own process group, stdout and
// stderr into `node-K.log` in a private folder, never on the recorded disk) with the environment
// of cluster.h's NodeEnvironment and without the protocol's variables (POWERCUT_DIR*,
// POWERCUT_ACK_FD...: a node sees its own disk only, and it never acks). Then the client runs
// (the user's command, `/bin/sh -c`) with the protocol's descriptors, its stdout and stderr,
// and ClientEnvironment; once it ends, every node is killed with SIGKILL and the launcher exits.
//
//   workload  a node that exits while the workload runs is an error (a node command serves in
//             the foreground until it is killed): the workload is killed, the node named with its
//             exit status and last log lines on stderr, exit 2. Otherwise the workload's own exit
//             status. The nodes' logs are appended to $POWERCUT_OUTPUT when it is set (the host
//             keeps it beside the recording). With a node cut (node_cut.h) one node loses its
//             power while the workload runs and restarts; that node's end is then expected, and
//             after the workload the checker runs against the live cluster; the outcome is a
//             section of $POWERCUT_OUTPUT (FormatNodeCutSection).
//   check     the checker runs at most S seconds. It exits 0: its exit (its `have` lines went
//             straight to stdout). It exits 1 or is still running at S: the cluster did not come
//             back on this image; the launcher prints the protocol's `unavailable <why>` line
//             on stdout (cluster.h's kUnavailablePrefix), each node's last log lines on stderr
//             (at most kNodeLogBytes, shared by the nodes), exits 1.
//             Any other exit (2, 126, 127, a signal as 128+N) is passed on as it is.
//
// Cleanup: the namespace's first process (pid 1 there) is the launcher's child and dies with it
// (PR_SET_PDEATHSIG); when it ends the kernel kills every process left in the namespace, so no
// node outlives the launcher, even one that left its process group, even after a SIGKILL of
// the launcher. Why its own runner and not base/process.h: it is a process namespace's init
// (unshare before the fork, waiting on any child, reaping orphans), which ChildProcess is not.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "harness/cluster/node_cut.h"

namespace powercut::cluster {

enum class LauncherMode { kWorkload, kCheck };

struct LauncherOptions {
  LauncherMode mode = LauncherMode::kWorkload;
  uint32_t nodes = 0;
  std::string node_command;
  std::string client_command;   // the user's workload or checker
  double timeout_seconds = 60;  // kCheck: the checker's limit
  // Keep the nodes' logs here (made if missing) instead of a private folder removed at the end.
  std::string keep_logs;
  // kWorkload: one node's power cut while the workload runs, then the checker against the live
  // cluster (node_cut.h). Needs the guest agent's node cut (GuestJob::node_cut_disk).
  std::optional<NodeCutPlan> node_cut;
};

// Runs the cluster and the client as above; returns the launcher's exit status. Usage and
// environment errors (a node count below 2, a missing POWERCUT_DIR_K, no namespaces) are
// printed on stderr and return 2 before any node starts.
int RunLauncher(const LauncherOptions& options);

}  // namespace powercut::cluster
