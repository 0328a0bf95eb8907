// The file-system table (harness/fs/file_system.h): every row complete, the one parse of a name.
#include "harness/fs/file_system.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "base/process.h"
#include "base/scratch_dir.h"
#include "fmt/format.h"
#include "harness/fs/fsck.h"

namespace powercut::harness {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

bool Has(const std::vector<std::string>& argv, const std::string& arg) {
  return std::find(argv.begin(), argv.end(), arg) != argv.end();
}

void ExpectStepSane(const FileSystem& fs, const FsStep& step) {
  SCOPED_TRACE(fmt::format("{}: {}", fs.name, step.name));
  EXPECT_FALSE(step.name.empty());
  ASSERT_FALSE(step.argv.empty());
  EXPECT_TRUE(Has(step.argv, "{image}"));
  EXPECT_FALSE(step.ok_exits.empty());
  for (int code : step.repaired_exits) {
    EXPECT_NE(std::find(step.ok_exits.begin(), step.ok_exits.end(), code), step.ok_exits.end())
        << "repaired exit " << code << " is not an ok exit";
  }
}

TEST(FileSystemTable, RowsAreInFsKindOrderWithUniqueNamesAndOneDefault) {
  std::set<std::string> names;
  int defaults = 0;
  size_t i = 0;
  for (const FileSystem& fs : AllFileSystems()) {
    EXPECT_EQ(static_cast<size_t>(fs.kind), i++) << fs.name;
    EXPECT_EQ(&FileSystemOf(fs.kind), &fs);
    EXPECT_STREQ(FsName(fs.kind), fs.name);
    EXPECT_TRUE(names.insert(fs.name).second) << "two rows named " << fs.name;
    defaults += fs.default_fs ? 1 : 0;
  }
  EXPECT_EQ(defaults, 1);
  EXPECT_TRUE(AllFileSystems().front().raw());
  EXPECT_TRUE(names.count("f2fs"));
}

TEST(FileSystemTable, EveryFileSystemRowIsComplete) {
  for (const FileSystem& fs : AllFileSystems()) {
    SCOPED_TRACE(fs.name);
    EXPECT_GT(fs.min_image_bytes, 0u);
    EXPECT_GE(fs.default_image_bytes, fs.min_image_bytes);
    EXPECT_EQ(fs.default_image_bytes % 4096, 0u);
    EXPECT_EQ(fs.min_image_bytes % 4096, 0u);
    if (fs.raw()) {
      EXPECT_STREQ(fs.package, "");
      EXPECT_TRUE(fs.boot_steps.empty() && fs.recovery_steps.empty());
      EXPECT_TRUE(fs.fsck.argv.empty() && fs.guest_modules.empty());
      EXPECT_TRUE(fs.MkfsArgv(4096).empty());
      continue;
    }
    EXPECT_STRNE(fs.package, "");
    EXPECT_EQ(fs.block_size, 4096u);
    ASSERT_FALSE(fs.block_size_reading.argv.empty());
    EXPECT_TRUE(Has(fs.block_size_reading.argv, "{image}"));
    EXPECT_FALSE(fs.block_size_reading.prefix.empty());
    // A crash image the mount cannot bring back must have somewhere to go.
    EXPECT_FALSE(fs.recovery_steps.empty());
    for (const FsStep& step : fs.boot_steps) ExpectStepSane(fs, step);
    for (const FsStep& step : fs.recovery_steps) ExpectStepSane(fs, step);
    ASSERT_FALSE(fs.fsck.argv.empty());
    EXPECT_TRUE(Has(fs.fsck.argv, "{image}"));
    EXPECT_FALSE(fs.fsck.clean_exits.empty());
    EXPECT_EQ(fs.fsck.replay_argv.empty(), fs.fsck.replay_ok_exits.empty());
    ASSERT_FALSE(fs.guest_modules.empty());
    for (const GuestModule& m : fs.guest_modules) {
      EXPECT_STRNE(m.module, "");
      EXPECT_THAT(m.config_option, StartsWith("CONFIG_"));
    }
    EXPECT_EQ(fs.read_without_mount_argv.empty(), *fs.read_without_mount_method == '\0');
    if (!fs.read_without_mount_argv.empty()) {
      EXPECT_TRUE(Has(fs.read_without_mount_argv, "{image}"));
    }
  }
}

TEST(FileSystemTable, ParsesEachNameExactlyAndNothingElse) {
  for (const FileSystem& fs : AllFileSystems()) {
    auto kind = ParseFsKind(fs.name);
    ASSERT_TRUE(kind.ok()) << kind.status();
    EXPECT_EQ(*kind, fs.kind);
  }
  // No fallback: a typo, another case, a blank or nothing is an error, never raw or ext4.
  for (const char* wrong : {"ext5", "EXT4", "ext4 ", "", "zfs", "ext4,xfs"}) {
    auto kind = ParseFsKind(wrong, "--fs");
    ASSERT_FALSE(kind.ok()) << wrong;
    EXPECT_TRUE(absl::IsInvalidArgument(kind.status()));
    const std::string message(kind.status().message());
    EXPECT_THAT(message, HasSubstr(fmt::format("--fs '{}'", wrong)));
    for (const FileSystem& fs : AllFileSystems()) EXPECT_THAT(message, HasSubstr(fs.name));
  }
  EXPECT_THAT(std::string(ParseFsKind("ntfs", "job.json: \"fs\"").status().message()),
              HasSubstr("job.json: \"fs\" 'ntfs'"));
  EXPECT_EQ(FsNames(), "raw, ext4, xfs, btrfs, f2fs");
  EXPECT_EQ(FsNames(/*with_raw=*/false), "ext4, xfs, btrfs, f2fs");
}

TEST(FileSystemTable, CatalogPropertiesAreRowFieldsByName) {
  for (const FileSystem& fs : AllFileSystems()) {
    EXPECT_EQ(*HasCatalogProperty(fs, "overwrites_out_of_place"), fs.overwrites_out_of_place);
    EXPECT_EQ(*HasCatalogProperty(fs, "direct_dsync_overwrite_may_skip_flush"),
              fs.direct_dsync_overwrite_may_skip_flush);
    EXPECT_FALSE(HasCatalogProperty(fs, "fast").ok());
  }
  // Measured (docs/results.md): btrfs writes an overwrite out of place, f2fs may ack the first
  // O_DIRECT|O_DSYNC overwrite unflushed; ext4 and xfs neither.
  EXPECT_TRUE(FileSystemOf(FsKind::kBtrfs).overwrites_out_of_place);
  EXPECT_FALSE(FileSystemOf(FsKind::kF2fs).overwrites_out_of_place);
  EXPECT_TRUE(FileSystemOf(FsKind::kF2fs).direct_dsync_overwrite_may_skip_flush);
  EXPECT_EQ(DefaultFs(), FsKind::kExt4);
  EXPECT_EQ(*ParseFsKinds("ext4,f2fs"), (std::vector<FsKind>{FsKind::kExt4, FsKind::kF2fs}));
  EXPECT_EQ(FsListName({FsKind::kExt4, FsKind::kF2fs}), "ext4,f2fs");
  EXPECT_FALSE(ParseFsKinds("").ok());
  EXPECT_FALSE(ParseFsKinds("ext4,").ok());
}

TEST(FileSystemTable, AManifestNamesARawDiskByNothing) {
  EXPECT_TRUE(FileSystemOf(*ParseManifestFs("", "disks[].fs")).raw());
  EXPECT_EQ(*ParseManifestFs("f2fs", "disks[].fs"), FsKind::kF2fs);
  EXPECT_FALSE(ParseManifestFs("f3fs", "disks[].fs").ok());
}

TEST(FileSystemTable, MkfsArgvSaysTheSectorAndPutsTheUsersOptionsBeforeTheImage) {
  for (const FileSystem& fs : AllFileSystems()) {
    if (fs.raw()) continue;
    const std::vector<std::string> argv = fs.MkfsArgv(4096, {"-L", "mine"});
    ASSERT_GE(argv.size(), 3u);
    EXPECT_EQ(argv.back(), "{image}") << fs.name;
    EXPECT_EQ(argv[argv.size() - 2], "mine") << fs.name;
    for (const std::string& a : argv) EXPECT_THAT(a, ::testing::Not(HasSubstr("{physical")));
  }
  EXPECT_THAT(ShellJoin(FileSystemOf(FsKind::kXfs).MkfsArgv(512)), HasSubstr("-s size=512"));
}

TEST(FileSystemTable, ExpandReplacesInsideArguments) {
  EXPECT_EQ(
      Expand({"debugfs", "-R", "rdump / {dir}", "{image}"}, {{"{dir}", "/t"}, {"{image}", "i"}}),
      (std::vector<std::string>{"debugfs", "-R", "rdump / /t", "i"}));
  EXPECT_EQ(ShellJoin({"a b", "it's"}), "'a b' 'it'\\''s'");
}

// The read-only checker on a fresh image made by the row's own mkfs: clean, exit as the row says.
TEST(FileSystemTable, EachCheckerCallsAFreshImageOfItsMkfsClean) {
  auto dir = ScratchDir::Create("powercut-fs-table");
  ASSERT_TRUE(dir.ok()) << dir.status();
  for (const FileSystem& fs : AllFileSystems()) {
    if (fs.raw()) continue;
    SCOPED_TRACE(fs.name);
    const std::vector<std::string> mkfs = fs.MkfsArgv(4096);
    if (!SystemToolInstalled(mkfs.front()) || !SystemToolInstalled(fs.fsck.argv.front())) {
      std::printf("%s not installed (apt-get install %s): %s skipped\n", mkfs.front().c_str(),
                  fs.package, fs.name);
      continue;
    }
    const std::string image = dir->path() + "/" + fs.name + ".img";
    std::ofstream(image).close();
    std::filesystem::resize_file(image, fs.default_image_bytes);
    auto made = RunCommand(WithImage(mkfs, image));
    ASSERT_TRUE(made.ok()) << made.status();
    ASSERT_EQ(made->exit_code, 0) << made->output;
    auto problem = FsckImage(fs.kind, image);
    ASSERT_TRUE(problem.ok()) << problem.status();
    EXPECT_EQ(*problem, "");
  }
  auto raw = FsckCommand(FsKind::kRaw, "x.img");
  ASSERT_FALSE(raw.ok());
  EXPECT_THAT(std::string(raw.status().message()), HasSubstr("ext4, xfs, btrfs, f2fs"));
}

}  // namespace
}  // namespace powercut::harness
