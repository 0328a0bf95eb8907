// The block format of the raw-device log workload (harness/raw_log.h), header-only and free of
// Abseil so that a checker built from it starts fast: commit i is one 4 KiB block at byte
// i * 4096 holding {u64 magic, u64 id, u64 XXH3-64 of the payload} then the payload.
#pragma once

#include <cstdint>
#include <vector>

#include "xxhash.h"

namespace powercut::harness {

inline constexpr uint32_t kRawLogBlock = 4096;
inline constexpr uint64_t kRawLogMagic = 0x474f4c5752435050ULL;  // "PPCRWLOG"
inline constexpr size_t kRawLogHeader = 24;

inline uint64_t RawLogLE64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

inline std::vector<uint8_t> RawLogRecord(uint64_t id) {
  std::vector<uint8_t> block(kRawLogBlock, 0);
  for (size_t i = kRawLogHeader; i < block.size(); ++i) {
    block[i] = static_cast<uint8_t>((id * 131 + i * 7) & 0xff);
  }
  uint64_t sum = XXH3_64bits(block.data() + kRawLogHeader, block.size() - kRawLogHeader);
  for (int i = 0; i < 8; ++i) {
    block[i] = static_cast<uint8_t>(kRawLogMagic >> (8 * i));
    block[8 + i] = static_cast<uint8_t>(id >> (8 * i));
    block[16 + i] = static_cast<uint8_t>(sum >> (8 * i));
  }
  return block;
}

// Whether `block` (kRawLogBlock bytes) is the intact record of commit `id`.
inline bool IsRawLogRecord(const uint8_t* block, uint64_t id) {
  return RawLogLE64(block) == kRawLogMagic && RawLogLE64(block + 8) == id &&
         RawLogLE64(block + 16) == XXH3_64bits(block + kRawLogHeader, kRawLogBlock - kRawLogHeader);
}

}  // namespace powercut::harness
