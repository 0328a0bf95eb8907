// CRC32C (Castagnoli), the checksum of every WAL record and segment header.
//
// Backed by ISA-L's crc32_iscsi (libisal, a maintained, SIMD-accelerated implementation) so that
// no checksum code is hand-written here; see docs/format.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "absl/types/span.h"

namespace powercut::crc32c {

// Extends `crc` (the value returned for the bytes so far; 0 to start) with `data`.
uint32_t Extend(uint32_t crc, const void* data, size_t size);

inline uint32_t Value(const void* data, size_t size) { return Extend(0, data, size); }
inline uint32_t Value(absl::Span<const uint8_t> data) { return Value(data.data(), data.size()); }
inline uint32_t Value(std::string_view data) { return Value(data.data(), data.size()); }

}  // namespace powercut::crc32c
