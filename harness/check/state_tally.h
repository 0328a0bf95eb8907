// Folds one cache model's judged states into its ModelResult in check order (the StatePlan's
// sequence numbers), whatever order the workers finish them in. That is what makes the counts,
// the examples and the first violation independent of thread timing: a state is folded only once
// every state before it is, and with `stop_at_violation` nothing after the first folded violation
// is, except that the plan's head (its first `min_states`, StatePlan::head()) is always folded
// (docs/cache-models.md, "Check order and early stop").
//
// "checked" (checker runs) counts distinct images in check order and "deduplicated" the states
// whose image an earlier state (of this model or an earlier one) already had; the engine's output
// cache may run the checker a second time when two workers meet one image at once, which these
// counts do not show. Memory: the states finished out of order (a few batches) and one hash per
// distinct image. Not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "base/hash.h"
#include "harness/check/engine.h"
#include "harness/check/oracle.h"

namespace powercut::harness {

class StateTally {
 public:
  // `images` holds the images folded so far, shared by the models of one check (they run one
  // after the other): an image an earlier model checked is deduplicated here too.
  StateTally(ModelResult* result, size_t max_examples, bool stop_at_violation, uint64_t min_states,
             absl::flat_hash_set<Hash128>* images)
      : result_(result),
        max_examples_(std::max<size_t>(max_examples, 1)),
        stop_at_violation_(stop_at_violation),
        min_states_(min_states),
        images_(*images) {}

  // Records state `seq` of the plan, judged on an image with content hash `image`.
  void Add(uint64_t seq, const Hash128& image, Verdict verdict);

  // Where `stop_at_violation` stopped the tally: the first folded violation's seq, or the head's
  // last state when the violation came before it.
  std::optional<uint64_t> stopped_at() const { return stopped_at_; }
  // States folded: the plan's first folded() states, all judged.
  uint64_t folded() const { return next_; }

 private:
  void Fold(const Hash128& image, Verdict& v);

  ModelResult* const result_;
  const size_t max_examples_;
  const bool stop_at_violation_;
  const uint64_t min_states_;                                // folded whatever they find
  std::map<uint64_t, std::pair<Hash128, Verdict>> pending_;  // finished out of order
  uint64_t next_ = 0;                                        // the next seq to fold
  absl::flat_hash_set<Hash128>& images_;                     // images folded so far
  std::optional<uint64_t> stopped_at_;
};

}  // namespace powercut::harness
