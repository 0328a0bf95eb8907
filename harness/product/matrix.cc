#include "harness/product/matrix.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "base/xml_escape.h"
#include "fmt/format.h"
#include "harness/check/file_system.h"
#include "harness/check/report.h"
#include "harness/product/builtin.h"
#include "harness/product/progress.h"

namespace powercut::product {
namespace {

using powercut::XmlEscape;

uint64_t DefaultCount(const std::string& preset, const std::string& workload) {
  if (preset == "controls") return kControlsCount;
  if (preset == "databases") return kDatabasesCount;
  if (preset == "faults") return kFaultsCount;
  return workload.rfind("xlog", 0) == 0 ? 20 : 10;
}

// The file system's outcomes beside a model's verdict in the table: "fs!N" (N states the file
// system's own tools could not bring back), "fsfixN" (N states it came back from by repairs).
std::string FsMarks(const CellModel& m) {
  std::string marks;
  if (m.fs_unrecoverable) marks += fmt::format(" fs!{}", m.fs_unrecoverable);
  if (m.fs_repaired) marks += fmt::format(" fsfix{}", m.fs_repaired);
  return marks;
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

}  // namespace

std::vector<std::string> PresetNames() {
  return {"headline", "controls", "databases", "faults", "multidisk"};
}

std::vector<std::string> PresetDefaultFs(const std::string& preset) {
  if (preset == "controls" || preset == "databases") return {"ext4", "xfs"};
  return {"ext4"};
}

absl::StatusOr<std::vector<MatrixCell>> PlanMatrix(const MatrixOptions& o) {
  // Every flag is checked here, before --list and before any VM boots.
  for (const absl::Status& s :
       {ParseCacheList(o.cache, o.window).status(), ParsePoints(o.points).status(),
        ParseStates(o.states).status(), ValidateAtomicUnit(o.atomic_unit)}) {
    if (!s.ok()) return s;
  }
  std::vector<std::pair<std::string, std::string>> pairs;
  bool builtin = !o.preset.empty() || !o.workloads.empty() || o.custom_cells.empty();
  if (!builtin) {
    // Only the --cells file's cells.
  } else if (!o.preset.empty()) {
    if (o.preset == "headline") {
      pairs = HeadlineCells();
    } else if (o.preset == "controls") {
      pairs = ControlsCells();
    } else if (o.preset == "databases") {
      pairs = DatabasesCells();
    } else if (o.preset == "faults") {
      pairs = FaultsCells();
    } else if (o.preset == "multidisk") {
      // Log and data on different disks (issue 24): the three two-disk controls and the
      // databases' logs on disk 2 (RocksDB's wal_dir, PostgreSQL's pg_wal, etcd's --wal-dir),
      // each recorded on two disks.
      pairs = {{"twodisk", "fdatasync"},        {"twodisk", "direct"},
               {"twodisk", "buffered"},         {"rocksdb-waldisk", "sync"},
               {"postgres-waldisk", "sync-on"}, {"etcd-waldisk", "default"}};
    } else {
      return absl::InvalidArgumentError(
          fmt::format("--preset {}: expected one of {}", o.preset, fmt::join(PresetNames(), ", ")));
    }
  } else {
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
  }
  if (o.fs.empty()) return absl::InvalidArgumentError("--fs: give at least one file system");
  for (const std::string& f : o.fs) {
    absl::StatusOr<harness::FsKind> kind = harness::ParseFsKind(f);
    if (!kind.ok()) return kind.status();
    if (harness::FileSystemOf(*kind).raw()) {
      return absl::InvalidArgumentError(
          "--fs raw: the built-in workloads need a file system; use ext4, xfs or btrfs");
    }
  }
  std::vector<std::string> faults = {""};
  if (o.preset == "faults") faults = {"", "error_writes", "drop_writes"};
  if (!o.flakey.mode.empty()) faults = {o.flakey.mode};
  std::vector<MatrixCell> cells;
  for (const auto& [w, s] : pairs) {
    for (const std::string& f : o.fs) {
      if (auto b = LookupBuiltin(w, s); !b.ok()) return b.status();
      for (const std::string& fault : faults) {
        cells.push_back({.index = cells.size(),
                         .workload = w,
                         .setting = s,
                         .fs = f,
                         .count = o.count ? o.count : DefaultCount(o.preset, w),
                         .fault = fault});
      }
    }
  }
  for (const CustomCell& c : o.custom_cells) {
    cells.push_back({.index = cells.size(),
                     .workload = c.name,
                     .setting = c.setting.empty() ? "custom" : c.setting,
                     .fs = c.fs,
                     .custom = c,
                     .fault = o.flakey.mode});
  }
  return cells;
}

nlohmann::json MatrixParameters(const MatrixOptions& o) {
  nlohmann::json custom = nlohmann::json::array();
  for (const CustomCell& c : o.custom_cells) custom.push_back(CustomCellToJson(c));
  nlohmann::json j = {{"preset", o.preset},
                      {"workloads", o.workloads},
                      {"barriers", o.barriers},
                      {"fs", o.fs},
                      {"sector", harness::SectorFormatName(o.sector)},
                      {"guest", GuestSizeToJson(o.guest)},
                      {"cache", o.cache},
                      {"window", o.window},
                      {"points", o.points},
                      {"states", o.states},
                      {"count", o.count},
                      {"seed", o.seed},
                      {"atomic_unit", o.atomic_unit},
                      {"fsck", o.fsck},
                      {"torn", o.torn},
                      {"fs_failures_are_violations", o.fs_failures_are_violations},
                      {"exhaustive", o.exhaustive},
                      {"budget_seconds", o.budget_seconds},
                      {"max_acks", o.max_acks},
                      {"expect", o.expect},
                      {"custom_cells", custom},
                      {"live_cuts", o.live_cuts},
                      {"flakey",
                       {{"mode", o.flakey.mode},
                        {"after_acks", o.flakey.after_acks},
                        {"window_ms", o.flakey.window.count()}}}};
  if (!o.kernel.empty()) j["kernel"] = o.kernel;  // only then: older reports merge unchanged
  if (!o.mkfs_options.empty()) j["mkfs_options"] = o.mkfs_options;
  if (!o.mount_options.empty()) j["mount_options"] = o.mount_options;
  if (!o.fstest.is_null()) {
    // The cells follow from the generator's parameters (and thousands would bloat every shard).
    j.erase("custom_cells");
    j["fstest"] = o.fstest;
  }
  return j;
}

CellRunner VmCellRunner(const std::string& agent_hint, const std::vector<std::string>& fs,
                        int guests, const std::string& kernel, CheckIn check_in) {
  struct Shared {
    absl::Mutex mu;  // held while preparing; the pools are thread-safe
    absl::StatusOr<vm::VmEnvironment> env = absl::UnknownError("not prepared");
    bool prepared = false;
    std::unique_ptr<vm::GuestPool> pool;
    std::unique_ptr<vm::GuestCheckPool> check_pool;  // --check-in guest
  };
  auto shared = std::make_shared<Shared>();
  vm::GuestConfig preload;
  for (const std::string& f : fs) {
    if (absl::StatusOr<harness::FsKind> kind = harness::ParseFsKind(f); kind.ok()) {
      preload.Add({.modules = vm::GuestModulesFor(*kind, false, false), .keep_paths = {}});
    }
  }
  return [=](const MatrixCell&, const RunOptions& options) {
    {
      absl::MutexLock lock(&shared->mu);
      if (!shared->prepared) {
        shared->env = vm::PrepareVm(agent_hint, kernel);
        shared->prepared = true;
        if (shared->env.ok()) {
          shared->pool = std::make_unique<vm::GuestPool>(*shared->env, preload,
                                                         std::chrono::seconds(20), guests);
        }
        if (shared->env.ok() && check_in == CheckIn::kGuest) {
          shared->check_pool = std::make_unique<vm::GuestCheckPool>(*shared->env);
        }
      }
    }
    if (!shared->env.ok()) {
      RunOutcome out;
      out.error_kind = "vm";
      out.error =
          fmt::format("cannot prepare the VM: {}", std::string(shared->env.status().message()));
      return out;
    }
    RunOptions with_judges = options;
    with_judges.check_pool = shared->check_pool.get();
    return RunWorkload(*shared->env, with_judges, shared->pool.get());
  };
}

absl::StatusOr<MatrixReport> RunMatrix(const MatrixOptions& o, const CellRunner& run_cell) {
  auto start = std::chrono::steady_clock::now();
  auto plan = PlanMatrix(o);
  if (!plan.ok()) return plan.status();
  auto models = ParseCacheList(o.cache, o.window);
  if (!models.ok()) return models.status();
  auto points = ParsePoints(o.points);
  if (!points.ok()) return points.status();
  auto states = ParseStates(o.states);
  if (!states.ok()) return states.status();
  bool builtin = std::any_of(plan->begin(), plan->end(),
                             [](const MatrixCell& c) { return !c.custom.has_value(); });
  if (builtin && o.workload_binary.empty()) {
    return absl::InvalidArgumentError("matrix: no powercut-workload binary given");
  }
  MatrixReport report;
  report.parameters = MatrixParameters(o);
  report.shard = o.shard.ToString();
  report.plan_cells = plan->size();
  std::vector<MatrixCell> mine;
  for (const MatrixCell& c : *plan) {
    if (o.shard.Contains(c.Name())) mine.push_back(c);
  }
  Progress progress("matrix: cells", mine.size(), o.progress);
  report.recordings = o.recordings;
  std::vector<std::optional<CellResult>> results(mine.size());
  std::atomic<size_t> next{0}, finished{0};
  // One cell: record, check, judge. Several run at once when cells_in_flight > 1.
  auto run_one = [&](size_t i) {
    const MatrixCell& c = mine[i];
    progress.Update(finished.load(), "running " + c.Name());
    RunOptions r;
    r.name = c.Name();
    r.fs = c.fs;
    r.timeout = std::chrono::seconds(o.timeout_s);
    r.checker_timeout_s = o.checker_timeout_s;
    r.max_acks = o.max_acks;
    r.guest = o.guest;
    CellExpect expect;
    std::vector<std::string> notes;
    if (c.custom) {
      r.workload = c.custom->workload;
      r.checker = c.custom->checker;
      if (c.custom->timeout_s > 0) r.timeout = std::chrono::seconds(c.custom->timeout_s);
      if (c.custom->checker_timeout_s > 0) r.checker_timeout_s = c.custom->checker_timeout_s;
      if (c.custom->max_acks > 0) r.max_acks = c.custom->max_acks;
      expect = c.custom->expect;
    } else {
      BuiltinCell b = *LookupBuiltin(c.workload, c.setting);
      r.disks = b.disks;
      r.workload = BuiltinRunCommand(o.workload_binary, b, c.count, o.seed);
      r.checker = BuiltinCheckCommand(o.workload_binary, b);
      std::string key = c.workload + "-" + c.setting;
      if (auto it = o.expectations.find(key); it != o.expectations.end()) {
        expect = it->second.ForFs(c.fs);
      } else if (o.expect) {
        notes.push_back(fmt::format(
            "the workload catalog has no expected verdict for {}: every cache model is expected "
            "to survive",
            key));
      }
    }
    if (!o.expect) expect = CellExpect{};
    r.models = *models;
    r.points = *points;
    r.states = *states;
    r.states.torn = o.torn;
    r.fs_failures_are_violations = o.fs_failures_are_violations;
    r.exhaustive = o.exhaustive;
    r.budget_seconds = o.budget_seconds;
    r.atomic_unit = o.atomic_unit;
    r.sector = o.sector;
    r.seed = o.seed;
    r.fsck = o.fsck;
    r.powercut = o.powercut;
    r.mkfs_options = o.mkfs_options;
    r.mount_options = o.mount_options;
    r.workers = o.workers;
    if (o.preset == "faults" && o.cache == MatrixOptions{}.cache) {
      // The faults preset replays under cache on only, the model its live cuts are checked
      // against (docs/results.md, "Faults"); --cache with another list changes it.
      r.models = {harness::CacheModel{.mode = harness::CacheMode::kOn}};
    }
    if (c.fault.empty()) {
      r.live_cuts = o.live_cuts != 0 ? o.live_cuts : o.preset == "faults" ? kFaultsLiveCuts : 0;
    } else {
      r.flakey = o.flakey;
      r.flakey.mode = c.fault;
      if (o.preset == "faults" && o.flakey.mode.empty()) {
        r.flakey.after_acks = kFaultsFlakeyAfterAcks;
      }
    }
    // Only when the line is shown: the engine counts the states up front for it (one more
    // state-generation pass).
    if (progress.enabled()) {
      r.on_state_checked = [&progress](uint64_t done, uint64_t total) {
        progress.UpdateStates(done, total);
      };
    }
    if (!o.keep_dir.empty()) {
      std::string name = c.Name();
      std::replace(name.begin(), name.end(), '/', '_');
      r.keep_dir = o.keep_dir + "/" + name;
    } else {
      r.recordings = &report.recordings;
    }
    CellResult cell{.index = c.index,
                    .name = c.Name(),
                    .workload = c.workload,
                    .setting = c.setting,
                    .fs = c.fs,
                    .workload_command = r.workload,
                    .checker_command = r.checker};
    FillCell(run_cell(c, r), &cell);
    cell.expect = std::move(expect);
    cell.notes.insert(cell.notes.end(), notes.begin(), notes.end());
    results[i] = std::move(cell);
    ++finished;
  };
  auto worker = [&] {
    for (size_t i = next++; i < mine.size(); i = next++) run_one(i);
  };
  std::vector<std::thread> threads;
  const size_t extra = std::min<size_t>(static_cast<size_t>(std::max(o.cells_in_flight, 1)),
                                        std::max<size_t>(mine.size(), 1)) -
                       1;
  for (size_t t = 0; t < extra; ++t) threads.emplace_back(worker);
  worker();
  for (std::thread& t : threads) t.join();
  for (std::optional<CellResult>& cell : results) report.cells.push_back(std::move(*cell));
  progress.Update(mine.size(), "done");
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

nlohmann::json MatrixToJson(const MatrixReport& r) {
  nlohmann::json cells = nlohmann::json::array();
  for (const CellResult& c : r.cells) cells.push_back(CellToJson(c));
  return {{"schema", "powercut-matrix/1"},      {"parameters", r.parameters}, {"shard", r.shard},
          {"plan_cells", r.plan_cells},         {"seconds", r.seconds},       {"cells", cells},
          {"recordings", r.recordings.ToJson()}};
}

absl::StatusOr<MatrixReport> MatrixFromJson(const nlohmann::json& j) {
  try {
    if (j.value("schema", "") != "powercut-matrix/1") {
      return absl::InvalidArgumentError(
          "not a powercut matrix report (schema powercut-matrix/1 expected)");
    }
    MatrixReport r;
    r.parameters = j.at("parameters");
    r.shard = j.at("shard").get<std::string>();
    r.plan_cells = j.at("plan_cells").get<size_t>();
    r.seconds = j.value("seconds", 0.0);
    for (const auto& c : j.at("cells")) {
      auto cell = CellFromJson(c);
      if (!cell.ok()) return cell.status();
      r.cells.push_back(std::move(*cell));
    }
    return r;
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(fmt::format("matrix report: {}", e.what()));
  }
}

std::string HeadlineTable(const MatrixReport& r) {
  std::vector<std::string> caches;
  for (const CellResult& c : r.cells) {
    for (const CellModel& m : c.models) {
      if (std::find(caches.begin(), caches.end(), m.cache) == caches.end()) {
        caches.push_back(m.cache);
      }
    }
  }
  std::string s = fmt::format("{:<36}", "cell (workload/setting/fs)");
  for (const auto& cache : caches) s += fmt::format("  {:<24}", "cache " + cache);
  s += "\n";
  s += fmt::format("{:<36}", "");
  for (size_t i = 0; i < caches.size(); ++i) s += fmt::format("  {:<24}", "lost/states/violating");
  s += "\n";
  size_t ok = 0, unexpected = 0, errors = 0;
  for (const CellResult& c : r.cells) {
    std::string verdict = c.Verdict();
    ok += verdict == "ok";
    unexpected += verdict == "unexpected";
    errors += verdict == "error";
    s += fmt::format("{:<36}", c.name);
    if (!c.ran) {
      std::string first_line = c.error.substr(0, c.error.find('\n'));
      if (verdict == "ok") {
        s += fmt::format("  as expected: could not run ({}): {}\n", c.error_kind, first_line);
      } else {
        s += fmt::format("  COULD NOT RUN ({}): {}{}\n", c.error_kind, first_line,
                         verdict == "unexpected" ? "  UNEXPECTED: " + c.Unexpected() : "");
      }
      continue;
    }
    for (const auto& cache : caches) {
      std::string cellText = "-";
      for (const CellModel& m : c.models) {
        if (m.cache != cache) continue;
        cellText = fmt::format("{} {}/{}/{}{}{}{}{}",
                               m.violations   ? "FAIL"
                               : m.complete() ? "pass"
                                              : "incomplete",
                               CellLostText(m), CellStatesText(m), m.violations, FsMarks(m),
                               m.checker_failures ? fmt::format(" chk!{}", m.checker_failures) : "",
                               m.could_not_check ? fmt::format(" ?{}", m.could_not_check) : "",
                               c.AsExpected(m) ? "" : " !");
      }
      s += fmt::format("  {:<24}", cellText);
    }
    s += verdict == "ok" ? "  ok" : "  UNEXPECTED: " + c.Unexpected();
    s += "\n";
  }
  bool fs_outcomes = false, checker_failures = false;
  for (const CellResult& c : r.cells) {
    for (const CellModel& m : c.models) {
      fs_outcomes = fs_outcomes || m.fs_unrecoverable || m.fs_repaired;
      checker_failures = checker_failures || m.checker_failures > 0;
    }
  }
  std::vector<harness::ModelResult> stops;
  for (const CellResult& c : r.cells) {
    for (const CellModel& m : c.models) {
      stops.emplace_back().stopped = harness::StopReasonFromName(m.stopped);
    }
  }
  if (std::string legend = harness::StatesLegend(stops); !legend.empty()) s += legend + "\n";
  if (std::string judges = MatrixJudges(r); !judges.empty()) {
    s += "crash states judged by " + judges + "\n";
  }
  if (fs_outcomes) {
    s += "fs!N: N crash states the file system's own tools could not bring back (the file "
         "system's outcome, not the program's); fsfixN: N states it came back from only by "
         "repairs (docs/boot-recovery.md)\n";
  }
  if (checker_failures) {
    s += "chk!N: N violating states whose checker failed on the mounted image (a server that "
         "could not recover it); the first one's stderr is the JSON's checker_stderr and in the "
         "HTML report\n";
  }
  s += fmt::format(
      "{} cells: {} as expected, {} unexpected, {} could not run (shard {}, plan {}) in {:.0f} "
      "s\n",
      r.cells.size(), ok, unexpected, errors, r.shard, r.plan_cells, r.seconds);
  std::vector<std::string> kernels;
  for (const CellResult& c : r.cells) {
    if (!c.kernel.empty() && std::find(kernels.begin(), kernels.end(), c.kernel) == kernels.end()) {
      kernels.push_back(c.kernel);
    }
  }
  if (!kernels.empty()) s += fmt::format("guest kernel: {}\n", fmt::join(kernels, "; "));
  if (std::string summary = r.recordings.Summary(); !summary.empty()) s += summary + "\n";
  return s;
}

std::string MatrixJudges(const MatrixReport& r) {
  std::vector<std::string> seen;
  for (const CellResult& c : r.cells) {
    if (c.check_method.empty()) continue;
    std::string j = c.check_kernel.empty()
                        ? c.check_method
                        : fmt::format("{} on kernel {}", c.check_method, c.check_kernel);
    if (std::find(seen.begin(), seen.end(), j) == seen.end()) seen.push_back(j);
  }
  std::string out;
  for (const std::string& j : seen) out += (out.empty() ? "" : ", ") + j;
  return out;
}

std::string MatrixJunit(const MatrixReport& r) {
  uint64_t tests = 0, failures = 0, errors = 0, skipped = 0;
  std::string body;
  for (const CellResult& c : r.cells) {
    if (!c.ran) {
      ++tests;
      std::string verdict = c.Verdict();
      body +=
          fmt::format("  <testcase classname=\"powercut.matrix\" name=\"{}\" time=\"{:.3f}\">\n",
                      XmlEscape(c.name), c.record_seconds + c.check_seconds);
      if (verdict == "ok") {
        body += fmt::format("    <system-out>as expected: could not run ({}): {}</system-out>\n",
                            XmlEscape(c.error_kind), XmlEscape(c.error));
      } else if (verdict == "unexpected") {
        ++failures;
        body += fmt::format("    <failure type=\"{}\" message=\"{}\">{}</failure>\n",
                            XmlEscape(c.error_kind), XmlEscape(c.Unexpected()), XmlEscape(c.error));
      } else {
        ++errors;
        body += fmt::format("    <error type=\"{}\" message=\"{}\"/>\n", XmlEscape(c.error_kind),
                            XmlEscape(c.error));
      }
      body += "  </testcase>\n";
      continue;
    }
    for (const CellModel& m : c.models) {
      ++tests;
      body += fmt::format("  <testcase classname=\"powercut.matrix.{}\" name=\"{} cache={}\">\n",
                          XmlEscape(c.workload), XmlEscape(c.name), XmlEscape(m.cache));
      std::string what = fmt::format(
          "expected {}: {} of {} states violate; worst state loses {} acks{}",
          ExpectedVerdictName(c.expect.For(m.kind)), m.violations, m.states, CellLostText(m),
          m.lost_acks_exact() ? ""
                              : fmt::format(" (a lower bound: {} of {} planned states checked, the "
                                            "worst first)",
                                            m.states, m.states_planned));
      if (!c.AsExpected(m)) {
        ++failures;
        body += fmt::format("    <failure message=\"{}\">{}</failure>\n", XmlEscape(what),
                            XmlEscape(m.summary));
      } else if (m.violations) {
        body += fmt::format("    <system-out>as expected: {}\n{}</system-out>\n", XmlEscape(what),
                            XmlEscape(m.summary));
      }
      body += "  </testcase>\n";
      if (m.fs_unrecoverable) {
        // The file system's outcome, apart from the program's: skipped, not failed.
        ++tests;
        ++skipped;
        body += fmt::format(
            "  <testcase classname=\"powercut.matrix.{}\" name=\"{} cache={} file-system\">\n"
            "    <skipped message=\"{}\"/>\n  </testcase>\n",
            XmlEscape(c.workload), XmlEscape(c.name), XmlEscape(m.cache),
            XmlEscape(fmt::format("file system unrecoverable in {} of {} states: {}",
                                  m.fs_unrecoverable, m.states, m.fs_summary)));
      }
    }
  }
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n<testsuite name=\"powercut "
      "matrix {}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" "
      "time=\"{:.3f}\">\n  <properties>\n    <property name=\"check\" value=\"{}\"/>\n  "
      "</properties>\n{}</testsuite>\n</testsuites>\n",
      XmlEscape(r.shard), tests, failures, errors, skipped, r.seconds, XmlEscape(MatrixJudges(r)),
      body);
}

int MatrixExitCode(const MatrixReport& r) {
  bool unexpected = false, error = false;
  for (const CellResult& c : r.cells) {
    std::string verdict = c.Verdict();
    unexpected = unexpected || verdict == "unexpected";
    error = error || verdict == "error";
  }
  return unexpected ? 1 : error ? 2 : 0;
}

}  // namespace powercut::product
