// powercut matrix
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>

#include "base/process.h"
#include "base/status_macros.h"
#include "fmt/format.h"
#include "harness/check/report.h"
#include "harness/product/html/html_report.h"
#include "harness/product/matrix/builtin.h"
#include "harness/product/matrix/cluster_cells.h"
#include "harness/product/matrix/matrix.h"
#include "harness/product/run/run.h"
#include "tools/powercut/commands.h"
#include "tools/powercut/fault_options.h"
#include "tools/powercut/product_commands.h"

namespace powercut::cli {
namespace {

std::vector<std::string> SplitCommas(const std::vector<std::string>& values) {
  std::vector<std::string> out;
  for (const std::string& v : values) {
    size_t start = 0;
    while (start <= v.size()) {
      size_t comma = v.find(',', start);
      std::string part =
          v.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (!part.empty()) out.push_back(part);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return out;
}

// The flags of `powercut matrix`, as parsed.
struct MatrixArgs {
  product::MatrixOptions o;
  std::vector<std::string> workloads, barriers, fs;
  std::string sector = "512e", shard = "1/1", json, junit, html, workload_binary, agent, cells,
              recordings, recordings_cap = "1GiB", budget, disk_size, check_in;
  std::string preset;  // product::ParsePreset
  // The replay's flags (product::ParseReplayChoice); no --cache: the preset's models.
  std::string cache, window = "16", points = product::kDefaultPoints,
                     states = product::kDefaultStates;
  bool quiet = false, list = false, no_torn = false, no_expect = false;
  int jobs = 1;  // warm guests recording at once (docs/results.md, "Time to verdict")
  FaultArgs faults;
  uint64_t node_cuts = 0;
  uint64_t node_down_ms = 2000;
};

void AddMatrixOptions(CLI::App* m, MatrixArgs* a) {
  m->add_option("--preset", a->preset,
                "headline: the issue's 10 cells on ext4; controls: the known-good and known-bad "
                "programs (6 black-box programs, the WAL under every durable barrier, RocksDB "
                "sync, SQLite WAL FULL) on ext4 and xfs, 8 commits each; databases: PostgreSQL, "
                "Redis, LMDB and SQLite WAL, every setting, against each database's documentation, "
                "on ext4 and xfs, 5 commits each; faults: the WAL under every barrier, RocksDB "
                "sync, SQLite WAL FULL, each with 2 live cuts, on error_writes and on "
                "drop_writes disks (after 3 acks), on ext4, 8 commits each; multidisk: the "
                "twodisk controls and RocksDB, PostgreSQL and etcd with their log on a second "
                "disk, each on two disks; cluster: 3-node etcd, NATS JetStream and Redis "
                "(appendfsync always and everysec), coordinated cuts, 10 acks each "
                "(docs/cluster.md)");
  m->add_option("--workloads", a->workloads,
                fmt::format("{} (comma-separated)", fmt::join(product::BuiltinWorkloads(), ", ")));
  m->add_option("--barriers", a->barriers,
                "settings: barriers (fdatasync, none, direct, ...), rocksdb sync|nosync|nowal, "
                "sqlite full|extra|normal|off, postgres sync-on|sync-off|fsync-off|fpw-off, redis "
                "always|everysec|no, lmdb default|nosync|nometasync, etcd default, twodisk "
                "fdatasync|direct|buffered; default: all of each workload's");
  m->add_option(
      "--fs", a->fs,
      fmt::format("{} (default {}; --preset controls, databases: {})",
                  harness::FsNames(/*with_raw=*/false), harness::FsName(harness::DefaultFs()),
                  harness::FsListName(product::PresetDefaultFs(product::Preset::kControls))));
  m->add_option("--sector", a->sector,
                "the recorded disk's sectors: 512n, 512e (512-byte logical, 4,096-byte "
                "physical) or 4kn")
      ->capture_default_str();
  m->add_option("--cache", a->cache,
                "off,on,lying or all (default off,on,lying; --preset faults: on)");
  m->add_option("--window", a->window, "lying window")->capture_default_str();
  m->add_option("--points", a->points, "crash points: " + std::string(harness::kPointChoices))
      ->capture_default_str();
  m->add_option("--states", a->states, "per point: exhaustive or about N states")
      ->capture_default_str();
  m->add_option("--count", a->o.count,
                "commits per workload run (default: --preset controls 8, databases 5, cluster 10; "
                "else xlog 20, others 10)");
  m->add_option("--seed", a->o.seed, "seed");
  m->add_option("--atomic", a->o.atomic_unit,
                "atomic unit (512 or 4096; default: the disk's physical sector)");
  m->add_flag("--fs-failures-are-violations", a->o.fs_failures_are_violations,
              "count crash states the file system's own tools cannot bring back as violations");
  m->add_option("--shard", a->shard, "K/N: run only this shard's cells")->capture_default_str();
  m->add_flag("--fsck", a->o.fsck, "fsck every state before mounting");
  AddCheckInOption(m, &a->check_in);
  m->add_flag("--exhaustive", a->o.exhaustive,
              "check every state for full counts (default: a model stops at its first "
              "violating state, where its verdict is decided)");
  m->add_option("--budget", a->budget,
                "bound each cell's checking time (30s, 2m, 1h); a pass cut short is incomplete");
  m->add_flag("--no-torn", a->no_torn, "no torn-write variants");
  m->add_option("--timeout", a->o.timeout_s, "seconds per VM run")->capture_default_str();
  m->add_option("--keep", a->o.keep_dir, "keep each cell's recording under this folder");
  AddRecordingsOptions(m, &a->recordings, &a->recordings_cap);
  AddGuestSizeOptions(m, &a->o.guest, &a->disk_size);
  AddKernelOption(m, &a->o.kernel);
  m->add_option("--workload-binary", a->workload_binary, "the powercut-workload binary");
  m->add_option("--json", a->json, "write the JSON report (powercut-matrix/1) here");
  m->add_option("--junit", a->junit, "write a JUnit XML report here");
  m->add_option("--html", a->html, "write the self-contained HTML report here");
  m->add_option("--cells", a->cells,
                "a JSON file of custom cells (workload, checker, expect, ...; docs/run.md); "
                "alone it replaces the built-in cells");
  m->add_option("--max-acks", a->o.max_acks, "more acks from one run is an ack flood")
      ->capture_default_str();
  m->add_flag("--no-expect", a->no_expect,
              "ignore expected verdicts: any violation is a failure (exit 1)");
  m->add_flag("--list", a->list, "print the shard's cells (and their expectations) and exit");
  m->add_flag("--quiet", a->quiet, "no progress on stderr");
  m->add_option("--jobs", a->jobs,
                "warm guests recording cells at once; one cell more than guests is in flight, so "
                "a cell's checks overlap the next cell's recording")
      ->capture_default_str()
      ->check(CLI::Range(1, 16));
  AddFaultOptions(m, &a->faults);
  AddNodeCutOptions(
      m, "on every cluster cell (--preset cluster, or a --cells file's cells with nodes)",
      &a->node_cuts, &a->node_down_ms);
}

// Every flag checked and turned into the matrix's options (the built-in cells' binary and
// expectations resolved once the plan is known).
absl::StatusOr<product::MatrixOptions> ParseMatrixArgs(const MatrixArgs& a) {
  product::MatrixOptions o = a.o;
  o.workloads = SplitCommas(a.workloads);
  o.barriers = SplitCommas(a.barriers);
  ASSIGN_OR_RETURN(o.preset, product::ParsePreset(a.preset));
  o.fs = product::PresetDefaultFs(o.preset);
  if (!a.fs.empty()) {
    o.fs.clear();
    for (const std::string& name : SplitCommas(a.fs)) {
      ASSIGN_OR_RETURN(harness::FsKind fs, harness::ParseFsKind(name));
      o.fs.push_back(fs);
    }
  }
  ASSIGN_OR_RETURN(o.sector, harness::ParseSectorFormat(a.sector));
  ASSIGN_OR_RETURN(o.replay, product::ParseReplayChoice(a.cache, a.window, a.points, a.states));
  if (!a.budget.empty()) {
    ASSIGN_OR_RETURN(o.budget_seconds, harness::ParseBudget(a.budget));
  }
  RETURN_IF_ERROR(ParseGuestDisk(a.disk_size, &o.disk_bytes));
  RETURN_IF_ERROR(
      ApplyFaultArgs(a.faults, product::kFaultsFlakeyAfterAcks, &o.live_cuts, &o.flakey));
  o.node_cuts = a.node_cuts;
  o.node_down_ms = a.node_down_ms;
  o.powercut = SelfPath("powercut");
  o.progress = !a.quiet;
  o.torn = !a.no_torn;
  o.expect = !a.no_expect;
  o.cells_in_flight = a.jobs + 1;
  if (!a.cells.empty()) {
    ASSIGN_OR_RETURN(o.custom_cells, product::LoadCustomCells(a.cells));
  }
  if (o.preset == product::Preset::kCluster) {
    ASSIGN_OR_RETURN(o.cluster_examples, product::FindClusterExamples(o.powercut));
  }
  ASSIGN_OR_RETURN(o.recordings, product::RecordingStoreFor(a.recordings, a.recordings_cap,
                                                            {a.html, a.json, a.junit}));
  ASSIGN_OR_RETURN(o.shard, product::ParseShard(a.shard));
  return o;
}

// The plan's built-in cells run powercut-workload: find it, and read its catalog's expected
// verdicts unless --no-expect.
absl::Status ResolveBuiltinCells(const MatrixArgs& a, const std::vector<product::MatrixCell>& plan,
                                 product::MatrixOptions* o) {
  if (product::PlanHasClusters(plan)) {
    ASSIGN_OR_RETURN(o->cluster_launcher, product::FindClusterLauncher(o->powercut));
  }
  bool builtin =
      std::any_of(plan.begin(), plan.end(), [](const product::MatrixCell& c) { return !c.custom; });
  if (!builtin) return absl::OkStatus();
  ASSIGN_OR_RETURN(o->workload_binary, product::FindWorkloadBinary(a.workload_binary, o->powercut));
  if (o->expect) {
    ASSIGN_OR_RETURN(o->expectations, product::LoadBuiltinExpectations(o->workload_binary));
  }
  return absl::OkStatus();
}

// --list: the shard's cells with the expectations the run would apply.
void ListCells(const std::vector<product::MatrixCell>& plan, const product::MatrixOptions& o) {
  for (const auto& c : plan) {
    if (!o.shard.Contains(c.Name())) continue;
    product::CellExpect e;
    if (c.custom) {
      e = c.custom->expect;
    } else if (auto it = o.expectations.find(c.workload + "-" + c.setting);
               it != o.expectations.end()) {
      e = it->second.ForFs(c.fs);  // the per-fs expectations, as the run applies them
    }
    if (!o.expect) e = product::CellExpect{};
    // The rows the cell will have: the failing disk's mode, or the cache models and live cuts.
    std::vector<product::ModelKind> rows;
    if (c.fault) {
      rows.push_back(product::ModelKindOf(*c.fault));
    } else {
      // The models the cell is replayed under (the faults preset: on only).
      for (const harness::CacheModel& m : product::MatrixModels(o)) {
        if (auto kind = product::ModelKindOf(m)) rows.push_back(*kind);
      }
      if (o.live_cuts > 0 || o.preset == product::Preset::kFaults) {
        rows.push_back(product::ModelKind::kLive);
      }
      if (o.node_cuts > 0 && c.IsCluster()) {
        rows.push_back(product::ModelKind::kNodeCut);
      }
    }
    if (!o.expect) {  // the raw rule claims no expectation
      std::printf("%-36s no expectation (--no-expect: any violation fails)\n", c.Name().c_str());
      continue;
    }
    std::string expect = e.error ? "error=" + std::string(product::RunErrorName(e.error)) : "";
    for (size_t i = 0; !e.error && i < rows.size(); ++i) {
      expect += fmt::format("{}{}={}", i ? " " : "", product::ModelKindName(rows[i]),
                            ExpectedVerdictName(e.For(rows[i])));
    }
    std::printf("%-36s expect %s\n", c.Name().c_str(), expect.c_str());
  }
}

// `powercut matrix` once its flags are parsed; returns the exit code.
int Matrix(const MatrixArgs& a) {
  auto parsed = ParseMatrixArgs(a);
  if (!parsed.ok()) return CouldNotRun(std::string(parsed.status().message()));
  product::MatrixOptions o = *std::move(parsed);
  auto plan = product::PlanMatrix(o);
  if (!plan.ok()) return CouldNotRun(std::string(plan.status().message()));
  if (auto s = ResolveBuiltinCells(a, *plan, &o); !s.ok()) {
    return CouldNotRun(std::string(s.message()));
  }
  if (a.list) {
    ListCells(*plan, o);
    return 0;
  }
  auto check_in = product::ParseCheckIn(a.check_in);
  if (!check_in.ok()) return CouldNotRun(std::string(check_in.status().message()));
  if (*check_in == product::CheckIn::kGuest && o.fsck) {
    return CouldNotRun("--fsck runs on a host copy of each state: with --check-in guest drop it");
  }
  auto report = product::RunMatrix(
      o, product::VmCellRunner(product::AgentHint(o.powercut), o.fs, a.jobs, o.kernel, *check_in));
  if (!report.ok()) return CouldNotRun(std::string(report.status().message()));
  return PrintAndWriteReports(*report, product::HeadlineTable(*report),
                              product::MatrixToJson(*report),
                              {.json = a.json,
                               .junit = a.junit,
                               .html = a.html,
                               .html_report =
                                   [](const product::MatrixReport& r) {
                                     return product::HtmlReport(r, "powercut matrix");
                                   }},
                              a.quiet);
}

}  // namespace

void AddMatrixCommand(CLI::App& app, int* exit_code) {
  auto a = std::make_shared<MatrixArgs>();
  CLI::App* m = app.add_subcommand(
      "matrix",
      "the headline table: one recording per workload x setting x fs, replayed under "
      "every cache model (exit 0 every cell as expected, 1 some cell not as expected, 2 a cell "
      "could not run)");
  AddMatrixOptions(m, a.get());
  m->callback([=] { *exit_code = Matrix(*a); });
}

int PrintAndWriteReports(const product::MatrixReport& report, const std::string& table,
                         const nlohmann::json& json, const ReportFiles& files, bool quiet) {
  std::printf("%s", table.c_str());
  if (std::string phases = product::RecordPhasesSummary(report.cells); !phases.empty() && !quiet) {
    std::fprintf(stderr, "%s\n", phases.c_str());
  }
  int exit_code = product::MatrixExitCode(report);
  auto write = [&](const std::string& path, const std::string& text) {
    if (path.empty()) return;
    if (auto s = harness::WriteTextFile(path, text); !s.ok()) {
      exit_code = CouldNotRun(std::string(s.message()));
    }
  };
  write(files.json, json.dump(2) + "\n");
  write(files.junit, product::MatrixJunit(report));
  if (!files.html.empty()) write(files.html, files.html_report(report));
  return exit_code;
}

}  // namespace powercut::cli
