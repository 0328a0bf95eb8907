#include "wal/segment_reader.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/recovery/log_builder.h"
#include "wal/env.h"

namespace powercut::wal {
namespace {

using powercut::testing::PayloadFor;
using powercut::testing::SegmentBuilder;
using powercut::testing::TempDir;
using powercut::testing::WriteFile;

struct Seen {
  std::vector<Lsn> lsns;
  std::vector<std::string> payloads;
  RecordCallback Callback() {
    return [this](const RecordLocation& r, absl::Span<const uint8_t> payload) {
      if (r.header.type != RecordType::kData) return;
      lsns.push_back(r.header.lsn);
      payloads.emplace_back(reinterpret_cast<const char*>(payload.data()), payload.size());
    };
  }
};

std::unique_ptr<SegmentReader> OpenReader(const std::string& path, size_t chunk = 4 << 20) {
  auto reader = SegmentReader::Open(Env::Default(), path, chunk);
  EXPECT_TRUE(reader.ok()) << reader.status();
  return reader.ok() ? std::move(*reader) : nullptr;
}

TEST(SegmentReaderTest, ScansAValidChainEndingInZeros) {
  TempDir dir;
  SegmentBuilder seg(5);
  for (Lsn lsn = 5; lsn < 25; ++lsn) seg.Add(lsn, PayloadFor(lsn), lsn - 1);
  const std::string path = dir.File(SegmentFileName(5));
  WriteFile(path, seg.Contents());
  auto reader = OpenReader(path);
  ASSERT_NE(reader, nullptr);
  EXPECT_EQ(reader->header().first_lsn, 5u);
  Seen seen;
  auto scan = reader->ScanAll(seen.Callback());
  ASSERT_TRUE(scan.ok()) << scan.status();
  EXPECT_EQ(scan->stop, ScanStop::kZero);
  EXPECT_EQ(scan->data_records, 20u);
  EXPECT_EQ(scan->next_lsn, 25u);
  EXPECT_EQ(scan->end_offset, seg.bytes().size());
  EXPECT_EQ(scan->max_synced_lsn, 23u);
  ASSERT_EQ(seen.lsns.size(), 20u);
  for (size_t i = 0; i < seen.lsns.size(); ++i) {
    EXPECT_EQ(seen.lsns[i], 5 + i);
    EXPECT_EQ(seen.payloads[i], PayloadFor(5 + i));
  }
  auto probe = reader->ProbeTail(scan->end_offset, scan->next_lsn);
  ASSERT_TRUE(probe.ok());
  EXPECT_TRUE(probe->all_zero);
  EXPECT_EQ(ClassifySegmentTail(*scan, *probe), SegmentTail::kClean);
}

// Records larger than the read chunk, and records straddling chunk boundaries, decode the same.
TEST(SegmentReaderTest, SmallChunksAndLargeRecords) {
  TempDir dir;
  SegmentBuilder seg(1, 77, 1 << 20);
  for (Lsn lsn = 1; lsn <= 40; ++lsn) seg.Add(lsn, std::string(100 + lsn * 397, 'a' + lsn % 26));
  const std::string path = dir.File(SegmentFileName(1));
  WriteFile(path, seg.Contents());
  auto reader = OpenReader(path, 4096);
  ASSERT_NE(reader, nullptr);
  Seen seen;
  auto scan = reader->ScanAll(seen.Callback());
  ASSERT_TRUE(scan.ok());
  EXPECT_EQ(scan->data_records, 40u);
  for (size_t i = 0; i < seen.payloads.size(); ++i) {
    EXPECT_EQ(seen.payloads[i], std::string(100 + (i + 1) * 397, 'a' + (i + 1) % 26));
  }
}

TEST(SegmentReaderTest, SealEndsTheChain) {
  TempDir dir;
  SegmentBuilder seg(1);
  seg.Add(1, "a");
  seg.Add(2, "b");
  const uint64_t seal = seg.Seal(3, 2);
  const std::string path = dir.File(SegmentFileName(1));
  WriteFile(path, seg.Contents());
  auto reader = OpenReader(path);
  auto scan = reader->ScanAll();
  ASSERT_TRUE(scan.ok());
  EXPECT_EQ(scan->stop, ScanStop::kSeal);
  EXPECT_EQ(scan->seal_offset, seal);
  EXPECT_EQ(scan->next_lsn, 3u);
  EXPECT_EQ(scan->data_records, 2u);
}

TEST(SegmentReaderTest, ChainFillingTheSegmentEndsAtEndOfSegment) {
  TempDir dir;
  SegmentBuilder seg(1, 9, kSegmentHeaderSize + 3 * (kRecordHeaderSize + 10));
  for (Lsn lsn = 1; lsn <= 3; ++lsn) seg.Add(lsn, std::string(10, 'x'));
  const std::string path = dir.File(SegmentFileName(1));
  WriteFile(path, seg.Contents());
  auto scan = OpenReader(path)->ScanAll();
  ASSERT_TRUE(scan.ok());
  EXPECT_EQ(scan->stop, ScanStop::kEndOfSegment);
  EXPECT_EQ(scan->data_records, 3u);
}

TEST(SegmentReaderTest, RecordCutByEndOfFileIsTruncated) {
  TempDir dir;
  SegmentBuilder seg(1);
  seg.Add(1, "first");
  const uint64_t second = seg.Add(2, std::string(300, 'q'));
  std::string bytes = seg.Contents(/*preallocated=*/false);
  bytes.resize(second + 100);
  const std::string path = dir.File(SegmentFileName(1));
  WriteFile(path, bytes);
  auto reader = OpenReader(path);
  auto scan = reader->ScanAll();
  ASSERT_TRUE(scan.ok());
  EXPECT_EQ(scan->stop, ScanStop::kTruncated);
  EXPECT_EQ(scan->end_offset, second);
  auto probe = reader->ProbeTail(scan->end_offset, scan->next_lsn);
  ASSERT_TRUE(probe.ok());
  EXPECT_EQ(ClassifySegmentTail(*scan, *probe), SegmentTail::kTorn);
}

TEST(SegmentReaderTest, FindsLaterRecordsAtOddOffsetsAndTheirSyncedLsn) {
  TempDir dir;
  SegmentBuilder seg(1);
  seg.Add(1, "one");
  const uint64_t bad = seg.Add(2, "two", 1);
  seg.bytes()[bad + kRecordHeaderSize + 1] ^= 0x01;  // a payload byte of record 2
  seg.AddRaw("xyz");                                 // junk: record 3 starts at an unaligned offset
  const uint64_t third = seg.Add(3, "three", 1);
  seg.Add(4, "four", 2);
  const std::string path = dir.File(SegmentFileName(1));
  WriteFile(path, seg.Contents());
  auto reader = OpenReader(path);
  auto scan = reader->ScanAll();
  ASSERT_TRUE(scan.ok());
  EXPECT_EQ(scan->stop, ScanStop::kBadChecksum);
  EXPECT_EQ(scan->end_offset, bad);
  auto found = reader->FindNextRecord(bad, 2);
  ASSERT_TRUE(found.ok());
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ((*found)->offset, third);
  EXPECT_EQ((*found)->header.lsn, 3u);
  auto probe = reader->ProbeTail(scan->end_offset, scan->next_lsn);
  ASSERT_TRUE(probe.ok());
  EXPECT_FALSE(probe->all_zero);
  EXPECT_EQ(probe->later_records, 2u);
  EXPECT_EQ(probe->max_later_lsn, 4u);
  EXPECT_EQ(probe->max_later_synced_lsn, 2u);
  // Record 4 says everything up to LSN 2 had passed a barrier: losing record 2 is corruption.
  EXPECT_EQ(ClassifySegmentTail(*scan, *probe), SegmentTail::kCorrupt);
}

TEST(SegmentReaderTest, LaterRecordsNotProvenSyncedMakeATornTail) {
  TempDir dir;
  SegmentBuilder seg(1);
  seg.Add(1, "one");
  const uint64_t bad = seg.Add(2, "two", 1);
  seg.Add(3, "three", 1);
  seg.bytes()[bad + 10] ^= 0x80;  // LSN field of record 2
  const std::string path = dir.File(SegmentFileName(1));
  WriteFile(path, seg.Contents());
  auto reader = OpenReader(path);
  auto scan = reader->ScanAll();
  ASSERT_TRUE(scan.ok());
  auto probe = reader->ProbeTail(scan->end_offset, scan->next_lsn);
  ASSERT_TRUE(probe.ok());
  EXPECT_EQ(probe->later_records, 1u);
  EXPECT_EQ(ClassifySegmentTail(*scan, *probe), SegmentTail::kTorn);
}

TEST(SegmentReaderTest, RecordsOfAnotherSaltAreNeverAccepted) {
  TempDir dir;
  SegmentBuilder seg(1, /*salt=*/111);
  seg.Add(1, "mine");
  seg.AddWithSalt(222, 2, "stale");
  seg.AddWithSalt(222, 3, "stale");
  const std::string path = dir.File(SegmentFileName(1));
  WriteFile(path, seg.Contents());
  auto reader = OpenReader(path);
  auto scan = reader->ScanAll();
  ASSERT_TRUE(scan.ok());
  EXPECT_EQ(scan->stop, ScanStop::kBadChecksum);
  EXPECT_EQ(scan->data_records, 1u);
  auto probe = reader->ProbeTail(scan->end_offset, 0);
  ASSERT_TRUE(probe.ok());
  EXPECT_EQ(probe->later_records, 0u);
}

TEST(SegmentReaderTest, WrongLsnStopsTheChain) {
  TempDir dir;
  SegmentBuilder seg(1);
  seg.Add(1, "a");
  seg.Add(3, "skipped two");
  const std::string path = dir.File(SegmentFileName(1));
  WriteFile(path, seg.Contents());
  auto scan = OpenReader(path)->ScanAll();
  ASSERT_TRUE(scan.ok());
  EXPECT_EQ(scan->stop, ScanStop::kLsnMismatch);
  EXPECT_EQ(scan->next_lsn, 2u);
}

TEST(SegmentReaderTest, BadHeadersAreErrorsNamingTheFile) {
  TempDir dir;
  const std::string short_path = dir.File("short");
  WriteFile(short_path, "PCUTWAL");
  auto short_reader = SegmentReader::Open(Env::Default(), short_path);
  ASSERT_FALSE(short_reader.ok());
  EXPECT_NE(short_reader.status().message().find(short_path), absl::string_view::npos);

  SegmentBuilder seg(1);
  std::string bytes = seg.Contents();
  bytes[20] ^= 1;  // log id: header CRC fails
  const std::string garbage_path = dir.File("garbage");
  WriteFile(garbage_path, bytes);
  auto garbage = SegmentReader::Open(Env::Default(), garbage_path);
  ASSERT_FALSE(garbage.ok());
  EXPECT_EQ(garbage.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(garbage.status().message().find("garbage"), absl::string_view::npos);
}

}  // namespace
}  // namespace powercut::wal
