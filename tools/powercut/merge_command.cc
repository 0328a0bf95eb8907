// powercut merge
#include <cstdio>
#include <fstream>
#include <memory>

#include "fmt/format.h"
#include "harness/check/report.h"
#include "harness/product/fstest/fstest_run.h"
#include "harness/product/html/html_report.h"
#include "harness/product/matrix/merge.h"
#include "tools/powercut/product_commands.h"

namespace powercut::cli {

void AddMergeCommand(CLI::App& app, int* exit_code) {
  struct Args {
    std::vector<std::string> inputs;
    std::string html, junit, out;
    bool allow_missing = false, table = false;
  };
  auto a = std::make_shared<Args>();
  CLI::App* m = app.add_subcommand(
      "merge", "combine the JSON reports of matrix shards into one (JSON on stdout)");
  m->add_option("reports", a->inputs, "the shards' --json files")->required();
  m->add_option("-o,--out", a->out, "write the merged JSON here instead of stdout");
  m->add_option("--junit", a->junit, "also write a JUnit XML report");
  m->add_option("--html", a->html, "also write the HTML report");
  m->add_flag("--allow-missing", a->allow_missing, "merge even when shards are missing");
  m->add_flag("--table", a->table, "print the headline table to stderr");
  m->callback([=] {
    std::vector<product::MatrixReport> shards;
    for (const std::string& path : a->inputs) {
      std::ifstream in(path);
      if (!in) {
        *exit_code = CouldNotRun(fmt::format("merge: cannot read {}", path));
        return;
      }
      nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
      if (j.is_discarded()) {
        *exit_code = CouldNotRun(fmt::format("merge: {} is not JSON", path));
        return;
      }
      auto r = product::MatrixFromJson(j);
      if (!r.ok()) {
        *exit_code =
            CouldNotRun(fmt::format("merge: {}: {}", path, std::string(r.status().message())));
        return;
      }
      shards.push_back(std::move(*r));
    }
    auto merged = product::MergeReports(shards, a->allow_missing);
    if (!merged.ok()) {
      *exit_code = CouldNotRun(std::string(merged.status().message()));
      return;
    }
    // A file-system test's shards merge into its report, summary and signatures included.
    std::string text = product::ReportJson(*merged).dump(2) + "\n";
    if (a->out.empty()) {
      std::fputs(text.c_str(), stdout);
    }
    *exit_code = product::MatrixExitCode(*merged);
    auto write = [&](const std::string& path, const std::string& t) {
      if (path.empty()) return;
      if (auto s = harness::WriteTextFile(path, t); !s.ok()) {
        *exit_code = CouldNotRun(std::string(s.message()));
      }
    };
    write(a->out, text);
    write(a->junit, product::MatrixJunit(*merged));
    write(a->html, product::ReportHtml(*merged, product::IsFsTestReport(*merged)
                                                    ? "powercut fstest (merged)"
                                                    : "powercut matrix (merged)"));
    if (a->table) {
      std::fputs((product::IsFsTestReport(*merged) ? product::FsTestTable(*merged)
                                                   : product::HeadlineTable(*merged))
                     .c_str(),
                 stderr);
    }
  });
}

}  // namespace powercut::cli
