#include "wal/crc32c.h"

#include <isa-l/crc.h>

#include <algorithm>

namespace powercut::crc32c {

uint32_t Extend(uint32_t crc, const void* data, size_t size) {
  // ISA-L's crc32_iscsi takes and returns the register without the final inversion, so the
  // standard CRC32C of a buffer is ~crc32_iscsi(buf, len, ~0). Chaining works on the inverted
  // value.
  const auto* bytes = static_cast<const unsigned char*>(data);
  uint32_t reg = ~crc;
  size_t done = 0;
  // crc32_iscsi takes an int length.
  constexpr size_t kChunk = size_t{1} << 30;
  while (done < size) {
    const size_t n = std::min(kChunk, size - done);
    reg = crc32_iscsi(const_cast<unsigned char*>(bytes + done), static_cast<int>(n), reg);
    done += n;
  }
  return ~reg;
}

}  // namespace powercut::crc32c
