#include "bench/walbench/block_device.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <filesystem>
#include <fstream>

#include "base/temp_dir.h"

namespace powercut::walbench {
namespace {

using powercut::testing::TempDir;

namespace fs = std::filesystem;

TEST(ParseBlockStatTest, ReadsWritesAndFlushesFromSeventeenFields) {
  // A real line from /sys/block/vda/stat (Linux 6.x): field 16 is flush requests completed.
  auto stat = ParseBlockStat(
      "   33045     6446  2672346    17910    22295     6855  1813048     4763        0     6688 "
      "   23250     5836       87   204304      404     4512      172\n",
      "vda/stat");
  ASSERT_TRUE(stat.ok()) << stat.status();
  EXPECT_EQ(stat->write_ios, 22295u);
  EXPECT_EQ(stat->write_sectors, 1813048u);
  ASSERT_TRUE(stat->flush_ios.has_value());
  EXPECT_EQ(*stat->flush_ios, 4512u);
  EXPECT_EQ(stat->flush_ticks_ms, 172u);
}

TEST(ParseBlockStatTest, OldKernelsHaveNoFlushCounter) {
  auto stat = ParseBlockStat("1 2 3 4 5 6 7 8 0 10 11", "old/stat");
  ASSERT_TRUE(stat.ok()) << stat.status();
  EXPECT_EQ(stat->write_ios, 5u);
  EXPECT_FALSE(stat->flush_ios.has_value());
  // Fifteen fields (4.18 - 5.4): discard counters but still no flush counter.
  stat = ParseBlockStat("1 2 3 4 5 6 7 8 0 10 11 12 13 14 15", "mid/stat");
  ASSERT_TRUE(stat.ok()) << stat.status();
  EXPECT_FALSE(stat->flush_ios.has_value());
}

TEST(ParseBlockStatTest, RejectsGarbageNamingTheSource) {
  auto stat = ParseBlockStat("1 2 x 4 5 6 7 8 9 10 11", "/sys/block/sdq/stat");
  ASSERT_FALSE(stat.ok());
  EXPECT_NE(stat.status().message().find("/sys/block/sdq/stat"), std::string::npos);
  EXPECT_NE(stat.status().message().find("field 3"), std::string::npos);
  stat = ParseBlockStat("1 2 3", "short");
  ASSERT_FALSE(stat.ok());
  EXPECT_NE(stat.status().message().find("3 fields"), std::string::npos);
  EXPECT_FALSE(ParseBlockStat("", "empty").ok());
}

TEST(ParseWriteCacheTest, KnowsBothModes) {
  EXPECT_EQ(ParseWriteCache("write back\n"), WriteCache::kWriteBack);
  EXPECT_EQ(ParseWriteCache("write through"), WriteCache::kWriteThrough);
  EXPECT_EQ(ParseWriteCache("none"), WriteCache::kUnknown);
}

TEST(FsTypeNameTest, NamesCommonFileSystems) {
  EXPECT_EQ(FsTypeName(0xEF53), "ext4");
  EXPECT_EQ(FsTypeName(0x01021994), "tmpfs");
  EXPECT_EQ(FsTypeName(0x58465342), "xfs");
  EXPECT_EQ(FsTypeName(0x1234), "0x1234");
}

void WriteText(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

// A fake sysfs in which the test directory's own st_dev is a partition "vdz1" of disk "vdz".
TEST(DescribeDeviceUnderTest, FindsTheParentDiskOfAPartition) {
  TempDir scratch;
  const fs::path root = fs::path(scratch.path()) / "sys";
  const fs::path disk = root / "devices/pci0/virtio9/block/vdz";
  WriteText(disk / "vdz1/partition", "1\n");
  WriteText(disk / "queue/write_cache", "write back\n");
  WriteText(disk / "queue/fua", "0\n");
  WriteText(disk / "queue/rotational", "1\n");
  WriteText(disk / "queue/logical_block_size", "512\n");
  WriteText(disk / "queue/physical_block_size", "4096\n");
  struct stat st;
  ASSERT_EQ(stat(scratch.path().c_str(), &st), 0);
  fs::create_directories(root / "dev/block");
  fs::create_directory_symlink(
      disk / "vdz1", root / "dev/block" / fmt::format("{}:{}", major(st.st_dev), minor(st.st_dev)));

  auto facts = DescribeDeviceUnder(scratch.path(), root.string());
  ASSERT_TRUE(facts.ok()) << facts.status();
  ASSERT_TRUE(facts->has_block_device) << facts->no_device_reason;
  EXPECT_EQ(facts->device, "vdz1");
  EXPECT_EQ(facts->disk, "vdz");
  EXPECT_EQ(facts->stat_path, (disk / "stat").string());
  EXPECT_EQ(facts->write_cache, WriteCache::kWriteBack);
  EXPECT_EQ(facts->fua, false);
  EXPECT_EQ(facts->rotational, true);
  EXPECT_EQ(facts->logical_block_size, 512u);
  EXPECT_EQ(facts->physical_block_size, 4096u);
}

TEST(DescribeDeviceUnderTest, AWholeDiskIsItsOwnDisk) {
  TempDir scratch;
  const fs::path root = fs::path(scratch.path()) / "sys";
  const fs::path disk = root / "devices/virtual/block/loop9";
  WriteText(disk / "queue/write_cache", "write through\n");
  struct stat st;
  ASSERT_EQ(stat(scratch.path().c_str(), &st), 0);
  fs::create_directories(root / "dev/block");
  fs::create_directory_symlink(
      disk, root / "dev/block" / fmt::format("{}:{}", major(st.st_dev), minor(st.st_dev)));
  auto facts = DescribeDeviceUnder(scratch.path(), root.string());
  ASSERT_TRUE(facts.ok()) << facts.status();
  EXPECT_EQ(facts->disk, "loop9");
  EXPECT_EQ(facts->write_cache, WriteCache::kWriteThrough);
  EXPECT_FALSE(facts->fua.has_value());
}

TEST(DescribeDeviceUnderTest, NoDeviceIsReportedNotFailed) {
  TempDir scratch;
  // An empty sysfs: st_dev leads nowhere, as on tmpfs or btrfs.
  auto facts = DescribeDeviceUnder(scratch.path(), scratch.path() + "/empty-sys");
  ASSERT_TRUE(facts.ok()) << facts.status();
  EXPECT_FALSE(facts->has_block_device);
  EXPECT_NE(facts->no_device_reason.find("no block device"), std::string::npos);
  EXPECT_FALSE(ReadBlockStat(*facts).ok());
}

TEST(DescribeDeviceUnderTest, MissingPathIsAnErrorNamingIt) {
  auto facts = DescribeDeviceUnder("/nonexistent/walbench/dir");
  ASSERT_FALSE(facts.ok());
  EXPECT_NE(facts.status().message().find("/nonexistent/walbench/dir"), std::string::npos);
}

TEST(DescribeDeviceUnderTest, RealSysfsStatParsesWhenThereIsADevice) {
  TempDir scratch;
  auto facts = DescribeDeviceUnder(scratch.path());
  ASSERT_TRUE(facts.ok()) << facts.status();
  if (!facts->has_block_device) GTEST_SKIP() << facts->no_device_reason;
  auto stat = ReadBlockStat(*facts);
  ASSERT_TRUE(stat.ok()) << stat.status();
  EXPECT_FALSE(facts->disk.empty());
}

}  // namespace
}  // namespace powercut::walbench
