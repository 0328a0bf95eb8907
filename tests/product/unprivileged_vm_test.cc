// Issue 13: crash states judged in a guest by the recording kernel, and powercut as an ordinary
// user. The headline preset (`matrix --preset headline`, the ten cells on ext4):
//
//   - as root with `--check-in host` (loop mounts: the host kernel judges);
//   - as a user created for the test (no sudo, no setuid, no capabilities), with no --check-in:
//     the default must pick the guest there, and the verdicts must be root's, cell by cell and
//     cache model by cache model.
//
// Each cell's JSON must say which method and which kernel judged it, and every cell must be as
// the catalog expects. `walbench cache` runs as the same kind of user and must measure both
// drives. Without root (no user can be created) the test runs the guest half as the current user
// instead and says so.
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "fmt/format.h"
#include "gtest/gtest.h"
#include "harness/vm/machine/kernel.h"
#include "nlohmann/json.hpp"
#include "tests/product/test_user.h"
#include "tests/product/test_util.h"

namespace powercut::product {
namespace {

namespace fs = std::filesystem;
using testing::ReadFile;
using testing::RunAsUser;
using testing::RunCommand;
using testing::TempDir;
using testing::TestUser;
using testing::UserHome;

// The preset's cells, with 2 states per crash point instead of 8: in-guest checks cost ~3-4 s
// of program starts per state under TCG (docs/run.md, "Where the time goes"), and at 8 the user's
// half took 11.5 min, too long for CI's budget; the same cells at 8 states gave the same verdicts
// (docs/nightly.md). The verdicts at 2 are still compared cell by cell with root's.
constexpr char kHeadline[] = "matrix --preset headline --states 2 --quiet";

// cell name -> cache -> whether that model violated, after checking the method and kernel of
// every cell, that every cell ran, and that each is as the catalog expects.
std::map<std::string, std::map<std::string, bool>> Verdicts(const nlohmann::json& report,
                                                            const std::string& method,
                                                            const std::string& kernel) {
  std::map<std::string, std::map<std::string, bool>> out;
  for (const auto& cell : report.at("cells")) {
    const std::string name = cell.at("cell");
    EXPECT_NE(cell.at("status").get<std::string>(), "error") << cell.dump(2);
    EXPECT_EQ(cell.value("unexpected", ""), "") << name;
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
      // skips the checker.) ext4's boot check runs on the host (host-fsck), and the built-in
      // checkers are forked by their resident server (checker-fork), never exec'd per state.
      std::sort(steps.begin(), steps.end());
      EXPECT_EQ(steps, (std::vector<std::string>{"checker-fork", "exchange", "fsck", "host-fsck",
                                                 "mount", "release", "state-block", "umount"}))
          << name;
    } else {
      EXPECT_TRUE(steps.empty()) << name;
    }
    for (const auto& m : cell.at("results")) {
      EXPECT_EQ(m.at("could_not_check"), 0) << name << " " << m.dump(2);
      EXPECT_GT(m.at("states").get<int>(), 0) << name;
      out[name][m.at("cache")] = m.at("violations").get<int>() > 0;
    }
  }
  EXPECT_EQ(out.size(), 10u) << "the headline has ten cells";
  return out;
}

std::string GuestKernel() {
  auto k = vm::FetchKernel();
  return k.ok() ? k->release : "";
}

// The checking guests of a guest-judged matrix: while recordings are left, the recording guest
// keeps its core and the checks get the others (at least one guest, booted beside the recording
// guest); after the last recording, the recording guest itself judges (GuestCheckPool::Grow).
void ExpectCheckGuests(const nlohmann::json& report) {
  const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  EXPECT_EQ(report["check_guests"]["adopted"], 1) << report["check_guests"].dump();
  EXPECT_EQ(report["check_guests"]["booted"], std::max(1, cores - 1))
      << report["check_guests"].dump();
}

TEST(UnprivilegedVmTest, HeadlineJudgedInGuestAsOrdinaryUserMatchesRootOnHost) {
  const std::string guest_kernel = GuestKernel();
  ASSERT_FALSE(guest_kernel.empty()) << "no guest kernel in the cache";
  TempDir dir;
  if (::geteuid() != 0) {
    std::fprintf(stderr,
                 "not root: no test user can be created; checking in the guest as the current "
                 "user only (the root comparison is skipped)\n");
    const std::string json = dir.path() + "/guest.json";
    auto r =
        RunCommand(fmt::format("{} {} --check-in guest --json {}", POWERCUT_BIN, kHeadline, json));
    ASSERT_NE(r.exit_code, 2) << r.output;
    Verdicts(nlohmann::json::parse(ReadFile(json)), "guest mount", guest_kernel);
    ExpectCheckGuests(nlohmann::json::parse(ReadFile(json)));
    return;
  }
  // Root: loop mounts, the host kernel judges.
  const std::string root_json = dir.path() + "/root.json";
  auto r = RunCommand(
      fmt::format("{} {} --check-in host --json {}", POWERCUT_BIN, kHeadline, root_json));
  ASSERT_NE(r.exit_code, 2) << r.output;
  utsname host{};
  ::uname(&host);
  const auto root =
      Verdicts(nlohmann::json::parse(ReadFile(root_json)), "loop mount", host.release);

  TestUser user(fmt::format("pcut{}", ::getpid() % 100000));
  ASSERT_TRUE(user.made()) << "useradd failed";
  const std::string home = UserHome(dir.path(), user);
  ASSERT_FALSE(home.empty());
  const std::string user_json = home + "/user.json";
  auto u =
      RunAsUser(user, home, fmt::format("{} {} --json {}", POWERCUT_BIN, kHeadline, user_json));
  ASSERT_NE(u.exit_code, 2) << u.output;
  EXPECT_NE(u.output.find("CapEff:\t0000000000000000"), std::string::npos) << u.output;
  const auto guest =
      Verdicts(nlohmann::json::parse(ReadFile(user_json)), "guest mount", guest_kernel);
  ExpectCheckGuests(nlohmann::json::parse(ReadFile(user_json)));
  for (const auto& [cell, models] : root) {
    ASSERT_TRUE(guest.contains(cell)) << cell;
    ASSERT_EQ(guest.at(cell).size(), models.size()) << cell;
    for (const auto& [cache_model, violated] : models) {
      EXPECT_EQ(violated, guest.at(cell).at(cache_model))
          << cell << " cache " << cache_model << ": root (host) "
          << (violated ? "violates" : "passes") << ", user (guest) "
          << (guest.at(cell).at(cache_model) ? "violates" : "passes");
    }
  }
}

// A set of two disks (issue 31): judged in guests as well, so it needs no root. The twodisk
// control with its data block fdatasynced keeps every ack under off and on, buffered and never
// synced loses them; each verdict as the catalog expects, every disk through its own boot path.
TEST(UnprivilegedVmTest, TwoDisksAreJudgedInGuestsAsOrdinaryUser) {
  if (::geteuid() != 0) GTEST_SKIP() << "not root: no test user can be created";
  const std::string guest_kernel = GuestKernel();
  ASSERT_FALSE(guest_kernel.empty()) << "no guest kernel in the cache";
  TempDir dir;
  TestUser user(fmt::format("pc2d{}", ::getpid() % 100000));
  ASSERT_TRUE(user.made()) << "useradd failed";
  const std::string home = UserHome(dir.path(), user);
  ASSERT_FALSE(home.empty());
  const std::string json = home + "/twodisk.json";
  auto r = RunAsUser(user, home,
                     fmt::format("{} matrix --workloads twodisk --barriers fdatasync,buffered "
                                 "--cache off,on --states 2 --quiet --json {}",
                                 POWERCUT_BIN, json));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("CapEff:\t0000000000000000"), std::string::npos) << r.output;
  const auto j = nlohmann::json::parse(ReadFile(json));
  ASSERT_EQ(j.at("cells").size(), 2u) << j.dump(2);
  for (const auto& cell : j.at("cells")) {
    const std::string name = cell.at("cell");
    EXPECT_EQ(cell.value("unexpected", ""), "") << name;
    EXPECT_EQ(cell.at("check_method"), "guest mount") << name;
    EXPECT_EQ(cell.at("check_kernel"), guest_kernel) << name;
    for (const auto& m : cell.at("results")) {
      EXPECT_EQ(m.at("could_not_check"), 0) << name << " " << m.dump(2);
      EXPECT_GT(m.at("states").get<int>(), 0) << name;
      const bool violated = m.at("violations").get<int>() > 0;
      EXPECT_EQ(violated, name.find("buffered") != std::string::npos) << name << " " << m.dump(2);
    }
  }
}

// `walbench cache` (the VM mode: boots with the drive's cache on and off) as an ordinary user:
// both drives measured, each seen by the guest as configured, and the on/off ratios computed.
TEST(UnprivilegedVmTest, WalbenchCacheRunsAsOrdinaryUser) {
  if (::geteuid() != 0) GTEST_SKIP() << "not root: no test user can be created";
  TempDir dir;
  TestUser user(fmt::format("pcwb{}", ::getpid() % 100000));
  ASSERT_TRUE(user.made()) << "useradd failed";
  const std::string home = UserHome(dir.path(), user);
  ASSERT_FALSE(home.empty());
  const std::string json = home + "/cache.json";
  auto r = RunAsUser(user, home,
                     fmt::format("{} cache --reps 1 --mib 4 --seconds 0.3 --commit-file-mib 1 "
                                 "--dir {} --json {}",
                                 WALBENCH_BIN, home, json));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("CapEff:\t0000000000000000"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("cache on"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("cache off"), std::string::npos) << r.output;
  const auto j = nlohmann::json::parse(ReadFile(json));
  ASSERT_EQ(j.at("runs").size(), 2u) << j.dump(2);
  for (const auto& run : j.at("runs")) {
    const bool on = run.at("cache") == "on";
    EXPECT_EQ(run.at("guest_write_cache"), on ? "write back" : "write through") << run.dump(2);
    EXPECT_EQ(run.at("write_cache"), on ? "write back" : "write through") << run.dump(2);
    EXPECT_GT(run.at("seq_write_mb_per_sec").get<double>(), 0) << run.dump(2);
    EXPECT_GT(run.at("commits_per_sec").get<double>(), 0) << run.dump(2);
  }
  EXPECT_GT(j.at("ratio_commits").get<double>(), 0) << j.dump(2);
  EXPECT_GT(j.at("ratio_seq_write").get<double>(), 0) << j.dump(2);
  // The drives' images were the user's and are gone: only the report is left in its folder.
  for (const auto& e : fs::directory_iterator(home)) {
    EXPECT_TRUE(e.path().filename() == "cache" || e.path().filename() == "cache.json")
        << "left behind: " << e.path();
  }
}

// `powercut fstest run` (docs/fstest.md) as an ordinary user: no root anywhere, the states judged
// in the guest by the recording kernel, a small sample of seq-1 clean under off and on.
TEST(UnprivilegedVmTest, FsTestRunsAsOrdinaryUser) {
  if (::geteuid() != 0) GTEST_SKIP() << "not root: no test user can be created";
  const std::string guest_kernel = GuestKernel();
  ASSERT_FALSE(guest_kernel.empty()) << "no guest kernel in the cache";
  TempDir dir;
  TestUser user(fmt::format("pcfs{}", ::getpid() % 100000));
  ASSERT_TRUE(user.made()) << "useradd failed";
  const std::string home = UserHome(dir.path(), user);
  ASSERT_FALSE(home.empty());
  const std::string json = home + "/fstest.json";
  auto r = RunAsUser(user, home,
                     fmt::format("{} fstest run --seq 1 --sample 3 --seed 5 --fs ext4 "
                                 "--expect-clean --quiet --json {}",
                                 POWERCUT_BIN, json));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("CapEff:\t0000000000000000"), std::string::npos) << r.output;
  const auto j = nlohmann::json::parse(ReadFile(json));
  ASSERT_EQ(j.at("cells").size(), 3u);
  for (const auto& cell : j.at("cells")) {
    EXPECT_EQ(cell.at("status"), "pass") << cell.dump(2);
    EXPECT_EQ(cell.at("check_method"), "guest mount");
    EXPECT_EQ(cell.at("check_kernel"), guest_kernel);
  }
}

// A cluster (`powercut run --nodes 3`, docs/cluster.md) as an ordinary user: the Redis example with
// appendfsync always, 3 acks, every crash state of the three nodes' disks judged in a guest by the
// recording kernel (no loop mount here), and every ack kept under cache off; then one single-node
// cut of the master, which loses nothing either. (Its unsafe setting, everysec, loses acks: ctest
// cluster_redis_vm, as root.)
TEST(UnprivilegedVmTest, AThreeNodeClusterIsJudgedInGuestsAsOrdinaryUser) {
  if (::geteuid() != 0) GTEST_SKIP() << "not root: no test user can be created";
  const std::string guest_kernel = GuestKernel();
  ASSERT_FALSE(guest_kernel.empty()) << "no guest kernel in the cache";
  TempDir dir;
  TestUser user(fmt::format("pccl{}", ::getpid() % 100000));
  ASSERT_TRUE(user.made()) << "useradd failed";
  const std::string home = UserHome(dir.path(), user);
  ASSERT_FALSE(home.empty());
  const std::string json = home + "/cluster.json";
  const std::string redis = std::string(CLUSTER_EXAMPLES) + "/redis";
  auto r = RunAsUser(
      user, home,
      fmt::format("{0} run --nodes 3 --node \"sh {1}/node.sh always\" --workload \"sh "
                  "{1}/workload.sh 3\" --checker \"sh {1}/check.sh\" --cache off --states 2 "
                  "--checker-timeout 40 --node-cuts 1 --seed 5 --node-down 1s "
                  "--expect off=survives,node-cut=survives --quiet --json {2}",
                  POWERCUT_BIN, redis, json));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("CapEff:\t0000000000000000"), std::string::npos) << r.output;
  const auto j = nlohmann::json::parse(ReadFile(json));
  EXPECT_EQ(j.at("parameters").at("check_method"), "guest mount") << j.dump(2);
  EXPECT_EQ(j.at("parameters").at("check_kernel"), guest_kernel);
  EXPECT_EQ(j.at("run").at("cluster").at("nodes"), 3);
  EXPECT_EQ(j.at("run").at("acks"), 3);
  ASSERT_EQ(j.at("results").size(), 1u) << j.dump(2);
  const auto& off = j.at("results").at(0);
  EXPECT_EQ(off.at("cache"), "off");
  EXPECT_GT(off.at("states").get<int>(), 0);
  EXPECT_EQ(off.at("violations"), 0) << off.dump(2);
  EXPECT_EQ(off.at("could_not_check"), 0) << off.dump(2);
  // One single-node cut (seed 6: the master, node 1, after ack 1) needs no root either: it is
  // made in the recording guest, and the live cluster's checker holds every ack (appendfsync
  // always: the master's AOF was fsynced before each reply).
  const auto& cuts = j.at("run").at("node_cuts");
  ASSERT_EQ(cuts.at("cuts").size(), 1u) << cuts.dump(2);
  const auto& cut = cuts.at("cuts").at(0);
  EXPECT_EQ(cut.at("error"), "") << cut.dump(2);
  EXPECT_TRUE(cut.at("fired").get<bool>()) << cut.dump(2);
  EXPECT_EQ(cut.at("node"), 1) << cut.dump(2);
  EXPECT_TRUE(cut.at("in_model").get<bool>()) << cut.dump(2);
  EXPECT_EQ(cut.at("acks"), 3) << cut.dump(2);
  EXPECT_TRUE(cut.at("lost").empty()) << cut.dump(2);
  EXPECT_EQ(cut.at("unavailable"), "") << cut.dump(2);
}

}  // namespace
}  // namespace powercut::product
