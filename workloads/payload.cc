#include "workloads/payload.h"

#include <fmt/format.h>

#include "wal/crc32c.h"
#include "workloads/ack_channel.h"

namespace powercut::workloads {
namespace {

constexpr size_t kCrcHexDigits = 8;

void AppendFiller(std::string_view id, size_t bytes, std::string& out) {
  uint64_t state = crc32c::Value(id) | (static_cast<uint64_t>(id.size()) << 32);
  uint64_t word = 0;
  for (size_t i = 0; i < bytes; ++i) {
    if (i % 8 == 0) word = SplitMix64(state);
    out.push_back(static_cast<char>('a' + (word & 0xff) % 26));
    word >>= 8;
  }
}

}  // namespace

uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

size_t FillerSize(uint64_t seed, uint64_t id, size_t mean) {
  if (mean == 0) return 0;
  uint64_t state = seed * 0x2545f4914f6cdd1dull + id;
  return mean / 2 + SplitMix64(state) % (mean + 1);
}

std::string MakePayload(std::string_view id, size_t filler_bytes) {
  std::string out;
  out.reserve(id.size() + filler_bytes + 2 + kCrcHexDigits);
  out.append(id);
  out.push_back('|');
  AppendFiller(id, filler_bytes, out);
  out.push_back('|');
  out.append(fmt::format("{:08x}", crc32c::Value(std::string_view(out).substr(0, out.size() - 1))));
  return out;
}

std::optional<std::string> PayloadId(std::string_view payload) {
  const size_t first = payload.find('|');
  if (first == std::string_view::npos || payload.size() < first + 2 + kCrcHexDigits) {
    return std::nullopt;
  }
  const std::string_view id = payload.substr(0, first);
  if (!IsValidAckId(id)) return std::nullopt;
  const size_t filler_bytes = payload.size() - first - 2 - kCrcHexDigits;
  // Regenerating the whole payload checks the filler, both separators and the CRC at once.
  if (MakePayload(id, filler_bytes) != payload) return std::nullopt;
  return std::string(id);
}

bool VerifyPayload(std::string_view id, std::string_view payload) {
  std::optional<std::string> found = PayloadId(payload);
  return found.has_value() && *found == id;
}

}  // namespace powercut::workloads
