// Content hashes used by the harness: XXH3-128 (libxxhash), stable across runs and machines.
// Used for base-image identity in manifests, trace identity in state ids, and state-delta dedup.
// Not a cryptographic hash: it detects mistakes (wrong image, changed log), not adversaries.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace powercut {

struct Hash128 {
  uint64_t high = 0;
  uint64_t low = 0;
  bool operator==(const Hash128&) const = default;
  // 32 lowercase hex digits.
  std::string Hex() const;
  template <typename H>
  friend H AbslHashValue(H h, const Hash128& v) {
    return H::combine(std::move(h), v.high, v.low);
  }
};

Hash128 HashBytes(absl::Span<const uint8_t> data);

// Streams a file through XXH3-128; the error names the file.
absl::StatusOr<Hash128> HashFile(const std::string& path);

// Incremental hashing of a sequence of byte ranges.
class Hasher {
 public:
  Hasher();
  ~Hasher();
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;
  void Update(const void* data, size_t size);
  void UpdateU64(uint64_t v);
  Hash128 Digest() const;

 private:
  void* state_;  // XXH3_state_t*
};

}  // namespace powercut
