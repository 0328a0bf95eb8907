// `walbench commit`: durable commits per second of each engine against thread count.
//
// For each (record size, thread count) group, every engine config runs once per repetition, the
// configs interleaved A/B/C, B/C/A, C/A/B... so that a disk whose speed drifts over minutes (2-3x
// here) affects all of them alike. Each run: a fresh directory, a short untimed warm-up, then a
// timed window; only commits completing inside the window count. Reported per config: medians over
// the repetitions, and the median over repetitions of the ratio to RocksDB and to the bare loop in
// the SAME repetition (the drift cancels in a ratio of neighbours in time).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/walbench/bench_dir.h"
#include "bench/walbench/block_device.h"
#include "bench/walbench/commit_engine.h"
#include "bench/walbench/latency.h"

namespace powercut::walbench {

struct CommitBenchOptions {
  std::vector<EngineConfig> configs;
  std::vector<int> threads = {1, 2, 4, 8, 16, 32, 64};
  std::vector<uint32_t> record_bytes = {128, 4096};
  double seconds = 1.0;         // timed window per run
  double warmup_seconds = 0.2;  // untimed, before the window
  int reps = 3;
};

// One timed run of one config.
struct CommitRun {
  uint64_t commits = 0;
  double seconds = 0;
  double commits_per_sec = 0;
  LatencySummary latency;
  double barriers_per_commit = 0;                   // counted in the engine
  std::optional<double> device_flushes_per_commit;  // from /sys/block/<disk>/stat
  std::optional<double> device_flush_ms;            // mean time of one device flush
};

// The medians of one config over the repetitions of its group.
struct CommitResult {
  EngineConfig config;
  int threads = 0;
  uint32_t record_bytes = 0;
  std::vector<CommitRun> reps;
  double commits_per_sec = 0;
  double p50_us = 0;
  double p99_us = 0;
  double barriers_per_commit = 0;
  std::optional<double> device_flushes_per_commit;
  std::optional<double> device_flush_ms;
  // Median over reps of commits/s divided by the best RocksDB config's in the same rep.
  std::optional<double> ratio_to_rocksdb;
  // ... and by the bare engine's (same barrier when it ran, else bare/fdatasync) in the same rep.
  std::optional<double> ratio_to_bare;
};

// Parses "wal,rocksdb,bare" etc. into configs: wal -> one per barrier x `wal_preallocate`; rocksdb
// -> {sync, sync+pipelined}; bare -> one per barrier that takes unaligned writes (fdatasync when
// none of `barriers` does).
absl::StatusOr<std::vector<EngineConfig>> MakeEngineConfigs(
    const std::vector<std::string>& engines, const std::vector<wal::Barrier>& barriers,
    const std::vector<bool>& wal_preallocate);

// Runs the matrix. Engine failures end the run with the engine's message.
absl::StatusOr<std::vector<CommitResult>> RunCommitBench(const CommitBenchOptions& options,
                                                         const DeviceFacts& facts, BenchDir& dir);

// Fills the medians and ratios of `results` from their reps (pure; exposed for tests). Results of
// one (threads, record_bytes) group must have the same number of reps, in run order.
void ComputeMediansAndRatios(std::vector<CommitResult>& results);

}  // namespace powercut::walbench
