#include "harness/state/state_plan.h"

#include <algorithm>
#include <optional>
#include <set>

namespace powercut::harness {
namespace {

// The position (in view.volatile_entries) of the first volatile write `kept` drops, or m.
uint64_t FirstDropped(const SubsetSpec& kept, uint64_t m) {
  switch (kept.kind) {
    case SubsetSpec::kAll:
      return m;
    case SubsetSpec::kNone:
      return 0;
    case SubsetSpec::kAllBut:  // drops element `value`
    case SubsetSpec::kFirst:   // keeps elements 0..value-1
      return std::min(kept.value, m);
    default:
      break;
  }
  for (uint64_t i = 0; i < m; ++i) {
    if (!kept.Contains(i, m)) return i;
  }
  return m;
}

}  // namespace

uint64_t StatePlan::ExposedAcks(const TraceIndex& index, const PointView& view,
                                const CrashState& state) {
  const uint64_t m = view.volatile_entries.size();
  std::optional<uint64_t> first;  // the earliest entry before the cut the state takes away
  if (uint64_t i = FirstDropped(state.kept, m); i < m) first = view.volatile_entries[i];
  if (state.torn_entry && *state.torn_entry < state.point) {
    first = std::min(first.value_or(*state.torn_entry), *state.torn_entry);
  }
  if (!first) return 0;
  // Acks whose mark lies between that write and the cut.
  return index.AcksBefore(state.point) - index.AcksBefore(*first + 1);
}

bool StatePlan::DropsEverything(const CrashState& s, const PointView& view) {
  if (s.torn_entry) return false;
  return s.kept.kind == SubsetSpec::kNone ||
         (s.kept.kind == SubsetSpec::kAll && view.volatile_entries.empty());
}

StatePlan::StatePlan(const TraceIndex& index, const CacheModel& model, const StateOptions& options,
                     uint64_t seed, const std::vector<uint64_t>& points)
    : index_(index), model_(model), options_(options), seed_(seed) {
  struct Worst {
    uint64_t exposed;
    uint64_t point;
  };
  std::vector<Worst> worst;
  std::vector<uint64_t> rest;  // points with states beyond pass 0's
  std::vector<CrashState> states;
  for (uint64_t p : points) {
    states.clear();
    const PointView view = index_.View(p, model_);
    StatesAtPoint(index_, view, model_, options_, seed_, &states);
    size_ += states.size();
    bool has_rest = false;
    for (const CrashState& s : states) {
      if (DropsEverything(s, view)) {
        worst.push_back({ExposedAcks(index_, view, s), p});
      } else {
        has_rest = true;
      }
    }
    if (has_rest) rest.push_back(p);
  }
  // Tiers: the kExposureTiers - 1 largest values of ExposedAcks each walk the points once; the
  // smaller ones share one last walk (a bound on the walks, whatever the trace).
  std::set<uint64_t, std::greater<>> values;
  for (const Worst& w : worst) values.insert(w.exposed);
  uint64_t floor = 0;
  if (values.size() >= kExposureTiers) floor = *std::next(values.begin(), kExposureTiers - 2);
  auto tier = [floor](uint64_t exposed) { return exposed >= floor ? exposed : 0; };
  // The latest point first, then the rest by what they can lose.
  auto order = [&](const Worst& a, const Worst& b) {
    if (tier(a.exposed) != tier(b.exposed)) return tier(a.exposed) > tier(b.exposed);
    return a.point > b.point;
  };
  if (!worst.empty()) {
    std::rotate(worst.begin(), worst.end() - 1, worst.end());  // points increase: last is latest
    std::stable_sort(worst.begin() + 1, worst.end(), order);
    head_ = worst.size() > 1 && worst[1].exposed > worst[0].exposed ? 2 : 1;
  }
  for (const Worst& w : worst) steps_.push_back({w.point, true});
  for (auto it = rest.rbegin(); it != rest.rend(); ++it) steps_.push_back({*it, false});
}

void StatePlan::StatesOf(const Step& step, std::vector<CrashState>* out) const {
  const PointView view = index_.View(step.point, model_);
  std::vector<CrashState> all;
  StatesAtPoint(index_, view, model_, options_, seed_, &all);
  if (step.worst) {
    for (const CrashState& s : all) {
      if (DropsEverything(s, view)) out->push_back(s);
    }
    return;
  }
  std::vector<std::pair<uint64_t, CrashState>> rest;
  for (const CrashState& s : all) {
    if (!DropsEverything(s, view)) rest.emplace_back(ExposedAcks(index_, view, s), s);
  }
  std::stable_sort(rest.begin(), rest.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (auto& [exposed, s] : rest) out->push_back(std::move(s));
}

bool StatePlan::Next(size_t want, std::vector<CrashState>* out) {
  const size_t start = out->size();
  while (next_ < steps_.size() && out->size() - start < want) StatesOf(steps_[next_++], out);
  return out->size() > start;
}

}  // namespace powercut::harness
