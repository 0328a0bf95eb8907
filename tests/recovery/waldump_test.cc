// Runs the waldump binary on logs built byte by byte: its JSON, its exit codes, --repair.
#include <stdio.h>
#include <sys/wait.h>

#include <nlohmann/json.hpp>
#include <string>

#include "gtest/gtest.h"
#include "tests/recovery/log_builder.h"
#include "wal/barrier.h"
#include "wal/wal.h"

namespace powercut {
namespace {

using powercut::testing::PayloadFor;
using powercut::testing::SegmentBuilder;
using powercut::testing::TempDir;
using powercut::testing::WriteFile;
using wal::Lsn;
using wal::SegmentFileName;

struct ToolRun {
  int exit_code = -1;
  std::string out;
};

ToolRun Waldump(const std::string& args) {
  ToolRun run;
  const std::string command = std::string(WALDUMP_PATH) + " " + args + " 2>/dev/null";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return run;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) run.out.append(buf, n);
  const int status = pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

nlohmann::json Json(const ToolRun& run) {
  auto parsed = nlohmann::json::parse(run.out, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(parsed.is_discarded()) << run.out;
  return parsed;
}

void BuildLog(const TempDir& dir, bool damage_middle, bool proven) {
  SegmentBuilder seg(1);
  uint64_t victim = 0;
  for (Lsn lsn = 1; lsn <= 8; ++lsn) {
    const uint64_t at = seg.Add(lsn, PayloadFor(lsn), proven ? lsn - 1 : 0);
    if (lsn == 6) victim = at;
  }
  std::string bytes = seg.Contents();
  if (damage_middle) bytes[victim + 40] ^= 4;
  WriteFile(dir.File(SegmentFileName(1)), bytes);
}

TEST(WaldumpTest, CleanLogJson) {
  TempDir dir;
  BuildLog(dir, false, true);
  const ToolRun run = Waldump(dir.path() + " --json");
  EXPECT_EQ(run.exit_code, 0);
  const auto j = Json(run);
  EXPECT_EQ(j["summary"]["tail"], "clean");
  EXPECT_EQ(j["summary"]["records"], 8);
  ASSERT_EQ(j["segments"].size(), 1u);
  EXPECT_EQ(j["segments"][0]["records"].size(), 8u);
  EXPECT_EQ(j["segments"][0]["records"][7]["lsn"], 8);
  EXPECT_EQ(j["segments"][0]["records"][7]["synced_lsn"], 7);
  EXPECT_EQ(j["segments"][0]["records"][7]["checksum"], "ok");
}

// A WAL written by the real Wal under every barrier mode reads back whole and clean.
TEST(WaldumpTest, ReadsALogOfEveryBarrierMode) {
  constexpr int kCommits = 20;
  for (wal::Barrier barrier : wal::AllBarriers()) {
    SCOPED_TRACE(std::string(wal::BarrierName(barrier)));
    TempDir dir;
    const std::string log_dir = dir.File("log");
    wal::WalOptions options;
    options.barrier = barrier;
    options.segment_bytes = 1 << 20;
    auto log = wal::Wal::Open(log_dir, options);
    ASSERT_TRUE(log.ok()) << log.status();
    for (int i = 1; i <= kCommits; ++i) {
      const std::string payload = PayloadFor(static_cast<Lsn>(i));
      auto lsn = (*log)->Commit(
          absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(payload.data()), payload.size()));
      ASSERT_TRUE(lsn.ok()) << lsn.status();
    }
    ASSERT_TRUE((*log)->Close().ok());

    const ToolRun run = Waldump(log_dir + " --json");
    EXPECT_EQ(run.exit_code, 0) << run.out;
    const auto j = Json(run);
    EXPECT_EQ(j["summary"]["tail"], "clean");
    EXPECT_EQ(j["summary"]["records"], kCommits);
  }
}

TEST(WaldumpTest, TornTailExitsZeroAndRepairCleansIt) {
  TempDir dir;
  BuildLog(dir, true, false);
  const ToolRun run = Waldump(dir.path() + " --json");
  EXPECT_EQ(run.exit_code, 0);
  const auto j = Json(run);
  EXPECT_EQ(j["summary"]["tail"], "torn");
  EXPECT_EQ(j["summary"]["records"], 5);
  EXPECT_EQ(j["summary"]["dropped_records"], 2);
  EXPECT_EQ(j["segments"][0]["stop"], "bad_checksum");
  EXPECT_EQ(j["segments"][0]["records_after_stop_count"], 2);

  const ToolRun repair = Waldump(dir.path() + " --repair --json");
  EXPECT_EQ(repair.exit_code, 0);
  EXPECT_GT(Json(repair)["repair"]["zeroed_bytes"].get<int>(), 0);
  const auto after = Json(Waldump(dir.path() + " --json"));
  EXPECT_EQ(after["summary"]["tail"], "clean");
  EXPECT_EQ(after["summary"]["records"], 5);
}

TEST(WaldumpTest, CorruptExitsOneAndRepairNeedsPointInTime) {
  TempDir dir;
  BuildLog(dir, true, true);
  const ToolRun run = Waldump(dir.path());
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.out.find("tail: corrupt"), std::string::npos) << run.out;
  EXPECT_EQ(Waldump(dir.path() + " --repair").exit_code, 1);
  EXPECT_EQ(Waldump(dir.path() + " --repair --mode point-in-time").exit_code, 1);
  const ToolRun after = Waldump(dir.path() + " --json");
  EXPECT_EQ(after.exit_code, 0);
  EXPECT_EQ(Json(after)["summary"]["tail"], "clean");
}

TEST(WaldumpTest, UnreadableInputExitsTwo) {
  TempDir dir;
  EXPECT_EQ(Waldump(dir.File("missing")).exit_code, 2);
  BuildLog(dir, false, false);
  WriteFile(dir.File("README"), "not a segment");
  EXPECT_EQ(Waldump(dir.path()).exit_code, 2);
  EXPECT_EQ(Waldump(dir.path() + " --mode bogus").exit_code, 2);
}

}  // namespace
}  // namespace powercut
