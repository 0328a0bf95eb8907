#include "harness/product/cell/cell_result.h"

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

CellExpect CellExpect::ForFs(harness::FsKind fs) const {
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
  return {{"models", ExpectedVerdictsToJson(models)}, {"error", RunErrorName(error)}};
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
  if (const std::string error = j.value("error", ""); !error.empty()) {
    absl::StatusOr<RunError> kind = ParseRunError(error);
    if (!kind.ok()) {
      return absl::InvalidArgumentError(
          fmt::format("\"expect\": {}", std::string(kind.status().message())));
    }
    e.error = *kind;
  }
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
    if (!expect.error || expect.error == error_kind) return "";
    return fmt::format("expected error {}, got error {}", RunErrorName(expect.error),
                       RunErrorName(error_kind));
  }
  if (expect.error) {
    return fmt::format("expected error {}, but the cell ran", RunErrorName(expect.error));
  }
  std::string why;
  for (const CellModel& m : models) {
    if (AsExpected(m)) continue;
    const std::string got =
        m.violations
            ? fmt::format("{} violating state{}", m.violations, m.violations == 1 ? "" : "s")
        : m.complete() ? std::string("no violation")
                       : fmt::format(
                             "an incomplete check: no violation in {} of {} states before "
                             "the budget ran out",
                             m.states, m.states_planned);
    // The raw rule expects nothing: what failed is the whole reason.
    why += raw_rule ? fmt::format("{}cache {}: {}", why.empty() ? "" : "; ", m.cache, got)
                    : fmt::format("{}cache {}: expected {}, got {}", why.empty() ? "" : "; ",
                                  m.cache, ExpectedVerdictName(expect.For(m.kind)), got);
  }
  return why;
}

std::string_view CellVerdictName(CellVerdict verdict) {
  switch (verdict) {
    case CellVerdict::kOk:
      return "ok";
    case CellVerdict::kUnexpected:
      return "unexpected";
    case CellVerdict::kError:
      return "error";
  }
  return "?";
}

CellVerdict CellResult::Verdict() const {
  // A live cut outside the replay model is the tester's own bug: no verdict of the cell holds.
  if (ran && live_cuts && live_cuts->TesterBug()) return CellVerdict::kError;
  if (ran && node_cuts && node_cuts->TesterBug()) return CellVerdict::kError;
  if (!Unexpected().empty()) return CellVerdict::kUnexpected;
  if (!ran && !expect.error) return CellVerdict::kError;
  return CellVerdict::kOk;
}

namespace {

// The last kCheckerStderrBytes of a checker's stderr, as a cell keeps it.
std::string StderrTail(const std::string& err) {
  return err.size() > kCheckerStderrBytes ? err.substr(err.size() - kCheckerStderrBytes) : err;
}

}  // namespace

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
  cell->node_cuts = o.node_cuts;
  cell->flakey = o.flakey;
  if (!o.report) {
    AppendFaultModels(cell);
    return;
  }
  cell->check_method = o.report->check_method;
  cell->check_kernel = o.report->check_kernel;
  cell->disks = o.report->disks;
  cell->set_member = o.report->set_member;
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
      cm.repro = m.first_violation->repro;
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
      cm.checker_stderr = StderrTail(m.first_checker_failure->stderr_tail);
    }
    cm.could_not_check = m.could_not_check;
    cm.unavailable = m.unavailable;
    if (m.first_unavailable) {
      cm.first_unavailable = m.first_unavailable->state_id;
      cm.unavailable_summary = m.first_unavailable->Describe();
      cm.unavailable_stderr = StderrTail(m.first_unavailable->stderr_tail);
    }
    if (m.first_could_not_check) {
      cell->notes.push_back(fmt::format("cache {}: {} states could not be checked: {}", cm.cache,
                                        m.could_not_check,
                                        m.first_could_not_check->could_not_check));
    }
    cell->models.push_back(std::move(cm));
  }
  AppendFaultModels(cell);
}

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

int RunExitCode(const RunOutcome& outcome, const CellResult& cell) {
  // Without --expect an incomplete pass exits 2 (RunOutcome::exit_code); with it, it is
  // unexpected unless the expectation is may-lose (CellResult::AsExpected).
  if (!cell.judged || !outcome.ran) return outcome.exit_code();
  if (outcome.live_cuts && outcome.live_cuts->TesterBug()) return 2;
  if (outcome.node_cuts && outcome.node_cuts->TesterBug()) return 2;
  if (cell.Verdict() != CellVerdict::kOk) return 1;
  return outcome.could_not_check() > 0 ? 2 : 0;
}

}  // namespace powercut::product
