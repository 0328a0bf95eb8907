// The pure parts of `walbench cache` in the VM (bench/walbench/vm_cache_bench.h): reading the
// guest's result line back, medians and per-pair ratios, the JSON shape. No guest is booted here
// (walbench_vm_test does that).
#include <gtest/gtest.h>

#include <string>

#include "bench/walbench/vm_cache_bench.h"

namespace powercut::walbench {
namespace {

CacheWorkloadResult Result(const char* cache, double mb, double commits) {
  CacheWorkloadResult r;
  r.write_cache = cache;
  r.seq_write_mb_per_sec = mb;
  r.seq_write_seconds = 1;
  r.commits_per_sec = commits;
  r.commit_p50_us = 100;
  r.commit_p99_us = 200;
  return r;
}

VmCacheRun MakeRun(bool on, int rep, double mb, double commits) {
  VmCacheRun run;
  run.cache_on = on;
  run.rep = rep;
  run.qemu_cache = on ? "writeback" : "writethrough";
  run.guest_write_cache = on ? "write back" : "write through";
  run.result = Result(on ? "write back" : "write through", mb, commits);
  return run;
}

TEST(VmCacheReportTest, ParsesTheResultLineAmongOtherOutput) {
  const CacheWorkloadResult in = Result("write through", 12.5, 340);
  const std::string log = "some output\n" + std::string(kCacheResultLinePrefix) +
                          CacheWorkloadResultToJson(in).dump() + "\ntrailing line\n";
  auto out = ParseCacheResultLine(log);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->write_cache, "write through");
  EXPECT_DOUBLE_EQ(out->seq_write_mb_per_sec, 12.5);
  EXPECT_DOUBLE_EQ(out->commits_per_sec, 340);
}

TEST(VmCacheReportTest, MissingOrBrokenResultLineIsAClearError) {
  auto missing = ParseCacheResultLine("walbench: --dir /x: cannot create\n");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(std::string(missing.status().message()).find(kCacheResultLinePrefix),
            std::string::npos);
  auto broken = ParseCacheResultLine(std::string(kCacheResultLinePrefix) + "{not json\n");
  ASSERT_FALSE(broken.ok());
  auto incomplete =
      ParseCacheResultLine(std::string(kCacheResultLinePrefix) + R"({"write_cache": "x"})");
  ASSERT_FALSE(incomplete.ok());
  EXPECT_NE(std::string(incomplete.status().message()).find("seq_write_mb_per_sec"),
            std::string::npos);
}

TEST(VmCacheReportTest, MediansPerModeAndMedianOfPerPairRatios) {
  VmCacheReport report;
  report.accel = "tcg";
  // Pairs (on, off): seq ratios 2, 3, 10 -> median 3; commit ratios 1, 4, 0.5 -> median 1.
  report.runs = {MakeRun(true, 0, 200, 100), MakeRun(false, 0, 100, 100),
                 MakeRun(false, 1, 50, 50),  MakeRun(true, 1, 150, 200),
                 MakeRun(true, 2, 1000, 40), MakeRun(false, 2, 100, 80)};
  SummarizeVmCacheRuns(report);
  EXPECT_DOUBLE_EQ(report.median_on.seq_write_mb_per_sec, 200);
  EXPECT_DOUBLE_EQ(report.median_off.seq_write_mb_per_sec, 100);
  EXPECT_DOUBLE_EQ(report.median_on.commits_per_sec, 100);
  EXPECT_DOUBLE_EQ(report.median_off.commits_per_sec, 80);
  EXPECT_DOUBLE_EQ(report.ratios.seq_write, 3);
  EXPECT_DOUBLE_EQ(report.ratios.commits, 1);
  EXPECT_EQ(report.median_on.write_cache, "write back");
  EXPECT_EQ(report.median_off.write_cache, "write through");

  const std::string text = FormatVmCacheReport(report);
  EXPECT_NE(text.find("3.00x"), std::string::npos) << text;
  EXPECT_NE(text.find("write through"), std::string::npos) << text;
  VmCacheOptions options;
  const nlohmann::json json = VmCacheReportToJson(options, report);
  EXPECT_EQ(json["runs"].size(), 6u);
  EXPECT_EQ(json["runs"][0]["cache"], "on");
  EXPECT_EQ(json["runs"][1]["guest_write_cache"], "write through");
  EXPECT_DOUBLE_EQ(json["ratio_seq_write"].get<double>(), 3);
  EXPECT_DOUBLE_EQ(json["cache_off"]["commits_per_sec"].get<double>(), 80);
}

}  // namespace
}  // namespace powercut::walbench
