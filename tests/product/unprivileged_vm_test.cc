// Issue 13: crash states judged in a guest by the recording kernel, and powercut as an ordinary
// user. One matrix of a known-good and a known-bad control (xlog-append with fdatasync; with no
// barrier at all) on ext4, cache off and on:
//
//   - as root with `--check-in host` (loop mounts: the host kernel judges);
//   - as a user created for the test (no sudo, no setuid, no capabilities), with no --check-in:
//     the default must pick the guest there, and the verdicts must be root's.
//
// Both must match physics (the known-good loses nothing, the known-bad loses acked commits under
// both models), and each cell's JSON must say which method and which kernel judged it. Without
// root (no user can be created) the test runs the guest half as the current user instead and
// says so.
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "gtest/gtest.h"
#include "harness/vm/kernel.h"
#include "nlohmann/json.hpp"
#include "tests/product/test_util.h"

namespace powercut::product {
namespace {

namespace fs = std::filesystem;
using testing::ReadFile;
using testing::RunCommand;
using testing::TempDir;

constexpr char kCells[] =
    "matrix --workloads xlog-append --barriers fdatasync,none --fs ext4 --cache off,on --count 6 "
    "--states 4 --quiet";

// cell name -> cache -> violations, after checking the method and kernel of every cell.
std::map<std::string, std::map<std::string, int>> Verdicts(const nlohmann::json& report,
                                                           const std::string& method,
                                                           const std::string& kernel) {
  std::map<std::string, std::map<std::string, int>> out;
  for (const auto& cell : report.at("cells")) {
    const std::string name = cell.at("cell");
    EXPECT_EQ(cell.at("status").get<std::string>() != "error", true) << cell.dump(2);
    EXPECT_EQ(cell.value("check_method", ""), method) << name;
    EXPECT_EQ(cell.value("check_kernel", ""), kernel) << name;
    // Where a guest check's time went, step by step (docs/run.md); nothing for loop mounts.
    std::vector<std::string> steps;
    for (const auto& p : cell.value("check_phases", nlohmann::json::array())) {
      EXPECT_GE(p.at(1).get<double>(), 0) << name << " " << p.dump();
      steps.push_back(p.at(0));
    }
    if (method == "guest mount") {
      // (In the order the steps first ran: a file system the boot path could not bring back
      // skips the checker.)
      std::sort(steps.begin(), steps.end());
      EXPECT_EQ(steps, (std::vector<std::string>{"checker", "exchange", "fsck", "mount", "release",
                                                 "state-block", "umount"}))
          << name;
    } else {
      EXPECT_TRUE(steps.empty()) << name;
    }
    for (const auto& m : cell.at("results")) {
      EXPECT_EQ(m.at("could_not_check"), 0) << name << " " << m.dump(2);
      EXPECT_GT(m.at("states").get<int>(), 0) << name;
      out[name][m.at("cache")] = m.at("violations").get<int>();
    }
  }
  return out;
}

void ExpectPhysics(const std::map<std::string, std::map<std::string, int>>& verdicts) {
  ASSERT_EQ(verdicts.size(), 2u);
  for (const auto& [cell, models] : verdicts) {
    ASSERT_EQ(models.size(), 2u) << cell;
    for (const auto& [cache, violations] : models) {
      if (cell.find("/fdatasync/") != std::string::npos) {
        EXPECT_EQ(violations, 0) << cell << " (known-good) cache " << cache;
      } else {
        EXPECT_GT(violations, 0) << cell << " (known-bad) cache " << cache;
      }
    }
  }
}

std::string GuestKernel() {
  auto k = vm::FetchKernel();
  return k.ok() ? k->release : "";
}

// A user made for the test, removed at the end.
class TestUser {
 public:
  explicit TestUser(std::string name) : name_(std::move(name)) {
    RunCommand("userdel " + name_);  // a leftover of an interrupted run
    made_ = RunCommand(fmt::format("useradd --no-create-home --home-dir /nonexistent "
                                   "--shell /bin/sh {}",
                                   name_))
                .exit_code == 0;
  }
  ~TestUser() {
    if (!made_) return;
    RunCommand("userdel --force " + name_);
  }
  bool made() const { return made_; }
  const std::string& name() const { return name_; }

 private:
  const std::string name_;
  bool made_ = false;
};

TEST(UnprivilegedVmTest, ControlsJudgedInGuestAsOrdinaryUserMatchRootOnHost) {
  const std::string guest_kernel = GuestKernel();
  ASSERT_FALSE(guest_kernel.empty()) << "no guest kernel in the cache";
  TempDir dir;
  if (::geteuid() != 0) {
    std::fprintf(stderr,
                 "not root: no test user can be created; checking in the guest as the current "
                 "user only (the root comparison is skipped)\n");
    const std::string json = dir.path() + "/guest.json";
    auto r =
        RunCommand(fmt::format("{} {} --check-in guest --json {}", POWERCUT_BIN, kCells, json));
    ASSERT_NE(r.exit_code, 2) << r.output;
    ExpectPhysics(Verdicts(nlohmann::json::parse(ReadFile(json)), "guest mount", guest_kernel));
    return;
  }
  // Root: loop mounts, the host kernel judges.
  const std::string root_json = dir.path() + "/root.json";
  auto r =
      RunCommand(fmt::format("{} {} --check-in host --json {}", POWERCUT_BIN, kCells, root_json));
  ASSERT_NE(r.exit_code, 2) << r.output;
  utsname host{};
  ::uname(&host);
  const auto root =
      Verdicts(nlohmann::json::parse(ReadFile(root_json)), "loop mount", host.release);
  ExpectPhysics(root);

  // The user: its own cache (the kernel and initramfs linked from root's, so no download), its
  // own output folder, nothing else of root's it can write.
  TestUser user(fmt::format("pcut{}", ::getpid() % 100000));
  ASSERT_TRUE(user.made()) << "useradd failed";
  const std::string home = dir.path() + "/user";
  const std::string cache = home + "/cache";
  fs::create_directories(home);
  auto root_cache = vm::CacheRoot();
  ASSERT_TRUE(root_cache.ok());
  ASSERT_EQ(
      RunCommand(fmt::format("cp -al {}/kernel {}/initramfs {}/", *root_cache, *root_cache, home))
          .exit_code,
      0);
  fs::create_directories(cache);
  ASSERT_EQ(RunCommand(fmt::format("mv {0}/kernel {0}/initramfs {1}/ && chmod 755 {2} && "
                                   "find {0} -type d -exec chown {3} {{}} +",
                                   home, cache, dir.path(), user.name()))
                .exit_code,
            0);
  const std::string user_json = home + "/user.json";
  // runuser: a login-less switch to the user (no sudo, no setuid bit used by powercut itself);
  // TMPDIR and HOME point at the user's folder, the caps it gets are none.
  auto u = RunCommand(
      fmt::format("cd {0} && runuser -u {1} -- env HOME={0} TMPDIR={0} POWERCUT_CACHE={2} sh -c "
                  "'grep CapEff /proc/self/status; {3} {4} --json {5}'",
                  home, user.name(), cache, POWERCUT_BIN, kCells, user_json));
  ASSERT_NE(u.exit_code, 2) << u.output;
  EXPECT_NE(u.output.find("CapEff:\t0000000000000000"), std::string::npos) << u.output;
  const auto guest =
      Verdicts(nlohmann::json::parse(ReadFile(user_json)), "guest mount", guest_kernel);
  ExpectPhysics(guest);
  for (const auto& [cell, models] : root) {
    for (const auto& [cache_model, violations] : models) {
      EXPECT_EQ(violations > 0, guest.at(cell).at(cache_model) > 0)
          << cell << " cache " << cache_model << ": root (host) " << violations
          << " violating states, user (guest) " << guest.at(cell).at(cache_model);
    }
  }
}

}  // namespace
}  // namespace powercut::product
