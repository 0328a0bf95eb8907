#include "harness/product/fstest/fstest_run.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <set>

#include "absl/strings/escaping.h"
#include "base/image_io.h"
#include "base/status_macros.h"
#include "base/xml_escape.h"
#include "fmt/format.h"
#include "fmt/ranges.h"
#include "harness/fs/file_system.h"
#include "harness/fstest/judge.h"
#include "harness/fstest/promises.h"
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

std::string ReproCommand(const nlohmann::json& params, const std::string& powercut,
                         const std::string& id, const std::string& fs, const std::string& cache) {
  const nlohmann::json& f = params.at("fstest");
  std::string cmd = fmt::format("{} fstest repro {} --fs {} --cache {}", powercut, id, fs,
                                RowCacheFlag(params, cache));
  if (!f.value("workloads", std::string()).empty()) {
    cmd += " --workloads " + harness::ShellJoin({f.at("workloads").get<std::string>()});
  } else {
    cmd += fmt::format(" --seq {}", f.value("seq", 1));
    if (f.value("persist", "fsync,sync") != "fsync,sync") {
      cmd += " --persist " + f.value("persist", std::string());
    }
  }
  for (const char* key : {"mkfs_options", "mount_options", "kernel"}) {
    if (params.contains(key) && !params.at(key).get<std::string>().empty()) {
      std::string flag = key;
      std::replace(flag.begin(), flag.end(), '_', '-');
      cmd += fmt::format(" --{} {}", flag, harness::ShellJoin({params.at(key).get<std::string>()}));
    }
  }
  return cmd;
}

// The fstest cells of a report, tallied per file system and cache model, and their violations
// grouped by signature (class | shape | fs).
class FsTestTally {
 public:
  explicit FsTestTally(const nlohmann::json& parameters) : parameters_(parameters) {}

  void Add(const CellResult& c) {
    if (!c.fstest) return;
    if (!c.kernel.empty()) kernels_.insert(c.kernel);
    if (!c.ran) {
      not_run_.push_back({{"workload", c.workload},
                          {"fs", c.fs},
                          {"error_kind", RunErrorName(c.error_kind)},
                          {"error", c.error},
                          {"text", c.fstest->text}});
      for (const CellModel& m : c.models) ++rows_[{c.fs, m.cache}].could_not_run;
      return;
    }
    for (const CellModel& m : c.models) AddModel(c, m);
  }

  const std::set<std::string>& kernels() const { return kernels_; }
  const nlohmann::json& not_run() const { return not_run_; }

  nlohmann::json Table() const {
    nlohmann::json table = nlohmann::json::array();
    for (const auto& [key, row] : rows_) {
      table.push_back({{"fs", key.first},
                       {"cache", key.second},
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
      signatures.push_back({{"signature", signature},
                            {"class", g.klass},
                            {"shape", g.shape},
                            {"fs", g.fs},
                            {"caches", std::vector<std::string>(g.caches.begin(), g.caches.end())},
                            {"count", g.violations.size()},
                            {"violations", g.violations}});
    }
    return signatures;
  }

 private:
  struct Row {
    std::set<std::string> workloads, violating, unrecoverable;
    uint64_t states = 0, could_not_run = 0;
    std::map<std::string, uint64_t> classes;
  };
  struct Group {
    std::string klass, shape, fs;
    std::set<std::string> caches;
    nlohmann::json violations = nlohmann::json::array();
  };

  // One cache model's result of a cell that ran: its row, and its group when it failed.
  void AddModel(const CellResult& c, const CellModel& m) {
    Row& row = rows_[{c.fs, m.cache}];
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
    const std::string signature = fmt::format("{} | {} | {}", klass, shape, c.fs);
    Group& g = groups_[signature];
    g.klass = klass;
    g.shape = shape;
    g.fs = c.fs;
    g.caches.insert(m.cache);
    g.violations.push_back(
        {{"workload", c.workload},
         {"cache", m.cache},
         {"state", m.violations > 0 ? m.first_violation : m.first_fs_unrecoverable},
         {"why", m.violations > 0 ? m.why : m.fs_summary},
         {"text", c.fstest->text},
         {"rebuild", m.rebuild},
         {"recording", c.recording},
         {"repro", ReproCommand(parameters_, powercut, c.workload, c.fs, m.cache)}});
  }

  const nlohmann::json& parameters_;
  std::map<std::pair<std::string, std::string>, Row> rows_;  // (fs, cache)
  std::map<std::string, Group> groups_;
  nlohmann::json not_run_ = nlohmann::json::array();
  std::set<std::string> kernels_;
};

}  // namespace

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
  CellExpect expect;
  for (const harness::CacheModel& model : MatrixModels(m)) {
    expect.models[ModelKindOf(model.mode)] =
        o.expect_clean && model.mode != harness::CacheMode::kLying ? ExpectedVerdict::kSurvives
                                                                   : ExpectedVerdict::kMayLose;
  }
  std::set<std::string> seen;
  for (const Workload& w : workloads) {
    const std::string id = fstest::WorkloadId(w);
    if (!seen.insert(id).second) continue;  // the same operations twice (two files alike)
    const std::string text = fstest::WorkloadText(w, false);
    for (const harness::FsKind fs : m.fs) {
      CustomCell c;
      c.name = id;
      c.setting = "fstest";
      c.fs = fs;
      c.workload = fmt::format("{} run --hex {}", o.exec_binary, absl::BytesToHexString(text));
      c.checker = kFsTestJudge;
      c.expect = expect;
      m.custom_cells.push_back(std::move(c));
    }
  }
  m.fstest = {{"seq", o.workloads.empty() ? o.generator.seq : 0},
              {"persist", fstest::PersistenceText(o.generator)},
              {"sample", o.sample},
              {"sample_seed", o.sample_seed},
              {"workloads", o.workloads},
              {"workload_count", seen.size()},
              {"expect_clean", o.expect_clean}};
  return m;
}

CellRunner FsTestCellRunner(const std::vector<Workload>& workloads, CellRunner inner) {
  auto by_id = std::make_shared<std::map<std::string, Workload>>();
  for (const Workload& w : workloads) by_id->emplace(fstest::WorkloadId(w), w);
  return [by_id, inner = std::move(inner)](const MatrixCell& cell, const RunOptions& options) {
    auto it = by_id->find(cell.workload);
    if (it == by_id->end()) {
      RunOutcome out;
      out.error_kind = RunError::kUsage;
      out.error = fmt::format("no file-system test workload has the id {}", cell.workload);
      return out;
    }
    RunOptions r = options;
    r.latest_ack_only = true;
    r.boot_checks = false;
    r.sync_acks = true;  // a point's crash state must not hold a later operation's writes
    r.states.torn_inflight = false;
    const Workload w = it->second;
    r.judge_promises = [w](const vm::RunResult& run) {
      return FsTestPromises(w, run.workload_output);
    };
    return inner(cell, r);
  };
}

absl::StatusOr<MatrixReport> RunFsTest(const FsTestOptions& o, const CellRunner& inner) {
  ASSIGN_OR_RETURN(std::vector<Workload> workloads, PlanFsTest(o));
  ASSIGN_OR_RETURN(MatrixOptions m, FsTestMatrix(o, workloads));
  ASSIGN_OR_RETURN(MatrixReport report, RunMatrix(m, FsTestCellRunner(workloads, inner)));
  std::map<std::string, const Workload*> by_id;
  for (const Workload& w : workloads) by_id.emplace(fstest::WorkloadId(w), &w);
  for (CellResult& cell : report.cells) {
    auto it = by_id.find(cell.workload);
    if (it == by_id.end()) continue;
    const Workload& w = *it->second;
    cell.fstest = FsTestCell{.id = cell.workload,
                             .source = w.source,
                             .description = w.description,
                             .text = fstest::WorkloadText(w, false),
                             .shape = fstest::WorkloadShape(w)};
    if (!cell.recording.empty()) {
      // The kept recording becomes a reproducer: its workload beside its trace.
      (void)PublishFile(cell.recording + "/workload.fst", fstest::WorkloadText(w));
    }
  }
  return report;
}

bool IsFsTestReport(const MatrixReport& report) {
  return report.parameters.is_object() && report.parameters.contains("fstest");
}

nlohmann::json FsTestSummary(const MatrixReport& r) {
  FsTestTally tally(r.parameters);
  for (const CellResult& c : r.cells) tally.Add(c);
  const std::set<std::string>& kernels = tally.kernels();
  const nlohmann::json& f = r.parameters.value("fstest", nlohmann::json::object());
  return {{"workloads", f.value("workload_count", uint64_t{0})},
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
}

std::string FsTestTable(const MatrixReport& r) {
  const nlohmann::json s = FsTestSummary(r);
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
  out += fmt::format("{:<8} {:<8} {:>9} {:>12} {:>10} {:>17} {:>14}\n", "fs", "cache", "workloads",
                     "crash states", "violating", "fs-unrecoverable", "could not run");
  for (const nlohmann::json& row : s.at("by_fs_and_cache")) {
    out += fmt::format("{:<8} {:<8} {:>9} {:>12} {:>10} {:>17} {:>14}\n",
                       row.at("fs").get<std::string>(), row.at("cache").get<std::string>(),
                       row.at("workloads").get<uint64_t>(), row.at("states").get<uint64_t>(),
                       row.at("violating_workloads").get<uint64_t>(),
                       row.at("fs_unrecoverable_workloads").get<uint64_t>(),
                       row.at("could_not_run").get<uint64_t>());
  }
  if (!s.at("signatures").empty()) {
    out += "violations by signature (class | operations | file system):\n";
  }
  for (const nlohmann::json& g : s.at("signatures")) {
    out += fmt::format("  {}  ({} workload-model pairs; cache {})\n",
                       g.at("signature").get<std::string>(), g.at("count").get<uint64_t>(),
                       fmt::join(g.at("caches").get<std::vector<std::string>>(), ", "));
    const nlohmann::json& v = g.at("violations").front();
    out += fmt::format("    e.g. {} cache {}: {}\n", v.at("workload").get<std::string>(),
                       v.at("cache").get<std::string>(), v.at("why").get<std::string>());
    out += fmt::format("    repro: {}\n", v.at("repro").get<std::string>());
  }
  for (const nlohmann::json& e : s.at("could_not_run")) {
    out += fmt::format(
        "could not run {} on {} ({}): {}\n", e.at("workload").get<std::string>(),
        e.at("fs").get<std::string>(), e.at("error_kind").get<std::string>(),
        e.at("error").get<std::string>().substr(0, e.at("error").get<std::string>().find('\n')));
  }
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
  std::string section = "<h2>File-system test: violations by signature</h2>\n";
  section +=
      fmt::format("<p>{} ({} workloads); kernel {}</p>\n",
                  XmlEscape(s.at("source").get<std::string>()), s.at("workloads").get<uint64_t>(),
                  XmlEscape(fmt::format(
                      "{}", fmt::join(s.at("kernels").get<std::vector<std::string>>(), ", "))));
  section +=
      "<table><tr><th>fs</th><th>cache</th><th>workloads</th><th>crash states</th>"
      "<th>violating</th><th>fs-unrecoverable</th><th>could not run</th></tr>\n";
  for (const nlohmann::json& row : s.at("by_fs_and_cache")) {
    section += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
        XmlEscape(row.at("fs").get<std::string>()), XmlEscape(row.at("cache").get<std::string>()),
        row.at("workloads").get<uint64_t>(), row.at("states").get<uint64_t>(),
        row.at("violating_workloads").get<uint64_t>(),
        row.at("fs_unrecoverable_workloads").get<uint64_t>(),
        row.at("could_not_run").get<uint64_t>());
  }
  section += "</table>\n";
  for (const nlohmann::json& g : s.at("signatures")) {
    section += fmt::format("<h3>{}</h3>\n<ul>\n", XmlEscape(g.at("signature").get<std::string>()));
    for (const nlohmann::json& v : g.at("violations")) {
      section += fmt::format(
          "<li><b>{}</b> cache {}: {}<pre>{}</pre>rebuild: <code>{}</code><br>repro: "
          "<code>{}</code></li>\n",
          XmlEscape(v.at("workload").get<std::string>()),
          XmlEscape(v.at("cache").get<std::string>()), XmlEscape(v.at("why").get<std::string>()),
          XmlEscape(v.at("text").get<std::string>()), XmlEscape(v.at("rebuild").get<std::string>()),
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
