// Repair: makes a recovered log appendable again by cutting it at the end of its valid prefix.
//
// What it does, for a RecoveryResult from Recover on the same directory:
//   1. zeroes every non-zero byte of the tail segment from result.tail_offset to the end of the
//      file (the file keeps its preallocated size; a file longer than its declared segment size is
//      truncated to it), then fsyncs it;
//   2. removes the segments after the tail segment, newest first;
//   3. removes leftover "*.log.tmp" files; fsyncs the directory.
// Guarantees:
// - Idempotent: repairing a repaired log changes nothing.
// - Crash-safe: a crash after any of its calls leaves a log that Recover (same mode) reads back
// with
//   the same records, because every intermediate state is "the valid prefix, then zeros and/or the
//   old bytes after it" and later segments are removed newest first.
// - Refuses (FailedPrecondition) to cut a corrupt log unless the result came from point-in-time
//   mode (which is the explicit choice to drop what follows the first damage), and refuses salvage
//   results (their records have holes; a log must be dense).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "recovery/recovery.h"
#include "wal/env.h"

namespace powercut::recovery {

struct RepairReport {
  uint64_t zeroed_bytes = 0;
  std::vector<std::string> removed;  // file names
  bool changed() const { return zeroed_bytes > 0 || !removed.empty(); }
};

absl::StatusOr<RepairReport> Repair(const RecoveryResult& result, wal::Env* env = nullptr);

}  // namespace powercut::recovery
