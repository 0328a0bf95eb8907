// powercut SIGKILLed while a crash state is loop-mounted on the host (`check --check-in host`):
// the mount lives in powercut's own mount namespace (base/mount_namespace.h), so the checker
// sees it, the host never does, and it is gone (its loop device detached) once the last process
// of that namespace has exited. Before, such a mount stayed in the host's table
// until someone unmounted it by hand. Needs root and loop devices (skips otherwise).
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "fmt/format.h"
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

// The mount source (e.g. /dev/loop3) of the mountinfo line whose mount point is `mountpoint`.
std::string SourceOf(const std::string& mountinfo, const std::string& mountpoint) {
  std::istringstream lines(mountinfo);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string id, parent, dev, root, point;
    fields >> id >> parent >> dev >> root >> point;
    if (point != mountpoint) continue;
    auto dash = line.find(" - ");
    if (dash == std::string::npos) return "";
    std::istringstream tail(line.substr(dash + 3));
    std::string type, source;
    tail >> type >> source;
    return source;
  }
  return "";
}

TEST(MountNamespace, SigkillMidCheckLeavesNoHostMount) {
  if (::geteuid() != 0 || ::access("/dev/loop-control", W_OK) != 0) {
    GTEST_SKIP() << "needs root and /dev/loop-control";
  }
  testing::TempDir dir;
  const std::string base = dir.File("base.img");
  harness::testing::MakeImage(base, 32 << 20);
  const std::string mkfs = "mkfs.ext4 -q -F -b 4096 " + base;
  ASSERT_EQ(std::system(mkfs.c_str()), 0) << mkfs;
  const std::string log = dir.File("t.log");
  ASSERT_TRUE(harness::WriteDiffTrace(base, base, log, {.acks = {"0"}}).ok());
  const std::string work = dir.File("work");
  const std::string mountpoint = work + "/worker0.mnt";
  const std::string seen = dir.File("seen");
  // The checker reports its pid and its mount table, then waits to be killed (exec: the pid
  // stays the shell's).
  const std::string checker = fmt::format(
      "{{ echo $$; cat /proc/self/mountinfo; }} > {0}.tmp && mv {0}.tmp {0} && exec sleep 600",
      seen);

  pid_t powercut = ::fork();
  ASSERT_GE(powercut, 0);
  if (powercut == 0) {
    ::execl(POWERCUT_BIN, POWERCUT_BIN, "check", "--trace", log.c_str(), "--fs", "ext4",
            "--check-in", "host", "--workers", "1", "--work-dir", work.c_str(), "--checker",
            checker.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  pid_t checker_pid = 0;
  // Whatever happens below: no process and no mount left behind.
  struct Cleanup {
    pid_t powercut;
    const pid_t* checker;
    std::string mountpoint;
    bool reaped = false;
    ~Cleanup() {
      if (!reaped) {
        ::kill(powercut, SIGKILL);
        ::waitpid(powercut, nullptr, 0);
      }
      if (*checker > 0 && ProcessAlive(*checker)) ::kill(*checker, SIGKILL);
      ::umount2(mountpoint.c_str(), MNT_DETACH);  // only after a failure does it find one
    }
  } cleanup{powercut, &checker_pid, mountpoint};

  const auto deadline = Clock::now() + std::chrono::seconds(120);
  while (!fs::exists(seen) && Clock::now() < deadline) {
    ASSERT_EQ(::waitpid(powercut, nullptr, WNOHANG), 0) << "powercut check exited early";
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // polling only
  }
  ASSERT_TRUE(fs::exists(seen)) << "the checker never ran";
  std::istringstream report(ReadFile(seen));
  std::string checker_mounts;
  report >> checker_pid;
  checker_mounts.assign(std::istreambuf_iterator<char>(report), {});
  ASSERT_GT(checker_pid, 0);
  // The checker, in powercut's namespace, sees the crash state mounted; the host does not.
  const std::string device = SourceOf(checker_mounts, mountpoint);
  ASSERT_EQ(device.rfind("/dev/loop", 0), 0u) << checker_mounts;
  EXPECT_EQ(ReadFile("/proc/self/mountinfo").find(mountpoint), std::string::npos);

  ASSERT_EQ(::kill(powercut, SIGKILL), 0);
  ASSERT_EQ(::waitpid(powercut, nullptr, 0), powercut);
  cleanup.reaped = true;
  // A checker started with posix_spawn does not die with powercut (base/process.h): it keeps the
  // namespace, and with it the mount, until it ends. Here it ends now.
  ASSERT_EQ(::kill(checker_pid, SIGKILL), 0);
  const fs::path backing =
      fs::path("/sys/block") / fs::path(device).filename() / "loop" / "backing_file";
  const auto gone_deadline = Clock::now() + std::chrono::seconds(20);
  // (The device may be taken again at once by someone else: only our scratch image counts.)
  auto attached = [&] { return ReadFile(backing).find(work) != std::string::npos; };
  while ((ProcessAlive(checker_pid) || attached()) && Clock::now() < gone_deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // polling only
  }
  EXPECT_FALSE(ProcessAlive(checker_pid));
  // The kernel unmounted the state with the namespace, so the autoclear loop device detached.
  EXPECT_FALSE(attached()) << device << " still attached to " << ReadFile(backing);
  EXPECT_EQ(ReadFile("/proc/self/mountinfo").find(mountpoint), std::string::npos);
  EXPECT_EQ(ReadFile("/proc/1/mountinfo").find(mountpoint), std::string::npos);
}

}  // namespace
}  // namespace powercut::product
