// `powercut run` end to end in the real VM (qemu, the guest kernel, ext4, the NBD recorder) with
// the xlog workload: fdatasync passes under cache off and on, no barrier loses acks under on, and
// a workload that never acks is reported as "could not run". Small counts and ack points only, to
// stay within a few minutes of TCG time. No torn variants: ext4 on the 128 MiB disk has 1 KiB
// blocks, so the in-flight overwrite can be torn inside a 4 KiB unit (docs/results.md).
#include <algorithm>
#include <filesystem>
#include <thread>

#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/product/test_util.h"

namespace powercut::product {
namespace {

using ::testing::HasSubstr;
using testing::ReadFile;
using testing::RunCommand;
using testing::TempDir;

std::string XlogRun(const std::string& barrier, const std::string& cache, const std::string& json) {
  return fmt::format(
      "{} run --workload '{} xlog run --barrier {} --count 12' --checker '{} xlog check' "
      "--fs ext4 --cache {} --points acks --states 8 --atomic 4096 --no-torn --json {} --quiet",
      POWERCUT_BIN, WORKLOAD_BIN, barrier, WORKLOAD_BIN, cache, json);
}

TEST(RunInVm, FdatasyncPassesOffAndOn) {
  TempDir dir;
  auto r = RunCommand(XlogRun("fdatasync", "off,on", dir.File("r.json")));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  nlohmann::json j = nlohmann::json::parse(ReadFile(dir.File("r.json")));
  ASSERT_EQ(j["results"].size(), 2u) << j.dump(2);
  for (const auto& m : j["results"]) {
    EXPECT_EQ(m["violations"], 0) << m.dump(2);
    EXPECT_GT(m["states"].get<int>(), 0);
    EXPECT_TRUE(m["first_violation"].is_null());
  }
  EXPECT_EQ(j["run"]["acks"], 12);
  // Judged in the guest that recorded (the default): one check worker per 32 planned states (about
  // 24 here; how many depends on when jbd2 commits, so a loaded machine can plan more), and the
  // recording guest is the first worker's guest, so the check boots one guest fewer than workers.
  int planned = 0;
  for (const auto& m : j["results"]) planned += m["states_planned"].get<int>();
  const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  const int workers = std::clamp((planned + 31) / 32, 1, cores);
  EXPECT_EQ(j["parameters"]["check_method"], "guest mount") << j["parameters"].dump();
  EXPECT_EQ(j["parameters"]["workers"], workers) << planned << " states planned";
  EXPECT_EQ(j["run"]["check_guests"]["adopted"], 1) << j["run"].dump();
  EXPECT_EQ(j["run"]["check_guests"]["booted"], workers - 1) << j["run"].dump();
}

TEST(RunInVm, NoBarrierLosesAcksUnderOn) {
  TempDir dir;
  auto r = RunCommand(XlogRun("none", "on", dir.File("r.json")));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  nlohmann::json j = nlohmann::json::parse(ReadFile(dir.File("r.json")));
  ASSERT_EQ(j["results"].size(), 1u);
  EXPECT_GT(j["results"][0]["violations"].get<int>(), 0);
  EXPECT_GT(j["results"][0]["lost_acks_max"].get<int>(), 0);
  EXPECT_FALSE(j["results"][0]["first_violation"].is_null());
}

// The rebuild command a failing run prints still works after powercut exited and removed its
// /var/tmp run folder: the recording was kept beside the report.
TEST(RunInVm, TheRebuildCommandOfAFailingRunWorksAfterItEnded) {
  TempDir dir;
  std::filesystem::create_directories(dir.File("report"));
  auto r = RunCommand(XlogRun("none", "on", dir.File("report/r.json")));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  nlohmann::json j = nlohmann::json::parse(ReadFile(dir.File("report/r.json")));
  std::string recording = j["run"]["recording"].get<std::string>();
  EXPECT_EQ(recording, dir.File("report/recordings/run"));
  EXPECT_THAT(r.output, HasSubstr("recording of the failing run kept in " + recording));
  EXPECT_GT(j["run"]["recording_bytes"].get<uint64_t>(), 0u);
  EXPECT_EQ(j["run"]["recordings"]["kept"].size(), 1u);
  const nlohmann::json& worst = j["results"][0]["worst_violation"];
  ASSERT_TRUE(worst.is_object()) << j.dump(2);
  std::string rebuild = worst["rebuild"].get<std::string>();
  EXPECT_THAT(rebuild, HasSubstr(recording + "/trace.log"));
  EXPECT_EQ(rebuild.find("/var/tmp/powercut-run-"), std::string::npos) << rebuild;
  EXPECT_THAT(r.output, HasSubstr(recording + "/trace.log"));  // the table prints the same paths

  auto rebuilt = RunCommand(fmt::format("cd {} && {}", dir.path(), rebuild));
  ASSERT_EQ(rebuilt.exit_code, 0) << rebuild << "\n" << rebuilt.output;
  std::error_code ec;
  EXPECT_EQ(std::filesystem::file_size(dir.File("crash.img"), ec),
            std::filesystem::file_size(recording + "/base.img", ec));
  // An ext4 image (no torn writes in this run, so its superblock is whole).
  auto super = RunCommand(fmt::format("dumpe2fs -h {}", dir.File("crash.img")));
  EXPECT_EQ(super.exit_code, 0) << super.output;
  EXPECT_THAT(super.output, HasSubstr("Filesystem magic number:  0xEF53"));
}

TEST(RunInVm, AWorkloadThatNeverAcksCouldNotRun) {
  TempDir dir;
  auto r =
      RunCommand(fmt::format("{} run --workload 'echo working; true' --checker true "
                             "--fs ext4 --json {} --quiet",
                             POWERCUT_BIN, dir.File("r.json")));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("never acked"));
  nlohmann::json j = nlohmann::json::parse(ReadFile(dir.File("r.json")));
  EXPECT_EQ(j["run"]["error_kind"], "no-acks");
}

}  // namespace
}  // namespace powercut::product
