// powercut-cluster: the cluster launcher (harness/cluster/launcher.h, docs/cluster.md). It is
// what `powercut run --nodes N` runs as the workload (in the guest) and as the checker (on each
// crash state); run by hand it needs POWERCUT_DIR, POWERCUT_DIR_2 ... set to the nodes' folders.
#include <cstdio>
#include <string>

#include "CLI/CLI.hpp"
#include "base/main_guard.h"
#include "harness/cluster/launcher.h"

namespace {

int Main(int argc, char** argv) {
  CLI::App app{
      "powercut-cluster: starts the node command on every node of a cluster, runs the workload "
      "or the checker against it, and kills the nodes (docs/cluster.md)"};
  powercut::cluster::LauncherOptions o;
  std::string mode;
  app.add_option("--mode", mode, "workload (the recording) or check (a crash state)")
      ->required()
      ->check(CLI::IsMember({"workload", "check"}));
  app.add_option("--nodes", o.nodes, "how many nodes (2 or more)")->required();
  app.add_option("--node", o.node_command, "the node command (a server in the foreground)")
      ->required();
  app.add_option("--timeout", o.timeout_seconds,
                 "check: seconds the checker may take before the cluster counts as unavailable")
      ->capture_default_str();
  app.add_option("--keep-logs", o.keep_logs, "keep the nodes' logs (node-K.log) in this folder");
  powercut::cluster::NodeCutPlan cut;
  auto* cut_node =
      app.add_option("--cut-node", cut.node,
                     "workload: this node loses its power once while the workload runs, then "
                     "starts again (needs the guest agent's node cut: `powercut run --node-cuts`)");
  app.add_option("--cut-after-ack", cut.after_ack, "the cut: after this ack of the workload")
      ->needs(cut_node);
  app.add_option("--cut-delay-ms", cut.delay_ms, "the cut: this long after that ack")
      ->needs(cut_node);
  app.add_option("--node-down-ms", cut.down_ms, "the cut: the node's power is off this long")
      ->needs(cut_node)
      ->capture_default_str();
  app.add_option("--checker", cut.checker,
                 "the cut: the checker, run against the live cluster after the workload (with "
                 "--timeout)")
      ->needs(cut_node);
  app.add_option("command", o.client_command, "the workload or checker command (after --)")
      ->required();
  CLI11_PARSE(app, argc, argv);
  if (*cut_node) {
    if (mode != "workload" || cut.checker.empty()) {
      std::fprintf(stderr,
                   "powercut-cluster: --cut-node is for --mode workload, with --checker CMD\n");
      return 2;
    }
    o.node_cut = cut;
  }
  o.mode = mode == "check" ? powercut::cluster::LauncherMode::kCheck
                           : powercut::cluster::LauncherMode::kWorkload;
  return powercut::cluster::RunLauncher(o);
}

}  // namespace

int main(int argc, char** argv) {
  return powercut::RunMainGuarded("powercut-cluster", 2, [&] { return Main(argc, argv); });
}
