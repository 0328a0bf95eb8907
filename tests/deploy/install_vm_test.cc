// Issue 23, item 1: an installed tree works on its own. `cmake --install` of this build into a
// fresh prefix puts the programs in bin/, their helpers in libexec/powercut/ and the documents in
// share/doc/powercut/; then a user made for the test (no capabilities), with only the prefix's
// bin/ and the system folders on PATH, runs one `powercut run` cell and one matrix cell that
// starts a helper from libexec/ (rocksdb: powercut-workload-clients). Every program path in the
// reports is under the prefix: no program reached into the build tree. Without root (no user can
// be made) the cells run as the current user and the test says so.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/product/test_user.h"
#include "tests/product/test_util.h"

namespace powercut::product {
namespace {

namespace fs = std::filesystem;
using testing::CommandResult;
using testing::ReadFile;
using testing::RunAsUser;
using testing::RunCommand;
using testing::TempDir;
using testing::TestUser;
using testing::UserHome;

constexpr char kSystemPath[] = "/usr/sbin:/usr/bin:/sbin:/bin";

bool Executable(const fs::path& p) { return ::access(p.c_str(), X_OK) == 0; }

TEST(InstallVmTest, InstalledTreeRunsACellAsOrdinaryUserFromAnyPrefix) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  ASSERT_EQ(RunCommand(fmt::format("chmod 755 {}", dir.path())).exit_code, 0);
  const fs::path prefix = fs::path(dir.path()) / "some" / "prefix";
  auto install = RunCommand(
      fmt::format("cmake --install {} --prefix {}", POWERCUT_BUILD_DIR, prefix.string()));
  ASSERT_EQ(install.exit_code, 0) << install.output;
  for (const char* program :
       {"powercut", "powercut-workload", "powercut-vm", "walbench", "waldump"}) {
    EXPECT_TRUE(Executable(prefix / "bin" / program)) << program;
  }
  for (const char* helper :
       {"powercut-vm-agent", "powercut-workload-clients", "powercut-fstest-exec"}) {
    EXPECT_TRUE(Executable(prefix / "libexec" / "powercut" / helper)) << helper;
    EXPECT_FALSE(fs::exists(prefix / "bin" / helper)) << helper << " is a helper, not on PATH";
  }
  EXPECT_TRUE(fs::exists(prefix / "share" / "doc" / "powercut" / "README.md"));
  EXPECT_TRUE(fs::exists(prefix / "share" / "doc" / "powercut" / "docs" / "install.md"));

  // A cell of `powercut run` (powercut from PATH; the workload by the path PATH gives it, since
  // the guest runs commands with the system PATH, docs/install.md) and a rocksdb matrix cell (the
  // clients binary from libexec), 2 states per point: what matters here is where the programs
  // come from, not the verdicts' depth (the VM suites test those).
  const std::string path = (prefix / "bin").string() + ":" + kSystemPath;
  const std::string run_json = "run.json";
  const std::string matrix_json = "matrix.json";
  const std::string commands = fmt::format(
      "export PATH={0}; cd \"$HOME\"; command -v powercut; "
      "w=$(command -v powercut-workload); "
      "powercut run --quiet --workload \"$w xlog run --barrier fdatasync --count 8\" "
      "--checker \"$w xlog check\" --cache off,on --states 2 --json {1} && "
      "powercut matrix --quiet --workloads rocksdb --barriers sync --cache on --states 2 "
      "--count 8 --json {2}",
      path, run_json, matrix_json);
  CommandResult r;
  std::string home;
  std::unique_ptr<TestUser> user;
  if (::geteuid() == 0) {
    user = std::make_unique<TestUser>(fmt::format("pcin{}", ::getpid() % 100000));
    ASSERT_TRUE(user->made()) << "useradd failed";
    home = UserHome(dir.path(), *user);
    ASSERT_FALSE(home.empty());
    r = RunAsUser(*user, home, commands);
    EXPECT_NE(r.output.find("CapEff:\t0000000000000000"), std::string::npos) << r.output;
  } else {
    std::fprintf(stderr, "not root: no test user can be made; the cells run as the current user\n");
    home = dir.path() + "/home";
    fs::create_directories(home);
    r = RunCommand(fmt::format("HOME={} sh -c '{}'", home, commands));
  }
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find((prefix / "bin" / "powercut").string()), std::string::npos) << r.output;

  const nlohmann::json run = nlohmann::json::parse(ReadFile(home + "/" + run_json));
  const nlohmann::json matrix = nlohmann::json::parse(ReadFile(home + "/" + matrix_json));
  const std::string both = run.dump() + matrix.dump();
  // No program from the build tree was named anywhere in the reports.
  EXPECT_EQ(both.find(POWERCUT_BUILD_DIR), std::string::npos) << both;
  // The matrix ran the rocksdb cell with the clients binary from libexec/powercut.
  EXPECT_NE(both.find((prefix / "libexec" / "powercut" / "powercut-workload-clients").string()),
            std::string::npos)
      << matrix.dump(2);
  ASSERT_EQ(matrix.at("cells").size(), 1u) << matrix.dump(2);
  EXPECT_NE(matrix.at("cells").at(0).at("status").get<std::string>(), "error") << matrix.dump(2);
  for (const auto& m : run.at("results")) EXPECT_GT(m.at("states").get<int>(), 0) << run.dump(2);
}

}  // namespace
}  // namespace powercut::product
