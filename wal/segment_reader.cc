#include "wal/segment_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/base/internal/endian.h"
#include "base/status_macros.h"

namespace powercut::wal {
namespace {

using absl::little_endian::Load32;
using absl::little_endian::Load64;

// Byte offsets inside a record header (wal/record_format.h).
constexpr size_t kLengthOffset = 4;
constexpr size_t kLsnOffset = 8;
constexpr size_t kTypeOffset = 24;

absl::Status WithPath(const absl::Status& status, const std::string& path) {
  return absl::Status(status.code(), fmt::format("{}: {}", path, std::string(status.message())));
}

}  // namespace

std::string_view ScanStopName(ScanStop stop) {
  switch (stop) {
    case ScanStop::kEndOfSegment:
      return "end_of_segment";
    case ScanStop::kSeal:
      return "seal";
    case ScanStop::kZero:
      return "zero";
    case ScanStop::kTruncated:
      return "truncated";
    case ScanStop::kBadHeader:
      return "bad_header";
    case ScanStop::kBadChecksum:
      return "bad_checksum";
    case ScanStop::kLsnMismatch:
      return "lsn_mismatch";
  }
  return "unknown";
}

std::string_view SegmentTailName(SegmentTail tail) {
  switch (tail) {
    case SegmentTail::kClean:
      return "clean";
    case SegmentTail::kTorn:
      return "torn";
    case SegmentTail::kCorrupt:
      return "corrupt";
  }
  return "unknown";
}

SegmentTail ClassifySegmentTail(const ChainScan& scan, const TailProbe& probe) {
  if (scan.stop == ScanStop::kEndOfSegment || scan.stop == ScanStop::kSeal) {
    return SegmentTail::kClean;
  }
  if (probe.later_records > 0 && probe.max_later_synced_lsn >= scan.next_lsn) {
    return SegmentTail::kCorrupt;
  }
  if (scan.stop == ScanStop::kZero && probe.all_zero) return SegmentTail::kClean;
  return SegmentTail::kTorn;
}

SegmentReader::SegmentReader(std::string path, std::unique_ptr<File> file, SegmentHeader header,
                             uint64_t file_size, size_t chunk_bytes)
    : path_(std::move(path)),
      file_(std::move(file)),
      header_(header),
      file_size_(file_size),
      data_end_(std::min(file_size, header.segment_size)),
      chunk_bytes_(std::max<size_t>(chunk_bytes, 4096)) {}

SegmentReader::~SegmentReader() {
  if (file_ != nullptr) file_->Close().IgnoreError();  // read-only: nothing to lose
}

absl::StatusOr<std::unique_ptr<SegmentReader>> SegmentReader::Open(Env* env,
                                                                   const std::string& path,
                                                                   size_t chunk_bytes) {
  if (env == nullptr) env = Env::Default();
  OpenOptions options;
  options.read_only = true;
  ASSIGN_OR_RETURN(std::unique_ptr<File> file, env->Open(path, options));
  ASSIGN_OR_RETURN(const uint64_t size, file->Size());
  if (size < kSegmentHeaderSize) {
    file->Close().IgnoreError();
    return absl::DataLossError(
        fmt::format("{}: {} bytes, shorter than the {}-byte segment header (a segment is never "
                    "this short; it is not a powercut WAL segment or was cut short)",
                    path, size, kSegmentHeaderSize));
  }
  std::vector<uint8_t> block(kSegmentHeaderSize);
  size_t got = 0;
  while (got < block.size()) {
    ASSIGN_OR_RETURN(const size_t n, file->Read(got, block.size() - got, block.data() + got));
    if (n == 0) break;
    got += n;
  }
  if (got < block.size()) {
    file->Close().IgnoreError();
    return absl::DataLossError(
        fmt::format("{}: read only {} of the {} header bytes", path, got, kSegmentHeaderSize));
  }
  absl::StatusOr<SegmentHeader> header = DecodeSegmentHeader(block);
  if (!header.ok()) {
    file->Close().IgnoreError();
    return WithPath(header.status(), path);
  }
  return std::unique_ptr<SegmentReader>(
      new SegmentReader(path, std::move(file), *header, size, chunk_bytes));
}

absl::StatusOr<absl::Span<const uint8_t>> SegmentReader::Window(uint64_t offset, uint64_t want) {
  if (offset >= data_end_) return absl::Span<const uint8_t>();
  const uint64_t need = std::min(want, data_end_ - offset);
  if (offset >= buffer_offset_ && offset + need <= buffer_offset_ + buffer_size_) {
    const size_t start = static_cast<size_t>(offset - buffer_offset_);
    return absl::Span<const uint8_t>(buffer_.data() + start, buffer_size_ - start);
  }
  const size_t to_read = static_cast<size_t>(
      std::min<uint64_t>(std::max<uint64_t>(chunk_bytes_, need), data_end_ - offset));
  if (buffer_.size() < to_read) buffer_.resize(to_read);
  buffer_offset_ = offset;
  buffer_size_ = 0;
  while (buffer_size_ < to_read) {
    ASSIGN_OR_RETURN(const size_t n, file_->Read(offset + buffer_size_, to_read - buffer_size_,
                                                 buffer_.data() + buffer_size_));
    if (n == 0) break;  // the file shrank under us: callers see a short window
    buffer_size_ += n;
  }
  return absl::Span<const uint8_t>(buffer_.data(), buffer_size_);
}

absl::StatusOr<DecodedRecord> SegmentReader::DecodeAt(uint64_t offset) {
  // Lengths are bounded by the declared segment size, not the file size, so that a record cut
  // short by the end of a file that was never preallocated reads as kTruncated.
  const uint64_t segment_end = header_.segment_size;
  const uint64_t max_length =
      offset + kRecordHeaderSize <= segment_end ? segment_end - offset - kRecordHeaderSize : 0;
  ASSIGN_OR_RETURN(absl::Span<const uint8_t> window, Window(offset, kRecordHeaderSize));
  DecodedRecord record = DecodeRecord(header_.segment_salt, window, max_length);
  if (record.outcome == DecodeOutcome::kTruncated && record.size > window.size() &&
      offset + record.size <= data_end_) {
    ASSIGN_OR_RETURN(window, Window(offset, record.size));
    record = DecodeRecord(header_.segment_salt, window, max_length);
  }
  return record;
}

absl::StatusOr<ChainScan> SegmentReader::ScanAll(const RecordCallback& on_record) {
  return ScanChain(kSegmentHeaderSize, header_.first_lsn, on_record);
}

absl::StatusOr<ChainScan> SegmentReader::ScanChain(uint64_t offset, Lsn expected_lsn,
                                                   const RecordCallback& on_record) {
  if (offset < kSegmentHeaderSize) {
    return absl::InvalidArgumentError(
        fmt::format("{}: scan offset {} is inside the {}-byte segment header", path_, offset,
                    kSegmentHeaderSize));
  }
  ChainScan scan;
  scan.start_offset = offset;
  scan.start_lsn = expected_lsn;
  scan.end_offset = offset;
  scan.next_lsn = expected_lsn;
  while (true) {
    if (scan.end_offset >= data_end_) {
      scan.stop = ScanStop::kEndOfSegment;
      break;
    }
    ASSIGN_OR_RETURN(const DecodedRecord record, DecodeAt(scan.end_offset));
    if (record.outcome == DecodeOutcome::kZero) {
      scan.stop = ScanStop::kZero;
      break;
    }
    if (record.outcome == DecodeOutcome::kTruncated) {
      scan.stop = ScanStop::kTruncated;
      break;
    }
    if (record.outcome == DecodeOutcome::kBadHeader) {
      scan.stop = ScanStop::kBadHeader;
      break;
    }
    if (record.outcome == DecodeOutcome::kBadChecksum) {
      scan.stop = ScanStop::kBadChecksum;
      break;
    }
    // The last LSN is refused so that next_lsn never wraps to 0 (no writer gets there).
    if (record.header.lsn != scan.next_lsn || record.header.lsn == UINT64_MAX) {
      scan.stop = ScanStop::kLsnMismatch;
      break;
    }
    const RecordLocation location{scan.end_offset, record.header};
    if (on_record) on_record(location, record.payload);
    scan.max_synced_lsn = std::max(scan.max_synced_lsn, record.header.synced_lsn);
    scan.end_offset += location.size();
    if (record.header.type == RecordType::kSeal) {
      scan.seal_offset = location.offset;
      scan.stop = ScanStop::kSeal;
      break;
    }
    ++scan.data_records;
    ++scan.next_lsn;
  }
  return scan;
}

absl::StatusOr<std::optional<RecordLocation>> SegmentReader::FindNextRecord(uint64_t from,
                                                                            Lsn min_lsn) {
  uint64_t offset = std::max<uint64_t>(from, kSegmentHeaderSize);
  while (offset + kRecordHeaderSize <= data_end_) {
    ASSIGN_OR_RETURN(const absl::Span<const uint8_t> window, Window(offset, chunk_bytes_));
    if (window.size() < kRecordHeaderSize) break;  // the file shrank
    const uint8_t* base = window.data();
    const size_t candidates = window.size() - kRecordHeaderSize + 1;
    size_t i = 0;
    for (; i < candidates; ++i) {
      const uint8_t* p = base + i;
      // Cheap fields first: type in {kData, kSeal} with seven zero bytes after it is one 8-byte
      // compare, and rejects zero-filled space and almost all other bytes.
      const uint64_t type_word = Load64(p + kTypeOffset);
      if (type_word != static_cast<uint64_t>(RecordType::kData) &&
          type_word != static_cast<uint64_t>(RecordType::kSeal)) {
        continue;
      }
      if (Load64(p + kLsnOffset) < min_lsn) continue;
      const uint64_t length = Load32(p + kLengthOffset);
      const uint64_t at = offset + i;
      if (at + kRecordHeaderSize + length > data_end_) continue;
      if (type_word == static_cast<uint64_t>(RecordType::kSeal) && length != 0) continue;
      // A candidate: the CRC decides. DecodeAt may move the window, so stop using `base` after.
      ASSIGN_OR_RETURN(const DecodedRecord record, DecodeAt(at));
      if (record.outcome == DecodeOutcome::kOk) {
        return RecordLocation{at, record.header};
      }
      // Continue after this offset with a fresh window.
      ++i;
      break;
    }
    offset += i;
  }
  return std::nullopt;
}

absl::StatusOr<bool> SegmentReader::IsZeroFrom(uint64_t from, uint64_t* first_nonzero) {
  uint64_t offset = std::max<uint64_t>(from, kSegmentHeaderSize);
  while (offset < data_end_) {
    ASSIGN_OR_RETURN(const absl::Span<const uint8_t> window, Window(offset, chunk_bytes_));
    if (window.empty()) break;
    const uint8_t* p = window.data();
    size_t i = 0;
    for (; i + 8 <= window.size(); i += 8) {
      uint64_t word;
      std::memcpy(&word, p + i, 8);
      if (word != 0) break;
    }
    for (; i < window.size(); ++i) {
      if (p[i] != 0) {
        if (first_nonzero != nullptr) *first_nonzero = offset + i;
        return false;
      }
    }
    offset += window.size();
  }
  if (first_nonzero != nullptr) *first_nonzero = data_end_;
  return true;
}

absl::StatusOr<TailProbe> SegmentReader::ProbeTail(uint64_t from, Lsn min_lsn,
                                                   const RecordCallback& on_record) {
  TailProbe probe;
  probe.from = from;
  ASSIGN_OR_RETURN(probe.all_zero, IsZeroFrom(from, &probe.first_nonzero));
  if (probe.all_zero) return probe;
  const RecordCallback count = [&](const RecordLocation& record,
                                   absl::Span<const uint8_t> payload) {
    ++probe.later_records;
    if (!probe.first_later.has_value()) probe.first_later = record;
    if (record.header.type == RecordType::kData) {
      probe.max_later_lsn = std::max(probe.max_later_lsn, record.header.lsn);
    }
    probe.max_later_synced_lsn = std::max(probe.max_later_synced_lsn, record.header.synced_lsn);
    if (on_record) on_record(record, payload);
  };
  // A record may begin with zero bytes (its CRC or length), so search from `from`, not from the
  // first non-zero byte; zero-filled space is rejected by the first check anyway.
  uint64_t offset = from;
  while (true) {
    ASSIGN_OR_RETURN(const std::optional<RecordLocation> found, FindNextRecord(offset, min_lsn));
    if (!found.has_value()) break;
    ASSIGN_OR_RETURN(const ChainScan chain, ScanChain(found->offset, found->header.lsn, count));
    // The chain holds at least the record just found, so this always moves forward.
    offset = std::max(chain.end_offset, found->offset + 1);
  }
  return probe;
}

}  // namespace powercut::wal
