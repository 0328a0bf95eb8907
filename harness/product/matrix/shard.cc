#include "harness/product/matrix/shard.h"

#include "fmt/format.h"

namespace powercut::product {

uint64_t StableHash(const std::string& text) {
  uint64_t h = 14695981039346656037ull;  // FNV-1a 64 offset basis
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

bool Shard::Contains(const std::string& cell_name) const {
  return StableHash(cell_name) % n + 1 == k;
}

std::string Shard::ToString() const { return fmt::format("{}/{}", k, n); }

absl::StatusOr<Shard> ParseShard(const std::string& text) {
  auto bad = [&] {
    return absl::InvalidArgumentError(fmt::format(
        "--shard {}: expected K/N with 1 <= K <= N (e.g. 2/4 = the second of four shards)", text));
  };
  size_t slash = text.find('/');
  if (slash == std::string::npos) return bad();
  std::string k = text.substr(0, slash);
  std::string n = text.substr(slash + 1);
  for (const std::string& part : {k, n}) {
    if (part.empty() || part.size() > 6 ||
        part.find_first_not_of("0123456789") != std::string::npos) {
      return bad();
    }
  }
  Shard s{static_cast<uint32_t>(std::stoul(k)), static_cast<uint32_t>(std::stoul(n))};
  if (s.k < 1 || s.n < 1 || s.k > s.n) return bad();
  return s;
}

}  // namespace powercut::product
