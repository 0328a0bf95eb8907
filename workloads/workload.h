// One built-in workload of `powercut-workload` (docs/workloads.md): its options, its run form
// (commits, acking each on POWERCUT_ACK_FD), its check form (have/corrupt lines for a crash image)
// and its entries in the catalog with the verdicts each setting is expected to get.
//
// main.cc registers every workload of AllWorkloads() as a subcommand "<name> run|check"; the
// catalog (catalog.h) is the concatenation of their CatalogEntries(). Adding a workload is one
// file implementing this interface plus one line in workload.cc.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "workloads/ack_channel.h"
#include "workloads/catalog.h"
#include "workloads/check_result.h"

namespace powercut::workloads {

// The help texts of a workload's subcommands.
struct WorkloadHelp {
  std::string_view name;   // the subcommand, e.g. "xlog"
  std::string_view about;  // its one-line description
  std::string_view run;    // what the run form does
  std::string_view check;  // what the check form prints
};

class Workload {
 public:
  virtual ~Workload() = default;

  virtual WorkloadHelp help() const = 0;
  // Adds the run form's options to `run` (their values are kept in the workload object) and the
  // check form's to `check`.
  virtual void AddOptions(CLI::App& run, CLI::App& check) = 0;
  // The run form, with the options parsed. InvalidArgument is a usage error (exit 2).
  virtual absl::Status Run(const Target& target, AckChannel& acks) = 0;
  // The check form, with the options parsed. An error means the store does not recover.
  virtual absl::StatusOr<CheckResult> Check(const Target& target) = 0;
  // This workload's configurations, in catalog order.
  virtual std::vector<WorkloadConfig> CatalogEntries() const = 0;
};

// A workload that keeps its store in a directory of the file system under test (POWERCUT_DIR):
// rocksdb, sqlite and wal. Run and Check refuse a raw device (RequireDir) before the store is
// touched.
class DirectoryWorkload : public Workload {
 public:
  absl::Status Run(const Target& target, AckChannel& acks) final;
  absl::StatusOr<CheckResult> Check(const Target& target) final;

 protected:
  virtual absl::Status RunIn(const std::string& dir, AckChannel& acks) = 0;
  virtual absl::StatusOr<CheckResult> CheckIn(const std::string& dir) = 0;
};

// A DirectoryWorkload whose store is driven by the free functions of its header: the run form is
// `run(dir, options, acks)` with the parsed `options_`, the check form is `check(dir)` (rocksdb,
// sqlite). The subclass adds the help, the options and the catalog entries.
template <typename Options,
          absl::Status (*run)(const std::string& dir, const Options& options, AckChannel& acks),
          absl::StatusOr<CheckResult> (*check)(const std::string& dir)>
class StoreWorkload : public DirectoryWorkload {
 protected:
  absl::Status RunIn(const std::string& dir, AckChannel& acks) override {
    return run(dir, options_, acks);
  }
  absl::StatusOr<CheckResult> CheckIn(const std::string& dir) override { return check(dir); }

  Options options_;
};

// The run options the workloads share, each added the same way.
// --barrier NAME (every barrier of wal/barrier.h listed in the help).
void AddBarrierOption(CLI::App& run, std::string& barrier);
// --count N (N >= 1); `what` is its help, e.g. "keys to put".
void AddCountOption(CLI::App& run, uint64_t& count, const std::string& what);
// --threads T (1..1024) concurrent `who`, e.g. "writers".
void AddThreadsOption(CLI::App& run, int& threads, const std::string& who);
// --value-size and --seed of the self-verifying payloads; `what` is "value" or "payload".
void AddPayloadOptions(CLI::App& run, size_t& value_size, uint64_t& seed, const std::string& what);

// Every workload, in the order of the command line (xlog, rocksdb, sqlite, wal, then the
// databases: postgres, redis, lmdb, etcd).
std::vector<std::unique_ptr<Workload>> AllWorkloads();

// One per file: xlog_workload.cc, rocksdb_workload.cc, sqlite_workload.cc, wal_workload.cc.
std::unique_ptr<Workload> MakeXlogWorkload();
std::unique_ptr<Workload> MakeRocksDbWorkload();
std::unique_ptr<Workload> MakeSqliteWorkload();
std::unique_ptr<Workload> MakeWalWorkload();
// The database servers and libraries as Debian ships them (docs/your-database.md).
std::unique_ptr<Workload> MakePostgresWorkload();
std::unique_ptr<Workload> MakeRedisWorkload();
std::unique_ptr<Workload> MakeLmdbWorkload();
// The failing-disk control: retries fdatasync after EIO, then acks (retry_workload.cc).
std::unique_ptr<Workload> MakeRetryWorkload();
std::unique_ptr<Workload> MakeEtcdWorkload();
std::unique_ptr<Workload> MakeTwoDiskWorkload();

}  // namespace powercut::workloads
