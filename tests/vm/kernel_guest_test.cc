// `--kernel PATH` booted (label "vm"): Debian's own kernel passed explicitly, as the linux-image
// .deb apt-get downloads and as the folder `dpkg-deb -x` + depmod make of it, records in a warm
// guest that runs exactly that kernel (the workload prints `uname -r`); a folder whose modules
// lack the file system is refused before any boot, naming the module.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "base/process.h"
#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "harness/vm/machine/kernel.h"
#include "harness/vm/warm/guest_pool.h"
#include "harness/vm/warm/vm_run.h"
#include "tests/vm/vm_temp_dir.h"
#include "tests/vm/vm_test_env.h"

namespace powercut::vm {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class KernelGuestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto env = testing::PrepareTestVm();  // the default kernel: the one passed back below
    if (!env.ok()) GTEST_SKIP() << env.status().message();
    default_ = *env;
  }

  // The default kernel's package, downloaded as a user would.
  std::string DownloadDeb() {
    const std::string spec =
        fmt::format("{}={}", default_.kernel.package, default_.kernel.package_version);
    auto dl = RunCommandOrError("apt-get download " + spec, {"apt-get", "download", "-q", spec},
                                dir_.path());
    EXPECT_TRUE(dl.ok()) << dl.status();
    for (const auto& e : fs::directory_iterator(dir_.path())) {
      if (e.path().extension() == ".deb") return e.path().string();
    }
    ADD_FAILURE() << "apt-get download left no .deb in " << dir_.path();
    return "";
  }

  // `dpkg-deb -x` of the default kernel (hard links of the cached unpacked tree, which is
  // exactly that) with its modules indexed by depmod, as `make modules_install` leaves them;
  // `drop`: a module file removed first.
  std::string ExtractedFolder(const std::string& drop = "") {
    const fs::path root = fs::path(dir_.path()) / "root";
    const fs::path cached =
        fs::path(default_.kernel.modules_dir).parent_path().parent_path().parent_path();
    EXPECT_TRUE(RunCommandOrError("cp -al", {"cp", "-al", cached.string(), root.string()}).ok());
    const fs::path modules = root / "lib/modules" / default_.kernel.release;
    for (const auto& e : fs::directory_iterator(modules)) {
      if (e.path().filename().string().rfind("modules.", 0) == 0) fs::remove(e.path());
    }
    if (!drop.empty()) {
      for (const auto& e : fs::recursive_directory_iterator(modules / "kernel")) {
        if (e.path().filename().string().rfind(drop + ".ko", 0) == 0) fs::remove(e.path());
      }
    }
    auto depmod =
        RunCommandOrError("depmod", {"depmod", "-b", root.string(), default_.kernel.release});
    EXPECT_TRUE(depmod.ok()) << depmod.status();
    return root.string();
  }

  // One recording on ext4 in a guest booted from `kernel`; returns what `uname -r` said in it.
  std::string RecordUname(const std::string& kernel) {
    auto env = PrepareVm(POWERCUT_VM_AGENT_PATH, kernel);
    if (!env.ok()) {
      ADD_FAILURE() << env.status();
      return "";
    }
    EXPECT_EQ(env->kernel.release, default_.kernel.release);
    if (!kernel.empty()) {
      EXPECT_THAT(KernelName(env->kernel), HasSubstr("--kernel " + kernel));
    }
    EXPECT_TRUE(env->missing_modules.empty());
    // Debian's kernel has a PVH entry (CONFIG_PVH=y), so qemu boots its unpacked ELF unless told
    // otherwise (pvh_kernel.h).
    EXPECT_EQ(env->boot, std::getenv("POWERCUT_VM_BOOT") == nullptr ? "pvh" : "bzImage");
    GuestPool pool(*env);
    RunSpec spec;
    spec.fs = harness::FsKind::kExt4;
    spec.command = "uname -r; echo ack 1 >&$POWERCUT_ACK_FD";
    spec.output_dir = (fs::path(dir_.path()) / "out").string();
    spec.timeout = std::chrono::seconds(240);
    auto r = pool.Record(spec);
    if (!r.ok()) {
      ADD_FAILURE() << r.status();
      return "";
    }
    EXPECT_EQ(r->host_acks.size(), 1u);
    std::string out = ReadText(r->workload_log);
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    return out;
  }

  VmEnvironment default_;
  VmTempDir dir_;
};

TEST_F(KernelGuestTest, DebianKernelPassedAsADebRecords) {
  const std::string deb = DownloadDeb();
  ASSERT_FALSE(deb.empty());
  EXPECT_EQ(RecordUname(deb), default_.kernel.release);
}

TEST_F(KernelGuestTest, DebianKernelPassedAsAnExtractedFolderRecords) {
  const std::string root = ExtractedFolder();
  EXPECT_EQ(RecordUname(root), default_.kernel.release);
}

// POWERCUT_VM_BOOT=bzimage: the kernel's own decompressor and SeaBIOS's loader instead of the PVH
// entry; the same kernel comes up.
TEST_F(KernelGuestTest, TheBzImageBootIsKeptOnRequest) {
  ASSERT_EQ(default_.boot, "pvh");
  ::setenv("POWERCUT_VM_BOOT", "bzimage", 1);
  const std::string release = RecordUname("");
  ::unsetenv("POWERCUT_VM_BOOT");
  EXPECT_EQ(release, default_.kernel.release);
}

TEST_F(KernelGuestTest, AModulesFolderWithoutTheFileSystemIsRefusedNamingIt) {
  const std::string root = ExtractedFolder("xfs");
  auto env = PrepareVm(POWERCUT_VM_AGENT_PATH, root);
  ASSERT_TRUE(env.ok()) << env.status();  // ext4 recordings still work with it
  EXPECT_THAT(env->missing_modules, ::testing::ElementsAre("xfs"));
  GuestPool pool(*env);
  RunSpec spec;
  spec.fs = harness::FsKind::kXfs;
  spec.command = "true";
  spec.output_dir = (fs::path(dir_.path()) / "out").string();
  auto r = pool.Record(spec);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(),
              HasSubstr("lacks xfs (CONFIG_XFS_FS), which a recording on xfs"));
  EXPECT_EQ(pool.boots(), 0u);
}

}  // namespace
}  // namespace powercut::vm
