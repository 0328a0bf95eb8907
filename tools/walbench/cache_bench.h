// `walbench cache`: the 2001 bonnie observation (block writes ~3x faster with the drive's write
// cache on) and its durable-commit counterpart, for one disk.
//
// The two workloads: a sequential block write (a file of N MiB in 64 KiB writes, then one
// fdatasync, as bonnie's block-write phase; MB/s) and durable commits (pwrite 4 KiB +
// fdatasync on a preallocated file, one thread; commits/s). The comparison the issue asks for
// runs them in a VM whose disk is write-back in one boot and write-through in the other; that needs
// harness/vm to offer a write-through disk (docs/walbench.md). `--local` runs the workloads on the
// disk under --dir, with whatever cache it has.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/status/statusor.h"
#include "tools/walbench/bench_dir.h"
#include "tools/walbench/block_device.h"

namespace powercut::walbench {

struct CacheWorkloadOptions {
  uint64_t seq_write_bytes = 256ull << 20;
  uint32_t seq_block_bytes = 64 << 10;
  double commit_seconds = 2.0;
  uint32_t commit_bytes = 4096;
};

struct CacheWorkloadResult {
  std::string write_cache;  // queue/write_cache of the disk, or "no device"
  double seq_write_mb_per_sec = 0;
  double seq_write_seconds = 0;
  double commits_per_sec = 0;
  double commit_p50_us = 0;
  double commit_p99_us = 0;
};

absl::StatusOr<CacheWorkloadResult> RunCacheWorkloads(const CacheWorkloadOptions& options,
                                                      const DeviceFacts& facts, BenchDir& dir);

// The two results side by side with the on/off ratios (pure).
std::string FormatCacheComparison(const CacheWorkloadResult& cache_on,
                                  const CacheWorkloadResult& cache_off);
nlohmann::json CacheWorkloadResultToJson(const CacheWorkloadResult& result);

}  // namespace powercut::walbench
