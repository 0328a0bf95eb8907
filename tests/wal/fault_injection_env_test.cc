// FaultInjectionEnv: which writes survive a simulated power cut, and injected faults.
#include "wal/testing/fault_injection_env.h"

#include <cerrno>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/wal/wal_test_util.h"

namespace powercut::wal {
namespace {

using testing::Bytes;
using ::testing::HasSubstr;
using testing::TempDir;

class FaultInjectionEnvTest : public ::testing::Test {
 protected:
  std::string Read(const std::string& name) {
    const std::string path = dir_.File(name);
    auto size = Env::Default()->FileSize(path);
    if (!size.ok()) return "<missing>";
    auto file = Env::Default()->Open(path, OpenOptions{.read_only = true});
    std::string out(*size, '\0');
    auto got = (*file)->Read(0, out.size(), reinterpret_cast<uint8_t*>(out.data()));
    out.resize(*got);
    return out;
  }
  // A file whose creation is durable, holding `content` durably.
  std::unique_ptr<File> DurableFile(const std::string& name, const std::string& content,
                                    OpenOptions open = {}) {
    open.create = true;
    auto file = env_.Open(dir_.File(name), open);
    EXPECT_TRUE(file.ok()) << file.status();
    EXPECT_TRUE((*file)->Write(0, Bytes(content)).ok());
    EXPECT_TRUE((*file)->Sync(SyncKind::kFdatasync).ok());
    EXPECT_TRUE(env_.SyncDir(dir_.path()).ok());
    return std::move(*file);
  }

  TempDir dir_;
  FaultInjectionEnv env_{Env::Default()};
};

TEST_F(FaultInjectionEnvTest, DropUnsyncedRestoresOverwrittenBytesAndSize) {
  auto f = DurableFile("f", "0123456789");
  ASSERT_TRUE(f->Write(2, Bytes("AB")).ok());     // overwrite, unsynced
  ASSERT_TRUE(f->Write(10, Bytes("tail")).ok());  // append, unsynced
  EXPECT_EQ(Read("f"), "01AB456789tail");         // visible before the cut (page cache)
  ASSERT_TRUE(env_.SimulatePowerCut(PowerCutMode::kDropUnsynced, 1).ok());
  EXPECT_EQ(Read("f"), "0123456789");
}

TEST_F(FaultInjectionEnvTest, BarrierKindsThatMakeDataDurable) {
  auto fdatasync = DurableFile("fdatasync", "");
  ASSERT_TRUE(fdatasync->Write(0, Bytes("a")).ok());
  ASSERT_TRUE(fdatasync->Sync(SyncKind::kFdatasync).ok());
  auto fsync = DurableFile("fsync", "");
  ASSERT_TRUE(fsync->Write(0, Bytes("b")).ok());
  ASSERT_TRUE(fsync->Sync(SyncKind::kFsync).ok());
  auto rwf = DurableFile("rwf", "");
  ASSERT_TRUE(rwf->Write(0, Bytes("c"), /*dsync=*/true).ok());
  auto odsync = DurableFile("odsync", "", OpenOptions{.dsync = true});
  ASSERT_TRUE(odsync->Write(0, Bytes("d")).ok());
  auto linked = DurableFile("linked", "");
  ASSERT_TRUE(linked->WriteAndFdatasyncLinked(0, Bytes("e")).ok());
  auto sfr = DurableFile("sfr", "");
  ASSERT_TRUE(sfr->Write(0, Bytes("f")).ok());
  ASSERT_TRUE(sfr->Sync(SyncKind::kSyncFileRange, 0, 1).ok());
  auto none = DurableFile("none", "");
  ASSERT_TRUE(none->Write(0, Bytes("g")).ok());

  ASSERT_TRUE(env_.SimulatePowerCut(PowerCutMode::kDropUnsynced, 7).ok());
  EXPECT_EQ(Read("fdatasync"), "a");
  EXPECT_EQ(Read("fsync"), "b");
  EXPECT_EQ(Read("rwf"), "c");
  EXPECT_EQ(Read("odsync"), "d");
  EXPECT_EQ(Read("linked"), "e");
  EXPECT_EQ(Read("sfr"), "");  // sync_file_range is not a barrier
  EXPECT_EQ(Read("none"), "");
  const CallCounts c = env_.counts();
  EXPECT_EQ(c.sync_file_ranges, 1u);
  EXPECT_EQ(c.linked, 1u);
}

TEST_F(FaultInjectionEnvTest, DurableWriteOverPendingWriteSurvivesUndo) {
  auto f = DurableFile("f", "..........");
  ASSERT_TRUE(f->Write(0, Bytes("xxxxxx")).ok());              // unsynced
  ASSERT_TRUE(f->Write(4, Bytes("DD"), /*dsync=*/true).ok());  // durable, overlaps it
  ASSERT_TRUE(env_.SimulatePowerCut(PowerCutMode::kDropUnsynced, 3).ok());
  EXPECT_EQ(Read("f"), "....DD....");
}

TEST_F(FaultInjectionEnvTest, KeepPrefixKeepsWritesInOrder) {
  // Over many seeds, the surviving content is always a prefix of the write sequence, and both
  // extremes occur.
  bool saw_none = false, saw_all = false;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    TempDir dir;
    FaultInjectionEnv env(Env::Default());
    auto f = env.Open(dir.File("f"), OpenOptions{.create = true});
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE((*f)->Sync(SyncKind::kFsync).ok());
    ASSERT_TRUE(env.SyncDir(dir.path()).ok());
    for (int i = 0; i < 4; ++i) ASSERT_TRUE((*f)->Write(i, Bytes(std::string(1, 'a' + i))).ok());
    ASSERT_TRUE(env.SimulatePowerCut(PowerCutMode::kKeepPrefix, seed).ok());
    auto size = Env::Default()->FileSize(dir.File("f"));
    ASSERT_TRUE(size.ok());
    std::string got(*size, '\0');
    auto r = Env::Default()->Open(dir.File("f"), OpenOptions{.read_only = true});
    ASSERT_TRUE((*r)->Read(0, got.size(), reinterpret_cast<uint8_t*>(got.data())).ok());
    EXPECT_EQ(got, std::string("abcd").substr(0, got.size())) << "seed " << seed;
    saw_none |= got.empty();
    saw_all |= got == "abcd";
  }
  EXPECT_TRUE(saw_none);
  EXPECT_TRUE(saw_all);
}

TEST_F(FaultInjectionEnvTest, TornWriteIsCutAtA512ByteBoundary) {
  bool saw_torn = false;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    TempDir dir;
    FaultInjectionEnv env(Env::Default());
    auto f = env.Open(dir.File("f"), OpenOptions{.create = true});
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE((*f)->Write(0, Bytes(std::string(4096, '.'))).ok());
    ASSERT_TRUE((*f)->Sync(SyncKind::kFdatasync).ok());
    ASSERT_TRUE(env.SyncDir(dir.path()).ok());
    ASSERT_TRUE((*f)->Write(100, Bytes(std::string(2000, 'X'))).ok());  // spans 512..2048 cuts
    ASSERT_TRUE(env.SimulatePowerCut(PowerCutMode::kTornPrefix, seed).ok());
    std::string got(4096, '\0');
    auto r = Env::Default()->Open(dir.File("f"), OpenOptions{.read_only = true});
    ASSERT_EQ(*(*r)->Read(0, got.size(), reinterpret_cast<uint8_t*>(got.data())), 4096u);
    const size_t xs = std::count(got.begin(), got.end(), 'X');
    // Kept X bytes end at a 512-byte file offset (or none / all of the write survive).
    if (xs != 0 && xs != 2000) {
      EXPECT_EQ((100 + xs) % 512, 0u) << "seed " << seed;
      EXPECT_EQ(got.substr(100, xs), std::string(xs, 'X'));
      EXPECT_EQ(got.substr(100 + xs), std::string(4096 - 100 - xs, '.'));
      saw_torn = true;
    }
  }
  EXPECT_TRUE(saw_torn);
}

TEST_F(FaultInjectionEnvTest, UnsyncedCreateAndRenameAreUndone) {
  auto synced = DurableFile("kept", "k");
  auto created = env_.Open(dir_.File("new"), OpenOptions{.create = true});
  ASSERT_TRUE(created.ok());
  ASSERT_TRUE((*created)->Write(0, Bytes("n")).ok());
  ASSERT_TRUE((*created)->Sync(SyncKind::kFsync).ok());  // data durable, entry not
  ASSERT_TRUE((*created)->Close().ok());
  ASSERT_TRUE(synced->Close().ok());
  ASSERT_TRUE(env_.Rename(dir_.File("kept"), dir_.File("renamed")).ok());
  ASSERT_TRUE(env_.SimulatePowerCut(PowerCutMode::kDropUnsynced, 5).ok());
  EXPECT_EQ(Read("new"), "<missing>");
  EXPECT_EQ(Read("renamed"), "<missing>");
  EXPECT_EQ(Read("kept"), "k");
}

TEST_F(FaultInjectionEnvTest, SyncDirMakesCreateAndRenameDurable) {
  auto created = env_.Open(dir_.File("tmp"), OpenOptions{.create = true});
  ASSERT_TRUE((*created)->Write(0, Bytes("v")).ok());
  ASSERT_TRUE((*created)->Sync(SyncKind::kFsync).ok());
  ASSERT_TRUE((*created)->Close().ok());
  ASSERT_TRUE(env_.Rename(dir_.File("tmp"), dir_.File("final")).ok());
  ASSERT_TRUE(env_.SyncDir(dir_.path()).ok());
  ASSERT_TRUE(env_.SimulatePowerCut(PowerCutMode::kDropUnsynced, 5).ok());
  EXPECT_EQ(Read("final"), "v");
  EXPECT_EQ(Read("tmp"), "<missing>");
}

TEST_F(FaultInjectionEnvTest, FailNthWriteWithEioThenRecover) {
  auto f = DurableFile("f", "");
  env_.FailOp(FaultOp::kWrite, 2, EIO);
  EXPECT_TRUE(f->Write(0, Bytes("1")).ok());
  absl::Status s = f->Write(1, Bytes("2"));
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("Input/output error"));
  EXPECT_THAT(std::string(s.message()), HasSubstr(dir_.File("f")));
  EXPECT_TRUE(f->Write(1, Bytes("3")).ok());  // only the 2nd one fails
  EXPECT_EQ(Read("f"), "13");
}

TEST_F(FaultInjectionEnvTest, FailEverySyncWithEnospc) {
  auto f = DurableFile("f", "");
  env_.FailOp(FaultOp::kSync, 1, ENOSPC, /*every=*/true);
  for (int i = 0; i < 3; ++i) {
    absl::Status s = f->Sync(SyncKind::kFdatasync);
    EXPECT_TRUE(absl::IsResourceExhausted(s)) << s;
  }
  EXPECT_TRUE(env_.SyncDir(dir_.path()).ok());  // other ops are unaffected
  env_.ClearFaults();
  EXPECT_TRUE(f->Sync(SyncKind::kFdatasync).ok());
}

TEST_F(FaultInjectionEnvTest, CrashPointFailsEveryLaterCall) {
  auto f = DurableFile("f", "");
  env_.SetCrashAfter(2);
  EXPECT_TRUE(f->Write(0, Bytes("a")).ok());
  EXPECT_TRUE(f->Sync(SyncKind::kFdatasync).ok());
  EXPECT_FALSE(env_.crashed());
  EXPECT_FALSE(f->Write(1, Bytes("b")).ok());
  EXPECT_TRUE(env_.crashed());
  EXPECT_FALSE(f->Sync(SyncKind::kFdatasync).ok());
  EXPECT_FALSE(env_.Open(dir_.File("g"), OpenOptions{.create = true}).ok());
  ASSERT_TRUE(env_.SimulatePowerCut(PowerCutMode::kDropUnsynced, 1).ok());
  EXPECT_FALSE(env_.crashed());
  EXPECT_EQ(Read("f"), "a");
  EXPECT_TRUE(f->Write(1, Bytes("b")).ok());  // usable again after the cut
}

}  // namespace
}  // namespace powercut::wal
