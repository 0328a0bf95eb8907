// `walbench barriers`: the cost of each durability barrier, measured with its raw syscalls.
//
// Matrix: barrier mode x workload x operation size. Each cell runs for a fixed time (or until an
// operation/byte cap) and reports ops/s, latency percentiles, barrier syscalls and device flushes
// per operation, and the plausibility findings (plausibility.h) for it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/walbench/bench_dir.h"
#include "bench/walbench/block_device.h"
#include "bench/walbench/latency.h"
#include "bench/walbench/plausibility.h"
#include "wal/barrier.h"

namespace powercut::walbench {

enum class Workload {
  kOverwrite,  // successive blocks of a zero-filled (preallocated) file, wrapping around
  kRewrite,    // the same block again and again (the 2001 xlog test)
  kAppend,     // the end of a file that grows with every operation
};

std::string_view WorkloadName(Workload workload);
absl::StatusOr<Workload> ParseWorkload(std::string_view name);
const std::vector<Workload>& AllWorkloads();

struct BarrierBenchOptions {
  std::vector<wal::Barrier> barriers;
  std::vector<Workload> workloads;
  std::vector<uint32_t> op_bytes = {512, 4096};
  double seconds_per_cell = 1.0;
  uint64_t max_ops_per_cell = 200'000;
  // Size of the zero-filled file the overwrite workload cycles through, and the cap on how far an
  // append file grows in one cell.
  uint64_t file_bytes = 64ull << 20;
};

struct BarrierCell {
  wal::Barrier barrier = wal::Barrier::kNone;
  Workload workload = Workload::kOverwrite;
  uint32_t op_bytes = 0;
  std::string error;  // non-empty: the cell could not run (e.g. O_DIRECT refused); why
  uint64_t ops = 0;
  double seconds = 0;
  double ops_per_sec = 0;
  LatencySummary latency;
  double barrier_calls_per_op = 0;
  std::optional<double> device_flushes_per_op;  // nullopt: no device / no counters
  std::optional<double> device_writes_per_op;
  std::optional<double> device_flush_ms;  // mean time of one device flush during the cell
  std::vector<Finding> findings;
};

// Runs the matrix in `dir` (files inside it are created and removed by the run).
absl::StatusOr<std::vector<BarrierCell>> RunBarrierBench(const BarrierBenchOptions& options,
                                                         const DeviceFacts& facts, BenchDir& dir);

}  // namespace powercut::walbench
