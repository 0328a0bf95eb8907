// harness/diff: two reports compared (report_reader.h, report_diff.h, diff_render.h), on small
// reports written by hand after the real schemas (data/: a headline-shaped matrix, a run, a
// merged fstest run). Each test changes one thing in a copy and asserts what the diff says.
#include <fstream>
#include <sstream>
#include <string>

#include "fmt/format.h"
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
using ::testing::IsEmpty;
using ::testing::Key;
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

// A cell that could not run, as a matrix report writes one (`verdict` "" leaves it as it was).
void MakeCouldNotRun(nlohmann::json& cell, const std::string& kind, const std::string& error,
                     const std::string& verdict) {
  cell["status"] = "error";
  cell["error_kind"] = kind;
  cell["error"] = error;
  cell["results"] = nlohmann::json::array();
  if (!verdict.empty()) cell["verdict"] = verdict;
}

// The matrix as `matrix --no-expect` writes it: no expectation, any violation fails.
nlohmann::json NoExpect(nlohmann::json matrix) {
  matrix["parameters"]["expect"] = false;
  for (nlohmann::json& c : matrix["cells"]) {
    for (nlohmann::json& r : c["results"]) {
      r["expect"] = nullptr;
      r["as_expected"] = r["violations"] == 0;
    }
  }
  return matrix;
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
  EXPECT_FALSE(run.parameters.contains("base_image"));         // each run's own copy: not compared
  EXPECT_EQ(run.parameters.at("check method"), "loop mount");  // as a matrix report spells it
  EXPECT_FALSE(run.parameters.contains("check_method"));

  ComparableReport fs = Read(Fixture("fstest.json"), "f.json");
  EXPECT_EQ(fs.kind, "merged fstest");
  EXPECT_THAT(fs.signatures, ElementsAre(Key("missing | creat A; fsync A | ext4")));
  EXPECT_EQ(fs.signatures.begin()->second.fs, "ext4");
  EXPECT_THAT(fs.signatures.begin()->second.caches, ElementsAre("on"));
  EXPECT_THAT(fs.judged, ElementsAre("ext4|off", "ext4|on"));
}

TEST(ReadReport, NestedParametersAreNamedByTheirPath) {
  nlohmann::json j = Fixture("matrix.json");
  j["parameters"]["fs"] = {"ext4", "xfs"};
  j["parameters"]["custom_cells"] = {{{"name", "mydb"}, {"workload", "/opt/mydb/bench"}},
                                     {{"name", "other"}, {"workload", "true"}}};
  const ComparableReport m = Read(j, "m.json");
  EXPECT_EQ(m.parameters.at("fs"), "ext4,xfs");
  EXPECT_EQ(m.parameters.at("guest.cpus"), "0");
  EXPECT_EQ(m.parameters.at("flakey.mode"), "");
  EXPECT_EQ(m.parameters.at("custom_cells[mydb].workload"), "/opt/mydb/bench");
  EXPECT_EQ(m.parameters.at("custom_cells[other].workload"), "true");
  EXPECT_FALSE(m.parameters.contains("custom_cells"));
  EXPECT_EQ(Read(Fixture("fstest.json"), "f.json").parameters.at("fstest.seq"), "1");

  // A changed field is named; a custom cell only one report has is one line, not each field.
  nlohmann::json next = j;
  next["parameters"]["custom_cells"][0]["workload"] = "/opt/mydb/bench --fast";
  next["parameters"]["custom_cells"].erase(1);
  next["parameters"]["custom_cells"].push_back({{"name", "third"}, {"workload", "false"}});
  const ReportDiff d = DiffReports(m, Read(next, "n.json"));
  std::vector<std::string> lines;
  for (const ParameterChange& p : d.incomparable) {
    lines.push_back(p.name + ": " + p.base + " → " + p.next);
  }
  EXPECT_THAT(lines,
              ElementsAre("custom_cells[mydb].workload: /opt/mydb/bench → /opt/mydb/bench --fast",
                          R"(custom_cells[other]: {"name":"other","workload":"true"} → )",
                          R"(custom_cells[third]:  → {"name":"third","workload":"false"})"));
}

TEST(ReadReport, ARunTakesItsRecordingAndItsCheck) {
  // The check schema's own "seconds" is the check's; a run is both.
  const ComparableReport run = Read(Fixture("run.json"), "r.json");
  EXPECT_DOUBLE_EQ(run.seconds, run.cells[0].record_seconds + run.cells[0].check_seconds);
  EXPECT_GT(run.seconds, Fixture("run.json")["seconds"].get<double>());
}

TEST(ReadReport, ACouldNotRunMessageKeepsItsFirstLineWithoutADanglingClause) {
  nlohmann::json j = Fixture("matrix.json");
  nlohmann::json& cell = j["cells"][1];
  MakeCouldNotRun(
      cell, "workload-exit",
      "the workload exited with status 1 after 0 acks; its last output:\npowercut-init: up\r\n",
      "");
  EXPECT_EQ(Read(j, "m.json").cells[1].error, "the workload exited with status 1 after 0 acks");
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
  EXPECT_THAT(message("<?xml version=\"1.0\"?>\n<testsuites>"),
              HasSubstr("x.json: XML or HTML, not JSON (the --junit or --html report?)"));
  EXPECT_THAT(message("{"), HasSubstr("ends after 1 byte,"));
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
  MakeCouldNotRun(cell, "vm", "cannot prepare the VM: no kernel\nmore", "error");
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
  // Judged by a guest mount on the recording kernel instead of a loop mount on the host's (the
  // default --check-in of a user without root; as root, host).
  for (nlohmann::json& c : next["cells"]) {
    c["check_method"] = "guest mount";
    c["check_kernel"] = "6.12.38+deb13-amd64";
  }
  const ReportDiff d = Diff(Fixture("matrix.json"), next);
  ASSERT_EQ(d.incomparable.size(), 4u);
  EXPECT_EQ(d.incomparable[0].name, "cache");
  EXPECT_EQ(d.incomparable[1].name, "check kernel");
  EXPECT_EQ(d.incomparable[1].base, "6.1.0-28-amd64");
  EXPECT_EQ(d.incomparable[1].next, "6.12.38+deb13-amd64");
  EXPECT_EQ(d.incomparable[2].name, "check method");
  EXPECT_EQ(d.incomparable[2].base, "loop mount");
  EXPECT_EQ(d.incomparable[2].next, "guest mount");
  EXPECT_EQ(d.incomparable[3].name, "seed");
  EXPECT_EQ(d.ExitCode(), 0);  // the same verdicts: listed, not a regression
  const std::string text = DiffText(d);
  EXPECT_THAT(text, HasSubstr("NOT COMPARABLE: 4 parameters differ (the verdicts are compared "
                              "all the same)"));
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

// The system's own outcome (docs/cluster.md): a change when it appears or goes, never a
// regression of the program; a report from before it existed reads as none.
TEST(DiffReports, AnUnavailableSystemThatAppearsOrGoesIsAChangeNotARegression) {
  nlohmann::json next = Fixture("matrix.json");
  next["cells"][0]["results"][0]["unavailable"] = 2;
  const ReportDiff d = Diff(Fixture("matrix.json"), next);
  EXPECT_THAT(ChangesOf(d, "xlog/fdatasync/ext4", "off"),
              ElementsAre("unavailable: came back on every state → did not come back in 2 "
                          "states"));
  EXPECT_EQ(d.ExitCode(), 0);
  const ReportDiff back = Diff(next, Fixture("matrix.json"));
  EXPECT_THAT(ChangesOf(back, "xlog/fdatasync/ext4", "off"),
              ElementsAre("unavailable: did not come back in 2 states → came back on every "
                          "state"));
  EXPECT_EQ(back.ExitCode(), 0);
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
  nlohmann::json base = NoExpect(Fixture("matrix.json"));
  nlohmann::json next = base;
  next["cells"][0]["results"][0]["violations"] = 1;
  next["cells"][0]["results"][0]["as_expected"] = false;
  const ReportDiff d = Diff(base, next);
  EXPECT_THAT(d.RegressionNames(), ElementsAre("xlog/fdatasync/ext4 cache off"));
  EXPECT_THAT(DiffText(d), Not(HasSubstr("expected")));
}

TEST(DiffReports, ExpectationsOnOneSideOnlyCompareTheVerdicts) {
  // Last night judged by the catalog, tonight with --no-expect: lying's expected loss is the
  // same loss, not a regression; only a verdict worse than pass is.
  nlohmann::json next = NoExpect(Fixture("matrix.json"));
  ReportDiff d = Diff(Fixture("matrix.json"), next);
  EXPECT_EQ(d.ExitCode(), 0) << DiffText(d);
  EXPECT_THAT(ChangesOf(d, "xlog/fdatasync/ext4", "lying"),
              ElementsAre("expectation: as expected (loses) → raw rule: FAIL"));
  EXPECT_THAT(ChangesOf(d, "xlog/fdatasync/ext4", "off"), IsEmpty());
  next["cells"][0]["results"][1]["violations"] = 1;  // on: pass → FAIL
  next["cells"][0]["results"][1]["as_expected"] = false;
  d = Diff(Fixture("matrix.json"), next);
  EXPECT_THAT(d.RegressionNames(), ElementsAre("xlog/fdatasync/ext4 cache on"));
  EXPECT_THAT(ChangesOf(d, "xlog/fdatasync/ext4", "on"),
              ElementsAre("expectation: as expected (survives) → raw rule: FAIL",
                          "verdict: pass → FAIL (regression)"));
  // And the other way round.
  EXPECT_EQ(Diff(next, Fixture("matrix.json")).ExitCode(), 0);
}

TEST(DiffReports, TheWholePlanUnshardedOrMergedIsComparable) {
  nlohmann::json merged = Fixture("matrix.json");
  merged["shard"] = "merged";
  ReportDiff d = Diff(Fixture("matrix.json"), merged);
  EXPECT_THAT(d.incomparable, IsEmpty());
  EXPECT_EQ(d.ExitCode(), 0);
  nlohmann::json shard = Fixture("matrix.json");
  shard["shard"] = "2/2";
  shard["cells"].erase(0);
  d = Diff(Fixture("matrix.json"), shard);
  ASSERT_EQ(d.incomparable.size(), 1u);
  EXPECT_EQ(d.incomparable[0].name, "shard");
  EXPECT_EQ(d.incomparable[0].base, "whole plan");
  EXPECT_EQ(d.incomparable[0].next, "2/2");
  EXPECT_THAT(d.cells_removed, ElementsAre("xlog/fdatasync/ext4"));  // another shard's
  EXPECT_EQ(d.ExitCode(), 0);
}

TEST(DiffReports, ACellMissingFromAMergeWithAShardMissingIsARegression) {
  // `merge --allow-missing` without shard 1: its cells did not report tonight.
  nlohmann::json next = Fixture("matrix.json");
  next["shard"] = "merged";
  next["cells"].erase(0);
  ReportDiff d = Diff(Fixture("matrix.json"), next);
  EXPECT_EQ(d.ExitCode(), 1);
  EXPECT_EQ(d.cells_missing, 1u);
  EXPECT_THAT(d.cells_removed, IsEmpty());
  EXPECT_THAT(ChangesOf(d, "xlog/fdatasync/ext4", ""),
              ElementsAre("missing: ran → not in the report (1 of the plan's 2 cells: a shard "
                          "missing?) (regression)"));
  EXPECT_THAT(d.RegressionNames(), ElementsAre("xlog/fdatasync/ext4"));
  ASSERT_EQ(d.incomparable.size(), 1u);
  EXPECT_EQ(d.incomparable[0].next, "merged, 1 of 2 cells");
  EXPECT_THAT(DiffText(d), HasSubstr("cells: 1 compared, 0 added, 0 removed, 1 missing\n"));
  // Another plan (another preset): the cell left the plan, it did not go missing.
  next["parameters"]["preset"] = "controls";
  d = Diff(Fixture("matrix.json"), next);
  EXPECT_EQ(d.ExitCode(), 0);
  EXPECT_THAT(d.cells_removed, ElementsAre("xlog/fdatasync/ext4"));
}

TEST(DiffReports, ACellThatRunsAgainIsOneChange) {
  nlohmann::json base = Fixture("matrix.json");
  nlohmann::json& cell = base["cells"][1];
  MakeCouldNotRun(cell, "workload-exit", "the workload exited with status 1 after 0 acks", "error");
  const ReportDiff d = Diff(base, Fixture("matrix.json"));
  EXPECT_THAT(ChangesOf(d, "xlog/none/ext4", ""),
              ElementsAre("could not run: could not run (workload-exit): the workload exited "
                          "with status 1 after 0 acks → ran"));
  EXPECT_EQ(d.ExitCode(), 0);
  // Back, and unexpected: nothing to compare with, but the change says so.
  nlohmann::json next = Fixture("matrix.json");
  next["cells"][1]["verdict"] = "unexpected";
  next["cells"][1]["unexpected"] = "cache off: expected loses, got 0 violating states";
  EXPECT_THAT(ChangesOf(Diff(base, next), "xlog/none/ext4", ""),
              ElementsAre("could not run: could not run (workload-exit): the workload exited "
                          "with status 1 after 0 acks → ran: unexpected: cache off: expected "
                          "loses, got 0 violating states"));
}

TEST(DiffReports, ANewSignatureWhereTheBaseDidNotLookIsListedNotARegression) {
  // Tonight adds cache lying (and xfs): what it finds there, the base never judged.
  nlohmann::json base = Fixture("fstest.json");
  nlohmann::json next = base;
  next["parameters"]["cache"] = "off,on,lying";
  next["fstest_summary"]["signatures"].push_back(
      {{"signature", "missing | creat A; sync | ext4"}, {"fs", "ext4"}, {"caches", {"lying"}}});
  next["fstest_summary"]["signatures"].push_back(
      {{"signature", "missing | creat A; fsync A | xfs"}, {"fs", "xfs"}, {"caches", {"on"}}});
  ReportDiff d = Diff(base, next);
  EXPECT_THAT(d.signatures_new, IsEmpty());
  EXPECT_THAT(d.signatures_new_elsewhere,
              ElementsAre("missing | creat A; fsync A | xfs", "missing | creat A; sync | ext4"));
  EXPECT_EQ(d.ExitCode(), 0);
  EXPECT_THAT(DiffText(d), HasSubstr("violation signatures: 2 new, 0 gone\n"));
  EXPECT_THAT(DiffMarkdown(d), HasSubstr("the base did not judge: not a regression"));
  // Under a model the base judged too (on), it is one.
  next["fstest_summary"]["signatures"][1]["caches"].push_back("on");
  d = Diff(base, next);
  EXPECT_THAT(d.signatures_new, ElementsAre("missing | creat A; sync | ext4"));
  EXPECT_EQ(d.ExitCode(), 1);
}

TEST(DiffRender, MarkdownKeepsEveryRegressionAndFitsAComment) {
  // 300 cells, each with a change that is no regression (acks lost) and one a regression.
  nlohmann::json base = Fixture("matrix.json");
  const nlohmann::json cell = base["cells"][0];
  base["cells"] = nlohmann::json::array();
  for (int i = 0; i < 300; ++i) {
    nlohmann::json c = cell;
    c["cell"] = fmt::format("w{}/fdatasync/ext4", i);
    c["index"] = i;
    base["cells"].push_back(c);
  }
  base["plan_cells"] = 300;
  nlohmann::json next = base;
  for (nlohmann::json& c : next["cells"]) c["results"][2]["lost_acks_max"] = 17;
  MakeOnUnexpected(next);  // cell 0
  nlohmann::json& last = next["cells"][299];
  last["results"][1]["violations"] = 1;
  last["results"][1]["as_expected"] = false;
  const ReportDiff d = Diff(base, next);
  ASSERT_EQ(d.Regressions(), 2u);
  const std::string md = DiffMarkdown(d);
  EXPECT_LT(md.size(), 65536u);  // GitHub's limit for a comment
  EXPECT_THAT(md, HasSubstr("| **REGRESSION** | `w0/fdatasync/ext4` | on | expectation |"));
  EXPECT_THAT(md, HasSubstr("| **REGRESSION** | `w299/fdatasync/ext4` | on | expectation |"));
  EXPECT_THAT(md, HasSubstr("more lines, none a regression, left out here"));
  EXPECT_THAT(md, HasSubstr("**2 regressions: w0/fdatasync/ext4 cache on; w299/fdatasync/ext4 "
                            "cache on**"));
  EXPECT_THAT(DiffText(d), HasSubstr("w150/fdatasync/ext4 cache lying  acks lost"));  // all
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
  // Put in twice (the job ran again): one section, the newer.
  const ReportDiff none = Diff(Fixture("matrix.json"), Fixture("matrix.json"));
  absl::StatusOr<std::string> again = WithDiffSection(*report, none);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->find("powercut-diff"), again->rfind("powercut-diff"));
  EXPECT_THAT(*again, HasSubstr("no regression"));
  EXPECT_THAT(*again, Not(HasSubstr("REGRESSION")));
  EXPECT_LT(again->find("powercut-diff"), again->find("<table></table>"));

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
