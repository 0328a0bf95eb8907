// walbench: what each durability barrier costs on this disk, whether the disk can be honouring it,
// and how the WAL's group commit compares with RocksDB and with the device's floor.
// See docs/walbench.md.
//
//   walbench barriers [--dir D] [--barriers a,b] [--workloads w] [--op-bytes 512,4096] [--json F]
//   walbench commit   [--dir D] [--engines wal,rocksdb,bare] [--threads 1,2,...] [--barriers b]
//                     [--record-bytes 128,4096] [--seconds S] [--reps N] [--json F] [--svg F]
//   walbench cache    [--local] [--dir D] [--mib N] [--seconds S] [--reps N] [--json F]
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sched.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tools/walbench/barrier_bench.h"
#include "tools/walbench/barrier_report.h"
#include "tools/walbench/bench_dir.h"
#include "tools/walbench/block_device.h"
#include "tools/walbench/cache_bench.h"
#include "tools/walbench/commit_bench.h"
#include "tools/walbench/commit_report.h"
#include "tools/walbench/svg_plot.h"
#if POWERCUT_WALBENCH_HAVE_VM
#include "tools/walbench/vm_cache_bench.h"
#endif
#include "wal/barrier.h"

namespace powercut::walbench {
namespace {

constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

// SCHED_FIFO for this process and the threads it starts: on a busy machine a thread woken by an
// I/O completion otherwise waits for a CPU (up to a scheduler tick, 4 ms here), and the numbers
// measure the scheduler instead of the disk. Threads block on I/O most of the time, so they do
// not starve other work; the kernel's RT throttling caps them anyway.
void UseFifoScheduling(bool wanted) {
  if (!wanted) return;
  sched_param param{};
  param.sched_priority = 1;
  if (sched_setscheduler(0, SCHED_FIFO, &param) != 0) {
    fmt::print(stderr,
               "walbench: --fifo: sched_setscheduler(SCHED_FIFO): {} (needs root or "
               "CAP_SYS_NICE); running with the normal scheduler\n",
               std::strerror(errno));
  }
}

int Fail(const absl::Status& status) {
  fmt::print(stderr, "walbench: {}\n", std::string(status.message()));
  return status.code() == absl::StatusCode::kInvalidArgument ? kExitUsage : kExitFailure;
}

absl::StatusOr<std::vector<wal::Barrier>> ParseBarriers(const std::vector<std::string>& names) {
  std::vector<wal::Barrier> barriers;
  for (const std::string& name : names) {
    auto barrier = wal::ParseBarrier(name);
    if (!barrier.ok()) {
      return absl::InvalidArgumentError(
          fmt::format("--barriers: {}", std::string(barrier.status().message())));
    }
    barriers.push_back(*barrier);
  }
  return barriers;
}

absl::Status WriteFile(const std::string& path, const std::string& contents,
                       std::string_view flag) {
  std::ofstream out(path, std::ios::trunc);
  out << contents;
  out.close();
  if (!out) {
    return absl::PermissionDeniedError(
        fmt::format("{} {}: cannot write the file; pass a writable path", flag, path));
  }
  return absl::OkStatus();
}

// The scratch directory and the facts of the disk under it, with the warnings a user needs.
absl::StatusOr<DeviceFacts> PrepareDir(const std::string& parent, std::unique_ptr<BenchDir>* dir) {
  auto created = BenchDir::Create(parent);
  // A bad --dir is a usage error (exit 2), whatever the errno was.
  if (!created.ok()) return absl::InvalidArgumentError(std::string(created.status().message()));
  *dir = std::move(*created);
  auto facts = DescribeDeviceUnder((*dir)->path());
  if (!facts.ok()) return facts.status();
  fmt::print("{}", FormatDeviceFacts(*facts));
  if (facts->fs_type == "tmpfs" || facts->fs_type == "ramfs") {
    fmt::print(
        "warning: {} is on {}: the page cache is the medium, every barrier is nearly free, no "
        "device flush is counted (and before Linux 6.6, O_DIRECT is refused). Pass --dir on a "
        "disk.\n",
        parent, facts->fs_type);
  } else if (!facts->has_block_device) {
    fmt::print("warning: {}\n", facts->no_device_reason);
  }
  return facts;
}

struct BarriersFlags {
  std::string dir = kDefaultParentDir;
  std::vector<std::string> barriers;
  std::vector<std::string> workloads;
  std::vector<uint32_t> op_bytes = {512, 4096};
  double seconds = 1.0;
  uint64_t max_ops = 200'000;
  std::string json;
  bool fifo = false;
};

int RunBarriers(const BarriersFlags& flags) {
  BarrierBenchOptions options;
  if (flags.barriers.empty()) {
    options.barriers = wal::AllBarriers();
  } else {
    auto barriers = ParseBarriers(flags.barriers);
    if (!barriers.ok()) return Fail(barriers.status());
    options.barriers = *barriers;
  }
  if (flags.workloads.empty()) {
    options.workloads = AllWorkloads();
  } else {
    for (const std::string& name : flags.workloads) {
      auto workload = ParseWorkload(name);
      if (!workload.ok()) {
        return Fail(absl::InvalidArgumentError(
            fmt::format("--workloads: {}", std::string(workload.status().message()))));
      }
      options.workloads.push_back(*workload);
    }
  }
  for (uint32_t bytes : flags.op_bytes) {
    if (bytes == 0 || bytes > (1u << 20)) {
      return Fail(
          absl::InvalidArgumentError(fmt::format("--op-bytes {}: expected 1 to 1048576", bytes)));
    }
  }
  options.op_bytes = flags.op_bytes;
  options.seconds_per_cell = flags.seconds;
  options.max_ops_per_cell = flags.max_ops;

  std::unique_ptr<BenchDir> dir;
  auto facts = PrepareDir(flags.dir, &dir);
  if (!facts.ok()) return Fail(facts.status());
  UseFifoScheduling(flags.fifo);
  auto cells = RunBarrierBench(options, *facts, *dir);
  if (!cells.ok()) return Fail(cells.status());
  fmt::print("\n{}", FormatBarrierTable(*cells));
  if (!flags.json.empty()) {
    absl::Status status =
        WriteFile(flags.json, BarrierResultsToJson(*facts, *cells).dump(2) + "\n", "--json");
    if (!status.ok()) return Fail(status);
  }
  return 0;
}

struct CommitFlags {
  std::string dir = kDefaultParentDir;
  std::vector<std::string> engines;
  std::vector<std::string> barriers = {"fdatasync"};
  std::vector<int> threads = {1, 2, 4, 8, 16, 32, 64};
  std::vector<uint32_t> record_bytes = {128, 4096};
  std::string wal_prealloc = "both";
  std::vector<uint64_t> wal_segment_mib;
  std::vector<uint64_t> wal_release_every;
  double seconds = 1.0;
  double warmup = 0.2;
  int reps = 3;
  std::string json;
  std::string svg;
  bool fifo = false;
};

int RunCommit(const CommitFlags& flags) {
  std::vector<std::string> engines = flags.engines;
  if (engines.empty()) {
    engines = AvailableEngines();
    for (std::string wanted : {"wal", "rocksdb"}) {
      if (std::find(engines.begin(), engines.end(), wanted) == engines.end()) {
        fmt::print("note: engine {} is not built into this walbench (see --help); running {}\n",
                   wanted, fmt::join(engines, ","));
      }
    }
  }
  auto barriers = ParseBarriers(flags.barriers);
  if (!barriers.ok()) return Fail(barriers.status());
  std::vector<bool> prealloc;
  if (flags.wal_prealloc == "both") {
    prealloc = {true, false};
  } else if (flags.wal_prealloc == "on") {
    prealloc = {true};
  } else if (flags.wal_prealloc == "off") {
    prealloc = {false};
  } else {
    return Fail(absl::InvalidArgumentError(
        fmt::format("--wal-prealloc {}: expected both, on or off", flags.wal_prealloc)));
  }
  for (int t : flags.threads) {
    if (t < 1 || t > 1024) {
      return Fail(absl::InvalidArgumentError(fmt::format("--threads {}: expected 1 to 1024", t)));
    }
  }
  for (uint32_t bytes : flags.record_bytes) {
    if (bytes == 0 || bytes > (1u << 20)) {
      return Fail(absl::InvalidArgumentError(
          fmt::format("--record-bytes {}: expected 1 to 1048576", bytes)));
    }
  }
  CommitBenchOptions options;
  auto configs = MakeEngineConfigs(engines, *barriers, prealloc);
  if (!configs.ok()) return Fail(configs.status());
  // Each WAL config once per --wal-segment-mib value (none given: the WAL's default size).
  // and once per --wal-release-every value.
  const std::vector<uint64_t> segment_mibs =
      flags.wal_segment_mib.empty() ? std::vector<uint64_t>{0} : flags.wal_segment_mib;
  const std::vector<uint64_t> release_everys =
      flags.wal_release_every.empty() ? std::vector<uint64_t>{0} : flags.wal_release_every;
  for (const EngineConfig& config : *configs) {
    if (config.engine != "wal") {
      options.configs.push_back(config);
      continue;
    }
    for (uint64_t mib : segment_mibs) {
      for (uint64_t every : release_everys) {
        EngineConfig variant = config;
        variant.wal_segment_bytes = mib << 20;
        variant.wal_release_every = every;
        options.configs.push_back(variant);
      }
    }
  }
  options.threads = flags.threads;
  options.record_bytes = flags.record_bytes;
  options.seconds = flags.seconds;
  options.warmup_seconds = flags.warmup;
  options.reps = flags.reps;

  std::unique_ptr<BenchDir> dir;
  auto facts = PrepareDir(flags.dir, &dir);
  if (!facts.ok()) return Fail(facts.status());
  UseFifoScheduling(flags.fifo);
  auto results = RunCommitBench(options, *facts, *dir);
  if (!results.ok()) return Fail(results.status());
  fmt::print("\n{}", FormatCommitTable(*results));
  if (!flags.json.empty()) {
    absl::Status status = WriteFile(
        flags.json, CommitResultsToJson(*facts, options, *results).dump(2) + "\n", "--json");
    if (!status.ok()) return Fail(status);
  }
  if (!flags.svg.empty()) {
    absl::Status status = WriteFile(flags.svg, RenderSvg(CommitPlotPanels(*results)), "--svg");
    if (!status.ok()) return Fail(status);
  }
  return 0;
}

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
#if !POWERCUT_WALBENCH_HAVE_VM
  (void)workload;
  (void)flags;
  return Fail(absl::UnimplementedError(
      "cache: this walbench was built without the VM crash domain (harness/vm); use --local"));
#else
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
#ifdef POWERCUT_VM_AGENT_PATH
  options.agent_hint = POWERCUT_VM_AGENT_PATH;
#endif
  fmt::print("walbench cache: {} on/off pair(s) of VM boots, drive images under {}\n", flags.reps,
             flags.dir);
  std::fflush(stdout);
  auto report = RunCacheInVm(options);
  if (!report.ok()) return Fail(report.status());
  fmt::print("{}", FormatVmCacheReport(*report));
  if (!flags.json.empty()) {
    absl::Status status =
        WriteFile(flags.json, VmCacheReportToJson(options, *report).dump(2) + "\n", "--json");
    if (!status.ok()) return Fail(status);
  }
  return 0;
#endif
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
  if (!flags.json.empty()) {
    absl::Status status =
        WriteFile(flags.json, CacheWorkloadResultToJson(*result).dump(2) + "\n", "--json");
    if (!status.ok()) return Fail(status);
  }
  if (flags.result_line) {
    fmt::print("walbench-cache-result {}\n", CacheWorkloadResultToJson(*result).dump());
  }
  return 0;
}

int Main(int argc, char** argv) {
  CLI::App app{
      "walbench: the cost of durability barriers, group commit against RocksDB and the "
      "bare device, and the drive-cache effect (docs/walbench.md)"};
  app.require_subcommand(1);

  BarriersFlags barriers_flags;
  CLI::App* barriers = app.add_subcommand(
      "barriers",
      "every barrier mode x {overwrite, rewrite, append} x op size: ops/s, latency, "
      "device flushes per op, and whether the numbers are physically plausible");
  barriers
      ->add_option("--dir", barriers_flags.dir,
                   "directory on the file system to measure (a scratch subdirectory is made "
                   "and removed)")
      ->capture_default_str();
  barriers->add_option("--barriers", barriers_flags.barriers, "barrier modes (default: all)")
      ->delimiter(',');
  barriers
      ->add_option("--workloads", barriers_flags.workloads,
                   "overwrite,rewrite,append (default: all)")
      ->delimiter(',');
  barriers->add_option("--op-bytes", barriers_flags.op_bytes, "write sizes")
      ->delimiter(',')
      ->capture_default_str();
  barriers->add_option("--seconds", barriers_flags.seconds, "time per cell")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  barriers->add_option("--max-ops", barriers_flags.max_ops, "operation cap per cell")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  barriers->add_option("--json", barriers_flags.json, "write results as JSON to this file");
  barriers->add_flag("--fifo", barriers_flags.fifo,
                     "run under SCHED_FIFO (root): on a busy machine, measure the disk, not the "
                     "scheduler");

  CommitFlags commit_flags;
  CLI::App* commit = app.add_subcommand(
      "commit",
      "durable commits/s against threads: the WAL, RocksDB sync=true and the bare "
      "pwrite+fdatasync floor, interleaved A/B/A/B");
  commit->add_option("--dir", commit_flags.dir, "directory on the file system to measure")
      ->capture_default_str();
  commit
      ->add_option("--engines", commit_flags.engines,
                   "wal,rocksdb,bare (default: every engine built in)")
      ->delimiter(',');
  commit->add_option("--barriers", commit_flags.barriers, "barrier modes of wal and bare")
      ->delimiter(',')
      ->capture_default_str();
  commit->add_option("--threads", commit_flags.threads, "committing thread counts")
      ->delimiter(',')
      ->capture_default_str();
  commit->add_option("--record-bytes", commit_flags.record_bytes, "record (value) sizes")
      ->delimiter(',')
      ->capture_default_str();
  commit
      ->add_option("--wal-prealloc", commit_flags.wal_prealloc,
                   "WAL segment preallocation: both, on or off")
      ->capture_default_str();
  commit
      ->add_option("--wal-segment-mib", commit_flags.wal_segment_mib,
                   "WAL segment sizes in MiB, one WAL config each (default: the WAL's own)")
      ->delimiter(',')
      ->check(CLI::Range(1, 4096));
  commit
      ->add_option("--wal-release-every", commit_flags.wal_release_every,
                   "commits between the WAL engine's ReleaseUpTo calls, one WAL config each "
                   "(default: 64)")
      ->delimiter(',')
      ->check(CLI::Range(1, 1 << 30));
  commit->add_option("--seconds", commit_flags.seconds, "timed window per run")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  commit->add_option("--warmup", commit_flags.warmup, "untimed seconds before each window")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  commit->add_option("--reps", commit_flags.reps, "interleaved repetitions (medians)")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  commit->add_option("--json", commit_flags.json, "write results as JSON to this file");
  commit->add_option("--svg", commit_flags.svg, "write a plot of commits/s vs threads (SVG)");
  commit->add_flag("--fifo", commit_flags.fifo,
                   "run under SCHED_FIFO (root): on a busy machine, measure the disk, not the "
                   "scheduler");

  CacheFlags cache_flags;
  CLI::App* cache = app.add_subcommand(
      "cache",
      "sequential block writes and durable commits in the VM with the virtual drive's "
      "write cache on (qemu cache=writeback) and off (writethrough), boots interleaved");
  cache->add_flag("--local", cache_flags.local,
                  "run the two workloads on --dir of this machine instead of in the VM");
  cache
      ->add_option("--dir", cache_flags.dir,
                   "with --local: directory on the file system to measure; in the VM mode: "
                   "where the virtual drives' image files live (a disk, not tmpfs)")
      ->capture_default_str();
  cache->add_option("--mib", cache_flags.mib, "size of the sequential write")
      ->check(CLI::Range(1, 65536))
      ->capture_default_str();
  cache
      ->add_option("--commit-file-mib", cache_flags.commit_file_mib,
                   "size of the preallocated file the commits wrap around in")
      ->check(CLI::Range(1, 65536))
      ->capture_default_str();
  cache->add_option("--seconds", cache_flags.seconds, "time of the durable-commit loop")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cache->add_option("--reps", cache_flags.reps, "VM mode: on/off pairs of boots (medians)")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  cache->add_option("--fs", cache_flags.fs, "VM mode: the guest file system (ext4, xfs, btrfs)")
      ->capture_default_str();
  cache->add_option("--json", cache_flags.json, "write the results as JSON to this file");
  cache->add_flag("--fifo", cache_flags.fifo, "with --local: run under SCHED_FIFO (root)");
  cache->add_flag("--result-line", cache_flags.result_line,
                  "with --local: also print the result as one JSON line (the VM mode reads it)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (barriers->parsed()) return RunBarriers(barriers_flags);
  if (commit->parsed()) return RunCommit(commit_flags);
  if (cache->parsed()) return RunCache(cache_flags);
  return kExitUsage;
}

}  // namespace
}  // namespace powercut::walbench

int main(int argc, char** argv) { return powercut::walbench::Main(argc, argv); }
