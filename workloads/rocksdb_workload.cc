// The rocksdb workload's command line and catalog entries; its store (RunRocksDb, CheckRocksDb)
// is in rocksdb_store.cc, linked into powercut-workload-clients only.
#include "workloads/rocksdb_workload.h"

#include <memory>
#include <vector>

#include "workloads/workload.h"

namespace powercut::workloads {
namespace {

class RocksDbWorkload final : public StoreWorkload<RocksDbOptions, RunRocksDb, CheckRocksDb> {
 public:
  WorkloadHelp help() const override {
    return {"rocksdb", "RocksDB Put, one key per commit", "Put and ack --count keys",
            "reopen the DB, print have per key"};
  }
  void AddOptions(CLI::App& run, CLI::App& /*check*/) override {
    run.add_option("--sync", options_.sync, "WriteOptions.sync (true|false)")
        ->capture_default_str();
    run.add_flag("--disable-wal", options_.disable_wal, "WriteOptions.disableWAL");
    run.add_flag("--wal-disk", options_.wal_disk,
                 "Options::wal_dir on the second disk ($POWERCUT_DIR_2/rocksdb-wal; powercut run "
                 "--disks 2)");
    AddCountOption(run, options_.count, "keys to put");
    AddThreadsOption(run, options_.threads, "writers");
    AddPayloadOptions(run, options_.value_size, options_.seed, "value");
  }
  std::vector<WorkloadConfig> CatalogEntries() const override {
    return {{.name = "rocksdb-sync",
             .workload = "rocksdb",
             .setting = "sync=true",
             .run_args = {"--sync", "true", "--threads", "4"},
             .cache_off = Expectation::kSurvives,
             .cache_on = Expectation::kSurvives},
            {.name = "rocksdb-nosync",
             .workload = "rocksdb",
             .setting = "sync=false",
             .run_args = {"--sync", "false", "--threads", "4"}},
            {.name = "rocksdb-nowal",
             .workload = "rocksdb",
             .setting = "disableWAL",
             .run_args = {"--sync", "false", "--disable-wal"},
             .process_crash = Expectation::kLoses},
            // wal_dir on its own disk (`--preset multidisk`): RocksDB syncs the WAL file it
            // writes (on disk 2) at each sync Put and the SSTs and MANIFEST (on disk 1) when it
            // creates them, so every acked key is durable on honest disks.
            {.name = "rocksdb-waldisk-sync",
             .workload = "rocksdb",
             .setting = "sync=true, wal_dir on disk 2",
             .run_args = {"--sync", "true", "--threads", "4", "--wal-disk"},
             .cache_off = Expectation::kSurvives,
             .cache_on = Expectation::kSurvives,
             .documented =
                 "RocksDB wiki, Basic Operations / Options::wal_dir: the WAL may live in a "
                 "separate directory (e.g. another disk); WriteOptions.sync syncs it before Put "
                 "returns",
             .disks = 2}};
  }
};

}  // namespace

std::unique_ptr<Workload> MakeRocksDbWorkload() { return std::make_unique<RocksDbWorkload>(); }

}  // namespace powercut::workloads
