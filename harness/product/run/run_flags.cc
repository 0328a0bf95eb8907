// The flag parsers of run.h, one vocabulary per flag: the atomic unit, the per-disk flags
// (`--fs`, `--sector`, `--disk-size`, `--flakey-disk`), the recorder (the replay's flags:
// replay_choice.h) and a cluster's (`--nodes`, `--node`: a disk a node, the commands wrapped by the
// launcher).
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <utility>

#include "base/install_layout.h"
#include "base/status_macros.h"
#include "fmt/format.h"
#include "harness/fs/file_system.h"
#include "harness/product/run/recordings.h"
#include "harness/product/run/run.h"

namespace powercut::product {

absl::Status ValidateAtomicUnit(uint32_t unit) {
  if (unit == 0 || unit == 512 || unit == 4096) return absl::OkStatus();
  return absl::InvalidArgumentError(
      fmt::format("--atomic {}: expected 512 or 4096 (bytes; default: the disk's sector)", unit));
}

namespace {

// The count rule of every per-disk flag: one value for every disk, or one per disk; the values
// expanded to one per disk. `text` is the flag's value as given, for the message.
template <typename T>
absl::StatusOr<std::vector<T>> OnePerDisk(std::vector<T> values, uint32_t disks,
                                          const std::string& flag, const std::string& text,
                                          const std::string& what) {
  if (disks == 0) {
    return absl::InvalidArgumentError(
        "--disks 0: a run records at least one disk (--disks 1 is the default)");
  }
  if (values.size() != 1 && values.size() != disks) {
    return absl::InvalidArgumentError(fmt::format(
        "{} {}: {} {} for {} disk{}: give one for every disk or one per disk (--disks N)", flag,
        text, values.size(), what, disks, disks == 1 ? "" : "s"));
  }
  values.resize(disks, values.front());
  return values;
}

// A per-disk flag's text, comma-separated, as one value per disk (OnePerDisk's rule).
absl::StatusOr<std::vector<std::string>> PerDiskValues(const std::string& text, uint32_t disks,
                                                       const std::string& flag,
                                                       const std::string& what) {
  std::vector<std::string> values;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    values.push_back(text.substr(start, comma == std::string::npos ? comma : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return OnePerDisk(std::move(values), disks, flag, text, what);
}

// Each disk's value of a per-disk flag (PerDiskValues), each parsed by `parse`.
template <typename T, typename Parse>
absl::StatusOr<std::vector<T>> ParsePerDisk(const std::string& text, uint32_t disks,
                                            const std::string& flag, const std::string& what,
                                            Parse parse) {
  ASSIGN_OR_RETURN(std::vector<std::string> values, PerDiskValues(text, disks, flag, what));
  std::vector<T> out;
  for (const std::string& value : values) {
    ASSIGN_OR_RETURN(T parsed, parse(value));
    out.push_back(parsed);
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<harness::FsKind>> DiskFileSystems(const std::vector<harness::FsKind>& fs,
                                                             uint32_t disks) {
  if (fs.empty()) return absl::InvalidArgumentError("--fs: give at least one file system");
  // The names were parsed at the edge; the count rule is every per-disk flag's.
  return OnePerDisk(fs, disks, "--fs", harness::FsListName(fs), "file systems");
}

absl::StatusOr<std::vector<harness::SectorFormat>> DiskSectors(const std::string& text,
                                                               uint32_t disks) {
  return ParsePerDisk<harness::SectorFormat>(
      text, disks, "--sector", "sector formats",
      [](const std::string& name) { return harness::ParseSectorFormat(name); });
}

absl::StatusOr<std::vector<uint64_t>> DiskSizes(const std::string& text, uint32_t disks) {
  return ParsePerDisk<uint64_t>(
      text, disks, "--disk-size", "sizes", [](const std::string& size) -> absl::StatusOr<uint64_t> {
        ASSIGN_OR_RETURN(uint64_t bytes, ParseByteSize(size, "--disk-size"));
        if (bytes < (uint64_t{64} << 20)) {
          return absl::InvalidArgumentError(fmt::format(
              "--disk-size {}: at least 64MiB (mkfs needs room for its journal)", size));
        }
        return bytes;
      });
}

absl::Status ValidateFlakeyDisk(const RunOptions::Flakey& f, uint32_t disks) {
  if (f.disk >= 1 && f.disk <= disks) return absl::OkStatus();
  return absl::InvalidArgumentError(
      fmt::format("--flakey-disk {}: the run has {} disk{} (--disks N); name one of 1..{}", f.disk,
                  disks, disks == 1 ? "" : "s", disks));
}

absl::StatusOr<vm::Recording> ParseRecorder(const std::string& text) {
  if (text == "nbd") return vm::Recording::kNbd;
  if (text == "dm-log-writes") return vm::Recording::kLogWrites;
  return absl::InvalidArgumentError(
      fmt::format("--recorder {}: expected nbd or dm-log-writes", text));
}

absl::StatusOr<std::string> FindClusterLauncher(const std::string& self) {
  return FindHelperProgram(self, "powercut-cluster", "POWERCUT_CLUSTER",
                           "the cluster launcher powercut-cluster");
}

absl::Status MakeClusterRun(const std::string& launcher, RunOptions* o) {
  cluster::ClusterSpec& spec = o->cluster;
  RETURN_IF_ERROR(cluster::ValidateNodeCount(spec.nodes));
  if (spec.node_command.empty()) {
    return absl::InvalidArgumentError(
        "--nodes N needs --node CMD: the server each node runs in the foreground until it is "
        "killed (docs/cluster.md)");
  }
  if (spec.workload.empty() && spec.checker.empty()) {
    return absl::InvalidArgumentError("--nodes N needs --workload CMD and --checker CMD");
  }
  if (o->disks != 1 && o->disks != spec.nodes) {
    return absl::InvalidArgumentError(fmt::format(
        "--nodes {} records one disk a node: drop --disks {} (--fs, --sector, --disk-size and "
        "--cache-per-node take one value per node)",
        spec.nodes, o->disks));
  }
  for (harness::FsKind fs : o->fs) {
    if (harness::FileSystemOf(fs).raw()) {
      return absl::InvalidArgumentError(
          "--nodes N: a node keeps its data in a file system (POWERCUT_NODE_DIR): --fs raw is not "
          "for clusters");
    }
  }
  if (o->flakey.mode) {
    // Not for free: the launcher's workload mode stops the workload when a node exits, and a node
    // that fences on its failing disk (what a careful server does on EIO) exits; a failing node
    // while the others serve is a fault of its own (docs/cluster.md, "Live coordinated cuts").
    return absl::InvalidArgumentError(
        "--nodes N: --flakey is not built for clusters yet (docs/cluster.md, \"Not built yet\"): "
        "the replay's coordinated cuts and --live-cuts are");
  }
  o->disks = spec.nodes;
  o->cluster_launcher = launcher;
  spec.checker_timeout_s = o->checker_timeout_s;
  const cluster::ClusterCommands wrapped = cluster::WrapForCluster(spec, launcher);
  o->workload = spec.workload.empty() ? "" : wrapped.workload;
  o->checker = wrapped.checker;
  o->checker_timeout_s = spec.checker_timeout_s + cluster::kLauncherSlackSeconds;
  return absl::OkStatus();
}

}  // namespace powercut::product
