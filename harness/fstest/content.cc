#include "harness/fstest/content.h"

#include <algorithm>
#include <cstring>

#include "base/hash.h"
#include "fmt/format.h"

namespace powercut::fstest {

std::string ContentFor(std::string_view path, uint64_t counter, uint64_t offset, uint64_t length) {
  constexpr uint64_t kChunk = 32;
  const Hash128 h = HashBytes({reinterpret_cast<const uint8_t*>(path.data()), path.size()});
  const std::string path_tag = h.Hex().substr(0, 8);
  std::string out;
  out.reserve(length);
  uint64_t at = offset;
  const uint64_t end = offset + length;
  while (at < end) {
    const uint64_t chunk_start = at / kChunk * kChunk;
    std::string chunk = fmt::format("w{:04} {:010x} {}", counter % 10000,
                                    chunk_start % (uint64_t{1} << 40), path_tag);
    chunk.resize(kChunk - 1, ' ');
    chunk.push_back('\n');
    const uint64_t from = at - chunk_start;
    const uint64_t take = std::min(end, chunk_start + kChunk) - at;
    out.append(chunk, from, take);
    at += take;
  }
  return out;
}

}  // namespace powercut::fstest
