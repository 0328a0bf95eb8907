// The matrix report as text: the headline table, the judges line, JUnit XML and the exit code
// (matrix.h).
#include <algorithm>

#include "base/xml_escape.h"
#include "fmt/format.h"
#include "harness/check/report.h"
#include "harness/product/matrix/matrix.h"

namespace powercut::product {
namespace {

using powercut::XmlEscape;

// The file system's and the system's outcomes beside a model's verdict in the table: "fs!N" (N
// states the file system's own tools could not bring back), "fsfixN" (N states it came back
// from by repairs), "downN" (N states the system did not come back on: unavailable).
std::string FsMarks(const CellModel& m) {
  std::string marks;
  if (m.fs_unrecoverable) marks += fmt::format(" fs!{}", m.fs_unrecoverable);
  if (m.fs_repaired) marks += fmt::format(" fsfix{}", m.fs_repaired);
  if (m.unavailable) marks += fmt::format(" down{}", m.unavailable);
  return marks;
}

// The table's two header lines: a column per cache model.
std::string HeadlineHeader(const std::vector<std::string>& caches) {
  std::string s = fmt::format("{:<36}", "cell (workload/setting/fs)");
  for (const auto& cache : caches) s += fmt::format("  {:<24}", "cache " + cache);
  s += "\n";
  s += fmt::format("{:<36}", "");
  for (size_t i = 0; i < caches.size(); ++i) s += fmt::format("  {:<24}", "lost/states/violating");
  s += "\n";
  return s;
}

// One cell's line: per cache model its verdict, acks lost, states and violating states (or why
// it could not run), then whether it was as expected.
std::string HeadlineRow(const CellResult& c, const std::vector<std::string>& caches) {
  const CellVerdict verdict = c.Verdict();
  std::string s;
  s += fmt::format("{:<36}", c.name);
  if (!c.ran) {
    std::string first_line = c.error.substr(0, c.error.find('\n'));
    if (verdict == CellVerdict::kOk) {
      s += fmt::format("  as expected: could not run ({}): {}\n", RunErrorName(c.error_kind),
                       first_line);
    } else {
      s += fmt::format("  COULD NOT RUN ({}): {}{}\n", RunErrorName(c.error_kind), first_line,
                       verdict == CellVerdict::kUnexpected
                           ? fmt::format("  {}: {}", c.MismatchWord(), c.Unexpected())
                           : "");
    }
    return s;
  }
  for (const auto& cache : caches) {
    std::string cellText = "-";
    for (const CellModel& m : c.models) {
      if (m.cache != cache) continue;
      cellText = fmt::format("{} {}/{}/{}{}{}{}{}",
                             m.violations   ? "FAIL"
                             : m.complete() ? "pass"
                                            : "incomplete",
                             CellLostText(m), CellStatesText(m), m.violations, FsMarks(m),
                             m.checker_failures ? fmt::format(" chk!{}", m.checker_failures) : "",
                             m.could_not_check ? fmt::format(" ?{}", m.could_not_check) : "",
                             c.AsExpected(m) ? "" : " !");
    }
    s += fmt::format("  {:<24}", cellText);
  }
  s += verdict == CellVerdict::kOk ? "  ok"
                                   : fmt::format("  {}: {}", c.MismatchWord(), c.Unexpected());
  s += "\n";
  return s;
}

// The legend of the marks the table used.
std::string HeadlineLegend(const MatrixReport& r) {
  std::string s;
  bool fs_outcomes = false, checker_failures = false, unavailable = false;
  for (const CellResult& c : r.cells) {
    for (const CellModel& m : c.models) {
      fs_outcomes = fs_outcomes || m.fs_unrecoverable || m.fs_repaired;
      checker_failures = checker_failures || m.checker_failures > 0;
      unavailable = unavailable || m.unavailable > 0;
    }
  }
  std::vector<harness::ModelResult> stops;
  for (const CellResult& c : r.cells) {
    for (const CellModel& m : c.models) {
      stops.emplace_back().stopped = harness::StopReasonFromName(m.stopped);
    }
  }
  if (std::string legend = harness::StatesLegend(stops); !legend.empty()) s += legend + "\n";
  if (std::string judges = MatrixJudges(r); !judges.empty()) {
    s += "crash states judged by " + judges + "\n";
  }
  if (fs_outcomes) {
    s += "fs!N: N crash states the file system's own tools could not bring back (the file "
         "system's outcome, not the program's); fsfixN: N states it came back from only by "
         "repairs (docs/boot-recovery.md)\n";
  }
  if (unavailable) {
    s += "downN: N crash states the system did not come back on (unavailable: no quorum answered "
         "the checker; the system's outcome, not a violation); the first one's checker stderr "
         "(each node's last log lines) is the JSON's unavailable_stderr and in the HTML report\n";
  }
  if (checker_failures) {
    s += "chk!N: N violating states whose checker failed on the mounted image (a server that "
         "could not recover it); the first one's stderr is the JSON's checker_stderr and in the "
         "HTML report\n";
  }
  return s;
}

}  // namespace

std::vector<std::string> CacheColumns(const MatrixReport& r) {
  std::vector<std::string> caches;
  for (const CellResult& c : r.cells) {
    for (const CellModel& m : c.models) {
      if (std::find(caches.begin(), caches.end(), m.cache) == caches.end()) {
        caches.push_back(m.cache);
      }
    }
  }
  return caches;
}

std::string HeadlineTable(const MatrixReport& r) {
  const std::vector<std::string> caches = CacheColumns(r);
  std::string s = HeadlineHeader(caches);
  size_t ok = 0, unexpected = 0, errors = 0;
  for (const CellResult& c : r.cells) {
    const CellVerdict verdict = c.Verdict();
    ok += verdict == CellVerdict::kOk;
    unexpected += verdict == CellVerdict::kUnexpected;
    errors += verdict == CellVerdict::kError;
    s += HeadlineRow(c, caches);
  }
  s += HeadlineLegend(r);
  // `--no-expect` (every cell's raw rule) claims no expectation: passing and failing cells.
  const bool raw_rule = !r.cells.empty() && r.cells.front().raw_rule;
  s += fmt::format("{} cells: {} {}, {} {}, {} could not run (shard {}, plan {}) in {:.0f} s{}\n",
                   r.cells.size(), ok, raw_rule ? "pass" : "as expected", unexpected,
                   raw_rule ? "fail" : "unexpected", errors, r.shard, r.plan_cells, r.seconds,
                   raw_rule ? " (--no-expect: any violation fails)" : "");
  if (r.check_guests_booted + r.check_guests_adopted > 0) {
    s += fmt::format("checking guests: {} booted, {} taken over from the recording\n",
                     r.check_guests_booted, r.check_guests_adopted);
  }
  std::vector<std::string> kernels;
  for (const CellResult& c : r.cells) {
    if (!c.kernel.empty() && std::find(kernels.begin(), kernels.end(), c.kernel) == kernels.end()) {
      kernels.push_back(c.kernel);
    }
  }
  if (!kernels.empty()) s += fmt::format("guest kernel: {}\n", fmt::join(kernels, "; "));
  if (std::string summary = r.recordings.Summary(); !summary.empty()) s += summary + "\n";
  return s;
}

std::string MatrixJudges(const MatrixReport& r) {
  std::vector<std::string> seen;
  for (const CellResult& c : r.cells) {
    if (c.check_method.empty()) continue;
    std::string j = c.check_kernel.empty()
                        ? c.check_method
                        : fmt::format("{} on kernel {}", c.check_method, c.check_kernel);
    if (std::find(seen.begin(), seen.end(), j) == seen.end()) seen.push_back(j);
  }
  std::string out;
  for (const std::string& j : seen) out += (out.empty() ? "" : ", ") + j;
  return out;
}

std::string MatrixJunit(const MatrixReport& r) {
  uint64_t tests = 0, failures = 0, errors = 0, skipped = 0;
  std::string body;
  for (const CellResult& c : r.cells) {
    if (!c.ran) {
      ++tests;
      const CellVerdict verdict = c.Verdict();
      body +=
          fmt::format("  <testcase classname=\"powercut.matrix\" name=\"{}\" time=\"{:.3f}\">\n",
                      XmlEscape(c.name), c.record_seconds + c.check_seconds);
      if (verdict == CellVerdict::kOk) {
        body += fmt::format("    <system-out>as expected: could not run ({}): {}</system-out>\n",
                            XmlEscape(std::string(RunErrorName(c.error_kind))), XmlEscape(c.error));
      } else if (verdict == CellVerdict::kUnexpected) {
        ++failures;
        body += fmt::format("    <failure type=\"{}\" message=\"{}\">{}</failure>\n",
                            XmlEscape(std::string(RunErrorName(c.error_kind))),
                            XmlEscape(c.Unexpected()), XmlEscape(c.error));
      } else {
        ++errors;
        body += fmt::format("    <error type=\"{}\" message=\"{}\"/>\n",
                            XmlEscape(std::string(RunErrorName(c.error_kind))), XmlEscape(c.error));
      }
      body += "  </testcase>\n";
      continue;
    }
    for (const CellModel& m : c.models) {
      ++tests;
      body += fmt::format("  <testcase classname=\"powercut.matrix.{}\" name=\"{} cache={}\">\n",
                          XmlEscape(c.workload), XmlEscape(c.name), XmlEscape(m.cache));
      std::string what = fmt::format(
          "{}: {} of {} states violate; worst state loses {} acks{}",
          c.raw_rule ? std::string("any violation fails (--no-expect)")
                     : fmt::format("expected {}", ExpectedVerdictName(c.expect.For(m.kind))),
          m.violations, m.states, CellLostText(m),
          m.lost_acks_exact() ? ""
                              : fmt::format(" (a lower bound: {} of {} planned states checked, the "
                                            "worst first)",
                                            m.states, m.states_planned));
      // A cluster's first violation comes with the command that starts its nodes on it.
      const std::string summary =
          m.repro.empty() ? m.summary : fmt::format("{}\nreproduce: {}", m.summary, m.repro);
      if (!c.AsExpected(m)) {
        ++failures;
        body += fmt::format("    <failure message=\"{}\">{}</failure>\n", XmlEscape(what),
                            XmlEscape(summary));
      } else if (m.violations) {
        body += fmt::format("    <system-out>as expected: {}\n{}</system-out>\n", XmlEscape(what),
                            XmlEscape(summary));
      }
      body += "  </testcase>\n";
      // The file system's and the system's own outcomes, apart from the program's: each its own
      // case, skipped, not failed.
      auto skipped_case = [&](std::string_view name, const std::string& message) {
        ++tests;
        ++skipped;
        body += fmt::format(
            "  <testcase classname=\"powercut.matrix.{}\" name=\"{} cache={} {}\">\n"
            "    <skipped message=\"{}\"/>\n  </testcase>\n",
            XmlEscape(c.workload), XmlEscape(c.name), XmlEscape(m.cache), name, XmlEscape(message));
      };
      if (m.fs_unrecoverable) {
        skipped_case("file-system", fmt::format("file system unrecoverable in {} of {} states: {}",
                                                m.fs_unrecoverable, m.states, m.fs_summary));
      }
      if (m.unavailable) {
        skipped_case("unavailable",
                     fmt::format("the system did not come back in {} of {} states: {}",
                                 m.unavailable, m.states, m.unavailable_summary));
      }
    }
  }
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n<testsuite name=\"powercut "
      "matrix {}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" "
      "time=\"{:.3f}\">\n  <properties>\n    <property name=\"check\" value=\"{}\"/>\n  "
      "</properties>\n{}</testsuite>\n</testsuites>\n",
      XmlEscape(r.shard), tests, failures, errors, skipped, r.seconds, XmlEscape(MatrixJudges(r)),
      body);
}

int MatrixExitCode(const MatrixReport& r) {
  bool unexpected = false, error = false;
  for (const CellResult& c : r.cells) {
    const CellVerdict verdict = c.Verdict();
    unexpected = unexpected || verdict == CellVerdict::kUnexpected;
    error = error || verdict == CellVerdict::kError;
  }
  return unexpected ? 1 : error ? 2 : 0;
}

}  // namespace powercut::product
