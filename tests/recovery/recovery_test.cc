#include "recovery/recovery.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/base/internal/endian.h"
#include "gtest/gtest.h"
#include "recovery/repair.h"
#include "tests/recovery/log_builder.h"
#include "wal/crc32c.h"
#include "wal/env.h"

namespace powercut::recovery {
namespace {

using powercut::testing::PayloadFor;
using powercut::testing::ReadFile;
using powercut::testing::SegmentBuilder;
using powercut::testing::TempDir;
using powercut::testing::WriteFile;
using wal::Lsn;
using wal::SegmentFileName;

// Recovers with the copying form, and checks that the streaming form (RecordVisitor) agrees on
// the outcome and visits exactly the records the copying form returns, in the same order. Every
// test below that goes through RecoverIn checks the visitor against its case too.
absl::StatusOr<RecoveryResult> RecoverIn(const TempDir& dir, Mode mode) {
  RecoverOptions options;
  options.mode = mode;
  absl::StatusOr<RecoveryResult> copied = Recover(dir.path(), options);
  std::vector<RecoveredRecord> visited;
  absl::StatusOr<RecoveryResult> streamed =
      Recover(dir.path(), options, [&](Lsn lsn, absl::Span<const uint8_t> payload) {
        visited.push_back(RecoveredRecord{
            lsn, std::string(reinterpret_cast<const char*>(payload.data()), payload.size())});
        return absl::OkStatus();
      });
  EXPECT_EQ(streamed.status(), copied.status()) << ModeName(mode);
  if (copied.ok() && streamed.ok()) {
    EXPECT_TRUE(streamed->records.empty());
    EXPECT_EQ(streamed->tail, copied->tail);
    EXPECT_EQ(streamed->next_lsn, copied->next_lsn);
    EXPECT_EQ(streamed->last_lsn(), copied->last_lsn());
    EXPECT_EQ(streamed->record_count, copied->records.size());
    EXPECT_EQ(streamed->Summary(), copied->Summary());
    EXPECT_EQ(visited.size(), copied->records.size()) << ModeName(mode);
    for (size_t i = 0; i < std::min(visited.size(), copied->records.size()); ++i) {
      EXPECT_EQ(visited[i].lsn, copied->records[i].lsn);
      EXPECT_EQ(visited[i].payload, copied->records[i].payload) << "LSN " << visited[i].lsn;
    }
  }
  return copied;
}

// Asserts the records are exactly `lsns`, each with its PayloadFor payload.
void ExpectRecords(const RecoveryResult& result, const std::vector<Lsn>& lsns,
                   size_t payload_min_size = 1) {
  ASSERT_EQ(result.records.size(), lsns.size()) << result.Summary();
  for (size_t i = 0; i < lsns.size(); ++i) {
    EXPECT_EQ(result.records[i].lsn, lsns[i]);
    EXPECT_EQ(result.records[i].payload, PayloadFor(lsns[i], payload_min_size));
  }
}

std::vector<Lsn> Range(Lsn first, Lsn last) {
  std::vector<Lsn> out;
  for (Lsn lsn = first; lsn <= last; ++lsn) out.push_back(lsn);
  return out;
}

bool Contains(const absl::Status& status, const std::string& text) {
  return std::string(status.message()).find(text) != std::string::npos;
}

// --- bad input ---------------------------------------------------------------------------------

TEST(RecoveryInputTest, EmptyDirectoryIsAnEmptyCleanLog) {
  TempDir dir;
  for (Mode mode : AllModes()) {
    auto result = RecoverIn(dir, mode);
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_TRUE(result->records.empty());
    EXPECT_EQ(result->tail, TailState::kClean);
    EXPECT_EQ(result->next_lsn, 1u);
  }
}

TEST(RecoveryInputTest, MissingDirectoryNamesIt) {
  TempDir dir;
  auto result = Recover(dir.File("nope"));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(Contains(result.status(), dir.File("nope"))) << result.status();
}

TEST(RecoveryInputTest, ForeignFileIsNamedWithWhatToDo) {
  TempDir dir;
  SegmentBuilder seg(1);
  seg.Add(1, PayloadFor(1));
  WriteFile(dir.File(SegmentFileName(1)), seg.Contents());
  WriteFile(dir.File("notes.txt"), "hello");
  auto result = Recover(dir.path());
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Contains(result.status(), "notes.txt")) << result.status();
  EXPECT_TRUE(Contains(result.status(), "move the file out")) << result.status();
}

TEST(RecoveryInputTest, SegmentOfAnotherFormatVersion) {
  TempDir dir;
  SegmentBuilder seg(1);
  seg.Add(1, PayloadFor(1));
  std::string bytes = seg.Contents();
  auto* p = reinterpret_cast<uint8_t*>(bytes.data());
  absl::little_endian::Store32(p + 8, wal::kFormatVersion + 1);
  absl::little_endian::Store32(p + 52, crc32c::Value(p, 52));
  WriteFile(dir.File(SegmentFileName(1)), bytes);
  auto result = Recover(dir.path());
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Contains(result.status(), SegmentFileName(1))) << result.status();
  EXPECT_TRUE(Contains(result.status(), "version")) << result.status();
}

TEST(RecoveryInputTest, GarbageHeaderFailsExceptInSalvage) {
  TempDir dir;
  SegmentBuilder first(1);
  for (Lsn lsn = 1; lsn <= 3; ++lsn) first.Add(lsn, PayloadFor(lsn));
  first.Seal(4);
  WriteFile(dir.File(SegmentFileName(1)), first.Contents());
  WriteFile(dir.File(SegmentFileName(4)), std::string(8192, 'G'));
  auto result = Recover(dir.path());
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_TRUE(Contains(result.status(), SegmentFileName(4))) << result.status();
  auto salvaged = RecoverIn(dir, Mode::kSalvage);
  ASSERT_TRUE(salvaged.ok()) << salvaged.status();
  ExpectRecords(*salvaged, Range(1, 3));
  EXPECT_EQ(salvaged->tail, TailState::kCorrupt);
}

TEST(RecoveryInputTest, HeaderLsnMustMatchTheName) {
  TempDir dir;
  SegmentBuilder seg(7);
  seg.Add(7, PayloadFor(7));
  WriteFile(dir.File(SegmentFileName(1)), seg.Contents());
  auto result = Recover(dir.path());
  ASSERT_FALSE(result.ok());
  EXPECT_TRUE(Contains(result.status(), "its name says LSN 1")) << result.status();
}

// --- clean logs ----------------------------------------------------------------------------------

TEST(RecoveryTest, CleanLogAcrossSealedSegments) {
  TempDir dir;
  SegmentBuilder a(1, 11);
  for (Lsn lsn = 1; lsn <= 10; ++lsn) a.Add(lsn, PayloadFor(lsn), lsn - 1);
  a.Seal(11, 10);
  SegmentBuilder b(11, 22);
  for (Lsn lsn = 11; lsn <= 20; ++lsn) b.Add(lsn, PayloadFor(lsn), lsn - 1);
  WriteFile(dir.File(SegmentFileName(1)), a.Contents());
  WriteFile(dir.File(SegmentFileName(11)), b.Contents());
  for (Mode mode : AllModes()) {
    auto result = RecoverIn(dir, mode);
    ASSERT_TRUE(result.ok()) << result.status();
    ExpectRecords(*result, Range(1, 20));
    EXPECT_EQ(result->tail, TailState::kClean);
    EXPECT_EQ(result->next_lsn, 21u);
    EXPECT_EQ(result->tail_segment, SegmentFileName(11));
    EXPECT_EQ(result->tail_offset, b.bytes().size());
    EXPECT_TRUE(result->damage.empty());
  }
}

TEST(RecoveryTest, LogMayStartAfterReleasedSegments) {
  TempDir dir;
  SegmentBuilder seg(1000);
  for (Lsn lsn = 1000; lsn < 1005; ++lsn) seg.Add(lsn, PayloadFor(lsn));
  WriteFile(dir.File(SegmentFileName(1000)), seg.Contents());
  auto result = Recover(dir.path());
  ASSERT_TRUE(result.ok());
  ExpectRecords(*result, Range(1000, 1004));
  EXPECT_EQ(result->first_lsn, 1000u);
}

TEST(RecoveryTest, SealedLastSegmentIsClean) {
  TempDir dir;
  SegmentBuilder seg(1);
  seg.Add(1, PayloadFor(1));
  seg.Seal(2, 1);
  WriteFile(dir.File(SegmentFileName(1)), seg.Contents());
  auto result = RecoverIn(dir, Mode::kAbsolute);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->tail, TailState::kClean);
  EXPECT_EQ(result->next_lsn, 2u);
}

TEST(RecoveryTest, LeftoverTempFileIsIgnoredAndRepairRemovesIt) {
  TempDir dir;
  SegmentBuilder seg(1);
  seg.Add(1, PayloadFor(1));
  WriteFile(dir.File(SegmentFileName(1)), seg.Contents());
  WriteFile(dir.File(SegmentFileName(2) + ".tmp"), "half-made");
  auto result = Recover(dir.path());
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->tail, TailState::kClean);
  ASSERT_EQ(result->temp_files.size(), 1u);
  auto report = Repair(*result);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->removed.size(), 1u);
  auto again = Recover(dir.path());
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->temp_files.empty());
}

// --- torn tails ----------------------------------------------------------------------------------

// A crash while the last record was being written leaves any prefix of it (on zeros, or cut by
// the end of a file that was not preallocated): recovery returns exactly the records before it.
TEST(RecoveryTest, TornTailAtEveryByteOffsetOfTheLastRecord) {
  SegmentBuilder seg(1, 0xabc, 16 << 10);
  for (Lsn lsn = 1; lsn <= 9; ++lsn) seg.Add(lsn, PayloadFor(lsn), lsn - 1);
  const uint64_t last = seg.Add(10, PayloadFor(10, 60), 9);
  const std::string full = seg.Contents();
  const uint64_t last_size = seg.bytes().size() - last;
  for (bool preallocated : {true, false}) {
    for (uint64_t cut = 0; cut < last_size; ++cut) {
      SCOPED_TRACE(::testing::Message() << "cut " << cut << " preallocated " << preallocated);
      TempDir dir;
      std::string bytes = full.substr(0, last + cut);
      if (preallocated) bytes.resize(full.size(), '\0');
      WriteFile(dir.File(SegmentFileName(1)), bytes);
      auto result = Recover(dir.path());
      ASSERT_TRUE(result.ok()) << result.status();
      ExpectRecords(*result, Range(1, 9));
      EXPECT_EQ(result->next_lsn, 10u);
      EXPECT_EQ(result->tail_offset, last);
      // Nothing of the record made it: the log simply ends there.
      EXPECT_EQ(result->tail, cut == 0 ? TailState::kClean : TailState::kTorn);
      auto absolute = RecoverIn(dir, Mode::kAbsolute);
      EXPECT_EQ(absolute.ok(), cut == 0);
      auto pit = RecoverIn(dir, Mode::kPointInTime);
      ASSERT_TRUE(pit.ok());
      ExpectRecords(*pit, Range(1, 9));
    }
  }
}

TEST(RecoveryTest, ZeroFilledTailIsCleanAndZerosThenGarbageIsTorn) {
  TempDir dir;
  SegmentBuilder seg(1);
  for (Lsn lsn = 1; lsn <= 5; ++lsn) seg.Add(lsn, PayloadFor(lsn));
  std::string bytes = seg.Contents();
  WriteFile(dir.File(SegmentFileName(1)), bytes);
  auto clean = RecoverIn(dir, Mode::kAbsolute);
  ASSERT_TRUE(clean.ok()) << clean.status();
  EXPECT_EQ(clean->tail, TailState::kClean);
  // A later sector of a lost write landed, the first did not: zeros, then garbage.
  bytes[seg.bytes().size() + 1000] = 'x';
  WriteFile(dir.File(SegmentFileName(1)), bytes);
  auto torn = Recover(dir.path());
  ASSERT_TRUE(torn.ok()) << torn.status();
  ExpectRecords(*torn, Range(1, 5));
  EXPECT_EQ(torn->tail, TailState::kTorn);
}

// --- bit flips
// -------------------------------------------------------------------------------------

// A flip of any bit of a middle record's header: that record is never returned; the damage is
// corruption when a later record proves it had been synced, and a torn tail when not.
TEST(RecoveryTest, BitFlipInEveryHeaderBitOfAMiddleRecord) {
  for (bool later_proves_sync : {true, false}) {
    SegmentBuilder seg(1, 0x5eed);
    uint64_t victim = 0;
    for (Lsn lsn = 1; lsn <= 10; ++lsn) {
      const uint64_t offset = seg.Add(lsn, PayloadFor(lsn), later_proves_sync ? lsn - 1 : 0);
      if (lsn == 5) victim = offset;
    }
    const std::string clean = seg.Contents();
    for (uint64_t bit = 0; bit < wal::kRecordHeaderSize * 8; ++bit) {
      SCOPED_TRACE(::testing::Message() << "bit " << bit << " proven " << later_proves_sync);
      TempDir dir;
      std::string bytes = clean;
      bytes[victim + bit / 8] ^= static_cast<char>(1 << (bit % 8));
      WriteFile(dir.File(SegmentFileName(1)), bytes);

      auto tolerant = Recover(dir.path());
      if (later_proves_sync) {
        ASSERT_FALSE(tolerant.ok());
        EXPECT_EQ(tolerant.status().code(), absl::StatusCode::kDataLoss);
        EXPECT_TRUE(Contains(tolerant.status(), SegmentFileName(1))) << tolerant.status();
        EXPECT_TRUE(Contains(tolerant.status(), "offset " + std::to_string(victim)))
            << tolerant.status();
        EXPECT_TRUE(Contains(tolerant.status(), "LSN 5")) << tolerant.status();
      } else {
        ASSERT_TRUE(tolerant.ok()) << tolerant.status();
        ExpectRecords(*tolerant, Range(1, 4));
        EXPECT_EQ(tolerant->tail, TailState::kTorn);
        EXPECT_EQ(tolerant->dropped_records, 5u);
      }

      auto pit = RecoverIn(dir, Mode::kPointInTime);
      ASSERT_TRUE(pit.ok()) << pit.status();
      ExpectRecords(*pit, Range(1, 4));
      EXPECT_EQ(pit->tail, later_proves_sync ? TailState::kCorrupt : TailState::kTorn);
      EXPECT_EQ(pit->dropped_records, 5u);
      ASSERT_FALSE(pit->damage.empty());
      EXPECT_EQ(pit->damage[0].first_lsn, 5u);
      EXPECT_EQ(pit->damage[0].offset, victim);
      EXPECT_EQ(pit->damage[0].next_found_lsn, 6u);

      auto salvage = RecoverIn(dir, Mode::kSalvage);
      ASSERT_TRUE(salvage.ok()) << salvage.status();
      ExpectRecords(*salvage, {1, 2, 3, 4, 6, 7, 8, 9, 10});

      EXPECT_FALSE(RecoverIn(dir, Mode::kAbsolute).ok());
    }
  }
}

TEST(RecoveryTest, PayloadBitFlipIsNeverReturned) {
  SegmentBuilder seg(1);
  uint64_t victim = 0;
  for (Lsn lsn = 1; lsn <= 4; ++lsn) {
    const uint64_t offset = seg.Add(lsn, PayloadFor(lsn, 20), lsn - 1);
    if (lsn == 2) victim = offset;
  }
  TempDir dir;
  std::string bytes = seg.Contents();
  bytes[victim + wal::kRecordHeaderSize + 3] ^= 0x10;
  WriteFile(dir.File(SegmentFileName(1)), bytes);
  auto salvage = RecoverIn(dir, Mode::kSalvage);
  ASSERT_TRUE(salvage.ok());
  ExpectRecords(*salvage, {1, 3, 4}, 20);
  ASSERT_EQ(salvage->damage.size(), 1u);
  EXPECT_EQ(salvage->damage[0].first_lsn, 2u);
  EXPECT_EQ(salvage->damage[0].next_found_lsn, 3u);
}

// --- recycled segments -------------------------------------------------------------------------

// A recycled segment holds the new records, then stale records of its previous life (old salt).
TEST(RecoveryTest, StaleRecordsOfAnotherSaltInARecycledSegment) {
  SegmentBuilder old_life(1, /*salt=*/0x01d);
  for (Lsn lsn = 1; lsn <= 40; ++lsn) old_life.Add(lsn, PayloadFor(lsn, 30), lsn - 1);
  // New life: starts at LSN 41 with a new salt; written over the start of the old records. Stale
  // records 26.. even carry the LSNs that would come next in a log starting at 26.
  SegmentBuilder new_life(41, /*salt=*/0x2e3);
  for (Lsn lsn = 41; lsn <= 45; ++lsn) new_life.Add(lsn, PayloadFor(lsn), lsn - 1);
  std::string bytes = old_life.Contents();
  bytes.replace(0, new_life.bytes().size(), new_life.bytes());
  TempDir dir;
  WriteFile(dir.File(SegmentFileName(41)), bytes);
  for (Mode mode : {Mode::kTolerateTornTail, Mode::kPointInTime, Mode::kSalvage}) {
    auto result = RecoverIn(dir, mode);
    ASSERT_TRUE(result.ok()) << result.status();
    ExpectRecords(*result, Range(41, 45));
    EXPECT_EQ(result->tail, TailState::kTorn);
    EXPECT_EQ(result->dropped_records, 0u);
  }
}

// --- missing segments ----------------------------------------------------------------------------

TEST(RecoveryTest, MissingMiddleSegmentAfterASealIsCorrupt) {
  TempDir dir;
  SegmentBuilder a(1, 1);
  for (Lsn lsn = 1; lsn <= 5; ++lsn) a.Add(lsn, PayloadFor(lsn), lsn - 1);
  a.Seal(6, 5);
  SegmentBuilder c(11, 3);  // the segment for LSN 6..10 is missing
  for (Lsn lsn = 11; lsn <= 12; ++lsn) c.Add(lsn, PayloadFor(lsn), 0);
  WriteFile(dir.File(SegmentFileName(1)), a.Contents());
  WriteFile(dir.File(SegmentFileName(11)), c.Contents());
  auto result = Recover(dir.path());
  ASSERT_FALSE(result.ok());
  EXPECT_TRUE(Contains(result.status(), "gap")) << result.status();
  EXPECT_TRUE(Contains(result.status(), SegmentFileName(11))) << result.status();
  auto pit = RecoverIn(dir, Mode::kPointInTime);
  ASSERT_TRUE(pit.ok());
  ExpectRecords(*pit, Range(1, 5));
  EXPECT_EQ(pit->tail, TailState::kCorrupt);
  EXPECT_EQ(pit->dropped_records, 2u);
  auto salvage = RecoverIn(dir, Mode::kSalvage);
  ASSERT_TRUE(salvage.ok());
  ExpectRecords(*salvage, {1, 2, 3, 4, 5, 11, 12});
}

TEST(RecoveryTest, GapBetweenUnsealedSegmentsDependsOnSyncedLsn) {
  for (bool proven : {true, false}) {
    TempDir dir;
    SegmentBuilder a(1, 1);
    for (Lsn lsn = 1; lsn <= 5; ++lsn) a.Add(lsn, PayloadFor(lsn), lsn - 1);
    SegmentBuilder b(9, 2);  // records 6..8 were never written to the first segment
    for (Lsn lsn = 9; lsn <= 10; ++lsn) b.Add(lsn, PayloadFor(lsn), proven ? lsn - 1 : 5);
    WriteFile(dir.File(SegmentFileName(1)), a.Contents());
    WriteFile(dir.File(SegmentFileName(9)), b.Contents());
    auto result = Recover(dir.path());
    if (proven) {
      EXPECT_FALSE(result.ok());
    } else {
      ASSERT_TRUE(result.ok()) << result.status();
      ExpectRecords(*result, Range(1, 5));
      EXPECT_EQ(result->tail, TailState::kTorn);
      EXPECT_EQ(result->tail_segment, SegmentFileName(1));
      EXPECT_EQ(result->dropped_records, 2u);
    }
  }
}

// --- repair --------------------------------------------------------------------------------------

// A torn first segment followed by a segment of unsynced records: the state a crash leaves when a
// batch spanning a segment switch was lost in part.
void BuildTornTwoSegmentLog(const TempDir& dir, uint64_t* torn_offset) {
  SegmentBuilder a(1, 1, 32 << 10);
  for (Lsn lsn = 1; lsn <= 6; ++lsn) a.Add(lsn, PayloadFor(lsn, 100), lsn - 1);
  *torn_offset = a.Add(7, PayloadFor(7, 100), 6);
  a.Add(8, PayloadFor(8, 100), 6);
  a.Seal(9, 6);
  std::string bytes = a.Contents();
  bytes[*torn_offset + 40] ^= 0x42;  // record 7 torn
  SegmentBuilder b(9, 2, 32 << 10);
  for (Lsn lsn = 9; lsn <= 12; ++lsn) b.Add(lsn, PayloadFor(lsn, 100), 6);
  WriteFile(dir.File(SegmentFileName(1)), bytes);
  WriteFile(dir.File(SegmentFileName(9)), b.Contents());
}

TEST(RepairTest, CutsTheTornTailAndIsIdempotent) {
  TempDir dir;
  uint64_t torn_offset = 0;
  BuildTornTwoSegmentLog(dir, &torn_offset);
  auto result = Recover(dir.path());
  ASSERT_TRUE(result.ok()) << result.status();
  ExpectRecords(*result, Range(1, 6), 100);
  EXPECT_EQ(result->tail, TailState::kTorn);
  EXPECT_EQ(result->dropped_records, 5u);  // 8, 9..12 valid but unsynced; 7 torn
  auto report = Repair(*result);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->changed());
  EXPECT_EQ(report->removed, std::vector<std::string>{SegmentFileName(9)});
  const std::string repaired = ReadFile(dir.File(SegmentFileName(1)));
  EXPECT_EQ(repaired.size(), 32u << 10);  // the preallocated size is kept
  EXPECT_EQ(repaired.find_first_not_of('\0', torn_offset), std::string::npos);

  auto after = RecoverIn(dir, Mode::kAbsolute);
  ASSERT_TRUE(after.ok()) << after.status();
  ExpectRecords(*after, Range(1, 6), 100);
  EXPECT_EQ(after->tail, TailState::kClean);
  EXPECT_EQ(after->next_lsn, 7u);
  auto again = Repair(*result);  // the stale result: still nothing to do
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(again->changed());
  EXPECT_EQ(ReadFile(dir.File(SegmentFileName(1))), repaired);
}

TEST(RepairTest, RefusesCorruptUnlessPointInTimeAndRefusesSalvage) {
  TempDir dir;
  SegmentBuilder seg(1);
  uint64_t victim = 0;
  for (Lsn lsn = 1; lsn <= 5; ++lsn) {
    const uint64_t offset = seg.Add(lsn, PayloadFor(lsn), lsn - 1);
    if (lsn == 3) victim = offset;
  }
  std::string bytes = seg.Contents();
  bytes[victim + 8] ^= 1;
  WriteFile(dir.File(SegmentFileName(1)), bytes);
  auto salvage = RecoverIn(dir, Mode::kSalvage);
  ASSERT_TRUE(salvage.ok());
  EXPECT_EQ(Repair(*salvage).status().code(), absl::StatusCode::kFailedPrecondition);
  RecoveryResult corrupt = *salvage;
  corrupt.mode = Mode::kTolerateTornTail;
  EXPECT_EQ(Repair(corrupt).status().code(), absl::StatusCode::kFailedPrecondition);
  auto pit = RecoverIn(dir, Mode::kPointInTime);
  ASSERT_TRUE(pit.ok());
  ASSERT_TRUE(Repair(*pit).ok());
  auto after = RecoverIn(dir, Mode::kAbsolute);
  ASSERT_TRUE(after.ok()) << after.status();
  ExpectRecords(*after, Range(1, 2));
}

// --- the streaming form ---------------------------------------------------------------------

TEST(RecoveryVisitorTest, VisitorErrorStopsRecoveryAndIsReturned) {
  TempDir dir;
  SegmentBuilder seg(1);
  for (Lsn lsn = 1; lsn <= 20; ++lsn) seg.Add(lsn, PayloadFor(lsn, 1));
  WriteFile(dir.File(SegmentFileName(1)), seg.Contents());
  std::vector<Lsn> seen;
  auto result = Recover(dir.path(), RecoverOptions{}, [&](Lsn lsn, absl::Span<const uint8_t>) {
    seen.push_back(lsn);
    return lsn == 7 ? absl::AbortedError("apply failed at 7") : absl::OkStatus();
  });
  EXPECT_TRUE(absl::IsAborted(result.status())) << result.status();
  EXPECT_EQ(std::string(result.status().message()), "apply failed at 7");
  EXPECT_EQ(seen, Range(1, 7));  // nothing after the failing record is visited
}

TEST(RecoveryVisitorTest, PayloadPointsIntoTheReadBufferWithoutCopies) {
  TempDir dir;
  SegmentBuilder seg(1);
  for (Lsn lsn = 1; lsn <= 15; ++lsn) seg.Add(lsn, PayloadFor(lsn, 3000));  // one segment
  WriteFile(dir.File(SegmentFileName(1)), seg.Contents());
  // Every payload of one chunk lies inside one buffer: consecutive records are adjacent there
  // (32-byte header in between), which a per-record copy would not give.
  const uint8_t* previous_end = nullptr;
  uint64_t adjacent = 0, count = 0;
  auto result = Recover(dir.path(), RecoverOptions{}, [&](Lsn lsn, absl::Span<const uint8_t> p) {
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(p.data()), p.size()),
              PayloadFor(lsn, 3000));
    if (previous_end != nullptr && p.data() == previous_end + wal::kRecordHeaderSize) ++adjacent;
    previous_end = p.data() + p.size();
    ++count;
    return absl::OkStatus();
  });
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(count, 15u);
  EXPECT_EQ(result->record_count, 15u);
  EXPECT_EQ(adjacent, 14u);
}

}  // namespace
}  // namespace powercut::recovery
