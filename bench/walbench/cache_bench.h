// `walbench cache`: the 2001 bonnie observation (block writes ~3x faster with the drive's write
// cache on) and its durable-commit counterpart, for one disk.
//
// The two workloads: a sequential block write (a file of N MiB in 64 KiB writes, then one
// fdatasync, as bonnie's block-write phase; MB/s) and durable commits (pwrite 4 KiB +
// fdatasync on a preallocated file, one thread; commits/s). The comparison the issue asks for
// runs them in a VM whose disk is write-back in one boot and write-through in the other
// (vm_cache_bench.h); `--local` runs the workloads on the disk under --dir, with whatever cache it
// has (and is what runs inside the guest).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/status/statusor.h"
#include "bench/walbench/bench_dir.h"
#include "bench/walbench/block_device.h"

namespace powercut::walbench {

struct CacheWorkloadOptions {
  uint64_t seq_write_bytes = 256ull << 20;
  uint32_t seq_block_bytes = 64 << 10;
  double commit_seconds = 2.0;
  uint32_t commit_bytes = 4096;
  uint64_t commit_file_bytes = 64ull << 20;  // preallocated; commits wrap around in it
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

// On/off ratios; a negative value means "compute from the two results".
struct CacheRatios {
  double seq_write = -1;
  double commits = -1;
};

// The two results side by side with the on/off ratios (pure). With several interleaved runs,
// pass the medians as the results and the medians of the per-run ratios as `ratios`.
std::string FormatCacheComparison(const CacheWorkloadResult& cache_on,
                                  const CacheWorkloadResult& cache_off, CacheRatios ratios = {});
nlohmann::json CacheWorkloadResultToJson(const CacheWorkloadResult& result);
// The inverse of CacheWorkloadResultToJson; InvalidArgument naming the missing field.
absl::StatusOr<CacheWorkloadResult> CacheWorkloadResultFromJson(const nlohmann::json& json);

}  // namespace powercut::walbench
