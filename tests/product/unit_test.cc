// Shards, matrix plans, merging shard reports, ddmin and option parsing: no VM, no mounts.
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "base/temp_dir.h"
#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "harness/check/report.h"
#include "harness/check/state_tally.h"
#include "harness/product/cell/model_kind.h"
#include "harness/product/html/html_report.h"
#include "harness/product/matrix/builtin.h"
#include "harness/product/matrix/custom_cells.h"
#include "harness/product/matrix/matrix.h"
#include "harness/product/matrix/merge.h"
#include "harness/product/matrix/shard.h"
#include "harness/product/outcome/timeline.h"
#include "harness/product/repro/repro.h"
#include "harness/product/run/progress.h"
#include "harness/product/run/run.h"

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

TEST(Plan, TheMultidiskPresetRecordsTwoDisks) {
  MatrixOptions o;
  o.preset = Preset::kMultidisk;
  auto plan = PlanMatrix(o);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->size(), 6u);
  EXPECT_EQ(plan->front().Name(), "twodisk/fdatasync/ext4");
  std::set<std::string> names;
  for (const MatrixCell& c : *plan) names.insert(c.Name());
  EXPECT_THAT(names,
              ::testing::IsSupersetOf({"rocksdb-waldisk/sync/ext4", "postgres-waldisk/sync-on/ext4",
                                       "etcd-waldisk/default/ext4"}));
  for (const MatrixCell& c : *plan) {
    auto cell = LookupBuiltin(c.workload, c.setting);
    ASSERT_TRUE(cell.ok());
    EXPECT_EQ(cell->disks, 2u) << c.Name();
  }
  EXPECT_EQ(LookupBuiltin("rocksdb", "sync")->disks, 1u);
  EXPECT_EQ(LookupBuiltin("postgres", "sync-on")->disks, 1u);
  EXPECT_EQ(LookupBuiltin("postgres-waldisk", "sync-on")->run_args,
            "--synchronous-commit on --wal-disk");
  EXPECT_EQ(LookupBuiltin("etcd-waldisk", "default")->run_args, "--wal-disk");
  EXPECT_EQ(LookupBuiltin("etcd-waldisk", "default")->kind, "etcd");
}

TEST(DiskFileSystems, OneForAllOrOnePerDisk) {
  using harness::FsKind;
  auto two = DiskFileSystems({FsKind::kExt4, FsKind::kXfs}, 2);
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(*two, (std::vector<FsKind>{FsKind::kExt4, FsKind::kXfs}));
  auto all = DiskFileSystems({FsKind::kXfs}, 3);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(*all, (std::vector<FsKind>{FsKind::kXfs, FsKind::kXfs, FsKind::kXfs}));
  EXPECT_THAT(DiskFileSystems({FsKind::kExt4}, 0).status().message(), HasSubstr("--disks 0"));
  EXPECT_THAT(DiskFileSystems({FsKind::kExt4, FsKind::kXfs, FsKind::kExt4}, 2).status().message(),
              HasSubstr("--fs ext4,xfs,ext4: 3 file systems for 2 disks"));
  EXPECT_THAT(DiskFileSystems({FsKind::kExt4, FsKind::kXfs}, 3).status().message(),
              HasSubstr("2 file systems for 3 disks"));
  EXPECT_FALSE(DiskFileSystems({}, 1).ok());
  // The names are parsed once, at the edge: a typo is an error listing the valid names.
  auto typo = harness::ParseFsKinds("ext4,zfs");
  ASSERT_FALSE(typo.ok());
  EXPECT_THAT(std::string(typo.status().message()), HasSubstr("'zfs'"));
  EXPECT_THAT(std::string(typo.status().message()), HasSubstr("f2fs"));
}

TEST(DiskSectors, OneForAllOrOnePerDisk) {
  using harness::SectorFormat;
  auto two = DiskSectors("512e,4kn", 2);
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_EQ(*two, (std::vector<SectorFormat>{SectorFormat::k512e, SectorFormat::k4kn}));
  auto all = DiskSectors("512n", 3);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(*all, std::vector<SectorFormat>(3, SectorFormat::k512n));
  EXPECT_THAT(DiskSectors("512e,4kn,512n", 2).status().message(),
              HasSubstr("--sector 512e,4kn,512n: 3 sector formats for 2 disks"));
  EXPECT_THAT(DiskSectors("512e,4kn", 3).status().message(),
              HasSubstr("2 sector formats for 3 disks"));
  EXPECT_THAT(DiskSectors("512e,4kn", 1).status().message(),
              HasSubstr("2 sector formats for 1 disk:"));
  EXPECT_THAT(DiskSectors("512e", 0).status().message(), HasSubstr("--disks 0"));
  EXPECT_FALSE(DiskSectors("512e,1k", 2).ok());
  EXPECT_FALSE(DiskSectors("512e,", 2).ok());
}

TEST(DiskSizes, OneForAllOrOnePerDisk) {
  auto two = DiskSizes("512MiB,1GiB", 2);
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_EQ(*two, (std::vector<uint64_t>{uint64_t{512} << 20, uint64_t{1} << 30}));
  auto all = DiskSizes("300MiB", 2);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(*all, std::vector<uint64_t>(2, uint64_t{300} << 20));
  EXPECT_THAT(DiskSizes("1GiB,1GiB,1GiB", 2).status().message(),
              HasSubstr("--disk-size 1GiB,1GiB,1GiB: 3 sizes for 2 disks"));
  EXPECT_THAT(DiskSizes("1GiB,1MiB", 2).status().message(), HasSubstr("at least 64MiB"));
  EXPECT_FALSE(DiskSizes("1GiB,big", 2).ok());
}

TEST(TimelineSvg, OneLanePerDisk) {
  Timeline one{.kinds = "wfa", .acks = {{2, "1"}}};
  const std::string single = TimelineSvg(one, "t");
  EXPECT_THAT(single, HasSubstr(">write</text>"));
  EXPECT_THAT(single, ::testing::Not(HasSubstr("d2 write")));
  Timeline two{.kinds = "wwffa", .disks = "01010", .acks = {{4, "1"}}};
  const std::string svg = TimelineSvg(two, "t");
  EXPECT_THAT(svg, HasSubstr(">d1 write</text>"));
  EXPECT_THAT(svg, HasSubstr(">d2 flush</text>"));
  // Disk 2's write (entry 1) in its own lane, 60 below disk 1's.
  EXPECT_THAT(svg, HasSubstr("class=\"write\" x=\"40.00\" y=\"20\""));
  EXPECT_THAT(svg, ::testing::ContainsRegex("class=\"write\" x=\"[0-9.]+\" y=\"80\""));
  auto back = TimelineFromJson(TimelineToJson(two));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->disks, "01010");
}

TEST(Plan, PresetAndErrorsNameTheBadValue) {
  MatrixOptions o;
  o.preset = Preset::kHeadline;
  auto plan = PlanMatrix(o);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->size(), 10u);
  EXPECT_EQ(plan->front().Name(), "xlog/fdatasync/ext4");

  MatrixOptions bad;
  bad.workloads = {"mongodb"};
  auto r = PlanMatrix(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("unknown workload 'mongodb'"));
  EXPECT_THAT(r.status().message(), HasSubstr("xlog"));

  MatrixOptions barrier;
  barrier.workloads = {"rocksdb"};
  barrier.barriers = {"fdatasync"};
  r = PlanMatrix(barrier);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("none applies to workload 'rocksdb'"));

  MatrixOptions fs;  // names were parsed at the edge: what is left to refuse is raw, or none
  fs.fs = {harness::FsKind::kRaw};
  r = PlanMatrix(fs);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("--fs raw"));
  fs.fs = {};
  EXPECT_FALSE(PlanMatrix(fs).ok());

  // A preset is a name only on the command line: an unknown one is refused there.
  EXPECT_THAT(ParsePreset("everything").status().message(),
              HasSubstr("--preset everything: expected one of headline, controls"));
  for (const std::string& name : PresetNames()) {
    ASSERT_TRUE(ParsePreset(name).ok()) << name;
    EXPECT_EQ(PresetName(*ParsePreset(name)), name);
  }
  EXPECT_EQ(*ParsePreset(""), Preset::kNone);
}

// The controls preset: the six black-box programs first, then the known-good ones, 8 commits
// each, on the file systems the command line gives (the command defaults them to ext4 and xfs).
// rocksdb and postgres cells run powercut-workload-clients directly when it is beside the
// workload binary (no hand-over per checker start); every other kind, and a binary without the
// sibling (a user's own --workload-binary), keeps the binary given.
TEST(Plan, RocksDbAndPostgresCellsStartTheClientsBinaryWhereItIs) {
  powercut::testing::TempDir dir;
  ASSERT_TRUE(dir.ok()) << dir.error();
  const std::string& folder = dir.path();
  const std::string binary = folder + "/powercut-workload";
  auto rocksdb = LookupBuiltin("rocksdb", "sync");
  auto xlog = LookupBuiltin("xlog", "fdatasync");
  ASSERT_TRUE(rocksdb.ok() && xlog.ok());
  EXPECT_EQ(BuiltinCheckCommand(binary, *rocksdb), binary + " rocksdb check");

  const std::string clients = folder + "/powercut-workload-clients";
  FILE* f = std::fopen(clients.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fclose(f);
  EXPECT_EQ(BuiltinCheckCommand(binary, *rocksdb), binary + " rocksdb check")
      << "not executable: not used";
  ASSERT_EQ(::chmod(clients.c_str(), 0755), 0);
  EXPECT_EQ(BuiltinCheckCommand(binary, *rocksdb), clients + " rocksdb check");
  EXPECT_THAT(BuiltinRunCommand(binary, *rocksdb, 5, 1),
              ::testing::StartsWith(clients + " rocksdb run"));
  EXPECT_EQ(BuiltinCheckCommand(binary, *xlog), binary + " xlog check");
}

TEST(Plan, ControlsPreset) {
  EXPECT_EQ(PresetDefaultFs(Preset::kControls),
            (std::vector<harness::FsKind>{harness::FsKind::kExt4, harness::FsKind::kXfs}));
  EXPECT_EQ(PresetDefaultFs(Preset::kHeadline),
            (std::vector<harness::FsKind>{harness::FsKind::kExt4}));
  MatrixOptions o;
  o.preset = Preset::kControls;
  o.fs = PresetDefaultFs(Preset::kControls);
  auto plan = PlanMatrix(o);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->size(), 28u);
  std::vector<std::string> names;
  for (const auto& c : *plan) {
    names.push_back(c.Name());
    EXPECT_EQ(c.count, kControlsCount) << c.Name();
  }
  for (const char* name :
       {"xlog-append/fdatasync/ext4", "xlog/odsync/xfs", "xlog/direct/ext4",
        "xlog-append/ackfirst/xfs", "xlog-append/none/ext4", "xlog-append/sync_file_range/xfs",
        "wal/io_uring/ext4", "wal/direct_dsync/xfs", "rocksdb/sync/ext4", "sqlite-wal/full/xfs"}) {
    EXPECT_THAT(names, ::testing::Contains(std::string(name)));
  }
  auto ackfirst = LookupBuiltin("xlog-append", "ackfirst");
  ASSERT_TRUE(ackfirst.ok());
  EXPECT_EQ(ackfirst->run_args, "--barrier fdatasync --append --ack-first");
  EXPECT_FALSE(LookupBuiltin("xlog", "ackfirst").ok());  // an append variant only
  o.count = 3;
  o.fs = {harness::FsKind::kBtrfs};
  plan = PlanMatrix(o);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->size(), 14u);
  EXPECT_EQ(plan->front().count, 3u);
}

// A deterministic stand-in for the VM: the outcome follows from the cell's name, so a sharded
// and an unsharded matrix must agree cell by cell.
RunOutcome FakeCell(const MatrixCell& c, const RunOptions& r) {
  RunOutcome out;
  if (c.setting == "io_uring") {
    out.error_kind = product::RunError::kWorkloadExit;
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

MatrixReport RunFake(const std::string& shard, MatrixOptions o = {}) {
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

// RunMatrix counts its cells' recordings: the last one done, and only it, is told so whatever
// order the cells overlap in (the VM runner then hands the recording guest to the checks once);
// the checking guests a runner reports reach the report, and merged shards add theirs up.
TEST(Merge, TheLastRecordingIsToldSoAndCheckGuestsAddUpAcrossShards) {
  auto run = [](const std::string& shard, int* lasts) {
    MatrixOptions o;
    o.workloads = {"xlog"};
    o.workload_binary = "/bin/powercut-workload";
    o.progress = false;
    o.cells_in_flight = 3;
    o.shard = *ParseShard(shard);
    std::atomic<int> told{0};
    auto r = RunMatrix(o, [&told](const MatrixCell& c, const RunOptions& options) {
      const bool last = options.recording_done && options.recording_done();
      told += last ? 1 : 0;
      RunOutcome out = FakeCell(c, options);
      out.check_guests_booted = 1;
      out.check_guests_adopted = last ? 1 : 0;
      return out;
    });
    *lasts = told.load();
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : MatrixReport{};
  };
  int lasts = 0;
  const MatrixReport all = run("1/1", &lasts);
  EXPECT_EQ(all.cells.size(), 9u);
  EXPECT_EQ(lasts, 1);
  EXPECT_EQ(all.check_guests_booted, 1u);
  EXPECT_EQ(all.check_guests_adopted, 1u);
  EXPECT_THAT(HeadlineTable(all), HasSubstr("checking guests: 1 booted, 1 taken over"));
  std::vector<MatrixReport> shards;
  for (const char* s : {"1/2", "2/2"}) {
    auto back = MatrixFromJson(nlohmann::json::parse(MatrixToJson(run(s, &lasts)).dump()));
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(lasts, 1) << s;
    EXPECT_EQ(back->check_guests_adopted, 1u) << s;
    shards.push_back(*back);
  }
  auto merged = MergeReports(shards);
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_EQ(merged->check_guests_booted, 2u);
  EXPECT_EQ(merged->check_guests_adopted, 2u);
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
  auto models = harness::ParseCacheModels("all", "16");
  ASSERT_TRUE(models.ok());
  EXPECT_EQ(models->size(), 3u);
  auto bad = harness::ParseCacheModels("off,sometimes", "16");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("--cache"));
  auto points = harness::ParsePointSelection("acks,flushes");
  ASSERT_TRUE(points.ok());
  EXPECT_TRUE(points->acks && points->flushes && !points->every_entry);
  auto sample = harness::ParsePointSelection("25");
  ASSERT_TRUE(sample.ok());
  EXPECT_EQ(sample->sample, 25u);
  EXPECT_FALSE(harness::ParsePointSelection("whenever").ok());
  auto states = ParseStates("8");
  ASSERT_TRUE(states.ok());
  EXPECT_EQ(states->Options().max_exhaustive, 3u);
  EXPECT_EQ(states->Options().samples, 8u);
  EXPECT_EQ(ParseStates("exhaustive")->Options().max_exhaustive, 16u);
  EXPECT_FALSE(ParseStates("0").ok());
  EXPECT_FALSE(ParseStates("many").ok());
  EXPECT_FALSE(ParseStates("8x").ok());
  EXPECT_FALSE(ParseStates("1234567890").ok());
  EXPECT_FALSE(ParseRecorder("tcpdump").ok());
}

// The replay's four flags are parsed once at the edge; what a report or a rebuild command spells
// back reads back to the same choice.
TEST(Options, TheReplayChoiceReadsBackFromItsSpelling) {
  auto defaults = ParseReplayChoice("", "16", kDefaultPoints, kDefaultStates);
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  EXPECT_EQ(*defaults, ReplayChoice{});  // the typed defaults are the flags' defaults
  for (const auto& [cache, window, points, states] : std::vector<std::array<std::string, 4>>{
           {"all", "16", "acks", "8"},
           {"off,lying", "64KiB", "every,flushes", "exhaustive"},
           {"on,ly4096b,lying", "3", "acks,25", "100"},
           {"lying", "16e", "entry,sample:5", "1"}}) {
    auto choice = ParseReplayChoice(cache, window, points, states);
    ASSERT_TRUE(choice.ok()) << choice.status();
    auto back =
        ParseReplayChoice(harness::CacheListName(choice->models), "16",
                          harness::PointSelectionName(choice->points), choice->states.Name());
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, *choice) << cache << " " << window << " " << points << " " << states;
  }
  EXPECT_EQ(harness::CacheListName(ParseReplayChoice("all", "16", "acks", "8")->models),
            "off,on,lying");
  EXPECT_EQ(harness::CacheListName(ParseReplayChoice("off,lying", "64KiB", "acks", "8")->models),
            "off,ly65536b");
  EXPECT_EQ(harness::PointSelectionName(*harness::ParsePointSelection("sample:5,ack,entry")),
            "every,acks,5");
  // Each flag keeps its own message; no --cache still checks --window.
  EXPECT_THAT(ParseReplayChoice("", "16parsecs", "acks", "8").status().message(),
              HasSubstr("--window"));
  EXPECT_THAT(ParseReplayChoice("off", "16", "acks", "lots").status().message(),
              HasSubstr("--states lots"));
}

TEST(Options, OneVocabularyPerFlag) {
  auto points = harness::ParsePointSelection("bogus");
  ASSERT_FALSE(points.ok());
  EXPECT_EQ(points.status().message(),
            "--points bogus: \"bogus\" is not a crash-point choice: every, acks, flushes or N (a "
            "seeded sample of N entry points), comma-separated");
  EXPECT_TRUE(harness::ParsePointSelection("every,25")->every_entry);
  EXPECT_EQ(harness::ParsePointSelection("entry,sample:5")->sample,
            5u);  // `check`'s older spellings
  EXPECT_FALSE(harness::ParsePointSelection("0").ok());
  EXPECT_FALSE(harness::ParsePointSelection("").ok());
  auto cache = harness::ParseCacheModels("off,sometimes", "16");
  ASSERT_FALSE(cache.ok());
  EXPECT_EQ(cache.status().message(),
            "--cache off,sometimes: \"sometimes\" is not a cache model: off, on, lying or all "
            "(comma-separated)");
  // The window is checked even when lying is not among the models.
  EXPECT_FALSE(harness::ParseCacheModels("off", "16parsecs").ok());
  EXPECT_THAT(harness::ParseCacheModels("off", "16parsecs").status().message(),
              HasSubstr("--window"));
  EXPECT_TRUE(ValidateAtomicUnit(4096).ok());
  EXPECT_TRUE(ValidateAtomicUnit(0).ok());
  EXPECT_THAT(ValidateAtomicUnit(1000).message(), HasSubstr("--atomic 1000: expected 512 or 4096"));
  RunOptions o;
  o.checker = "c";
  o.fs = {};  // names are parsed at the edge (harness::ParseFsKinds); none at all is refused
  EXPECT_THAT(ValidateRunOptions(o).message(), HasSubstr("--fs"));
  o.fs = {harness::FsKind::kRaw};
  o.fsck = true;
  EXPECT_THAT(ValidateRunOptions(o).message(), HasSubstr("--fsck"));
  MatrixOptions m;
  m.atomic_unit = 1000;
  EXPECT_THAT(PlanMatrix(m).status().message(), HasSubstr("--atomic 1000"));
}

TEST(Expect, ParsesRunsExpectFlag) {
  auto e = ParseExpect("off=survives,on=survives,lying=loses",
                       {ModelKind::kOff, ModelKind::kOn, ModelKind::kLying});
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->For(ModelKind::kLying), ExpectedVerdict::kLoses);
  EXPECT_EQ(e->For(ModelKind::kOn), ExpectedVerdict::kSurvives);
  EXPECT_TRUE(ParseExpect("on=may-lose", {ModelKind::kOn}).ok());
  EXPECT_TRUE(ParseExpect("live=loses", {ModelKind::kLive}).ok());
  for (const char* bad : {"off=survives", "off=survives,on=maybe", "off", "sideways=loses,on=loses",
                          "off=survives,on=loses,off=loses", "off=survives,on=loses,lying=loses"}) {
    auto r = ParseExpect(bad, {ModelKind::kOff, ModelKind::kOn});
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_THAT(r.status().message(), HasSubstr(std::string("--expect ") + bad));
  }
}

TEST(Expect, ARunWithoutExpectationsIsNotJudged) {
  CellResult c{.name = "run/ext4", .workload = "run", .setting = "-", .fs = "ext4", .ran = true};
  c.models = {
      {.cache = "off", .kind = ModelKind::kOff, .states = 4, .violations = 2, .lost_acks_max = 1}};
  c.judged = false;
  EXPECT_TRUE(c.AsExpected(c.models[0]));
  EXPECT_EQ(c.Unexpected(), "");
  MatrixReport r;
  r.cells = {c};
  std::string html = HtmlReport(r, "powercut run");
  EXPECT_EQ(html.find("UNEXPECTED"), std::string::npos);
  EXPECT_EQ(html.find("expected survives"), std::string::npos);
  EXPECT_THAT(html, HasSubstr("violations (no expectation given)"));
  nlohmann::json j = CellToJson(c);
  EXPECT_TRUE(j["expect"].is_null());
  auto back = CellFromJson(j);
  ASSERT_TRUE(back.ok());
  EXPECT_FALSE(back->judged);
  RunOutcome failing;
  failing.ran = true;
  failing.report = harness::CheckReport{};
  failing.report->results.push_back({.violations = 2});
  EXPECT_EQ(RunExitCode(failing, c), 1);  // no expectation: the raw rule
  c.judged = true;
  c.expect.models = {{ModelKind::kOff, ExpectedVerdict::kLoses}};
  EXPECT_EQ(RunExitCode(failing, c), 0);  // --expect off=loses
  c.expect.models = {{ModelKind::kOff, ExpectedVerdict::kSurvives}};
  EXPECT_EQ(RunExitCode(failing, c), 1);
}

// The engine's coverage travels with the cell: a FAIL that stopped at its first violation reads
// "NofM*" with its loss marked as a lower bound ("≥1"), a pass the budget cut short is
// incomplete (matching only may-lose), and both survive the JSON round trip that `powercut
// merge` relies on; a model that checked every state shows its loss without the mark.
TEST(Expect, EarlyStopsAndIncompletePassesAreShownAndKeptByMerge) {
  CellResult c{
      .name = "xlog/none/ext4", .workload = "xlog", .setting = "none", .fs = "ext4", .ran = true};
  c.models = {{.cache = "off",
               .kind = ModelKind::kOff,
               .states = 3,
               .violations = 1,
               .lost_acks_max = 1,
               .states_planned = 40,
               .stopped = "first_violation"},
              {.cache = "on",
               .kind = ModelKind::kOn,
               .states = 7,
               .states_planned = 90,
               .stopped = "budget"}};
  c.expect.models = {{ModelKind::kOff, ExpectedVerdict::kLoses},
                     {ModelKind::kOn, ExpectedVerdict::kSurvives}};
  EXPECT_TRUE(c.models[0].complete());
  EXPECT_FALSE(c.models[1].complete());
  EXPECT_TRUE(c.AsExpected(c.models[0]));
  EXPECT_FALSE(c.AsExpected(c.models[1]));
  EXPECT_THAT(c.Unexpected(), HasSubstr("no violation in 7 of 90 states before the budget"));
  c.expect.models[ModelKind::kOn] = ExpectedVerdict::kMayLose;
  EXPECT_TRUE(c.AsExpected(c.models[1]));
  c.expect.models[ModelKind::kOn] = ExpectedVerdict::kSurvives;
  MatrixReport r;
  r.cells = {c};
  std::string table = HeadlineTable(r);
  EXPECT_THAT(table, HasSubstr("FAIL ≥1/3of40*/1"));
  EXPECT_THAT(table, HasSubstr("incomplete ≥0/7of90~/0"));
  EXPECT_THAT(table, HasSubstr("NofM*: "));
  EXPECT_THAT(table, HasSubstr("NofM~: "));
  EXPECT_THAT(table, HasSubstr("≥L: the largest loss among the states checked"));
  const std::string html = HtmlReport(r, "m");
  EXPECT_THAT(html, HasSubstr("incomplete: budget ran out after 7 of 90 states"));
  EXPECT_THAT(html, HasSubstr("FAIL ≥1 / 3of40* / 1"));
  EXPECT_THAT(html, HasSubstr("&ge;1 acks lost is a lower bound"));
  const std::string junit = MatrixJunit(r);
  EXPECT_THAT(junit, HasSubstr("worst state loses ≥1 acks (a lower bound: 3 of 40 planned "
                               "states checked, the worst first)"));
  nlohmann::json j = CellToJson(c);
  EXPECT_EQ(j["results"][0]["lost_acks_max_exact"], false);
  EXPECT_EQ(j["results"][0]["stopped"], "first_violation");
  EXPECT_EQ(j["results"][0]["states_unchecked"], 37);
  EXPECT_EQ(j["results"][1]["complete"], false);
  auto back = CellFromJson(j);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->models[0].states_planned, 40u);
  EXPECT_EQ(back->models[0].stopped, "first_violation");
  EXPECT_EQ(back->models[1].stopped, "budget");
  EXPECT_FALSE(back->models[1].complete());
  // A report from before the early stop has no states_planned: it judged every state it planned.
  j["results"][1].erase("states_planned");
  j["results"][1].erase("stopped");
  auto old = CellFromJson(j);
  ASSERT_TRUE(old.ok());
  EXPECT_TRUE(old->models[1].complete());
  // Every state judged (--exhaustive): the worst case itself, no mark.
  c.models[0].states = 40;
  c.models[0].lost_acks_max = 16;
  c.models[0].stopped = "";
  r.cells = {c};
  EXPECT_THAT(HeadlineTable(r), HasSubstr("FAIL 16/40/1"));
  EXPECT_EQ(CellToJson(c)["results"][0]["lost_acks_max_exact"], true);
  EXPECT_THAT(MatrixJunit(r), HasSubstr("worst state loses 16 acks\n"));
}

TEST(Expect, StatesThatCouldNotBeCheckedAreShownNotPassed) {
  RunOutcome out;
  out.ran = true;
  out.report = harness::CheckReport{};
  harness::ModelResult m{.model = *harness::ParseCacheModel("on"), .states = 9};
  m.could_not_check = 3;
  m.first_could_not_check = harness::Verdict{.could_not_check = "line 1: \"hello\""};
  out.report->results.push_back(m);
  EXPECT_FALSE(out.passed());
  EXPECT_EQ(out.exit_code(), 2);
  CellResult cell{.name = "c/s/ext4", .workload = "c", .setting = "s", .fs = "ext4"};
  FillCell(out, &cell);
  EXPECT_THAT(cell.notes,
              ::testing::Contains("cache on: 3 states could not be checked: line 1: \"hello\""));
  MatrixReport r;
  r.cells = {cell};
  EXPECT_THAT(HeadlineTable(r), HasSubstr("pass 0/9/0 ?3"));
}

// Issue 14: a checker whose server cannot recover an image is a violation with the server's log
// quoted. The tally counts such states apart from mere losses, the cell keeps the first one's
// stderr (bounded), the JSON round trip keeps it and the table and HTML show it.
TEST(Expect, AFailedCheckerKeepsItsStderrInTheCell) {
  RunOutcome out;
  out.ran = true;
  out.report = harness::CheckReport{};
  harness::ModelResult m{.model = *harness::ParseCacheModel("off")};
  absl::flat_hash_set<Hash128> images;
  harness::StateTally tally(&m, 4, /*stop_at_violation=*/false, /*min_states=*/0, &images);
  // A loss (the checker ran fine), a server that did not start, a file system that did not come
  // back (not the checker's failure), then a second server failure.
  tally.Add(0, Hash128{1, 0}, harness::Verdict{.state_id = "s0", .lost = {"1"}});
  const std::string log = std::string(3000, 'x') + "\nFATAL: <invalid> checkpoint record & more";
  tally.Add(
      1, Hash128{2, 0},
      harness::Verdict{.state_id = "s1", .recovered = false, .exit_code = 1, .stderr_tail = log});
  tally.Add(2, Hash128{3, 0},
            harness::Verdict{.state_id = "s2", .recovered = false, .fs_unrecoverable = true});
  tally.Add(3, Hash128{4, 0},
            harness::Verdict{
                .state_id = "s3", .recovered = false, .exit_code = 1, .stderr_tail = "second"});
  EXPECT_EQ(m.violations, 3u);
  EXPECT_EQ(m.checker_failures, 2u);
  ASSERT_TRUE(m.first_checker_failure.has_value());
  EXPECT_EQ(m.first_checker_failure->state_id, "s1");
  out.report->results.push_back(m);

  CellResult cell{.name = "db/s/ext4", .workload = "db", .setting = "s", .fs = "ext4"};
  FillCell(out, &cell);
  ASSERT_EQ(cell.models.size(), 1u);
  const CellModel& model = cell.models[0];
  EXPECT_EQ(model.checker_failures, 2u);
  EXPECT_EQ(model.first_checker_failure, "s1");
  EXPECT_EQ(model.checker_stderr.size(), kCheckerStderrBytes);
  EXPECT_THAT(model.checker_stderr, ::testing::EndsWith("checkpoint record & more"));

  auto back = CellFromJson(CellToJson(cell));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->models[0].checker_failures, 2u);
  EXPECT_EQ(back->models[0].first_checker_failure, "s1");
  EXPECT_EQ(back->models[0].checker_stderr, model.checker_stderr);

  MatrixReport r;
  r.cells = {*back};
  EXPECT_THAT(HeadlineTable(r), HasSubstr(" chk!2"));
  EXPECT_THAT(HeadlineTable(r), HasSubstr("chk!N: "));
  const std::string html = HtmlReport(r, "m");
  EXPECT_THAT(html, HasSubstr("checker failed in 2 states"));
  EXPECT_THAT(html, HasSubstr("FATAL: &lt;invalid&gt; checkpoint record &amp; more"));
  EXPECT_THAT(harness::ReportToJson(
                  *out.report)["results"][0]["first_checker_failure"]["checker_stderr_tail"],
              log);
}

// A system that did not come back (docs/cluster.md): the tally counts it apart from violations,
// the cell keeps the first one's summary and its checker's stderr (each node's last log lines),
// the JSON round trip `powercut merge` relies on keeps them, a merge of two shards adds nothing
// and loses nothing, and the table, its legend, JUnit and HTML show them, never as a failure.
TEST(Expect, AnUnavailableSystemIsKeptApartThroughCellsAndMerge) {
  RunOutcome out;
  out.ran = true;
  out.report = harness::CheckReport{};
  harness::ModelResult m{.model = *harness::ParseCacheModel("off")};
  absl::flat_hash_set<Hash128> images;
  harness::StateTally tally(&m, 4, /*stop_at_violation=*/false, /*min_states=*/0, &images);
  const std::string logs =
      "--- node 2 (127.0.0.12), exited with status 2: last lines\npanic: wal <crc>";
  tally.Add(0, Hash128{1, 0}, harness::Verdict{.state_id = "s0"});
  tally.Add(1, Hash128{2, 0},
            harness::Verdict{.state_id = "s1",
                             .recovered = false,
                             .exit_code = 1,
                             .stderr_tail = logs,
                             .rebuild = "powercut state materialize --state s1",
                             .unavailable = "the cluster did not come back: no quorum answered"});
  tally.Add(2, Hash128{3, 0},
            harness::Verdict{.state_id = "s2",
                             .recovered = false,
                             .timed_out = true,
                             .unavailable = "the cluster did not come back: timed out"});
  EXPECT_EQ(m.violations, 0u);
  EXPECT_EQ(m.checker_failures, 0u);
  EXPECT_EQ(m.unavailable, 2u);
  ASSERT_TRUE(m.first_unavailable.has_value());
  EXPECT_EQ(m.first_unavailable->state_id, "s1");
  out.report->results.push_back(m);
  EXPECT_EQ(out.exit_code(), 0);  // the system's outcome: not exit 1, and s0 was judged
  EXPECT_EQ(out.report->NeverCameBack(), nullptr);

  CellResult cell{.name = "etcd/3/ext4", .workload = "etcd", .setting = "3", .fs = "ext4"};
  FillCell(out, &cell);
  cell.ran = true;
  ASSERT_EQ(cell.models.size(), 1u);
  EXPECT_EQ(cell.models[0].unavailable, 2u);
  EXPECT_EQ(cell.models[0].first_unavailable, "s1");
  EXPECT_THAT(cell.models[0].unavailable_summary, HasSubstr("unavailable: the cluster did not"));
  EXPECT_THAT(cell.models[0].unavailable_summary, HasSubstr("--state s1"));
  EXPECT_EQ(cell.models[0].unavailable_stderr, logs);
  EXPECT_FALSE(cell.failed());

  nlohmann::json j = CellToJson(cell);
  EXPECT_EQ(j["results"][0]["unavailable"], 2);
  EXPECT_EQ(j["results"][0]["first_unavailable"], "s1");
  auto back = CellFromJson(j);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->models[0].unavailable, 2u);
  EXPECT_EQ(back->models[0].first_unavailable, "s1");
  EXPECT_EQ(back->models[0].unavailable_summary, cell.models[0].unavailable_summary);
  EXPECT_EQ(back->models[0].unavailable_stderr, logs);
  // A report from before the outcome existed reads as none.
  j["results"][0].erase("unavailable");
  j["results"][0].erase("first_unavailable");
  auto old = CellFromJson(j);
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_EQ(old->models[0].unavailable, 0u);

  // Two shards, each one cell, through JSON as `powercut merge` reads them.
  CellResult other = *back;
  other.name = "etcd/3/xfs";
  other.fs = "xfs";
  other.index = 1;
  std::vector<MatrixReport> shards(2);
  shards[0].cells = {*back};
  shards[1].cells = {other};
  for (size_t s = 0; s < shards.size(); ++s) {
    shards[s].shard = fmt::format("{}/2", s + 1);
    shards[s].plan_cells = 2;
    auto read = MatrixFromJson(nlohmann::json::parse(MatrixToJson(shards[s]).dump()));
    ASSERT_TRUE(read.ok()) << read.status();
    shards[s] = *read;
  }
  auto merged = MergeReports(shards);
  ASSERT_TRUE(merged.ok()) << merged.status();
  ASSERT_EQ(merged->cells.size(), 2u);
  for (const CellResult& c : merged->cells) {
    EXPECT_EQ(c.models[0].unavailable, 2u) << c.name;
    EXPECT_EQ(c.models[0].unavailable_stderr, logs) << c.name;
  }
  EXPECT_EQ(MatrixExitCode(*merged), 0);
  const std::string table = HeadlineTable(*merged);
  EXPECT_THAT(table, HasSubstr("pass 0/3/0 down2"));
  EXPECT_THAT(table, HasSubstr("downN: N crash states the system did not come back on"));
  const std::string junit = MatrixJunit(*merged);
  EXPECT_THAT(junit, HasSubstr("cache=off unavailable"));
  EXPECT_THAT(junit, HasSubstr("<skipped message=\"the system did not come back in 2 of 3"));
  EXPECT_THAT(junit, ::testing::Not(HasSubstr("<failure")));
  const std::string html = HtmlReport(*merged, "m");
  EXPECT_THAT(html, HasSubstr("unavailable in 2 states"));
  EXPECT_THAT(html, HasSubstr("panic: wal &lt;crc&gt;"));
}

// Where stderr is not a terminal (a CI log), whole lines at the interval and never a carriage
// return: a long check is not a silent wait, and the log stays readable.
TEST(Progress, WithoutATerminalPrintsWholeLinesAtTheInterval) {
  char path[] = "/tmp/powercut-progress-XXXXXX";
  int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  int saved = ::dup(STDERR_FILENO);
  ::fflush(stderr);
  ::dup2(fd, STDERR_FILENO);
  {
    Progress every_time("check", 0, true, std::chrono::milliseconds(0));
    every_time.UpdateStates(1, 4);
    every_time.UpdateStates(2, 4);
    Progress rarely("quiet-ish", 0, true, std::chrono::hours(1));
    rarely.UpdateStates(1, 4);
    rarely.UpdateStates(4, 4);  // the last state is not forced out in a log
    Progress off("off", 0, false, std::chrono::milliseconds(0));
    off.UpdateStates(1, 4);
  }
  ::fflush(stderr);
  ::dup2(saved, STDERR_FILENO);
  ::close(saved);
  std::string text(4096, '\0');
  ssize_t n = ::pread(fd, text.data(), text.size(), 0);
  ::close(fd);
  ::unlink(path);
  text.resize(n > 0 ? static_cast<size_t>(n) : 0);
  EXPECT_EQ(text.find('\r'), std::string::npos) << text;
  EXPECT_THAT(text, HasSubstr("check states 1/4"));
  EXPECT_THAT(text, HasSubstr("check states 2/4"));
  EXPECT_EQ(text.find("quiet-ish"), std::string::npos) << text;
  EXPECT_EQ(text.find("off"), std::string::npos) << text;
}

TEST(Progress, FormatsRateAndEta) {
  EXPECT_EQ(Progress::Format(5, 10, 10.0), "5/10, 0.50/s, ETA 00:10");
  EXPECT_EQ(Progress::Format(0, 10, 0.0), "0/10, 0.00/s, ETA --:--");
  EXPECT_EQ(Progress::Format(90, 1000, 30.0), "90/1000, 3.00/s, ETA 05:03");
  EXPECT_EQ(Progress::Format(10, 10, 4.0), "10/10, 2.50/s, ETA 00:00");
}

TEST(Progress, TheLineHasCellsAndTheStatesOfTheCurrentCell) {
  EXPECT_EQ(Progress::Line("matrix: cells", 2, 10, 100.0, "running xlog/none/ext4", 30, 120, 10.0),
            "matrix: cells 2/10, 0.02/s, ETA 06:40 running xlog/none/ext4; states 30/120, "
            "3.00/s, ETA 00:30");
  // While the VM records (no states yet) only the cells.
  EXPECT_EQ(Progress::Line("matrix: cells", 0, 3, 5.0, "running a", 0, 0, 0.0),
            "matrix: cells 0/3, 0.00/s, ETA --:-- running a");
  // One `powercut run`: no items, only its states.
  EXPECT_EQ(Progress::Line("powercut run: checking", 0, 0, 1.0, "", 4, 8, 2.0),
            "powercut run: checking states 4/8, 2.00/s, ETA 00:02");
  // Not a terminal (the test's stderr): nothing is printed, and updates from threads are safe.
  Progress p("x", 1, true);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&p] {
      for (uint64_t i = 1; i <= 1000; ++i) p.UpdateStates(i, 1000);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_TRUE(p.enabled());  // also without a terminal: then a line every 30 s (issue 12)
}

// What FakeCell does, written as the catalog would say it.
std::map<std::string, CellExpect> FakeExpectations() {
  std::map<std::string, CellExpect> e;
  const std::vector<std::string> settings = *BuiltinSettings("xlog");
  for (const std::string& s : settings) {
    CellExpect x{.models = {{ModelKind::kOff, ExpectedVerdict::kSurvives},
                            {ModelKind::kOn, ExpectedVerdict::kSurvives},
                            {ModelKind::kLying, ExpectedVerdict::kLoses}}};
    if (s == "none") {
      x.models = {{ModelKind::kOff, ExpectedVerdict::kLoses},
                  {ModelKind::kOn, ExpectedVerdict::kLoses},
                  {ModelKind::kLying, ExpectedVerdict::kLoses}};
    }
    if (s == "direct") x.models[ModelKind::kOn] = ExpectedVerdict::kLoses;
    if (s == "io_uring") x.error = RunError::kWorkloadExit;
    e["xlog-" + s] = x;
  }
  return e;
}

TEST(Expect, VerdictMatchesEachExpectation) {
  EXPECT_TRUE(VerdictMatches(ExpectedVerdict::kSurvives, 0));
  EXPECT_FALSE(VerdictMatches(ExpectedVerdict::kSurvives, 1));
  EXPECT_TRUE(VerdictMatches(ExpectedVerdict::kLoses, 3));
  EXPECT_FALSE(VerdictMatches(ExpectedVerdict::kLoses, 0));
  EXPECT_TRUE(VerdictMatches(ExpectedVerdict::kMayLose, 0));
  EXPECT_TRUE(VerdictMatches(ExpectedVerdict::kMayLose, 5));
  CellExpect none;
  EXPECT_EQ(none.For(ModelKind::kOn), ExpectedVerdict::kSurvives);  // no expectation: raw rule
  EXPECT_EQ(none.For(std::nullopt), ExpectedVerdict::kSurvives);    // disks of mixed models
}

TEST(Expect, EveryCellAsExpectedExitsZeroEvenWithViolations) {
  MatrixOptions o;
  o.expectations = FakeExpectations();
  MatrixReport r = RunFake("1/1", o);
  ASSERT_EQ(r.cells.size(), 9u);
  size_t violating = 0;
  for (const CellResult& c : r.cells) {
    EXPECT_EQ(c.Verdict(), CellVerdict::kOk) << c.name << ": " << c.Unexpected();
    violating += c.failed();
  }
  EXPECT_EQ(violating, 8u);  // every ran cell loses acks under lying, yet all are as expected
  EXPECT_EQ(MatrixExitCode(r), 0);
  std::string table = HeadlineTable(r);
  EXPECT_THAT(table, HasSubstr("9 cells: 9 as expected, 0 unexpected, 0 could not run"));
  EXPECT_THAT(table, HasSubstr("as expected: could not run (workload-exit)"));
  EXPECT_EQ(table.find("UNEXPECTED"), std::string::npos);
  std::string junit = MatrixJunit(r);
  EXPECT_THAT(junit, HasSubstr("failures=\"0\" errors=\"0\""));
  EXPECT_THAT(junit, HasSubstr("as expected: expected loses"));
  // The verdicts survive JSON (merge reads shards back).
  auto back = MatrixFromJson(nlohmann::json::parse(MatrixToJson(r).dump()));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(MatrixExitCode(*back), 0);
  EXPECT_EQ(MatrixToJson(r)["cells"][0]["verdict"], "ok");
  EXPECT_EQ(MatrixToJson(r)["cells"][0]["results"][2]["expect"], "loses");
  EXPECT_EQ(MatrixToJson(r)["cells"][0]["results"][2]["as_expected"], true);
}

TEST(Expect, AWrongExpectationExitsOne) {
  MatrixOptions o;
  o.expectations = FakeExpectations();
  o.expectations["xlog-fdatasync"].models[ModelKind::kLying] =
      ExpectedVerdict::kSurvives;  // deliberately wrong
  MatrixReport r = RunFake("1/1", o);
  EXPECT_EQ(MatrixExitCode(r), 1);
  const CellResult& fdatasync = r.cells[0];
  ASSERT_EQ(fdatasync.name, "xlog/fdatasync/ext4");
  EXPECT_EQ(fdatasync.Verdict(), CellVerdict::kUnexpected);
  EXPECT_EQ(fdatasync.Unexpected(), "cache lying: expected survives, got 2 violating states");
  std::string table = HeadlineTable(r);
  EXPECT_THAT(table, HasSubstr("FAIL 1/57/2 !"));
  EXPECT_THAT(table, HasSubstr("UNEXPECTED: cache lying: expected survives"));
  EXPECT_THAT(table, HasSubstr("9 cells: 8 as expected, 1 unexpected"));
  EXPECT_THAT(MatrixJunit(r), HasSubstr("failures=\"1\" errors=\"0\""));
  EXPECT_EQ(MatrixToJson(r)["cells"][0]["verdict"], "unexpected");

  // A cell expected to lose that survives is as unexpected.
  o.expectations = FakeExpectations();
  o.expectations["xlog-fsync"].models[ModelKind::kOff] = ExpectedVerdict::kLoses;
  EXPECT_EQ(MatrixExitCode(RunFake("1/1", o)), 1);

  // An error of another kind than the expected one, and a run where an error was expected.
  o.expectations = FakeExpectations();
  o.expectations["xlog-io_uring"].error = RunError::kTimeout;
  o.expectations["xlog-none"].error = RunError::kNoAcks;
  r = RunFake("1/1", o);
  EXPECT_EQ(MatrixExitCode(r), 1);
  for (const CellResult& c : r.cells) {
    if (c.setting == "io_uring") {
      EXPECT_EQ(c.Unexpected(), "expected error timeout, got error workload-exit");
    }
    if (c.setting == "none") {
      EXPECT_EQ(c.Unexpected(), "expected error no-acks, but the cell ran");
    }
  }
}

TEST(Expect, NoExpectIsTheRawViolationRuleAndMissingExpectationsSurvive) {
  MatrixOptions o;
  o.expectations = FakeExpectations();
  o.expect = false;
  MatrixReport r = RunFake("1/1", o);
  EXPECT_EQ(MatrixExitCode(r), 1);
  EXPECT_EQ(r.cells[0].Verdict(), CellVerdict::kUnexpected);  // lying violations, no expectation
  EXPECT_EQ(MatrixToJson(r)["parameters"]["expect"], false);
  // Nothing claims an expectation (issue 34): the failure is named, "FAIL", not "UNEXPECTED:
  // ... expected survives"; the same after a round trip through the JSON (merge, repro).
  EXPECT_EQ(r.cells[0].Unexpected(), "cache lying: 2 violating states");
  EXPECT_EQ(MatrixToJson(r)["cells"][0]["results"][2]["expect"], nullptr);
  auto back = MatrixFromJson(MatrixToJson(r));
  ASSERT_TRUE(back.ok()) << back.status();
  for (const MatrixReport& report : {r, *back}) {
    const std::string table = HeadlineTable(report);
    EXPECT_THAT(table, HasSubstr("FAIL: cache lying: 2 violating states"));
    EXPECT_THAT(table, ::testing::Not(HasSubstr("UNEXPECTED")));
    EXPECT_THAT(table, ::testing::Not(HasSubstr("expected survives")));
    EXPECT_THAT(table, HasSubstr(" s (--no-expect: any violation fails)\n"));
    EXPECT_THAT(MatrixJunit(report), ::testing::Not(HasSubstr("expected survives")));
    EXPECT_THAT(MatrixJunit(report), HasSubstr("any violation fails (--no-expect)"));
    EXPECT_THAT(HtmlReport(report, "t"), ::testing::Not(HasSubstr("expected survives")));
    EXPECT_THAT(HtmlReport(report, "t"), HasSubstr("FAIL: cache lying: 2 violating states"));
  }

  // Only errors (no expectation for them): exit 2.
  MatrixOptions errors;
  errors.barriers = {"io_uring"};
  errors.expectations = FakeExpectations();
  errors.expectations.erase("xlog-io_uring");
  r = RunFake("1/1", errors);
  ASSERT_EQ(r.cells.size(), 1u);
  EXPECT_EQ(r.cells[0].Verdict(), CellVerdict::kError);
  EXPECT_EQ(MatrixExitCode(r), 2);
  EXPECT_THAT(r.cells[0].notes, ::testing::Contains(HasSubstr("no expected verdict")));
}

TEST(Expect, ParsesTheCatalogOfPowercutWorkloadList) {
  auto e = ParseBuiltinExpectations(
      R"([{"name": "xlog-none", "expect": {"off": "loses", "on": "loses", "lying": "loses",
           "process_crash": "survives"}},
          {"name": "sqlite-delete-full", "expect": {"off": "may-lose", "on": "may-lose",
           "lying": "loses"}}])",
      "test");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->at("xlog-none").For(ModelKind::kOff), ExpectedVerdict::kLoses);
  EXPECT_EQ(e->at("sqlite-delete-full").For(ModelKind::kOn), ExpectedVerdict::kMayLose);
  auto by_fs = ParseBuiltinExpectations(
      R"([{"name": "xlog-direct", "expect": {"off": "survives", "on": "loses"},
           "expect_by_fs": {"btrfs": {"off": "loses"}}}])",
      "test");
  ASSERT_TRUE(by_fs.ok()) << by_fs.status();
  EXPECT_EQ(by_fs->at("xlog-direct").ForFs(harness::FsKind::kExt4).For(ModelKind::kOff),
            ExpectedVerdict::kSurvives);
  EXPECT_EQ(by_fs->at("xlog-direct").ForFs(harness::FsKind::kBtrfs).For(ModelKind::kOff),
            ExpectedVerdict::kLoses);
  EXPECT_EQ(by_fs->at("xlog-direct").ForFs(harness::FsKind::kBtrfs).For(ModelKind::kOn),
            ExpectedVerdict::kLoses);
  // `powercut-workload list --json` keys a difference by a property of the file-system table,
  // applied to every row that has it; an unknown property or file system is an error.
  auto where = ParseBuiltinExpectations(
      R"([{"name": "xlog-direct_dsync", "expect": {"off": "survives", "on": "survives"},
           "expect_where": {"direct_dsync_overwrite_may_skip_flush": {"on": "may-lose"},
                            "overwrites_out_of_place": {"off": "loses"}}}])",
      "test");
  ASSERT_TRUE(where.ok()) << where.status();
  EXPECT_EQ(where->at("xlog-direct_dsync").ForFs(harness::FsKind::kF2fs).For(ModelKind::kOn),
            ExpectedVerdict::kMayLose);
  EXPECT_EQ(where->at("xlog-direct_dsync").ForFs(harness::FsKind::kF2fs).For(ModelKind::kOff),
            ExpectedVerdict::kSurvives);
  EXPECT_EQ(where->at("xlog-direct_dsync").ForFs(harness::FsKind::kBtrfs).For(ModelKind::kOff),
            ExpectedVerdict::kLoses);
  EXPECT_EQ(where->at("xlog-direct_dsync").ForFs(harness::FsKind::kExt4).For(ModelKind::kOn),
            ExpectedVerdict::kSurvives);
  EXPECT_FALSE(
      ParseBuiltinExpectations(
          R"([{"name": "x", "expect": {}, "expect_where": {"is_fast": {"on": "loses"}}}])", "test")
          .ok());
  EXPECT_FALSE(
      ParseBuiltinExpectations(
          R"([{"name": "x", "expect": {}, "expect_by_fs": {"ext5": {"off": "loses"}}}])", "test")
          .ok());
  EXPECT_FALSE(
      ParseBuiltinExpectations(
          R"([{"name": "x", "expect": {}, "expect_by_fs": {"xfs": {"off": "maybe"}}}])", "test")
          .ok());
  EXPECT_FALSE(ParseBuiltinExpectations(
                   R"([{"name": "x", "expect": {}, "expect_by_fs": {"xfs": {"off": 1}}}])", "test")
                   .ok());
  EXPECT_FALSE(
      ParseBuiltinExpectations(R"([{"name": "x", "expect": {}, "expect_by_fs": 3}])", "test").ok());
  EXPECT_FALSE(ParseBuiltinExpectations("not json", "test").ok());
  auto bad = ParseBuiltinExpectations(R"([{"name": "x", "expect": {"on": "maybe"}}])", "test");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("maybe"));
  EXPECT_FALSE(LoadBuiltinExpectations("/nonexistent/powercut-workload").ok());
}

TEST(CustomCells, ParseRunWithTheirOwnLimitsAndRejectMistakes) {
  auto cells = ParseCustomCells(nlohmann::json::parse(R"({"cells": [
      {"name": "hangs", "workload": "sleep 600", "checker": "true", "timeout": 30,
       "expect": {"error": "timeout"}},
      {"name": "mine", "workload": "w", "checker": "c", "fs": "xfs", "max_acks": 5,
       "expect": {"lying": "loses"}}]})"),
                                "cells.json");
  ASSERT_TRUE(cells.ok()) << cells.status();
  ASSERT_EQ(cells->size(), 2u);
  EXPECT_EQ((*cells)[0].expect.error, RunError::kTimeout);
  EXPECT_EQ((*cells)[1].expect.For(ModelKind::kLying), ExpectedVerdict::kLoses);
  EXPECT_EQ((*cells)[1].expect.For(ModelKind::kOn), ExpectedVerdict::kSurvives);

  MatrixOptions o;
  o.custom_cells = *cells;
  o.progress = false;
  auto plan = PlanMatrix(o);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->size(), 2u);  // --cells alone: no built-in cells
  EXPECT_EQ((*plan)[0].Name(), "hangs/custom/ext4");
  EXPECT_EQ((*plan)[1].Name(), "mine/custom/xfs");
  std::vector<RunOptions> seen;
  auto report = RunMatrix(o, [&](const MatrixCell& c, const RunOptions& r) {
    seen.push_back(r);
    RunOutcome out;
    out.error_kind = c.workload == "hangs" ? RunError::kTimeout : RunError::kAckFlood;
    return out;
  });
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].workload, "sleep 600");
  EXPECT_EQ(seen[0].timeout.count(), 30);
  EXPECT_EQ(seen[1].max_acks, 5u);
  EXPECT_EQ(seen[1].timeout.count(), o.timeout_s);
  EXPECT_EQ(seen[1].fs, (std::vector<harness::FsKind>{harness::FsKind::kXfs}));
  EXPECT_EQ(report->cells[0].Verdict(), CellVerdict::kOk);
  EXPECT_EQ(report->cells[1].Verdict(), CellVerdict::kError);
  EXPECT_EQ(MatrixExitCode(*report), 2);
  EXPECT_EQ(MatrixParameters(o)["custom_cells"].size(), 2u);

  for (const char* bad :
       {R"({"cells": [{"name": "a b", "workload": "w", "checker": "c"}]})",
        R"([{"name": "a", "workload": "w"}])",
        R"([{"name": "a", "workload": "w", "checker": "c"}, {"name": "a", "workload": "w",
               "checker": "c"}])",
        R"([{"name": "a", "workload": "w", "checker": "c", "expect": {"error": "oops"}}])",
        R"([{"name": "a", "workload": "w", "checker": "c", "expect": {"on": "fine"}}])",
        R"([{"name": "a", "workload": "w", "checker": "c", "fs": "ntfs"}])", R"({"cell": []})"}) {
    auto r = ParseCustomCells(nlohmann::json::parse(bad), "cells.json");
    EXPECT_FALSE(r.ok()) << bad;
    EXPECT_THAT(r.status().message(), HasSubstr("cells.json")) << bad;
  }
  EXPECT_FALSE(LoadCustomCells("/nonexistent/cells.json").ok());
  // An expected error is one of the kinds a run reports, every one of them (expected-state and
  // flakey-unsupported included), and a misspelt one is refused naming them all.
  auto oops = ParseCustomCells(
      nlohmann::json::parse(
          R"([{"name": "a", "workload": "w", "checker": "c", "expect": {"error": "timout"}}])"),
      "cells.json");
  EXPECT_THAT(oops.status().message(), HasSubstr("error 'timout': expected one of vm, timeout"));
  EXPECT_THAT(oops.status().message(), HasSubstr("flakey-unsupported"));
}

// Every run error kind reads back from its one name, in cells, reports and expectations.
TEST(Vocabulary, RunErrorKindsRoundTripThroughTheirNames) {
  for (RunError e : {RunError::kVm, RunError::kTimeout, RunError::kWorkloadExit, RunError::kNoAcks,
                     RunError::kAckFlood, RunError::kMalformedAcks, RunError::kCheckerCrash,
                     RunError::kCheckerCannotStart, RunError::kCheckerProtocol, RunError::kCheck,
                     RunError::kUsage, RunError::kExpectedState, RunError::kFlakeyUnsupported,
                     RunError::kUnavailable}) {
    absl::StatusOr<RunError> back = ParseRunError(RunErrorName(e));
    ASSERT_TRUE(back.ok()) << RunErrorName(e);
    EXPECT_EQ(*back, e);
    EXPECT_THAT(RunErrorNames(), HasSubstr(std::string(RunErrorName(e))));
  }
  EXPECT_FALSE(ParseRunError("").ok());
  CellResult cell{.name = "w/s/ext4", .workload = "w", .setting = "s", .fs = "ext4"};
  cell.error_kind = RunError::kCheckerCannotStart;
  cell.error = "sh: 1: nope: not found";
  cell.expect.error = RunError::kCheckerCannotStart;
  absl::StatusOr<CellResult> back = CellFromJson(CellToJson(cell));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->error_kind, RunError::kCheckerCannotStart);
  EXPECT_EQ(back->expect.error, RunError::kCheckerCannotStart);
  EXPECT_EQ(back->Verdict(), CellVerdict::kOk);  // the expected error
  nlohmann::json bad = CellToJson(cell);
  bad["error_kind"] = "gremlins";
  EXPECT_THAT(CellFromJson(bad).status().message(), HasSubstr("gremlins"));
}

// Names are read once, at the edge: each vocabulary round-trips through its one Name, and an
// unknown name is refused with the valid ones listed, never read as a default.
TEST(Vocabulary, NamesRoundTripAndUnknownNamesListTheValidOnes) {
  for (ModelKind k : {ModelKind::kOff, ModelKind::kOn, ModelKind::kLying, ModelKind::kLive,
                      ModelKind::kErrorWrites, ModelKind::kDropWrites}) {
    EXPECT_EQ(*ParseModelKind(ModelKindName(k)), k) << ModelKindName(k);
  }
  for (ExpectedVerdict v :
       {ExpectedVerdict::kSurvives, ExpectedVerdict::kLoses, ExpectedVerdict::kMayLose}) {
    EXPECT_EQ(*ParseExpectedVerdict(ExpectedVerdictName(v)), v) << ExpectedVerdictName(v);
  }
  for (harness::CacheMode m :
       {harness::CacheMode::kOff, harness::CacheMode::kOn, harness::CacheMode::kLying}) {
    EXPECT_EQ(*harness::ParseCacheMode(harness::CacheModeName(m)), m);
    EXPECT_EQ(ModelKindName(ModelKindOf(m)), harness::CacheModeName(m));
  }
  EXPECT_THAT(ParseModelKind("fast").status().message(),
              HasSubstr("\"fast\" is not a model: off, on, lying, live, node-cut, "
                        "error_writes or drop_writes"));
  EXPECT_THAT(ParseExpectedVerdict("maybe").status().message(),
              HasSubstr("\"maybe\" is not an expected verdict: survives, loses or may-lose"));
  EXPECT_THAT(harness::ParseCacheMode("all").status().message(), HasSubstr("off, on or lying"));
  EXPECT_THAT(harness::ParseCacheModels("off,fast", "16").status().message(),
              HasSubstr("\"fast\" is not a cache model: off, on, lying or all"));
  EXPECT_THAT(harness::ParsePointSelection("acks,sometimes").status().message(),
              HasSubstr(std::string(harness::kPointChoices)));
  // A plain "lying" takes --window; a lying code keeps its own; "all" is the three in order.
  auto models = harness::ParseCacheModels("lying,ly64KiB,on", "8");
  ASSERT_TRUE(models.ok()) << models.status();
  ASSERT_EQ(models->size(), 3u);
  EXPECT_EQ((*models)[0].window, 8u);
  EXPECT_FALSE((*models)[0].window_in_bytes);
  EXPECT_EQ((*models)[1].window, 65536u);
  EXPECT_TRUE((*models)[1].window_in_bytes);
  EXPECT_EQ((*models)[2], harness::CacheModel{.mode = harness::CacheMode::kOn});
  auto all = harness::ParseCacheModels("all", "16");
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ(ModelKindOf((*all)[2]), ModelKind::kLying);
  harness::CacheModel mixed{.disk_modes = {harness::CacheMode::kOn, harness::CacheMode::kLying}};
  EXPECT_EQ(ModelKindOf(mixed), std::nullopt);  // no catalog entry names a mixed set
}

// The typed expectations survive the report's JSON (what `powercut merge` reads back), and a
// report naming a model or verdict outside the vocabulary is refused, naming it.
TEST(Expect, TypedVerdictsRoundTripThroughTheReportJson) {
  CellResult c{.name = "w/s/ext4", .workload = "w", .setting = "s", .fs = "ext4", .ran = true};
  c.models = {{.cache = "off", .kind = ModelKind::kOff, .states = 4, .states_planned = 4},
              {.cache = "live", .kind = ModelKind::kLive, .states = 2, .states_planned = 2},
              {.cache = "1=on,2=lying", .states = 3, .states_planned = 3}};
  c.expect.models = {{ModelKind::kOff, ExpectedVerdict::kLoses},
                     {ModelKind::kLive, ExpectedVerdict::kMayLose}};
  const nlohmann::json j = CellToJson(c);
  EXPECT_EQ(j["expect"]["models"],
            nlohmann::json::parse(R"({"off": "loses", "live": "may-lose"})"));
  auto back = CellFromJson(nlohmann::json::parse(j.dump()));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->expect.models, c.expect.models);
  ASSERT_EQ(back->models.size(), 3u);
  EXPECT_EQ(back->models[0].kind, ModelKind::kOff);
  EXPECT_EQ(back->models[1].kind, ModelKind::kLive);
  EXPECT_EQ(back->models[2].kind, std::nullopt);
  EXPECT_EQ(back->Verdict(), c.Verdict());

  nlohmann::json bad = j;
  bad["expect"]["models"]["fast"] = "loses";
  EXPECT_THAT(CellFromJson(bad).status().message(),
              HasSubstr("cell w/s/ext4: \"expect\": \"fast\" is not a model: off, on, lying"));
  bad = j;
  bad["expect"]["models"]["off"] = "maybe";
  EXPECT_THAT(CellFromJson(bad).status().message(),
              HasSubstr("model off: \"maybe\" is not an expected verdict: survives, loses or "
                        "may-lose"));
  bad = j;
  bad["results"][0]["cache"] = "fast";
  EXPECT_THAT(CellFromJson(bad).status().message(), HasSubstr("\"fast\" is not a model"));
  // The same through a whole report, as `powercut merge` reads its shards.
  nlohmann::json report = MatrixToJson(RunFake("1/1"));
  report["cells"][0]["expect"]["models"]["off"] = "fine";
  EXPECT_THAT(MatrixFromJson(report).status().message(), HasSubstr("\"fine\""));
}

// --cells names models and verdicts by the same vocabulary, fault modes included.
TEST(CustomCells, ExpectNamesEveryModelAndRefusesUnknownOnes) {
  auto cells = ParseCustomCells(nlohmann::json::parse(R"([{"name": "a", "workload": "w",
      "checker": "c", "expect": {"on": "may-lose", "live": "loses"}}])"),
                                "cells.json");
  ASSERT_TRUE(cells.ok()) << cells.status();
  EXPECT_EQ((*cells)[0].expect.For(ModelKind::kLive), ExpectedVerdict::kLoses);
  EXPECT_EQ((*cells)[0].expect.For(ModelKind::kOn), ExpectedVerdict::kMayLose);
  auto bad = ParseCustomCells(nlohmann::json::parse(R"([{"name": "a", "workload": "w",
      "checker": "c", "expect": {"sideways": "loses"}}])"),
                              "cells.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(),
              HasSubstr("cells.json: cell 1: \"expect\": \"sideways\" is not a model: off, on"));
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
