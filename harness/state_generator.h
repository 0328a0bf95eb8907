// Chooses crash points and enumerates the crash states at each (design brief "Crash states").
//
// Per point: every subset of the volatile writes when there are at most `max_exhaustive` of them;
// beyond that the extremes (all kept, all lost, each all-but-one for the `max_all_but_one`
// writes nearest the cut) plus `samples` seeded random subsets. Torn variants: the in-flight
// write torn on top of "all kept", and each of the last `max_torn_writes` volatile writes torn
// with the writes before it kept and those after it lost. A write of u atomic units is torn into
// every proper non-empty subset when u <= 4, otherwise into the first unit, the first half, all
// but the last unit, the last unit, and `torn_samples` seeded random subsets.
// Deterministic: the same trace, options and seed give the same states in the same order.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "harness/cache_model.h"
#include "harness/crash_state.h"

namespace powercut::harness {

struct PointSelection {
  bool every_entry = false;
  bool acks = true;
  bool flushes = true;
  uint64_t sample = 0;  // plus a seeded sample of this many entry points
};

// "entry", "ack", "flush", "sample:N", comma-separated.
absl::StatusOr<PointSelection> ParsePointSelection(std::string_view text);

struct StateOptions {
  uint32_t max_exhaustive = 10;  // K
  uint32_t samples = 32;
  uint32_t max_all_but_one = 64;
  bool torn = true;
  uint32_t torn_samples = 2;
  uint32_t max_torn_writes = 4;
};

// Points (entry counts, 1..n) in increasing order. With `flush_points_only`, only the points
// right after a FLUSH entry are kept (cache "off" on a flush-epoch trace).
std::vector<uint64_t> SelectPoints(const TraceIndex& index, const PointSelection& selection,
                                   uint64_t seed, bool flush_points_only);

// Number of atomic units of `unit` bytes that entry `e` touches.
uint64_t AtomicUnits(const TraceEntry& e, uint32_t sector_size, uint32_t unit);

// Appends the states of one point.
void StatesAtPoint(const TraceIndex& index, const PointView& view, const CacheModel& model,
                   const StateOptions& options, uint64_t seed, std::vector<CrashState>* out);

}  // namespace powercut::harness
