// SegmentReader: scans one WAL segment file (wal/record_format.h) through a wal::Env.
//
// It is the one place that walks records on disk; the WAL's Open (to find where to continue),
// recovery/ (to classify the tail and return records) and waldump all use it.
//
// Guarantees:
// - Never reads outside the file, never loops without progress, never reports a record whose
//   checksum (with this segment's salt) failed. Any byte content is accepted as input.
// - A chain scan (ScanChain) walks packed records from an offset, requiring dense LSNs (the first
//   record carries the expected LSN, then +1 each; a kSeal carries the LSN the next segment starts
//   with and consumes none), and stops at the first thing that is not the next valid record.
// - The data region of a segment is [kSegmentHeaderSize, data_end), data_end = min(file size,
//   header.segment_size): bytes past the declared segment size are never interpreted.
// - Reads go through a reusable buffer in large chunks (default 4 MiB), so a scan from the page
//   cache runs at memory speed (well over 1 GB/s).
//
// Not thread-safe: one reader per thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "wal/env.h"
#include "wal/record_format.h"

namespace powercut::wal {

// Why a chain scan stopped.
enum class ScanStop {
  kEndOfSegment,  // the chain reached data_end exactly (no room for another record header)
  kSeal,          // a valid kSeal record carrying the expected LSN (ends the segment)
  kZero,          // the header bytes at the stop offset are all zero (or < 32 zero bytes remain)
  kTruncated,     // a header or payload would run past data_end
  kBadHeader,     // reserved bytes, type or length are impossible
  kBadChecksum,   // CRC mismatch: torn write, stale bytes, bit flip, another salt
  kLsnMismatch,   // a record with a valid checksum but not the expected LSN
};

std::string_view ScanStopName(ScanStop stop);

// True for the stops that by themselves say "the chain ended normally here" (end of segment, seal,
// zeros). kZero is only clean when the rest of the segment is zero too: see TailProbe.
inline bool IsNormalStop(ScanStop stop) {
  return stop == ScanStop::kEndOfSegment || stop == ScanStop::kSeal || stop == ScanStop::kZero;
}

// A valid record found in a segment.
struct RecordLocation {
  uint64_t offset = 0;  // of its header, from the start of the file
  RecordHeader header;  // length, lsn, synced_lsn, type
  uint64_t size() const { return kRecordHeaderSize + uint64_t{header.length}; }
};

// Called for every valid record of a chain, in order (kSeal included). `payload` points into the
// reader's buffer and is valid only during the call.
using RecordCallback =
    std::function<void(const RecordLocation& record, absl::Span<const uint8_t> payload)>;

struct ChainScan {
  uint64_t start_offset = 0;
  Lsn start_lsn = 0;          // the LSN the first record had to carry
  uint64_t end_offset = 0;    // first byte after the last valid record (start_offset when none)
  Lsn next_lsn = 0;           // the LSN the next record would carry (a seal's LSN when sealed)
  uint64_t data_records = 0;  // valid kData records in the chain
  ScanStop stop = ScanStop::kZero;
  std::optional<uint64_t> seal_offset;  // set when stop == kSeal
  Lsn max_synced_lsn = 0;               // max synced_lsn over the chain's valid records
  // Last data LSN of the chain, or start_lsn - 1 when it has none.
  Lsn last_lsn() const { return next_lsn - 1; }
};

// What lies in a segment after an offset (normally the stop offset of a chain).
struct TailProbe {
  uint64_t from = 0;
  bool all_zero = true;        // every byte in [from, data_end) is zero
  uint64_t first_nonzero = 0;  // offset of the first non-zero byte; data_end when all_zero
  uint64_t later_records = 0;  // valid records (this salt, LSN >= min_lsn) at offsets >= from
  std::optional<RecordLocation> first_later;  // the one at the lowest offset
  Lsn max_later_lsn = 0;                      // highest LSN among them (0: none)
  Lsn max_later_synced_lsn = 0;               // highest synced_lsn among them (0: none)
};

// How the chain of one segment ends, judged from ScanChain and ProbeTail(scan.end_offset,
// scan.next_lsn). This is the single-segment rule shared by Wal::Open and recovery/ (which adds the
// rules across segments; docs/recovery.md):
// - kClean:   the chain stopped at the segment end, at a seal, or at zeros with only zeros after.
// - kCorrupt: it stopped at a bad spot, and a later valid record of this salt has
//             synced_lsn >= scan.next_lsn: the log itself proves the lost record had passed a
//             barrier, so this is not the unsynced tail of a crash.
// - kTorn:    anything else: a partial record, garbage or stale bytes after the last record, or
//             later valid records that were not yet proven synced (one unsynced batch torn by a
//             volatile cache). Appending at scan.end_offset is safe only after the rest of the
//             segment is zeroed (recovery::Repair), because later records of this salt may exist.
enum class SegmentTail { kClean, kTorn, kCorrupt };
std::string_view SegmentTailName(SegmentTail tail);
SegmentTail ClassifySegmentTail(const ChainScan& scan, const TailProbe& probe);

class SegmentReader {
 public:
  // Opens `path` read-only and decodes its header. Errors name the file: DataLoss for a short
  // file or a garbage header, FailedPrecondition for another format version.
  static absl::StatusOr<std::unique_ptr<SegmentReader>> Open(Env* env, const std::string& path,
                                                             size_t chunk_bytes = 4 << 20);

  ~SegmentReader();
  SegmentReader(const SegmentReader&) = delete;
  SegmentReader& operator=(const SegmentReader&) = delete;

  const std::string& path() const { return path_; }
  const SegmentHeader& header() const { return header_; }
  uint64_t file_size() const { return file_size_; }
  uint64_t data_end() const { return data_end_; }

  // Scans the chain of records starting at `offset` whose first record must carry `expected_lsn`.
  absl::StatusOr<ChainScan> ScanChain(uint64_t offset, Lsn expected_lsn,
                                      const RecordCallback& on_record = nullptr);
  // ScanChain(kSegmentHeaderSize, header().first_lsn, on_record).
  absl::StatusOr<ChainScan> ScanAll(const RecordCallback& on_record = nullptr);

  // The valid record (this salt, LSN >= min_lsn) at the lowest offset in [from, data_end), trying
  // every byte offset (records are packed at arbitrary offsets). Cheap header fields are checked
  // before the CRC, so zero-filled or random space is searched at memory speed.
  absl::StatusOr<std::optional<RecordLocation>> FindNextRecord(uint64_t from, Lsn min_lsn);

  // True when every byte in [from, data_end) is zero; `first_nonzero` gets the first other byte.
  absl::StatusOr<bool> IsZeroFrom(uint64_t from, uint64_t* first_nonzero = nullptr);

  // Everything TailProbe reports about [from, data_end): zero-ness and the valid records of this
  // salt with LSN >= min_lsn (found by FindNextRecord, then followed as chains). `on_record`, when
  // given, sees each of those records with its payload, in offset order.
  absl::StatusOr<TailProbe> ProbeTail(uint64_t from, Lsn min_lsn,
                                      const RecordCallback& on_record = nullptr);

 private:
  SegmentReader(std::string path, std::unique_ptr<File> file, SegmentHeader header,
                uint64_t file_size, size_t chunk_bytes);

  // Returns the bytes [offset, offset + min(want, data_end - offset)) from the buffer, reading
  // at least chunk_bytes_ when they are not buffered yet. Empty at or past data_end.
  absl::StatusOr<absl::Span<const uint8_t>> Window(uint64_t offset, uint64_t want);
  // Decodes the record at `offset`, growing the window when its payload is longer than a chunk.
  absl::StatusOr<DecodedRecord> DecodeAt(uint64_t offset);

  std::string path_;
  std::unique_ptr<File> file_;
  SegmentHeader header_;
  uint64_t file_size_ = 0;
  uint64_t data_end_ = 0;
  size_t chunk_bytes_ = 0;
  std::vector<uint8_t> buffer_;
  uint64_t buffer_offset_ = 0;  // file offset of buffer_[0]
  size_t buffer_size_ = 0;      // valid bytes in buffer_
};

}  // namespace powercut::wal
