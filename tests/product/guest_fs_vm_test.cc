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

class GuestFsVmTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GuestFsVmTest, GuestChecksMatchHostChecks) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root for the host half (loop mounts)";
  const std::string fs = GetParam();
  TempDir dir;
  const std::string rec = dir.path() + "/rec";
  const std::string checker = fmt::format("{} xlog check", WORKLOAD_BIN);
  auto r = RunCommand(fmt::format(
      "{} run --quiet --workload '{} xlog run --barrier fdatasync --append --count 3' "
      "--checker '{}' --fs {} --cache off --points acks --states 2 --keep {} --json {}/rec.json",
      POWERCUT_BIN, WORKLOAD_BIN, checker, fs, rec, dir.path()));
  ASSERT_EQ(r.exit_code, 0) << r.output;

  // The same trace, judged both ways.
  std::map<std::string, nlohmann::json> reports;
  for (const std::string where : {"host", "guest"}) {
    const std::string json = fmt::format("{}/{}.json", dir.path(), where);
    r = RunCommand(fmt::format(
        "{} run --quiet --trace {}/trace.log --checker '{}' --fs {} --cache off,lying --window 8e "
        "--points acks --states 2 --exhaustive --check-in {} --json {}",
        POWERCUT_BIN, rec, checker, fs, where, json));
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

INSTANTIATE_TEST_SUITE_P(XfsAndBtrfs, GuestFsVmTest, ::testing::Values("xfs", "btrfs"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
}  // namespace powercut::product
