// CopySparse (base/image_io.h) across file systems: copy_file_range refuses (EXDEV) between a
// disk-backed folder and tmpfs, and the copy must still read back byte for byte.
#include "base/image_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "base/temp_dir.h"
#include "gtest/gtest.h"

namespace powercut {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(CopySparseTest, CopiesAcrossFileSystems) {
  testing::TempDir disk("/var/tmp", "powercut-copytest");
  testing::TempDir shm("/dev/shm", "powercut-copytest");
  ASSERT_TRUE(disk.ok()) << disk.error();
  ASSERT_TRUE(shm.ok()) << shm.error();
  const std::string src = disk.path() + "/src.img";
  {
    int fd = ::open(src.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::ftruncate(fd, 3 << 20), 0);
    std::string data(8192, 'x');
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>('a' + i % 26);
    ASSERT_EQ(::pwrite(fd, data.data(), data.size(), 1 << 20), static_cast<ssize_t>(data.size()));
    ::close(fd);
  }
  for (const std::string& dst : {shm.path() + "/dst.img", disk.path() + "/dst.img"}) {
    absl::Status s = CopySparse(src, dst);
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_EQ(ReadAll(dst), ReadAll(src)) << dst;
  }
}

// PublishFile: the whole content appears under the name at once, replacing an older file, and no
// temporary file is left; a folder that does not exist is an error naming the file.
TEST(PublishFileTest, PublishesWholeFilesAndLeavesNoTemporary) {
  testing::TempDir dir;
  ASSERT_TRUE(dir.ok()) << dir.error();
  const std::string path = dir.path() + "/cache.bin";
  ASSERT_TRUE(PublishFile(path, "old").ok());
  const std::string data(1 << 20, 'z');
  absl::Status s = PublishFile(path, data);
  ASSERT_TRUE(s.ok()) << s;
  auto read = ReadWholeFile(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, data);
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++entries;
  EXPECT_EQ(entries, 1u);

  absl::Status missing = PublishFile(dir.path() + "/no/such/folder/x", "x");
  EXPECT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("/no/such/folder/x"), absl::string_view::npos) << missing;
  auto gone = ReadWholeFile(dir.path() + "/absent");
  EXPECT_TRUE(absl::IsNotFound(gone.status())) << gone.status();
}

}  // namespace
}  // namespace powercut
