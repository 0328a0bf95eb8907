// Shards, matrix plans, merging shard reports, ddmin and option parsing: no VM, no mounts.
#include <set>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "harness/product/html_report.h"
#include "harness/product/matrix.h"
#include "harness/product/merge.h"
#include "harness/product/progress.h"
#include "harness/product/repro.h"
#include "harness/product/run.h"
#include "harness/product/shard.h"

namespace powercut::product {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(Shard, ParsesAndRejects) {
  auto s = ParseShard("2/4");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->k, 2u);
  EXPECT_EQ(s->n, 4u);
  for (const char* bad : {"0/4", "5/4", "4", "a/b", "1/0", "", "1/", "/3", "-1/3"}) {
    auto r = ParseShard(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_THAT(r.status().message(), HasSubstr("K/N")) << bad;
  }
}

TEST(Shard, EveryCellIsInExactlyOneShardAndTheHashIsStable) {
  // FNV-1a 64 of "a": a fixed value on every machine.
  EXPECT_EQ(StableHash("a"), 0xaf63dc4c8601ec8cull);
  MatrixOptions o;
  o.workloads = {"xlog", "rocksdb", "sqlite-wal"};
  auto plan = PlanMatrix(o);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->size(), 9u + 3u + 4u);
  for (uint32_t n : {1u, 2u, 3u, 7u}) {
    std::multiset<std::string> seen;
    for (uint32_t k = 1; k <= n; ++k) {
      for (const auto& c : *plan) {
        if ((Shard{k, n}).Contains(c.Name())) seen.insert(c.Name());
      }
    }
    EXPECT_EQ(seen.size(), plan->size()) << n;
    for (const auto& c : *plan) EXPECT_EQ(seen.count(c.Name()), 1u) << c.Name();
  }
}

TEST(Plan, PresetAndErrorsNameTheBadValue) {
  MatrixOptions o;
  o.preset = "headline";
  auto plan = PlanMatrix(o);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->size(), 10u);
  EXPECT_EQ(plan->front().Name(), "xlog/fdatasync/ext4");

  MatrixOptions bad;
  bad.workloads = {"postgres"};
  auto r = PlanMatrix(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("unknown workload 'postgres'"));
  EXPECT_THAT(r.status().message(), HasSubstr("xlog"));

  MatrixOptions barrier;
  barrier.workloads = {"rocksdb"};
  barrier.barriers = {"fdatasync"};
  r = PlanMatrix(barrier);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("none applies to workload 'rocksdb'"));

  MatrixOptions fs;
  fs.fs = {"ntfs"};
  r = PlanMatrix(fs);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("--fs ntfs"));

  MatrixOptions preset;
  preset.preset = "everything";
  EXPECT_FALSE(PlanMatrix(preset).ok());
}

// A deterministic stand-in for the VM: the outcome follows from the cell's name, so a sharded
// and an unsharded matrix must agree cell by cell.
RunOutcome FakeCell(const MatrixCell& c, const RunOptions& r) {
  RunOutcome out;
  if (c.setting == "io_uring") {
    out.error_kind = "workload-exit";
    out.error = "the workload exited with status 2";
    return out;
  }
  out.ran = true;
  out.acks = c.count;
  out.trace_entries = 3 * c.count;
  harness::CheckReport report;
  for (const auto& model : r.models) {
    harness::ModelResult m;
    m.model = model;
    m.states = c.Name().size() * 3;
    bool lose = c.setting == "none" ||
                (c.setting == "direct" && model.mode != harness::CacheMode::kOff) ||
                model.mode == harness::CacheMode::kLying;
    if (lose) {
      m.violations = 2;
      m.lost_acks_max = 1;
      harness::Verdict v;
      v.state_id = "pc1_00000000_" + model.Code() + "_a4096_p5_kN";
      v.point = 5;
      v.lost = {"4"};
      m.first_violation = v;
    }
    report.results.push_back(m);
  }
  out.report = report;
  out.timeline = Timeline{.kinds = "wfawfawfa", .acks = {{2, "1"}, {5, "2"}, {8, "3"}}};
  return out;
}

MatrixReport RunFake(const std::string& shard) {
  MatrixOptions o;
  o.workloads = {"xlog"};
  o.workload_binary = "/bin/powercut-workload";
  o.progress = false;
  o.shard = *ParseShard(shard);
  auto r = RunMatrix(o, FakeCell);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : MatrixReport{};
}

TEST(Merge, ShardsMergeToTheUnshardedCells) {
  MatrixReport all = RunFake("1/1");
  ASSERT_EQ(all.cells.size(), 9u);
  std::vector<MatrixReport> shards;
  size_t total = 0;
  for (const char* s : {"1/3", "2/3", "3/3"}) {
    // Through JSON, as `powercut merge` reads them.
    auto back = MatrixFromJson(nlohmann::json::parse(MatrixToJson(RunFake(s)).dump()));
    ASSERT_TRUE(back.ok()) << back.status();
    total += back->cells.size();
    shards.push_back(*back);
  }
  EXPECT_EQ(total, 9u);
  auto merged = MergeReports(shards);
  ASSERT_TRUE(merged.ok()) << merged.status();
  nlohmann::json a = MatrixToJson(all)["cells"];
  nlohmann::json b = MatrixToJson(*merged)["cells"];
  for (auto* cells : {&a, &b}) {
    for (auto& c : *cells) c.erase("record_seconds"), c.erase("check_seconds");
  }
  EXPECT_EQ(a, b);
  EXPECT_EQ(MatrixExitCode(*merged), 1);
  std::string table = HeadlineTable(*merged);
  EXPECT_THAT(table, HasSubstr("xlog/fdatasync/ext4"));
  EXPECT_THAT(table, HasSubstr("COULD NOT RUN (workload-exit)"));
  EXPECT_THAT(MatrixJunit(*merged), HasSubstr("<error type=\"workload-exit\""));
}

TEST(Merge, RejectsMismatchedDuplicateAndMissingShards) {
  MatrixReport one = RunFake("1/2");
  MatrixReport two = RunFake("2/2");
  EXPECT_TRUE(MergeReports({one, two}).ok());

  auto missing = MergeReports({one});
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("a shard is missing"));
  EXPECT_TRUE(MergeReports({one}, /*allow_missing=*/true).ok());

  auto twice = MergeReports({one, one});
  ASSERT_FALSE(twice.ok());
  EXPECT_THAT(twice.status().message(), HasSubstr("given twice"));

  MatrixReport other = two;
  other.parameters["seed"] = 99;
  auto mismatched = MergeReports({one, other});
  ASSERT_FALSE(mismatched.ok());
  EXPECT_THAT(mismatched.status().message(), HasSubstr("other parameters"));
}

TEST(DeltaDebug, FindsTheOneMinimalSubset) {
  std::vector<size_t> all = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  int tests = 0;
  // Fails when both 3 and 7 are present.
  auto fails = [&](const std::vector<size_t>& s) {
    ++tests;
    bool a = std::find(s.begin(), s.end(), 3) != s.end();
    bool b = std::find(s.begin(), s.end(), 7) != s.end();
    return a && b;
  };
  EXPECT_THAT(DeltaDebug(all, fails), ElementsAre(3, 7));
  EXPECT_LT(tests, 40);
  EXPECT_THAT(DeltaDebug(all, [](const std::vector<size_t>&) { return true; }), ElementsAre());
  EXPECT_THAT(DeltaDebug(all,
                         [](const std::vector<size_t>& s) {
                           return std::find(s.begin(), s.end(), 9) != s.end();
                         }),
              ElementsAre(9));
}

TEST(Options, ParseAndRejectWithTheFlagName) {
  auto models = ParseCacheList("all", "16");
  ASSERT_TRUE(models.ok());
  EXPECT_EQ(models->size(), 3u);
  auto bad = ParseCacheList("off,sometimes", "16");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("--cache"));
  auto points = ParsePoints("acks,flushes");
  ASSERT_TRUE(points.ok());
  EXPECT_TRUE(points->acks && points->flushes && !points->every_entry);
  auto sample = ParsePoints("25");
  ASSERT_TRUE(sample.ok());
  EXPECT_EQ(sample->sample, 25u);
  EXPECT_FALSE(ParsePoints("whenever").ok());
  auto states = ParseStates("8");
  ASSERT_TRUE(states.ok());
  EXPECT_EQ(states->max_exhaustive, 3u);
  EXPECT_EQ(states->samples, 8u);
  EXPECT_EQ(ParseStates("exhaustive")->max_exhaustive, 16u);
  EXPECT_FALSE(ParseStates("0").ok());
  EXPECT_FALSE(ParseStates("many").ok());
  EXPECT_FALSE(ParseRecorder("tcpdump").ok());
}

TEST(Progress, FormatsRateAndEta) {
  EXPECT_EQ(Progress::Format(5, 10, 10.0), "5/10, 0.50/s, ETA 00:10");
  EXPECT_EQ(Progress::Format(0, 10, 0.0), "0/10, 0.00/s, ETA --:--");
}

TEST(Html, HoldsTheMatrixAndATimelinePerFailingCell) {
  MatrixReport r = RunFake("1/1");
  std::string html = HtmlReport(r, "t");
  EXPECT_THAT(html, HasSubstr("id=\"matrix\""));
  EXPECT_THAT(html, HasSubstr("id=\"timeline-"));
  EXPECT_THAT(html, HasSubstr("could not run (workload-exit)"));
  EXPECT_EQ(html.find("http://"), html.find("http://www.w3.org/2000/svg"));  // no network
  EXPECT_EQ(html.find("<script"), std::string::npos);
}

}  // namespace
}  // namespace powercut::product
