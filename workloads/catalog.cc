#include "workloads/catalog.h"

#include <fmt/format.h>

#include <cstdint>
#include <utility>

#include "workloads/workload.h"

namespace powercut::workloads {

void ExpectBarrierVerdicts(wal::Barrier barrier, bool extends_file, WorkloadConfig& c) {
  if (wal::IsDurableWithVolatileCache(barrier)) {
    c.cache_off = Expectation::kSurvives;
    c.cache_on = Expectation::kSurvives;
    // Except where the first O_DIRECT|O_DSYNC overwrite after open may be acked with neither a
    // flush nor FUA (f2fs, Linux 6.1; measured: docs/results.md, "f2fs").
    if (barrier == wal::Barrier::kDirectDsync && !extends_file) {
      c.cache_on_dsync_unflushed = Expectation::kMayLose;
    }
    return;
  }
  // O_DIRECT and sync_file_range put the data on the device but never flush its cache, and never
  // commit the metadata an extending write needs.
  const bool reaches_device =
      barrier == wal::Barrier::kDirect || barrier == wal::Barrier::kSyncFileRange;
  c.cache_off = reaches_device && !extends_file ? Expectation::kSurvives : Expectation::kLoses;
  // Except where an overwrite goes out of place (btrfs: copy-on-write, and a write into a
  // preallocated extent converts it): the new data is only referenced once a transaction
  // commits, which neither O_DIRECT nor sync_file_range asks for. Measured: docs/results.md, xfs
  // and btrfs.
  if (c.cache_off == Expectation::kSurvives) c.cache_off_out_of_place = Expectation::kLoses;
  c.cache_on = Expectation::kLoses;
}

std::vector<WorkloadConfig> Catalog() {
  // Catalog order, as `list` prints it: xlog (overwrite, then append), wal, rocksdb, sqlite, then
  // the database servers and libraries, then the two-disk controls.
  std::vector<WorkloadConfig> catalog;
  for (const auto& make : {MakeXlogWorkload, MakeWalWorkload, MakeRocksDbWorkload,
                           MakeSqliteWorkload, MakePostgresWorkload, MakeRedisWorkload,
                           MakeLmdbWorkload, MakeEtcdWorkload, MakeTwoDiskWorkload}) {
    for (WorkloadConfig& c : make()->CatalogEntries()) catalog.push_back(std::move(c));
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
