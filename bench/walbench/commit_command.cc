// walbench commit: durable commits/s against threads for the WAL, RocksDB and the bare device
// (docs/walbench.md).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "bench/walbench/commands.h"
#include "bench/walbench/commit_bench.h"
#include "bench/walbench/commit_report.h"
#include "bench/walbench/svg_plot.h"

namespace powercut::walbench::cli {
namespace {

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
  if (absl::Status status =
          WriteJsonIfAsked(flags.json, CommitResultsToJson(*facts, options, *results));
      !status.ok()) {
    return Fail(status);
  }
  if (!flags.svg.empty()) {
    absl::Status status = WriteFile(flags.svg, RenderSvg(CommitPlotPanels(*results)), "--svg");
    if (!status.ok()) return Fail(status);
  }
  return 0;
}

}  // namespace

void AddCommitCommand(CLI::App& app, int* exit_code) {
  auto flags = std::make_shared<CommitFlags>();
  CLI::App* commit = app.add_subcommand(
      "commit",
      "durable commits/s against threads: the WAL, RocksDB sync=true and the bare "
      "pwrite+fdatasync floor, interleaved A/B/A/B");
  commit->add_option("--dir", flags->dir, "directory on the file system to measure")
      ->capture_default_str();
  commit
      ->add_option("--engines", flags->engines, "wal,rocksdb,bare (default: every engine built in)")
      ->delimiter(',');
  commit->add_option("--barriers", flags->barriers, "barrier modes of wal and bare")
      ->delimiter(',')
      ->capture_default_str();
  commit->add_option("--threads", flags->threads, "committing thread counts")
      ->delimiter(',')
      ->capture_default_str();
  commit->add_option("--record-bytes", flags->record_bytes, "record (value) sizes")
      ->delimiter(',')
      ->capture_default_str();
  commit
      ->add_option("--wal-prealloc", flags->wal_prealloc,
                   "WAL segment preallocation: both, on or off")
      ->capture_default_str();
  commit
      ->add_option("--wal-segment-mib", flags->wal_segment_mib,
                   "WAL segment sizes in MiB, one WAL config each (default: the WAL's own)")
      ->delimiter(',')
      ->check(CLI::Range(1, 4096));
  commit
      ->add_option("--wal-release-every", flags->wal_release_every,
                   "commits between the WAL engine's ReleaseUpTo calls, one WAL config each "
                   "(default: 64)")
      ->delimiter(',')
      ->check(CLI::Range(1, 1 << 30));
  commit->add_option("--seconds", flags->seconds, "timed window per run")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  commit->add_option("--warmup", flags->warmup, "untimed seconds before each window")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  commit->add_option("--reps", flags->reps, "interleaved repetitions (medians)")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  commit->add_option("--json", flags->json, "write results as JSON to this file");
  commit->add_option("--svg", flags->svg, "write a plot of commits/s vs threads (SVG)");
  commit->add_flag("--fifo", flags->fifo,
                   "run under SCHED_FIFO (root): on a busy machine, measure the disk, not the "
                   "scheduler");
  commit->callback([flags, exit_code] { *exit_code = RunCommit(*flags); });
}

}  // namespace powercut::walbench::cli
