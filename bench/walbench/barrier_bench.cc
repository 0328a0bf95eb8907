#include "bench/walbench/barrier_bench.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstring>
#include <utility>

#include "base/status_macros.h"
#include "bench/walbench/raw_barrier.h"

namespace powercut::walbench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::array<std::pair<Workload, std::string_view>, 3> kWorkloadNames = {{
    {Workload::kOverwrite, "overwrite"},
    {Workload::kRewrite, "rewrite"},
    {Workload::kAppend, "append"},
}};

// Runs one cell; the returned status is for failures that end the whole bench (a cell that cannot
// run, e.g. O_DIRECT refused, records the reason in cell.error instead).
absl::Status RunCell(const BarrierBenchOptions& options, const DeviceFacts& facts,
                     const std::string& dir, BarrierCell& cell) {
  const bool direct = wal::UsesDirectIo(cell.barrier);
  if (direct && facts.logical_block_size > cell.op_bytes) {
    cell.error = fmt::format("O_DIRECT needs {}-byte blocks on {}; {} B writes are impossible",
                             facts.logical_block_size, facts.disk, cell.op_bytes);
    return absl::OkStatus();
  }
  std::string path;
  uint64_t prealloc = 0;
  switch (cell.workload) {
    case Workload::kOverwrite:
      path = dir + "/overwrite.dat";
      prealloc = options.file_bytes;
      break;
    case Workload::kRewrite:
      path = dir + "/rewrite.dat";
      prealloc = 4096;
      break;
    case Workload::kAppend:
      path = dir + "/append.dat";
      break;
  }
  auto file_or = RawBarrierFile::Open(path, cell.barrier);
  if (!file_or.ok()) {
    cell.error = std::string(file_or.status().message());
    return absl::OkStatus();
  }
  std::unique_ptr<RawBarrierFile> file = std::move(*file_or);
  // The zero-filled files are shared by every cell of their workload: written once.
  struct stat st;
  if (prealloc > 0 &&
      (stat(path.c_str(), &st) != 0 || static_cast<uint64_t>(st.st_size) < prealloc)) {
    RETURN_IF_ERROR(file->Preallocate(prealloc));
  }

  AlignedBuffer buffer(cell.op_bytes);
  std::memset(buffer.data(), 0xA5, buffer.size());
  const auto data = absl::MakeConstSpan(buffer.data(), cell.op_bytes);

  std::vector<int64_t> latencies;
  latencies.reserve(std::min<uint64_t>(options.max_ops_per_cell, 1 << 20));
  std::optional<BlockStat> before;
  if (facts.has_block_device) {
    if (auto stat = ReadBlockStat(facts); stat.ok()) before = *stat;
  }
  const uint64_t calls_before = file->barrier_calls();
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(options.seconds_per_cell));
  const auto start = Clock::now();
  auto now = start;
  uint64_t offset = 0;
  while (latencies.size() < options.max_ops_per_cell && now < deadline) {
    if (cell.workload == Workload::kAppend && offset + cell.op_bytes > options.file_bytes) break;
    const uint64_t at = cell.workload == Workload::kRewrite ? 0 : offset;
    absl::Status status = file->WriteDurably(at, data);
    const auto end = Clock::now();
    if (!status.ok()) {
      cell.error = std::string(status.message());
      break;
    }
    latencies.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(end - now).count());
    now = end;
    offset += cell.op_bytes;
    if (cell.workload == Workload::kOverwrite && offset + cell.op_bytes > options.file_bytes) {
      offset = 0;
    }
  }
  const double seconds = std::chrono::duration<double>(now - start).count();
  cell.ops = latencies.size();
  cell.seconds = seconds;
  cell.ops_per_sec = seconds > 0 ? static_cast<double>(cell.ops) / seconds : 0;
  if (cell.ops > 0) {
    cell.barrier_calls_per_op =
        static_cast<double>(file->barrier_calls() - calls_before) / static_cast<double>(cell.ops);
  }
  if (before.has_value() && cell.ops > 0) {
    if (auto after = ReadBlockStat(facts); after.ok()) {
      const double ops = static_cast<double>(cell.ops);
      cell.device_writes_per_op = static_cast<double>(after->write_ios - before->write_ios) / ops;
      if (before->flush_ios && after->flush_ios) {
        const uint64_t flushes = *after->flush_ios - *before->flush_ios;
        cell.device_flushes_per_op = static_cast<double>(flushes) / ops;
        if (flushes > 0 && before->flush_ticks_ms && after->flush_ticks_ms) {
          cell.device_flush_ms =
              static_cast<double>(*after->flush_ticks_ms - *before->flush_ticks_ms) /
              static_cast<double>(flushes);
        }
      }
    }
  }
  cell.latency = SummarizeLatencies(std::move(latencies));
  file.reset();
  if (cell.workload == Workload::kAppend) unlink(path.c_str());  // created by this cell

  PlausibilityInput input;
  input.has_device = facts.has_block_device;
  input.write_cache = facts.write_cache;
  input.fua = facts.fua;
  input.rotational = facts.rotational;
  input.barrier = cell.barrier;
  input.same_block_rewrite = cell.workload == Workload::kRewrite;
  input.ops_per_sec = cell.ops_per_sec;
  input.flushes_per_op = cell.device_flushes_per_op;
  if (cell.error.empty()) cell.findings = AssessBarrier(input);
  return absl::OkStatus();
}

}  // namespace

std::string_view WorkloadName(Workload workload) {
  for (const auto& [w, name] : kWorkloadNames) {
    if (w == workload) return name;
  }
  return "unknown";
}

absl::StatusOr<Workload> ParseWorkload(std::string_view name) {
  for (const auto& [w, n] : kWorkloadNames) {
    if (n == name) return w;
  }
  return absl::InvalidArgumentError(
      fmt::format("unknown workload '{}'; expected overwrite, rewrite or append", name));
}

const std::vector<Workload>& AllWorkloads() {
  static const std::vector<Workload> all = {Workload::kOverwrite, Workload::kRewrite,
                                            Workload::kAppend};
  return all;
}

absl::StatusOr<std::vector<BarrierCell>> RunBarrierBench(const BarrierBenchOptions& options,
                                                         const DeviceFacts& facts, BenchDir& dir) {
  ASSIGN_OR_RETURN(const std::string run_dir, dir.NewRunDir("barriers"));
  std::vector<BarrierCell> cells;
  absl::Status status = absl::OkStatus();
  for (Workload workload : options.workloads) {
    for (uint32_t bytes : options.op_bytes) {
      for (wal::Barrier barrier : options.barriers) {
        BarrierCell cell;
        cell.barrier = barrier;
        cell.workload = workload;
        cell.op_bytes = bytes;
        status = RunCell(options, facts, run_dir, cell);
        if (!status.ok()) break;
        fmt::print(stderr, "  {:<16} {:<9} {:>5} B  {:>10.0f} ops/s{}\n", wal::BarrierName(barrier),
                   WorkloadName(workload), bytes, cell.ops_per_sec,
                   cell.error.empty() ? "" : "  (skipped: " + cell.error + ")");
        cells.push_back(std::move(cell));
      }
      if (!status.ok()) break;
    }
    if (!status.ok()) break;
  }
  absl::Status removed = dir.RemoveRunDir(run_dir);
  RETURN_IF_ERROR(status);
  RETURN_IF_ERROR(removed);
  return cells;
}

}  // namespace powercut::walbench
