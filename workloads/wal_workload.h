// The wal workload: the project's own WAL (wal/wal.h) under any barrier, with T committers.
//
// Each committer takes the next id (1..count), commits a self-verifying payload carrying it
// (workloads/payload.h) with Wal::Commit, and acks the id once Commit returns OK. Commits of
// concurrent committers share barriers (group commit), so ids and LSNs differ: the checker reads
// ids from the payloads. When the WAL fences (a failed write or barrier), every committer stops:
// no later ack is sent and the run fails with the WAL's error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "recovery/recovery.h"
#include "wal/barrier.h"
#include "workloads/ack_channel.h"
#include "workloads/check_result.h"

namespace powercut::workloads {

// The log directory the workload creates inside POWERCUT_DIR.
inline constexpr char kWalDirName[] = "wal";

struct WalWorkloadOptions {
  wal::Barrier barrier = wal::Barrier::kFdatasync;
  uint64_t count = 1000;
  int threads = 4;
  size_t value_size = 100;
  uint64_t seed = 1;
  // Small segments keep a recording small (every segment is preallocated with zeros).
  uint64_t segment_bytes = 1ull << 20;
  uint64_t max_batch_wait_us = 0;
};

// Creates the log (InvalidArgument if POWERCUT_DIR/wal exists), commits and acks ids 1..count.
absl::Status RunWal(const std::string& dir, const WalWorkloadOptions& options, AckChannel& acks);

// Runs recovery::Recover in `mode` (default tolerate-torn-tail) and prints have <id> for each
// recovered record. DataLoss (exit 1) when recovery fails, e.g. on damage the log proves was
// synced. No log directory: nothing was committed (OK, no have lines).
absl::StatusOr<CheckResult> CheckWal(const std::string& dir, recovery::Mode mode);

}  // namespace powercut::workloads
