// The HTML report in a real browser: headless Chromium renders the file (no network: the page
// must be self-contained), and the rendered DOM holds the matrix cells and the timeline figure.
#include <unistd.h>

#include <filesystem>

#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "harness/product/html/html_report.h"
#include "tests/product/test_util.h"

namespace powercut::product {
namespace {

using ::testing::HasSubstr;
using testing::RunCommand;
using testing::TempDir;

MatrixReport Sample() {
  MatrixReport r;
  r.plan_cells = 3;
  r.seconds = 12;
  CellResult pass{.index = 0,
                  .name = "xlog/fdatasync/ext4",
                  .workload = "xlog",
                  .setting = "fdatasync",
                  .fs = "ext4",
                  .ran = true,
                  .trace_entries = 9,
                  .acks = 3};
  pass.models = {{.cache = "off", .kind = ModelKind::kOff, .states = 40},
                 {.cache = "on", .kind = ModelKind::kOn, .states = 55}};
  CellResult fail{.index = 1,
                  .name = "xlog/none/ext4",
                  .workload = "xlog",
                  .setting = "none",
                  .fs = "ext4",
                  .ran = true,
                  .trace_entries = 9,
                  .acks = 3};
  fail.models = {{.cache = "off", .kind = ModelKind::kOff, .states = 40},
                 {.cache = "on",
                  .kind = ModelKind::kOn,
                  .states = 50,
                  .violations = 7,
                  .lost_acks_max = 2,
                  .first_violation = "pc1_0a0b0c0d_on_a4096_p9_kN",
                  .summary = "lost 2"}};
  fail.timeline = Timeline{.kinds = "wfawwawua",
                           .acks = {{2, "1"}, {5, "2"}, {8, "3"}},
                           .crashes = {{.cache = "on",
                                        .state = "pc1_0a0b0c0d_on_a4096_p9_kN",
                                        .point = 9,
                                        .lost = {"2", "3"},
                                        .lost_entries = {5, 8},
                                        .dropped = {3, 4},
                                        .summary = "lost 2 of 3"}}};
  CellResult error{.index = 2,
                   .name = "xlog/io_uring/ext4",
                   .workload = "xlog",
                   .setting = "io_uring",
                   .fs = "ext4",
                   .ran = false,
                   .error_kind = RunError::kWorkloadExit,
                   .error = "exited with status 2"};
  // The none cell is expected to lose under off, but it survived there: one unexpected model.
  fail.expect.models = {{ModelKind::kOff, ExpectedVerdict::kLoses},
                        {ModelKind::kOn, ExpectedVerdict::kLoses}};
  r.cells = {pass, fail, error};
  return r;
}

TEST(HtmlInChromium, RendersTheMatrixAndTheTimeline) {
  ASSERT_EQ(::access("/usr/bin/chromium", X_OK), 0)
      << "headless Chromium is needed: apt-get install chromium (tools/install-deps.sh)";
  TempDir dir;
  std::string html = dir.File("report.html");
  { std::ofstream(html) << HtmlReport(Sample(), "powercut matrix"); }
  std::string flags = fmt::format(
      "--headless --no-sandbox --disable-gpu --disable-background-networking "
      "--disable-component-update --disable-sync --no-first-run --user-data-dir={}",
      dir.File("profile"));
  auto dom =
      RunCommand(fmt::format("/usr/bin/chromium {} --dump-dom file://{} 2>/dev/null", flags, html));
  ASSERT_EQ(dom.exit_code, 0) << dom.output;
  EXPECT_THAT(dom.output, HasSubstr("<table id=\"matrix\">"));
  EXPECT_THAT(dom.output, HasSubstr("data-cell=\"xlog/fdatasync/ext4\""));
  EXPECT_THAT(dom.output, HasSubstr("data-cell=\"xlog/none/ext4\""));
  EXPECT_THAT(dom.output, HasSubstr("FAIL 2 / 50 / 7"));
  EXPECT_THAT(dom.output, HasSubstr("could not run (workload-exit)"));
  EXPECT_THAT(dom.output, HasSubstr("UNEXPECTED: cache off: expected loses, got no violation"));
  EXPECT_THAT(dom.output, HasSubstr("class=\"pass num unexpected\""));
  EXPECT_THAT(dom.output, HasSubstr("data-verdict=\"ok\""));
  EXPECT_THAT(dom.output, HasSubstr("id=\"timeline-1\""));
  EXPECT_THAT(dom.output, HasSubstr("class=\"crash\""));
  EXPECT_THAT(dom.output, HasSubstr("class=\"lost\""));
  EXPECT_EQ(dom.output.find("id=\"timeline-0\""), std::string::npos);  // passing: no figure

  std::string png = dir.File("shot.png");
  auto shot = RunCommand(
      fmt::format("cd {} && /usr/bin/chromium {} --window-size=1100,700 --screenshot={} file://{} "
                  "2>/dev/null",
                  dir.path(), flags, png, html));
  ASSERT_EQ(shot.exit_code, 0) << shot.output;
  std::string bytes = testing::ReadFile(png);
  ASSERT_GT(bytes.size(), 1000u);
  EXPECT_EQ(bytes.substr(1, 3), "PNG");
}

}  // namespace
}  // namespace powercut::product
