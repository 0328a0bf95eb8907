#include "harness/state/state_plan.h"

#include <algorithm>

namespace powercut::harness {

StatePlan::StatePlan(const TraceIndex& index, const CacheModel& model, const StateOptions& options,
                     uint64_t seed, const std::vector<uint64_t>& points)
    : index_(index), model_(model), options_(options), seed_(seed) {
  std::vector<uint64_t> acked;  // points right after an ack mark
  for (const auto& [entry, id] : index.acks()) acked.push_back(entry + 1);
  for (uint64_t p : points) {
    (std::binary_search(acked.begin(), acked.end(), p) ? ack_points_ : other_points_).push_back(p);
  }
  std::vector<CrashState> states;
  for (uint64_t p : points) {
    states.clear();
    StatesAtPoint(index_, index_.View(p, model_), model_, options_, seed_, &states);
    size_ += states.size();
  }
}

bool StatePlan::IsExtreme(const CrashState& s) {
  return !s.torn_entry && (s.kept.kind == SubsetSpec::kAll || s.kept.kind == SubsetSpec::kNone);
}

void StatePlan::StatesOfPass(int pass, uint64_t point, std::vector<CrashState>* out) const {
  std::vector<CrashState> all;
  StatesAtPoint(index_, index_.View(point, model_), model_, options_, seed_, &all);
  const bool extremes = pass < 2;
  for (const CrashState& s : all) {
    if (IsExtreme(s) == extremes) out->push_back(s);
  }
}

bool StatePlan::Next(size_t want, std::vector<CrashState>* out) {
  const size_t start = out->size();
  while (pass_ < 4 && out->size() - start < want) {
    const std::vector<uint64_t>& points = pass_ % 2 == 0 ? ack_points_ : other_points_;
    if (next_ >= points.size()) {
      ++pass_;
      next_ = 0;
      continue;
    }
    StatesOfPass(pass_, points[next_++], out);
  }
  return out->size() > start;
}

}  // namespace powercut::harness
