// The matrix's plan: the presets' cells and the cells --workloads/--barriers/--fs name
// (matrix.h: PresetNames, PresetDefaultFs, PlanMatrix).
#include <algorithm>

#include "base/status_macros.h"
#include "fmt/format.h"
#include "harness/fs/file_system.h"
#include "harness/product/matrix/builtin.h"
#include "harness/product/matrix/cluster_cells.h"
#include "harness/product/matrix/matrix.h"
#include "harness/product/run/run.h"

namespace powercut::product {
namespace {

uint64_t DefaultCount(Preset preset, const std::string& workload) {
  if (preset == Preset::kControls) return kControlsCount;
  if (preset == Preset::kDatabases) return kDatabasesCount;
  if (preset == Preset::kFaults) return kFaultsCount;
  return workload.rfind("xlog", 0) == 0 ? 20 : 10;
}

// The headline preset: the claims, one cell each, on ext4.
std::vector<std::pair<std::string, std::string>> HeadlineCells() {
  return {{"xlog", "fdatasync"},
          {"xlog", "fsync"},
          {"xlog", "odsync"},
          {"xlog", "direct_dsync"},
          {"xlog", "none"},
          {"xlog", "direct"},
          {"xlog-append", "sync_file_range"},
          {"rocksdb", "sync"},
          {"rocksdb", "nosync"},
          {"sqlite-wal", "full"}};
}

// The controls preset (docs/results.md, "Controls"): the six black-box programs, then the known-
// good programs: the WAL under every durable barrier, RocksDB sync=true, SQLite WAL FULL.
std::vector<std::pair<std::string, std::string>> ControlsCells() {
  std::vector<std::pair<std::string, std::string>> cells = {
      {"xlog-append", "fdatasync"}, {"xlog", "odsync"},      {"xlog", "direct"},
      {"xlog-append", "ackfirst"},  {"xlog-append", "none"}, {"xlog-append", "sync_file_range"}};
  for (const char* barrier :
       {"fdatasync", "fsync", "odsync", "rwf_dsync", "direct_dsync", "io_uring"}) {
    cells.emplace_back("wal", barrier);
  }
  cells.emplace_back("rocksdb", "sync");
  cells.emplace_back("sqlite-wal", "full");
  return cells;
}

// The databases preset (docs/results.md, "Databases"): every built-in database x setting, each
// judged against what its own documentation promises (the catalog's `documented`).
std::vector<std::pair<std::string, std::string>> DatabasesCells() {
  std::vector<std::pair<std::string, std::string>> cells;
  for (const char* db : {"postgres", "redis", "lmdb", "etcd"}) {
    // Held in a variable: a range-for over `*BuiltinSettings(db)` would outlive the temporary.
    const absl::StatusOr<std::vector<std::string>> settings = BuiltinSettings(db);
    for (const std::string& setting : *settings) cells.emplace_back(db, setting);
  }
  cells.emplace_back("sqlite-wal", "full");
  cells.emplace_back("sqlite-wal", "normal");
  return cells;
}

// The faults preset (docs/results.md, "Faults"): the WAL under every barrier, RocksDB sync=true
// and SQLite WAL FULL, each replayed with live cuts and run on both failing disks.
std::vector<std::pair<std::string, std::string>> FaultsCells() {
  std::vector<std::pair<std::string, std::string>> cells;
  const absl::StatusOr<std::vector<std::string>> barriers = BuiltinSettings("wal");
  for (const std::string& b : *barriers) cells.emplace_back("wal", b);
  cells.emplace_back("rocksdb", "sync");
  cells.emplace_back("sqlite-wal", "full");
  return cells;
}

// The preset's (workload, setting) pairs.
std::vector<std::pair<std::string, std::string>> PresetPairs(Preset preset) {
  switch (preset) {
    case Preset::kHeadline:
      return HeadlineCells();
    case Preset::kControls:
      return ControlsCells();
    case Preset::kDatabases:
      return DatabasesCells();
    case Preset::kFaults:
      return FaultsCells();
    case Preset::kMultidisk:
      // Log and data on different disks (issue 24): the three two-disk controls and the
      // databases' logs on disk 2 (RocksDB's wal_dir, PostgreSQL's pg_wal, etcd's --wal-dir),
      // each recorded on two disks.
      return {{"twodisk", "fdatasync"},        {"twodisk", "direct"},
              {"twodisk", "buffered"},         {"rocksdb-waldisk", "sync"},
              {"postgres-waldisk", "sync-on"}, {"etcd-waldisk", "default"}};
    case Preset::kCluster:  // custom cells with a node command (ClusterPresetCells)
    case Preset::kNone:
      break;
  }
  return {};
}

// The --workloads' (workload, setting) pairs (xlog when none is named): every setting, or those
// --barriers names.
absl::StatusOr<std::vector<std::pair<std::string, std::string>>> WorkloadPairs(
    const MatrixOptions& o) {
  std::vector<std::pair<std::string, std::string>> pairs;
  std::vector<std::string> workloads = o.workloads;
  if (workloads.empty()) workloads = {"xlog"};
  for (const std::string& w : workloads) {
    auto settings = BuiltinSettings(w);
    if (!settings.ok()) return settings.status();
    if (o.barriers.empty()) {
      for (const auto& s : *settings) pairs.emplace_back(w, s);
      continue;
    }
    bool any = false;
    for (const std::string& b : o.barriers) {
      if (std::find(settings->begin(), settings->end(), b) != settings->end()) {
        pairs.emplace_back(w, b);
        any = true;
      }
    }
    if (!any) {
      return absl::InvalidArgumentError(
          fmt::format("--barriers {}: none applies to workload '{}' (its settings: {})",
                      fmt::join(o.barriers, ","), w, fmt::join(*settings, ", ")));
    }
  }
  return pairs;
}

// --fs: at least one file system, none of them raw.
absl::Status CheckMatrixFs(const MatrixOptions& o) {
  if (o.fs.empty()) return absl::InvalidArgumentError("--fs: give at least one file system");
  for (const harness::FsKind f : o.fs) {
    if (harness::FileSystemOf(f).raw()) {
      return absl::InvalidArgumentError(
          fmt::format("--fs raw: the built-in workloads need a file system; use one of {}",
                      harness::FsNames(/*with_raw=*/false)));
    }
  }
  return absl::OkStatus();
}

constexpr Preset kPresets[] = {Preset::kHeadline, Preset::kControls,  Preset::kDatabases,
                               Preset::kFaults,   Preset::kMultidisk, Preset::kCluster};

// The cluster cells: the preset's on every --fs, then the --cells file's. Each is held to the
// rules of `powercut run --nodes` (MakeClusterRun: a file system on every node, no --flakey) here,
// before any guest boots; the cell is wrapped again when it runs.
absl::StatusOr<std::vector<CustomCell>> ClusterAndCustomCells(const MatrixOptions& o) {
  std::vector<CustomCell> cells;
  if (o.preset == Preset::kCluster) {
    if (o.cluster_examples.empty()) {
      return absl::FailedPreconditionError(
          "--preset cluster: the folder of the cluster examples is not known (FindClusterExamples; "
          "set POWERCUT_CLUSTER_EXAMPLES to a checkout's workloads/cluster)");
    }
    for (const harness::FsKind f : o.fs) {
      for (CustomCell& c :
           ClusterPresetCells(o.cluster_examples, o.count ? o.count : kClusterPresetCount, f)) {
        cells.push_back(std::move(c));
      }
    }
  }
  cells.insert(cells.end(), o.custom_cells.begin(), o.custom_cells.end());
  for (const CustomCell& c : cells) {
    if (c.nodes == 0) continue;
    RunOptions r;
    r.fs = {c.fs};
    r.flakey = o.flakey;
    r.cluster = {.nodes = c.nodes,
                 .node_command = c.node_command,
                 .workload = c.workload,
                 .checker = c.checker};
    if (absl::Status s = MakeClusterRun(o.cluster_launcher, &r); !s.ok()) {
      return absl::InvalidArgumentError(
          fmt::format("{}: a cluster cell: {}", c.name, std::string(s.message())));
    }
  }
  return cells;
}

}  // namespace

std::string_view PresetName(Preset preset) {
  switch (preset) {
    case Preset::kHeadline:
      return "headline";
    case Preset::kControls:
      return "controls";
    case Preset::kDatabases:
      return "databases";
    case Preset::kFaults:
      return "faults";
    case Preset::kMultidisk:
      return "multidisk";
    case Preset::kCluster:
      return "cluster";
    case Preset::kNone:
      break;
  }
  return "";
}

std::vector<std::string> PresetNames() {
  std::vector<std::string> names;
  for (const Preset p : kPresets) names.emplace_back(PresetName(p));
  return names;
}

absl::StatusOr<Preset> ParsePreset(std::string_view name) {
  if (name.empty()) return Preset::kNone;
  for (const Preset p : kPresets) {
    if (PresetName(p) == name) return p;
  }
  return absl::InvalidArgumentError(fmt::format("--preset {}: expected one of {}",
                                                std::string(name), fmt::join(PresetNames(), ", ")));
}

std::vector<harness::FsKind> PresetDefaultFs(Preset preset) {
  if (preset != Preset::kControls && preset != Preset::kDatabases) return {harness::DefaultFs()};
  std::vector<harness::FsKind> fs;
  for (const harness::FileSystem& row : harness::AllFileSystems()) {
    if (row.in_per_fs_presets) fs.push_back(row.kind);
  }
  return fs;
}

absl::StatusOr<std::vector<MatrixCell>> PlanMatrix(const MatrixOptions& o) {
  // Every flag is checked here, before --list and before any VM boots.
  RETURN_IF_ERROR(ValidateAtomicUnit(o.atomic_unit));
  std::vector<std::pair<std::string, std::string>> pairs;
  bool builtin = (o.preset != Preset::kNone && o.preset != Preset::kCluster) ||
                 !o.workloads.empty() || (o.custom_cells.empty() && o.preset == Preset::kNone);
  if (!builtin) {
    // Only the --cells file's cells.
  } else if (o.preset != Preset::kNone) {
    pairs = PresetPairs(o.preset);
  } else {
    ASSIGN_OR_RETURN(pairs, WorkloadPairs(o));
  }
  RETURN_IF_ERROR(CheckMatrixFs(o));
  std::vector<std::optional<vm::FlakeyMode>> faults = {std::nullopt};
  if (o.preset == Preset::kFaults) {
    faults = {std::nullopt, vm::FlakeyMode::kErrorWrites, vm::FlakeyMode::kDropWrites};
  }
  if (o.flakey.mode) faults = {o.flakey.mode};
  std::vector<MatrixCell> cells;
  for (const auto& [w, s] : pairs) {
    for (const harness::FsKind f : o.fs) {
      if (auto b = LookupBuiltin(w, s); !b.ok()) return b.status();
      for (const std::optional<vm::FlakeyMode>& fault : faults) {
        cells.push_back({.index = cells.size(),
                         .workload = w,
                         .setting = s,
                         .fs = f,
                         .count = o.count ? o.count : DefaultCount(o.preset, w),
                         .fault = fault});
      }
    }
  }
  ASSIGN_OR_RETURN(const std::vector<CustomCell> custom, ClusterAndCustomCells(o));
  for (const CustomCell& c : custom) {
    cells.push_back({.index = cells.size(),
                     .workload = c.name,
                     .setting = c.setting.empty() ? "custom" : c.setting,
                     .fs = c.fs,
                     .custom = c,
                     .fault = o.flakey.mode});
  }
  return cells;
}

bool PlanHasClusters(const std::vector<MatrixCell>& plan) {
  return std::any_of(plan.begin(), plan.end(), [](const MatrixCell& c) { return c.IsCluster(); });
}

}  // namespace powercut::product
