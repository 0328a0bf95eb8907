// harness/diff: two reports compared (report_reader.h, report_diff.h, diff_render.h), on small
// reports written by hand after the real schemas (data/: a headline-shaped matrix, a run, a
// merged fstest run). Each test changes one thing in a copy and asserts what the diff says.
#include <fstream>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "harness/diff/diff_render.h"
#include "harness/diff/report_diff.h"
#include "harness/diff/report_reader.h"
#include "nlohmann/json.hpp"

namespace powercut::diff {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

nlohmann::json Fixture(const std::string& name) {
  std::ifstream in(std::string(DIFF_TEST_DATA) + "/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return nlohmann::json::parse(text.str());
}

ComparableReport Read(const nlohmann::json& j, const std::string& path) {
  absl::StatusOr<ComparableReport> r = ReadReport(j.dump(), path);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : ComparableReport{};
}

ReportDiff Diff(const nlohmann::json& base, const nlohmann::json& next) {
  return DiffReports(Read(base, "base.json"), Read(next, "new.json"));
}

// The changes of one cell and model, as "what: base → new".
std::vector<std::string> ChangesOf(const ReportDiff& d, const std::string& cell,
                                   const std::string& model) {
  std::vector<std::string> out;
  for (const Change& c : d.changes) {
    if (c.cell == cell && c.model == model) {
      out.push_back(std::string(ChangeAspectName(c.aspect)) + ": " + c.base + " → " + c.next +
                    (c.regression ? " (regression)" : ""));
    }
  }
  return out;
}

// Turns the on row of xlog/fdatasync/ext4 (expected to survive) into an unexpected loss.
void MakeOnUnexpected(nlohmann::json& matrix) {
  nlohmann::json& cell = matrix["cells"][0];
  nlohmann::json& on = cell["results"][1];
  on["violations"] = 2;
  on["passed"] = false;
  on["as_expected"] = false;
  on["lost_acks_max"] = 4;
  on["lost_acks_max_exact"] = false;
  on["stopped"] = "first_violation";
  cell["verdict"] = "unexpected";
  cell["unexpected"] = "cache on: expected survives, got 2 violating states";
}

TEST(ReadReport, ReadsEachKindOfReport) {
  ComparableReport m = Read(Fixture("matrix.json"), "m.json");
  EXPECT_EQ(m.kind, "matrix");
  ASSERT_EQ(m.cells.size(), 2u);
  EXPECT_EQ(m.parameters.at("preset"), "headline");
  EXPECT_EQ(m.parameters.at("check method"), "loop mount");
  const ModelOutcome* lying = m.cells[0].Model("lying");
  ASSERT_NE(lying, nullptr);
  EXPECT_EQ(lying->Verdict(), "FAIL");
  EXPECT_EQ(lying->LostText(), "≥16");
  EXPECT_TRUE(lying->as_expected);

  ComparableReport run = Read(Fixture("run.json"), "r.json");
  EXPECT_EQ(run.kind, "run");
  ASSERT_EQ(run.cells.size(), 1u);
  EXPECT_EQ(run.cells[0].name, "run");
  // The check schema's rows carry no as_expected: judged here against run.expect.
  EXPECT_EQ(run.cells[0].Model("on")->expect, "loses");
  EXPECT_TRUE(run.cells[0].Model("on")->as_expected);
  EXPECT_FALSE(run.parameters.contains("base_image"));  // each run's own copy: not compared

  ComparableReport fs = Read(Fixture("fstest.json"), "f.json");
  EXPECT_EQ(fs.kind, "merged fstest");
  EXPECT_THAT(fs.signatures, ElementsAre("missing | creat A; fsync A | ext4"));
}

TEST(ReadReport, BadInputIsAnErrorNamingTheFile) {
  const std::string text = Fixture("matrix.json").dump(2);
  auto message = [](std::string_view input) {
    absl::StatusOr<ComparableReport> r = ReadReport(input, "x.json");
    EXPECT_FALSE(r.ok());
    return r.ok() ? std::string() : std::string(r.status().message());
  };
  EXPECT_THAT(message(text.substr(0, text.size() / 2)), HasSubstr("x.json: truncated"));
  EXPECT_THAT(message(""), HasSubstr("empty file"));
  EXPECT_THAT(message("hello"), HasSubstr("not JSON"));
  EXPECT_THAT(message(R"({"cells": []})"), HasSubstr("not a powercut report"));
  EXPECT_THAT(message("[1, 2]"), HasSubstr("not a powercut report"));
  EXPECT_THAT(message(R"({"schema": "other/1"})"), HasSubstr("not a powercut report"));
  EXPECT_THAT(message(R"({"schema": "powercut-diff/1"})"), HasSubstr("is not a report of"));
  nlohmann::json newer = Fixture("matrix.json");
  newer["schema"] = "powercut-matrix/2";
  EXPECT_THAT(message(newer.dump()), HasSubstr("unknown schema version powercut-matrix/2"));
  nlohmann::json broken = Fixture("matrix.json");
  broken.erase("cells");
  EXPECT_THAT(message(broken.dump()), HasSubstr("missing or mistyped field"));
  broken = Fixture("run.json");
  broken["results"][0]["violations"] = "many";
  EXPECT_THAT(message(broken.dump()), HasSubstr("missing or mistyped field"));
}

TEST(DiffReports, TheSameReportIsNoRegression) {
  const ReportDiff d = Diff(Fixture("matrix.json"), Fixture("matrix.json"));
  EXPECT_EQ(d.cells_compared, 2u);
  EXPECT_TRUE(d.changes.empty());
  EXPECT_TRUE(d.incomparable.empty());
  EXPECT_EQ(d.ExitCode(), 0);
  EXPECT_EQ(VerdictLine(d), "no regression");
  EXPECT_THAT(DiffText(d), HasSubstr("\nno regression\n"));
}

TEST(DiffReports, OtherTimesAndStateCountsAreNoChange) {
  nlohmann::json next = Fixture("matrix.json");
  next["seconds"] = 90.0;
  next["cells"][0]["record_seconds"] = 60.0;
  next["cells"][0]["results"][0]["states"] = 70;  // another recording, other crash states
  next["cells"][0]["results"][0]["states_planned"] = 70;
  next["cells"][0]["results"][1]["fs_repaired"] = 7;  // repaired in some states, as before
  const ReportDiff d = Diff(Fixture("matrix.json"), next);
  EXPECT_TRUE(d.changes.empty());
  EXPECT_EQ(d.ExitCode(), 0);
  EXPECT_THAT(TimingLine(d), HasSubstr("21.5 s → 90.0 s (record 11.0 → 65.0 s"));
}

TEST(DiffReports, AsExpectedToUnexpectedIsARegressionNamingCellAndModel) {
  nlohmann::json next = Fixture("matrix.json");
  MakeOnUnexpected(next);
  const ReportDiff d = Diff(Fixture("matrix.json"), next);
  EXPECT_EQ(d.ExitCode(), 1);
  EXPECT_THAT(d.RegressionNames(), ElementsAre("xlog/fdatasync/ext4 cache on"));
  EXPECT_THAT(ChangesOf(d, "xlog/fdatasync/ext4", "on"),
              ElementsAre("expectation: as expected (survives) → UNEXPECTED (expected survives) "
                          "(regression)",
                          "verdict: pass → FAIL", "acks lost: 0 → ≥4"));
  EXPECT_EQ(VerdictLine(d), "1 regression: xlog/fdatasync/ext4 cache on");
  // The other way round it is a fix, not a regression.
  const ReportDiff back = Diff(next, Fixture("matrix.json"));
  EXPECT_EQ(back.ExitCode(), 0);
  EXPECT_THAT(ChangesOf(back, "xlog/fdatasync/ext4", "on"),
              ElementsAre("expectation: UNEXPECTED (expected survives) → as expected (survives)",
                          "verdict: FAIL → pass", "acks lost: ≥4 → 0"));
}

TEST(DiffReports, ALowerBoundIsToldApartFromAnExactCount) {
  nlohmann::json next = Fixture("matrix.json");
  next["cells"][0]["results"][2]["lost_acks_max_exact"] = true;  // --exhaustive: the worst case
  const ReportDiff d = Diff(Fixture("matrix.json"), next);
  EXPECT_THAT(ChangesOf(d, "xlog/fdatasync/ext4", "lying"), ElementsAre("acks lost: ≥16 → 16"));
  EXPECT_EQ(d.ExitCode(), 0);
}

TEST(DiffReports, CellsAndModelsAddedAndRemoved) {
  nlohmann::json next = Fixture("matrix.json");
  nlohmann::json added = next["cells"][1];
  added["cell"] = "xlog/fsync/ext4";
  next["cells"][1] = added;              // xlog/none/ext4 gone, xlog/fsync/ext4 new
  next["cells"][0]["results"].erase(2);  // no lying row any more
  const ReportDiff d = Diff(Fixture("matrix.json"), next);
  EXPECT_THAT(d.cells_added, ElementsAre("xlog/fsync/ext4"));
  EXPECT_THAT(d.cells_removed, ElementsAre("xlog/none/ext4"));
  EXPECT_EQ(d.cells_compared, 1u);
  EXPECT_THAT(ChangesOf(d, "xlog/fdatasync/ext4", "lying"),
              ElementsAre("model removed: FAIL ≥16 → "));
  EXPECT_EQ(d.ExitCode(), 0);
}

TEST(DiffReports, ANewCouldNotRunIsARegressionAnExpectedOneIsNot) {
  nlohmann::json next = Fixture("matrix.json");
  nlohmann::json& cell = next["cells"][1];
  cell["status"] = "error";
  cell["error_kind"] = "vm";
  cell["error"] = "cannot prepare the VM: no kernel\nmore";
  cell["results"] = nlohmann::json::array();
  cell["verdict"] = "error";
  ReportDiff d = Diff(Fixture("matrix.json"), next);
  EXPECT_THAT(ChangesOf(d, "xlog/none/ext4", ""),
              ElementsAre("could not run: ran → could not run (vm): cannot prepare the VM: no "
                          "kernel (regression)"));
  EXPECT_EQ(d.ExitCode(), 1);
  // Expected not to run (verdict ok): a change, not a regression.
  cell["verdict"] = "ok";
  d = Diff(Fixture("matrix.json"), next);
  EXPECT_EQ(d.ExitCode(), 0);
  EXPECT_EQ(d.changes.size(), 1u);
}

TEST(DiffReports, ACellVerdictNoRowExplainsIsItsOwnChange) {
  nlohmann::json next = Fixture("matrix.json");
  next["cells"][1]["verdict"] = "unexpected";
  next["cells"][1]["unexpected"] = "expected error no-acks, but the cell ran";
  const ReportDiff d = Diff(Fixture("matrix.json"), next);
  EXPECT_THAT(ChangesOf(d, "xlog/none/ext4", ""),
              ElementsAre("cell verdict: ok → unexpected: expected error no-acks, but the cell "
                          "ran (regression)"));
  EXPECT_THAT(d.RegressionNames(), ElementsAre("xlog/none/ext4"));
}

TEST(DiffReports, IncomparableParametersAreListed) {
  nlohmann::json next = Fixture("matrix.json");
  next["parameters"]["seed"] = 2;
  next["parameters"]["cache"] = "off,on";
  for (nlohmann::json& c : next["cells"]) c["check_method"] = "guest mount";
  const ReportDiff d = Diff(Fixture("matrix.json"), next);
  ASSERT_EQ(d.incomparable.size(), 3u);
  EXPECT_EQ(d.incomparable[0].name, "cache");
  EXPECT_EQ(d.incomparable[1].name, "check method");
  EXPECT_EQ(d.incomparable[1].base, "loop mount");
  EXPECT_EQ(d.incomparable[1].next, "guest mount");
  EXPECT_EQ(d.incomparable[2].name, "seed");
  EXPECT_EQ(d.ExitCode(), 0);  // the same verdicts: listed, not a regression
  const std::string text = DiffText(d);
  EXPECT_THAT(text, HasSubstr("NOT COMPARABLE: 3 parameters differ"));
  EXPECT_THAT(text, HasSubstr("  check method: loop mount → guest mount\n"));
  EXPECT_LT(text.find("NOT COMPARABLE"), text.find("cells:"));  // at the top
}

TEST(DiffReports, FileSystemOutcomesThatAppearOrGo) {
  nlohmann::json next = Fixture("matrix.json");
  next["cells"][0]["results"][1]["fs_repaired"] = 0;
  next["cells"][0]["results"][0]["fs_unrecoverable"] = 3;
  const ReportDiff d = Diff(Fixture("matrix.json"), next);
  EXPECT_THAT(ChangesOf(d, "xlog/fdatasync/ext4", "off"),
              ElementsAre("file system: none → unrecoverable in 3 states"));
  EXPECT_THAT(ChangesOf(d, "xlog/fdatasync/ext4", "on"),
              ElementsAre("file system: repaired in 2 states → none"));
  EXPECT_EQ(d.ExitCode(), 0);
}

TEST(DiffReports, NewViolationSignaturesAreRegressions) {
  nlohmann::json base = Fixture("fstest.json");
  nlohmann::json next = base;
  next["fstest_summary"]["signatures"][0]["signature"] = "missing | rename A B; fsync B | ext4";
  const ReportDiff d = Diff(base, next);
  EXPECT_THAT(d.signatures_new, ElementsAre("missing | rename A B; fsync B | ext4"));
  EXPECT_THAT(d.signatures_gone, ElementsAre("missing | creat A; fsync A | ext4"));
  EXPECT_EQ(d.ExitCode(), 1);
  EXPECT_THAT(d.RegressionNames(), ElementsAre("signature missing | rename A B; fsync B | ext4"));
  // Gone alone is no regression.
  next["fstest_summary"]["signatures"] = nlohmann::json::array();
  EXPECT_EQ(Diff(base, next).ExitCode(), 0);
}

TEST(DiffReports, RunReportsAreJudgedAgainstTheirExpectation) {
  nlohmann::json next = Fixture("run.json");
  next["results"][1]["violations"] = 0;  // expected to lose, and it did not
  next["results"][1]["lost_acks_max"] = 0;
  next["results"][1]["lost_acks_max_exact"] = true;
  ReportDiff d = Diff(Fixture("run.json"), next);
  EXPECT_THAT(d.RegressionNames(), ElementsAre("run cache on"));
  EXPECT_EQ(d.ExitCode(), 1);
  // Without --expect the raw rule: a new violation is the regression, and no expectation is
  // claimed in what the diff says.
  nlohmann::json base = Fixture("run.json");
  base["run"]["expect"] = nullptr;
  next = base;
  next["results"][0]["violations"] = 1;
  d = Diff(base, next);
  EXPECT_THAT(ChangesOf(d, "run", "off"), ElementsAre("verdict: pass → FAIL (regression)"));
  EXPECT_THAT(DiffText(d), Not(HasSubstr("expected")));
}

TEST(DiffReports, NoExpectMatrixRowsClaimNoExpectation) {
  nlohmann::json base = Fixture("matrix.json");
  base["parameters"]["expect"] = false;
  for (nlohmann::json& c : base["cells"]) {
    for (nlohmann::json& r : c["results"]) {
      r["expect"] = nullptr;
      r["as_expected"] = r["violations"] == 0;
    }
  }
  nlohmann::json next = base;
  next["cells"][0]["results"][0]["violations"] = 1;
  next["cells"][0]["results"][0]["as_expected"] = false;
  const ReportDiff d = Diff(base, next);
  EXPECT_THAT(d.RegressionNames(), ElementsAre("xlog/fdatasync/ext4 cache off"));
  EXPECT_THAT(DiffText(d), Not(HasSubstr("expected")));
}

TEST(DiffRender, MarkdownHtmlAndJson) {
  nlohmann::json base = Fixture("fstest.json");
  nlohmann::json next = base;
  next["fstest_summary"]["signatures"][0]["signature"] = "missing | link A B | ext4";
  next["parameters"]["seed"] = 7;
  const ReportDiff d = Diff(base, next);
  const std::string md = DiffMarkdown(d);
  EXPECT_THAT(md, HasSubstr("### powercut diff: 1 regression"));
  EXPECT_THAT(md, HasSubstr("| seed | 1 | 7 |"));
  EXPECT_THAT(md, HasSubstr("- `missing | link A B | ext4`"));
  EXPECT_THAT(md, HasSubstr("**1 regression: signature missing | link A B | ext4**"));

  nlohmann::json with_change = Fixture("matrix.json");
  MakeOnUnexpected(with_change);
  const ReportDiff m = Diff(Fixture("matrix.json"), with_change);
  EXPECT_THAT(DiffMarkdown(m), HasSubstr("| **REGRESSION** | `xlog/fdatasync/ext4` | on | "
                                         "expectation |"));
  const std::string section = DiffHtmlSection(m);
  EXPECT_THAT(section, HasSubstr("<section id=\"powercut-diff\">"));
  EXPECT_THAT(section, HasSubstr("<b>REGRESSION</b></td><td>xlog/fdatasync/ext4</td><td>on</td>"));
  EXPECT_THAT(DiffHtmlPage(m), HasSubstr("<!DOCTYPE html>"));
  absl::StatusOr<std::string> report =
      WithDiffSection("<html><body><h1>powercut matrix</h1>\n<table></table></body></html>", m);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_LT(report->find("</h1>"), report->find("powercut-diff"));
  EXPECT_LT(report->find("powercut-diff"), report->find("<table></table>"));
  EXPECT_FALSE(WithDiffSection("<html>no title</html>", m).ok());

  const nlohmann::json j = DiffJson(m);
  EXPECT_EQ(j["schema"], "powercut-diff/1");
  EXPECT_EQ(j["regressions"], 1);
  EXPECT_EQ(j["verdict"], "regression");
  EXPECT_EQ(j["regression_names"][0], "xlog/fdatasync/ext4 cache on");
  EXPECT_EQ(j["changes"][0]["what"], "expectation");
  EXPECT_EQ(j["changes"][0]["regression"], true);
}

}  // namespace
}  // namespace powercut::diff
