#include "harness/check/state_tally.h"

namespace powercut::harness {

void StateTally::Add(uint64_t seq, const Hash128& image, Verdict verdict) {
  if (stopped_at_) return;
  pending_.emplace(seq, std::make_pair(image, std::move(verdict)));
  while (!stopped_at_ && !pending_.empty() && pending_.begin()->first == next_) {
    auto node = pending_.extract(pending_.begin());
    Fold(node.mapped().first, node.mapped().second);
    ++next_;
    if (stop_at_violation_ && result_->violations > 0 && next_ >= min_states_) {
      stopped_at_ = next_ - 1;
    }
  }
  if (stopped_at_) pending_.clear();
}

void StateTally::Fold(const Hash128& image, Verdict& v) {
  ModelResult& r = *result_;
  ++r.states;
  if (images_.insert(image).second) {
    ++r.checked;
  } else {
    ++r.deduplicated;
  }
  r.lost_acks_max = std::max<uint64_t>(r.lost_acks_max, v.lost.size());
  ++r.lost_acks_distribution[v.lost.size()];
  if (!v.torn_unacked.empty()) ++r.torn_unacked;
  if (v.fs_repaired) {
    ++r.fs_repaired;
    if (!r.first_fs_repaired) r.first_fs_repaired = v;
  }
  if (v.fs_unrecoverable) {
    ++r.fs_unrecoverable;
    if (!r.first_fs_unrecoverable) r.first_fs_unrecoverable = v;
  }
  if (!v.could_not_check.empty()) {
    ++r.could_not_check;
    if (!r.first_could_not_check) r.first_could_not_check = v;
  }
  if (!v.unavailable.empty()) {
    ++r.unavailable;
    if (!r.first_unavailable) r.first_unavailable = v;
  }
  if (!v.violation()) return;
  ++r.violations;
  if (v.checker_failed()) {
    ++r.checker_failures;
    if (!r.first_checker_failure) r.first_checker_failure = v;
  }
  // Folded in check order, so the first of equals is the earliest checked.
  if (!r.worst_violation || v.lost.size() > r.worst_violation->lost.size()) r.worst_violation = v;
  if (!r.first_violation) r.first_violation = v;
  if (r.examples.size() < max_examples_) r.examples.push_back(std::move(v));
}

}  // namespace powercut::harness
