#include "bench/walbench/vm_cache_bench.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "base/image_io.h"
#include "base/shell_quote.h"
#include "base/status_macros.h"
#include "bench/walbench/bench_dir.h"
#include "bench/walbench/latency.h"
#include "harness/vm/warm/vm_run.h"

namespace powercut::walbench {
namespace {

namespace fs = std::filesystem;

// The guest covers these host folders with tmpfs (harness/vm/guest/init.sh).
bool UnderMaskedFolder(const std::string& path) {
  for (const char* prefix : {"/tmp/", "/run/", "/var/tmp/", "/mnt/"}) {
    if (path.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

std::string GuestCommand(const VmCacheOptions& options) {
  const CacheWorkloadOptions& w = options.workload;
  return fmt::format(
      "exec {} cache --local --dir \"$POWERCUT_DIR\" --mib {} --seconds {} --commit-file-mib {} "
      "--result-line",
      ShellQuote(options.walbench), std::max<uint64_t>(1, w.seq_write_bytes >> 20),
      w.commit_seconds, std::max<uint64_t>(1, w.commit_file_bytes >> 20));
}

absl::StatusOr<VmCacheRun> RunOnce(const vm::VmEnvironment& env, const VmCacheOptions& options,
                                   bool cache_on, int rep, BenchDir& dir) {
  ASSIGN_OR_RETURN(const std::string out, dir.NewRunDir(cache_on ? "vm-on" : "vm-off"));
  vm::RunSpec spec;
  ASSIGN_OR_RETURN(spec.fs, harness::ParseFsKind(options.fs));
  spec.command = GuestCommand(options);
  spec.recording = vm::Recording::kNone;
  spec.disk_cache = cache_on ? vm::DiskCache::kWriteBack : vm::DiskCache::kWriteThrough;
  // Room for both files and the file system's own metadata and journal.
  const uint64_t need = options.workload.seq_write_bytes + options.workload.commit_file_bytes;
  spec.disk_bytes = std::max<uint64_t>(harness::FileSystemOf(spec.fs).default_image_bytes,
                                       (need + need / 4 + (64ull << 20)) & ~4095ull);
  spec.output_dir = out;
  spec.timeout = std::chrono::seconds(options.timeout_seconds);
  if (UnderMaskedFolder(options.walbench)) {
    spec.keep_paths.push_back(fs::path(options.walbench).parent_path().string());
  }
  absl::StatusOr<vm::RunResult> run = vm::RunInVm(env, spec);
  const std::string log = run.ok() ? ReadWholeFile(run->workload_log).value_or("") : std::string();
  absl::Status removed = dir.RemoveRunDir(out);  // the images: up to a few hundred MiB each
  RETURN_IF_ERROR(run.status());
  RETURN_IF_ERROR(removed);
  if (run->guest.exit_code != 0) {
    return absl::InternalError(
        fmt::format("cache {}: walbench in the guest exited with {}; its output:\n{}",
                    cache_on ? "on" : "off", run->guest.exit_code, log));
  }
  auto parsed = ParseCacheResultLine(log);
  if (!parsed.ok()) {
    return absl::InternalError(fmt::format("cache {}: {}; the guest's output:\n{}",
                                           cache_on ? "on" : "off",
                                           std::string(parsed.status().message()), log));
  }
  VmCacheRun result;
  result.cache_on = cache_on;
  result.rep = rep;
  result.qemu_cache = cache_on ? "writeback" : "writethrough";
  result.guest_write_cache = run->guest.device_cache;
  result.result = *std::move(parsed);
  result.boot_seconds = run->boot_seconds;
  result.wall_seconds = run->wall_seconds;
  return result;
}

CacheWorkloadResult MedianOf(const std::vector<VmCacheRun>& runs, bool cache_on) {
  std::vector<double> mb, seconds, commits, p50, p99;
  CacheWorkloadResult median;
  for (const VmCacheRun& run : runs) {
    if (run.cache_on != cache_on) continue;
    median.write_cache = run.result.write_cache;
    mb.push_back(run.result.seq_write_mb_per_sec);
    seconds.push_back(run.result.seq_write_seconds);
    commits.push_back(run.result.commits_per_sec);
    p50.push_back(run.result.commit_p50_us);
    p99.push_back(run.result.commit_p99_us);
  }
  median.seq_write_mb_per_sec = Median(mb);
  median.seq_write_seconds = Median(seconds);
  median.commits_per_sec = Median(commits);
  median.commit_p50_us = Median(p50);
  median.commit_p99_us = Median(p99);
  return median;
}

}  // namespace

absl::StatusOr<CacheWorkloadResult> ParseCacheResultLine(const std::string& log) {
  std::istringstream lines(log);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind(kCacheResultLinePrefix, 0) != 0) continue;
    nlohmann::json json = nlohmann::json::parse(line.substr(sizeof(kCacheResultLinePrefix) - 1),
                                                nullptr, /*allow_exceptions=*/false);
    if (json.is_discarded()) {
      return absl::InvalidArgumentError(fmt::format("unreadable result line: {}", line));
    }
    return CacheWorkloadResultFromJson(json);
  }
  return absl::NotFoundError(
      fmt::format("no line starting '{}' in the workload's output", kCacheResultLinePrefix));
}

void SummarizeVmCacheRuns(VmCacheReport& report) {
  report.median_on = MedianOf(report.runs, true);
  report.median_off = MedianOf(report.runs, false);
  std::vector<double> seq_ratios, commit_ratios;
  for (const VmCacheRun& on : report.runs) {
    if (!on.cache_on) continue;
    for (const VmCacheRun& off : report.runs) {
      if (off.cache_on || off.rep != on.rep) continue;
      if (off.result.seq_write_mb_per_sec > 0) {
        seq_ratios.push_back(on.result.seq_write_mb_per_sec / off.result.seq_write_mb_per_sec);
      }
      if (off.result.commits_per_sec > 0) {
        commit_ratios.push_back(on.result.commits_per_sec / off.result.commits_per_sec);
      }
    }
  }
  report.ratios.seq_write = seq_ratios.empty() ? -1 : Median(seq_ratios);
  report.ratios.commits = commit_ratios.empty() ? -1 : Median(commit_ratios);
}

absl::StatusOr<VmCacheReport> RunCacheInVm(const VmCacheOptions& options) {
  if (options.reps < 1) return absl::InvalidArgumentError("cache: --reps must be at least 1");
  if (options.walbench.empty() || !fs::exists(options.walbench)) {
    return absl::InvalidArgumentError(
        fmt::format("cache: walbench binary '{}' not found", options.walbench));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<BenchDir> dir, BenchDir::Create(options.host_dir));
  ASSIGN_OR_RETURN(vm::VmEnvironment env, vm::PrepareVm(options.agent_hint));
  VmCacheReport report;
  report.accel = vm::AccelName(env.accel);
  for (int rep = 0; rep < options.reps; ++rep) {
    // Alternate which mode goes first, so a drift in time does not favour one of them.
    const bool on_first = rep % 2 == 0;
    for (bool cache_on : {on_first, !on_first}) {
      ASSIGN_OR_RETURN(VmCacheRun run, RunOnce(env, options, cache_on, rep, *dir));
      report.runs.push_back(std::move(run));
    }
  }
  SummarizeVmCacheRuns(report);
  return report;
}

std::string FormatVmCacheReport(const VmCacheReport& report) {
  std::string out;
  for (const VmCacheRun& run : report.runs) {
    out += fmt::format(
        "rep {} qemu cache={:<12} guest sees {:<13} seq write {:8.1f} MB/s  commits {:7.0f}/s "
        "(p50 {:.0f} us, p99 {:.0f} us)\n",
        run.rep, run.qemu_cache, run.guest_write_cache, run.result.seq_write_mb_per_sec,
        run.result.commits_per_sec, run.result.commit_p50_us, run.result.commit_p99_us);
  }
  const int reps = static_cast<int>(report.runs.size() / 2);
  out +=
      fmt::format("\nVM ({}), {} on/off pair(s); medians, and the median of the per-pair ratios:\n",
                  report.accel, reps);
  out += FormatCacheComparison(report.median_on, report.median_off, report.ratios);
  return out;
}

nlohmann::json VmCacheReportToJson(const VmCacheOptions& options, const VmCacheReport& report) {
  nlohmann::json runs = nlohmann::json::array();
  for (const VmCacheRun& run : report.runs) {
    nlohmann::json j = CacheWorkloadResultToJson(run.result);
    j["cache"] = run.cache_on ? "on" : "off";
    j["rep"] = run.rep;
    j["qemu_cache"] = run.qemu_cache;
    j["guest_write_cache"] = run.guest_write_cache;
    j["boot_seconds"] = run.boot_seconds;
    j["wall_seconds"] = run.wall_seconds;
    runs.push_back(std::move(j));
  }
  return {{"where", "vm"},
          {"accel", report.accel},
          {"fs", options.fs},
          {"seq_write_bytes", options.workload.seq_write_bytes},
          {"commit_seconds", options.workload.commit_seconds},
          {"commit_file_bytes", options.workload.commit_file_bytes},
          {"reps", options.reps},
          {"runs", std::move(runs)},
          {"cache_on", CacheWorkloadResultToJson(report.median_on)},
          {"cache_off", CacheWorkloadResultToJson(report.median_off)},
          {"ratio_seq_write", report.ratios.seq_write},
          {"ratio_commits", report.ratios.commits}};
}

}  // namespace powercut::walbench
