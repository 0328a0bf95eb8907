#include "harness/product/matrix/matrix.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "base/status_macros.h"
#include "fmt/format.h"
#include "harness/fs/file_system.h"
#include "harness/product/faults/run_with_faults.h"
#include "harness/product/matrix/builtin.h"
#include "harness/product/run/progress.h"

namespace powercut::product {
namespace {

// A cell's run options, its expected verdict and notes about it.
struct CellPlan {
  RunOptions options;
  CellExpect expect;
  std::vector<std::string> notes;
};

// What the cell runs and what it is expected to do: from the --cells file (or the cluster
// preset), or the built-in workload's commands and the workload catalog's verdict. A cluster
// cell's commands are wrapped by the launcher as `powercut run --nodes` wraps them; that fails
// only on what PlanMatrix already refused.
absl::Status PlanCellWorkload(const MatrixOptions& o, const MatrixCell& c, CellPlan& plan) {
  RunOptions& r = plan.options;
  if (c.custom) {
    r.workload = c.custom->workload;
    r.checker = c.custom->checker;
    if (c.custom->timeout_s > 0) r.timeout = std::chrono::seconds(c.custom->timeout_s);
    if (c.custom->checker_timeout_s > 0) r.checker_timeout_s = c.custom->checker_timeout_s;
    if (c.custom->max_acks > 0) r.max_acks = c.custom->max_acks;
    plan.expect = c.custom->expect;
    // The preset (or a cells file) may say what a node cut should do; a row only with the cuts.
    if (o.node_cuts == 0) plan.expect.models.erase(ModelKind::kNodeCut);
    if (c.custom->nodes > 0) {
      r.cluster = {.nodes = c.custom->nodes,
                   .node_command = c.custom->node_command,
                   .workload = r.workload,
                   .checker = r.checker};
      RETURN_IF_ERROR(MakeClusterRun(o.cluster_launcher, &r));
    }
  } else {
    BuiltinCell b = *LookupBuiltin(c.workload, c.setting);
    r.disks = b.disks;
    r.workload = BuiltinRunCommand(o.workload_binary, b, c.count, o.seed);
    r.checker = BuiltinCheckCommand(o.workload_binary, b);
    std::string key = c.workload + "-" + c.setting;
    if (auto it = o.expectations.find(key); it != o.expectations.end()) {
      plan.expect = it->second.ForFs(c.fs);
    } else if (o.expect) {
      plan.notes.push_back(fmt::format(
          "the workload catalog has no expected verdict for {}: every cache model is expected "
          "to survive",
          key));
    }
  }
  if (!o.expect) plan.expect = CellExpect{};
  return absl::OkStatus();
}

// How the cell's recording is checked (the matrix's flags) and which fault mode it runs.
void PlanCellCheck(const MatrixOptions& o, const MatrixCell& c, CellPlan& plan) {
  RunOptions& r = plan.options;
  r.models = MatrixModels(o);
  r.points = o.replay.points;
  r.states = o.replay.states.Options();
  r.states.torn = o.torn;
  r.fs_failures_are_violations = o.fs_failures_are_violations;
  r.exhaustive = o.exhaustive;
  r.budget_seconds = o.budget_seconds;
  r.atomic_unit = o.atomic_unit;
  r.sectors = {o.sector};
  if (o.disk_bytes != 0) r.disk_bytes = {o.disk_bytes};
  r.seed = o.seed;
  r.fsck = o.fsck;
  r.powercut = o.powercut;
  r.mkfs_options = o.mkfs_options;
  r.mount_options = o.mount_options;
  r.workers = o.workers;
  if (!c.fault && c.IsCluster()) {
    r.node_cuts = o.node_cuts;
    r.node_down_ms = o.node_down_ms;
  }
  if (!c.fault) {
    r.live_cuts = o.live_cuts != 0              ? o.live_cuts
                  : o.preset == Preset::kFaults ? kFaultsLiveCuts
                                                : 0;
  } else {
    r.flakey = o.flakey;
    r.flakey.mode = c.fault;
    if (o.preset == Preset::kFaults && !o.flakey.mode) {
      r.flakey.after_acks = kFaultsFlakeyAfterAcks;
    }
  }
}

// Calls run_one(i) for every i < count, on up to `in_flight` threads (this one included).
void RunEach(size_t count, int in_flight, const std::function<void(size_t)>& run_one) {
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < count; i = next++) run_one(i);
  };
  std::vector<std::thread> threads;
  const size_t extra =
      std::min<size_t>(static_cast<size_t>(std::max(in_flight, 1)), std::max<size_t>(count, 1)) - 1;
  for (size_t t = 0; t < extra; ++t) threads.emplace_back(worker);
  worker();
  for (std::thread& t : threads) t.join();
}

}  // namespace

std::vector<harness::CacheModel> MatrixModels(const MatrixOptions& o) {
  if (!o.replay.models.empty()) return o.replay.models;
  if (o.preset == Preset::kFaults) return {harness::CacheModel{.mode = harness::CacheMode::kOn}};
  return {harness::CacheModel{.mode = harness::CacheMode::kOff},
          harness::CacheModel{.mode = harness::CacheMode::kOn},
          harness::CacheModel{.mode = harness::CacheMode::kLying}};
}

nlohmann::json MatrixParameters(const MatrixOptions& o) {
  nlohmann::json custom = nlohmann::json::array();
  for (const CustomCell& c : o.custom_cells) custom.push_back(CustomCellToJson(c));
  std::vector<std::string> fs;  // by name, as the reports read them back
  for (const harness::FsKind f : o.fs) fs.emplace_back(harness::FsName(f));
  nlohmann::json j = {{"preset", PresetName(o.preset)},
                      {"workloads", o.workloads},
                      {"barriers", o.barriers},
                      {"fs", fs},
                      {"sector", harness::SectorFormatName(o.sector)},
                      {"guest", GuestSizeToJson(o.guest, o.disk_bytes)},
                      // Spelled as the flags read them back (replay_choice.h); a lying
                      // window other than 16 entries is in its model's code ("ly64KiB").
                      {"cache", harness::CacheListName(MatrixModels(o))},
                      {"points", harness::PointSelectionName(o.replay.points)},
                      {"states", o.replay.states.Name()},
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
                       {{"mode", o.flakey.mode ? vm::FlakeyModeName(*o.flakey.mode) : ""},
                        {"after_acks", o.flakey.after_acks},
                        {"window_ms", o.flakey.window.count()}}}};
  if (!o.kernel.empty()) j["kernel"] = o.kernel;  // only then: older reports merge unchanged
  if (o.node_cuts > 0) j["node_cuts"] = {{"cuts", o.node_cuts}, {"down_ms", o.node_down_ms}};
  if (!o.mkfs_options.empty()) j["mkfs_options"] = o.mkfs_options;
  if (!o.mount_options.empty()) j["mount_options"] = o.mount_options;
  if (!o.fstest.is_null()) {
    // The cells follow from the generator's parameters (and thousands would bloat every shard).
    j.erase("custom_cells");
    j["fstest"] = o.fstest;
  }
  return j;
}

CellRunner VmCellRunner(const std::string& agent_hint, const std::vector<harness::FsKind>& fs,
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
  for (const harness::FsKind f : fs) {
    preload.Add({.modules = vm::GuestModulesFor(f, false, false), .keep_paths = {}});
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
          // The recording guests keep their cores while recordings are left: the checking
          // guests get the others (at least one), and a recording guest's core, with the guest
          // itself, after the last recording (GuestCheckPool::Grow below). The first checking
          // guest boots now, beside the recording guest's boot, on a core that boot leaves idle
          // (docs/run.md, "Where crash states are judged").
          const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
          shared->check_pool =
              std::make_unique<vm::GuestCheckPool>(*shared->env, std::max(1, cores - guests));
          const bool judged = std::any_of(options.fs.begin(), options.fs.end(),
                                          [](auto f) { return !harness::FileSystemOf(f).raw(); });
          if (judged && cores > guests) {
            shared->check_pool->Prewarm(
                vm::CheckGuestConfig(*shared->env, options.checker, options.fs));
          }
        }
      }
    }
    if (!shared->env.ok()) {
      RunOutcome out;
      out.error_kind = RunError::kVm;
      out.error =
          fmt::format("cannot prepare the VM: {}", std::string(shared->env.status().message()));
      return out;
    }
    RunOptions with_judges = options;
    with_judges.check_pool = shared->check_pool.get();
    if (shared->check_pool != nullptr) {
      with_judges.recording_done = [shared, counted = options.recording_done] {
        const bool last = counted && counted();
        if (last) shared->check_pool->Grow(shared->pool->TakeIdleGuest());
        return last;
      };
    }
    RunOutcome out = RunWithFaults(*shared->env, with_judges, shared->pool.get());
    if (shared->check_pool != nullptr) {  // so far, in the command: the matrix keeps the most
      out.check_guests_booted = shared->check_pool->boots();
      out.check_guests_adopted = shared->check_pool->adopted();
    }
    return out;
  };
}

absl::StatusOr<MatrixReport> RunMatrix(const MatrixOptions& o, const CellRunner& run_cell) {
  auto start = std::chrono::steady_clock::now();
  auto plan = PlanMatrix(o);
  if (!plan.ok()) return plan.status();
  bool builtin = std::any_of(plan->begin(), plan->end(),
                             [](const MatrixCell& c) { return !c.custom.has_value(); });
  if (builtin && o.workload_binary.empty()) {
    return absl::InvalidArgumentError("matrix: no powercut-workload binary given");
  }
  if (o.node_cuts > 0 && !PlanHasClusters(*plan)) {
    return absl::InvalidArgumentError(
        "--node-cuts cuts one node of a cluster: the plan has no cluster cell (--preset cluster, "
        "or a --cells file whose cells have nodes)");
  }
  if (PlanHasClusters(*plan) && o.cluster_launcher.empty()) {
    return absl::InvalidArgumentError("matrix: no cluster launcher (powercut-cluster) given");
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
  std::atomic<size_t> finished{0};
  std::atomic<size_t> recorded{0};
  absl::Mutex guests_mu;  // report.check_guests_*
  auto recording_done = [&recorded, cells = mine.size()] { return ++recorded == cells; };
  // One cell: record, check, judge. Several run at once when cells_in_flight > 1.
  auto run_one = [&](size_t i) {
    const MatrixCell& c = mine[i];
    progress.Update(finished.load(), "running " + c.Name());
    CellPlan planned;
    RunOptions& r = planned.options;
    r.name = c.Name();
    r.fs = {c.fs};
    r.timeout = std::chrono::seconds(o.timeout_s);
    r.checker_timeout_s = o.checker_timeout_s;
    r.max_acks = o.max_acks;
    r.guest = o.guest;
    r.recording_done = recording_done;
    const absl::Status planned_ok = PlanCellWorkload(o, c, planned);
    PlanCellCheck(o, c, planned);
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
                    .fs = harness::FsName(c.fs),
                    .workload_command = r.workload,
                    .checker_command = r.checker};
    if (planned_ok.ok()) {
      const RunOutcome outcome = run_cell(c, r);
      {
        absl::MutexLock lock(&guests_mu);
        report.check_guests_booted =
            std::max(report.check_guests_booted, outcome.check_guests_booted);
        report.check_guests_adopted =
            std::max(report.check_guests_adopted, outcome.check_guests_adopted);
      }
      FillCell(outcome, &cell);
    } else {
      recording_done();  // none: the cell is refused
      RunOutcome refused;
      refused.error_kind = RunError::kUsage;
      refused.error = std::string(planned_ok.message());
      FillCell(refused, &cell);
    }
    cell.expect = std::move(planned.expect);
    cell.raw_rule = !o.expect;
    cell.notes.insert(cell.notes.end(), planned.notes.begin(), planned.notes.end());
    results[i] = std::move(cell);
    ++finished;
  };
  RunEach(mine.size(), o.cells_in_flight, run_one);
  for (std::optional<CellResult>& cell : results) report.cells.push_back(std::move(*cell));
  progress.Update(mine.size(), "done");
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

nlohmann::json MatrixToJson(const MatrixReport& r) {
  nlohmann::json cells = nlohmann::json::array();
  for (const CellResult& c : r.cells) cells.push_back(CellToJson(c));
  return {
      {"schema", "powercut-matrix/1"},
      {"parameters", r.parameters},
      {"shard", r.shard},
      {"plan_cells", r.plan_cells},
      {"seconds", r.seconds},
      {"cells", cells},
      {"recordings", r.recordings.ToJson()},
      {"check_guests", {{"booted", r.check_guests_booted}, {"adopted", r.check_guests_adopted}}}};
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
    if (j.contains("check_guests")) {
      r.check_guests_booted = j["check_guests"].value("booted", uint64_t{0});
      r.check_guests_adopted = j["check_guests"].value("adopted", uint64_t{0});
    }
    // `--no-expect` is the report's: every cell was judged by the raw rule.
    const bool raw_rule = r.parameters.is_object() && !r.parameters.value("expect", true);
    for (const auto& c : j.at("cells")) {
      auto cell = CellFromJson(c);
      if (!cell.ok()) return cell.status();
      cell->raw_rule = raw_rule;
      r.cells.push_back(std::move(*cell));
    }
    return r;
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(fmt::format("matrix report: {}", e.what()));
  }
}

}  // namespace powercut::product
