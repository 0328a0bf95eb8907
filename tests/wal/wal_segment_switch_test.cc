// Segment switches with the background preparer (wal/segment_manager.h): no zero-fill on the
// commit path, preparer errors fence the log only at the switch that needs the spare, recycling,
// and a cleanly closed log with recycled segments reopens without repair.
#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "recovery/recovery.h"
#include "tests/wal/wal_test_util.h"
#include "wal/segment_manager.h"
#include "wal/testing/fault_injection_env.h"
#include "wal/wal.h"
#include "wal/wal_impl.h"

namespace powercut::wal {
namespace {

using testing::Bytes;
using ::testing::HasSubstr;
using testing::Payload;
using testing::TempDir;

std::string Msg(const absl::Status& s) { return std::string(s.message()); }

WalImpl& Impl(const std::unique_ptr<Wal>& wal) { return static_cast<WalImpl&>(*wal); }

// Counts the bytes written through it by one thread (the committing one), so that the
// preparer's writes on its own thread are not counted.
class ThreadByteCountingEnv final : public EnvWrapper {
 public:
  explicit ThreadByteCountingEnv(Env* base) : EnvWrapper(base) {}
  void CountThread(std::thread::id id) { counted_ = id; }
  uint64_t bytes() const { return bytes_.load(); }

  absl::StatusOr<std::unique_ptr<File>> Open(const std::string& path,
                                             const OpenOptions& options) override {
    absl::StatusOr<std::unique_ptr<File>> file = EnvWrapper::Open(path, options);
    if (!file.ok()) return file.status();
    return std::unique_ptr<File>(new CountingFile(this, std::move(*file)));
  }

 private:
  class CountingFile final : public FileWrapper {
   public:
    CountingFile(ThreadByteCountingEnv* env, std::unique_ptr<File> base)
        : FileWrapper(std::move(base)), env_(env) {}
    absl::Status Write(uint64_t offset, absl::Span<const uint8_t> data, bool dsync) override {
      env_->Count(data.size());
      return FileWrapper::Write(offset, data, dsync);
    }
    absl::Status WriteAndFdatasyncLinked(uint64_t offset, absl::Span<const uint8_t> data) override {
      env_->Count(data.size());
      return FileWrapper::WriteAndFdatasyncLinked(offset, data);
    }

   private:
    ThreadByteCountingEnv* const env_;
  };

  void Count(size_t n) {
    if (std::this_thread::get_id() == counted_) bytes_ += n;
  }

  std::thread::id counted_;  // set before the WAL is opened, read by the WAL's threads after
  std::atomic<uint64_t> bytes_{0};
};

uint64_t SegmentCount(const std::string& dir) {
  const absl::StatusOr<std::vector<std::string>> names = Env::Default()->ListDir(dir);
  EXPECT_TRUE(names.ok()) << names.status();
  if (!names.ok()) return 0;
  uint64_t n = 0;
  for (const std::string& name : *names) n += ParseSegmentFileName(name) ? 1 : 0;
  return n;
}

TEST(SegmentSwitchTest, SwitchWritesNoZerosOnTheCommitPath) {
  TempDir dir;
  ThreadByteCountingEnv env(Env::Default());
  env.CountThread(std::this_thread::get_id());
  WalOptions options;
  options.env = &env;
  options.segment_bytes = 256 * 1024;  // a zero-fill on the commit path would be 252 KiB
  auto wal = Wal::Open(dir.File("wal"), options);
  ASSERT_TRUE(wal.ok()) << wal.status();
  const std::string record(4000, 'r');
  int switches = 0;
  for (int i = 0; i < 300; ++i) {
    // The spare is ready at every switch (the preparer had time): the switch itself writes only
    // the 4 KiB header, the seal and the records.
    ASSERT_TRUE(Impl(*wal).WaitForSpareSegment().ok());
    const uint64_t before = env.bytes();
    ASSERT_TRUE((*wal)->Commit(Bytes(record)).ok());
    const uint64_t written = env.bytes() - before;
    if (written > kRecordHeaderSize + record.size()) ++switches;
    EXPECT_LE(written, kSegmentHeaderSize + 2 * kRecordHeaderSize + record.size())
        << "commit " << i;
  }
  EXPECT_GE(switches, 3);
  EXPECT_EQ(Impl(*wal).spare_waits(), 0u);
  ASSERT_TRUE((*wal)->Close().ok());
  EXPECT_GE(SegmentCount(dir.File("wal")), 4u);
  // Close removed the spare: only segments remain.
  const absl::StatusOr<std::vector<std::string>> names = Env::Default()->ListDir(dir.File("wal"));
  ASSERT_TRUE(names.ok()) << names.status();
  for (const std::string& name : *names) {
    EXPECT_TRUE(ParseSegmentFileName(name).has_value()) << name;
  }
}

TEST(SegmentSwitchTest, SwitchesWithoutWaitingStillCommitEverything) {
  // No WaitForSpareSegment: a switch may find the spare still in preparation and wait for it.
  TempDir dir;
  WalOptions options;
  options.segment_bytes = 64 * 1024;
  auto wal = Wal::Open(dir.File("wal"), options);
  ASSERT_TRUE(wal.ok()) << wal.status();
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 100; ++i) {
        if (!(*wal)->Commit(Bytes(Payload(t, i, 1500))).ok()) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  ASSERT_TRUE((*wal)->Close().ok());
  auto result = recovery::Recover(dir.File("wal"));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->tail, recovery::TailState::kClean);
  EXPECT_EQ(result->records.size(), 400u);
}

TEST(SegmentSwitchTest, PreparerErrorFencesOnlyAtTheSwitchThatNeedsTheSpare) {
  TempDir dir;
  FaultInjectionEnv env(Env::Default());
  WalOptions options;
  options.env = &env;
  options.segment_bytes = 16 * 1024;  // 11 records of 1000 bytes a segment
  auto wal = Wal::Open(dir.File("wal"), options);
  ASSERT_TRUE(wal.ok()) << wal.status();
  ASSERT_TRUE(Impl(*wal).WaitForSpareSegment().ok());
  // At the first switch the leader opens the spare (1) and the new segment for records (2), and
  // only then hands the next spare to the preparer, whose create is open 3.
  env.FailOp(FaultOp::kOpen, 3, EIO);
  Lsn acked = 0;
  int i = 0;
  for (; i < 12; ++i) {  // past the first switch
    auto lsn = (*wal)->Commit(Bytes(Payload(0, i, 1000)));
    ASSERT_TRUE(lsn.ok()) << "commit " << i << ": " << lsn.status();
    acked = *lsn;
  }
  const absl::Status spare = Impl(*wal).WaitForSpareSegment();
  ASSERT_FALSE(spare.ok());
  EXPECT_THAT(Msg(spare), HasSubstr(std::strerror(EIO)));
  // The failed preparation does not touch the log until a switch needs the spare.
  EXPECT_TRUE((*wal)->health().ok());
  absl::Status status;
  for (; i < 40 && status.ok(); ++i) {
    auto lsn = (*wal)->Commit(Bytes(Payload(0, i, 1000)));
    status = lsn.status();
    if (lsn.ok()) acked = *lsn;
  }
  EXPECT_GT(acked, 12u);  // commits went on in the second segment
  ASSERT_TRUE(absl::IsDataLoss(status)) << status;
  EXPECT_THAT(Msg(status), HasSubstr("durability unknown"));
  EXPECT_THAT(Msg(status), HasSubstr("preparing the next segment"));
  EXPECT_THAT(Msg(status), HasSubstr(std::strerror(EIO)));
  EXPECT_EQ((*wal)->DurableLsn(), acked);
  EXPECT_TRUE(absl::IsDataLoss((*wal)->Commit(Bytes("later")).status()));
  EXPECT_TRUE(absl::IsDataLoss((*wal)->Close()));
  // Everything acknowledged is there.
  auto result = recovery::Recover(dir.File("wal"));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->last_lsn(), acked);
}

TEST(SegmentSwitchTest, RecyclesWithOneReleasedSegment) {
  TempDir dir;
  WalOptions options;
  options.segment_bytes = 16 * 1024;
  auto wal = Wal::Open(dir.File("wal"), options);
  ASSERT_TRUE(wal.ok()) << wal.status();
  for (int i = 0; i < 200; ++i) {
    auto lsn = (*wal)->Commit(Bytes(Payload(0, i, 1000)));
    ASSERT_TRUE(lsn.ok()) << lsn.status();
    ASSERT_TRUE((*wal)->ReleaseUpTo(*lsn).ok());
    // Once the preparer has turned the oldest released segment into the spare, the directory
    // holds the active segment and at most one released one (recycled at the next switch).
    ASSERT_TRUE(Impl(*wal).WaitForSpareSegment().ok());
    ASSERT_LE(SegmentCount(dir.File("wal")), 2u) << "commit " << i;
  }
  ASSERT_TRUE((*wal)->Close().ok());
}

// A recycled segment holds old records of another salt after the last new one; Close seals it
// so that the log reopens with plain Wal::Open and recovers clean, without any repair.
TEST(SegmentSwitchTest, CleanCloseWithRecycledSegmentsReopensWithoutRepair) {
  for (int count = 40; count <= 52; ++count) {  // Close at every offset of a recycled segment
    TempDir dir;
    WalOptions options;
    options.segment_bytes = 16 * 1024;
    {
      auto wal = Wal::Open(dir.File("wal"), options);
      ASSERT_TRUE(wal.ok()) << wal.status();
      for (int i = 0; i < count; ++i) {
        auto lsn = (*wal)->Commit(Bytes(Payload(0, i, 1000)));
        ASSERT_TRUE(lsn.ok()) << lsn.status();
        ASSERT_TRUE((*wal)->ReleaseUpTo(*lsn).ok());
      }
      // Let the preparer finish recycling, so the segment count below is deterministic.
      ASSERT_TRUE(Impl(*wal).WaitForSpareSegment().ok());
      ASSERT_TRUE((*wal)->Close().ok());
    }
    ASSERT_LE(SegmentCount(dir.File("wal")), 2u);  // segments were recycled
    recovery::RecoverOptions ro;
    ro.mode = recovery::Mode::kAbsolute;  // any damage fails
    auto result = recovery::Recover(dir.File("wal"), ro);
    ASSERT_TRUE(result.ok()) << "count " << count << ": " << result.status();
    EXPECT_EQ(result->tail, recovery::TailState::kClean);
    EXPECT_EQ(result->last_lsn(), Lsn(count));
    EXPECT_EQ(result->next_lsn, Lsn(count + 1));

    auto reopened = Wal::Open(dir.File("wal"), options);
    ASSERT_TRUE(reopened.ok()) << "count " << count << ": " << reopened.status();
    EXPECT_EQ(*(*reopened)->Commit(Bytes("after reopen")), Lsn(count + 1));
    ASSERT_TRUE((*reopened)->Close().ok());
    auto again = recovery::Recover(dir.File("wal"), ro);
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(again->last_lsn(), Lsn(count + 1));
    ASSERT_FALSE(again->records.empty());
    EXPECT_EQ(again->records.back().payload, "after reopen");
  }
}

}  // namespace
}  // namespace powercut::wal
