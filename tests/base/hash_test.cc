// HashFile (base/hash.h) hashes holes from zeros instead of reading them: the digest must be the
// same as for the same bytes stored densely, and as HashBytes of them.
#include "base/hash.h"

#include <fcntl.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "base/temp_dir.h"
#include "gtest/gtest.h"

namespace powercut {
namespace {

void WriteAt(const std::string& path, const std::vector<uint8_t>& bytes, bool sparse) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(bytes.size())), 0);
  // Sparse: only the non-zero 4 KiB blocks are written; dense: every byte.
  for (size_t at = 0; at < bytes.size(); at += 4096) {
    bool zero = true;
    for (size_t i = at; i < at + 4096 && zero; ++i) zero = bytes[i] == 0;
    if (sparse && zero) continue;
    ASSERT_EQ(::pwrite(fd, bytes.data() + at, 4096, static_cast<off_t>(at)), 4096);
  }
  ::close(fd);
}

TEST(HashFileTest, HolesHashLikeTheZerosTheyRead) {
  testing::TempDir dir;
  ASSERT_TRUE(dir.ok()) << dir.error();
  std::vector<uint8_t> bytes(5 << 20, 0);  // holes before, between and after the data
  for (size_t i = 0; i < 8192; ++i) bytes[(1 << 20) + 4096 + i] = static_cast<uint8_t>(i * 7 + 1);
  for (size_t i = 0; i < 4096; ++i) bytes[(3 << 20) + i] = 0xa5;
  const Hash128 expected = HashBytes(bytes);
  WriteAt(dir.path() + "/sparse.img", bytes, true);
  WriteAt(dir.path() + "/dense.img", bytes, false);
  auto sparse = HashFile(dir.path() + "/sparse.img");
  auto dense = HashFile(dir.path() + "/dense.img");
  ASSERT_TRUE(sparse.ok()) << sparse.status();
  ASSERT_TRUE(dense.ok()) << dense.status();
  EXPECT_EQ(*sparse, expected);
  EXPECT_EQ(*dense, expected);
  // Empty file, and a file that is one hole.
  WriteAt(dir.path() + "/empty.img", {}, true);
  EXPECT_EQ(*HashFile(dir.path() + "/empty.img"), HashBytes({}));
  std::vector<uint8_t> zeros(3 << 20, 0);
  WriteAt(dir.path() + "/hole.img", zeros, true);
  EXPECT_EQ(*HashFile(dir.path() + "/hole.img"), HashBytes(zeros));
  EXPECT_FALSE(HashFile(dir.path() + "/missing.img").ok());
}

}  // namespace
}  // namespace powercut
