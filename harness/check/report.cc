#include "harness/check/report.h"

#include <filesystem>
#include <fstream>

#include "base/xml_escape.h"
#include "fmt/format.h"

namespace powercut::harness {
namespace {

nlohmann::json VerdictJson(const Verdict& v) {
  nlohmann::json j = {{"state", v.state_id},
                      {"point", v.point},
                      {"crash_after_entry", static_cast<int64_t>(v.point) - 1},
                      {"cache", v.cache},
                      {"acked_before", v.acked_before},
                      {"lost", v.lost},
                      {"gaps", v.gaps},
                      {"corrupt", v.corrupt},
                      {"recovered", v.recovered},
                      {"checker_exit", v.exit_code},
                      {"timed_out", v.timed_out},
                      {"dropped_entries", v.dropped},
                      {"rebuild", v.rebuild},
                      {"summary", v.Describe()}};
  if (!v.mount_error.empty()) j["mount_error"] = v.mount_error;
  if (!v.could_not_check.empty()) j["could_not_check"] = v.could_not_check;
  if (v.torn_entry) j["torn"] = {{"entry", *v.torn_entry}, {"units", v.torn_units}};
  if (!v.stderr_tail.empty()) j["checker_stderr_tail"] = v.stderr_tail;
  return j;
}

}  // namespace

nlohmann::json ReportToJson(const CheckReport& r) {
  nlohmann::json results = nlohmann::json::array();
  for (const ModelResult& m : r.results) {
    nlohmann::json dist = nlohmann::json::object();
    for (const auto& [lost, count] : m.lost_acks_distribution) dist[std::to_string(lost)] = count;
    nlohmann::json examples = nlohmann::json::array();
    for (const Verdict& v : m.examples) examples.push_back(VerdictJson(v));
    nlohmann::json j = {
        {"workload", m.workload},
        {"cache", m.model.Name()},
        {"cache_code", m.model.Code()},
        {"points", m.points},
        {"states", m.states},
        {"checked", m.checked},
        {"deduplicated", m.deduplicated},
        {"violations", m.violations},
        {"passed", m.violations == 0},
        {"lost_acks_max", m.lost_acks_max},
        {"lost_acks_distribution", dist},
        {"first_violation",
         m.first_violation ? VerdictJson(*m.first_violation) : nlohmann::json(nullptr)},
        {"worst_violation",
         m.worst_violation ? VerdictJson(*m.worst_violation) : nlohmann::json(nullptr)},
        {"could_not_check", m.could_not_check},
        {"first_could_not_check",
         m.first_could_not_check ? VerdictJson(*m.first_could_not_check) : nlohmann::json(nullptr)},
        {"examples", examples},
        {"seconds", m.seconds},
        {"states_per_second", m.seconds > 0 ? m.states / m.seconds : 0.0},
        {"notes", m.notes}};
    if (m.model.mode == CacheMode::kLying) {
      j["lying_window"] = {{"value", m.model.window},
                           {"unit", m.model.window_in_bytes ? "bytes" : "entries"}};
    }
    results.push_back(j);
  }
  return {{"schema", "powercut-report/1"},
          {"trace",
           {{"path", r.trace_path},
            {"hash", r.trace_hash},
            {"entries", r.trace_entries},
            {"acks", r.trace_acks},
            {"sector_size", r.sector_size},
            {"order", r.order},
            {"notes", r.trace_notes}}},
          {"parameters",
           {{"base_image", r.base_image},
            {"checker", r.checker},
            {"fs", r.fs},
            {"atomic_unit", r.atomic_unit},
            {"points", r.points},
            {"max_exhaustive", r.states.max_exhaustive},
            {"samples", r.states.samples},
            {"torn", r.states.torn},
            {"seed", r.seed},
            {"ordered", r.ordered},
            {"workers", r.workers}}},
          {"results", results},
          {"passed", r.passed()},
          {"seconds", r.seconds}};
}

std::string ReportToJunit(const CheckReport& r) {
  size_t failures = 0;
  for (const auto& m : r.results) failures += m.violations > 0;
  std::string xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  xml += fmt::format("<testsuites tests=\"{}\" failures=\"{}\" time=\"{:.3f}\">\n",
                     r.results.size(), failures, r.seconds);
  xml +=
      fmt::format("  <testsuite name=\"powercut\" tests=\"{}\" failures=\"{}\" time=\"{:.3f}\">\n",
                  r.results.size(), failures, r.seconds);
  for (const ModelResult& m : r.results) {
    xml += fmt::format("    <testcase classname=\"powercut.{}\" name=\"cache={}\" time=\"{:.3f}\"",
                       XmlEscape(m.workload), XmlEscape(m.model.Code()), m.seconds);
    if (m.violations == 0) {
      xml += fmt::format(
          ">\n      <system-out>{} states ({} checked, {} deduplicated), no "
          "violations</system-out>\n    </testcase>\n",
          m.states, m.checked, m.deduplicated);
      continue;
    }
    const Verdict& v = *m.first_violation;
    std::string message =
        fmt::format("{} of {} crash states violate: first {}; worst case {} acked commits lost",
                    m.violations, m.states, v.state_id, m.lost_acks_max);
    xml += fmt::format(
        ">\n      <failure message=\"{}\" type=\"crash-consistency\">{}\nrebuild: "
        "{}</failure>\n    </testcase>\n",
        XmlEscape(message), XmlEscape(v.Describe()), XmlEscape(v.rebuild));
  }
  xml += "  </testsuite>\n</testsuites>\n";
  return xml;
}

std::string ReportSummaryTable(const CheckReport& r) {
  std::string out =
      fmt::format("trace {} ({} entries, {} acks, order {}), fs {}, checker '{}'\n", r.trace_path,
                  r.trace_entries, r.trace_acks, r.order, r.fs, r.checker);
  for (const auto& n : r.trace_notes) out += "note: " + n + "\n";
  out += fmt::format("{:<24} {:<10} {:>7} {:>8} {:>8} {:>7} {:>10} {:>9}  {}\n", "workload",
                     "cache", "points", "states", "checked", "dedup", "violating", "lost max",
                     "first violation");
  for (const ModelResult& m : r.results) {
    out += fmt::format("{:<24} {:<10} {:>7} {:>8} {:>8} {:>7} {:>10} {:>9}  {}\n", m.workload,
                       m.model.Code(), m.points, m.states, m.checked, m.deduplicated, m.violations,
                       m.lost_acks_max, m.first_violation ? m.first_violation->state_id : "-");
  }
  for (const ModelResult& m : r.results) {
    for (const auto& n : m.notes) out += fmt::format("note ({}): {}\n", m.model.Code(), n);
    if (m.first_violation) out += fmt::format("{}\n", m.first_violation->Describe());
    if (m.could_not_check > 0) {
      out += fmt::format("{} states could not be checked ({}): {}\n", m.could_not_check,
                         m.model.Code(), m.first_could_not_check->could_not_check);
    }
  }
  out += fmt::format("{} in {:.2f} s\n", r.passed() ? "PASS" : "FAIL", r.seconds);
  return out;
}

absl::Status WriteTextFile(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc | std::ios::binary);
    out << text;
    if (!out) return absl::InternalError(fmt::format("cannot write {}", tmp));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return absl::InternalError(fmt::format("rename {} -> {}: {}", tmp, path, ec.message()));
  return absl::OkStatus();
}

}  // namespace powercut::harness
