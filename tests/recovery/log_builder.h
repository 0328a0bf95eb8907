// Test helpers that build WAL segments byte by byte with the format's own encoders
// (wal/record_format.h), so that recovery tests control every byte of the input. The temp dir these
// tests use is powercut::testing::TempDir (base/temp_dir.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "base/temp_dir.h"
#include "gtest/gtest.h"
#include "wal/record_format.h"

namespace powercut::testing {

// The bytes of one segment: a header, then whatever the test appends.
class SegmentBuilder {
 public:
  explicit SegmentBuilder(wal::Lsn first_lsn, uint64_t salt = 0x5a17'0000'0000'0001ull,
                          uint64_t segment_size = 64 << 10, uint64_t log_id = 0x10c1d)
      : salt_(salt), segment_size_(segment_size) {
    wal::SegmentHeader header;
    header.log_id = log_id;
    header.segment_salt = salt;
    header.first_lsn = first_lsn;
    header.segment_size = segment_size;
    header.block_size = 4096;
    bytes_ = wal::EncodeSegmentHeader(header);
  }

  // Appends one record; returns its offset.
  uint64_t Add(wal::Lsn lsn, const std::string& payload, wal::Lsn synced_lsn = 0,
               wal::RecordType type = wal::RecordType::kData) {
    return AddWithSalt(salt_, lsn, payload, synced_lsn, type);
  }
  uint64_t AddWithSalt(uint64_t salt, wal::Lsn lsn, const std::string& payload,
                       wal::Lsn synced_lsn = 0, wal::RecordType type = wal::RecordType::kData) {
    const uint64_t offset = bytes_.size();
    wal::RecordHeader header;
    header.length = static_cast<uint32_t>(payload.size());
    header.lsn = lsn;
    header.synced_lsn = synced_lsn;
    header.type = type;
    wal::EncodeRecord(
        salt, header,
        absl::Span<const uint8_t>(reinterpret_cast<const uint8_t*>(payload.data()), payload.size()),
        &bytes_);
    return offset;
  }
  uint64_t Seal(wal::Lsn next_lsn, wal::Lsn synced_lsn = 0) {
    return Add(next_lsn, "", synced_lsn, wal::RecordType::kSeal);
  }
  void AddRaw(const std::string& raw) { bytes_ += raw; }

  std::string& bytes() { return bytes_; }
  uint64_t salt() const { return salt_; }
  uint64_t segment_size() const { return segment_size_; }

  // The file content: the bytes, zero-padded to the segment size when `preallocated`.
  std::string Contents(bool preallocated = true) const {
    std::string out = bytes_;
    if (preallocated && out.size() < segment_size_) out.resize(segment_size_, '\0');
    return out;
  }

 private:
  uint64_t salt_;
  uint64_t segment_size_;
  std::string bytes_;
};

inline void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

inline std::string ReadFile(const std::string& path) {
  std::error_code error;
  const auto size = std::filesystem::file_size(path, error);
  std::string bytes(error ? 0 : size, '\0');
  std::ifstream in(path, std::ios::binary);
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return bytes;
}

// Payload for record `lsn`: distinct per LSN and of varying size.
inline std::string PayloadFor(wal::Lsn lsn, size_t min_size = 1) {
  std::string p = "record-" + std::to_string(lsn) + "-";
  while (p.size() < min_size + (lsn % 7) * 3) p += static_cast<char>('a' + (p.size() % 26));
  return p;
}

}  // namespace powercut::testing
