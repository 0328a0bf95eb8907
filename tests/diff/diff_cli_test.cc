// `powercut diff` as a user runs it (docs/nightly.md, "What changed since last night"): exit 0
// "no regression" for two identical reports, 1 naming the cell and model that went from as
// expected to unexpected, 2 with a clear message for input that is not a report it can read.
#include <fstream>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/product/test_util.h"

namespace powercut::diff {
namespace {

using product::testing::ReadFile;
using product::testing::RunCommand;
using product::testing::TempDir;
using ::testing::HasSubstr;
using ::testing::Not;

std::string Fixture(const std::string& name) {
  return ReadFile(std::string(DIFF_TEST_DATA) + "/" + name);
}

std::string Write(const TempDir& dir, const std::string& name, const std::string& text) {
  std::ofstream(dir.File(name)) << text;
  return dir.File(name);
}

product::testing::CommandResult Diff(const std::string& args) {
  return RunCommand(std::string(POWERCUT_BIN) + " diff " + args);
}

TEST(DiffCommand, IdenticalReportsExitZeroWithNoRegression) {
  TempDir dir;
  const std::string base = Write(dir, "base.json", Fixture("matrix.json"));
  const std::string next = Write(dir, "new.json", Fixture("matrix.json"));
  auto r = Diff(base + " " + next + " --markdown " + dir.File("d.md"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("\nno regression\n"));
  EXPECT_THAT(r.output, HasSubstr("cells: 2 compared, 0 added, 0 removed"));
  EXPECT_THAT(ReadFile(dir.File("d.md")), HasSubstr("### powercut diff: no regression"));
  // A run report against itself too.
  const std::string run = Write(dir, "run.json", Fixture("run.json"));
  r = Diff(run + " " + run);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("no regression"));
}

TEST(DiffCommand, ACellTurnedUnexpectedExitsOneNamingCellAndModel) {
  TempDir dir;
  nlohmann::json next = nlohmann::json::parse(Fixture("matrix.json"));
  nlohmann::json& cell = next["cells"][0];
  cell["results"][1]["violations"] = 3;
  cell["results"][1]["as_expected"] = false;
  cell["verdict"] = "unexpected";
  const std::string base = Write(dir, "base.json", Fixture("matrix.json"));
  const std::string changed = Write(dir, "new.json", next.dump(2));
  auto r = Diff(base + " " + changed + " --json " + dir.File("d.json") + " --markdown " +
                dir.File("d.md") + " --html " + dir.File("d.html"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("REGRESSION  xlog/fdatasync/ext4 cache on  expectation: as "
                                  "expected (survives) → UNEXPECTED (expected survives)"));
  EXPECT_THAT(r.output, HasSubstr("1 regression: xlog/fdatasync/ext4 cache on\n"));
  EXPECT_THAT(r.output, Not(HasSubstr("no regression")));
  const nlohmann::json j = nlohmann::json::parse(ReadFile(dir.File("d.json")));
  EXPECT_EQ(j["regressions"], 1);
  EXPECT_EQ(j["regression_names"][0], "xlog/fdatasync/ext4 cache on");
  EXPECT_THAT(ReadFile(dir.File("d.md")),
              HasSubstr("| **REGRESSION** | `xlog/fdatasync/ext4` | on |"));
  EXPECT_THAT(ReadFile(dir.File("d.html")), HasSubstr("<td>xlog/fdatasync/ext4</td><td>on</td>"));

  // --into-html: the report's own HTML shows the diff after its title.
  const std::string report_html =
      Write(dir, "matrix.html", "<html><body><h1>powercut matrix</h1>\n<table></table>\n");
  r = Diff(base + " " + changed + " --into-html " + report_html);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  const std::string html = ReadFile(report_html);
  EXPECT_LT(html.find("</h1>"), html.find("<section id=\"powercut-diff\">"));
  EXPECT_LT(html.find("<section id=\"powercut-diff\">"), html.find("<table></table>"));
}

TEST(DiffCommand, BadInputExitsTwoWithAClearMessage) {
  TempDir dir;
  const std::string good = Write(dir, "good.json", Fixture("matrix.json"));
  const std::string text = Fixture("matrix.json");
  const std::string truncated = Write(dir, "truncated.json", text.substr(0, text.size() / 3));
  const std::string other = Write(dir, "other.json", R"({"name": "not a report", "cells": []})");
  nlohmann::json newer = nlohmann::json::parse(text);
  newer["schema"] = "powercut-matrix/2";
  const std::string version = Write(dir, "v2.json", newer.dump());
  const std::string run = Write(dir, "run.json", Fixture("run.json"));
  const std::string junit =
      Write(dir, "matrix.xml", "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n");
  struct Case {
    std::string args, message;
  };
  for (const Case& c : {
           Case{good + " " + truncated, truncated + ": truncated"},
           Case{truncated + " " + good, truncated + ": truncated"},
           Case{good + " " + other, other + ": not a powercut report"},
           Case{good + " " + version, version + ": unknown schema version powercut-matrix/2"},
           Case{good + " " + dir.File("missing.json"),
                "missing.json: cannot read the file: No such file or directory"},
           Case{good + " " + dir.path(), dir.path() + ": a folder, not a report"},
           Case{good + " " + junit, junit + ": XML or HTML, not JSON (the --junit or --html"},
           Case{good + " " + run, "a diff compares two reports of one kind"},
       }) {
    auto r = Diff(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.output;
    EXPECT_THAT(r.output, HasSubstr("powercut diff: ")) << c.args;
    EXPECT_THAT(r.output, HasSubstr(c.message)) << c.args;
  }
  auto r = Diff(good);  // one report only: a usage error
  EXPECT_EQ(r.exit_code, 2) << r.output;
}

}  // namespace
}  // namespace powercut::diff
