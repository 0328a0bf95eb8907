// `powercut fstest run` without a VM (harness/product/fstest/fstest_run.h): the cells the workloads
// make, what the runner hands each recording (the latest-ack oracle, synchronous acks, a boot path
// that mounts first, no in-flight tear, the promises hook, the mount and mkfs options), the
// summary's rows and signatures, and shards merging into the unsharded report. The cell runner is a
// fake that checks what it was given and returns a made-up result.
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "absl/synchronization/mutex.h"
#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "harness/diff/report_diff.h"
#include "harness/diff/report_reader.h"
#include "harness/fstest/model_fs.h"
#include "harness/fstest/tree.h"
#include "harness/fstest/workload.h"
#include "harness/product/fstest/fstest_kernels.h"
#include "harness/product/fstest/fstest_profiles.h"
#include "harness/product/fstest/fstest_report.h"
#include "harness/product/fstest/fstest_run.h"
#include "harness/product/matrix/merge.h"
#include "harness/trace/trace_format.h"
#include "tests/product/test_util.h"

namespace powercut::product {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

// Two workloads in a folder, one of which "violates" under cache on.
class FsTestRun : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(dir_.ok());
    std::ofstream(dir_.File("a.fst")) << "creat foo\nfsync foo\n";
    std::ofstream(dir_.File("b.fst")) << "mkdir A\nsync\ncreat A/foo\nfsync A\n";
    o_.workloads = dir_.path();
    o_.exec_binary = "/usr/libexec/powercut/powercut-fstest-exec";
    o_.matrix.fs = {harness::FsKind::kExt4, harness::FsKind::kXfs};
    o_.matrix.replay.models = {{.mode = harness::CacheMode::kOff},
                               {.mode = harness::CacheMode::kOn}};
    o_.matrix.progress = false;
    o_.matrix.mount_options = "data=journal";
    o_.matrix.mkfs_options = "-O fast_commit";
  }

  // A fake recording + check: every model passes but `failing_model` (cache on) of workload
  // `failing`, which loses point 1 with a `missing` why.
  CellRunner Fake(const std::string& failing, const std::string& failing_model = "on") {
    return [this, failing, failing_model](const MatrixCell& cell, const RunOptions& r) {
      {
        absl::MutexLock lock(&mu_);
        seen_.push_back(r);
      }
      RunOutcome out;
      out.ran = true;
      out.kernel = "6.1.0-test";
      out.acks = 1;
      harness::CheckReport report;
      for (const harness::CacheModel& m : r.models) {
        harness::ModelResult result;
        result.model = m;
        result.states = result.states_planned = result.checked = 3;
        if (cell.workload == failing && m.Name() == failing_model) {
          harness::Verdict v;
          v.state_id = "pc1_fake";
          v.lost = {"1"};
          v.why = {"1: missing foo: not there"};
          v.rebuild = "/opt/bin/powercut state materialize --trace t.log --state pc1_fake";
          result.violations = 1;
          result.lost_acks_max = 1;
          result.first_violation = v;
        }
        report.results.push_back(result);
      }
      out.report = report;
      return out;
    };
  }

  TempDir dir_;
  FsTestOptions o_;
  absl::Mutex mu_;
  std::vector<RunOptions> seen_;
};

// A violation's repro command names the model it was found under exactly: a lying window other
// than the default travels in the model's code.
TEST_F(FsTestRun, ReproCommandsKeepTheLyingWindow) {
  auto models = harness::ParseCacheModels("off,lying", "64KiB");
  ASSERT_TRUE(models.ok()) << models.status();
  o_.matrix.replay.models = *models;
  auto plan = PlanFsTest(o_);
  ASSERT_TRUE(plan.ok()) << plan.status();
  auto report = RunFsTest(o_, Fake(fstest::WorkloadId((*plan)[0]), "lying"));
  ASSERT_TRUE(report.ok()) << report.status();
  const nlohmann::json s = FsTestSummary(*report);
  ASSERT_FALSE(s.at("signatures").empty());
  const std::string repro = s.at("signatures")[0].at("violations")[0].at("repro");
  EXPECT_THAT(repro, HasSubstr("--cache ly65536b"));
  // What the command names reads back to the model that found it.
  auto back = harness::ParseCacheModels("ly65536b", "16");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->front(), (*models)[1]);
}

TEST_F(FsTestRun, EachWorkloadAndFileSystemIsACellRecordedTheFsTestWay) {
  auto plan = PlanFsTest(o_);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->size(), 2u);
  const std::string failing = fstest::WorkloadId((*plan)[0]);
  auto report = RunFsTest(o_, Fake(failing));
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->cells.size(), 4u);
  std::set<std::string> names;
  for (const CellResult& c : report->cells) {
    names.insert(c.name);
    EXPECT_EQ(c.setting, "fstest");
    EXPECT_EQ(c.checker_command, kFsTestJudge);
    EXPECT_THAT(c.workload_command, HasSubstr(o_.exec_binary + " run --hex "));
    ASSERT_TRUE(c.fstest.has_value());
    EXPECT_EQ(c.fstest->id, c.workload);
    EXPECT_NE(c.fstest->text, "");
    EXPECT_NE(c.fstest->shape, "");
  }
  EXPECT_TRUE(names.count(failing + "/fstest/xfs") == 1);
  ASSERT_EQ(seen_.size(), 4u);
  for (const RunOptions& r : seen_) {
    EXPECT_TRUE(r.latest_ack_only);
    EXPECT_TRUE(r.sync_acks);
    EXPECT_FALSE(r.boot_checks);
    EXPECT_FALSE(r.states.torn_inflight);
    EXPECT_TRUE(static_cast<bool>(r.judge_promises));
    EXPECT_EQ(r.mount_options, "data=journal");
    EXPECT_EQ(r.mkfs_options, "-O fast_commit");
    EXPECT_EQ(r.points.acks, true);
  }
  // The promises hook refuses a recording that has no expected state.
  vm::RunResult none;
  none.workload_output = dir_.File("no-such-output.txt");
  EXPECT_FALSE(seen_[0].judge_promises(none).ok());

  // Without --expect-clean a violation is reported and the run exits 0; with it, 1.
  EXPECT_EQ(MatrixExitCode(*report), 0);
  const nlohmann::json s = FsTestSummary(*report);
  std::map<std::pair<std::string, std::string>, uint64_t> violating;
  for (const auto& row : s.at("by_fs_and_cache")) {
    EXPECT_EQ(row.at("workloads"), 2) << row.dump();
    violating[{row.at("fs"), row.at("cache")}] = row.at("violating_workloads");
  }
  EXPECT_EQ(violating[std::make_pair(std::string("ext4"), std::string("on"))], 1u);
  EXPECT_EQ(violating[std::make_pair(std::string("xfs"), std::string("off"))], 0u);
  ASSERT_EQ(s.at("signatures").size(), 2u);  // one per file system
  const nlohmann::json& g = s.at("signatures")[0];
  EXPECT_EQ(g.at("class"), "missing");
  EXPECT_EQ(g.at("shape"), "creat F1; fsync F1");
  const std::string repro = g.at("violations")[0].at("repro");
  EXPECT_THAT(repro, HasSubstr("/opt/bin/powercut fstest repro " + failing));
  EXPECT_THAT(repro, HasSubstr("--workloads " + dir_.path()));
  EXPECT_THAT(repro, HasSubstr("--mount-options data=journal"));
  EXPECT_THAT(repro, HasSubstr("--mkfs-options '-O fast_commit'"));
  EXPECT_THAT(FsTestTable(*report), HasSubstr("missing | creat F1; fsync F1 | ext4"));
  EXPECT_THAT(ReportHtml(*report, "t"), HasSubstr("violations by signature"));

  FsTestOptions clean = o_;
  clean.expect_clean = true;
  auto strict = RunFsTest(clean, Fake(failing));
  ASSERT_TRUE(strict.ok());
  EXPECT_EQ(MatrixExitCode(*strict), 1);
}

TEST_F(FsTestRun, ShardsMergeIntoTheUnshardedReport) {
  const std::string failing = "none";
  auto whole = RunFsTest(o_, Fake(failing));
  ASSERT_TRUE(whole.ok());
  std::vector<MatrixReport> shards;
  for (int k = 1; k <= 2; ++k) {
    FsTestOptions o = o_;
    o.matrix.shard = *ParseShard(fmt::format("{}/2", k));
    auto r = RunFsTest(o, Fake(failing));
    ASSERT_TRUE(r.ok());
    // Through JSON, as `powercut merge` reads them.
    auto back = MatrixFromJson(ReportJson(*r));
    ASSERT_TRUE(back.ok()) << back.status();
    shards.push_back(*back);
  }
  auto merged = MergeReports(shards);
  ASSERT_TRUE(merged.ok()) << merged.status();
  ASSERT_TRUE(IsFsTestReport(*merged));
  EXPECT_EQ(FsTestSummary(*merged), FsTestSummary(*whole));
  EXPECT_EQ(merged->cells.size(), whole->cells.size());
}

// Profiles (harness/product/fstest_profiles.h): the names `--profiles` takes, and the workloads a
// known finding is about.
TEST(FsTestProfiles, NamesListsAndTheirFileSystems) {
  auto names = [](const std::vector<const FsTestProfile*>& profiles) {
    std::vector<std::string> out;
    for (const FsTestProfile* p : profiles) out.push_back(ProfileName(*p));
    return out;
  };
  auto all = ParseProfiles("all", {});
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->size(), AllFsTestProfiles().size());
  EXPECT_GE(all->size(), 9u);
  auto ext4 = ParseProfiles("all", {harness::FsKind::kExt4});
  ASSERT_TRUE(ext4.ok());
  EXPECT_THAT(names(*ext4),
              ::testing::ElementsAre("ext4", "ext4:fast_commit", "ext4:data_journal"));
  auto some = ParseProfiles("f2fs:lfs,xfs,f2fs:lfs,btrfs:compress_zstd", {});
  ASSERT_TRUE(some.ok());
  EXPECT_THAT(names(*some), ::testing::ElementsAre("f2fs:lfs", "xfs", "btrfs:compress_zstd"));
  EXPECT_EQ(ProfileVariant(*(*some)[0]), ":lfs");
  EXPECT_EQ(ProfileVariant(*(*some)[1]), "");
  auto f2fs = ParseProfiles("f2fs:all", {});
  ASSERT_TRUE(f2fs.ok());
  EXPECT_EQ(f2fs->size(), 3u);
  for (const auto& [text, says] : std::vector<std::pair<std::string, std::string>>{
           {"ext4:nope", "ext4 has no profile nope"},
           {"zfs:default", "zfs"},
           {"ext4,,xfs", "an empty name"},
           {"btrfs:compress_zstd", "is not one of --fs ext4"}}) {
    auto bad = ParseProfiles(text, {harness::FsKind::kExt4});
    ASSERT_FALSE(bad.ok()) << text;
    EXPECT_THAT(std::string(bad.status().message()), HasSubstr(says)) << text;
  }
  const FsTestProfile* journal = FindFsTestProfile(harness::FsKind::kExt4, "data_journal");
  ASSERT_NE(journal, nullptr);
  EXPECT_EQ(ProfileMountOptions(*journal, ""), "data=journal");
  EXPECT_EQ(ProfileMountOptions(*journal, "noatime"), "data=journal,noatime");
  EXPECT_EQ(ProfileMkfsOptions(*journal, "-b 4096"), "-b 4096");
  const FsTestProfile* fast = FindFsTestProfile(harness::FsKind::kExt4, "fast_commit");
  ASSERT_NE(fast, nullptr);
  EXPECT_EQ(ProfileMkfsOptions(*fast, "-b 4096"), "-O fast_commit -b 4096");
  EXPECT_THAT(ProfilesTable(), HasSubstr("f2fs:lfs  (mount mode=lfs)"));
}

TEST(FsTestProfiles, AKnownFindingExcusesOnlyTheWorkloadsThatHaveItsFeature) {
  auto parse = [](const std::string& text) {
    auto w = fstest::ParseWorkload(text, "t.fst");
    EXPECT_TRUE(w.ok()) << w.status();
    return *w;
  };
  const fstest::Workload across =
      parse("creat foo\nwrite foo 0 32768\nfalloc foo punch_hole 30768 5000\nfsync foo\n");
  const fstest::Workload past =
      parse("creat foo\nwrite foo 0 32768\nfalloc foo punch_hole 32768 32768\nfsync foo\n");
  const fstest::Workload direct =
      parse("creat log\nwrite log 0 8192\nfsync log\ndwrite log 0 4096 dsync\n");
  const fstest::Workload buffered = parse("creat log\nwrite log 0 8192\nfsync log\n");
  EXPECT_TRUE(HasFeature(across, WorkloadFeature::kPunchHoleAcrossEnd));
  EXPECT_FALSE(HasFeature(past, WorkloadFeature::kPunchHoleAcrossEnd));
  EXPECT_FALSE(HasFeature(direct, WorkloadFeature::kPunchHoleAcrossEnd));
  EXPECT_TRUE(HasFeature(direct, WorkloadFeature::kDirectSyncWrite));
  EXPECT_FALSE(HasFeature(buffered, WorkloadFeature::kDirectSyncWrite));

  const std::vector<harness::CacheModel> models = {{.mode = harness::CacheMode::kOff},
                                                   {.mode = harness::CacheMode::kOn},
                                                   {.mode = harness::CacheMode::kLying}};
  const FsTestProfile& f2fs = DefaultFsTestProfile(harness::FsKind::kF2fs);
  const FsTestProfile& ext4 = DefaultFsTestProfile(harness::FsKind::kExt4);
  ASSERT_FALSE(f2fs.known.empty());
  for (const KnownFinding& k : f2fs.known) {
    const fstest::Workload& has = k.feature == WorkloadFeature::kDirectSyncWrite ? direct : across;
    const ModelKind kind = ModelKindOf(k.model);
    EXPECT_EQ(ProfileExpect(f2fs, has, models, true).For(kind), ExpectedVerdict::kMayLose);
    EXPECT_EQ(ProfileExpect(f2fs, buffered, models, true).For(kind), ExpectedVerdict::kSurvives);
    EXPECT_EQ(ProfileExpect(ext4, has, models, true).For(kind), ExpectedVerdict::kSurvives);
  }
  const CellExpect lax = ProfileExpect(ext4, buffered, models, false);
  for (const ModelKind kind : {ModelKind::kOff, ModelKind::kOn, ModelKind::kLying}) {
    EXPECT_EQ(lax.For(kind), ExpectedVerdict::kMayLose);
  }
  EXPECT_EQ(ProfileExpect(ext4, buffered, models, true).For(ModelKind::kLying),
            ExpectedVerdict::kMayLose);
}

TEST_F(FsTestRun, ProfilesAreOneMoreAxisWithTheirOptionsAndExpectations) {
  std::ofstream(dir_.File("c.fst")) << "creat log\nwrite log 0 8192\nfsync log\n"
                                       "dwrite log 0 4096 dsync\n";
  o_.matrix.mount_options = "noatime";
  o_.matrix.mkfs_options = "";
  o_.expect_clean = true;
  auto profiles = ParseProfiles("ext4,ext4:data_journal,f2fs", {});
  ASSERT_TRUE(profiles.ok());
  o_.profiles = *profiles;
  auto plan = PlanFsTest(o_);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->size(), 3u);
  const std::string direct = fstest::WorkloadId((*plan)[2]);
  auto report = RunFsTest(o_, Fake(fstest::WorkloadId((*plan)[0])));
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->cells.size(), 9u);
  std::map<std::string, const CellResult*> cells;
  for (const CellResult& c : report->cells) cells[c.name] = &c;
  const std::string first = fstest::WorkloadId((*plan)[0]);
  ASSERT_EQ(cells.count(first + "/fstest/ext4:data_journal"), 1u);
  ASSERT_EQ(cells.count(first + "/fstest/ext4"), 1u);
  ASSERT_EQ(cells.count(first + "/fstest/f2fs"), 1u);
  EXPECT_EQ(cells.at(first + "/fstest/ext4:data_journal")->fstest->profile, "data_journal");
  EXPECT_EQ(cells.at(first + "/fstest/ext4:data_journal")->fs, "ext4");
  // Each recording gets its profile's options before the user's.
  std::multiset<std::string> mounts;
  for (const RunOptions& r : seen_) mounts.insert(r.mount_options);
  EXPECT_EQ(mounts.count("data=journal,noatime"), 3u);
  EXPECT_EQ(mounts.count("noatime"), 6u);
  // The known f2fs finding: the O_DIRECT|O_DSYNC workload may lose under on there, nowhere else.
  EXPECT_EQ(cells.at(direct + "/fstest/f2fs")->expect.For(ModelKind::kOn),
            ExpectedVerdict::kMayLose);
  EXPECT_EQ(cells.at(direct + "/fstest/ext4")->expect.For(ModelKind::kOn),
            ExpectedVerdict::kSurvives);
  EXPECT_EQ(cells.at(first + "/fstest/f2fs")->expect.For(ModelKind::kOn),
            ExpectedVerdict::kSurvives);
  // The rows and signatures name the profile; a violation's repro spells its options.
  const nlohmann::json s = FsTestSummary(*report);
  EXPECT_EQ(s.at("by_fs_and_cache").size(), 6u);
  EXPECT_EQ(s.at("profiles"), nlohmann::json({"ext4", "ext4:data_journal", "f2fs"}));
  bool journal_row = false;
  for (const auto& row : s.at("by_fs_and_cache")) {
    journal_row = journal_row || row.at("profile") == "data_journal";
  }
  EXPECT_TRUE(journal_row);
  std::set<std::string> signatures;
  for (const auto& g : s.at("signatures")) signatures.insert(g.at("signature"));
  EXPECT_EQ(signatures.count("missing | creat F1; fsync F1 | ext4:data_journal"), 1u);
  for (const auto& g : s.at("signatures")) {
    if (g.at("fs") != "ext4:data_journal") continue;
    EXPECT_THAT(g.at("violations")[0].at("repro").get<std::string>(),
                HasSubstr("--fs ext4 --cache on --workloads " + dir_.path() +
                          " --mount-options data=journal,noatime"));
  }
  const std::string table = FsTestTable(*report);
  EXPECT_THAT(table, HasSubstr("ext4:data_journal on"));
  EXPECT_EQ(MatrixExitCode(*report), 1);  // --expect-clean, and the fake fails under on
}

// Kernels side by side (harness/product/fstest_kernels.h, fstest_by_kernel.h).
TEST(FsTestKernels, TheListItsLabelsAndItsErrors) {
  auto release = [](const std::string& path) -> absl::StatusOr<std::string> {
    if (path.find("missing") != std::string::npos) {
      return absl::NotFoundError(fmt::format("--kernel {}: no such file or folder", path));
    }
    return path.find("612") != std::string::npos ? "6.12.1-test" : "6.1.0-test";
  };
  auto one = ParseKernelList("", release);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(*one, (std::vector<FsTestKernel>{{"default", ""}}));
  EXPECT_EQ(KernelVariant(*one, one->front()), "");
  auto three = ParseKernelList("default,/k/612.deb,fixed=/k/612-patched", release);
  ASSERT_TRUE(three.ok()) << three.status();
  EXPECT_EQ(*three,
            (std::vector<FsTestKernel>{
                {"default", ""}, {"6.12.1-test", "/k/612.deb"}, {"fixed", "/k/612-patched"}}));
  EXPECT_EQ(KernelVariant(*three, (*three)[1]), "@6.12.1-test");
  auto back = KernelsFromJson(KernelsToJson(*three));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, *three);
  for (const auto& [text, says] : std::vector<std::pair<std::string, std::string>>{
           {"/k/612.deb,/k/612-again", "two kernels are labelled '6.12.1-test'"},
           {"default,,/k/a", "an empty item"},
           {"a b=/k/a", "the label 'a b' is not"},
           {"/k/missing.deb", "/k/missing.deb: no such file or folder"}}) {
    auto bad = ParseKernelList(text, release);
    ASSERT_FALSE(bad.ok()) << text;
    EXPECT_THAT(std::string(bad.status().message()), HasSubstr(says)) << text;
  }
  EXPECT_FALSE(KernelsFromJson(nlohmann::json::array({{{"label", 1}}})).ok());
}

TEST_F(FsTestRun, KernelsSideBySideInOneReportTheDifferencesFirst) {
  auto plan = PlanFsTest(o_);
  ASSERT_TRUE(plan.ok());
  const std::string failing = fstest::WorkloadId((*plan)[0]);
  o_.kernels = {{"default", ""}, {"6.12", "/k/linux-image-6.12.deb"}};
  // Each kernel's runner is made once, when its first cell starts, and dropped after its last:
  // the default kernel's is gone before the 6.12 one's is made. Only 6.12 fails, on ext4.
  std::vector<std::string> made;
  std::weak_ptr<int> previous;
  bool previous_released = true;
  auto runner_for = [&](const FsTestKernel& kernel) {
    made.push_back(kernel.label);
    previous_released = previous_released && previous.expired();
    auto alive = std::make_shared<int>(0);
    previous = alive;
    CellRunner fake = Fake(kernel.label == "6.12" ? failing : "no-such-workload");
    return CellRunner([alive, fake](const MatrixCell& cell, const RunOptions& r) {
      if (cell.fs != harness::FsKind::kExt4) {
        MatrixCell pass = cell;
        pass.workload = "passes-everywhere";
        return fake(pass, r);
      }
      return fake(cell, r);
    });
  };
  auto report = RunFsTest(o_, runner_for);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(made, (std::vector<std::string>{"default", "6.12"}));
  EXPECT_TRUE(previous_released);
  ASSERT_EQ(report->cells.size(), 8u);
  // Kernel by kernel in the plan; every name says its kernel.
  for (size_t i = 0; i < report->cells.size(); ++i) {
    const CellResult& c = report->cells[i];
    EXPECT_THAT(c.name, ::testing::EndsWith(i < 4 ? "@default" : "@6.12")) << i;
    EXPECT_EQ(c.fstest->kernel, i < 4 ? "default" : "6.12");
  }
  const nlohmann::json s = FsTestSummary(*report);
  ASSERT_TRUE(s.contains("by_kernel"));
  const nlohmann::json& cmp = s.at("by_kernel");
  EXPECT_EQ(cmp.at("differing"), 1) << cmp.dump(1);
  EXPECT_EQ(cmp.at("passing_everywhere"), 3);
  const nlohmann::json& top = cmp.at("rows")[0];
  EXPECT_EQ(top.at("workload"), failing);
  EXPECT_EQ(top.at("fs"), "ext4");
  EXPECT_TRUE(top.at("differs").get<bool>());
  EXPECT_EQ(top.at("verdicts").at("default").at("on"), "pass");
  EXPECT_EQ(top.at("verdicts").at("6.12").at("on"), "FAIL");
  EXPECT_EQ(s.at("by_fs_and_cache").size(), 8u);  // fs x kernel x cache
  const nlohmann::json& g = s.at("signatures")[0];
  EXPECT_EQ(g.at("kernels"), nlohmann::json({"6.12"}));
  EXPECT_THAT(g.at("violations")[0].at("repro").get<std::string>(),
              HasSubstr("--kernel /k/linux-image-6.12.deb"));
  const std::string table = FsTestTable(*report);
  EXPECT_THAT(table, HasSubstr("differs  " + failing +
                               " ext4  default: off pass, on pass | "
                               "6.12: off pass, on FAIL"));
  EXPECT_THAT(ReportHtml(*report, "t"), HasSubstr("Kernels side by side"));
  EXPECT_THAT(MatrixJunit(*report), HasSubstr(failing + "/fstest/ext4@6.12"));
  EXPECT_EQ(report->parameters.at("fstest").at("kernels").size(), 2u);
  EXPECT_FALSE(report->parameters.contains("kernel"));

  // Shards through JSON merge into the same report, side by side included.
  std::vector<MatrixReport> shards;
  for (int k = 1; k <= 3; ++k) {
    FsTestOptions o = o_;
    o.matrix.shard = *ParseShard(fmt::format("{}/3", k));
    auto r = RunFsTest(o, runner_for);
    ASSERT_TRUE(r.ok());
    auto back = MatrixFromJson(ReportJson(*r));
    ASSERT_TRUE(back.ok()) << back.status();
    shards.push_back(*back);
  }
  auto merged = MergeReports(shards);
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_EQ(FsTestSummary(*merged), s);
}

// `powercut diff` reads a report of several kernels cell by cell: a kernel that starts to fail is
// a regression naming the cell with its kernel, and a new signature.
TEST_F(FsTestRun, DiffTellsTheKernelsApart) {
  auto plan = PlanFsTest(o_);
  ASSERT_TRUE(plan.ok());
  const std::string failing = fstest::WorkloadId((*plan)[0]);
  o_.kernels = {{"default", ""}, {"6.12", "/k/linux-image-6.12.deb"}};
  o_.expect_clean = true;
  auto night = [&](bool broken) {
    auto r = RunFsTest(o_, [&](const FsTestKernel& k) {
      return Fake(broken && k.label == "6.12" ? failing : "none");
    });
    EXPECT_TRUE(r.ok());
    auto read = diff::ReadReport(ReportJson(*r).dump(), broken ? "new.json" : "base.json");
    EXPECT_TRUE(read.ok()) << read.status();
    return *read;
  };
  const diff::ComparableReport base = night(false), next = night(true);
  EXPECT_EQ(diff::DiffReports(base, base).ExitCode(), 0);
  const diff::ReportDiff d = diff::DiffReports(base, next);
  EXPECT_EQ(d.ExitCode(), 1);
  EXPECT_THAT(d.RegressionNames(), ::testing::Contains(failing + "/fstest/ext4@6.12 cache on"));
  EXPECT_THAT(d.RegressionNames(), ::testing::Contains(::testing::HasSubstr("signature missing")));
}

// `powercut fstest report`'s reproducer without a VM: the workload as a C program stores exactly
// the bytes the executor stores (the tree it leaves is the model's, byte for byte), and its log
// reader names the writes not durable at each ack of a dm-log-writes log.
class FsTestReproducer : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(dir_.ok());
    const fstest::Workload w = Workload(
        "mkdir A\ncreat A/log\nwrite A/log 0 10000\nfsync A/log\ndwrite A/log 0 4096 dsync\n"
        "write A/log 5000 100 sync\nwrite A/log 9000 50 rwf_dsync\nmmapwrite A/log 12288 10\n"
        "falloc A/log punch_hole 4096 4096\nlink A/log bar\nsetxattr bar user.k v1\n"
        "symlink A/log sym\nrename bar baz\nfdatasync baz\nsync\n");
    model_ = w;
    std::ofstream(dir_.File("repro.c")) << ReproducerC(w);
    const auto cc = testing::RunCommand(
        fmt::format("cc -O2 -Wall -Werror -o {} {}", dir_.File("repro"), dir_.File("repro.c")));
    ASSERT_EQ(cc.exit_code, 0) << cc.output;
  }
  static fstest::Workload Workload(const std::string& text) {
    auto w = fstest::ParseWorkload(text, "t.fst");
    EXPECT_TRUE(w.ok()) << w.status();
    return *w;
  }
  TempDir dir_;
  fstest::Workload model_;
};

TEST_F(FsTestReproducer, TheCProgramLeavesTheTreeTheModelHolds) {
  const std::string root = dir_.MakeSubdir("root");
  const auto run = testing::RunCommand(fmt::format("{} run {}", dir_.File("repro"), root));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output, "ack 1\nack 2\nack 3\nack 4\nack 5\nack 6\n");
  fstest::ModelFs model;
  for (const fstest::Op& op : model_.ops) ASSERT_TRUE(model.Apply(op).ok());
  const fstest::Tree want = fstest::ModelTree(model);
  auto got = fstest::ReadTree(root);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->nodes.size(), want.nodes.size());
  for (const auto& [path, node] : want.nodes) {
    ASSERT_EQ(got->nodes.count(path), 1u) << path;
    EXPECT_EQ(got->nodes.at(path).data_hash, node.data_hash) << path;
    EXPECT_EQ(got->nodes.at(path).xattrs, node.xattrs) << path;
    EXPECT_EQ(got->nodes.at(path).target, node.target) << path;
  }
}

TEST_F(FsTestReproducer, TheLogReaderNamesTheWritesNotDurableAtEachAck) {
  constexpr uint32_t kSector = 512;
  std::string log;
  auto block = [&log](auto encode) {
    std::string b(kSector, '\0');
    encode(reinterpret_cast<uint8_t*>(b.data()));
    log += b;
  };
  auto entry = [&](uint64_t sector, uint64_t count, uint64_t flags, std::string_view mark) {
    harness::EntryHeader h{
        .sector = sector, .nr_sectors = count, .flags = flags, .data_len = mark.size()};
    block([&](uint8_t* b) { harness::EncodeEntry(h, mark, kSector, b); });
    log += std::string(count * kSector, 'd');
  };
  block([](uint8_t* b) { harness::EncodeSuper(7, kSector, b); });
  entry(8, 1, 0, "");                        // 0: a write, no FUA
  entry(0, 0, harness::kFlagMark, "ack:1");  // 1: acknowledged with it in the cache
  entry(0, 0, harness::kFlagFlush, "");      // 2
  entry(16, 2, harness::kFlagFua, "");       // 3: durable by itself
  entry(0, 0, harness::kFlagMark, "ack:2");  // 4
  entry(24, 1, harness::kFlagFlush, "");     // 5: PREFLUSH + write: the write is not durable
  entry(0, 0, harness::kFlagMark, "ack:3");  // 6
  std::ofstream(dir_.File("log.bin"), std::ios::binary) << log;
  const auto r =
      testing::RunCommand(fmt::format("{} log {}", dir_.File("repro"), dir_.File("log.bin")));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("entry 1: mark ack:1: 1 write(s) not durable"));
  EXPECT_THAT(r.output, HasSubstr("entry 0: WRITE sector 8, 1 sectors of 512 bytes"));
  EXPECT_THAT(r.output, HasSubstr("entry 4: mark ack:2: 0 write(s) not durable\n"));
  EXPECT_THAT(r.output, HasSubstr("entry 6: mark ack:3: 1 write(s) not durable"));
  EXPECT_THAT(r.output, HasSubstr("7 entries; 2 acknowledgement(s) given with writes not durable"));
}

// A workload that uses few of the program's helpers still compiles with every warning an error.
TEST(FsTestReport, TheCProgramOfASmallWorkloadCompilesWithoutWarnings) {
  TempDir dir;
  auto w = fstest::ParseWorkload("creat foo\nwrite foo 0 100\nfsync foo\n", "t.fst");
  ASSERT_TRUE(w.ok()) << w.status();
  std::ofstream(dir.File("repro.c")) << ReproducerC(*w);
  const auto cc = testing::RunCommand(
      fmt::format("cc -O2 -Wall -Wextra -Werror -o {} {}", dir.File("repro"), dir.File("repro.c")));
  EXPECT_EQ(cc.exit_code, 0) << cc.output;
}

TEST(FsTestReport, TheShellScriptRecordsWithDmLogWritesOnTheFileSystemsOwnMkfs) {
  const std::string sh = ReproducerShell("xfs", "-m crc=1", "noatime");
  EXPECT_THAT(sh, HasSubstr("mkfs.xfs -f -q -s size=4096 -m crc=1 \"$data\""));
  EXPECT_THAT(sh, HasSubstr("log-writes $data $log"));
  EXPECT_THAT(sh, HasSubstr("mount -o noatime /dev/mapper/powercut-lw mnt"));
  EXPECT_THAT(sh, HasSubstr("./repro run mnt \"dmsetup message powercut-lw 0 mark\""));
}

}  // namespace
}  // namespace powercut::product
