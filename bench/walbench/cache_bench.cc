#include "bench/walbench/cache_bench.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>
#include <vector>

#include "base/status_macros.h"
#include "bench/walbench/latency.h"
#include "bench/walbench/raw_barrier.h"

namespace powercut::walbench {
namespace {

using Clock = std::chrono::steady_clock;

absl::Status Errno(std::string_view what, const std::string& path) {
  return absl::InternalError(fmt::format("{}({}): {}", what, path, std::strerror(errno)));
}

// bonnie's block-write phase, made durable: the file in `seq_block_bytes` writes, one fdatasync.
absl::StatusOr<double> SequentialWriteSeconds(const CacheWorkloadOptions& options,
                                              const std::string& path) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Errno("open", path);
  std::vector<uint8_t> block(options.seq_block_bytes, 0x5C);
  absl::Status status = absl::OkStatus();
  const auto start = Clock::now();
  for (uint64_t offset = 0; offset < options.seq_write_bytes && status.ok();) {
    const ssize_t n = pwrite(fd, block.data(), block.size(), static_cast<off_t>(offset));
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      status = n < 0 ? Errno("pwrite", path)
                     : absl::ResourceExhaustedError(fmt::format("pwrite({}): no progress", path));
      break;
    }
    offset += static_cast<uint64_t>(n);
  }
  if (status.ok() && fdatasync(fd) != 0) status = Errno("fdatasync", path);
  const auto end = Clock::now();
  close(fd);
  unlink(path.c_str());  // created above
  RETURN_IF_ERROR(status);
  return std::chrono::duration<double>(end - start).count();
}

}  // namespace

absl::StatusOr<CacheWorkloadResult> RunCacheWorkloads(const CacheWorkloadOptions& options,
                                                      const DeviceFacts& facts, BenchDir& dir) {
  CacheWorkloadResult result;
  result.write_cache = facts.has_block_device ? std::string(WriteCacheName(facts.write_cache))
                                              : std::string("no device");
  ASSIGN_OR_RETURN(const std::string run_dir, dir.NewRunDir("cache"));
  auto seconds = SequentialWriteSeconds(options, run_dir + "/seq.dat");
  if (!seconds.ok()) {
    dir.RemoveRunDir(run_dir).IgnoreError();
    return seconds.status();
  }
  result.seq_write_seconds = *seconds;
  result.seq_write_mb_per_sec =
      *seconds > 0 ? static_cast<double>(options.seq_write_bytes) / 1e6 / *seconds : 0;

  // Durable commits: the 1-thread bare loop of `walbench commit`.
  absl::Status status = absl::OkStatus();
  std::vector<int64_t> latencies;
  double elapsed = 0;
  {
    auto file = RawBarrierFile::Open(run_dir + "/commit.dat", wal::Barrier::kFdatasync);
    status = file.status();
    const uint64_t file_bytes = std::max<uint64_t>(options.commit_file_bytes, options.commit_bytes);
    if (status.ok()) status = (*file)->Preallocate(file_bytes);
    AlignedBuffer record(options.commit_bytes);
    std::memset(record.data(), 0x3D, record.size());
    const auto start = Clock::now();
    const auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(options.commit_seconds));
    auto now = start;
    uint64_t offset = 0;
    while (status.ok() && now < deadline) {
      if (offset + options.commit_bytes > file_bytes) offset = 0;
      status =
          (*file)->WriteDurably(offset, absl::MakeConstSpan(record.data(), options.commit_bytes));
      const auto end = Clock::now();
      latencies.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(end - now).count());
      now = end;
      offset += options.commit_bytes;
    }
    elapsed = std::chrono::duration<double>(now - start).count();
  }
  absl::Status removed = dir.RemoveRunDir(run_dir);
  RETURN_IF_ERROR(status);
  RETURN_IF_ERROR(removed);
  result.commits_per_sec = elapsed > 0 ? static_cast<double>(latencies.size()) / elapsed : 0;
  const LatencySummary summary = SummarizeLatencies(std::move(latencies));
  result.commit_p50_us = summary.p50_us;
  result.commit_p99_us = summary.p99_us;
  return result;
}

std::string FormatCacheComparison(const CacheWorkloadResult& cache_on,
                                  const CacheWorkloadResult& cache_off, CacheRatios ratios) {
  auto ratio = [](double a, double b, double given) {
    if (given >= 0) return fmt::format("{:.2f}x", given);
    return b > 0 ? fmt::format("{:.2f}x", a / b) : std::string("-");
  };
  std::string out =
      fmt::format("{:<34} {:>14} {:>14} {:>8}\n", "workload", "cache on", "cache off", "on/off");
  out += fmt::format("{:<34} {:>14} {:>14} {:>8}\n", "disk reports", cache_on.write_cache,
                     cache_off.write_cache, "");
  out += fmt::format(
      "{:<34} {:>14.1f} {:>14.1f} {:>8}\n", "sequential block write, MB/s",
      cache_on.seq_write_mb_per_sec, cache_off.seq_write_mb_per_sec,
      ratio(cache_on.seq_write_mb_per_sec, cache_off.seq_write_mb_per_sec, ratios.seq_write));
  out += fmt::format("{:<34} {:>14.0f} {:>14.0f} {:>8}\n", "durable 4 KiB commits/s (1 thread)",
                     cache_on.commits_per_sec, cache_off.commits_per_sec,
                     ratio(cache_on.commits_per_sec, cache_off.commits_per_sec, ratios.commits));
  return out;
}

nlohmann::json CacheWorkloadResultToJson(const CacheWorkloadResult& result) {
  return {{"write_cache", result.write_cache},
          {"seq_write_mb_per_sec", result.seq_write_mb_per_sec},
          {"seq_write_seconds", result.seq_write_seconds},
          {"commits_per_sec", result.commits_per_sec},
          {"commit_p50_us", result.commit_p50_us},
          {"commit_p99_us", result.commit_p99_us}};
}

absl::StatusOr<CacheWorkloadResult> CacheWorkloadResultFromJson(const nlohmann::json& json) {
  CacheWorkloadResult result;
  const std::pair<const char*, double*> numbers[] = {
      {"seq_write_mb_per_sec", &result.seq_write_mb_per_sec},
      {"seq_write_seconds", &result.seq_write_seconds},
      {"commits_per_sec", &result.commits_per_sec},
      {"commit_p50_us", &result.commit_p50_us},
      {"commit_p99_us", &result.commit_p99_us}};
  if (!json.is_object() || !json.contains("write_cache") || !json["write_cache"].is_string()) {
    return absl::InvalidArgumentError("cache result: no string field write_cache");
  }
  result.write_cache = json["write_cache"].get<std::string>();
  for (const auto& [name, field] : numbers) {
    if (!json.contains(name) || !json[name].is_number()) {
      return absl::InvalidArgumentError(fmt::format("cache result: no number field {}", name));
    }
    *field = json[name].get<double>();
  }
  return result;
}

}  // namespace powercut::walbench
