// The fault modes of `powercut run` in the real VM (docs/live-cuts.md): live power cuts land
// inside the replay model and get verdicts of their own; on a disk that fails for a window and
// heals, the control that retries fdatasync after EIO and then acks FAILS (acks_after_failure
// names the lost ids) while the WAL, which fences at a failed barrier, PASSES.
#include <string>

#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/product/test_util.h"

namespace powercut::product {
namespace {

using testing::ReadFile;
using testing::RunCommand;
using testing::TempDir;

std::string RunLine(const std::string& workload, const std::string& checker,
                    const std::string& flags, const std::string& json) {
  return fmt::format("{} run --quiet --workload '{}' --checker '{}' {} --json {}", POWERCUT_BIN,
                     workload, checker, flags, json);
}

TEST(FaultsVmTest, BadFaultFlagsAreRejectedBeforeTheVmBoots) {
  TempDir dir;
  auto r = RunCommand(RunLine("true", "true", "--flakey error_blocks", dir.path() + "/r.json"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, ::testing::HasSubstr("--flakey \"error_blocks\": not a failing disk's "
                                             "mode; expected error_writes or drop_writes"));
  r = RunCommand(
      RunLine("true", "true", "--flakey drop_writes --flakey-for soon", dir.path() + "/r.json"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, ::testing::HasSubstr("--flakey-for 'soon'"));
  r = RunCommand(
      RunLine("true", "true", "--live-cuts 2 --flakey drop_writes", dir.path() + "/r.json"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
}

TEST(FaultsVmTest, LiveCutsOfTheWalAreInsideTheModelAndLoseNothing) {
  TempDir dir;
  const std::string json = dir.path() + "/live.json";
  auto r = RunCommand(
      RunLine(fmt::format("{} wal run --barrier fdatasync --threads 2 --count 10", WORKLOAD_BIN),
              fmt::format("{} wal check", WORKLOAD_BIN), "--cache on --live-cuts 2", json));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, ::testing::HasSubstr("2 of 2 live cuts inside the model (cache on)"));
  const auto j = nlohmann::json::parse(ReadFile(json));
  const auto& live = j["run"]["live_cuts"];
  EXPECT_EQ(live["in_model"], 2) << live.dump(2);
  EXPECT_EQ(live["violations"], 0) << live.dump(2);
  for (const auto& cut : live["cuts"]) {
    EXPECT_TRUE(cut["in_model"].get<bool>()) << cut.dump(2);
    EXPECT_THAT(cut["state_id"].get<std::string>(), ::testing::StartsWith("pc1_"));
    EXPECT_TRUE(cut["lost"].empty()) << cut.dump(2);
    EXPECT_GT(cut["record_seconds"].get<double>(), 0);
    // Judged by the replay's method (root: the host's loop mounts).
    EXPECT_EQ(cut["check_method"], j["parameters"]["check_method"]) << cut.dump(2);
    // A cut lands after its trigger ack: the acks before it are at least that many, or the run
    // ended first and says so.
    if (cut["cut"].get<bool>()) {
      EXPECT_GE(cut["acks_before_cut"].get<uint64_t>(), cut["cut_after_ack"].get<uint64_t>());
    }
  }
}

// With --check-in guest a cut image is judged as the replayed states are: in a warm guest by the
// recording kernel (issue 13), and each cut says so. One cut, few states: the replay's guest
// judges the cut too.
TEST(FaultsVmTest, LiveCutsAreJudgedInTheGuestWithCheckInGuest) {
  TempDir dir;
  const std::string json = dir.path() + "/live.json";
  auto r = RunCommand(RunLine(
      fmt::format("{} wal run --barrier fdatasync --count 6", WORKLOAD_BIN),
      fmt::format("{} wal check", WORKLOAD_BIN),
      "--cache on --points acks --states 2 --live-cuts 1 --check-in guest --workers 1", json));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, ::testing::HasSubstr("1 of 1 live cuts inside the model (cache on)"));
  EXPECT_THAT(r.output, ::testing::HasSubstr("check by guest mount on kernel "));
  const auto j = nlohmann::json::parse(ReadFile(json));
  const std::string kernel = j["parameters"]["check_kernel"];
  EXPECT_EQ(j["parameters"]["check_method"], "guest mount") << j["parameters"].dump(2);
  const auto& live = j["run"]["live_cuts"];
  ASSERT_EQ(live["cuts"].size(), 1u) << live.dump(2);
  for (const auto& cut : live["cuts"]) {
    EXPECT_FALSE(cut.contains("error")) << cut.dump(2);
    EXPECT_TRUE(cut["in_model"].get<bool>()) << cut.dump(2);
    EXPECT_TRUE(cut["lost"].empty()) << cut.dump(2);
    // The recording kernel judged it, as it judged the replayed states.
    EXPECT_EQ(cut["check_method"], "guest mount") << cut.dump(2);
    EXPECT_EQ(cut["check_kernel"], kernel) << cut.dump(2);
  }
}

TEST(FaultsVmTest, RetryAfterEioFailsOnAHealingDiskWhileTheWalPasses) {
  TempDir dir;
  const std::string flags = "--flakey error_writes --flakey-after-acks 3 --flakey-for 1s";
  const std::string retry_json = dir.path() + "/retry.json";
  auto r = RunCommand(RunLine(fmt::format("{} retry run --count 10 --pause-ms 50", WORKLOAD_BIN),
                              fmt::format("{} retry check", WORKLOAD_BIN), flags, retry_json));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, ::testing::HasSubstr("not on the final image ("));
  auto j = nlohmann::json::parse(ReadFile(retry_json));
  const auto& f = j["run"]["flakey"];
  EXPECT_EQ(f["mode"], "error_writes");
  EXPECT_EQ(f["acks_before_failure"], 3) << f.dump(2);
  EXPECT_FALSE(f["acks_after_failure"].empty())
      << "the retried acks are not on the disk: " << f.dump(2);
  EXPECT_TRUE(f["lost_before_failure"].empty()) << f.dump(2);
  EXPECT_TRUE(f["healed"].get<bool>()) << f.dump(2);

  const std::string wal_json = dir.path() + "/wal.json";
  r = RunCommand(
      RunLine(fmt::format("{} wal run --barrier fdatasync --threads 2 --count 14", WORKLOAD_BIN),
              fmt::format("{} wal check", WORKLOAD_BIN), flags, wal_json));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  j = nlohmann::json::parse(ReadFile(wal_json));
  const auto& w = j["run"]["flakey"];
  EXPECT_EQ(w["violations"], 0) << w.dump(2);
  EXPECT_NE(w["workload_exit"], 0) << "the WAL fences (stops) at the failed barrier: " << w.dump(2);
}

}  // namespace
}  // namespace powercut::product
