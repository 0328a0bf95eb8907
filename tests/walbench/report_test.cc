// Pure logic of `walbench commit` and `walbench barriers` output: percentiles, medians and
// same-rep ratios, engine configs, JSON shape, SVG.
#include <gtest/gtest.h>

#include "bench/walbench/barrier_report.h"
#include "bench/walbench/cache_bench.h"
#include "bench/walbench/commit_bench.h"
#include "bench/walbench/commit_report.h"
#include "bench/walbench/latency.h"
#include "bench/walbench/svg_plot.h"

namespace powercut::walbench {
namespace {

TEST(LatencyTest, NearestRankPercentiles) {
  std::vector<int64_t> ns;
  for (int i = 1; i <= 1000; ++i) ns.push_back(i * 1000);  // 1..1000 us, shuffled below
  std::reverse(ns.begin(), ns.end());
  LatencySummary s = SummarizeLatencies(ns);
  EXPECT_EQ(s.count, 1000u);
  EXPECT_DOUBLE_EQ(s.p50_us, 500);
  EXPECT_DOUBLE_EQ(s.p99_us, 990);
  EXPECT_DOUBLE_EQ(s.p999_us, 999);
  EXPECT_DOUBLE_EQ(s.max_us, 1000);
  EXPECT_DOUBLE_EQ(s.mean_us, 500.5);
  EXPECT_EQ(SummarizeLatencies({}).count, 0u);
  EXPECT_EQ(NearestRankPercentile({7}, 99.9), 7);
}

TEST(LatencyTest, Median) {
  EXPECT_DOUBLE_EQ(Median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(Median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(Median({}), 0);
}

CommitRun MakeRun(double rate, double barriers = 1) {
  CommitRun run;
  run.commits_per_sec = rate;
  run.barriers_per_commit = barriers;
  run.latency.p50_us = 1e6 / rate;
  run.latency.p99_us = 2e6 / rate;
  return run;
}

CommitResult Result(std::string engine, bool pipelined, int threads, std::vector<CommitRun> reps) {
  CommitResult r;
  r.config.engine = std::move(engine);
  r.config.pipelined = pipelined;
  r.threads = threads;
  r.record_bytes = 4096;
  r.reps = std::move(reps);
  return r;
}

TEST(ComputeMediansAndRatiosTest, RatiosAreTakenWithinARepThenMedianed) {
  // The disk got 2x faster in rep 2 and 4x in rep 3: the ratio stays 2.5 in every rep, while a
  // ratio of medians across reps would also be 2.5 here only by luck of symmetry.
  std::vector<CommitResult> results = {
      Result("wal", false, 32, {MakeRun(25000), MakeRun(50000), MakeRun(100000)}),
      Result("rocksdb", false, 32, {MakeRun(10000), MakeRun(20000), MakeRun(40000)}),
      Result("rocksdb", true, 32, {MakeRun(8000), MakeRun(30000), MakeRun(20000)}),
      Result("bare", false, 32, {MakeRun(20000), MakeRun(40000), MakeRun(200000)}),
      Result("bare", false, 1, {MakeRun(5000)}),  // another group: no rocksdb there
  };
  ComputeMediansAndRatios(results);
  const CommitResult& wal = results[0];
  EXPECT_DOUBLE_EQ(wal.commits_per_sec, 50000);
  ASSERT_TRUE(wal.ratio_to_rocksdb.has_value());
  // Best RocksDB per rep: 10000, 30000, 40000 -> ratios 2.5, 1.667, 2.5 -> median 2.5.
  EXPECT_DOUBLE_EQ(*wal.ratio_to_rocksdb, 2.5);
  ASSERT_TRUE(wal.ratio_to_bare.has_value());
  // 1.25, 1.25, 0.5 -> 1.25.
  EXPECT_DOUBLE_EQ(*wal.ratio_to_bare, 1.25);
  EXPECT_DOUBLE_EQ(wal.p50_us, 1e6 / 50000);
  EXPECT_FALSE(results[4].ratio_to_rocksdb.has_value());
  EXPECT_DOUBLE_EQ(*results[4].ratio_to_bare, 1.0);
}

TEST(MakeEngineConfigsTest, ExpandsEnginesIntoVariants) {
  auto configs =
      MakeEngineConfigs({"wal", "rocksdb", "bare"},
                        {wal::Barrier::kFdatasync, wal::Barrier::kDirectDsync}, {true, false});
  ASSERT_TRUE(configs.ok()) << configs.status();
  std::vector<std::string> labels;
  for (const EngineConfig& c : *configs) labels.push_back(c.Label());
  EXPECT_EQ(labels, (std::vector<std::string>{"wal/fdatasync", "wal/fdatasync/noprealloc",
                                              "wal/direct_dsync", "wal/direct_dsync/noprealloc",
                                              "rocksdb", "rocksdb/pipelined", "bare/fdatasync"}));
  auto bad = MakeEngineConfigs({"leveldb"}, {wal::Barrier::kFdatasync}, {true});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("leveldb"), std::string::npos);
}

TEST(EngineConfigTest, WalVariantsAreNamedInTheLabel) {
  EngineConfig config;
  config.engine = "wal";
  EXPECT_EQ(config.Label(), "wal/fdatasync");
  config.wal_segment_bytes = 512ull << 20;
  config.wal_release_every = 32768;
  EXPECT_EQ(config.Label(), "wal/fdatasync/seg512M/rel32768");
  config.engine = "bare";
  EXPECT_EQ(config.Label(), "bare/fdatasync");
}

TEST(CommitResultsToJsonTest, RunsCarryTheRequiredFields) {
  std::vector<CommitResult> results = {
      Result("wal", false, 4, {MakeRun(9000, 0.3)}),
      Result("rocksdb", false, 4, {MakeRun(3000, 0.4)}),
      Result("bare", false, 4, {MakeRun(10000, 0.25)}),
  };
  results[0].config.barrier = wal::Barrier::kRwfDsync;
  ComputeMediansAndRatios(results);
  DeviceFacts facts;
  facts.path = "/var/tmp/x";
  CommitBenchOptions options;
  nlohmann::json j = CommitResultsToJson(facts, options, results);
  ASSERT_TRUE(j["runs"].is_array());
  ASSERT_EQ(j["runs"].size(), 3u);
  for (const auto& run : j["runs"]) {
    for (const char* key : {"engine", "barrier", "threads", "record_bytes", "commits_per_sec",
                            "p50_us", "p99_us", "barriers_per_commit"}) {
      EXPECT_TRUE(run.contains(key)) << key << " missing in " << run.dump();
    }
  }
  EXPECT_EQ(j["runs"][0]["engine"], "wal");
  EXPECT_EQ(j["runs"][0]["barrier"], "rwf_dsync");
  EXPECT_EQ(j["runs"][0]["threads"], 4);
  EXPECT_DOUBLE_EQ(j["runs"][0]["commits_per_sec"].get<double>(), 9000);
  EXPECT_DOUBLE_EQ(j["runs"][0]["barriers_per_commit"].get<double>(), 0.3);
  EXPECT_DOUBLE_EQ(j["runs"][0]["ratio_to_rocksdb"].get<double>(), 3.0);
  EXPECT_TRUE(j["runs"][0]["device_flushes_per_commit"].is_null());
  EXPECT_EQ(j["runs"][0]["reps"].size(), 1u);
  // The table has a row per result.
  const std::string table = FormatCommitTable(results);
  EXPECT_NE(table.find("wal/rwf_dsync"), std::string::npos);
  EXPECT_NE(table.find("3.00x"), std::string::npos);
}

TEST(BarrierResultsToJsonTest, CellsCarryVerdictsAndSkips) {
  BarrierCell ok;
  ok.barrier = wal::Barrier::kFdatasync;
  ok.workload = Workload::kRewrite;
  ok.op_bytes = 4096;
  ok.ops = 100;
  ok.ops_per_sec = 5000;
  ok.device_flushes_per_op = 1.0;
  ok.findings = {{Verdict::kFasterThanMedia, "too fast"}};
  BarrierCell skipped;
  skipped.barrier = wal::Barrier::kDirect;
  skipped.workload = Workload::kAppend;
  skipped.op_bytes = 512;
  skipped.error = "O_DIRECT refused";
  DeviceFacts facts;
  facts.has_block_device = false;
  facts.no_device_reason = "tmpfs";
  nlohmann::json j = BarrierResultsToJson(facts, {ok, skipped});
  ASSERT_EQ(j["cells"].size(), 2u);
  EXPECT_EQ(j["cells"][0]["verdict"], "faster_than_media");
  EXPECT_EQ(j["cells"][0]["workload"], "rewrite");
  EXPECT_DOUBLE_EQ(j["cells"][0]["device_flushes_per_op"].get<double>(), 1.0);
  EXPECT_EQ(j["cells"][1]["skipped"], "O_DIRECT refused");
  EXPECT_EQ(j["device"]["has_block_device"], false);
  const std::string table = FormatBarrierTable({ok, skipped});
  EXPECT_NE(table.find("skipped: O_DIRECT refused"), std::string::npos);
  EXPECT_NE(table.find("too fast"), std::string::npos);
}

TEST(ParseWorkloadTest, NamesRoundTrip) {
  for (Workload w : AllWorkloads()) {
    auto parsed = ParseWorkload(WorkloadName(w));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, w);
  }
  EXPECT_FALSE(ParseWorkload("scribble").ok());
}

TEST(SvgTest, OnePolylinePerSeriesAndEscapedNames) {
  PlotPanel panel;
  panel.title = "a < b";
  panel.log2_x = true;
  panel.series = {{"wal/fdatasync", {{1, 5000}, {2, 9000}, {4, 15000}}},
                  {"rocksdb & co", {{1, 2800}, {4, 8000}}},
                  {"empty", {}}};
  const std::string svg = RenderSvg({panel, panel});
  size_t polylines = 0;
  for (size_t at = svg.find("<polyline"); at != std::string::npos;
       at = svg.find("<polyline", at + 1)) {
    ++polylines;
  }
  EXPECT_EQ(polylines, 4u);  // two drawable series in each of two panels
  EXPECT_NE(svg.find("rocksdb &amp; co"), std::string::npos);
  EXPECT_NE(svg.find("a &lt; b"), std::string::npos);
  EXPECT_EQ(svg.find("rocksdb & co"), std::string::npos);
  EXPECT_EQ(svg.rfind("</svg>\n"), svg.size() - 7);
}

TEST(SvgTest, NiceCeiling) {
  EXPECT_DOUBLE_EQ(NiceCeiling(42000), 50000);
  EXPECT_DOUBLE_EQ(NiceCeiling(17000), 20000);
  EXPECT_DOUBLE_EQ(NiceCeiling(100), 100);
  EXPECT_DOUBLE_EQ(NiceCeiling(0), 1);
}

TEST(CommitPlotPanelsTest, OnePanelPerRecordSizeWithSortedPoints) {
  std::vector<CommitResult> results = {Result("bare", false, 4, {MakeRun(10000)}),
                                       Result("bare", false, 1, {MakeRun(5000)})};
  ComputeMediansAndRatios(results);
  auto panels = CommitPlotPanels(results);
  ASSERT_EQ(panels.size(), 1u);
  ASSERT_EQ(panels[0].series.size(), 1u);
  ASSERT_EQ(panels[0].series[0].points.size(), 2u);
  EXPECT_DOUBLE_EQ(panels[0].series[0].points[0].first, 1);
  EXPECT_DOUBLE_EQ(panels[0].series[0].points[1].second, 10000);
}

TEST(CacheComparisonTest, ShowsBothSidesAndTheRatio) {
  CacheWorkloadResult on;
  on.write_cache = "write back";
  on.seq_write_mb_per_sec = 300;
  on.commits_per_sec = 6000;
  CacheWorkloadResult off;
  off.write_cache = "write through";
  off.seq_write_mb_per_sec = 100;
  off.commits_per_sec = 0;  // e.g. the run failed: no ratio, no division by zero
  const std::string text = FormatCacheComparison(on, off);
  EXPECT_NE(text.find("write through"), std::string::npos);
  EXPECT_NE(text.find("3.00x"), std::string::npos);
  EXPECT_EQ(text.find("inf"), std::string::npos);
  nlohmann::json j = CacheWorkloadResultToJson(on);
  EXPECT_DOUBLE_EQ(j["seq_write_mb_per_sec"].get<double>(), 300);
  EXPECT_EQ(j["write_cache"], "write back");
}

}  // namespace
}  // namespace powercut::walbench
