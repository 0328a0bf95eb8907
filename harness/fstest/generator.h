// Bounded exhaustive workloads: the space CrashMonkey's ACE generator defines (OSDI'18, "Finding
// Crash-Consistency Bugs with Bounded Black-Box Crash Testing"), rebuilt from its description and
// documented in docs/fstest.md ("The generated space").
//
// A workload of sequence length N is N core operations, each with one of its argument variants,
// each followed by a persistence point (the last one always by a real one):
//   core operations   creat, mkdir, falloc, write, dwrite, mmapwrite, link, unlink, remove,
//                     rename, setxattr, removexattr, truncate (ACE's 13)
//   files             first file foo or A/foo; second file bar or A/bar; folders A and B
//   persistence       fsync of a file the workload used, its sibling or its parent folder, or
//                     sync (GeneratorOptions::persistence adds fdatasync); a core write or
//                     dwrite made synchronous (GeneratorOptions::sync_writes: O_DSYNC, O_SYNC,
//                     RWF_DSYNC), its own point; between core operations also none
// Dependencies come first, as ACE inserts them: the parent folders are made and persisted by a
// sync before the first core operation; a file an operation needs is created, an overwrite gets
// 32 KiB to overwrite, a name a creat or link needs is unlinked first, an xattr to remove is set.
//
// The space is ordered and indexed, so `--sample N --seed S` picks the same N workloads on every
// machine; a workload's id (WorkloadId) is its content hash, stable across versions.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "harness/fstest/workload.h"

namespace powercut::fstest {

inline constexpr int kMaxSequenceLength = 3;

struct GeneratorOptions {
  int seq = 1;  // core operations per workload, 1..kMaxSequenceLength
  // The persistence points the generator chooses from after each core operation: fsync and sync
  // by default (ACE's), fdatasync when asked (`--persist fsync,fdatasync,sync`).
  std::vector<OpKind> persistence = {OpKind::kFsync, OpKind::kSync};
  // The synchronous writes a core write or dwrite may be instead of a point after it (`--persist
  // ...,odsync,osync,rwf_dsync`): none by default (ACE has none).
  std::vector<SyncWrite> sync_writes;
};

// `--persist`: "fsync,fdatasync,sync,odsync,osync,rwf_dsync" (any of them, comma-separated) into
// `options` (persistence and sync_writes); the error lists the valid names.
absl::Status ParsePersistence(std::string_view text, GeneratorOptions* options);
// The same list as `--persist` spells it ("fsync,sync,odsync").
std::string PersistenceText(const GeneratorOptions& options);

class WorkloadSpace {
 public:
  static absl::StatusOr<WorkloadSpace> Make(const GeneratorOptions& options);

  uint64_t size() const { return total_; }
  // The workload at `index` (< size()), with its description; deterministic.
  Workload At(uint64_t index) const;
  // `n` distinct indices drawn with `seed` (splitmix64, portable), sorted; every index when n is
  // at least size().
  std::vector<uint64_t> Sample(uint64_t n, uint64_t seed) const;

  struct Core;  // one core operation with its arguments (generator.cc)

 private:
  WorkloadSpace() = default;
  GeneratorOptions options_;
  std::shared_ptr<const std::vector<Core>> cores_;
  // Per sequence of core operations (in mixed radix over cores_), the first workload index.
  std::vector<uint64_t> starts_;
  uint64_t total_ = 0;
};

}  // namespace powercut::fstest
