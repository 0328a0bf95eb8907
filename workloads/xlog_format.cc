#include "workloads/xlog_format.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "base/endian.h"
#include "wal/crc32c.h"
#include "workloads/payload.h"

namespace powercut::workloads {
namespace {

constexpr uint64_t kHeaderMagic = 0x3148474f4c584350ull;  // "PCXLOGH1" little-endian
constexpr uint32_t kSectorMagic = 0x53584350u;            // "PCXS" little-endian

// Header fields.
constexpr size_t kHeaderMagicOffset = 0;
constexpr size_t kHeaderCrcOffset = 8;
constexpr size_t kHeaderVariantOffset = 12;
constexpr size_t kHeaderNonceOffset = 16;
constexpr size_t kHeaderCountOffset = 24;

// Sector fields.
constexpr size_t kSectorMagicOffset = 0;
constexpr size_t kSectorCrcOffset = 4;
constexpr size_t kSectorNonceOffset = 8;
constexpr size_t kSectorSeqOffset = 16;
constexpr size_t kSectorIndexOffset = 24;
constexpr size_t kSectorFillerOffset = 32;

uint32_t CrcWithFieldZeroed(const uint8_t* data, size_t size, size_t crc_offset) {
  uint32_t crc = crc32c::Extend(0, data, crc_offset);
  const uint8_t zeros[4] = {0, 0, 0, 0};
  crc = crc32c::Extend(crc, zeros, sizeof(zeros));
  return crc32c::Extend(crc, data + crc_offset + 4, size - crc_offset - 4);
}

struct Sector {
  bool valid = false;
  uint64_t seq = 0;
  uint32_t index = 0;
};

Sector DecodeSector(const uint8_t* sector, uint64_t nonce) {
  Sector s;
  if (LoadLE32(sector + kSectorMagicOffset) != kSectorMagic) return s;
  if (LoadLE64(sector + kSectorNonceOffset) != nonce) return s;
  if (LoadLE32(sector + kSectorCrcOffset) !=
      CrcWithFieldZeroed(sector, kXlogSectorSize, kSectorCrcOffset)) {
    return s;
  }
  s.valid = true;
  s.seq = LoadLE64(sector + kSectorSeqOffset);
  s.index = LoadLE32(sector + kSectorIndexOffset);
  return s;
}

}  // namespace

uint64_t XlogNonce(uint64_t seed) {
  uint64_t state = seed ^ 0x786c6f67ull;  // "xlog"
  return SplitMix64(state);
}

void EncodeXlogHeader(const XlogHeader& header, uint8_t* block) {
  std::memset(block, 0, kXlogBlockSize);
  StoreLE64(block + kHeaderMagicOffset, kHeaderMagic);
  StoreLE32(block + kHeaderVariantOffset, static_cast<uint32_t>(header.variant));
  StoreLE64(block + kHeaderNonceOffset, header.nonce);
  StoreLE64(block + kHeaderCountOffset, header.count);
  StoreLE32(block + kHeaderCrcOffset, CrcWithFieldZeroed(block, kXlogBlockSize, kHeaderCrcOffset));
}

std::optional<XlogHeader> DecodeXlogHeader(const uint8_t* block) {
  if (LoadLE64(block + kHeaderMagicOffset) != kHeaderMagic) return std::nullopt;
  if (LoadLE32(block + kHeaderCrcOffset) !=
      CrcWithFieldZeroed(block, kXlogBlockSize, kHeaderCrcOffset)) {
    return std::nullopt;
  }
  const uint32_t variant = LoadLE32(block + kHeaderVariantOffset);
  if (variant != static_cast<uint32_t>(XlogVariant::kOverwrite) &&
      variant != static_cast<uint32_t>(XlogVariant::kAppend)) {
    return std::nullopt;
  }
  XlogHeader header;
  header.variant = static_cast<XlogVariant>(variant);
  header.nonce = LoadLE64(block + kHeaderNonceOffset);
  header.count = LoadLE64(block + kHeaderCountOffset);
  return header;
}

void EncodeXlogBlock(uint64_t nonce, uint64_t seq, uint8_t* block) {
  for (size_t i = 0; i < kXlogSectorsPerBlock; ++i) {
    uint8_t* sector = block + i * kXlogSectorSize;
    StoreLE32(sector + kSectorMagicOffset, kSectorMagic);
    StoreLE32(sector + kSectorCrcOffset, 0);
    StoreLE64(sector + kSectorNonceOffset, nonce);
    StoreLE64(sector + kSectorSeqOffset, seq);
    StoreLE32(sector + kSectorIndexOffset, static_cast<uint32_t>(i));
    StoreLE32(sector + kSectorIndexOffset + 4, 0);
    // Filler differs per (seq, sector) so that no two sectors of the run are byte-identical.
    uint64_t state = nonce ^ (seq * 0x9e3779b97f4a7c15ull) ^ i;
    for (size_t off = kSectorFillerOffset; off < kXlogSectorSize; off += 8) {
      StoreLE64(sector + off, SplitMix64(state));
    }
    StoreLE32(sector + kSectorCrcOffset,
              CrcWithFieldZeroed(sector, kXlogSectorSize, kSectorCrcOffset));
  }
}

XlogBlockScan ScanXlogBlock(const uint8_t* block, uint64_t nonce) {
  XlogBlockScan scan;
  bool all_zero = true;
  bool in_order = true;
  uint64_t newest = 0;
  uint64_t oldest = UINT64_MAX;
  for (size_t i = 0; i < kXlogSectorsPerBlock; ++i) {
    const uint8_t* sector = block + i * kXlogSectorSize;
    if (all_zero && std::any_of(sector, sector + kXlogSectorSize, [](uint8_t b) { return b; })) {
      all_zero = false;
    }
    Sector s = DecodeSector(sector, nonce);
    if (!s.valid) continue;
    ++scan.valid_sectors;
    if (s.index != i) in_order = false;
    newest = std::max(newest, s.seq);
    oldest = std::min(oldest, s.seq);
  }
  if (scan.valid_sectors == 0) {
    scan.state = all_zero ? XlogBlockState::kZero : XlogBlockState::kGarbage;
    return scan;
  }
  scan.seq = newest;
  scan.oldest_seq = oldest;
  scan.state = scan.valid_sectors == kXlogSectorsPerBlock && in_order && newest == oldest
                   ? XlogBlockState::kIntact
                   : XlogBlockState::kTorn;
  return scan;
}

std::string XlogBlockScan::Describe() const {
  switch (state) {
    case XlogBlockState::kZero:
      return "zero (never written)";
    case XlogBlockState::kIntact:
      return fmt::format("intact seq {}", seq);
    case XlogBlockState::kTorn:
      return fmt::format("torn: {}/{} valid sectors, seqs {}..{}", valid_sectors,
                         kXlogSectorsPerBlock, oldest_seq, seq);
    case XlogBlockState::kGarbage:
      return "garbage (no valid sector, not zero)";
  }
  return "?";
}

}  // namespace powercut::workloads
