// The on-disk format of a WAL: segment headers and record framing. docs/format.md is the prose
// version with a worked hex example; this header is the authority.
//
// A log is a directory of segment files `wal-<first LSN, 20 digits>.log`, each of fixed size.
//
// Segment header (kSegmentHeaderSize = 4096 bytes, so records start block-aligned for O_DIRECT):
//   0  char[8] magic "PCUTWAL\0"
//   8  u32     format version (kFormatVersion)
//   12 u32     header size (4096)
//   16 u64     log id       (random per log; the same in every segment of one log)
//   24 u64     segment salt (random per segment creation or recycling)
//   32 u64     first LSN of this segment
//   40 u64     segment size in bytes (header included)
//   48 u32     block size the writer aligned to (512 or 4096)
//   52 u32     CRC32C of bytes [0, 52)
//   56..4096   zero
//
// Record (at any byte offset >= 4096, packed one after another; kRecordHeaderSize = 32):
//   0  u32 CRC32C of: segment salt (u64 LE) ++ bytes [4, 32 + length) of the record
//   4  u32 payload length
//   8  u64 LSN (dense: 1, 2, 3, ... across the whole log)
//   16 u64 synced LSN: every record <= this LSN had passed a barrier before this record was written
//   24 u8  type (kData, kSeal)
//   25 u8[7] zero
//   32 payload
//
// All integers are little-endian. The salt in the checksum makes a record of another log, or a
// stale record left in a recycled segment, fail its checksum, and a zero-filled (preallocated)
// region never parses as a record (its length/type/CRC are all zero, which is rejected: a CRC of
// zero bytes with the salt is never 0 for type 0 because type 0 is invalid).
//
// A kSeal record (empty payload, its own LSN not consumed: it carries the LSN the next segment
// starts with) ends a segment: the writer writes it once the next segment is durable, and a clean
// Wal::Close writes one after the last record of a recycled segment (whose old records, stale
// under the new salt, would otherwise make the chain end like a torn tail), so that the closed
// log reopens without repair and continues in a new segment at the seal's LSN.
//
// "wal-<20 digits>.log.tmp" files are segments in the making (removed by Wal::Open and repair);
// the writer's spare is "wal-18446744073709551615.log.tmp" (LSN 2^64-1 is never assigned).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace powercut::wal {

using Lsn = uint64_t;

inline constexpr char kSegmentMagic[8] = {'P', 'C', 'U', 'T', 'W', 'A', 'L', '\0'};
inline constexpr uint32_t kFormatVersion = 1;
inline constexpr uint32_t kSegmentHeaderSize = 4096;
inline constexpr uint32_t kRecordHeaderSize = 32;

enum class RecordType : uint8_t {
  kData = 1,
  kSeal = 2,
};

struct SegmentHeader {
  uint64_t log_id = 0;
  uint64_t segment_salt = 0;
  Lsn first_lsn = 0;
  uint64_t segment_size = 0;
  uint32_t block_size = 4096;
};

// Encodes a full kSegmentHeaderSize-byte header block.
std::string EncodeSegmentHeader(const SegmentHeader& header);

// Decodes and validates (magic, version, size fields, CRC). Errors name what is wrong; a
// FailedPrecondition means "a powercut segment, but another format version".
absl::StatusOr<SegmentHeader> DecodeSegmentHeader(absl::Span<const uint8_t> block);

// The segment file name for a segment starting at `first_lsn`: "wal-00000000000000000001.log".
std::string SegmentFileName(Lsn first_lsn);
// Parses a segment file name; nullopt for anything else.
std::optional<Lsn> ParseSegmentFileName(std::string_view name);

struct RecordHeader {
  uint32_t length = 0;
  Lsn lsn = 0;
  Lsn synced_lsn = 0;
  RecordType type = RecordType::kData;
};

// Appends header + payload for one record to `out`.
void EncodeRecord(uint64_t segment_salt, const RecordHeader& header,
                  absl::Span<const uint8_t> payload, std::string* out);

// What DecodeRecord found at an offset.
enum class DecodeOutcome {
  kOk,          // a valid record
  kZero,        // the 32 header bytes are all zero (preallocated / never written)
  kTruncated,   // fewer bytes than the header, or than header + length, are available
  kBadHeader,   // reserved bytes non-zero, unknown type, or an impossible length
  kBadChecksum  // CRC mismatch (torn write, stale data, bit flip, or another log's record)
};

struct DecodedRecord {
  DecodeOutcome outcome = DecodeOutcome::kZero;
  RecordHeader header;
  absl::Span<const uint8_t> payload;  // into the input; valid only when outcome == kOk
  size_t size = 0;                    // header + payload bytes, when the length field was usable
};

// Decodes the record starting at data[0]. `max_length` bounds the payload length accepted (the
// segment's remaining space). Never reads outside `data`. Never returns kOk for a record whose
// checksum failed.
DecodedRecord DecodeRecord(uint64_t segment_salt, absl::Span<const uint8_t> data,
                           uint64_t max_length);

std::string_view DecodeOutcomeName(DecodeOutcome outcome);

}  // namespace powercut::wal
