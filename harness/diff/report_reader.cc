// Reading a report for `powercut diff` (report_reader.h): its schema first, then the fields two
// reports are compared by, with the defaults older reports of the same schema version need.
#include "harness/diff/report_reader.h"

#include <algorithm>
#include <optional>

#include "base/expected_verdict.h"
#include "base/status_macros.h"
#include "fmt/format.h"
#include "nlohmann/json.hpp"

namespace powercut::diff {
namespace {

using nlohmann::json;

// A parameter's value on one line: strings as they are, everything else as compact JSON.
std::string OneLine(const json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

// A parameter under its path: objects field by field ("guest.cpus"), arrays of scalars joined
// ("fs" -> "ext4,xfs"), arrays of objects element by element, by their name where they have one
// ("custom_cells[mydb].workload", the element itself a group), so that a change names the field
// that changed.
void Flatten(const std::string& path, const json& value, ComparableReport& report) {
  auto structured = [](const json& v) { return v.is_object() || v.is_array(); };
  if (value.is_object()) {
    for (const auto& [key, field] : value.items()) {
      Flatten(path.empty() ? key : path + "." + key, field, report);
    }
  } else if (value.is_array() && std::any_of(value.begin(), value.end(), structured)) {
    for (size_t i = 0; i < value.size(); ++i) {
      const json& e = value[i];
      const bool named = e.is_object() && e.contains("name") && e.at("name").is_string();
      const std::string element =
          fmt::format("{}[{}]", path, named ? e.at("name").get<std::string>() : std::to_string(i));
      report.parameters[element] = e.dump();
      report.parameter_groups.insert(element);
      Flatten(element, e, report);
    }
  } else if (value.is_array()) {
    std::string joined;
    for (const json& e : value) joined += (joined.empty() ? "" : ",") + OneLine(e);
    report.parameters[path] = joined;
  } else {
    report.parameters[path] = OneLine(value);
  }
}

// The first line of a message; a line that only announces what follows ("...; its last
// output:") loses that clause, which the report holds.
std::string FirstLine(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  if (!line.empty() && line.back() == ':') {
    const size_t clause = line.rfind("; ");
    line.resize(clause == std::string::npos ? line.size() - 1 : clause);
  }
  return line;
}

// The distinct non-empty values, in first-seen order, comma-separated ("" when there are none).
class DistinctValues {
 public:
  void Add(const std::string& value) {
    if (value.empty() || std::find(values_.begin(), values_.end(), value) != values_.end()) return;
    values_.push_back(value);
  }
  // Sets parameters[name] when some value was seen.
  void SetIn(std::map<std::string, std::string>& parameters, const std::string& name) const {
    if (values_.empty()) return;
    std::string joined;
    for (const std::string& v : values_) joined += (joined.empty() ? "" : ", ") + v;
    parameters[name] = joined;
  }

 private:
  std::vector<std::string> values_;
};

// Parses the text; a parse error at the end of the input is a truncated file, anywhere else
// the file is not JSON.
absl::StatusOr<json> ParseJson(std::string_view text, std::string_view path) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) {
    return absl::InvalidArgumentError(fmt::format("{}: empty file, not a powercut report", path));
  }
  if (text[first] == '<') {
    return absl::InvalidArgumentError(fmt::format(
        "{}: XML or HTML, not JSON (the --junit or --html report?): powercut diff reads the "
        "--json report",
        path));
  }
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    if (e.byte >= text.size()) {
      return absl::InvalidArgumentError(fmt::format(
          "{}: truncated: the JSON ends after {} byte{}, before the report does (an interrupted "
          "copy or a full disk?)",
          path, text.size(), text.size() == 1 ? "" : "s"));
    }
    return absl::InvalidArgumentError(
        fmt::format("{}: not JSON (parse error at byte {}), not a powercut report", path, e.byte));
  }
}

// The schema must be one this build reads: a known name at version 1.
absl::StatusOr<std::string> CheckSchema(const json& j, std::string_view path) {
  if (!j.is_object() || !j.contains("schema") || !j.at("schema").is_string()) {
    return absl::InvalidArgumentError(fmt::format(
        "{}: not a powercut report (no \"schema\" field; powercut matrix, merge and fstest run "
        "write {}, run and check {})",
        path, kMatrixSchema, kCheckSchema));
  }
  const std::string schema = j.at("schema").get<std::string>();
  if (schema == kMatrixSchema || schema == kCheckSchema) return schema;
  const std::string name = schema.substr(0, schema.find('/'));
  for (std::string_view known : {kMatrixSchema, kCheckSchema}) {
    if (known.substr(0, known.find('/')) == name) {
      return absl::InvalidArgumentError(fmt::format(
          "{}: unknown schema version {} (this powercut reads {}; was the report written by a "
          "newer powercut?)",
          path, schema, known));
    }
  }
  if (name.starts_with("powercut-")) {
    return absl::InvalidArgumentError(fmt::format(
        "{}: schema {} is not a report of matrix, merge, fstest run, run or check ({} or {})", path,
        schema, kMatrixSchema, kCheckSchema));
  }
  return absl::InvalidArgumentError(
      fmt::format("{}: not a powercut report (schema \"{}\"; expected {} or {})", path, schema,
                  kMatrixSchema, kCheckSchema));
}

// One row of a result list, as both schemas write it (docs/report.md). `expect` is the
// expectation the report gives the row ("" = the raw rule); matrix rows carry their own
// `as_expected`, the check schema's rows are judged here the way `powercut run` judges them.
ModelOutcome ModelFromJson(const json& r, std::string expect) {
  ModelOutcome m{.model = r.at("cache").get<std::string>(),
                 .expect = std::move(expect),
                 .violations = r.at("violations").get<uint64_t>(),
                 .states = r.at("states").get<uint64_t>(),
                 .lost_acks_max = r.at("lost_acks_max").get<uint64_t>(),
                 .fs_unrecoverable = r.value("fs_unrecoverable", uint64_t{0}),
                 .fs_repaired = r.value("fs_repaired", uint64_t{0}),
                 .could_not_check = r.value("could_not_check", uint64_t{0}),
                 .unavailable = r.value("unavailable", uint64_t{0})};
  // Reports from before the early stop judged every state they planned.
  const uint64_t planned = r.value("states_planned", m.states);
  m.complete = r.value("complete", m.violations > 0 || m.states >= planned);
  m.lost_acks_exact = r.value("lost_acks_max_exact", m.states >= planned);
  if (r.contains("as_expected") && r.at("as_expected").is_boolean()) {
    m.as_expected = r.at("as_expected").get<bool>();
  } else if (m.expect.empty()) {
    m.as_expected = m.violations == 0 && m.complete;
  } else {
    absl::StatusOr<ExpectedVerdict> verdict = ParseExpectedVerdict(m.expect);
    const bool may_lose = verdict.ok() && *verdict == ExpectedVerdict::kMayLose;
    m.as_expected = !m.complete ? may_lose : verdict.ok() && VerdictMatches(*verdict, m.violations);
  }
  return m;
}

// A matrix row's expectation: a verdict name, or null when the cell was not judged.
std::string MatrixRowExpect(const json& r) {
  return r.contains("expect") && r.at("expect").is_string() ? r.at("expect").get<std::string>()
                                                            : "";
}

// Which part of its plan a report holds: "whole plan" for an unsharded run and for a merge of
// every shard (the same cells: comparable), "merged, 4 of 10 cells" for a merge with shards
// missing, "2/4" for one shard.
std::string ShardText(const std::string& shard, size_t cells, size_t plan_cells) {
  if (shard == "1/1" || (shard == "merged" && cells >= plan_cells)) return "whole plan";
  if (shard == "merged") return fmt::format("merged, {} of {} cells", cells, plan_cells);
  return shard;
}

ComparableReport ReadMatrix(const json& j) {
  ComparableReport report;
  const json& parameters = j.at("parameters");
  Flatten("", parameters, report);
  const std::string shard = j.at("shard").get<std::string>();
  report.plan_cells = j.at("plan_cells").get<size_t>();
  report.plan = parameters.dump();
  report.merged = shard == "merged";
  report.parameters["plan cells"] = std::to_string(report.plan_cells);
  report.kind = std::string(shard == "merged" ? "merged " : "") +
                (parameters.contains("fstest") ? "fstest" : "matrix");
  report.seconds = j.value("seconds", 0.0);
  DistinctValues check_methods, check_kernels, recording_kernels;
  for (const json& c : j.at("cells")) {
    CellOutcome cell{.name = c.at("cell").get<std::string>(),
                     .ran = c.at("status").get<std::string>() != "error",
                     .error_kind = c.value("error_kind", ""),
                     .error = FirstLine(c.value("error", "")),
                     .verdict = c.value("verdict", ""),
                     .unexpected = c.value("unexpected", ""),
                     .record_seconds = c.value("record_seconds", 0.0),
                     .check_seconds = c.value("check_seconds", 0.0)};
    const std::string fs = c.value("fs", "");
    for (const json& r : c.at("results")) {
      cell.models.push_back(ModelFromJson(r, MatrixRowExpect(r)));
      if (cell.ran) report.judged.insert(fs + "|" + cell.models.back().model);
    }
    check_methods.Add(c.value("check_method", ""));
    check_kernels.Add(c.value("check_kernel", ""));
    recording_kernels.Add(c.value("kernel", ""));
    report.cells.push_back(std::move(cell));
  }
  // Per cell in the report, one line each here: how and by which kernel states were judged (a
  // host loop mount and a guest mount give other state counts) and which kernel recorded.
  check_methods.SetIn(report.parameters, "check method");
  check_kernels.SetIn(report.parameters, "check kernel");
  recording_kernels.SetIn(report.parameters, "recording kernel");
  report.parameters["shard"] = ShardText(shard, report.cells.size(), report.plan_cells);
  if (j.contains("fstest_summary")) {
    for (const json& s : j.at("fstest_summary").at("signatures")) {
      SignatureScope& scope = report.signatures[s.at("signature").get<std::string>()];
      scope.fs = s.value("fs", "");
      if (s.contains("caches")) scope.caches = s.at("caches").get<std::vector<std::string>>();
    }
  }
  return report;
}

// The check schema's parameters that differ between two runs of the same thing and decide
// nothing about the verdicts: the path of the run's own copy of the base image, and how many
// workers judged at once.
bool IsRunLocalParameter(const std::string& key) { return key == "base_image" || key == "workers"; }

ComparableReport ReadCheck(const json& j) {
  ComparableReport report;
  for (const auto& [key, value] : j.at("parameters").items()) {
    if (!IsRunLocalParameter(key)) Flatten(key, value, report);
  }
  // Spelled as a matrix report's are (which take them from its cells).
  for (const auto& [field, name] :
       {std::pair{"check_method", "check method"}, std::pair{"check_kernel", "check kernel"}}) {
    if (auto it = report.parameters.find(field); it != report.parameters.end()) {
      report.parameters[name] = it->second;
      report.parameters.erase(it);
    }
  }
  if (j.contains("trace") && j.at("trace").is_object()) {
    const json& trace = j.at("trace");
    if (trace.contains("order")) report.parameters["trace order"] = OneLine(trace.at("order"));
    if (trace.contains("sector_size")) {
      report.parameters["trace sector size"] = OneLine(trace.at("sector_size"));
    }
  }
  report.seconds = j.value("seconds", 0.0);
  const bool is_run = j.contains("run") && j.at("run").is_object();
  report.kind = is_run ? "run" : "check";
  // `powercut run` judges its one cell against --expect ({"models": {...}}, null without it).
  json expect_models = json::object();
  CellOutcome run_cell{.name = "run"};
  if (is_run) {
    const json& run = j.at("run");
    for (const char* key : {"workload", "checker", "fs", "sector", "guest"}) {
      if (run.contains(key)) report.parameters[std::string("run ") + key] = OneLine(run.at(key));
    }
    if (const std::string kernel = run.value("kernel", ""); !kernel.empty()) {
      report.parameters["recording kernel"] = kernel;
    }
    run_cell.ran = run.value("status", "") != "error";
    if (!run_cell.ran) {
      run_cell.error_kind = run.value("error_kind", "");
      run_cell.error = FirstLine(run.value("error", ""));
    }
    run_cell.verdict = run.value("verdict", "");
    run_cell.unexpected = run.value("unexpected", "");
    run_cell.record_seconds = run.value("record_seconds", 0.0);
    run_cell.check_seconds = run.value("check_seconds", 0.0);
    if (run.contains("expect") && run.at("expect").is_object()) {
      expect_models = run.at("expect").value("models", json::object());
    }
    // The report's own "seconds" is the check's; the run is the recording and the check.
    report.seconds = run_cell.record_seconds + run_cell.check_seconds;
  }
  // One cell per workload the results name (a run has one; a check names its log).
  for (const json& r : j.at("results")) {
    const std::string workload = r.value("workload", "run");
    const std::string cache = r.at("cache").get<std::string>();
    std::string expect =
        expect_models.contains(cache) ? OneLine(expect_models.at(cache)) : std::string();
    auto it = std::find_if(report.cells.begin(), report.cells.end(),
                           [&](const CellOutcome& c) { return c.name == workload; });
    if (it == report.cells.end()) {
      CellOutcome cell = run_cell;
      cell.name = workload;
      report.cells.push_back(std::move(cell));
      it = report.cells.end() - 1;
    }
    it->models.push_back(ModelFromJson(r, std::move(expect)));
  }
  if (report.cells.empty() && is_run) report.cells.push_back(run_cell);  // it could not run
  return report;
}

}  // namespace

std::string_view ModelOutcome::Verdict() const {
  return violations > 0 ? "FAIL" : complete ? "pass" : "incomplete";
}

std::string ModelOutcome::LostText() const {
  return fmt::format("{}{}", lost_acks_exact ? "" : "≥", lost_acks_max);
}

bool CellOutcome::CouldNotRunUnexpectedly() const {
  return !ran && (verdict.empty() || verdict == "error" || verdict == "unexpected");
}

const ModelOutcome* CellOutcome::Model(std::string_view model) const {
  for (const ModelOutcome& m : models) {
    if (m.model == model) return &m;
  }
  return nullptr;
}

const CellOutcome* ComparableReport::Cell(std::string_view name) const {
  for (const CellOutcome& c : cells) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

absl::StatusOr<ComparableReport> ReadReport(std::string_view text, std::string_view path) {
  ASSIGN_OR_RETURN(const json j, ParseJson(text, path));
  ASSIGN_OR_RETURN(const std::string schema, CheckSchema(j, path));
  try {
    ComparableReport report = schema == kMatrixSchema ? ReadMatrix(j) : ReadCheck(j);
    report.path = std::string(path);
    report.schema = schema;
    return report;
  } catch (const json::exception& e) {
    // A field missing or of the wrong type: the file says it is a report and is not one.
    return absl::InvalidArgumentError(fmt::format(
        "{}: a {} report with a missing or mistyped field: {}", path, schema, e.what()));
  }
}

}  // namespace powercut::diff
