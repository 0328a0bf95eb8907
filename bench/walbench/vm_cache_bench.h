// `walbench cache` in the VM: the 2001 bonnie observation on a virtual drive whose write cache is
// switched by the host. Each run boots the crash domain's guest (harness/vm) on an ext4 image
// file, runs `walbench cache --local` inside it (the sequential block write and the durable-commit
// loop of cache_bench.h), and reads the result line back from the workload's log. The drive is
// qemu cache=writeback in the "on" boots (the guest sees "write back"; its flushes become host
// fdatasyncs of the image) and cache=writethrough in the "off" boots (the guest sees "write
// through"; every write is durable on the host when it completes). Boots alternate on/off/on/off
// so the host disk's drift cancels; the summary is the medians and the median of per-pair ratios.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/walbench/cache_bench.h"

namespace powercut::walbench {

struct VmCacheOptions {
  CacheWorkloadOptions workload;
  int reps = 3;               // on/off pairs
  std::string fs = "ext4";    // the guest file system on the drive
  std::string host_dir;       // where the drive images live (a scratch folder is made inside)
  std::string walbench;       // this program's path (run in the guest over the 9p host root)
  std::string agent_hint;     // powercut-vm-agent, when not next to walbench / in the env
  int timeout_seconds = 600;  // per boot
};

struct VmCacheRun {
  bool cache_on = false;
  int rep = 0;
  std::string qemu_cache;         // "writeback" | "writethrough"
  std::string guest_write_cache;  // the agent's read of the disk's queue/write_cache
  CacheWorkloadResult result;     // as the workload in the guest measured (and saw the cache)
  double boot_seconds = 0;
  double wall_seconds = 0;
};

struct VmCacheReport {
  std::string accel;  // kvm | tcg
  std::vector<VmCacheRun> runs;
  CacheWorkloadResult median_on;  // medians over the reps
  CacheWorkloadResult median_off;
  CacheRatios ratios;  // medians of the per-rep on/off ratios
};

// The line `walbench cache --local --result-line` prints; the VM side looks for it.
inline constexpr char kCacheResultLinePrefix[] = "walbench-cache-result ";

absl::StatusOr<VmCacheReport> RunCacheInVm(const VmCacheOptions& options);

// Medians and per-rep ratio medians of `report.runs` (pure; RunCacheInVm calls it).
void SummarizeVmCacheRuns(VmCacheReport& report);
// Finds the result line in a workload log and parses it.
absl::StatusOr<CacheWorkloadResult> ParseCacheResultLine(const std::string& log);
std::string FormatVmCacheReport(const VmCacheReport& report);
nlohmann::json VmCacheReportToJson(const VmCacheOptions& options, const VmCacheReport& report);

}  // namespace powercut::walbench
