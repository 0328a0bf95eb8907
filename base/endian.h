// Little-endian loads and stores for on-disk formats (the WAL's records, the dm-log-writes trace,
// the xlog workload's sectors). The one set every room uses: unaligned-safe (memcpy), and a no-op
// byte swap on little-endian hosts, so the compiler emits one plain load or store.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

namespace powercut {

namespace endian_internal {
template <typename T>
constexpr T ToLittle(T v) {
  if constexpr (std::endian::native == std::endian::little) {
    return v;
  } else {
    T out = 0;
    for (size_t i = 0; i < sizeof(T); ++i) out = (out << 8) | ((v >> (8 * i)) & 0xff);
    return out;
  }
}
}  // namespace endian_internal

inline void StoreLE32(uint8_t* p, uint32_t v) {
  v = endian_internal::ToLittle(v);
  std::memcpy(p, &v, sizeof v);
}
inline void StoreLE64(uint8_t* p, uint64_t v) {
  v = endian_internal::ToLittle(v);
  std::memcpy(p, &v, sizeof v);
}
inline uint32_t LoadLE32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return endian_internal::ToLittle(v);
}
inline uint64_t LoadLE64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return endian_internal::ToLittle(v);
}

}  // namespace powercut
