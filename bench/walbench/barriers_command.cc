// walbench barriers: every barrier mode x {overwrite, rewrite, append} x op size
// (docs/walbench.md).
#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

#include "bench/walbench/barrier_bench.h"
#include "bench/walbench/barrier_report.h"
#include "bench/walbench/commands.h"

namespace powercut::walbench::cli {
namespace {

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
  if (absl::Status status = WriteJsonIfAsked(flags.json, BarrierResultsToJson(*facts, *cells));
      !status.ok()) {
    return Fail(status);
  }
  return 0;
}

}  // namespace

void AddBarriersCommand(CLI::App& app, int* exit_code) {
  auto flags = std::make_shared<BarriersFlags>();
  CLI::App* barriers = app.add_subcommand(
      "barriers",
      "every barrier mode x {overwrite, rewrite, append} x op size: ops/s, latency, "
      "device flushes per op, and whether the numbers are physically plausible");
  barriers
      ->add_option("--dir", flags->dir,
                   "directory on the file system to measure (a scratch subdirectory is made "
                   "and removed)")
      ->capture_default_str();
  barriers->add_option("--barriers", flags->barriers, "barrier modes (default: all)")
      ->delimiter(',');
  barriers->add_option("--workloads", flags->workloads, "overwrite,rewrite,append (default: all)")
      ->delimiter(',');
  barriers->add_option("--op-bytes", flags->op_bytes, "write sizes")
      ->delimiter(',')
      ->capture_default_str();
  barriers->add_option("--seconds", flags->seconds, "time per cell")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  barriers->add_option("--max-ops", flags->max_ops, "operation cap per cell")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  barriers->add_option("--json", flags->json, "write results as JSON to this file");
  barriers->add_flag("--fifo", flags->fifo,
                     "run under SCHED_FIFO (root): on a busy machine, measure the disk, not the "
                     "scheduler");
  barriers->callback([flags, exit_code] { *exit_code = RunBarriers(*flags); });
}

}  // namespace powercut::walbench::cli
