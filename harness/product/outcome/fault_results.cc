#include "harness/product/outcome/fault_results.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_replace.h"
#include "base/status_macros.h"
#include "fmt/format.h"
#include "fmt/ranges.h"

namespace powercut::product {

using nlohmann::json;

uint64_t LiveCutsResult::Counted() const {
  return static_cast<uint64_t>(
      std::count_if(cuts.begin(), cuts.end(), [](const LiveCut& c) { return c.error.empty(); }));
}
uint64_t LiveCutsResult::InModel() const {
  return static_cast<uint64_t>(std::count_if(
      cuts.begin(), cuts.end(), [](const LiveCut& c) { return c.error.empty() && c.in_model; }));
}
uint64_t LiveCutsResult::Violations() const {
  return static_cast<uint64_t>(std::count_if(
      cuts.begin(), cuts.end(), [](const LiveCut& c) { return c.error.empty() && c.violation; }));
}
uint64_t LiveCutsResult::Unavailable() const {
  return static_cast<uint64_t>(std::count_if(cuts.begin(), cuts.end(), [](const LiveCut& c) {
    return c.error.empty() && !c.unavailable.empty();
  }));
}
uint64_t LiveCutsResult::Errors() const { return cuts.size() - Counted(); }
double LiveCutsResult::SecondsPerCut() const {
  if (cuts.empty()) return 0;
  double s = 0;
  for (const LiveCut& c : cuts) s += c.record_seconds + c.check_seconds;
  return s / static_cast<double>(cuts.size());
}

namespace {

bool Several(const LiveCutsResult& r) {
  return std::any_of(r.cuts.begin(), r.cuts.end(),
                     [](const LiveCut& c) { return c.disks.size() > 1; });
}

// "node 1: 3 (2 kept, 1 dropped, 0 torn), node 2: 0, ..." and which disks are outside.
std::string DisksText(const LiveCutsResult& r, const LiveCut& c) {
  std::string s;
  for (const LiveCutDisk& d : c.disks) {
    s += fmt::format("{}{} {}: {}", s.empty() ? "" : ", ", r.DiskWord(), d.disk, d.volatile_writes);
    if (d.volatile_writes > 0) {
      s += fmt::format(" ({} kept, {} dropped, {} torn)", d.kept, d.dropped, d.torn);
    }
    if (!d.in_model) s += " OUTSIDE";
  }
  return s;
}

}  // namespace

std::string LiveCutsResult::Summary() const {
  std::string s = fmt::format(
      "{} of {} live cuts inside the model{} (cache {}), {} violating, ", InModel(), Counted(),
      Several(*this) ? fmt::format(" on every {}", DiskWord()) : std::string(), cache,
      Violations());
  if (nodes || Unavailable() > 0) s += fmt::format("{} unavailable, ", Unavailable());
  s += fmt::format("{:.1f} s per cut", SecondsPerCut());
  if (Errors() > 0) s += fmt::format("; {} could not be made or checked", Errors());
  const auto uncut = std::count_if(cuts.begin(), cuts.end(),
                                   [](const LiveCut& c) { return c.error.empty() && !c.cut; });
  if (uncut > 0) {
    s += fmt::format("; {} ran to the end before the cut point (cut at the end)", uncut);
  }
  return s;
}

std::string LiveCutsText(const LiveCutsResult& r) {
  std::string s;
  for (const LiveCut& c : r.cuts) {
    s += fmt::format("live cut seed {}: ", c.seed);
    if (!c.error.empty()) {
      s += "COULD NOT CUT: " + c.error + "\n";
      continue;
    }
    s += c.cut ? fmt::format("after ack {}, write {}", c.cut_after_ack, c.cut_after_write)
               : std::string("ran to the end (fewer acks than the cut point): cut at the end");
    s += fmt::format(", {} acks before; {} volatile writes ({} kept, {} dropped, {} torn)",
                     c.acks_before_cut, c.volatile_writes, c.kept, c.dropped, c.torn);
    if (c.disks.size() > 1) s += " [" + DisksText(r, c) + "]";
    s += c.in_model
             ? (c.disks.size() > 1 ? fmt::format("; inside the model on every {}", r.DiskWord())
                                   : std::string("; inside the model"))
             : std::string("; OUTSIDE THE MODEL (tester bug)");
    s += c.violation              ? fmt::format("; FAIL, lost {}", fmt::join(c.lost, " "))
         : !c.unavailable.empty() ? "; UNAVAILABLE (did not come back: " + c.unavailable + ")"
                                  : std::string("; pass");
    s += fmt::format(" ({:.1f} s + {:.1f} s check{})\n", c.record_seconds, c.check_seconds,
                     c.check_method.empty()
                         ? std::string()
                         : fmt::format(" by {} on kernel {}", c.check_method, c.check_kernel));
    if (!c.in_model) s += "  evidence: " + c.evidence + "\n  recording: " + c.kept_trace + "\n";
    if (c.violation) s += "  " + c.summary + "\n";
    // Why it did not come back (a cluster's: each node's last log lines), indented.
    const absl::string_view tail = absl::StripTrailingAsciiWhitespace(
        c.unavailable.empty() ? absl::string_view() : absl::string_view(c.unavailable_stderr));
    if (!tail.empty()) {
      s += "  the checker's stderr, last lines:\n    " +
           absl::StrReplaceAll(tail, {{"\n", "\n    "}}) + "\n";
    }
  }
  return s + r.Summary() + "\n";
}

std::string FlakeyResult::Summary() const {
  std::string s = fmt::format(
      "{}{} after ack {} {}: {} acks, {} after the failure began", vm::FlakeyModeName(mode),
      disks > 1 ? fmt::format(" on disk {} of {}", disk, disks) : std::string(), after_acks,
      window_seconds > 0 ? fmt::format("for {:.1f} s", window_seconds) : std::string("for good"),
      acks, acks - std::min(acks, acks_before_failure));
  auto list = [](const std::vector<std::string>& ids) {
    std::string out;
    for (size_t i = 0; i < ids.size() && i < 10; ++i) out += (i ? " " : "") + ids[i];
    if (ids.size() > 10) out += fmt::format(" ... ({} in all)", ids.size());
    return out;
  };
  if (!acks_after_failure.empty()) {
    s += fmt::format(", {} of them not on the final image ({})", acks_after_failure.size(),
                     list(acks_after_failure));
  }
  if (!lost_before_failure.empty()) {
    s += fmt::format("; {} acked before the failure lost ({})", lost_before_failure.size(),
                     list(lost_before_failure));
  }
  if (!corrupt.empty()) s += fmt::format("; corrupt: {}", list(corrupt));
  if (checker_exit != 0) s += fmt::format("; the checker exited {}", checker_exit);
  if (workload_exit != 0) s += fmt::format("; the workload exited {}", workload_exit);
  return s;
}

json LiveCutsToJson(const LiveCutsResult& r) {
  json cuts = json::array();
  for (const LiveCut& c : r.cuts) {
    json j = {{"seed", c.seed},
              {"cut", c.cut},
              {"cut_after_ack", c.cut_after_ack},
              {"cut_after_write", c.cut_after_write},
              {"acks_before_cut", c.acks_before_cut},
              {"volatile_writes", c.volatile_writes},
              {"kept", c.kept},
              {"dropped", c.dropped},
              {"torn", c.torn},
              {"in_model", c.in_model},
              {"sampled", c.sampled},
              {"state_id", c.state_id},
              {"violation", c.violation},
              {"fs_unrecoverable", c.fs_unrecoverable},
              {"lost", c.lost},
              {"check_method", c.check_method},
              {"check_kernel", c.check_kernel},
              {"record_seconds", c.record_seconds},
              {"check_seconds", c.check_seconds}};
    if (!c.evidence.empty()) j["evidence"] = c.evidence;
    if (!c.kept_trace.empty()) j["kept_trace"] = c.kept_trace;
    if (!c.summary.empty()) j["summary"] = c.summary;
    if (!c.error.empty()) j["error"] = c.error;
    if (!c.unavailable.empty()) {
      j["unavailable"] = c.unavailable;
      j["unavailable_stderr"] = c.unavailable_stderr;
    }
    if (!c.disks.empty()) {
      // A cluster's disks are its nodes: named so.
      const char* word = r.DiskWord();
      json disks = json::array();
      for (const LiveCutDisk& d : c.disks) {
        json dj = {
            {word, d.disk},   {"in_model", d.in_model}, {"volatile_writes", d.volatile_writes},
            {"kept", d.kept}, {"dropped", d.dropped},   {"torn", d.torn}};
        if (!d.evidence.empty()) dj["evidence"] = d.evidence;
        disks.push_back(std::move(dj));
      }
      j[r.nodes ? "nodes" : "disks"] = std::move(disks);
    }
    cuts.push_back(std::move(j));
  }
  return {{"cache", r.cache},
          {"requested", r.requested},
          {"in_model", r.InModel()},
          {"counted", r.Counted()},
          {"violations", r.Violations()},
          {"unavailable", r.Unavailable()},
          {"seconds_per_cut", r.SecondsPerCut()},
          {"cuts", cuts}};
}

LiveCutsResult LiveCutsFromJson(const json& j) {
  LiveCutsResult r;
  r.cache = j.value("cache", "on");
  r.requested = j.value("requested", uint64_t{0});
  for (const json& c : j.value("cuts", json::array())) {
    LiveCut cut;
    cut.seed = c.value("seed", uint64_t{0});
    cut.cut = c.value("cut", true);
    cut.cut_after_ack = c.value("cut_after_ack", uint64_t{0});
    cut.cut_after_write = c.value("cut_after_write", uint64_t{0});
    cut.acks_before_cut = c.value("acks_before_cut", uint64_t{0});
    cut.volatile_writes = c.value("volatile_writes", uint64_t{0});
    cut.kept = c.value("kept", uint64_t{0});
    cut.dropped = c.value("dropped", uint64_t{0});
    cut.torn = c.value("torn", uint64_t{0});
    cut.in_model = c.value("in_model", false);
    cut.sampled = c.value("sampled", false);
    cut.state_id = c.value("state_id", "");
    cut.violation = c.value("violation", false);
    cut.fs_unrecoverable = c.value("fs_unrecoverable", false);
    cut.lost = c.value("lost", std::vector<std::string>{});
    cut.check_method = c.value("check_method", "");
    cut.check_kernel = c.value("check_kernel", "");
    cut.record_seconds = c.value("record_seconds", 0.0);
    cut.check_seconds = c.value("check_seconds", 0.0);
    cut.evidence = c.value("evidence", "");
    cut.kept_trace = c.value("kept_trace", "");
    cut.summary = c.value("summary", "");
    cut.error = c.value("error", "");
    cut.unavailable = c.value("unavailable", "");
    cut.unavailable_stderr = c.value("unavailable_stderr", "");
    const bool nodes = c.contains("nodes");
    r.nodes = r.nodes || nodes;
    for (const json& d : c.value(nodes ? "nodes" : "disks", json::array())) {
      cut.disks.push_back({.disk = d.value(nodes ? "node" : "disk", uint32_t{1}),
                           .in_model = d.value("in_model", false),
                           .volatile_writes = d.value("volatile_writes", uint64_t{0}),
                           .kept = d.value("kept", uint64_t{0}),
                           .dropped = d.value("dropped", uint64_t{0}),
                           .torn = d.value("torn", uint64_t{0}),
                           .evidence = d.value("evidence", "")});
    }
    r.cuts.push_back(std::move(cut));
  }
  return r;
}

json FlakeyToJson(const FlakeyResult& r) {
  return {{"mode", vm::FlakeyModeName(r.mode)},
          {"after_acks", r.after_acks},
          {"window_seconds", r.window_seconds},
          {"healed", r.healed},
          {"disk", r.disk},
          {"disks", r.disks},
          {"acks", r.acks},
          {"acks_before_failure", r.acks_before_failure},
          {"violations", r.violations()},
          {"acks_after_failure", r.acks_after_failure},
          {"lost_before_failure", r.lost_before_failure},
          {"corrupt", r.corrupt},
          {"workload_exit", r.workload_exit},
          {"checker_exit", r.checker_exit},
          {"seconds", r.seconds}};
}

absl::StatusOr<FlakeyResult> FlakeyFromJson(const json& j) {
  FlakeyResult r;
  ASSIGN_OR_RETURN(r.mode, vm::ParseFlakeyMode(j.value("mode", ""), "flakey.mode"));
  r.after_acks = j.value("after_acks", int64_t{0});
  r.window_seconds = j.value("window_seconds", 0.0);
  r.healed = j.value("healed", false);
  r.disk = j.value("disk", uint32_t{1});
  r.disks = j.value("disks", uint32_t{1});
  r.acks = j.value("acks", uint64_t{0});
  r.acks_before_failure = j.value("acks_before_failure", uint64_t{0});
  r.acks_after_failure = j.value("acks_after_failure", std::vector<std::string>{});
  r.lost_before_failure = j.value("lost_before_failure", std::vector<std::string>{});
  r.corrupt = j.value("corrupt", std::vector<std::string>{});
  r.workload_exit = j.value("workload_exit", -1);
  r.checker_exit = j.value("checker_exit", -1);
  r.seconds = j.value("seconds", 0.0);
  return r;
}

}  // namespace powercut::product
