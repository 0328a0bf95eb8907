// Issue 23, item 5: a killed job leaves nothing behind. A scheduler ends a job at its time limit
// with SIGTERM and then SIGKILL; SIGKILL runs no cleanup, so a `powercut check` killed mid-check
// leaves its scratch folder (powercut-check-*, the crash states' images). The next start of
// powercut must remove it (base/scratch_sweep.h) - and must not touch the folder of a run that is
// still alive, nor a folder that has no lock file.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "fmt/format.h"
#include "fmt/ranges.h"
#include "gtest/gtest.h"
#include "harness/trace/diff_trace.h"
#include "tests/harness_testing.h"
#include "tests/product/test_util.h"

namespace powercut::product {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using testing::ProcessAlive;
using testing::ReadFile;
using testing::RunCommand;

// The powercut-* entries of `dir` (folders and lock files).
std::vector<std::string> PowercutEntries(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.starts_with("powercut-")) out.push_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Starts `powercut check` on a raw trace with `tmp` as TMPDIR and a checker that reports its pid
// in `seen`, then sleeps; returns powercut's pid once the checker runs (its scratch folder is
// then in use), or -1.
pid_t StartCheck(const std::string& tmp, const std::string& log, const std::string& seen) {
  const std::string checker =
      fmt::format("echo $$ > {0}.tmp && mv {0}.tmp {0} && exec sleep 600", seen);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setenv("TMPDIR", tmp.c_str(), 1);
    ::execl(POWERCUT_BIN, POWERCUT_BIN, "check", "--trace", log.c_str(), "--fs", "raw",
            "--check-in", "host", "--workers", "1", "--checker", checker.c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  const auto deadline = Clock::now() + std::chrono::seconds(120);
  while (!fs::exists(seen) && Clock::now() < deadline) {
    if (::waitpid(pid, nullptr, WNOHANG) != 0) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // polling only
  }
  return fs::exists(seen) ? pid : -1;
}

// A start of powercut that does nothing else (usage: `powercut trace show` of a missing file).
std::string StartPowercut(const std::string& tmp) {
  return RunCommand(fmt::format("TMPDIR={} {} trace show {}/none.log", tmp, POWERCUT_BIN, tmp))
      .output;
}

TEST(ScratchSweepTest, NextStartRemovesWhatASigkilledCheckLeft) {
  testing::TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string tmp = dir.File("tmp");
  fs::create_directories(tmp);
  const std::string base = dir.File("base.img");
  harness::testing::MakeImage(base, 8 << 20);
  const std::string log = dir.File("t.log");
  ASSERT_TRUE(harness::WriteDiffTrace(base, base, log, {.acks = {"0"}}).ok());
  // A folder without a lock file (an older powercut's, another program's): never touched.
  fs::create_directories(tmp + "/powercut-check-unlocked");

  const std::string seen = dir.File("seen");
  const pid_t powercut = StartCheck(tmp, log, seen);
  ASSERT_GT(powercut, 0) << "the checker never ran";
  pid_t checker = 0;
  {
    std::istringstream in(ReadFile(seen));
    in >> checker;
  }
  const std::vector<std::string> live = PowercutEntries(tmp);
  // The check's folder and its lock file, beside the unlocked folder.
  ASSERT_EQ(live.size(), 3u) << fmt::format("{}", fmt::join(live, " "));

  // Another start while the check runs: its folder is in use, nothing is removed.
  const std::string during = StartPowercut(tmp);
  EXPECT_EQ(during.find("removed"), std::string::npos) << during;
  EXPECT_EQ(PowercutEntries(tmp), live);

  ASSERT_EQ(::kill(powercut, SIGKILL), 0);
  ASSERT_EQ(::waitpid(powercut, nullptr, 0), powercut);
  // A checker started with posix_spawn outlives powercut (base/process.h); it holds no lock.
  if (checker > 0 && ProcessAlive(checker)) ::kill(checker, SIGKILL);
  EXPECT_EQ(PowercutEntries(tmp), live) << "SIGKILL ran no cleanup: the folder is still there";

  const std::string after = StartPowercut(tmp);
  EXPECT_NE(after.find("removed 1 scratch folder(s) of dead runs"), std::string::npos) << after;
  EXPECT_EQ(PowercutEntries(tmp), std::vector<std::string>{"powercut-check-unlocked"});
}

}  // namespace
}  // namespace powercut::product
