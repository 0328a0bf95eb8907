// Issue 13 on xfs and btrfs: crash states judged in a guest by the recording kernel get the same
// verdicts as the host's loop mounts. One small recording per file system (an appending xlog
// with fdatasync: passes with the cache off, loses acked blocks when the drive lies),
// judged twice from the same trace, `--check-in host` and `--check-in guest`, every state
// checked (`--exhaustive`), so the counts (states, violations, the boot path's repairs) must be
// equal, not only the pass/fail. Needs root for the host half (loop mounts); without it the test
// skips, since there is nothing to compare the guest's verdicts with.
#include <sys/utsname.h>
#include <unistd.h>

#include <map>
#include <string>

#include "fmt/format.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/product/test_util.h"

namespace powercut::product {
namespace {

using testing::ReadFile;
using testing::RunCommand;
using testing::TempDir;

struct ModelCounts {
  int states = 0;
  int violations = 0;
  int fs_repaired = 0;
  int fs_unrecoverable = 0;
  int could_not_check = 0;
  bool operator==(const ModelCounts&) const = default;
};

std::map<std::string, ModelCounts> Counts(const nlohmann::json& report) {
  std::map<std::string, ModelCounts> out;
  for (const auto& m : report.at("results")) {
    out[m.at("cache")] = {.states = m.at("states").get<int>(),
                          .violations = m.at("violations").get<int>(),
                          .fs_repaired = m.value("fs_repaired", 0),
                          .fs_unrecoverable = m.value("fs_unrecoverable", 0),
                          .could_not_check = m.value("could_not_check", 0)};
  }
  return out;
}

const std::string kChecker = fmt::format("{} xlog check", WORKLOAD_BIN);

// Records an appending xlog of `count` fdatasync'd blocks on `fs` into `rec` (kept), judging it
// with the cache off (a pass); `extra` are more `powercut run` options.
testing::CommandResult RecordXlog(const std::string& fs, int count, const std::string& rec,
                                  const std::string& extra) {
  return RunCommand(
      fmt::format("{} run --quiet --workload '{} xlog run --barrier fdatasync --append --count {}' "
                  "--checker '{}' --fs {} --cache off --points acks --states 2 --keep {} {}",
                  POWERCUT_BIN, WORKLOAD_BIN, count, kChecker, fs, rec, extra));
}

class GuestFsVmTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GuestFsVmTest, GuestChecksMatchHostChecks) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root for the host half (loop mounts)";
  const std::string fs = GetParam();
  TempDir dir;
  const std::string rec = dir.path() + "/rec";
  auto r = RecordXlog(fs, 3, rec, "--json " + dir.path() + "/rec.json");
  ASSERT_EQ(r.exit_code, 0) << r.output;

  // The same trace, judged both ways.
  std::map<std::string, nlohmann::json> reports;
  for (const std::string where : {"host", "guest"}) {
    const std::string json = fmt::format("{}/{}.json", dir.path(), where);
    r = RunCommand(fmt::format(
        "{} run --quiet --trace {}/trace.log --checker '{}' --fs {} --cache off,lying --window 8e "
        "--points acks --states 2 --exhaustive --check-in {} --json {}",
        POWERCUT_BIN, rec, kChecker, fs, where, json));
    ASSERT_NE(r.exit_code, 2) << where << ":\n" << r.output;
    reports[where] = nlohmann::json::parse(ReadFile(json));
  }
  utsname host{};
  ::uname(&host);
  EXPECT_EQ(reports["host"]["parameters"]["check_method"], "loop mount");
  EXPECT_EQ(reports["host"]["parameters"]["check_kernel"], host.release);
  EXPECT_EQ(reports["guest"]["parameters"]["check_method"], "guest mount");
  // The guest's kernel is the one that recorded the trace.
  const std::string recorded_by =
      nlohmann::json::parse(ReadFile(dir.path() + "/rec.json")).at("run").value("kernel", "");
  const std::string guest_kernel = reports["guest"]["parameters"]["check_kernel"];
  ASSERT_FALSE(guest_kernel.empty());
  EXPECT_NE(recorded_by.find(guest_kernel), std::string::npos) << recorded_by;

  const auto host_counts = Counts(reports["host"]);
  const auto guest_counts = Counts(reports["guest"]);
  ASSERT_EQ(host_counts.size(), 2u);
  for (const auto& [cache, h] : host_counts) {
    ASSERT_TRUE(guest_counts.contains(cache)) << cache;
    const ModelCounts& g = guest_counts.at(cache);
    EXPECT_EQ(h.could_not_check, 0) << fs << " cache " << cache;
    EXPECT_GT(h.states, 0) << fs << " cache " << cache;
    EXPECT_TRUE(g == h) << fs << " cache " << cache << ": host " << h.states << " states, "
                        << h.violations << " violating, " << h.fs_repaired << " repaired, "
                        << h.fs_unrecoverable << " unrecoverable; guest " << g.states << ", "
                        << g.violations << ", " << g.fs_repaired << ", " << g.fs_unrecoverable
                        << ", could not check " << g.could_not_check;
    // Physics: fdatasync keeps its promise unless the drive lies about flushes.
    if (cache == "lying") {
      EXPECT_GT(h.violations, 0) << fs;
    } else {
      EXPECT_EQ(h.violations, 0) << fs << " cache " << cache;
    }
  }
}

// `powercut check` and `powercut repro` judge in a guest too, and say where the guest's time
// went: check in its text and its JSON, repro in its text (docs/run.md, "Where the time goes").
TEST(GuestCheckPhasesVmTest, CheckAndReproSayWhereTheGuestsTimeWent) {
  TempDir dir;
  const std::string rec = dir.path() + "/rec";
  auto r = RecordXlog("ext4", 2, rec, "--check-in guest");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string json = dir.path() + "/check.json";
  r = RunCommand(fmt::format(
      "{} check --trace {}/trace.log --checker '{}' --fs ext4 --cache off,lying --window 8e "
      "--points acks --states 1 --check-in guest --json {}",
      POWERCUT_BIN, rec, kChecker, json));
  ASSERT_EQ(r.exit_code, 1) << "the lying drive loses acked blocks:\n" << r.output;
  EXPECT_NE(r.output.find("guest check, mean per state: host-fsck"), std::string::npos) << r.output;
  const nlohmann::json report = nlohmann::json::parse(ReadFile(json));
  EXPECT_EQ(report["parameters"]["check_method"], "guest mount");
  std::map<std::string, double> steps;
  for (const auto& step : report.value("check_phases", nlohmann::json::array())) {
    steps[step.at(0).get<std::string>()] = step.at(1).get<double>();
  }
  // ext4's `e2fsck -p` runs on the host (host-fsck); the guest mounts; powercut-workload's
  // checker is forked by its resident server (checker-fork), never exec'd per state.
  for (const char* step :
       {"host-fsck", "state-block", "fsck", "mount", "checker-fork", "umount", "exchange"}) {
    EXPECT_TRUE(steps.contains(step))
        << step << " in " << report.value("check_phases", nlohmann::json());
  }
  EXPECT_FALSE(steps.contains("checker")) << report.value("check_phases", nlohmann::json());
  EXPECT_GT(steps["checker-fork"], 0.0);

  std::string violating;
  for (const auto& m : report.at("results")) {
    if (m.at("cache") == "lying" && m.at("first_violation").is_object()) {
      violating = m.at("first_violation").at("state").get<std::string>();
    }
  }
  ASSERT_FALSE(violating.empty()) << report.dump(2);
  r = RunCommand(fmt::format(
      "{} repro {} --trace {}/trace.log --checker '{}' --fs ext4 --check-in guest --recheck",
      POWERCUT_BIN, violating, rec, kChecker));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("guest check, mean per state: host-fsck"), std::string::npos) << r.output;
}

INSTANTIATE_TEST_SUITE_P(XfsAndBtrfs, GuestFsVmTest, ::testing::Values("xfs", "btrfs"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
}  // namespace powercut::product
