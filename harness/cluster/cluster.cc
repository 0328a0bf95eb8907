#include "harness/cluster/cluster.h"

#include "fmt/format.h"

namespace powercut::cluster {

std::string NodeAddress(uint32_t node) { return fmt::format("127.0.0.{}", 10 + node); }

std::string NodeAddresses(uint32_t nodes) {
  std::string addresses;
  for (uint32_t node = 1; node <= nodes; ++node) {
    addresses += (node == 1 ? "" : ",") + NodeAddress(node);
  }
  return addresses;
}

absl::Status ValidateNodeCount(uint32_t nodes) {
  if (nodes < 2) {
    return absl::InvalidArgumentError(
        fmt::format("--nodes {}: a cluster has at least 2 nodes (test one server with a plain run: "
                    "--workload and --checker without --nodes)",
                    nodes));
  }
  if (nodes > kMaxNodes) {
    return absl::InvalidArgumentError(
        fmt::format("--nodes {}: at most {} nodes (a recorded disk each)", nodes, kMaxNodes));
  }
  return absl::OkStatus();
}

std::vector<std::pair<std::string, std::string>> NodeEnvironment(uint32_t node, uint32_t nodes,
                                                                 const std::string& node_dir) {
  std::vector<std::pair<std::string, std::string>> env = {
      {"POWERCUT_NODE", std::to_string(node)},
      {"POWERCUT_NODE_DIR", node_dir},
      {"POWERCUT_NODE_ADDR", NodeAddress(node)},
  };
  for (auto& client : ClientEnvironment(nodes)) env.push_back(std::move(client));
  return env;
}

std::vector<std::pair<std::string, std::string>> ClientEnvironment(uint32_t nodes) {
  return {{"POWERCUT_NODES", std::to_string(nodes)}, {"POWERCUT_NODE_ADDRS", NodeAddresses(nodes)}};
}

ClusterCommands WrapForCluster(const ClusterSpec& spec, const std::string& launcher,
                               const std::string& keep_logs) {
  const std::string common = fmt::format("{} --nodes {} --node {}", ShellQuote(launcher),
                                         spec.nodes, ShellQuote(spec.node_command));
  std::string cut;
  if (spec.node_cut) {
    const NodeCutPlan& c = *spec.node_cut;
    cut = fmt::format(
        " --cut-node {} --cut-after-ack {} --cut-delay-ms {} --node-down-ms {} --timeout {:g} "
        "--checker {}",
        c.node, c.after_ack, c.delay_ms, c.down_ms, spec.checker_timeout_s, ShellQuote(c.checker));
  }
  return {
      .workload = fmt::format("{} --mode workload{} -- {}", common, cut, ShellQuote(spec.workload)),
      .checker =
          fmt::format("{} --mode check --timeout {:g}{} -- {}", common, spec.checker_timeout_s,
                      keep_logs.empty() ? std::string() : " --keep-logs " + ShellQuote(keep_logs),
                      ShellQuote(spec.checker)),
  };
}

std::string ReproArgs(const ClusterSpec& spec) {
  return fmt::format(" --nodes {} --node {} --checker {} --checker-timeout {:g}", spec.nodes,
                     ShellQuote(spec.node_command), ShellQuote(spec.checker),
                     spec.checker_timeout_s);
}

}  // namespace powercut::cluster
