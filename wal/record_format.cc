#include "wal/record_format.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/endian.h"
#include "wal/crc32c.h"

namespace powercut::wal {
namespace {

constexpr size_t kHeaderCrcOffset = 52;

uint32_t RecordCrc(uint64_t salt, const uint8_t* header_from_4, size_t header_rest,
                   const uint8_t* payload, size_t payload_size) {
  uint8_t salt_bytes[8];
  StoreLE64(salt_bytes, salt);
  uint32_t crc = crc32c::Value(salt_bytes, sizeof(salt_bytes));
  crc = crc32c::Extend(crc, header_from_4, header_rest);
  return crc32c::Extend(crc, payload, payload_size);
}

}  // namespace

std::string EncodeSegmentHeader(const SegmentHeader& header) {
  std::string block(kSegmentHeaderSize, '\0');
  auto* p = reinterpret_cast<uint8_t*>(block.data());
  std::memcpy(p, kSegmentMagic, sizeof(kSegmentMagic));
  StoreLE32(p + 8, kFormatVersion);
  StoreLE32(p + 12, kSegmentHeaderSize);
  StoreLE64(p + 16, header.log_id);
  StoreLE64(p + 24, header.segment_salt);
  StoreLE64(p + 32, header.first_lsn);
  StoreLE64(p + 40, header.segment_size);
  StoreLE32(p + 48, header.block_size);
  StoreLE32(p + kHeaderCrcOffset, crc32c::Value(p, kHeaderCrcOffset));
  return block;
}

absl::StatusOr<SegmentHeader> DecodeSegmentHeader(absl::Span<const uint8_t> block) {
  if (block.size() < kHeaderCrcOffset + 4) {
    return absl::DataLossError(absl::StrCat("segment header is ", block.size(),
                                            " bytes, shorter than the 56-byte header"));
  }
  const uint8_t* p = block.data();
  if (std::memcmp(p, kSegmentMagic, sizeof(kSegmentMagic)) != 0) {
    return absl::DataLossError("not a powercut WAL segment (bad magic)");
  }
  const uint32_t stored_crc = LoadLE32(p + kHeaderCrcOffset);
  if (crc32c::Value(p, kHeaderCrcOffset) != stored_crc) {
    return absl::DataLossError("segment header checksum mismatch");
  }
  const uint32_t version = LoadLE32(p + 8);
  if (version != kFormatVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        "segment has WAL format version ", version, "; this build reads version ", kFormatVersion));
  }
  if (LoadLE32(p + 12) != kSegmentHeaderSize) {
    return absl::DataLossError(absl::StrCat("segment header size field is ", LoadLE32(p + 12)));
  }
  SegmentHeader h;
  h.log_id = LoadLE64(p + 16);
  h.segment_salt = LoadLE64(p + 24);
  h.first_lsn = LoadLE64(p + 32);
  h.segment_size = LoadLE64(p + 40);
  h.block_size = LoadLE32(p + 48);
  if (h.segment_size <= kSegmentHeaderSize || h.first_lsn == 0 ||
      (h.block_size != 512 && h.block_size != 4096)) {
    return absl::DataLossError(absl::StrCat("segment header has impossible fields (size ",
                                            h.segment_size, ", first LSN ", h.first_lsn,
                                            ", block size ", h.block_size, ")"));
  }
  return h;
}

std::string SegmentFileName(Lsn first_lsn) { return absl::StrFormat("wal-%020u.log", first_lsn); }

std::optional<Lsn> ParseSegmentFileName(std::string_view name) {
  constexpr std::string_view kPrefix = "wal-", kSuffix = ".log";
  if (name.size() != kPrefix.size() + 20 + kSuffix.size() || !name.starts_with(kPrefix) ||
      !name.ends_with(kSuffix)) {
    return std::nullopt;
  }
  Lsn lsn = 0;
  for (char c : name.substr(kPrefix.size(), 20)) {
    if (c < '0' || c > '9') return std::nullopt;
    const Lsn digit = static_cast<Lsn>(c - '0');
    if (lsn > (UINT64_MAX - digit) / 10) return std::nullopt;
    lsn = lsn * 10 + digit;
  }
  if (lsn == 0) return std::nullopt;
  return lsn;
}

void EncodeRecord(uint64_t segment_salt, const RecordHeader& header,
                  absl::Span<const uint8_t> payload, std::string* out) {
  const size_t start = out->size();
  out->resize(start + kRecordHeaderSize);
  auto* p = reinterpret_cast<uint8_t*>(out->data() + start);
  StoreLE32(p + 4, static_cast<uint32_t>(payload.size()));
  StoreLE64(p + 8, header.lsn);
  StoreLE64(p + 16, header.synced_lsn);
  p[24] = static_cast<uint8_t>(header.type);
  std::memset(p + 25, 0, 7);
  StoreLE32(p,
            RecordCrc(segment_salt, p + 4, kRecordHeaderSize - 4, payload.data(), payload.size()));
  out->append(reinterpret_cast<const char*>(payload.data()), payload.size());
}

DecodedRecord DecodeRecord(uint64_t segment_salt, absl::Span<const uint8_t> data,
                           uint64_t max_length) {
  DecodedRecord r;
  if (data.size() < kRecordHeaderSize) {
    bool all_zero = true;
    for (uint8_t b : data) all_zero &= (b == 0);
    r.outcome = all_zero ? DecodeOutcome::kZero : DecodeOutcome::kTruncated;
    return r;
  }
  const uint8_t* p = data.data();
  bool all_zero = true;
  for (size_t i = 0; i < kRecordHeaderSize; ++i) all_zero &= (p[i] == 0);
  if (all_zero) {
    r.outcome = DecodeOutcome::kZero;
    return r;
  }
  r.header.length = LoadLE32(p + 4);
  r.header.lsn = LoadLE64(p + 8);
  r.header.synced_lsn = LoadLE64(p + 16);
  const uint8_t type = p[24];
  bool reserved_zero = true;
  for (size_t i = 25; i < kRecordHeaderSize; ++i) reserved_zero &= (p[i] == 0);
  if (!reserved_zero || (type != static_cast<uint8_t>(RecordType::kData) &&
                         type != static_cast<uint8_t>(RecordType::kSeal))) {
    r.outcome = DecodeOutcome::kBadHeader;
    return r;
  }
  r.header.type = static_cast<RecordType>(type);
  if (r.header.length > max_length ||
      (r.header.type == RecordType::kSeal && r.header.length != 0)) {
    r.outcome = DecodeOutcome::kBadHeader;
    return r;
  }
  r.size = kRecordHeaderSize + size_t{r.header.length};
  if (data.size() < r.size) {
    r.outcome = DecodeOutcome::kTruncated;
    return r;
  }
  const uint32_t want = LoadLE32(p);
  const uint32_t got =
      RecordCrc(segment_salt, p + 4, kRecordHeaderSize - 4, p + kRecordHeaderSize, r.header.length);
  if (want != got) {
    r.outcome = DecodeOutcome::kBadChecksum;
    return r;
  }
  r.outcome = DecodeOutcome::kOk;
  r.payload = data.subspan(kRecordHeaderSize, r.header.length);
  return r;
}

std::string_view DecodeOutcomeName(DecodeOutcome outcome) {
  switch (outcome) {
    case DecodeOutcome::kOk:
      return "ok";
    case DecodeOutcome::kZero:
      return "zero";
    case DecodeOutcome::kTruncated:
      return "truncated";
    case DecodeOutcome::kBadHeader:
      return "bad_header";
    case DecodeOutcome::kBadChecksum:
      return "bad_checksum";
  }
  return "unknown";
}

}  // namespace powercut::wal
