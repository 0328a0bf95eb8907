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

#include "base/endian.h"

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

// Fills `block` (sectorsize bytes) with the superblock as log_super() writes it.
inline void EncodeSuper(uint64_t nr_entries, uint32_t sectorsize, uint8_t* block) {
  std::memset(block, 0, sectorsize);
  StoreLE64(block, kLogMagic);
  StoreLE64(block + 8, kLogVersion);
  StoreLE64(block + 16, nr_entries);
  StoreLE32(block + 24, sectorsize);
}

// Fills `block` (sectorsize bytes) with an entry block as write_metadata() writes it; `mark` is
// copied after the header only for MARK entries. The caller checks mark.size() <= MaxMarkBytes.
inline void EncodeEntry(const EntryHeader& h, std::string_view mark, uint32_t sectorsize,
                        uint8_t* block) {
  std::memset(block, 0, sectorsize);
  StoreLE64(block, h.sector);
  StoreLE64(block + 8, h.nr_sectors);
  StoreLE64(block + 16, h.flags);
  StoreLE64(block + 24, h.data_len);
  if ((h.flags & kFlagMark) && !mark.empty()) {
    std::memcpy(block + kEntryHeaderBytes, mark.data(), mark.size());
  }
}

// The superblock's fields as read, unvalidated: compare magic and version with kLogMagic and
// kLogVersion and check sectorsize with ValidSectorSize() before trusting the rest.
struct SuperFields {
  uint64_t magic = 0;
  uint64_t version = 0;
  uint64_t nr_entries = 0;
  uint32_t sectorsize = 0;
};
inline SuperFields DecodeSuper(const uint8_t* block) {
  return SuperFields{LoadLE64(block), LoadLE64(block + 8), LoadLE64(block + 16),
                     LoadLE32(block + 24)};
}

inline EntryHeader DecodeEntryHeader(const uint8_t* block) {
  return EntryHeader{LoadLE64(block), LoadLE64(block + 8), LoadLE64(block + 16),
                     LoadLE64(block + 24)};
}

}  // namespace powercut::harness
