// Chooses crash points and enumerates the crash states at each (design brief "Crash states").
//
// Per point: every subset of the volatile writes when there are at most `max_exhaustive` of them;
// beyond that the extremes (all kept, all lost, each all-but-one: by default for every volatile
// write, or only for the `max_all_but_one` writes nearest the cut when that is set) plus
// `samples` seeded random subsets. Torn variants: the in-flight
// write torn on top of "all kept", and each of the last `max_torn_writes` volatile writes torn
// with the writes before it kept and those after it lost. A write of u atomic units is torn into
// every proper non-empty subset when u <= 4, otherwise into the first unit, the first half, all
// but the last unit, the last unit, and `torn_samples` seeded random subsets.
// Deterministic: the same trace, options and seed give the same states in the same order.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "harness/state/cache_model.h"
#include "harness/state/crash_state.h"

namespace powercut::harness {

struct PointSelection {
  bool every_entry = false;
  bool acks = true;
  bool flushes = true;
  uint64_t sample = 0;  // plus a seeded sample of this many entry points
  bool operator==(const PointSelection&) const = default;
};

// The one vocabulary of --points (run, matrix, check, state list), for help texts and errors.
inline constexpr std::string_view kPointChoices =
    "every, acks, flushes or N (a seeded sample of N entry points), comma-separated";
// kPointChoices; also the older spellings entry, ack, flush and sample:N.
absl::StatusOr<PointSelection> ParsePointSelection(std::string_view text);
// The inverse, in kPointChoices' spelling ("acks", "every,flushes,50"): reports and rebuild
// commands.
std::string PointSelectionName(const PointSelection& points);

struct StateOptions {
  uint32_t max_exhaustive = 10;  // K
  uint32_t samples = 32;
  // 0: an all-but-one state for every volatile write (the "each all-but-one"); N: only
  // for the N writes nearest the cut. Costs one state per volatile write per point
  // (docs/cache-models.md has the measurement).
  uint32_t max_all_but_one = 0;
  bool torn = true;
  // The write in flight at the cut (the first after it) torn on top of "all kept". false for
  // `powercut fstest`, whose crash points sit right after a persistence point returned, before the
  // next operation issued anything: a write after the point belongs to an operation whose effect
  // the point's promises do not cover (docs/fstest.md, "Crash points").
  bool torn_inflight = true;
  uint32_t torn_samples = 2;
  uint32_t max_torn_writes = 4;
};

// What SelectPoints kept and dropped for cache "off" on a flush-epoch trace.
struct ExactPointCounts {
  uint64_t after_flush = 0;    // kept: right after a FLUSH entry
  uint64_t after_fua = 0;      // kept: right after a FUA write proven exact
  uint64_t fua_skipped = 0;    // dropped: right after a FUA write that cannot be proven exact
  uint64_t other_skipped = 0;  // dropped: any other selected point (acks, entries, samples)
};

// Points (entry counts, 1..n) in increasing order. With `flush_points_only` (cache "off" on a
// flush-epoch trace), only the points the log places exactly are kept: right after a FLUSH entry,
// and right after a FUA write (not itself a flush) when ExactFuaPoints says so; with
// `selection.flushes`, those FUA points are candidates too. `counts` (optional) says how many.
std::vector<uint64_t> SelectPoints(const TraceIndex& index, const PointSelection& selection,
                                   uint64_t seed, bool flush_points_only,
                                   ExactPointCounts* counts = nullptr);

// For a flush-epoch (kernel dm-log-writes) trace and a FUA write i: exact[i] is true when a crash
// right after entry i is placed exactly for cache "off" (only meaningful for FUA writes, which
// the kernel logs when they complete): no write or discard
// without FUA is logged after entry i before the next FLUSH entry (or, with no FLUSH after it,
// before the end of a log that ends with the kernel's `dm-log-writes-end` mark, which follows the
// writes still unflushed at teardown). dm-log-writes holds completed plain writes in its
// unflushed list and logs them just before the FLUSH entry of the next flush, so any plain write
// completed before entry i but logged after it would show up there (docs/trace.md).
std::vector<bool> ExactForCacheOff(const Trace& trace);

// Number of atomic units of `unit` bytes that entry `e` touches.
uint64_t AtomicUnits(const TraceEntry& e, uint32_t sector_size, uint32_t unit);

// Appends the states of one point.
void StatesAtPoint(const TraceIndex& index, const PointView& view, const CacheModel& model,
                   const StateOptions& options, uint64_t seed, std::vector<CrashState>* out);

}  // namespace powercut::harness
