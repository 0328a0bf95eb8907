// `powercut fstest` in the VM (docs/fstest.md): a sample of the seq-1 space on ext4 is clean
// under cache off and on (no false alarm), judged in the guest by the recording kernel with no
// program start per state; ext4 with barrier=0 (an fsync that sends no flush) breaks promises under
// cache on and keeps them under off; `repro` shrinks that violation to fewer operations and its
// state to fewer dropped writes; a user's workload of synchronous writes is clean on ext4 and xfs
// and catches f2fs's unflushed O_DIRECT|O_DSYNC overwrite on two kernels side by side, and not
// on f2fs's `lfs` profile.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include "fmt/format.h"
#include "gtest/gtest.h"
#include "harness/vm/machine/kernel.h"
#include "nlohmann/json.hpp"
#include "tests/product/test_util.h"

namespace powercut::product {
namespace {

using testing::ReadFile;
using testing::RunCommand;
using testing::TempDir;

// cache -> (workloads run, violating workloads) from the report's fstest_summary.
std::map<std::string, std::pair<uint64_t, uint64_t>> Rows(const nlohmann::json& report) {
  std::map<std::string, std::pair<uint64_t, uint64_t>> out;
  for (const auto& row : report.at("fstest_summary").at("by_fs_and_cache")) {
    out[row.at("cache")] = {row.at("workloads"), row.at("violating_workloads")};
  }
  return out;
}

TEST(FsTestVmTest, ASampleOfSeq1IsCleanOnExt4UnderOffAndOnJudgedInTheGuest) {
  TempDir dir;
  const std::string json = dir.path() + "/seq1.json";
  const auto r = RunCommand(fmt::format(
      "{} fstest run --seq 1 --sample 6 --seed 11 --fs ext4 --cache off,on --expect-clean --quiet "
      "--json {}",
      POWERCUT_BIN, json));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json report = nlohmann::json::parse(ReadFile(json));
  ASSERT_EQ(report.at("cells").size(), 6u);
  for (const auto& cell : report.at("cells")) {
    const std::string name = cell.at("cell");
    EXPECT_EQ(cell.at("status"), "pass") << cell.dump(2);
    EXPECT_EQ(cell.at("check_method"), "guest mount") << name;
    EXPECT_NE(cell.at("fstest").at("text").get<std::string>(), "") << name;
    // No program start per state: the agent judged it ("judge"), no checker ran, and the boot
    // path mounted first (the fsck step is the recovery tools', which a clean mount skips).
    std::set<std::string> steps;
    for (const auto& p : cell.at("check_phases")) steps.insert(p.at(0));
    EXPECT_TRUE(steps.count("judge") == 1) << name << " " << cell.at("check_phases").dump();
    EXPECT_TRUE(steps.count("checker") == 0) << name;
    for (const auto& m : cell.at("results")) {
      EXPECT_GT(m.at("states").get<int>(), 0) << name;
      EXPECT_EQ(m.at("violations"), 0) << name << " " << m.dump(2);
    }
  }
  const auto rows = Rows(report);
  EXPECT_EQ(rows.at("off"), (std::pair<uint64_t, uint64_t>{6, 0}));
  EXPECT_EQ(rows.at("on"), (std::pair<uint64_t, uint64_t>{6, 0}));
  EXPECT_EQ(report.at("parameters").at("fstest").at("seq"), 1);
  EXPECT_NE(r.output.find("ext4     on               6"), std::string::npos) << r.output;
}

// ext4 mounted barrier=0: fsync returns without flushing the disk's cache. A crash state that
// keeps only what was flushed breaks the fsync's promise under cache on; cache off keeps every
// completed write, so nothing is lost there. CrashMonkey, crashing exactly at the checkpoint, sees
// every write the fsync made and passes it.
TEST(FsTestVmTest, AnFsyncThatSendsNoFlushBreaksItsPromiseUnderCacheOnOnly) {
  TempDir dir;
  const std::string file = dir.path() + "/fsync.fst";
  {
    std::ofstream(file) << "# the data and the name of a new file, fsynced\n"
                           "creat foo\nwrite foo 0 8192\nfsync foo\nmkdir A\ncreat A/bar\n"
                           "fsync A\n";
  }
  const std::string json = dir.path() + "/b0.json";
  const auto r = RunCommand(
      fmt::format("{} fstest run --workloads {} --fs ext4 --mount-options barrier=0 --cache off,on "
                  "--expect-clean --quiet --json {} --recordings {}/rec",
                  POWERCUT_BIN, file, json, dir.path()));
  EXPECT_EQ(r.exit_code, 1) << r.output;  // --expect-clean: a violation under on
  const nlohmann::json report = nlohmann::json::parse(ReadFile(json));
  const auto rows = Rows(report);
  EXPECT_EQ(rows.at("off"), (std::pair<uint64_t, uint64_t>{1, 0}));
  EXPECT_EQ(rows.at("on"), (std::pair<uint64_t, uint64_t>{1, 1}));
  const nlohmann::json& sigs = report.at("fstest_summary").at("signatures");
  ASSERT_EQ(sigs.size(), 1u) << sigs.dump(2);
  const std::string klass = sigs[0].at("class");
  EXPECT_TRUE(klass == "missing" || klass == "old-content" || klass == "data-mismatch") << klass;
  EXPECT_EQ(sigs[0].at("fs"), "ext4");
  const nlohmann::json& v = sigs[0].at("violations")[0];
  EXPECT_EQ(v.at("cache"), "on");
  EXPECT_NE(v.at("why").get<std::string>().find(klass), std::string::npos) << v.dump(2);
  EXPECT_NE(v.at("rebuild").get<std::string>().find("state materialize"), std::string::npos);
  // The kept recording is a reproducer: its workload is beside its trace.
  const std::string recording = v.at("recording");
  EXPECT_TRUE(std::filesystem::exists(recording + "/workload.fst")) << recording;
  EXPECT_EQ(report.at("parameters").at("mount_options"), "barrier=0");

  // repro: the fewest operations, then the fewest dropped writes, that still break the promise.
  const std::string repro = v.at("repro");
  EXPECT_NE(repro.find("--mount-options barrier=0"), std::string::npos) << repro;
  const std::string bundle = dir.path() + "/bundle";
  const auto p = RunCommand(fmt::format("{} --bundle {}", repro, bundle));
  EXPECT_EQ(p.exit_code, 1) << p.output;  // it violates
  const nlohmann::json rj = nlohmann::json::parse(ReadFile(bundle + "/fstest-repro.json"));
  EXPECT_EQ(rj.at("class"), klass);
  const std::string minimal = rj.at("minimal").at("text");
  const std::string original = rj.at("original").at("text");
  EXPECT_LT(std::count(minimal.begin(), minimal.end(), '\n'),
            std::count(original.begin(), original.end(), '\n'))
      << minimal;
  EXPECT_NE(minimal.find("fsync"), std::string::npos) << minimal;
  EXPECT_FALSE(rj.at("tries").empty());
  EXPECT_TRUE(rj.at("state").at("violates").get<bool>()) << rj.dump(2);
  EXPECT_LE(rj.at("state").at("minimal_dropped_entries").size(),
            rj.at("state").at("dropped_entries").size());
  for (const char* f :
       {"README.md", "workload.fst", "original.fst", "state/trace.log", "recording/trace.log"}) {
    EXPECT_TRUE(std::filesystem::exists(bundle + "/" + f)) << f;
  }
}

// Synchronous writes (docs/fstest.md, "Synchronous writes") in a workload file written as a user
// would (tests/product/data/kv_store.fst: a log appended with O_DSYNC and RWF_DSYNC, a table
// preallocated, fsynced and updated in place with O_DIRECT and a synchronous flag, a manifest
// written O_SYNC and renamed into place), on two kernels side by side (Debian's and the same
// kernel again as a folder: CI downloads no other) and on f2fs's default and `lfs` profiles. ext4
// and xfs keep every promise under cache off and on; f2fs acknowledges the first O_DIRECT|O_DSYNC
// overwrite after the fsync with neither FUA nor a FLUSH after it, so under cache on a crash right
// after that ack has the old page (docs/results.md, "f2fs"), on both kernels; `mode=lfs` writes
// out of place, and its fsync flushes.
TEST(FsTestVmTest, SynchronousWritesSideBySideOnTwoKernelsAndF2fsProfiles) {
  TempDir dir;
  auto kernel = vm::FetchKernel();
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  const std::string tree =
      std::filesystem::path(kernel->vmlinuz).parent_path().parent_path().string();
  const std::string json = dir.path() + "/sync.json";
  const auto r = RunCommand(fmt::format(
      "{} fstest run --workloads {} --profiles ext4,xfs,f2fs,f2fs:lfs --kernel default,again={} "
      "--cache off,on --expect-clean --quiet --json {} --recordings {}/rec",
      POWERCUT_BIN, KV_STORE_FST, tree, json, dir.path()));
  // Every cell as expected: f2fs's loss under on is its profile's known finding.
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json report = nlohmann::json::parse(ReadFile(json));
  ASSERT_EQ(report.at("cells").size(), 8u);
  std::map<std::string, std::pair<uint64_t, uint64_t>> rows;
  for (const auto& row : report.at("fstest_summary").at("by_fs_and_cache")) {
    const std::string profile = row.at("profile");
    rows[fmt::format("{}{}@{}/{}", row.at("fs").get<std::string>(),
                     profile == "default" ? "" : ":" + profile, row.at("kernel").get<std::string>(),
                     row.at("cache").get<std::string>())] = {row.at("workloads"),
                                                             row.at("violating_workloads")};
  }
  const std::pair<uint64_t, uint64_t> clean{1, 0}, violating{1, 1};
  for (const char* kernel_label : {"default", "again"}) {
    for (const char* fs : {"ext4", "xfs", "f2fs", "f2fs:lfs"}) {
      for (const char* cache : {"off", "on"}) {
        const std::string key = fmt::format("{}@{}/{}", fs, kernel_label, cache);
        const bool loses = std::string(fs) == "f2fs" && std::string(cache) == "on";
        EXPECT_EQ(rows.at(key), loses ? violating : clean) << key << "\n" << r.output;
      }
    }
  }
  const nlohmann::json& sigs = report.at("fstest_summary").at("signatures");
  ASSERT_EQ(sigs.size(), 1u) << sigs.dump(2);
  EXPECT_EQ(sigs[0].at("fs"), "f2fs");
  EXPECT_EQ(sigs[0].at("class"), "old-content");
  EXPECT_EQ(sigs[0].at("kernels"), nlohmann::json({"again", "default"}));
  const nlohmann::json& v = sigs[0].at("violations")[0];
  EXPECT_EQ(v.at("cache"), "on");
  // Point 8 is the first in-place page write (points 1-7: the fsyncs and the log's appends).
  EXPECT_EQ(v.at("why").get<std::string>().rfind("8: old-content db/table: ", 0), 0u) << v.dump(2);
  // Side by side: the two kernels agree; the f2fs row fails on both, the others pass.
  const nlohmann::json& cmp = report.at("fstest_summary").at("by_kernel");
  EXPECT_EQ(cmp.at("differing"), 0);
  EXPECT_EQ(cmp.at("failing_everywhere"), 1);
  EXPECT_EQ(cmp.at("passing_everywhere"), 3);
  EXPECT_EQ(cmp.at("rows")[0].at("fs"), "f2fs");
  EXPECT_NE(r.output.find("fails    fst-"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace powercut::product
