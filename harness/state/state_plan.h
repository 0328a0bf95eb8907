// The order in which one cache model's crash states are checked (docs/cache-models.md, "Check
// order and early stop"). A model's verdict is FAIL at its first violating state, so the states
// most likely to violate come first:
//
//   pass 0  the extremes (every volatile write dropped; every one kept) at ack points
//   pass 1  the extremes at the other points
//   pass 2  every other state (subsets, all-but-one, samples, torn) at ack points
//   pass 3  every other state at the other points
//
// Within a pass, points go in increasing order (WorkingImage walks forward; each pass costs one
// rebuild from the base) and a point's states keep StatesAtPoint's order. The plan holds the
// same states as StatesAtPoint over the points, only reordered: a state's id encodes the state,
// never its position, so `state materialize --state ID` and the rebuild commands are unaffected.
// Deterministic for a trace, options and seed. Memory: the point list, not the states.
#pragma once

#include <cstdint>
#include <vector>

#include "harness/state/cache_model.h"
#include "harness/state/crash_state.h"
#include "harness/state/state_generator.h"

namespace powercut::harness {

class StatePlan {
 public:
  // `points` as SelectPoints returns them (increasing). Counts the states (one generation pass).
  StatePlan(const TraceIndex& index, const CacheModel& model, const StateOptions& options,
            uint64_t seed, const std::vector<uint64_t>& points);

  // Every state the plan holds.
  uint64_t size() const { return size_; }

  // Appends the next states in check order, at least `want` unless the plan runs out; false when
  // nothing is left. Not thread-safe.
  bool Next(size_t want, std::vector<CrashState>* out);

  // Whether a state is an extreme (passes 0 and 1).
  static bool IsExtreme(const CrashState& state);

 private:
  // Appends the states of `point` that belong to `pass`.
  void StatesOfPass(int pass, uint64_t point, std::vector<CrashState>* out) const;

  const TraceIndex& index_;
  const CacheModel model_;
  const StateOptions options_;
  const uint64_t seed_;
  std::vector<uint64_t> ack_points_;    // increasing
  std::vector<uint64_t> other_points_;  // increasing
  uint64_t size_ = 0;
  int pass_ = 0;
  size_t next_ = 0;  // position in the pass's point list
};

}  // namespace powercut::harness
