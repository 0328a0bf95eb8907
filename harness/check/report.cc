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
  j["fs_unrecoverable"] = v.fs_unrecoverable;
  j["fs_repaired"] = v.fs_repaired;
  if (!v.fs_steps.empty()) j["fs_steps"] = v.fs_steps;
  if (!v.torn_unacked.empty()) j["torn_unacked"] = v.torn_unacked;
  if (!v.why.empty()) j["why"] = v.why;
  if (!v.could_not_check.empty()) j["could_not_check"] = v.could_not_check;
  if (!v.unavailable.empty()) j["unavailable"] = v.unavailable;
  if (v.torn_entry) j["torn"] = {{"entry", *v.torn_entry}, {"units", v.torn_units}};
  if (!v.dropped_per_disk.empty()) {
    // Per disk (per node for a cluster): how many writes it dropped, and which.
    const std::string word = SetMemberName(v.member);
    nlohmann::json counts = nlohmann::json::array();
    for (const std::vector<uint64_t>& entries : v.dropped_per_disk) {
      counts.push_back(entries.size());
    }
    j["dropped_per_" + word] = counts;
    j["dropped_entries_per_" + word] = v.dropped_per_disk;
  }
  if (v.torn_disk != 0) j["torn"][SetMemberName(v.member)] = v.torn_disk;
  if (!v.stderr_tail.empty()) j["checker_stderr_tail"] = v.stderr_tail;
  if (!v.repro.empty()) j["repro"] = v.repro;
  return j;
}

// One model's result: its counts, its loss, and the verdicts that stand for it.
nlohmann::json ModelResultJson(const ModelResult& m) {
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
      {"states_planned", m.states_planned},
      {"states_checked", m.states},
      {"states_unchecked", m.states_unchecked()},
      {"complete", m.complete()},
      {"stopped", m.stopped == StopReason::kNone ? nlohmann::json(nullptr)
                                                 : nlohmann::json(StopReasonName(m.stopped))},
      {"checked", m.checked},
      {"deduplicated", m.deduplicated},
      {"violations", m.violations},
      {"fs_unrecoverable", m.fs_unrecoverable},
      {"fs_repaired", m.fs_repaired},
      {"torn_unacked", m.torn_unacked},
      {"passed", m.violations == 0},
      {"lost_acks_max", m.lost_acks_max},
      {"lost_acks_max_exact", m.lost_acks_exact()},
      {"lost_acks_distribution", dist},
      {"first_violation",
       m.first_violation ? VerdictJson(*m.first_violation) : nlohmann::json(nullptr)},
      {"first_fs_unrecoverable",
       m.first_fs_unrecoverable ? VerdictJson(*m.first_fs_unrecoverable) : nlohmann::json(nullptr)},
      {"first_fs_repaired",
       m.first_fs_repaired ? VerdictJson(*m.first_fs_repaired) : nlohmann::json(nullptr)},
      {"worst_violation",
       m.worst_violation ? VerdictJson(*m.worst_violation) : nlohmann::json(nullptr)},
      {"could_not_check", m.could_not_check},
      {"first_could_not_check",
       m.first_could_not_check ? VerdictJson(*m.first_could_not_check) : nlohmann::json(nullptr)},
      {"unavailable", m.unavailable},
      {"first_unavailable",
       m.first_unavailable ? VerdictJson(*m.first_unavailable) : nlohmann::json(nullptr)},
      {"checker_failures", m.checker_failures},
      {"first_checker_failure",
       m.first_checker_failure ? VerdictJson(*m.first_checker_failure) : nlohmann::json(nullptr)},
      {"examples", examples},
      {"seconds", m.seconds},
      {"states_per_second", m.seconds > 0 ? m.states / m.seconds : 0.0},
      {"notes", m.notes}};
  if (m.model.mode == CacheMode::kLying) {
    j["lying_window"] = {{"value", m.model.window},
                         {"unit", m.model.window_in_bytes ? "bytes" : "entries"}};
  }
  return j;
}

// What was checked: the recording.
nlohmann::json TraceJson(const CheckReport& r) {
  return {{"path", r.trace_path},
          {"hash", r.trace_hash},
          {"entries", r.trace_entries},
          {"acks", r.trace_acks},
          {"sector_size", r.sector_size},
          {"physical_sector", r.physical_sector},
          {"order", r.order},
          {"notes", r.trace_notes}};
}

// How it was checked: the options that decide the states and the verdicts.
nlohmann::json ParametersJson(const CheckReport& r) {
  return {{"base_image", r.base_image},
          {"checker", r.checker},
          {"fs", r.fs},
          {"mkfs", r.mkfs_command},
          {"fs_block_size", r.fs_block_size},
          {"check_method", r.check_method},
          {"check_kernel", r.check_kernel},
          {"fs_failures_are_violations", r.fs_failures_are_violations},
          {"atomic_unit", r.atomic_unit},
          {"points", r.points},
          {"max_exhaustive", r.states.max_exhaustive},
          {"samples", r.states.samples},
          {"torn", r.states.torn},
          {"torn_inflight", r.states.torn_inflight},
          {"seed", r.seed},
          {"ordered", r.ordered},
          {"oracle", r.latest_ack_only ? "latest-ack" : "every-ack"},
          {"workers", r.workers},
          {"exhaustive", r.exhaustive},
          {"budget_seconds", r.budget_seconds}};
}

}  // namespace

nlohmann::json DiskSummariesToJson(const std::vector<DiskSummary>& disks, SetMember member) {
  if (disks.empty()) return nullptr;
  nlohmann::json out = nlohmann::json::array();
  for (size_t d = 0; d < disks.size(); ++d) {
    const DiskSummary& s = disks[d];
    nlohmann::json j = {{SetMemberName(member), d + 1}, {"fs", s.fs},           {"bytes", s.bytes},
                        {"writes", s.writes},           {"flushes", s.flushes}, {"fua", s.fua}};
    if (!s.log.empty()) {
      j["log"] = s.log;
      j["log_bytes"] = s.log_bytes;
    }
    out.push_back(std::move(j));
  }
  return out;
}

absl::StatusOr<std::vector<DiskSummary>> DiskSummariesFromJson(const nlohmann::json& j,
                                                               SetMember member) {
  std::vector<DiskSummary> disks;
  if (j.is_null()) return disks;
  try {
    for (const nlohmann::json& d : j) {
      if (d.at(SetMemberName(member)).get<size_t>() != disks.size() + 1) {
        return absl::InvalidArgumentError(fmt::format("{}: {} {} is out of order",
                                                      SetMembersName(member), SetMemberName(member),
                                                      d.at(SetMemberName(member)).dump()));
      }
      disks.push_back({.fs = d.at("fs").get<std::string>(),
                       .bytes = d.value("bytes", uint64_t{0}),
                       .writes = d.at("writes").get<uint64_t>(),
                       .flushes = d.at("flushes").get<uint64_t>(),
                       .fua = d.at("fua").get<uint64_t>(),
                       .log = d.value("log", ""),
                       .log_bytes = d.value("log_bytes", uint64_t{0})});
    }
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(fmt::format("{}: {}", SetMembersName(member), e.what()));
  }
  return disks;
}

std::string StatesText(const ModelResult& m) {
  if (m.stopped == StopReason::kNone) return std::to_string(m.states);
  return fmt::format("{}of{}{}", m.states, m.states_planned,
                     m.stopped == StopReason::kFirstViolation ? "*" : "~");
}

std::string LostText(uint64_t lost_acks_max, bool exact) {
  return fmt::format("{}{}", exact ? "" : "≥", lost_acks_max);
}

std::string StatesLegend(const std::vector<ModelResult>& results) {
  bool first = false, budget = false;
  for (const ModelResult& m : results) {
    first = first || m.stopped == StopReason::kFirstViolation;
    budget = budget || m.stopped == StopReason::kBudget;
  }
  std::string legend;
  if (first) {
    legend +=
        "NofM*: the model's verdict is FAIL at its first violating state, where it stopped "
        "after N of its M planned states, the worst first (--exhaustive checks them all for full "
        "counts)";
  }
  if (first || budget) {
    legend += fmt::format(
        "{}≥L: the largest loss among the states checked before the stop, a lower bound of "
        "the worst the model allows (the states that can lose the most are checked first; "
        "--exhaustive checks every state for the worst case, shown without ≥)",
        legend.empty() ? "" : "\n");
  }
  if (budget) {
    legend += fmt::format(
        "{}NofM~: the --budget ran out after N of M planned states: a pass there is incomplete, "
        "not a pass",
        legend.empty() ? "" : "\n");
  }
  return legend;
}

nlohmann::json ReportToJson(const CheckReport& r) {
  nlohmann::json results = nlohmann::json::array();
  for (const ModelResult& m : r.results) results.push_back(ModelResultJson(m));
  // A cluster's disks are its nodes: `nodes` with `node` K (docs/report.md).
  return {{"schema", "powercut-report/1"},
          {"trace", TraceJson(r)},
          {"parameters", ParametersJson(r)},
          {SetMembersName(r.set_member), DiskSummariesToJson(r.disks, r.set_member)},
          {"results", results},
          {"passed", r.passed()},
          {"complete", r.complete()},
          {"seconds", r.seconds}};
}

std::string ReportToJunit(const CheckReport& r) {
  size_t failures = 0;
  for (const auto& m : r.results) failures += m.violations > 0;
  std::string xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  size_t skipped = 0;
  for (const auto& m : r.results) skipped += (m.fs_unrecoverable > 0) + (m.unavailable > 0);
  xml += fmt::format("<testsuites tests=\"{}\" failures=\"{}\" time=\"{:.3f}\">\n",
                     r.results.size() + skipped, failures, r.seconds);
  xml += fmt::format(
      "  <testsuite name=\"powercut\" tests=\"{}\" failures=\"{}\" skipped=\"{}\" "
      "time=\"{:.3f}\">\n",
      r.results.size() + skipped, failures, skipped, r.seconds);
  for (const ModelResult& m : r.results) {
    if (m.fs_unrecoverable > 0) {
      // The file system's outcome, kept apart from the program's: its own test case, skipped
      // (a finding about the file system, not a failure of the program) unless asked otherwise.
      const Verdict& f = *m.first_fs_unrecoverable;
      xml += fmt::format(
          "    <testcase classname=\"powercut.{}\" name=\"cache={} file-system\" time=\"0\">\n"
          "      <skipped message=\"{}\"/>\n    </testcase>\n",
          XmlEscape(m.workload), XmlEscape(m.model.Code()),
          XmlEscape(fmt::format(
              "file system unrecoverable in {} of {} crash states ({}): {}", m.fs_unrecoverable,
              m.states,
              r.fs_failures_are_violations ? "counted as violations" : "not the program's verdict",
              f.Describe())));
    }
    if (m.unavailable > 0) {
      // The system's own outcome, like the file system's: visible, never the program's failure.
      xml += fmt::format(
          "    <testcase classname=\"powercut.{}\" name=\"cache={} unavailable\" time=\"0\">\n"
          "      <skipped message=\"{}\"/>\n    </testcase>\n",
          XmlEscape(m.workload), XmlEscape(m.model.Code()),
          XmlEscape(fmt::format("the system did not come back in {} of {} crash states (not the "
                                "program's verdict): {}",
                                m.unavailable, m.states, m.first_unavailable->Describe())));
    }
    xml += fmt::format("    <testcase classname=\"powercut.{}\" name=\"cache={}\" time=\"{:.3f}\"",
                       XmlEscape(m.workload), XmlEscape(m.model.Code()), m.seconds);
    if (m.violations == 0 && !m.complete()) {
      // An incomplete pass is not a pass: skipped, with the coverage it reached.
      xml += fmt::format(
          ">\n      <skipped message=\"{}\"/>\n    </testcase>\n",
          XmlEscape(fmt::format("incomplete: no violation in the {} of {} planned crash states "
                                "checked before the budget ran out ({} unchecked)",
                                m.states, m.states_planned, m.states_unchecked())));
      continue;
    }
    if (m.violations == 0) {
      xml += fmt::format(
          ">\n      <system-out>{} states ({} checked, {} deduplicated), no "
          "violations</system-out>\n    </testcase>\n",
          m.states, m.checked, m.deduplicated);
      continue;
    }
    const Verdict& v = *m.first_violation;
    std::string message =
        m.stopped == StopReason::kFirstViolation
            ? fmt::format(
                  "crash state {} violates, losing {} acked commits (the first of {} planned, "
                  "the states that can lose the most first; the check stopped there, {} states "
                  "unchecked: the worst case is at least {}, --exhaustive counts them all)",
                  v.state_id, v.lost.size(), m.states_planned, m.states_unchecked(),
                  m.lost_acks_max)
            : fmt::format(
                  "{} of {} crash states violate: first {}; worst case {} acked commits lost{}",
                  m.violations, m.states, v.state_id,
                  LostText(m.lost_acks_max, m.lost_acks_exact()),
                  m.lost_acks_exact() ? "" : " (a lower bound: the budget ran out)");
    xml += fmt::format(
        ">\n      <failure message=\"{}\" type=\"crash-consistency\">{}\nrebuild: "
        "{}{}</failure>\n    </testcase>\n",
        XmlEscape(message), XmlEscape(v.Describe()), XmlEscape(v.rebuild),
        v.repro.empty() ? "" : "\nreproduce: " + XmlEscape(v.repro));
  }
  xml += "  </testsuite>\n</testsuites>\n";
  return xml;
}

std::string DisksText(const std::vector<DiskSummary>& disks, SetMember member) {
  std::string out;
  for (size_t d = 0; d < disks.size(); ++d) {
    const DiskSummary& s = disks[d];
    constexpr uint64_t kMiB = uint64_t{1} << 20;
    const std::string size = s.bytes % kMiB == 0 ? fmt::format("{} MiB", s.bytes / kMiB)
                                                 : fmt::format("{} bytes", s.bytes);
    out += fmt::format("{} {} ({}, {}): {} writes, {} flushes, {} FUA", SetMemberName(member),
                       d + 1, s.fs, size, s.writes, s.flushes, s.fua);
    if (!s.log.empty()) out += fmt::format("; its log: {} ({} bytes)", s.log, s.log_bytes);
    out += "\n";
  }
  return out;
}

std::string ReportSummaryTable(const CheckReport& r) {
  std::string out =
      fmt::format("trace {} ({} entries, {} acks, order {}), fs {}, checker '{}'\n", r.trace_path,
                  r.trace_entries, r.trace_acks, r.order, r.fs, r.checker);
  out += fmt::format("disk: {}-byte logical / {} physical sectors, atomic unit {} B", r.sector_size,
                     r.physical_sector ? fmt::format("{}-byte", r.physical_sector) : "unknown",
                     r.atomic_unit);
  if (!r.mkfs_command.empty()) {
    out += fmt::format("; made with `{}`{}", r.mkfs_command,
                       r.fs_block_size ? fmt::format(" ({}-byte blocks)", r.fs_block_size) : "");
  }
  if (!r.check_method.empty()) out += "; states read by " + r.check_method;
  if (!r.check_kernel.empty()) out += " on kernel " + r.check_kernel;
  out += "\n";
  out += DisksText(r.disks, r.set_member);
  for (const auto& n : r.trace_notes) out += "note: " + n + "\n";
  out += fmt::format("{:<24} {:<10} {:>7} {:>8} {:>8} {:>7} {:>10} {:>9} {:>9} {:>9} {:>8}  {}\n",
                     "workload", "cache", "points", "states", "checked", "dedup", "violating",
                     "lost max", "fs unrec", "fs fixed", "unavail", "first violation");
  for (const ModelResult& m : r.results) {
    out += fmt::format("{:<24} {:<10} {:>7} {:>8} {:>8} {:>7} {:>10} {:>9} {:>9} {:>9} {:>8}  {}\n",
                       m.workload, m.model.Code(), m.points, StatesText(m), m.checked,
                       m.deduplicated, m.violations, LostText(m.lost_acks_max, m.lost_acks_exact()),
                       m.fs_unrecoverable, m.fs_repaired, m.unavailable,
                       m.first_violation ? m.first_violation->state_id : "-");
  }
  if (std::string legend = StatesLegend(r.results); !legend.empty()) out += legend + "\n";
  for (const ModelResult& m : r.results) {
    for (const auto& n : m.notes) out += fmt::format("note ({}): {}\n", m.model.Code(), n);
    if (m.first_violation) {
      out += fmt::format("{}\n", m.first_violation->Describe());
      if (!m.first_violation->repro.empty()) {
        out += fmt::format("  reproduce it: {}\n", m.first_violation->repro);
      }
    }
    if (m.first_fs_unrecoverable && !r.fs_failures_are_violations) {
      out += fmt::format(
          "file system ({}): {} of {} states could not be brought back by the file system's own "
          "tools (a finding about the file system, not the program); first: {}\n",
          m.model.Code(), m.fs_unrecoverable, m.states, m.first_fs_unrecoverable->Describe());
    }
    if (m.first_fs_repaired) {
      out += fmt::format(
          "file system ({}): {} of {} states needed repairs by the file system's tools before "
          "the program's data was judged; first: {}\n",
          m.model.Code(), m.fs_repaired, m.states, m.first_fs_repaired->fs_steps);
    }
    if (m.first_unavailable) {
      out += fmt::format(
          "unavailable ({}): the system did not come back in {} of {} states (its own outcome, "
          "not a violation: nothing is known of their acks); first: {}\n",
          m.model.Code(), m.unavailable, m.states, m.first_unavailable->Describe());
      // Why it did not come back is in the checker's diagnostics (a cluster's: each node's last
      // log lines), quoted as the report keeps them.
      std::string tail = m.first_unavailable->stderr_tail;
      while (!tail.empty() && tail.back() == '\n') tail.pop_back();
      if (!tail.empty()) {
        out += "  the checker's stderr, last lines:\n";
        size_t start = 0;
        for (size_t nl = tail.find('\n'); start <= tail.size(); nl = tail.find('\n', start)) {
          if (nl == std::string::npos) nl = tail.size();
          out += fmt::format("    {}\n", std::string_view(tail).substr(start, nl - start));
          start = nl + 1;
        }
      }
      if (!m.first_unavailable->repro.empty()) {
        out += fmt::format("  reproduce it: {}\n", m.first_unavailable->repro);
      }
    }
    if (m.could_not_check > 0) {
      out += fmt::format("{} states could not be checked ({}): {}\n", m.could_not_check,
                         m.model.Code(), m.first_could_not_check->could_not_check);
    }
  }
  out += fmt::format("{} in {:.2f} s\n",
                     !r.passed()    ? "FAIL"
                     : r.complete() ? "PASS"
                                    : "INCOMPLETE (no violation yet)",
                     r.seconds);
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
