// A report diff (report_diff.h) as text for stdout, Markdown for a CI job summary or a pull-request
// comment, HTML (a page of its own, or a section put into a report's HTML) and JSON
// (`powercut-diff/1`). Every form leads with the incomparable parameters and ends with the
// verdict line: "no regression", or the regressions named cell by cell and model by model.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "harness/diff/report_diff.h"
#include "nlohmann/json.hpp"

namespace powercut::diff {

// "no regression", or "1 regression: xlog/fsync/ext4 cache on".
std::string VerdictLine(const ReportDiff& diff);
// "timing: 62.0 s → 58.1 s (record 40.0 → 38.1 s, check 22.0 → 20.0 s)": the only place
// times appear (they differ between any two runs).
std::string TimingLine(const ReportDiff& diff);

std::string DiffText(const ReportDiff& diff);
std::string DiffMarkdown(const ReportDiff& diff);
// The diff as an HTML section (<section id="powercut-diff">), self-contained but for the page.
std::string DiffHtmlSection(const ReportDiff& diff);
// A whole page around DiffHtmlSection: inline CSS, no scripts, no network, like the reports.
std::string DiffHtmlPage(const ReportDiff& diff);
// A report's HTML (`matrix --html`, `merge --html`) with the diff's section after its title;
// an error when the text has no title (not a powercut HTML report).
absl::StatusOr<std::string> WithDiffSection(const std::string& report_html, const ReportDiff& diff);
// Schema `powercut-diff/1` (docs/nightly.md).
nlohmann::json DiffJson(const ReportDiff& diff);

}  // namespace powercut::diff
