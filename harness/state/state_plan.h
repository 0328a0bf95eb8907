// The order in which one cache model's crash states are checked (docs/cache-models.md, "Check
// order and early stop"). By default a model stops at its first violating state, and what it
// reports is what that state lost, so the states that can lose the most come first:
//
//   pass 0  at every point, the state that drops every volatile write (the only untorn state
//           where nothing is volatile): first the latest point's, then the points in decreasing
//           order of the acks that state can lose (ExposedAcks), the latest first among equals
//   pass 1  every other state (all kept, subsets, all-but-one, samples, torn), the latest point
//           first; a point's states in decreasing order of ExposedAcks, then StatesAtPoint's
//
// The head (the latest point's state, and the one that can lose the most when that is another)
// is always judged, even after a violation: the latest point has the most acks a program may
// lose by itself (acked, never written), the other the most the cache can take away, and which
// of the two loses more depends on the program. An early stop's loss is the larger of them.
//
// Pass 0 walks the points backwards once per distinct ExposedAcks value, for at most
// kExposureTiers values (the smaller ones share the last walk), and pass 1 once: a worker's
// WorkingImage moves backwards by restoring the granules the skipped entries wrote, so each walk
// costs about one replay of the trace. The plan holds the same states as StatesAtPoint over the
// points, only reordered: a state's id encodes the state, never its position, so `state
// materialize --state ID` and the rebuild commands are unaffected. Deterministic for a trace,
// options and seed. Memory: two steps per point, not the states.
#pragma once

#include <cstdint>
#include <vector>

#include "harness/state/cache_model.h"
#include "harness/state/crash_state.h"
#include "harness/state/state_generator.h"

namespace powercut::harness {

class StatePlan {
 public:
  // Pass 0 walks the points at most this many times (see above).
  static constexpr size_t kExposureTiers = 8;

  // `points` as SelectPoints returns them (increasing). Counts the states (one generation pass).
  StatePlan(const TraceIndex& index, const CacheModel& model, const StateOptions& options,
            uint64_t seed, const std::vector<uint64_t>& points);

  // Every state the plan holds.
  uint64_t size() const { return size_; }
  // The first head() states are judged whatever they find (see above): 1 or 2, 0 when empty.
  uint64_t head() const { return head_; }

  // Appends the next states in check order, at least `want` unless the plan runs out; false when
  // nothing is left. Not thread-safe.
  bool Next(size_t want, std::vector<CrashState>* out);

  // What `state` can lose: the acks before its point whose ack mark follows the earliest write
  // it drops or tears (a write before the cut; 0 when it drops none). A checker that finds every
  // write before that one finds every commit acked before it, so this is the most the cache can
  // take away in that state; what the program itself never wrote is lost in every state alike.
  static uint64_t ExposedAcks(const TraceIndex& index, const PointView& view,
                              const CrashState& state);

  // Whether a state is pass 0's: no torn write, every volatile write dropped (kept is N; A where
  // nothing is volatile, which is the same state).
  static bool DropsEverything(const CrashState& state, const PointView& view);

 private:
  struct Step {
    uint64_t point;
    bool worst;  // pass 0's state of the point; else pass 1's states
  };
  // Appends the states of one step.
  void StatesOf(const Step& step, std::vector<CrashState>* out) const;

  const TraceIndex& index_;
  const CacheModel model_;
  const StateOptions options_;
  const uint64_t seed_;
  std::vector<Step> steps_;  // check order
  uint64_t size_ = 0;
  uint64_t head_ = 0;
  size_t next_ = 0;  // position in steps_
};

}  // namespace powercut::harness
