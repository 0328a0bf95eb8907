#include "harness/product/fstest/fstest_run.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <tuple>

#include "absl/strings/escaping.h"
#include "absl/synchronization/mutex.h"
#include "base/image_io.h"
#include "base/status_macros.h"
#include "base/xml_escape.h"
#include "fmt/format.h"
#include "fmt/ranges.h"
#include "harness/fs/file_system.h"
#include "harness/fstest/judge.h"
#include "harness/fstest/promises.h"
#include "harness/product/fstest/fstest_by_kernel.h"
#include "harness/product/html/html_report.h"
#include "harness/state/cache_model.h"

namespace powercut::product {
namespace {

using fstest::Workload;
using powercut::XmlEscape;

}  // namespace

absl::StatusOr<std::string> FsTestPromises(const Workload& w, const std::string& output) {
  absl::StatusOr<std::string> text = ReadWholeFile(output);
  if (!text.ok()) {
    return absl::NotFoundError(fmt::format(
        "powercut-fstest-exec left no expected state ({}): was it the workload?", output));
  }
  std::vector<const fstest::Op*> points;
  for (const fstest::Op& op : w.ops) {
    if (fstest::IsPersistencePoint(op)) points.push_back(&op);
  }
  std::vector<fstest::Tree> trees;
  size_t start = 0;
  while (start < text->size()) {
    size_t nl = text->find('\n', start);
    if (nl == std::string::npos) nl = text->size();
    const nlohmann::json line =
        nlohmann::json::parse(text->substr(start, nl - start), nullptr, false);
    start = nl + 1;
    if (line.is_discarded() || !line.is_object() || !line.contains("tree")) {
      return absl::DataLossError(
          fmt::format("expected state {} of {}: not a JSON line", trees.size() + 1, output));
    }
    const size_t k = trees.size();
    if (k >= points.size() || line.value("point", 0) != static_cast<int>(k) + 1 ||
        line.value("by", "") != fstest::OpText(*points[k])) {
      return absl::DataLossError(fmt::format(
          "expected state {} names point {} ({}), not the workload's {}", k + 1,
          line.value("point", 0), line.value("by", ""),
          k < points.size() ? fstest::OpText(*points[k]) : "(none: it has fewer points)"));
    }
    ASSIGN_OR_RETURN(fstest::Tree tree, fstest::TreeFromJson(line.at("tree")));
    trees.push_back(std::move(tree));
  }
  ASSIGN_OR_RETURN(std::vector<fstest::PointPromises> promises, fstest::PromisesAtPoints(w, trees));
  return fstest::PromisesToJson(promises).dump();
}

std::string FailureClassOf(const std::string& why) {
  const size_t colon = why.find(": ");
  const std::string rest = colon == std::string::npos ? why : why.substr(colon + 2);
  return rest.substr(0, rest.find(' '));
}

namespace {

std::string ClassOf(const CellModel& m) {
  if (m.why.empty()) return m.violations > 0 ? "recoverability" : "";
  return FailureClassOf(m.why);
}

// The row's model as `--cache` spells it. The row is named by its mode ("lying"); the report's
// `parameters.cache` holds the exact models (a lying window other than 16 entries by its code,
// "ly65536b"), read back here where the report is read.
std::string RowCacheFlag(const nlohmann::json& params, const std::string& row) {
  absl::StatusOr<std::vector<harness::CacheModel>> models =
      harness::ParseCacheModels(params.value("cache", row), "16");
  if (models.ok()) {
    for (const harness::CacheModel& m : *models) {
      if (m.Name() == row) return harness::CacheListName({m});
    }
  }
  return row;
}

// The kernel a report's cell ran on, as `--kernel` takes it: the path its label names in the
// report's kernels, else the report's one kernel ("" for Debian's).
std::string CellKernelPath(const nlohmann::json& params, const CellResult& c) {
  const nlohmann::json& f = params.at("fstest");
  if (f.contains("kernels")) {
    absl::StatusOr<std::vector<FsTestKernel>> kernels = KernelsFromJson(f.at("kernels"));
    if (kernels.ok()) {
      for (const FsTestKernel& k : *kernels) {
        if (k.label == c.fstest->kernel) return k.path;
      }
    }
  }
  return params.value("kernel", "");
}

std::string ReproCommand(const nlohmann::json& params, const std::string& powercut,
                         const CellResult& c, const std::string& cache) {
  const nlohmann::json& f = params.at("fstest");
  std::string cmd = fmt::format("{} fstest repro {} --fs {} --cache {}", powercut, c.workload, c.fs,
                                RowCacheFlag(params, cache));
  if (!f.value("workloads", std::string()).empty()) {
    cmd += " --workloads " + harness::ShellJoin({f.at("workloads").get<std::string>()});
  } else {
    cmd += fmt::format(" --seq {}", f.value("seq", 1));
    if (f.value("persist", "fsync,sync") != "fsync,sync") {
      cmd += " --persist " + f.value("persist", std::string());
    }
  }
  // The profile's options as the flags spell them, before the user's (as the run applied them).
  const FsTestProfile& profile = CellProfile(c);
  const std::pair<const char*, std::string> flags[] = {
      {"mkfs-options", ProfileMkfsOptions(profile, params.value("mkfs_options", ""))},
      {"mount-options", ProfileMountOptions(profile, params.value("mount_options", ""))},
      {"kernel", CellKernelPath(params, c)}};
  for (const auto& [flag, value] : flags) {
    if (!value.empty()) cmd += fmt::format(" --{} {}", flag, harness::ShellJoin({value}));
  }
  return cmd;
}

// What the tables call a cell's file system: "ext4", or with its profile "ext4:fast_commit".
std::string FsColumn(const CellResult& c) { return ProfileName(CellProfile(c)); }

// The fstest cells of a report, tallied per file system (profile), kernel and cache model, and
// their violations grouped by signature (class | shape | fs and profile).
class FsTestTally {
 public:
  explicit FsTestTally(const nlohmann::json& parameters) : parameters_(parameters) {
    // Rows of several kernels in the order the run listed them.
    const nlohmann::json& f = parameters.value("fstest", nlohmann::json::object());
    absl::StatusOr<std::vector<FsTestKernel>> kernels =
        KernelsFromJson(f.value("kernels", nlohmann::json::array()));
    if (kernels.ok()) {
      for (const FsTestKernel& k : *kernels) kernel_order_.emplace(k.label, kernel_order_.size());
    }
  }

  void Add(const CellResult& c) {
    if (!c.fstest) return;
    if (!c.kernel.empty()) kernels_.insert(c.kernel);
    labels_.insert(c.fstest->kernel);
    if (!c.ran) {
      not_run_.push_back({{"workload", c.workload},
                          {"fs", FsColumn(c)},
                          {"kernel", c.fstest->kernel},
                          {"error_kind", RunErrorName(c.error_kind)},
                          {"error", c.error},
                          {"text", c.fstest->text}});
      for (const CellModel& m : c.models) ++rows_[RowKey(c, m)].could_not_run;
      return;
    }
    for (const CellModel& m : c.models) AddModel(c, m);
  }

  const std::set<std::string>& kernels() const { return kernels_; }
  bool several_kernels() const { return labels_.size() > 1; }
  const nlohmann::json& not_run() const { return not_run_; }

  nlohmann::json Table() const {
    nlohmann::json table = nlohmann::json::array();
    for (const auto& [key, row] : rows_) {
      table.push_back({{"fs", row.fs},
                       {"profile", row.profile},
                       {"kernel", row.kernel},
                       {"cache", std::get<2>(key)},
                       {"workloads", row.workloads.size()},
                       {"states", row.states},
                       {"violating_workloads", row.violating.size()},
                       {"fs_unrecoverable_workloads", row.unrecoverable.size()},
                       {"could_not_run", row.could_not_run},
                       {"classes", row.classes}});
    }
    return table;
  }

  nlohmann::json Signatures() const {
    nlohmann::json signatures = nlohmann::json::array();
    for (const auto& [signature, g] : groups_) {
      signatures.push_back(
          {{"signature", signature},
           {"class", g.klass},
           {"shape", g.shape},
           {"fs", g.fs},
           {"caches", std::vector<std::string>(g.caches.begin(), g.caches.end())},
           {"kernels", std::vector<std::string>(g.kernels.begin(), g.kernels.end())},
           {"count", g.violations.size()},
           {"violations", g.violations}});
    }
    return signatures;
  }

 private:
  // (fs column, the kernel's place in the run's list, cache)
  using Key = std::tuple<std::string, size_t, std::string>;
  struct Row {
    std::string fs, profile, kernel;
    std::set<std::string> workloads, violating, unrecoverable;
    uint64_t states = 0, could_not_run = 0;
    std::map<std::string, uint64_t> classes;
  };
  struct Group {
    std::string klass, shape, fs;
    std::set<std::string> caches, kernels;
    nlohmann::json violations = nlohmann::json::array();
  };

  Key RowKey(const CellResult& c, const CellModel& m) {
    auto order = kernel_order_.find(c.fstest->kernel);
    Key key{FsColumn(c), order == kernel_order_.end() ? kernel_order_.size() : order->second,
            m.cache};
    Row& row = rows_[key];
    row.fs = c.fs;
    row.profile = c.fstest->profile;
    row.kernel = c.fstest->kernel;
    return key;
  }

  // One cache model's result of a cell that ran: its row, and its group when it failed.
  void AddModel(const CellResult& c, const CellModel& m) {
    Row& row = rows_[RowKey(c, m)];
    row.workloads.insert(c.workload);
    row.states += m.states;
    std::string klass;
    if (m.violations > 0) {
      row.violating.insert(c.workload);
      klass = ClassOf(m);
    } else if (m.fs_unrecoverable > 0) {
      row.unrecoverable.insert(c.workload);
      klass = fstest::kFsUnrecoverable;
    }
    if (klass.empty()) return;
    ++row.classes[klass];
    // The repro names the powercut that wrote the report, as its rebuild commands do.
    const size_t verb = m.rebuild.find(" state materialize");
    const std::string powercut = verb == std::string::npos ? "powercut" : m.rebuild.substr(0, verb);
    const std::string shape = c.fstest->shape;
    const std::string fs = FsColumn(c);
    const std::string signature = fmt::format("{} | {} | {}", klass, shape, fs);
    Group& g = groups_[signature];
    g.klass = klass;
    g.shape = shape;
    g.fs = fs;
    g.caches.insert(m.cache);
    if (!c.fstest->kernel.empty()) g.kernels.insert(c.fstest->kernel);
    g.violations.push_back(
        {{"workload", c.workload},
         {"cache", m.cache},
         {"kernel", c.fstest->kernel},
         {"state", m.violations > 0 ? m.first_violation : m.first_fs_unrecoverable},
         {"why", m.violations > 0 ? m.why : m.fs_summary},
         {"text", c.fstest->text},
         {"rebuild", m.rebuild},
         {"recording", c.recording},
         {"repro", ReproCommand(parameters_, powercut, c, m.cache)}});
  }

  const nlohmann::json& parameters_;
  std::map<Key, Row> rows_;
  std::map<std::string, Group> groups_;
  nlohmann::json not_run_ = nlohmann::json::array();
  std::set<std::string> kernels_, labels_;
  std::map<std::string, size_t> kernel_order_;
};

// What each cell of the plan runs on: its profile and its kernel, by the name's variant.
struct CellAxes {
  const FsTestProfile* profile = nullptr;
  FsTestKernel kernel;
};

std::vector<const FsTestProfile*> ProfilesOf(const FsTestOptions& o) {
  if (!o.profiles.empty()) return o.profiles;
  std::vector<const FsTestProfile*> out;
  for (const harness::FsKind fs : o.matrix.fs) out.push_back(&DefaultFsTestProfile(fs));
  return out;
}

std::vector<FsTestKernel> KernelsOf(const FsTestOptions& o) {
  if (!o.kernels.empty()) return o.kernels;
  return {{o.matrix.kernel.empty() ? std::string(kDefaultKernelLabel) : o.matrix.kernel,
           o.matrix.kernel}};
}

std::map<std::string, CellAxes> AxesByVariant(const FsTestOptions& o) {
  std::map<std::string, CellAxes> out;
  const std::vector<FsTestKernel> kernels = KernelsOf(o);
  for (const FsTestKernel& k : kernels) {
    for (const FsTestProfile* p : ProfilesOf(o)) {
      out[ProfileVariant(*p) + KernelVariant(kernels, k)] = {p, k};
    }
  }
  return out;
}

// The variant of a cell's name: what follows "<id>/fstest/<fs>".
std::string VariantOf(const std::string& name, const std::string& id, const std::string& fs) {
  const std::string prefix = fmt::format("{}/fstest/{}", id, fs);
  return name.rfind(prefix, 0) == 0 ? name.substr(prefix.size()) : "";
}

// Each kernel's runner, made when its first cell starts and dropped after its last cell of the
// shard, so that its warm guests shut down before the next kernel's boot.
class KernelRunners {
 public:
  KernelRunners(KernelCellRunner make, const std::map<std::string, size_t>& cells)
      : make_(std::move(make)) {
    for (const auto& [label, count] : cells) entries_[label].remaining = count;
  }

  RunOutcome Run(const FsTestKernel& kernel, const MatrixCell& cell, const RunOptions& options) {
    CellRunner runner;
    {
      absl::MutexLock lock(&mu_);
      Entry& e = entries_[kernel.label];
      if (!e.runner) e.runner = make_(kernel);
      runner = e.runner;
    }
    RunOutcome out = runner(cell, options);
    absl::MutexLock lock(&mu_);
    Entry& e = entries_[kernel.label];
    if (e.remaining > 0 && --e.remaining == 0) e.runner = nullptr;
    return out;
  }

 private:
  struct Entry {
    CellRunner runner;
    size_t remaining = 0;
  };
  const KernelCellRunner make_;
  absl::Mutex mu_;
  std::map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

const FsTestProfile& CellProfile(const CellResult& c) {
  absl::StatusOr<harness::FsKind> fs = harness::ParseFsKind(c.fs);
  if (!fs.ok()) return DefaultFsTestProfile(harness::DefaultFs());
  const FsTestProfile* p = c.fstest ? FindFsTestProfile(*fs, c.fstest->profile) : nullptr;
  return p != nullptr ? *p : DefaultFsTestProfile(*fs);
}

absl::StatusOr<std::vector<Workload>> PlanFsTest(const FsTestOptions& o) {
  if (!o.workloads.empty()) return fstest::LoadWorkloads(o.workloads);
  ASSIGN_OR_RETURN(fstest::WorkloadSpace space, fstest::WorkloadSpace::Make(o.generator));
  std::vector<uint64_t> indices;
  if (o.sample > 0) {
    indices = space.Sample(o.sample, o.sample_seed);
  } else {
    indices.resize(space.size());
    for (uint64_t i = 0; i < space.size(); ++i) indices[i] = i;
  }
  std::vector<Workload> out;
  out.reserve(indices.size());
  for (uint64_t i : indices) out.push_back(space.At(i));
  return out;
}

absl::StatusOr<MatrixOptions> FsTestMatrix(const FsTestOptions& o,
                                           const std::vector<Workload>& workloads) {
  if (o.exec_binary.empty()) {
    return absl::InvalidArgumentError("fstest: no powercut-fstest-exec binary given");
  }
  MatrixOptions m = o.matrix;
  m.preset = Preset::kNone;
  m.workloads.clear();
  m.custom_cells.clear();
  const std::vector<const FsTestProfile*> profiles = ProfilesOf(o);
  const std::vector<FsTestKernel> kernels = KernelsOf(o);
  m.fs.clear();
  for (const FsTestProfile* p : profiles) {
    if (std::find(m.fs.begin(), m.fs.end(), p->fs) == m.fs.end()) m.fs.push_back(p->fs);
  }
  // One kernel: the report's `kernel` as before the axis; several: the fstest parameters list
  // them, and each cell's repro names its own.
  m.kernel = kernels.size() == 1 ? kernels.front().path : "";
  const std::vector<harness::CacheModel> models = MatrixModels(m);
  std::set<std::string> seen;
  std::vector<const Workload*> unique;
  for (const Workload& w : workloads) {
    // The same operations twice (two files alike) run once.
    if (seen.insert(fstest::WorkloadId(w)).second) unique.push_back(&w);
  }
  for (const FsTestKernel& k : kernels) {
    for (const Workload* w : unique) {
      const std::string id = fstest::WorkloadId(*w);
      const std::string text = fstest::WorkloadText(*w, false);
      for (const FsTestProfile* p : profiles) {
        CustomCell c;
        c.name = id;
        c.setting = "fstest";
        c.fs = p->fs;
        c.variant = ProfileVariant(*p) + KernelVariant(kernels, k);
        c.workload = fmt::format("{} run --hex {}", o.exec_binary, absl::BytesToHexString(text));
        c.checker = kFsTestJudge;
        c.expect = ProfileExpect(*p, *w, models, o.expect_clean);
        m.custom_cells.push_back(std::move(c));
      }
    }
  }
  m.fstest = {{"seq", o.workloads.empty() ? o.generator.seq : 0},
              {"persist", fstest::PersistenceText(o.generator)},
              {"sample", o.sample},
              {"sample_seed", o.sample_seed},
              {"workloads", o.workloads},
              {"workload_count", seen.size()},
              {"expect_clean", o.expect_clean}};
  // Only when the axes are used: a report without them has the parameters it always had.
  if (std::any_of(profiles.begin(), profiles.end(),
                  [](const FsTestProfile* p) { return !p->is_default(); })) {
    std::vector<std::string> names;
    for (const FsTestProfile* p : profiles) names.push_back(ProfileName(*p));
    m.fstest["profiles"] = names;
  }
  if (kernels.size() > 1) m.fstest["kernels"] = KernelsToJson(kernels);
  return m;
}

absl::StatusOr<MatrixReport> RunFsTest(const FsTestOptions& o, const KernelCellRunner& runner_for) {
  ASSIGN_OR_RETURN(std::vector<Workload> workloads, PlanFsTest(o));
  ASSIGN_OR_RETURN(MatrixOptions m, FsTestMatrix(o, workloads));
  ASSIGN_OR_RETURN(std::vector<MatrixCell> plan, PlanMatrix(m));
  const std::map<std::string, CellAxes> axes = AxesByVariant(o);
  std::map<std::string, size_t> cells_per_kernel;
  for (const MatrixCell& c : plan) {
    if (m.shard.Contains(c.Name())) ++cells_per_kernel[axes.at(c.custom->variant).kernel.label];
  }
  auto by_id = std::make_shared<std::map<std::string, Workload>>();
  for (const Workload& w : workloads) by_id->emplace(fstest::WorkloadId(w), w);
  auto runners = std::make_shared<KernelRunners>(runner_for, cells_per_kernel);
  CellRunner run_cell = [by_id, runners, &axes](const MatrixCell& cell, const RunOptions& options) {
    auto it = by_id->find(cell.workload);
    auto axis = cell.custom ? axes.find(cell.custom->variant) : axes.end();
    if (it == by_id->end() || axis == axes.end()) {
      RunOutcome out;
      out.error_kind = RunError::kUsage;
      out.error = fmt::format("no file-system test workload, profile and kernel make the cell {}",
                              cell.Name());
      return out;
    }
    RunOptions r = options;
    r.latest_ack_only = true;
    r.boot_checks = false;
    r.sync_acks = true;  // a point's crash state must not hold a later operation's writes
    r.states.torn_inflight = false;
    r.mkfs_options = ProfileMkfsOptions(*axis->second.profile, options.mkfs_options);
    r.mount_options = ProfileMountOptions(*axis->second.profile, options.mount_options);
    const Workload w = it->second;
    r.judge_promises = [w](const vm::RunResult& run) {
      return FsTestPromises(w, run.workload_output);
    };
    return runners->Run(axis->second.kernel, cell, r);
  };
  ASSIGN_OR_RETURN(MatrixReport report, RunMatrix(m, run_cell));
  for (CellResult& cell : report.cells) {
    auto it = by_id->find(cell.workload);
    auto axis = axes.find(VariantOf(cell.name, cell.workload, cell.fs));
    if (it == by_id->end() || axis == axes.end()) continue;
    const Workload& w = it->second;
    cell.fstest = FsTestCell{.id = cell.workload,
                             .source = w.source,
                             .description = w.description,
                             .text = fstest::WorkloadText(w, false),
                             .shape = fstest::WorkloadShape(w),
                             .profile = axis->second.profile->name,
                             .kernel = axis->second.kernel.label};
    if (!cell.recording.empty()) {
      // The kept recording becomes a reproducer: its workload beside its trace.
      (void)PublishFile(cell.recording + "/workload.fst", fstest::WorkloadText(w));
    }
  }
  return report;
}

absl::StatusOr<MatrixReport> RunFsTest(const FsTestOptions& o, const CellRunner& inner) {
  return RunFsTest(o, [inner](const FsTestKernel&) { return inner; });
}

bool IsFsTestReport(const MatrixReport& report) {
  return report.parameters.is_object() && report.parameters.contains("fstest");
}

nlohmann::json FsTestSummary(const MatrixReport& r) {
  FsTestTally tally(r.parameters);
  for (const CellResult& c : r.cells) tally.Add(c);
  const std::set<std::string>& kernels = tally.kernels();
  const nlohmann::json& f = r.parameters.value("fstest", nlohmann::json::object());
  nlohmann::json s = {{"workloads", f.value("workload_count", uint64_t{0})},
                      {"seq", f.value("seq", 0)},
                      {"source", f.value("workloads", std::string()).empty()
                                     ? fmt::format("seq-{}", f.value("seq", 0))
                                     : f.value("workloads", std::string())},
                      {"kernels", std::vector<std::string>(kernels.begin(), kernels.end())},
                      {"mkfs_options", r.parameters.value("mkfs_options", "")},
                      {"mount_options", r.parameters.value("mount_options", "")},
                      {"by_fs_and_cache", tally.Table()},
                      {"signatures", tally.Signatures()},
                      {"could_not_run", tally.not_run()}};
  if (f.contains("profiles")) s["profiles"] = f.at("profiles");
  if (tally.several_kernels()) s["by_kernel"] = CompareKernels(r);
  return s;
}

std::string FsTestTable(const MatrixReport& r) {
  const nlohmann::json s = FsTestSummary(r);
  const bool several = s.contains("by_kernel");
  std::string out =
      fmt::format("fstest: {} ({} workloads), kernel {}{}{}\n", s.at("source").get<std::string>(),
                  s.at("workloads").get<uint64_t>(),
                  fmt::join(s.at("kernels").get<std::vector<std::string>>(), ", "),
                  s.at("mkfs_options").get<std::string>().empty()
                      ? ""
                      : ", mkfs options " + s.at("mkfs_options").get<std::string>(),
                  s.at("mount_options").get<std::string>().empty()
                      ? ""
                      : ", mount options " + s.at("mount_options").get<std::string>());
  // The fs column is as wide as its longest profile name; the kernel column only with several.
  size_t fs_width = 8, kernel_width = 6;
  auto column = [](const nlohmann::json& row) {
    return row.at("profile") == "default" ? row.at("fs").get<std::string>()
                                          : fmt::format("{}:{}", row.at("fs").get<std::string>(),
                                                        row.at("profile").get<std::string>());
  };
  for (const nlohmann::json& row : s.at("by_fs_and_cache")) {
    fs_width = std::max(fs_width, column(row).size());
    kernel_width = std::max(kernel_width, row.at("kernel").get<std::string>().size());
  }
  const std::string kernel_head =
      several ? fmt::format("{:<{}} ", "kernel", kernel_width) : std::string();
  out += fmt::format("{:<{}} {}{:<8} {:>9} {:>12} {:>10} {:>17} {:>14}\n", "fs", fs_width,
                     kernel_head, "cache", "workloads", "crash states", "violating",
                     "fs-unrecoverable", "could not run");
  for (const nlohmann::json& row : s.at("by_fs_and_cache")) {
    const std::string kernel =
        several ? fmt::format("{:<{}} ", row.at("kernel").get<std::string>(), kernel_width)
                : std::string();
    out +=
        fmt::format("{:<{}} {}{:<8} {:>9} {:>12} {:>10} {:>17} {:>14}\n", column(row), fs_width,
                    kernel, row.at("cache").get<std::string>(), row.at("workloads").get<uint64_t>(),
                    row.at("states").get<uint64_t>(), row.at("violating_workloads").get<uint64_t>(),
                    row.at("fs_unrecoverable_workloads").get<uint64_t>(),
                    row.at("could_not_run").get<uint64_t>());
  }
  if (!s.at("signatures").empty()) {
    out += "violations by signature (class | operations | file system):\n";
  }
  for (const nlohmann::json& g : s.at("signatures")) {
    const auto labels = g.at("kernels").get<std::vector<std::string>>();
    out += fmt::format("  {}  ({} workload-model pairs; cache {}{})\n",
                       g.at("signature").get<std::string>(), g.at("count").get<uint64_t>(),
                       fmt::join(g.at("caches").get<std::vector<std::string>>(), ", "),
                       several ? fmt::format("; kernel {}", fmt::join(labels, ", ")) : "");
    const nlohmann::json& v = g.at("violations").front();
    out += fmt::format("    e.g. {} cache {}{}: {}\n", v.at("workload").get<std::string>(),
                       v.at("cache").get<std::string>(),
                       several ? " kernel " + v.at("kernel").get<std::string>() : "",
                       v.at("why").get<std::string>());
    out += fmt::format("    repro: {}\n", v.at("repro").get<std::string>());
  }
  for (const nlohmann::json& e : s.at("could_not_run")) {
    out += fmt::format(
        "could not run {} on {}{} ({}): {}\n", e.at("workload").get<std::string>(),
        e.at("fs").get<std::string>(),
        several ? " kernel " + e.at("kernel").get<std::string>() : "",
        e.at("error_kind").get<std::string>(),
        e.at("error").get<std::string>().substr(0, e.at("error").get<std::string>().find('\n')));
  }
  if (several) out += KernelComparisonText(s.at("by_kernel"));
  return out;
}

nlohmann::json ReportJson(const MatrixReport& report) {
  nlohmann::json j = MatrixToJson(report);
  if (IsFsTestReport(report)) j["fstest_summary"] = FsTestSummary(report);
  return j;
}

std::string ReportHtml(const MatrixReport& report, const std::string& title) {
  std::string html = HtmlReport(report, title);
  if (!IsFsTestReport(report)) return html;
  const nlohmann::json s = FsTestSummary(report);
  const bool several = s.contains("by_kernel");
  std::string section = "<h2>File-system test: violations by signature</h2>\n";
  section +=
      fmt::format("<p>{} ({} workloads); kernel {}</p>\n",
                  XmlEscape(s.at("source").get<std::string>()), s.at("workloads").get<uint64_t>(),
                  XmlEscape(fmt::format(
                      "{}", fmt::join(s.at("kernels").get<std::vector<std::string>>(), ", "))));
  section += fmt::format(
      "<table><tr><th>fs</th>{}<th>cache</th><th>workloads</th><th>crash states</th>"
      "<th>violating</th><th>fs-unrecoverable</th><th>could not run</th></tr>\n",
      several ? "<th>kernel</th>" : "");
  for (const nlohmann::json& row : s.at("by_fs_and_cache")) {
    const std::string fs = row.at("profile") == "default"
                               ? row.at("fs").get<std::string>()
                               : fmt::format("{}:{}", row.at("fs").get<std::string>(),
                                             row.at("profile").get<std::string>());
    section += fmt::format(
        "<tr><td>{}</td>{}<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></"
        "tr>\n",
        XmlEscape(fs),
        several ? fmt::format("<td>{}</td>", XmlEscape(row.at("kernel").get<std::string>())) : "",
        XmlEscape(row.at("cache").get<std::string>()), row.at("workloads").get<uint64_t>(),
        row.at("states").get<uint64_t>(), row.at("violating_workloads").get<uint64_t>(),
        row.at("fs_unrecoverable_workloads").get<uint64_t>(),
        row.at("could_not_run").get<uint64_t>());
  }
  section += "</table>\n";
  if (several) section += KernelComparisonHtml(s.at("by_kernel"));
  for (const nlohmann::json& g : s.at("signatures")) {
    section += fmt::format("<h3>{}</h3>\n<ul>\n", XmlEscape(g.at("signature").get<std::string>()));
    for (const nlohmann::json& v : g.at("violations")) {
      section += fmt::format(
          "<li><b>{}</b> cache {}{}: {}<pre>{}</pre>rebuild: <code>{}</code><br>repro: "
          "<code>{}</code></li>\n",
          XmlEscape(v.at("workload").get<std::string>()),
          XmlEscape(v.at("cache").get<std::string>()),
          several ? " kernel " + XmlEscape(v.at("kernel").get<std::string>()) : "",
          XmlEscape(v.at("why").get<std::string>()), XmlEscape(v.at("text").get<std::string>()),
          XmlEscape(v.at("rebuild").get<std::string>()),
          XmlEscape(v.at("repro").get<std::string>()));
    }
    section += "</ul>\n";
  }
  // After the title: the signatures are what a researcher reads first.
  const size_t heading = html.find("</h1>\n");
  html.insert(heading == std::string::npos ? html.size() : heading + 6, section);
  return html;
}

}  // namespace powercut::product
