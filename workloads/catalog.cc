#include "workloads/catalog.h"

#include <fmt/format.h>

#include <cstdint>

#include "wal/barrier.h"

namespace powercut::workloads {
namespace {

constexpr Expectation kS = Expectation::kSurvives;
constexpr Expectation kL = Expectation::kLoses;
constexpr Expectation kM = Expectation::kMayLose;

// Power-cut verdicts of a barrier for a write that overwrites preallocated data (xlog overwrite,
// the WAL's preallocated segments) or that extends the file (xlog append).
void BarrierVerdicts(wal::Barrier barrier, bool extends_file, WorkloadConfig& c) {
  if (wal::IsDurableWithVolatileCache(barrier)) {
    c.cache_off = kS;
    c.cache_on = kS;
    return;
  }
  // O_DIRECT and sync_file_range put the data on the device but never flush its cache, and never
  // commit the metadata an extending write needs.
  const bool reaches_device =
      barrier == wal::Barrier::kDirect || barrier == wal::Barrier::kSyncFileRange;
  c.cache_off = reaches_device && !extends_file ? kS : kL;
  // Except on btrfs: an overwrite is copy-on-write there (and a write into a preallocated
  // extent converts it), so the new data is only referenced once a transaction commits, which
  // neither O_DIRECT nor sync_file_range asks for. Measured: docs/results.md, xfs and btrfs.
  if (c.cache_off == kS) c.cache_off_by_fs["btrfs"] = kL;
  c.cache_on = kL;
}

}  // namespace

std::string_view ExpectationName(Expectation e) {
  switch (e) {
    case Expectation::kSurvives:
      return "survives";
    case Expectation::kLoses:
      return "loses";
    case Expectation::kMayLose:
      return "may-lose";
  }
  return "?";
}

std::vector<WorkloadConfig> Catalog() {
  std::vector<WorkloadConfig> catalog;
  // xlog overwrite, xlog append, wal: one configuration per barrier each.
  for (const bool append : {false, true}) {
    for (wal::Barrier barrier : wal::AllBarriers()) {
      const std::string name(wal::BarrierName(barrier));
      WorkloadConfig c{.name = (append ? "xlog-append-" : "xlog-") + name,
                       .workload = "xlog",
                       .setting = name,
                       .run_args = {"--barrier", name}};
      if (append) c.run_args.emplace_back("--append");
      BarrierVerdicts(barrier, /*extends_file=*/append, c);
      catalog.push_back(c);
    }
  }
  for (wal::Barrier barrier : wal::AllBarriers()) {
    const std::string name(wal::BarrierName(barrier));
    WorkloadConfig c{.name = "wal-" + name,
                     .workload = "wal",
                     .setting = name,
                     .run_args = {"--barrier", name, "--threads", "4"}};
    // Segments are preallocated: every record write overwrites zeros.
    BarrierVerdicts(barrier, /*extends_file=*/false, c);
    catalog.push_back(c);
  }
  catalog.push_back({.name = "rocksdb-sync",
                     .workload = "rocksdb",
                     .setting = "sync=true",
                     .run_args = {"--sync", "true", "--threads", "4"},
                     .cache_off = kS,
                     .cache_on = kS});
  catalog.push_back({.name = "rocksdb-nosync",
                     .workload = "rocksdb",
                     .setting = "sync=false",
                     .run_args = {"--sync", "false", "--threads", "4"}});
  catalog.push_back({.name = "rocksdb-nowal",
                     .workload = "rocksdb",
                     .setting = "disableWAL",
                     .run_args = {"--sync", "false", "--disable-wal"},
                     .process_crash = kL});
  for (const char* journal : {"wal", "delete"}) {
    for (const char* sync : {"extra", "full", "normal", "off"}) {
      WorkloadConfig c{.name = fmt::format("sqlite-{}-{}", journal, sync),
                       .workload = "sqlite",
                       .setting = fmt::format("journal_mode={} synchronous={}", journal, sync),
                       .run_args = {"--journal", journal, "--synchronous", sync}};
      const std::string_view s = sync;
      if (std::string_view(journal) == "wal") {
        if (s == "extra" || s == "full") c.cache_off = c.cache_on = kS;
      } else if (s == "extra") {
        c.cache_off = c.cache_on = kS;
      } else if (s == "full" || s == "normal") {
        // The journal's unlink (the commit point) is not fsynced: only the last ack is at risk.
        c.cache_off = c.cache_on = kM;
      }
      catalog.push_back(c);
    }
  }
  return catalog;
}

std::string RunCommand(const std::string& binary, const WorkloadConfig& config, uint64_t count) {
  std::string command = fmt::format("{} {} run", binary, config.workload);
  for (const std::string& arg : config.run_args) command += " " + arg;
  return command + fmt::format(" --count {}", count);
}

std::string CheckCommand(const std::string& binary, const WorkloadConfig& config) {
  return fmt::format("{} {} check", binary, config.workload);
}

}  // namespace powercut::workloads
