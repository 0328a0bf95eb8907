// `--shard K/N`: which cells a shard runs. A cell belongs to shard (stable hash of its name) mod N
// + 1, so every shard of a nightly job picks its cells without talking to the others, and the same
// cell lands in the same shard on every machine and every run (FNV-1a 64, not std::hash).
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace powercut::product {

struct Shard {
  uint32_t k = 1;  // 1-based
  uint32_t n = 1;
  bool Contains(const std::string& cell_name) const;
  std::string ToString() const;  // "K/N"
};

uint64_t StableHash(const std::string& text);

// "K/N" with 1 <= K <= N.
absl::StatusOr<Shard> ParseShard(const std::string& text);

}  // namespace powercut::product
