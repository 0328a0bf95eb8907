// `powercut matrix`: the headline table. One recording per (workload, setting, fs) cell, replayed
// under every cache model; cells run one after another (recorded in one warm guest) and a cell that
// cannot run is reported as such while the rest still runs. `--shard K/N` keeps the cells of one
// shard (harness/product/matrix/shard.h) and records the plan's size, so `powercut merge` can
// combine shards into exactly the unsharded report. Each cell is judged against its expected
// verdict (CellExpect: the workload catalog's for built-in cells, the --cells file's for custom
// ones), so a matrix full of expected losses still exits 0 (docs/run.md, "Expected verdicts").
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "harness/fs/file_system.h"
#include "harness/product/cell/cell_result.h"
#include "harness/product/matrix/custom_cells.h"
#include "harness/product/matrix/shard.h"
#include "harness/product/run/recordings.h"
#include "harness/product/run/replay_choice.h"
#include "harness/vm/warm/vm_run.h"
#include "nlohmann/json.hpp"

namespace powercut::product {

// The presets (`--preset`): "headline" (the 10 cells on ext4), "controls" (the
// known-good and known-bad programs the suite's controls test runs:
// harness/product/matrix/matrix_plan.cc, docs/results.md), "databases" (PostgreSQL, Redis, LMDB and
// SQLite WAL, every setting, judged against each database's documentation: docs/your-database.md)
// "multidisk" (log and data on two recorded disks: the twodisk controls and RocksDB's wal_dir
// on disk 2; docs/run.md) and "cluster" (3-node etcd, NATS JetStream and Redis, coordinated cuts:
// cluster_cells.h, docs/cluster.md).
enum class Preset { kNone, kHeadline, kControls, kDatabases, kFaults, kMultidisk, kCluster };
std::vector<std::string> PresetNames();      // every preset but kNone, in the enum's order
std::string_view PresetName(Preset preset);  // "" for kNone
// `--preset NAME` ("" is kNone); an unknown name is an error listing PresetNames.
absl::StatusOr<Preset> ParsePreset(std::string_view name);
// The file systems a preset runs on when --fs is not given: controls and databases every row
// with in_per_fs_presets (ext4 and xfs), else the default file system (harness/fs/).
std::vector<harness::FsKind> PresetDefaultFs(Preset preset);
// Commits per cell of the controls preset (cheap: every cell boots a VM).
inline constexpr uint64_t kControlsCount = 8;
// Commits per cell of the databases preset: every crash state starts a server (PostgreSQL: about
// 0.5 s per state on the host), so a few commits keep a cell near a minute.
inline constexpr uint64_t kDatabasesCount = 5;

struct MatrixOptions {
  Preset preset = Preset::kNone;       // parsed at the edge (ParsePreset)
  std::vector<std::string> workloads;  // built-in names (harness/product/matrix/builtin.h)
  std::vector<std::string> barriers;   // settings; empty: each workload's own list
  std::vector<harness::FsKind> fs = {harness::DefaultFs()};  // parsed at the edge
  // The recorded disk's sectors, every cell (`--sector`).
  harness::SectorFormat sector = harness::kDefaultSectorFormat;
  // Every cell's replay (`--cache`, `--window`, `--points`, `--states`), parsed at the edge; the
  // same defaults as `powercut run` (one physics: docs/cache-models.md). No models: the preset's
  // own (MatrixModels).
  ReplayChoice replay;
  // Commits per workload run; 0: the default (controls preset 8; else xlog 20, others 10).
  uint64_t count = 0;
  uint64_t seed = 1;
  GuestSize guest;           // every cell's guest (`--guest-memory`, `--guest-cpus`)
  uint64_t disk_bytes = 0;   // every cell's disk (`--disk-size`; 0: its file system's default)
  uint32_t atomic_unit = 0;  // 0: the recorded disk's physical sector (4,096 B on the 512e default)
  bool torn = true;          // torn-write variants, on by default everywhere
  bool fs_failures_are_violations = false;
  // Every cell: check every state (harness::CheckOptions::exhaustive); bound each cell's
  // checking time (budget_seconds, 0 = none).
  bool exhaustive = false;
  double budget_seconds = 0;
  Shard shard;
  bool fsck = false;
  std::string workload_binary;  // powercut-workload (absolute)
  std::string keep_dir;         // keep each cell's recording in <keep_dir>/<cell name>
  // Failing cells' recordings (when not --keep): where and how much
  // (harness/product/run/recordings.h).
  RecordingStore recordings;
  int timeout_s = 600;
  double checker_timeout_s = 60;
  std::string powercut = "powercut";
  bool progress = true;
  // More acks than this from one workload run is an ack flood (the cell does not run); the
  // built-in workloads send 10-20.
  uint64_t max_acks = 10000;
  // Judge cells against their expected verdicts (exit 0 = every cell as expected). false: the
  // raw rule, every cache model is expected to survive (`--no-expect`).
  bool expect = true;
  // Built-in expectations by catalog name "<workload>-<setting>" (LoadBuiltinExpectations).
  std::map<std::string, CellExpect> expectations;
  std::vector<CustomCell> custom_cells;  // --cells FILE.json
  // Clusters (custom cells with nodes, the cluster preset): the launcher powercut-cluster
  // (FindClusterLauncher) and the examples folder the preset's scripts are in
  // (FindClusterExamples), both absolute; resolved at the edge when the plan has such cells.
  std::string cluster_launcher;
  std::string cluster_examples;
  // Cells run at once (each records, then checks); the CLI runs one more than its warm guests
  // (`--jobs`), so that one cell's checks overlap the next one's recording. The runner must be
  // thread-safe when this is above 1 (VmCellRunner is).
  int cells_in_flight = 1;
  std::string kernel;  // `--kernel PATH` ("" = Debian's; vm::PrepareVm)
  // The fault modes (docs/live-cuts.md): live cuts on every replayed cell (`--live-cuts`); with
  // flakey.mode, every cell runs on that failing disk instead (`--flakey`). The faults preset
  // runs each of its cells three ways: replay + live cuts, error_writes, drop_writes.
  uint64_t live_cuts = 0;
  RunOptions::Flakey flakey;
  // A cluster's single-node cuts (`--node-cuts K`, `--node-down D`; docs/cluster.md): K more
  // recordings of every cluster cell, each with one node cut (RunOptions::node_cuts); a plan
  // without cluster cells refuses them.
  uint64_t node_cuts = 0;
  uint64_t node_down_ms = 2000;
  // Every cell's mkfs and mounts (`--mkfs-options`, `--mount-options`; RunOptions).
  std::string mkfs_options;
  std::string mount_options;
  int workers = 0;  // check workers per cell (RunOptions::workers; 0: one per core)
  // `powercut fstest` (harness/product/fstest/fstest_run.h): what generated the cells. Set, the
  // report's parameters carry it instead of the cells themselves.
  nlohmann::json fstest;
};

// The faults preset's defaults: live cuts per cell, commits per run, the ack the disk fails after
// and how long it stays failed (its window then heals) when the flags do not say.
inline constexpr uint64_t kFaultsLiveCuts = 2;
inline constexpr uint64_t kFaultsCount = 8;
inline constexpr int64_t kFaultsFlakeyAfterAcks = 3;

struct MatrixCell {
  size_t index = 0;
  std::string workload, setting;
  harness::FsKind fs = harness::DefaultFs();
  uint64_t count = 0;
  std::optional<CustomCell> custom;     // a --cells cell (setting "custom") or a cluster preset's
  std::optional<vm::FlakeyMode> fault;  // none: replayed (and live cuts); else a failing disk
  bool IsCluster() const { return custom && custom->nodes > 0; }
  std::string Name() const {
    return workload + "/" + setting + "/" + harness::FsName(fs) +
           (custom ? custom->variant : std::string()) +
           (fault ? "/" + std::string(vm::FlakeyModeName(*fault)) : "");
  }
};

// The cache models every cell is replayed under: options.replay's, else the faults preset's
// (on: the model its live cuts are checked against, docs/results.md "Faults"), else off, on and
// lying.
std::vector<harness::CacheModel> MatrixModels(const MatrixOptions& options);

// Whether some cell of the plan is a cluster (it needs MatrixOptions::cluster_launcher).
bool PlanHasClusters(const std::vector<MatrixCell>& plan);
// The whole (unsharded) plan; fails on an unknown workload/setting/fs/preset, and on a cluster
// cell that `powercut run --nodes` would refuse (MakeClusterRun: --flakey, a raw disk).
absl::StatusOr<std::vector<MatrixCell>> PlanMatrix(const MatrixOptions& options);

struct MatrixReport {
  nlohmann::json parameters;  // what must match for shards to merge
  std::string shard = "1/1";  // or "merged"
  size_t plan_cells = 0;      // cells in the unsharded plan
  std::vector<CellResult> cells;
  double seconds = 0;
  RecordingStore recordings;  // failing cells' recordings kept for the rebuild commands
  // Guests booted to judge states, and recording guests that judged after the last recording
  // (RunOutcome::check_guests_*; summed over merged shards).
  uint64_t check_guests_booted = 0;
  uint64_t check_guests_adopted = 0;
};

// Runs the shard's cells. `run_cell` runs one cell (tests pass a fake; the default boots the VM).
using CellRunner = std::function<RunOutcome(const MatrixCell&, const RunOptions&)>;
absl::StatusOr<MatrixReport> RunMatrix(const MatrixOptions& options, const CellRunner& run_cell);
// The default runner: PrepareVm once, then RunWorkload per cell (errors become outcomes) in one
// warm guest (vm::GuestPool): it boots once, loading the modules of every file system in `fs`,
// and is replaced only when a cell leaves it unusable (a hang, a disk it would not release).
// `guests`: warm guests recording at once (vm::GuestPool); the runner is thread-safe.
// `check_in`: where the cells' file-system states are judged (guests kept warm across cells).
CellRunner VmCellRunner(const std::string& agent_hint, const std::vector<harness::FsKind>& fs = {},
                        int guests = 1, const std::string& kernel = "",
                        CheckIn check_in = CheckIn::kHost);

// The parameters object of a report (everything that decides which cells exist and how they
// are checked; not the shard).
nlohmann::json MatrixParameters(const MatrixOptions& options);

nlohmann::json MatrixToJson(const MatrixReport& report);
absl::StatusOr<MatrixReport> MatrixFromJson(const nlohmann::json& j);

// Per cell and cache model: acks lost in the worst state / states checked / violating states,
// `!` after a model whose verdict is not the expected one, and the cell's verdict; cells that
// could not run say why.
std::string HeadlineTable(const MatrixReport& report);
// The cache models of the report's cells, in the order they first appear: the table's columns.
std::vector<std::string> CacheColumns(const MatrixReport& report);
// How and by which kernels the cells' crash states were judged, e.g. "guest mount on kernel
// 6.1.0-28-amd64" (distinct values, comma-separated; "" when no cell was checked).
std::string MatrixJudges(const MatrixReport& report);
// One test case per cell x cache model (and one per cell that could not run).
std::string MatrixJunit(const MatrixReport& report);
// 0 every cell as expected, 1 some cell not as expected (CellResult::Verdict), 2 some cell
// could not run without that being expected (and none was unexpected).
int MatrixExitCode(const MatrixReport& report);

}  // namespace powercut::product
