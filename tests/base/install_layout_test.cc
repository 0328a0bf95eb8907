// InstallLayout (base/install_layout.h): every program finds its helpers in the real build tree
// (paths from CMake), in an installed tree at any prefix (never in a build tree around it), and
// beside itself when copied into a folder of its own.
#include "base/install_layout.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "base/temp_dir.h"
#include "gtest/gtest.h"

namespace powercut {
namespace {

namespace fs = std::filesystem;

void Touch(const fs::path& p) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << "";
}

// The table's rows against where CMake really puts each program (TARGET_FILE).
TEST(InstallLayoutTest, BuildTreeFindsEveryHelperWhereCMakeBuildsIt) {
  const std::vector<std::pair<std::string, std::string>> built = {
      {"powercut-vm", POWERCUT_VM_BIN},
      {"powercut-vm-agent", POWERCUT_VM_AGENT_BIN},
      {"powercut-workload", POWERCUT_WORKLOAD_BIN},
      {"powercut-workload-clients", POWERCUT_WORKLOAD_CLIENTS_BIN},
      {"powercut-fstest-exec", POWERCUT_FSTEST_EXEC_BIN},
      {"powercut-cluster", POWERCUT_CLUSTER_BIN},
#ifdef POWERCUT_BIN
      {"powercut", POWERCUT_BIN},
      {"walbench", WALBENCH_BIN},
      {"waldump", WALDUMP_BIN},
#endif
  };
  for (const auto& [self_name, self] : built) {
    const InstallLayout layout = InstallLayout::Of(self);
    EXPECT_EQ(layout.kind(), InstallLayout::Kind::kBuildTree) << self;
    EXPECT_EQ(layout.root(), fs::path(POWERCUT_BUILD_DIR).lexically_normal().string()) << self;
    for (const auto& [name, path] : built) {
      EXPECT_EQ(layout.Find(name), path) << "from " << self_name;
    }
  }
}

TEST(InstallLayoutTest, InstalledTreeUsesBinAndLibexecUnderItsPrefixOnly) {
  testing::TempDir dir;
  ASSERT_TRUE(dir.ok());
  // The prefix sits inside a folder that looks like a build tree: installed wins, so an
  // installed program never reaches into a build folder around it.
  Touch(fs::path(dir.path()) / "CMakeCache.txt");
  const fs::path prefix = fs::path(dir.path()) / "opt" / "pc";
  Touch(prefix / "bin" / "powercut");
  Touch(prefix / "bin" / "powercut-workload");
  Touch(prefix / "libexec" / "powercut" / "powercut-vm-agent");
  Touch(prefix / "libexec" / "powercut" / "powercut-workload-clients");
  for (const fs::path& self : {prefix / "bin" / "powercut", prefix / "bin" / "powercut-workload",
                               prefix / "libexec" / "powercut" / "powercut-workload-clients"}) {
    const InstallLayout layout = InstallLayout::Of(self.string());
    EXPECT_EQ(layout.kind(), InstallLayout::Kind::kInstalled) << self;
    EXPECT_EQ(layout.root(), prefix.string()) << self;
    EXPECT_EQ(layout.Find("powercut-vm-agent"),
              (prefix / "libexec" / "powercut" / "powercut-vm-agent").string());
    EXPECT_EQ(layout.Find("powercut-workload-clients"),
              (prefix / "libexec" / "powercut" / "powercut-workload-clients").string());
    EXPECT_EQ(layout.Find("powercut-workload"), (prefix / "bin" / "powercut-workload").string());
    EXPECT_NE(layout.Describe().find(prefix.string()), std::string::npos);
  }
}

// A bin/ folder without libexec/powercut beside it is not an installed tree (~/bin, /usr/bin of
// programs copied by hand): helpers are looked for beside the program.
TEST(InstallLayoutTest, LooseFolderLooksBesideTheProgram) {
  testing::TempDir dir;
  ASSERT_TRUE(dir.ok());
  const fs::path bin = fs::path(dir.path()) / "bin";
  Touch(bin / "powercut");
  const InstallLayout layout = InstallLayout::Of((bin / "powercut").string());
  EXPECT_EQ(layout.kind(), InstallLayout::Kind::kLoose);
  EXPECT_EQ(layout.Find("powercut-vm-agent"), (bin / "powercut-vm-agent").string());
  EXPECT_EQ(layout.Find("powercut-workload"), (bin / "powercut-workload").string());
}

}  // namespace
}  // namespace powercut
