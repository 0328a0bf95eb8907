// Real traces from tests/data (recorded in a qemu guest by the VM room): the kernel's
// dm-log-writes log (flush-epoch order) and powercut's NBD recorder log (completion order) of the
// same run. Both must parse without notes, replay to the image the guest ended with, and pass the
// engine under cache off and on (the workload fdatasyncs before every ack) but not under lying.
#include <cstdio>
#include <filesystem>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "harness/check/engine.h"
#include "harness/check/report.h"
#include "harness/trace/trace_reader.h"
#include "harness/trace/trace_replay.h"
#include "tests/harness_testing.h"

namespace powercut::harness {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

const std::string kData = std::string(POWERCUT_SOURCE_DIR) + "/tests/data/";
// SHA-256 of the guest's final disk (tests/data/raw-dio-fdatasync.final.json).
constexpr char kFinalSha256[] = "4147fd8ac484d3141603a1d7903910a9014f20d652eea4b4779d02e80aa2bdf4";
// Reads block i (4 KiB) and reports `have i` when it starts with "commit i".
constexpr char kChecker[] =
    "for i in 1 2 3 4 5 6 7 8; do dd if=\"$POWERCUT_DEV\" bs=4096 skip=$i count=1 status=none | "
    "head -n1 | grep -qx \"commit $i\" && echo \"have $i\"; done; true";

std::string Sha256(const std::string& path) {
  std::string cmd = "sha256sum '" + path + "'";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return "";
  char buf[65] = {0};
  size_t n = std::fread(buf, 1, 64, p);
  ::pclose(p);
  return std::string(buf, n);
}

class KernelTrace : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    log_ = kData + GetParam();
    if (!std::filesystem::exists(log_)) GTEST_SKIP() << log_ << " is not in the tree";
    base_ = dir_.File("zero-16MiB.img");
    testing::MakeImage(base_, 16 << 20);
  }
  TempDir dir_;
  std::string log_, base_;
};

TEST_P(KernelTrace, ParsesAndReplaysToTheGuestsFinalImage) {
  TraceReadOptions options;
  options.device_bytes = 16 << 20;
  auto file = TraceFile::Open(log_, options);
  ASSERT_TRUE(file.ok()) << file.status();
  const Trace& t = (*file)->trace();
  EXPECT_EQ(t.sector_size, 512u);
  EXPECT_TRUE(t.notes.empty());
  EXPECT_EQ(t.entries.size(), t.super_nr_entries);
  int acks = 0;
  for (const auto& e : t.entries) acks += e.is_mark() && e.mark.rfind("ack:", 0) == 0;
  EXPECT_EQ(acks, 8);
  std::string out = dir_.File("replayed.img");
  auto n = ReplayTrace(**file, base_, out, {});
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(Sha256(out), kFinalSha256);
  ReplayOptions to_ack3;
  to_ack3.end_mark = "ack:3";
  ASSERT_TRUE(ReplayTrace(**file, base_, out, to_ack3).ok());
  EXPECT_NE(Sha256(out), kFinalSha256);
}

TEST_P(KernelTrace, FdatasyncBeforeEveryAckSurvivesOffAndOnButNotLying) {
  CheckOptions o;
  o.trace_path = log_;
  o.base_image = base_;
  o.checker = kChecker;
  o.models = {*ParseCacheModel("off"), *ParseCacheModel("on"), *ParseCacheModel("ly4e")};
  o.work_dir = dir_.File("work");
  auto report = RunCheck(o);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->results.size(), 3u);
  EXPECT_EQ(report->results[0].violations, 0u) << ReportSummaryTable(*report);
  EXPECT_EQ(report->results[1].violations, 0u) << ReportSummaryTable(*report);
  EXPECT_GT(report->results[2].violations, 0u) << ReportSummaryTable(*report);
  if (report->order == "flush-epoch") {
    ASSERT_FALSE(report->results[0].notes.empty());
    // 8 fdatasyncs, one FLUSH each; the O_DIRECT writes are plain (no FUA point to use).
    EXPECT_THAT(report->results[0].notes.back(),
                HasSubstr("8 points right after a FLUSH and 0 right after a FUA write"));
    EXPECT_EQ(report->results[0].points, 8u);
  }
}

INSTANTIATE_TEST_SUITE_P(TestsData, KernelTrace,
                         ::testing::Values("raw-dio-fdatasync.log-writes.log",
                                           "raw-dio-fdatasync.nbd.log"));

}  // namespace
}  // namespace powercut::harness
