// `--kernel PATH` without a guest (harness/vm/machine/kernel.h): the forms a user's kernel comes
// in, and every bad input refused before a boot with an error saying what is wrong and what to do.
// The kernel trees here are small stand-ins (a bzImage setup header with its version string, a
// modules.dep); the real Debian kernel as a .deb and as a folder is booted in kernel_guest_test.
#include "harness/vm/machine/kernel.h"

#include <elf.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "harness/vm/machine/initramfs.h"
#include "harness/vm/machine/pvh_kernel.h"
#include "harness/vm/warm/vm_run.h"
#include "tests/vm/vm_temp_dir.h"

namespace powercut::vm {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kRelease[] = "6.9.0-test";

void WriteText(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

// An x86 boot sector with the setup header's "HdrS" and a version string at 0x200 + 0x300.
void WriteBzImage(const fs::path& path, const std::string& version) {
  std::string image(0x1000, '\0');
  image.replace(0x202, 4, "HdrS");
  image[0x20e] = 0x00;
  image[0x20f] = 0x03;
  image.replace(0x500, version.size(), version);
  WriteText(path, image);
}

// lib/modules/<release> with the guest's base modules and ext4, but no xfs.
void WriteModules(const fs::path& dir, bool with_dep = true) {
  std::string dep;
  for (const char* m : {"virtio_pci", "virtio_blk", "virtio_console", "9pnet_virtio", "9p",
                        "dm-mod", "dm-log-writes", "dm-flakey", "ext4", "btrfs", "f2fs", "loop"}) {
    const std::string rel = fmt::format("kernel/{}.ko", m);
    WriteText(dir / rel, "not a real module");
    dep += rel + ":\n";
  }
  if (with_dep) WriteText(dir / "modules.dep", dep);
  WriteText(dir / "modules.builtin", "");
}

class UserKernelTest : public ::testing::Test {
 protected:
  // A root as `dpkg-deb -x` or INSTALL_PATH/INSTALL_MOD_PATH leave it.
  fs::path MakeRoot(const std::string& image_version = std::string(kRelease) + " (me@host) #1") {
    fs::path root = fs::path(dir_.path()) / "root";
    WriteBzImage(root / "boot" / fmt::format("vmlinuz-{}", kRelease), image_version);
    WriteModules(root / "lib/modules" / kRelease);
    return root;
  }
  VmTempDir dir_;
};

TEST_F(UserKernelTest, OpensARootFolderAndNamesItInReports) {
  const fs::path root = MakeRoot();
  auto k = OpenUserKernel(root.string());
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ(k->release, kRelease);
  EXPECT_EQ(k->version, std::string(kRelease) + " (me@host) #1");
  EXPECT_EQ(k->source, root.string());
  EXPECT_EQ(KernelName(*k), fmt::format("{} (--kernel {})", kRelease, root.string()));
  // No xfs in this kernel: said by name, the rest is there.
  auto missing = MissingModules(*k, DefaultGuestModules());
  ASSERT_TRUE(missing.ok()) << missing.status();
  EXPECT_THAT(*missing, ElementsAre("xfs"));
}

TEST_F(UserKernelTest, OpensAModulesInstallFolderWithTheImageInside) {
  const fs::path modules = fs::path(dir_.path()) / "lib/modules" / kRelease;
  WriteModules(modules);
  WriteBzImage(modules / "vmlinuz", std::string(kRelease) + " #2");
  auto k = OpenUserKernel(modules.string());
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ(k->release, kRelease);
  EXPECT_EQ(fs::path(k->vmlinuz).filename(), "vmlinuz");
}

TEST_F(UserKernelTest, ARecordingOnAFileSystemTheKernelLacksFailsBeforeAnyBoot) {
  auto k = OpenUserKernel(MakeRoot().string());
  ASSERT_TRUE(k.ok()) << k.status();
  VmEnvironment env;
  env.kernel = *k;
  env.agent = "/bin/true";
  env.missing_modules = {"xfs"};
  EXPECT_TRUE(RequireModules(env, {"ext4"}, "a recording on ext4").ok());
  absl::Status s = RequireModules(env, {"xfs"}, "a recording on xfs");
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("lacks xfs (CONFIG_XFS_FS), which a recording on xfs needs"));
  EXPECT_THAT(s.message(), HasSubstr(kRelease));
  // GuestPool::Record asks this before it boots: kernel_guest_test, with Debian's modules.
}

TEST_F(UserKernelTest, ABootFailureIsExplainedFromTheConsole) {
  VmEnvironment env;
  env.kernel.release = kRelease;
  env.kernel.source = "/k";
  EXPECT_EQ(BootFailureHint(env, "Booting\nall fine\n"), "");
  EXPECT_EQ(BootFailureHint(env,
                            "x\n[    1.5] virtio_blk: disagrees about version of symbol "
                            "module_layout\n[    1.6] insmod: Invalid module format\ny\n"),
            fmt::format("guest kernel {} (--kernel /k): its modules were not built for this "
                        "kernel image (\"[    1.6] insmod: Invalid module format\")",
                        kRelease));
  EXPECT_THAT(BootFailureHint(env, "[ 2.0] Kernel panic - not syncing: VFS: Unable to mount root"),
              HasSubstr("the kernel panicked"));
}

TEST_F(UserKernelTest, RefusesBadInputSayingWhatToDo) {
  const fs::path root = MakeRoot();
  const fs::path modules = root / "lib/modules" / kRelease;
  {
    auto k = OpenUserKernel((fs::path(dir_.path()) / "nothing-here").string());
    EXPECT_TRUE(absl::IsNotFound(k.status())) << k.status();
  }
  {
    // A file that is not a .deb (e.g. a bare bzImage).
    auto k = OpenUserKernel((root / "boot" / fmt::format("vmlinuz-{}", kRelease)).string());
    EXPECT_THAT(k.status().message(), HasSubstr("must be a linux-image .deb"));
  }
  {
    fs::remove(modules / "modules.dep");
    auto k = OpenUserKernel(root.string());
    EXPECT_THAT(k.status().message(), HasSubstr("has no modules.dep; run `depmod -b"));
    WriteModules(modules);
  }
  {
    // The image of another build than the modules.
    WriteBzImage(root / "boot" / fmt::format("vmlinuz-{}", kRelease), "6.9.1-other #1");
    auto k = OpenUserKernel(root.string());
    EXPECT_THAT(k.status().message(), HasSubstr("is release 6.9.1-other but the modules"));
  }
  {
    // vmlinux (an ELF file), not a bzImage.
    WriteText(root / "boot" / fmt::format("vmlinuz-{}", kRelease), std::string(0x1000, 'x'));
    auto k = OpenUserKernel(root.string());
    EXPECT_THAT(k.status().message(), HasSubstr("not an x86 bzImage"));
    WriteBzImage(root / "boot" / fmt::format("vmlinuz-{}", kRelease),
                 std::string(kRelease) + " #1");
  }
  {
    // A config without the ACPI PCI hot-plug the warm guests' disks need.
    WriteText(root / "boot" / fmt::format("config-{}", kRelease),
              "CONFIG_BLK_DEV_INITRD=y\nCONFIG_DEVTMPFS=y\nCONFIG_TMPFS=y\nCONFIG_PROC_FS=y\n"
              "CONFIG_SYSFS=y\n# CONFIG_HOTPLUG_PCI_ACPI is not set\n");
    auto k = OpenUserKernel(root.string());
    EXPECT_THAT(k.status().message(), HasSubstr("CONFIG_HOTPLUG_PCI_ACPI=y (warm guests"));
  }
  {
    // A folder that is no kernel at all.
    fs::create_directories(fs::path(dir_.path()) / "empty");
    auto k = OpenUserKernel((fs::path(dir_.path()) / "empty").string());
    EXPECT_THAT(k.status().message(), HasSubstr("neither a linux-image .deb"));
  }
}

// The PVH boot (harness/vm/machine/pvh_kernel.h): a bzImage's payload unpacked in every compression
// Debian's and users' kernels use, and only an x86-64 ELF with the PVH entry note accepted.
class PvhKernelTest : public ::testing::Test {
 protected:
  // A minimal x86-64 ELF whose one PT_NOTE segment carries a Xen note of `note_type` (18 is
  // XEN_ELFNOTE_PHYS32_ENTRY).
  static std::string Elf(uint32_t note_type) {
    Elf64_Ehdr eh{};
    std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
    eh.e_ident[EI_CLASS] = ELFCLASS64;
    eh.e_machine = EM_X86_64;
    eh.e_phoff = sizeof eh;
    eh.e_phentsize = sizeof(Elf64_Phdr);
    eh.e_phnum = 1;
    Elf64_Nhdr nh{.n_namesz = 4, .n_descsz = 4, .n_type = note_type};
    Elf64_Phdr ph{};
    ph.p_type = PT_NOTE;
    ph.p_offset = sizeof eh + sizeof ph;
    ph.p_filesz = sizeof nh + 8;
    std::string elf(reinterpret_cast<const char*>(&eh), sizeof eh);
    elf.append(reinterpret_cast<const char*>(&ph), sizeof ph);
    elf.append(reinterpret_cast<const char*>(&nh), sizeof nh);
    elf.append("Xen\0\x00\x10\x00\x01", 8);
    return elf;
  }

  // A bzImage (boot protocol 2.15, one setup sector) whose payload is `payload` followed by the
  // 4-byte size the kernel's build appends.
  static std::string BzImage(const std::string& payload) {
    std::string image(0x400, '\0');
    image.replace(0x202, 4, "HdrS");
    image[0x206] = 0x0f;
    image[0x207] = 0x02;
    image[0x1f1] = 1;
    const uint32_t offset = 0x40;
    const auto length = static_cast<uint32_t>(payload.size() + 4);
    std::memcpy(image.data() + 0x248, &offset, 4);
    std::memcpy(image.data() + 0x24c, &length, 4);
    image += std::string(offset, '\0') + payload + "\x01\x02\x03\x04";
    return image;
  }

  // `data` compressed by the command-line tool (xz -C crc32 as the kernel's build does).
  std::string Compress(const std::vector<std::string>& tool, const std::string& data) {
    const fs::path in = fs::path(dir_.path()) / "in";
    const fs::path out = fs::path(dir_.path()) / "out";
    WriteText(in, data);
    std::string command;
    for (const std::string& word : tool) command += word + " ";
    EXPECT_EQ(std::system(fmt::format("{}< {} > {}", command, in.string(), out.string()).c_str()),
              0);
    std::ifstream read(out, std::ios::binary);
    return {std::istreambuf_iterator<char>(read), std::istreambuf_iterator<char>()};
  }

  VmTempDir dir_;
};

TEST_F(PvhKernelTest, UnpacksXzGzipAndZstdPayloadsToTheElfInside) {
  const std::string elf = Elf(18);
  ASSERT_TRUE(HasPvhEntry(elf));
  for (const auto& tool : std::vector<std::vector<std::string>>{
           {"xz", "-C", "crc32", "-c"}, {"gzip", "-9", "-c"}, {"zstd", "-q", "-c"}}) {
    auto out = UnpackBzImagePayload(BzImage(Compress(tool, elf)));
    ASSERT_TRUE(out.ok()) << tool[0] << ": " << out.status();
    EXPECT_EQ(*out, elf) << tool[0];
  }
}

TEST_F(PvhKernelTest, RefusesWhatItCannotBootThatWay) {
  EXPECT_FALSE(HasPvhEntry(Elf(17)));  // a Xen note, but not the PVH entry
  std::ifstream self("/proc/self/exe", std::ios::binary);
  EXPECT_FALSE(HasPvhEntry({std::istreambuf_iterator<char>(self), {}}));  // no Xen notes
  EXPECT_FALSE(HasPvhEntry("not an elf"));

  auto not_bz = UnpackBzImagePayload(std::string(0x1000, '\0'));
  EXPECT_TRUE(absl::IsInvalidArgument(not_bz.status())) << not_bz.status();
  EXPECT_THAT(not_bz.status().message(), HasSubstr("not an x86 bzImage"));

  auto lz4 = UnpackBzImagePayload(BzImage(std::string("\x02\x21\x4c\x18 lz4 stream", 15)));
  EXPECT_TRUE(absl::IsUnimplemented(lz4.status())) << lz4.status();

  std::string xz = Compress({"xz", "-C", "crc32", "-c"}, Elf(18));
  xz.resize(xz.size() / 2);  // a truncated payload is an error, never a short kernel
  auto cut = UnpackBzImagePayload(BzImage(xz));
  EXPECT_TRUE(absl::IsDataLoss(cut.status())) << cut.status();
}

}  // namespace
}  // namespace powercut::vm
