// PosixEnv against the real file system: each syscall path, and that errors name syscall + path.
#include "wal/posix_env.h"

#include <fcntl.h>
#include <unistd.h>

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/wal/wal_test_util.h"

namespace powercut::wal {
namespace {

using testing::Bytes;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::TempDir;

std::string ReadAll(Env* env, const std::string& path) {
  auto file = env->Open(path, OpenOptions{.read_only = true});
  EXPECT_TRUE(file.ok()) << file.status();
  auto size = env->FileSize(path);
  EXPECT_TRUE(size.ok());
  std::string out(*size, '\0');
  auto got = (*file)->Read(0, out.size(), reinterpret_cast<uint8_t*>(out.data()));
  EXPECT_TRUE(got.ok());
  out.resize(*got);
  return out;
}

TEST(PosixEnvTest, WriteReadAndEverySyncKind) {
  TempDir dir;
  Env* env = Env::Default();
  const std::string path = dir.File("f");
  auto file = env->Open(path, OpenOptions{.create = true, .exclusive = true});
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_TRUE((*file)->Write(0, Bytes("hello ")).ok());
  ASSERT_TRUE((*file)->Write(6, Bytes("world"), /*dsync=*/true).ok());
  EXPECT_TRUE((*file)->Sync(SyncKind::kFdatasync).ok());
  EXPECT_TRUE((*file)->Sync(SyncKind::kFsync).ok());
  EXPECT_TRUE((*file)->Sync(SyncKind::kSyncFileRange, 0, 11).ok());
  EXPECT_TRUE((*file)->WriteAndFdatasyncLinked(11, Bytes("!")).ok());
  EXPECT_EQ(*(*file)->Size(), 12u);
  EXPECT_TRUE((*file)->Close().ok());
  EXPECT_EQ(ReadAll(env, path), "hello world!");
  EXPECT_EQ(*env->FileSize(path), 12u);
}

TEST(PosixEnvTest, ReadPastEndIsShort) {
  TempDir dir;
  Env* env = Env::Default();
  auto file = env->Open(dir.File("f"), OpenOptions{.create = true});
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE((*file)->Write(0, Bytes("abc")).ok());
  uint8_t buf[16];
  auto got = (*file)->Read(1, sizeof(buf), buf);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, 2u);
  EXPECT_EQ(std::string(reinterpret_cast<char*>(buf), 2), "bc");
}

TEST(PosixEnvTest, ErrorsNameSyscallAndPath) {
  TempDir dir;
  Env* env = Env::Default();
  const std::string missing = dir.File("no-such-file");
  auto file = env->Open(missing, OpenOptions{});
  ASSERT_FALSE(file.ok());
  EXPECT_TRUE(absl::IsNotFound(file.status())) << file.status();
  EXPECT_THAT(std::string(file.status().message()), HasSubstr("open(" + missing + ")"));
  EXPECT_THAT(std::string(file.status().message()), HasSubstr("No such file"));

  auto exclusive = env->Open(dir.File("x"), OpenOptions{.create = true, .exclusive = true});
  ASSERT_TRUE(exclusive.ok());
  auto again = env->Open(dir.File("x"), OpenOptions{.create = true, .exclusive = true});
  EXPECT_TRUE(absl::IsAlreadyExists(again.status())) << again.status();

  absl::Status rename = env->Rename(missing, dir.File("y"));
  EXPECT_THAT(std::string(rename.message()), HasSubstr("rename(" + missing));
  absl::Status syncdir = env->SyncDir(dir.File("nodir"));
  EXPECT_THAT(std::string(syncdir.message()), HasSubstr(dir.File("nodir")));
}

TEST(PosixEnvTest, WriteOnReadOnlyFileFailsWithPath) {
  TempDir dir;
  Env* env = Env::Default();
  const std::string path = dir.File("ro");
  ASSERT_TRUE(env->Open(path, OpenOptions{.create = true}).ok());
  auto file = env->Open(path, OpenOptions{.read_only = true});
  ASSERT_TRUE(file.ok());
  absl::Status s = (*file)->Write(0, Bytes("x"));
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("pwrite(" + path + ")"));
}

TEST(PosixEnvTest, DirectoryOperations) {
  TempDir dir;
  Env* env = Env::Default();
  ASSERT_TRUE(env->CreateDir(dir.File("d")).ok());
  EXPECT_TRUE(*env->IsDirectory(dir.File("d")));
  EXPECT_FALSE(env->CreateDir(dir.File("d")).ok());
  ASSERT_TRUE(env->Open(dir.File("d/b"), OpenOptions{.create = true}).ok());
  ASSERT_TRUE(env->Open(dir.File("d/a"), OpenOptions{.create = true}).ok());
  ASSERT_TRUE(env->Rename(dir.File("d/b"), dir.File("d/c")).ok());
  EXPECT_TRUE(env->SyncDir(dir.File("d")).ok());
  EXPECT_THAT(*env->ListDir(dir.File("d")), ElementsAre("a", "c"));
  EXPECT_TRUE(*env->Exists(dir.File("d/c")));
  EXPECT_FALSE(*env->Exists(dir.File("d/b")));
  EXPECT_FALSE(*env->IsDirectory(dir.File("d/c")));
  ASSERT_TRUE(env->Remove(dir.File("d/c")).ok());
  EXPECT_FALSE(*env->Exists(dir.File("d/c")));
  auto bs = env->BlockSize(dir.path());
  ASSERT_TRUE(bs.ok());
  EXPECT_TRUE(*bs == 512 || *bs == 4096) << *bs;
}

TEST(PosixEnvTest, DirectDsyncAlignedWrite) {
  TempDir dir;
  Env* env = Env::Default();
  const std::string path = dir.File("direct");
  auto file = env->Open(path, OpenOptions{.create = true, .direct = true, .dsync = true});
  ASSERT_TRUE(file.ok()) << file.status();
  void* mem = std::aligned_alloc(4096, 8192);
  std::memset(mem, 'z', 8192);
  EXPECT_TRUE((*file)->Write(4096, absl::MakeConstSpan(static_cast<uint8_t*>(mem), 8192)).ok());
  // An unaligned buffer is refused by the kernel; the error names the file.
  absl::Status unaligned =
      (*file)->Write(1, absl::MakeConstSpan(static_cast<uint8_t*>(mem) + 1, 100));
  EXPECT_FALSE(unaligned.ok());
  EXPECT_THAT(std::string(unaligned.message()), HasSubstr(path));
  std::free(mem);
  EXPECT_EQ(*env->FileSize(path), 12288u);
  EXPECT_EQ(ReadAll(env, path).substr(4096), std::string(8192, 'z'));
}

#if POWERCUT_HAVE_URING
TEST(PosixEnvTest, IoUringLinkedWriteAndFdatasync) {
  TempDir dir;
  Env* env = Env::Default();
  const std::string path = dir.File("uring");
  auto file = env->Open(path, OpenOptions{.create = true, .io_uring = true});
  ASSERT_TRUE(file.ok()) << file.status();
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE((*file)->WriteAndFdatasyncLinked(i * 3, Bytes("abc")).ok());
  }
  EXPECT_TRUE((*file)->Close().ok());
  std::string want;
  for (int i = 0; i < 10; ++i) want += "abc";
  EXPECT_EQ(ReadAll(env, path), want);
}
#endif

}  // namespace
}  // namespace powercut::wal
