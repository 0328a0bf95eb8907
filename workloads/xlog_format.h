// On-disk layout of the xlog workload (the 2001 "xlog" test): one header block, then 4 KiB data
// blocks that carry their sequence number in every 512-byte sector.
//
//   block 0        header: magic "PCXLOGH1", crc32c, variant, nonce, planned count
//   block 1        overwrite variant: rewritten with seq 1, 2, ..., N
//   block 1..N     append variant: block i holds seq i
//
// Every sector of a data block is self-checking {magic, crc32c, nonce, seq, sector index,
// filler}, so a checker tells an intact block from one torn at any 512-byte boundary (sectors of
// two sequence numbers, or of one and zeros) and from foreign bytes. Integers are little-endian.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace powercut::workloads {

inline constexpr size_t kXlogBlockSize = 4096;
inline constexpr size_t kXlogSectorSize = 512;
inline constexpr size_t kXlogSectorsPerBlock = kXlogBlockSize / kXlogSectorSize;

enum class XlogVariant : uint32_t { kOverwrite = 1, kAppend = 2 };

struct XlogHeader {
  XlogVariant variant = XlogVariant::kOverwrite;
  uint64_t nonce = 0;  // ties data blocks to this run (derived from --seed)
  uint64_t count = 0;  // data blocks the run planned to write
};

// Fills the kXlogBlockSize bytes at `block`.
void EncodeXlogHeader(const XlogHeader& header, uint8_t* block);
// The header when the block holds an intact one; nullopt otherwise.
std::optional<XlogHeader> DecodeXlogHeader(const uint8_t* block);

// Fills the kXlogBlockSize bytes at `block` with the data block for `seq`.
void EncodeXlogBlock(uint64_t nonce, uint64_t seq, uint8_t* block);

enum class XlogBlockState {
  kZero,     // all zero bytes: never written
  kIntact,   // all sectors valid, one seq, in order
  kTorn,     // some sectors valid, the rest zero, stale or of another seq
  kGarbage,  // no valid sector and not all zero
};

struct XlogBlockScan {
  XlogBlockState state = XlogBlockState::kZero;
  uint64_t seq = 0;         // kIntact: the block's seq; kTorn: the newest seq among valid sectors
  uint64_t oldest_seq = 0;  // kTorn: the oldest seq among valid sectors
  size_t valid_sectors = 0;
  std::string Describe() const;  // for notes: "torn: 3/8 sectors of seq 17, oldest 16"
};

XlogBlockScan ScanXlogBlock(const uint8_t* block, uint64_t nonce);

// The nonce a run with `seed` writes (deterministic, so that reruns produce the same bytes).
uint64_t XlogNonce(uint64_t seed);

}  // namespace powercut::workloads
