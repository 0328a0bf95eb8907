#include "harness/product/matrix/cluster_cells.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "base/install_layout.h"
#include "fmt/format.h"

namespace powercut::product {
namespace {

constexpr ExpectedVerdict kSurvives = ExpectedVerdict::kSurvives;
constexpr ExpectedVerdict kLoses = ExpectedVerdict::kLoses;

constexpr ExpectedVerdict kMayLose = ExpectedVerdict::kMayLose;

// A coordinated cut under each cache model, and a single node's cut (`--node-cuts`; the row is
// only there with them).
ExpectedVerdicts Verdicts(ExpectedVerdict off, ExpectedVerdict on, ExpectedVerdict lying,
                          ExpectedVerdict node_cut) {
  return {{ModelKind::kOff, off},
          {ModelKind::kOn, on},
          {ModelKind::kLying, lying},
          {ModelKind::kNodeCut, node_cut}};
}

// Every example folder the preset runs holds these.
bool HasExamples(const std::string& dir) {
  for (const char* folder : {"etcd", "nats", "redis"}) {
    for (const char* script : {"node.sh", "workload.sh", "check.sh"}) {
      if (::access(fmt::format("{}/{}/{}", dir, folder, script).c_str(), R_OK) != 0) return false;
    }
  }
  return true;
}

}  // namespace

std::vector<ClusterPresetEntry> ClusterPresetEntries() {
  return {
      {.workload = "etcd-cluster",
       .setting = "default",
       .folder = "etcd",
       .node_args = "",
       // A node cut: the other two members hold every acked put on their disks.
       .expect = Verdicts(kSurvives, kSurvives, kLoses, kSurvives),
       .documented = "etcd answers a put once a quorum of members appended it to their WAL and "
                     "fdatasynced it (etcd.io, 'Durability')"},
      {.workload = "nats-cluster",
       .setting = "default",
       .folder = "nats",
       .node_args = "",
       // A node cut: the two live replicas hold the message in memory and the restarted one
       // catches up from them, unless the cut node led the stream (not measured here).
       .expect = Verdicts(kLoses, kLoses, kLoses, kMayLose),
       .documented = "NATS JetStream 2.9 answers a PubAck with the message in the replicas' page "
                     "caches: no fsync before the ack (it syncs on an interval; no setting in "
                     "2.9)"},
      {.workload = "redis-cluster",
       .setting = "always",
       .folder = "redis",
       .node_args = "always",
       // A node cut, the master's included: the restarted master's AOF has every acked write.
       .expect = Verdicts(kSurvives, kSurvives, kLoses, kSurvives),
       .documented = "Redis: 'appendfsync always: fsync every time new commands are appended to "
                     "the AOF' (before the reply); WAIT 2 makes both replicas hold it"},
      {.workload = "redis-cluster",
       .setting = "everysec",
       .folder = "redis",
       .node_args = "everysec",
       // A node cut loses acked writes on every node when it is the master's (the replicas
       // resync from the restarted master's shorter AOF; docs/results.md), not a replica's.
       .expect = Verdicts(kLoses, kLoses, kLoses, kMayLose),
       .documented = "Redis: 'appendfsync everysec ... you may lose 1 second of data'; WAIT "
                     "'does not make Redis a strongly consistent store' (replicas in memory)"},
  };
}

std::vector<CustomCell> ClusterPresetCells(const std::string& examples, uint64_t count,
                                           harness::FsKind fs) {
  std::vector<CustomCell> cells;
  for (const ClusterPresetEntry& e : ClusterPresetEntries()) {
    const std::string dir = fmt::format("{}/{}", examples, e.folder);
    cells.push_back({.name = e.workload,
                     .workload = fmt::format("sh {}/workload.sh {}", dir, count),
                     .checker = fmt::format("sh {}/check.sh", dir),
                     .nodes = kClusterPresetNodes,
                     .node_command = fmt::format("sh {}/node.sh{}{}", dir,
                                                 e.node_args.empty() ? "" : " ", e.node_args),
                     .fs = fs,
                     .expect = CellExpect{.models = e.expect},
                     .setting = e.setting});
  }
  return cells;
}

absl::StatusOr<std::string> FindClusterExamples(const std::string& self) {
  if (const char* env = std::getenv("POWERCUT_CLUSTER_EXAMPLES"); env != nullptr && *env != '\0') {
    if (HasExamples(env)) return std::filesystem::absolute(env).string();
    return absl::NotFoundError(fmt::format(
        "$POWERCUT_CLUSTER_EXAMPLES={}: not a folder of the cluster examples (etcd/, nats/ and "
        "redis/, each with node.sh, workload.sh and check.sh)",
        env));
  }
  const InstallLayout layout = InstallLayout::Of(self);
  std::string dir;
  switch (layout.kind()) {
    case InstallLayout::Kind::kInstalled:
      dir = layout.root() + "/share/powercut/cluster";
      break;
    case InstallLayout::Kind::kBuildTree:
      dir = layout.root() + "/workloads/cluster";
      break;
    case InstallLayout::Kind::kLoose:
      dir = layout.root() + "/cluster";
      break;
  }
  if (HasExamples(dir)) return dir;
  return absl::NotFoundError(fmt::format(
      "the cluster preset's example scripts are not at {} (in {}): install powercut or build it "
      "(the build copies workloads/cluster there), or set POWERCUT_CLUSTER_EXAMPLES to a "
      "checkout's "
      "workloads/cluster",
      dir, layout.Describe()));
}

}  // namespace powercut::product
