// walbench cache: sequential block writes and durable commits with the drive's write cache on and
// off, in the VM (harness/vm) or, with --local, on one disk of this machine (docs/walbench.md).
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>

#include "bench/walbench/cache_bench.h"
#include "bench/walbench/commands.h"
#include "bench/walbench/vm_cache_bench.h"

namespace powercut::walbench::cli {
namespace {

struct CacheFlags {
  std::string dir = kDefaultParentDir;
  bool local = false;
  uint64_t mib = 256;
  uint64_t commit_file_mib = 64;
  double seconds = 2.0;
  int reps = 3;
  std::string fs = "ext4";
  std::string json;
  bool fifo = false;
  bool result_line = false;
};

// The on/off comparison in the VM: boots alternate write-back and write-through drives.
int RunCacheVm(const CacheFlags& flags, const CacheWorkloadOptions& workload) {
  std::error_code dir_error;
  if (!std::filesystem::is_directory(flags.dir, dir_error)) {
    return Fail(absl::InvalidArgumentError(
        fmt::format("--dir {}: not an existing directory; pass a directory on a disk for the "
                    "virtual drives' image files",
                    flags.dir)));
  }
  VmCacheOptions options;
  options.workload = workload;
  options.reps = flags.reps;
  options.fs = flags.fs;
  options.host_dir = flags.dir;
  std::error_code ec;
  options.walbench = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (ec) return Fail(absl::InternalError("cache: cannot find this program (/proc/self/exe)"));
  // No hint: PrepareVm finds the agent in this program's layout (built or installed).
  fmt::print("walbench cache: {} on/off pair(s) of VM boots, drive images under {}\n", flags.reps,
             flags.dir);
  std::fflush(stdout);
  auto report = RunCacheInVm(options);
  if (!report.ok()) return Fail(report.status());
  fmt::print("{}", FormatVmCacheReport(*report));
  if (absl::Status status = WriteJsonIfAsked(flags.json, VmCacheReportToJson(options, *report));
      !status.ok()) {
    return Fail(status);
  }
  return 0;
}

int RunCache(const CacheFlags& flags) {
  CacheWorkloadOptions options;
  options.seq_write_bytes = flags.mib << 20;
  options.commit_file_bytes = flags.commit_file_mib << 20;
  options.commit_seconds = flags.seconds;
  if (!flags.local) return RunCacheVm(flags, options);
  std::unique_ptr<BenchDir> dir;
  auto facts = PrepareDir(flags.dir, &dir);
  if (!facts.ok()) return Fail(facts.status());
  UseFifoScheduling(flags.fifo);
  auto result = RunCacheWorkloads(options, *facts, *dir);
  if (!result.ok()) return Fail(result.status());
  fmt::print(
      "\nsequential block write: {:.1f} MB/s ({} MiB in 64 KiB writes + fdatasync, {:.2f} s)\n"
      "durable 4 KiB commits: {:.0f}/s (p50 {:.1f} us, p99 {:.1f} us)\n"
      "write cache as the disk reports it: {} (one side of the on/off comparison only)\n",
      result->seq_write_mb_per_sec, flags.mib, result->seq_write_seconds, result->commits_per_sec,
      result->commit_p50_us, result->commit_p99_us, result->write_cache);
  if (absl::Status status = WriteJsonIfAsked(flags.json, CacheWorkloadResultToJson(*result));
      !status.ok()) {
    return Fail(status);
  }
  if (flags.result_line) {
    fmt::print("walbench-cache-result {}\n", CacheWorkloadResultToJson(*result).dump());
  }
  return 0;
}

}  // namespace

void AddCacheCommand(CLI::App& app, int* exit_code) {
  auto flags = std::make_shared<CacheFlags>();
  CLI::App* cache = app.add_subcommand(
      "cache",
      "sequential block writes and durable commits in the VM with the virtual drive's "
      "write cache on (qemu cache=writeback) and off (writethrough), boots interleaved");
  cache->add_flag("--local", flags->local,
                  "run the two workloads on --dir of this machine instead of in the VM");
  cache
      ->add_option("--dir", flags->dir,
                   "with --local: directory on the file system to measure; in the VM mode: "
                   "where the virtual drives' image files live (a disk, not tmpfs)")
      ->capture_default_str();
  cache->add_option("--mib", flags->mib, "size of the sequential write")
      ->check(CLI::Range(1, 65536))
      ->capture_default_str();
  cache
      ->add_option("--commit-file-mib", flags->commit_file_mib,
                   "size of the preallocated file the commits wrap around in")
      ->check(CLI::Range(1, 65536))
      ->capture_default_str();
  cache->add_option("--seconds", flags->seconds, "time of the durable-commit loop")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cache->add_option("--reps", flags->reps, "VM mode: on/off pairs of boots (medians)")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  cache->add_option("--fs", flags->fs, "VM mode: the guest file system (ext4, xfs, btrfs)")
      ->capture_default_str();
  cache->add_option("--json", flags->json, "write the results as JSON to this file");
  cache->add_flag("--fifo", flags->fifo, "with --local: run under SCHED_FIFO (root)");
  cache->add_flag("--result-line", flags->result_line,
                  "with --local: also print the result as one JSON line (the VM mode reads it)");
  cache->callback([flags, exit_code] { *exit_code = RunCache(*flags); });
}

}  // namespace powercut::walbench::cli
