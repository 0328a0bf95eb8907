// OpenAndRecover with the real WAL: logs written under every barrier mode read back; a torn tail is
// repaired and the log continues after the last intact record.
#include "recovery/open_and_recover.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "recovery/recovery.h"
#include "tests/recovery/log_builder.h"
#include "wal/barrier.h"
#include "wal/wal.h"

namespace powercut::recovery {
namespace {

using powercut::testing::PayloadFor;
using powercut::testing::ReadFile;
using powercut::testing::TempDir;
using powercut::testing::WriteFile;
using wal::Lsn;

absl::Span<const uint8_t> Bytes(const std::string& s) {
  return absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

wal::WalOptions SmallSegments(wal::Barrier barrier) {
  wal::WalOptions options;
  options.barrier = barrier;
  options.segment_bytes = 64 << 10;  // 120 records of ~1 KiB: the log rolls
  return options;
}

class EveryBarrierTest : public ::testing::TestWithParam<wal::Barrier> {};

TEST_P(EveryBarrierTest, WriteCloseRecoverContinue) {
  TempDir dir;
  const std::string path = dir.File("wal");
  {
    auto log = wal::Wal::Open(path, SmallSegments(GetParam()));
    ASSERT_TRUE(log.ok()) << log.status();
    for (Lsn lsn = 1; lsn <= 120; ++lsn) {
      auto committed = (*log)->Commit(Bytes(PayloadFor(lsn, 1000)));
      ASSERT_TRUE(committed.ok()) << committed.status();
      ASSERT_EQ(*committed, lsn);
    }
    ASSERT_TRUE((*log)->Close().ok());
  }
  RecoverOptions absolute;
  absolute.mode = Mode::kAbsolute;
  auto result = Recover(path, absolute);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->records.size(), 120u);
  EXPECT_GT(result->segments.size(), 1u);
  for (const RecoveredRecord& r : result->records) EXPECT_EQ(r.payload, PayloadFor(r.lsn, 1000));

  RecoveryResult reopened;
  auto log = OpenAndRecover(path, SmallSegments(GetParam()), Mode::kTolerateTornTail, &reopened);
  ASSERT_TRUE(log.ok()) << log.status();
  EXPECT_EQ(reopened.records.size(), 120u);
  auto next = (*log)->Commit(Bytes(PayloadFor(121, 1000)));
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(*next, 121u);
  ASSERT_TRUE((*log)->Close().ok());
  auto after = Recover(path, absolute);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->records.size(), 121u);
}

INSTANTIATE_TEST_SUITE_P(AllBarriers, EveryBarrierTest, ::testing::ValuesIn(wal::AllBarriers()),
                         [](const auto& param_info) {
                           return std::string(wal::BarrierName(param_info.param));
                         });

TEST(OpenAndRecoverTest, RepairsATornTailAndContinuesAfterIt) {
  TempDir dir;
  const std::string path = dir.File("wal");
  {
    auto log = wal::Wal::Open(path, SmallSegments(wal::Barrier::kFdatasync));
    ASSERT_TRUE(log.ok()) << log.status();
    for (Lsn lsn = 1; lsn <= 10; ++lsn) ASSERT_TRUE((*log)->Commit(Bytes(PayloadFor(lsn))).ok());
    ASSERT_TRUE((*log)->Close().ok());
  }
  auto clean = Recover(path);
  ASSERT_TRUE(clean.ok()) << clean.status();
  ASSERT_EQ(clean->records.size(), 10u);
  // Tear the last record: flip a byte in its payload, as a torn write would leave it.
  const std::string segment = path + "/" + clean->tail_segment;
  std::string bytes = ReadFile(segment);
  bytes[clean->tail_offset - 2] ^= 0x20;
  WriteFile(segment, bytes);
  EXPECT_FALSE(wal::Wal::Open(path, SmallSegments(wal::Barrier::kFdatasync)).ok());

  RecoveryResult result;
  auto log = OpenAndRecover(path, SmallSegments(wal::Barrier::kFdatasync), Mode::kTolerateTornTail,
                            &result);
  ASSERT_TRUE(log.ok()) << log.status();
  EXPECT_EQ(result.tail, TailState::kTorn);
  EXPECT_EQ(result.records.size(), 9u);
  auto lsn = (*log)->Commit(Bytes(PayloadFor(10)));
  ASSERT_TRUE(lsn.ok()) << lsn.status();
  EXPECT_EQ(*lsn, 10u);
  ASSERT_TRUE((*log)->Close().ok());
  RecoverOptions absolute;
  absolute.mode = Mode::kAbsolute;
  auto after = Recover(path, absolute);
  ASSERT_TRUE(after.ok()) << after.status();
  ASSERT_EQ(after->records.size(), 10u);
  for (const RecoveredRecord& r : after->records) EXPECT_EQ(r.payload, PayloadFor(r.lsn));
}

// Segments recycled by the real WAL hold stale records of their previous life after the new ones;
// recovery never returns them, and OpenAndRecover continues the log after the last new record.
TEST(OpenAndRecoverTest, RecycledSegmentsNeverYieldStaleRecords) {
  TempDir dir;
  const std::string path = dir.File("wal");
  wal::WalOptions options = SmallSegments(wal::Barrier::kFdatasync);
  options.recycle_segments = true;
  Lsn last = 0;
  {
    auto log = wal::Wal::Open(path, options);
    ASSERT_TRUE(log.ok()) << log.status();
    for (Lsn lsn = 1; lsn <= 400; ++lsn) {
      auto committed = (*log)->Commit(Bytes(PayloadFor(lsn, 1000)));
      ASSERT_TRUE(committed.ok()) << committed.status();
      last = *committed;
      // Keep only the last ~100 records: older segments become free for recycling.
      if (lsn > 100) {
        ASSERT_TRUE((*log)->ReleaseUpTo(lsn - 100).ok());
      }
    }
    ASSERT_TRUE((*log)->Close().ok());
  }
  RecoveryResult result;
  auto log = OpenAndRecover(path, options, Mode::kTolerateTornTail, &result);
  ASSERT_TRUE(log.ok()) << log.status();
  ASSERT_FALSE(result.records.empty());
  EXPECT_EQ(result.records.back().lsn, last);
  EXPECT_GT(result.first_lsn, 1u) << "no segment was released";
  // The last segment was recycled, so stale bytes follow its records: a torn-looking tail that
  // OpenAndRecover zeroed, or a clean one when the segment was never recycled.
  EXPECT_NE(result.tail, TailState::kCorrupt);
  for (size_t i = 0; i < result.records.size(); ++i) {
    EXPECT_EQ(result.records[i].lsn, result.first_lsn + i);
    EXPECT_EQ(result.records[i].payload, PayloadFor(result.records[i].lsn, 1000));
  }
  auto next = (*log)->Commit(Bytes(PayloadFor(last + 1, 1000)));
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(*next, last + 1);
  ASSERT_TRUE((*log)->Close().ok());
}

TEST(OpenAndRecoverTest, SalvageIsRefusedAndAMissingDirectoryStartsAFreshLog) {
  TempDir dir;
  EXPECT_EQ(OpenAndRecover(dir.File("wal"), wal::WalOptions{}, Mode::kSalvage).status().code(),
            absl::StatusCode::kInvalidArgument);
  RecoveryResult result;
  auto log = OpenAndRecover(dir.File("wal"), wal::WalOptions{}, Mode::kTolerateTornTail, &result);
  ASSERT_TRUE(log.ok()) << log.status();
  EXPECT_TRUE(result.records.empty());
  auto lsn = (*log)->Commit(Bytes("first"));
  ASSERT_TRUE(lsn.ok());
  EXPECT_EQ(*lsn, 1u);
  ASSERT_TRUE((*log)->Close().ok());
}

}  // namespace
}  // namespace powercut::recovery
