// One sparse image file that is moved from crash state to crash state by writing only the
// granules that differ (design brief: "Images are built incrementally from their neighbour, never
// by copying the base image per state").
//
// The image holds the prefix image P(point) (every write before the point applied) plus
// "overrides": granules where the current state differs from P (dropped or torn writes). Moving
// to a state restores the overrides, applies the entries up to the new point, then writes the new
// state's overrides. Content comes from the mapped log and base image, so no undo data is kept.
// Moving to an earlier point restores the granules the entries after it wrote, from the log or
// the base: a walk backwards costs what the walk forwards did.
//
// The image's content hash is kept incrementally: the sum over granules that differ from the
// base of XXH3-128(granule bytes, seed = granule number). Equal hashes mean equal images (up to
// hash collisions), which is how identical states are checked once.
//
// Memory: one writer list per granule the trace writes (grows with the trace, not the states).
// Not thread-safe: one per worker.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "base/hash.h"
#include "base/image_io.h"
#include "harness/state/cache_model.h"
#include "harness/state/crash_state.h"
#include "harness/trace/trace_reader.h"

namespace powercut::harness {

class WorkingImage {
 public:
  // Creates `path` as a sparse copy of `base_path`. `granule` must divide the trace's sector
  // size (use min(sector size, atomic unit)).
  static absl::StatusOr<std::unique_ptr<WorkingImage>> Create(const std::string& path,
                                                              const std::string& base_path,
                                                              const TraceFile* trace,
                                                              uint32_t granule);
  ~WorkingImage();
  WorkingImage(const WorkingImage&) = delete;
  WorkingImage& operator=(const WorkingImage&) = delete;

  // Makes the image hold exactly `state`; `view` is index.View(state.point, state.model).
  // Rejects a state whose torn entry is neither in flight nor volatile at its point.
  absl::Status Materialize(const CrashState& state, const PointView& view);

  // Rebuilds the image from the base (e.g. after a checker wrote to it).
  absl::Status Reset();

  Hash128 content_hash() const { return Hash128{sum_high_, sum_low_}; }
  const std::string& path() const { return path_; }
  int fd() const { return fd_; }
  uint64_t size() const { return size_; }
  // Entries dropped and the torn entry of the last Materialize, for verdicts.
  const std::vector<uint64_t>& dropped() const { return dropped_; }
  // Bytes written to the image so far (for benchmarks).
  uint64_t bytes_written() const { return bytes_written_; }

 private:
  WorkingImage(std::string path, std::string base_path, int fd, std::unique_ptr<ReadOnlyMap> base,
               const TraceFile* trace, uint32_t granule);
  // The bytes granule g holds when written last by `writer` (-1: the base image).
  const uint8_t* GranuleContent(uint64_t g, int64_t writer) const;
  absl::Status WriteGranule(uint64_t g, int64_t writer);
  void UpdateHash(uint64_t g, const uint8_t* content);
  // Moves the prefix image back to P(point), point < prefix_point_, by restoring the granules
  // the entries in [point, prefix_point_) wrote (no overrides may be pending).
  absl::Status Rewind(uint64_t point);
  // Last writer of g with index < point, or -1.
  int64_t PrefixWriter(uint64_t g, uint64_t point) const;
  // Moves the prefix image forward to P(point), point >= prefix_point_ (no overrides pending).
  absl::Status AdvancePrefix(uint64_t point);
  // The volatile entries `state` drops, plus a torn entry inside the prefix, into dropped_.
  void CollectDropped(const CrashState& state, const PointView& view);
  // Last writer of g with index < point that `state` does not drop, or -1.
  int64_t LastAppliedWriter(uint64_t g, uint64_t point,
                            const absl::flat_hash_set<uint64_t>& dropped) const;
  // Writes the granules where `state` differs from the prefix image, into overrides_.
  absl::Status ApplyOverrides(const CrashState& state);

  const std::string path_;
  const std::string base_path_;
  const int fd_;
  const std::unique_ptr<ReadOnlyMap> base_;
  const TraceFile* const trace_;
  const uint32_t granule_;
  const uint64_t size_;
  absl::flat_hash_map<uint64_t, std::vector<uint32_t>> writers_;  // granule -> entries, ascending
  absl::flat_hash_map<uint64_t, Hash128> contribution_;           // granule -> hash term
  uint64_t sum_high_ = 0;
  uint64_t sum_low_ = 0;
  uint64_t prefix_point_ = 0;
  std::vector<uint64_t> overrides_;
  std::vector<uint64_t> dropped_;
  std::vector<uint8_t> zeros_;
  uint64_t bytes_written_ = 0;
};

}  // namespace powercut::harness
