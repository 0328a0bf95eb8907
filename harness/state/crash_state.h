// One crash state: a crash point, a cache model, which volatile writes were kept and which
// atomic units of a torn write reached the media; and its short printable id.
//
// Id grammar (docs/cache-models.md):
//   pc1_<trace hash, 8 hex>_<model code>_a<atomic unit>_p<point>_k<kept>[_t<entry>.<units>]
// where <kept> selects among the point's volatile writes and <units> among the torn write's
// atomic units, each a SubsetSpec: A (all), N (none), X<i> (all but i), F<n> (the first n),
// L<n> (the last n), M<hex> (bit mask), R<hex seed> (a seeded random subset). Numbers are hex.
// An id determines the image exactly given the trace and base image.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "harness/state/cache_model.h"

namespace powercut::harness {

struct SubsetSpec {
  enum Kind : char {
    kAll = 'A',
    kNone = 'N',
    kAllBut = 'X',
    kFirst = 'F',
    kLast = 'L',
    kMask = 'M',
    kRandom = 'R',
  };
  Kind kind = kAll;
  uint64_t value = 0;

  // Whether element i of n is in the subset.
  bool Contains(uint64_t i, uint64_t n) const;
  std::string Encode() const;
  static absl::StatusOr<SubsetSpec> Decode(std::string_view text);
  bool operator==(const SubsetSpec&) const = default;
};

struct CrashState {
  uint64_t point = 0;  // the crash happens after the first `point` entries completed
  CacheModel model;    // atomic_unit resolved (non-zero)
  SubsetSpec kept;     // over PointView::volatile_entries
  std::optional<uint64_t> torn_entry;  // an entry partially on the media
  SubsetSpec torn_units;               // over the torn entry's atomic units
};

std::string EncodeStateId(std::string_view trace_hash8, const CrashState& state);

struct ParsedStateId {
  std::string trace_hash8;
  CrashState state;
};
absl::StatusOr<ParsedStateId> DecodeStateId(std::string_view id);

}  // namespace powercut::harness
