// The JSON form of a cell's result (the report's "cells" entries) and its reading back by
// `merge` and `repro` (cell_result.h: CellToJson, CellFromJson).
#include <algorithm>
#include <map>

#include "base/status_macros.h"
#include "fmt/format.h"
#include "fmt/ranges.h"
#include "harness/check/report.h"
#include "harness/product/cell/cell_result.h"

namespace powercut::product {

nlohmann::json GuestSizeToJson(const GuestSize& guest, uint64_t disk_bytes) {
  return {{"memory_mib", guest.memory_mib}, {"cpus", guest.cpus}, {"disk_bytes", disk_bytes}};
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

namespace {

// One cache model's result in a cell's "results".
nlohmann::json ModelToJson(const CellResult& c, const CellModel& m) {
  // The raw rule (`--no-expect`) claims no expectation.
  const nlohmann::json expect = c.judged && !c.raw_rule
                                    ? nlohmann::json(ExpectedVerdictName(c.expect.For(m.kind)))
                                    : nlohmann::json(nullptr);
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
          {"expect", expect},
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
          {"unavailable", m.unavailable},
          {"first_unavailable", m.first_unavailable.empty() ? nlohmann::json(nullptr)
                                                            : nlohmann::json(m.first_unavailable)},
          {"unavailable_summary", m.unavailable_summary},
          {"unavailable_stderr", m.unavailable_stderr},
          {"summary", m.summary},
          {"why", m.why},
          {"rebuild", m.rebuild},
          {"repro", m.repro}};
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
              .repro = r.value("repro", ""),
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
  // Reports from before the outcome existed have none.
  m.unavailable = r.value("unavailable", uint64_t{0});
  if (r.contains("first_unavailable") && r.at("first_unavailable").is_string()) {
    m.first_unavailable = r.at("first_unavailable").get<std::string>();
  }
  m.unavailable_summary = r.value("unavailable_summary", "");
  m.unavailable_stderr = r.value("unavailable_stderr", "");
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
                      {"verdict", CellVerdictName(c.Verdict())},
                      {"unexpected", c.Unexpected()},
                      {"expect", c.judged ? c.expect.ToJson() : nlohmann::json(nullptr)},
                      {"recording", c.recording},
                      {"results", results},
                      {"notes", c.notes}};
  if (!c.ran) {
    j["error_kind"] = RunErrorName(c.error_kind);
    j["error"] = c.error;
  }
  if (!c.disks.empty()) {
    j[harness::SetMembersName(c.set_member)] = harness::DiskSummariesToJson(c.disks, c.set_member);
  }
  j["timeline"] = c.timeline ? TimelineToJson(*c.timeline) : nlohmann::json(nullptr);
  if (c.live_cuts) j["live_cuts"] = LiveCutsToJson(*c.live_cuts);
  if (c.node_cuts) j["node_cuts"] = NodeCutsToJson(*c.node_cuts);
  if (c.flakey) j["flakey"] = FlakeyToJson(*c.flakey);
  if (c.fstest) {
    j["fstest"] = {{"id", c.fstest->id},
                   {"source", c.fstest->source},
                   {"description", c.fstest->description},
                   {"text", c.fstest->text},
                   {"shape", c.fstest->shape},
                   {"profile", c.fstest->profile},
                   {"kernel", c.fstest->kernel}};
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
    if (const std::string kind = j.value("error_kind", ""); !kind.empty()) {
      ASSIGN_OR_RETURN(c.error_kind, ParseRunError(kind));
    }
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
    for (harness::SetMember member : {harness::SetMember::kDisk, harness::SetMember::kNode}) {
      if (!j.contains(harness::SetMembersName(member))) continue;
      ASSIGN_OR_RETURN(
          c.disks, harness::DiskSummariesFromJson(j.at(harness::SetMembersName(member)), member));
      c.set_member = member;
    }
    if (j.contains("live_cuts")) c.live_cuts = LiveCutsFromJson(j.at("live_cuts"));
    if (j.contains("node_cuts")) c.node_cuts = NodeCutsFromJson(j.at("node_cuts"));
    if (j.contains("flakey")) {
      ASSIGN_OR_RETURN(c.flakey, FlakeyFromJson(j.at("flakey")));
    }
    if (j.contains("fstest")) {
      const nlohmann::json& f = j.at("fstest");
      c.fstest = FsTestCell{.id = f.value("id", ""),
                            .source = f.value("source", ""),
                            .description = f.value("description", ""),
                            .text = f.value("text", ""),
                            .shape = f.value("shape", ""),
                            .profile = f.value("profile", "default"),
                            .kernel = f.value("kernel", "")};
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
