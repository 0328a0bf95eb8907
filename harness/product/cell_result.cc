#include "harness/product/cell_result.h"

#include <algorithm>
#include <map>

#include "fmt/format.h"
#include "fmt/ranges.h"
#include "harness/check/report.h"

namespace powercut::product {

bool CellResult::failed() const {
  if (!ran) return false;
  for (const auto& m : models) {
    if (m.violations > 0) return true;
  }
  return false;
}

ExpectedVerdict CellExpect::For(std::optional<ModelKind> kind) const {
  if (!kind) return ExpectedVerdict::kSurvives;
  auto it = models.find(*kind);
  return it == models.end() ? ExpectedVerdict::kSurvives : it->second;
}

CellExpect CellExpect::ForFs(const std::string& fs) const {
  CellExpect out;
  out.models = models;
  out.error = error;
  if (auto it = by_fs.find(fs); it != by_fs.end()) {
    for (const auto& [kind, verdict] : it->second) out.models[kind] = verdict;
  }
  return out;
}

nlohmann::json ExpectedVerdictsToJson(const ExpectedVerdicts& verdicts) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [kind, verdict] : verdicts) {
    j[std::string(ModelKindName(kind))] = ExpectedVerdictName(verdict);
  }
  return j;
}

absl::StatusOr<ExpectedVerdicts> ExpectedVerdictsFromJson(const nlohmann::json& j) {
  if (!j.is_object()) {
    return absl::InvalidArgumentError(
        fmt::format("expected an object of verdicts per model, got {}", j.dump()));
  }
  ExpectedVerdicts out;
  for (const auto& [key, value] : j.items()) {
    absl::StatusOr<ModelKind> kind = ParseModelKind(key);
    if (!kind.ok()) return kind.status();
    absl::StatusOr<ExpectedVerdict> verdict =
        value.is_string()
            ? ParseExpectedVerdict(value.get<std::string>())
            : absl::InvalidArgumentError(fmt::format("{} is not an expected verdict: {}",
                                                     value.dump(), kExpectedVerdictChoices));
    if (!verdict.ok()) {
      return absl::InvalidArgumentError(
          fmt::format("model {}: {}", key, std::string(verdict.status().message())));
    }
    out[*kind] = *verdict;
  }
  return out;
}

nlohmann::json CellExpect::ToJson() const {
  return {{"models", ExpectedVerdictsToJson(models)}, {"error", error}};
}

absl::StatusOr<CellExpect> CellExpect::FromJson(const nlohmann::json& j) {
  CellExpect e;
  if (j.contains("models")) {
    absl::StatusOr<ExpectedVerdicts> models = ExpectedVerdictsFromJson(j.at("models"));
    if (!models.ok()) {
      return absl::InvalidArgumentError(
          fmt::format("\"expect\": {}", std::string(models.status().message())));
    }
    e.models = *std::move(models);
  }
  e.error = j.value("error", "");
  return e;
}

absl::StatusOr<CellExpect> ParseExpect(const std::string& text,
                                       const std::vector<ModelKind>& checked) {
  std::vector<std::string_view> checked_names;
  for (ModelKind kind : checked) checked_names.push_back(ModelKindName(kind));
  CellExpect e;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string item =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t eq = item.find('=');
    absl::StatusOr<ModelKind> kind = ParseModelKind(item.substr(0, eq));
    if (!kind.ok()) {
      return absl::InvalidArgumentError(
          fmt::format("--expect {}: \"{}\": expected <model>=<verdict> with model {}", text, item,
                      kModelKindChoices));
    }
    absl::StatusOr<ExpectedVerdict> verdict =
        ParseExpectedVerdict(eq == std::string::npos ? "" : item.substr(eq + 1));
    if (!verdict.ok()) {
      return absl::InvalidArgumentError(fmt::format("--expect {}: \"{}\": the verdict is {}", text,
                                                    item, kExpectedVerdictChoices));
    }
    if (std::find(checked.begin(), checked.end(), *kind) == checked.end()) {
      return absl::InvalidArgumentError(
          fmt::format("--expect {}: cache {} is not checked (this run checks {})", text,
                      ModelKindName(*kind), fmt::join(checked_names, ",")));
    }
    if (!e.models.emplace(*kind, *verdict).second) {
      return absl::InvalidArgumentError(
          fmt::format("--expect {}: cache {} given twice", text, ModelKindName(*kind)));
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  for (ModelKind kind : checked) {
    if (!e.models.contains(kind)) {
      return absl::InvalidArgumentError(
          fmt::format("--expect {}: no verdict for cache {} (give one for every model checked: {})",
                      text, ModelKindName(kind), fmt::join(checked_names, ",")));
    }
  }
  return e;
}

std::string CellStatesText(const CellModel& m) {
  harness::ModelResult r;
  r.states = m.states;
  r.states_planned = m.states_planned;
  r.stopped = harness::StopReasonFromName(m.stopped);
  return harness::StatesText(r);
}

std::string CellLostText(const CellModel& m) {
  return harness::LostText(m.lost_acks_max, m.lost_acks_exact());
}

bool CellResult::AsExpected(const CellModel& m) const {
  if (!judged) return true;
  if (!m.complete()) return expect.For(m.kind) == ExpectedVerdict::kMayLose;
  return VerdictMatches(expect.For(m.kind), m.violations);
}

std::string CellResult::Unexpected() const {
  if (!judged) return "";
  if (!ran) {
    if (expect.error.empty() || expect.error == error_kind) return "";
    return fmt::format("expected error {}, got error {}", expect.error, error_kind);
  }
  if (!expect.error.empty()) {
    return fmt::format("expected error {}, but the cell ran", expect.error);
  }
  std::string why;
  for (const CellModel& m : models) {
    if (AsExpected(m)) continue;
    why += fmt::format(
        "{}cache {}: expected {}, got {}", why.empty() ? "" : "; ", m.cache,
        ExpectedVerdictName(expect.For(m.kind)),
        m.violations   ? fmt::format("{} violating states", m.violations)
        : m.complete() ? std::string("no violation")
                       : fmt::format("an incomplete check: no violation in {} of {} states before "
                                     "the budget ran out",
                                     m.states, m.states_planned));
  }
  return why;
}

std::string CellResult::Verdict() const {
  // A live cut outside the replay model is the tester's own bug: no verdict of the cell holds.
  if (ran && live_cuts && live_cuts->TesterBug()) return "error";
  if (!Unexpected().empty()) return "unexpected";
  if (!ran && expect.error.empty()) return "error";
  return "ok";
}

void FillCell(const RunOutcome& o, CellResult* cell) {
  cell->ran = o.ran;
  cell->error_kind = o.error_kind;
  cell->error = o.error;
  cell->trace_entries = o.trace_entries;
  cell->acks = o.acks;
  cell->record_seconds = o.record_seconds;
  cell->boot_seconds = o.boot_seconds;
  cell->workload_seconds = o.workload_seconds;
  cell->check_seconds = o.check_seconds;
  cell->record_phases = o.record_phases;
  cell->check_phases = o.check_phases;
  cell->kernel = o.kernel;
  cell->timeline = o.timeline;
  cell->notes = o.notes;
  cell->recording = o.recording_dir;
  cell->models.clear();
  cell->live_cuts = o.live_cuts;
  cell->flakey = o.flakey;
  if (!o.report) {
    AppendFaultModels(cell);
    return;
  }
  cell->check_method = o.report->check_method;
  cell->check_kernel = o.report->check_kernel;
  for (const auto& m : o.report->results) {
    CellModel cm{.cache = m.model.Name(),
                 .kind = ModelKindOf(m.model),
                 .points = m.points,
                 .states = m.states,
                 .checked = m.checked,
                 .violations = m.violations,
                 .fs_unrecoverable = m.fs_unrecoverable,
                 .fs_repaired = m.fs_repaired,
                 .torn_unacked = m.torn_unacked,
                 .lost_acks_max = m.lost_acks_max,
                 .states_planned = m.states_planned,
                 .stopped = harness::StopReasonName(m.stopped)};
    if (m.first_violation) {
      cm.first_violation = m.first_violation->state_id;
      cm.summary = m.first_violation->Describe();
      cm.why = fmt::format("{}", fmt::join(m.first_violation->why, "; "));
      cm.rebuild = m.first_violation->rebuild;
    }
    if (m.first_fs_unrecoverable) {
      cm.first_fs_unrecoverable = m.first_fs_unrecoverable->state_id;
      cm.fs_summary = m.first_fs_unrecoverable->Describe();
    }
    if (m.first_fs_repaired) {
      cm.first_fs_repaired = m.first_fs_repaired->state_id;
      cm.fs_repair_steps = m.first_fs_repaired->fs_steps;
    }
    if (m.worst_violation) cm.worst_violation = m.worst_violation->state_id;
    cm.checker_failures = m.checker_failures;
    if (m.first_checker_failure) {
      cm.first_checker_failure = m.first_checker_failure->state_id;
      const std::string& err = m.first_checker_failure->stderr_tail;
      cm.checker_stderr =
          err.size() > kCheckerStderrBytes ? err.substr(err.size() - kCheckerStderrBytes) : err;
    }
    cm.could_not_check = m.could_not_check;
    if (m.first_could_not_check) {
      cell->notes.push_back(fmt::format("cache {}: {} states could not be checked: {}", cm.cache,
                                        m.could_not_check,
                                        m.first_could_not_check->could_not_check));
    }
    cell->models.push_back(std::move(cm));
  }
  AppendFaultModels(cell);
}

nlohmann::json GuestSizeToJson(const GuestSize& guest) {
  return {{"memory_mib", guest.memory_mib}, {"cpus", guest.cpus}, {"disk_bytes", guest.disk_bytes}};
}

nlohmann::json PhasesToJson(const std::vector<std::pair<std::string, double>>& phases) {
  // An array of [name, seconds]: the phases' order is the recording's.
  nlohmann::json j = nlohmann::json::array();
  for (const auto& [name, seconds] : phases) j.push_back({name, seconds});
  return j;
}

namespace {

std::vector<std::pair<std::string, double>> PhasesFromJson(const nlohmann::json& j) {
  std::vector<std::pair<std::string, double>> phases;
  for (const auto& p : j) phases.emplace_back(p.at(0).get<std::string>(), p.at(1).get<double>());
  return phases;
}

// A report row's kind from its name (CellModel::cache): none for a set whose disks have
// different models ("1=on,2=lying", CacheModel::Name), else the name must be a ModelKind.
absl::StatusOr<std::optional<ModelKind>> RowKindFromName(const std::string& name) {
  if (name.find('=') != std::string::npos) return std::nullopt;
  absl::StatusOr<ModelKind> kind = ParseModelKind(name);
  if (!kind.ok()) return kind.status();
  return *kind;
}

}  // namespace

std::string RecordPhasesSummary(const std::vector<CellResult>& cells) {
  // Median per phase over the cells that have it, in the order the phases first appear.
  std::vector<std::string> order;
  std::map<std::string, std::vector<double>> seconds;
  std::vector<double> overhead;
  for (const CellResult& c : cells) {
    double beyond = 0;
    for (const auto& [name, s] : c.record_phases) {
      if (seconds.find(name) == seconds.end()) order.push_back(name);
      seconds[name].push_back(s);
      if (name != "workload") beyond += s;
    }
    if (!c.record_phases.empty()) overhead.push_back(beyond);
  }
  if (overhead.empty()) return "";
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  };
  std::string s =
      fmt::format("recording overhead beyond the workload, median of {} cells: {:.2f} s (",
                  overhead.size(), median(overhead));
  for (size_t i = 0; i < order.size(); ++i) {
    s += fmt::format("{}{} {:.2f}", i ? ", " : "", order[i], median(seconds[order[i]]));
  }
  return s + ")";
}

namespace {

// One cache model's result in a cell's "results".
nlohmann::json ModelToJson(const CellResult& c, const CellModel& m) {
  return {{"cache", m.cache},
          {"points", m.points},
          {"states", m.states},
          {"states_planned", m.states_planned},
          {"states_checked", m.states},
          {"states_unchecked", m.states_planned - std::min(m.states, m.states_planned)},
          {"complete", m.complete()},
          {"stopped", m.stopped.empty() ? nlohmann::json(nullptr) : nlohmann::json(m.stopped)},
          {"checked", m.checked},
          {"violations", m.violations},
          {"fs_unrecoverable", m.fs_unrecoverable},
          {"fs_repaired", m.fs_repaired},
          {"torn_unacked", m.torn_unacked},
          {"first_fs_unrecoverable", m.first_fs_unrecoverable.empty()
                                         ? nlohmann::json(nullptr)
                                         : nlohmann::json(m.first_fs_unrecoverable)},
          {"fs_summary", m.fs_summary},
          {"first_fs_repaired", m.first_fs_repaired.empty() ? nlohmann::json(nullptr)
                                                            : nlohmann::json(m.first_fs_repaired)},
          {"fs_repair_steps", m.fs_repair_steps},
          {"passed", m.violations == 0},
          {"expect", c.judged ? nlohmann::json(ExpectedVerdictName(c.expect.For(m.kind)))
                              : nlohmann::json(nullptr)},
          {"as_expected", c.AsExpected(m)},
          {"lost_acks_max", m.lost_acks_max},
          {"lost_acks_max_exact", m.lost_acks_exact()},
          {"first_violation",
           m.first_violation.empty() ? nlohmann::json(nullptr) : nlohmann::json(m.first_violation)},
          {"worst_violation",
           m.worst_violation.empty() ? nlohmann::json(nullptr) : nlohmann::json(m.worst_violation)},
          {"could_not_check", m.could_not_check},
          {"checker_failures", m.checker_failures},
          {"first_checker_failure", m.first_checker_failure.empty()
                                        ? nlohmann::json(nullptr)
                                        : nlohmann::json(m.first_checker_failure)},
          {"checker_stderr", m.checker_stderr},
          {"summary", m.summary},
          {"why", m.why},
          {"rebuild", m.rebuild}};
}

// The inverse of ModelToJson; throws nlohmann::json::exception on a missing or mistyped field.
CellModel ModelFromJson(const nlohmann::json& r) {
  CellModel m{.cache = r.at("cache").get<std::string>(),
              .points = r.value("points", uint64_t{0}),
              .states = r.at("states").get<uint64_t>(),
              .checked = r.value("checked", uint64_t{0}),
              .violations = r.at("violations").get<uint64_t>(),
              .fs_unrecoverable = r.value("fs_unrecoverable", uint64_t{0}),
              .fs_repaired = r.value("fs_repaired", uint64_t{0}),
              .torn_unacked = r.value("torn_unacked", uint64_t{0}),
              .lost_acks_max = r.at("lost_acks_max").get<uint64_t>(),
              .summary = r.value("summary", ""),
              .why = r.value("why", ""),
              .rebuild = r.value("rebuild", ""),
              .could_not_check = r.value("could_not_check", uint64_t{0}),
              .fs_summary = r.value("fs_summary", ""),
              .fs_repair_steps = r.value("fs_repair_steps", ""),
              // Reports from before the early stop judged every state they planned.
              .states_planned = r.value("states_planned", r.at("states").get<uint64_t>())};
  if (r.contains("stopped") && r.at("stopped").is_string()) {
    m.stopped = r.at("stopped").get<std::string>();
  }
  if (r.contains("first_fs_unrecoverable") && r.at("first_fs_unrecoverable").is_string()) {
    m.first_fs_unrecoverable = r.at("first_fs_unrecoverable").get<std::string>();
  }
  if (r.contains("first_fs_repaired") && r.at("first_fs_repaired").is_string()) {
    m.first_fs_repaired = r.at("first_fs_repaired").get<std::string>();
  }
  m.checker_failures = r.value("checker_failures", uint64_t{0});
  m.checker_stderr = r.value("checker_stderr", "");
  if (r.contains("first_checker_failure") && r.at("first_checker_failure").is_string()) {
    m.first_checker_failure = r.at("first_checker_failure").get<std::string>();
  }
  if (r.contains("worst_violation") && !r.at("worst_violation").is_null()) {
    m.worst_violation = r.at("worst_violation").get<std::string>();
  }
  if (!r.at("first_violation").is_null()) {
    m.first_violation = r.at("first_violation").get<std::string>();
  }
  return m;
}

}  // namespace

nlohmann::json CellToJson(const CellResult& c) {
  nlohmann::json results = nlohmann::json::array();
  for (const CellModel& m : c.models) results.push_back(ModelToJson(c, m));
  nlohmann::json j = {{"index", c.index},
                      {"cell", c.name},
                      {"workload", c.workload},
                      {"setting", c.setting},
                      {"fs", c.fs},
                      {"workload_command", c.workload_command},
                      {"checker_command", c.checker_command},
                      {"status", c.ran ? (c.failed() ? "fail" : "pass") : "error"},
                      {"trace_entries", c.trace_entries},
                      {"acks", c.acks},
                      {"record_seconds", c.record_seconds},
                      {"boot_seconds", c.boot_seconds},
                      {"workload_seconds", c.workload_seconds},
                      {"check_seconds", c.check_seconds},
                      {"record_phases", PhasesToJson(c.record_phases)},
                      {"check_phases", PhasesToJson(c.check_phases)},
                      {"kernel", c.kernel},
                      {"check_method", c.check_method},
                      {"check_kernel", c.check_kernel},
                      {"verdict", c.Verdict()},
                      {"unexpected", c.Unexpected()},
                      {"expect", c.judged ? c.expect.ToJson() : nlohmann::json(nullptr)},
                      {"recording", c.recording},
                      {"results", results},
                      {"notes", c.notes}};
  if (!c.ran) {
    j["error_kind"] = c.error_kind;
    j["error"] = c.error;
  }
  j["timeline"] = c.timeline ? TimelineToJson(*c.timeline) : nlohmann::json(nullptr);
  if (c.live_cuts) j["live_cuts"] = LiveCutsToJson(*c.live_cuts);
  if (c.flakey) j["flakey"] = FlakeyToJson(*c.flakey);
  if (c.fstest) {
    j["fstest"] = {{"id", c.fstest->id},
                   {"source", c.fstest->source},
                   {"description", c.fstest->description},
                   {"text", c.fstest->text},
                   {"shape", c.fstest->shape}};
  }
  return j;
}

absl::StatusOr<CellResult> CellFromJson(const nlohmann::json& j) {
  try {
    CellResult c;
    c.index = j.at("index").get<size_t>();
    c.name = j.at("cell").get<std::string>();
    c.workload = j.at("workload").get<std::string>();
    c.setting = j.at("setting").get<std::string>();
    c.fs = j.at("fs").get<std::string>();
    c.workload_command = j.value("workload_command", "");
    c.checker_command = j.value("checker_command", "");
    c.ran = j.at("status").get<std::string>() != "error";
    c.error_kind = j.value("error_kind", "");
    c.error = j.value("error", "");
    c.trace_entries = j.value("trace_entries", uint64_t{0});
    c.acks = j.value("acks", uint64_t{0});
    c.record_seconds = j.value("record_seconds", 0.0);
    c.boot_seconds = j.value("boot_seconds", 0.0);
    c.workload_seconds = j.value("workload_seconds", 0.0);
    c.check_seconds = j.value("check_seconds", 0.0);
    if (j.contains("record_phases")) c.record_phases = PhasesFromJson(j.at("record_phases"));
    if (j.contains("check_phases")) c.check_phases = PhasesFromJson(j.at("check_phases"));
    c.kernel = j.value("kernel", "");
    c.check_method = j.value("check_method", "");
    c.check_kernel = j.value("check_kernel", "");
    c.notes = j.value("notes", std::vector<std::string>{});
    c.recording = j.value("recording", "");
    if (j.contains("live_cuts")) c.live_cuts = LiveCutsFromJson(j.at("live_cuts"));
    if (j.contains("flakey")) c.flakey = FlakeyFromJson(j.at("flakey"));
    if (j.contains("fstest")) {
      const nlohmann::json& f = j.at("fstest");
      c.fstest = FsTestCell{.id = f.value("id", ""),
                            .source = f.value("source", ""),
                            .description = f.value("description", ""),
                            .text = f.value("text", ""),
                            .shape = f.value("shape", "")};
    }
    if (j.contains("expect")) {
      c.judged = !j.at("expect").is_null();
      if (c.judged) {
        absl::StatusOr<CellExpect> expect = CellExpect::FromJson(j.at("expect"));
        if (!expect.ok()) {
          return absl::InvalidArgumentError(
              fmt::format("cell {}: {}", c.name, std::string(expect.status().message())));
        }
        c.expect = *std::move(expect);
      }
    }
    for (const auto& r : j.at("results")) {
      CellModel m = ModelFromJson(r);
      absl::StatusOr<std::optional<ModelKind>> kind = RowKindFromName(m.cache);
      if (!kind.ok()) {
        return absl::InvalidArgumentError(
            fmt::format("cell {}: {}", c.name, std::string(kind.status().message())));
      }
      m.kind = *kind;
      c.models.push_back(std::move(m));
    }
    if (j.contains("timeline") && !j.at("timeline").is_null()) {
      auto t = TimelineFromJson(j.at("timeline"));
      if (!t.ok()) return t.status();
      c.timeline = std::move(*t);
    }
    return c;
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(fmt::format("cell: {}", e.what()));
  }
}

}  // namespace powercut::product

namespace powercut::product {

int RunExitCode(const RunOutcome& outcome, const CellResult& cell) {
  // Without --expect an incomplete pass exits 2 (RunOutcome::exit_code); with it, it is
  // unexpected unless the expectation is may-lose (CellResult::AsExpected).
  if (!cell.judged || !outcome.ran) return outcome.exit_code();
  if (outcome.live_cuts && outcome.live_cuts->TesterBug()) return 2;
  if (cell.Verdict() != "ok") return 1;
  return outcome.could_not_check() > 0 ? 2 : 0;
}

}  // namespace powercut::product
