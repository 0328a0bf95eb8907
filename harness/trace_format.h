// The on-disk layout of a dm-log-writes v1 log (the kernel's drivers/md/dm-log-writes.c; read by
// xfstests' src/log-writes). This header is the single place the byte layout is spelled out; the
// trace writer and reader both encode/decode through it (docs/trace.md).
//
// Layout, all integers little-endian:
//   byte 0:            superblock {u64 magic, u64 version, u64 nr_entries, u32 sectorsize}, the
//   rest
//                      of the sectorsize block zero
//   byte sectorsize:   entry 0: one sectorsize block {u64 sector, u64 nr_sectors, u64 flags,
//                      u64 data_len} then, for a MARK, data_len bytes of text, then zeros;
//                      followed by nr_sectors * sectorsize bytes of data (none for DISCARD);
//   then entry 1, ...
// `sector` and `nr_sectors` count device sectors of `sectorsize` bytes (not 512-byte units).
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

namespace powercut::harness {

inline constexpr uint64_t kLogMagic = 0x6a736677736872ULL;
inline constexpr uint64_t kLogVersion = 1;

inline constexpr uint64_t kFlagFlush = 1;
inline constexpr uint64_t kFlagFua = 2;
inline constexpr uint64_t kFlagDiscard = 4;
inline constexpr uint64_t kFlagMark = 8;
inline constexpr uint64_t kFlagMetadata = 16;
inline constexpr uint64_t kKnownFlags =
    kFlagFlush | kFlagFua | kFlagDiscard | kFlagMark | kFlagMetadata;

inline constexpr size_t kSuperBytes = 28;        // sizeof(struct log_write_super), packed fields
inline constexpr size_t kEntryHeaderBytes = 32;  // sizeof(struct log_write_entry)

// A sectorsize the kernel can produce: the device's logical block size, a power of two.
inline bool ValidSectorSize(uint64_t sectorsize) {
  return sectorsize >= 512 && sectorsize <= 65536 && (sectorsize & (sectorsize - 1)) == 0;
}

// The longest mark text an entry block of `sectorsize` holds: the kernel keeps at most
// sectorsize - 32 - 1 bytes (kstrndup(data, maxsize - 1)), so a zero always follows the text.
inline size_t MaxMarkBytes(uint32_t sectorsize) { return sectorsize - kEntryHeaderBytes - 1; }

struct EntryHeader {
  uint64_t sector = 0;
  uint64_t nr_sectors = 0;
  uint64_t flags = 0;
  uint64_t data_len = 0;
};

// Bytes of data that follow the entry block in the log.
inline uint64_t LoggedDataBytes(const EntryHeader& h, uint32_t sectorsize) {
  return (h.flags & kFlagDiscard) ? 0 : h.nr_sectors * sectorsize;
}

inline void PutLE64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
inline void PutLE32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
inline uint64_t GetLE64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
inline uint32_t GetLE32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// Fills `block` (sectorsize bytes) with the superblock as log_super() writes it.
inline void EncodeSuper(uint64_t nr_entries, uint32_t sectorsize, uint8_t* block) {
  std::memset(block, 0, sectorsize);
  PutLE64(block, kLogMagic);
  PutLE64(block + 8, kLogVersion);
  PutLE64(block + 16, nr_entries);
  PutLE32(block + 24, sectorsize);
}

// Fills `block` (sectorsize bytes) with an entry block as write_metadata() writes it; `mark` is
// copied after the header only for MARK entries. The caller checks mark.size() <= MaxMarkBytes.
inline void EncodeEntry(const EntryHeader& h, std::string_view mark, uint32_t sectorsize,
                        uint8_t* block) {
  std::memset(block, 0, sectorsize);
  PutLE64(block, h.sector);
  PutLE64(block + 8, h.nr_sectors);
  PutLE64(block + 16, h.flags);
  PutLE64(block + 24, h.data_len);
  if ((h.flags & kFlagMark) && !mark.empty()) {
    std::memcpy(block + kEntryHeaderBytes, mark.data(), mark.size());
  }
}

inline EntryHeader DecodeEntryHeader(const uint8_t* block) {
  return EntryHeader{GetLE64(block), GetLE64(block + 8), GetLE64(block + 16), GetLE64(block + 24)};
}

}  // namespace powercut::harness
