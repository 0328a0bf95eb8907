// powercut diff BASE.json NEW.json: what changed between two reports (harness/diff/,
// docs/nightly.md "What changed since last night"). Exit 0 no regression, 1 a regression, 2 bad
// input (a file that cannot be read, is not JSON or truncated, is not a powercut report, or has a
// schema version this build does not read) or an output that cannot be written.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "absl/status/statusor.h"
#include "fmt/format.h"
#include "harness/check/report.h"
#include "harness/diff/diff_render.h"
#include "harness/diff/report_diff.h"
#include "harness/diff/report_reader.h"
#include "tools/powercut/commands.h"

namespace powercut::cli {
namespace {

struct DiffArgs {
  std::string base, next;
  std::string json, html, markdown, into_html;
};

// Prints "powercut diff: <message>" to stderr and returns 2 (bad input).
int BadInput(const std::string& message) {
  std::fprintf(stderr, "powercut diff: %s\n", message.c_str());
  return 2;
}

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    return absl::InvalidArgumentError(
        fmt::format("{}: a folder, not a report: give the report's JSON file", path));
  }
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(fmt::format("{}: cannot read the file: {}", path,
                                           errno == 0 ? "unknown error" : std::strerror(errno)));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return absl::DataLossError(fmt::format("{}: a read error", path));
  return text.str();
}

absl::StatusOr<diff::ComparableReport> ReadReportFile(const std::string& path) {
  absl::StatusOr<std::string> text = ReadWholeFile(path);
  if (!text.ok()) return text.status();
  return diff::ReadReport(*text, path);
}

int Diff(const DiffArgs& a) {
  absl::StatusOr<diff::ComparableReport> base = ReadReportFile(a.base);
  if (!base.ok()) return BadInput(std::string(base.status().message()));
  absl::StatusOr<diff::ComparableReport> next = ReadReportFile(a.next);
  if (!next.ok()) return BadInput(std::string(next.status().message()));
  if (base->schema != next->schema) {
    return BadInput(fmt::format(
        "{} is a {} report ({}) and {} a {} report ({}): a diff compares two reports of one "
        "kind (matrix, merge and fstest run write {}; run and check {})",
        a.base, base->schema, base->kind, a.next, next->schema, next->kind, diff::kMatrixSchema,
        diff::kCheckSchema));
  }
  const diff::ReportDiff d = diff::DiffReports(*base, *next);
  std::fputs(diff::DiffText(d).c_str(), stdout);
  auto write = [](const std::string& path, const std::string& text) {
    if (path.empty()) return absl::OkStatus();
    return harness::WriteTextFile(path, text);
  };
  for (const absl::Status& s :
       {write(a.json, diff::DiffJson(d).dump(2) + "\n"), write(a.markdown, diff::DiffMarkdown(d)),
        write(a.html, diff::DiffHtmlPage(d))}) {
    if (!s.ok()) return BadInput(std::string(s.message()));
  }
  if (!a.into_html.empty()) {
    absl::StatusOr<std::string> report_html = ReadWholeFile(a.into_html);
    if (!report_html.ok()) return BadInput(std::string(report_html.status().message()));
    absl::StatusOr<std::string> with_diff = diff::WithDiffSection(*report_html, d);
    if (!with_diff.ok()) {
      return BadInput(
          fmt::format("{}: {}", a.into_html, std::string(with_diff.status().message())));
    }
    if (absl::Status s = write(a.into_html, *with_diff); !s.ok()) {
      return BadInput(std::string(s.message()));
    }
  }
  return d.ExitCode();
}

}  // namespace

void AddDiffCommand(CLI::App& app, int* exit_code) {
  auto a = std::make_shared<DiffArgs>();
  CLI::App* d = app.add_subcommand(
      "diff",
      "what changed between two reports (matrix, merge, fstest run, run, check): exit 0 no "
      "regression, 1 a regression, 2 bad input");
  d->add_option("base", a->base, "the earlier report's JSON (last night's)")->required();
  d->add_option("new", a->next, "the later report's JSON (tonight's)")->required();
  d->add_option("--json", a->json, "also write the diff as JSON (powercut-diff/1) here");
  d->add_option("--markdown", a->markdown,
                "also write the diff as Markdown here (a CI job summary, a pull-request comment)");
  d->add_option("--html", a->html, "also write the diff as a self-contained HTML page here");
  d->add_option("--into-html", a->into_html,
                "put the diff's section into this report HTML (matrix/merge --html), after its "
                "title");
  d->callback([a, exit_code] { *exit_code = Diff(*a); });
}

}  // namespace powercut::cli
