// RunRocksDb and CheckRocksDb: the half of the rocksdb workload that links librocksdb. It is
// built into powercut-workload-clients only (workloads/README.md, "Two binaries").
#include <fmt/format.h>
#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "base/status_macros.h"
#include "base/tsan_mutex.h"
#include "workloads/payload.h"
#include "workloads/rocksdb_workload.h"

namespace powercut::workloads {
namespace {

std::string DbPath(const std::string& dir) { return fmt::format("{}/{}", dir, kRocksDbDirName); }

// The WAL directory on the second disk of a set, "" when there is none (POWERCUT_DIR_2 unset).
std::string WalDiskPath() {
  const std::string second = SecondDiskDir();
  return second.empty() ? second : fmt::format("{}/{}", second, kRocksDbWalDirName);
}

// Keeps the first error any writer reports.
class FirstError {
 public:
  void Set(absl::Status status) {
    MutexLock lock(&mu_);
    if (status_.ok()) status_ = std::move(status);
  }
  absl::Status Get() const {
    MutexLock lock(&mu_);
    return status_;
  }

 private:
  mutable absl::Mutex mu_;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

absl::Status RunRocksDb(const std::string& dir, const RocksDbOptions& options, AckChannel& acks) {
  if (options.count == 0) return absl::InvalidArgumentError("--count must be at least 1");
  if (options.threads < 1) return absl::InvalidArgumentError("--threads must be at least 1");
  if (options.sync && options.disable_wal) {
    return absl::InvalidArgumentError(
        "--disable-wal needs --sync false: RocksDB refuses sync writes without its WAL");
  }
  const std::string path = DbPath(dir);
  if (::access(path.c_str(), F_OK) == 0) {
    return absl::InvalidArgumentError(fmt::format(
        "{} already exists: the rocksdb workload needs a fresh POWERCUT_DIR (remove it)", path));
  }
  rocksdb::Options db_options;
  db_options.create_if_missing = true;
  db_options.error_if_exists = true;
  if (options.wal_disk) {
    ASSIGN_OR_RETURN(const std::string second, RequireSecondDiskDir("--wal-disk"));
    db_options.wal_dir = fmt::format("{}/{}", second, kRocksDbWalDirName);
  }
  rocksdb::DB* raw_db = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(db_options, path, &raw_db);
  if (!s.ok()) {
    return absl::InternalError(fmt::format("rocksdb Open({}): {}", path, s.ToString()));
  }
  std::unique_ptr<rocksdb::DB> db(raw_db);

  rocksdb::WriteOptions write_options;
  write_options.sync = options.sync;
  write_options.disableWAL = options.disable_wal;
  FirstError first_error;
  std::atomic<bool> stop{false};
  auto writer = [&](uint64_t first_id) {
    for (uint64_t id = first_id; id <= options.count && !stop.load(); id += options.threads) {
      const std::string id_text = std::to_string(id);
      const std::string value =
          MakePayload(id_text, FillerSize(options.seed, id, options.value_size));
      rocksdb::Status put = db->Put(write_options, "k" + id_text, value);
      if (!put.ok()) {
        stop = true;
        first_error.Set(absl::DataLossError(fmt::format(
            "rocksdb Put(k{}) in {}: {}; stopped, no further acks", id, path, put.ToString())));
        return;
      }
      absl::Status acked = acks.Ack(id_text);
      if (!acked.ok()) {
        stop = true;
        first_error.Set(acked);
        return;
      }
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(options.threads));
  for (int t = 0; t < options.threads; ++t) threads.emplace_back(writer, 1 + t);
  for (std::thread& t : threads) t.join();

  s = db->Close();
  if (!s.ok() && first_error.Get().ok()) {
    first_error.Set(absl::DataLossError(fmt::format("rocksdb Close({}): {}", path, s.ToString())));
  }
  return first_error.Get();
}

absl::StatusOr<CheckResult> CheckRocksDb(const std::string& dir) {
  CheckResult result;
  const std::string path = DbPath(dir);
  if (::access((path + "/CURRENT").c_str(), F_OK) != 0) {
    // RocksDB writes CURRENT (by rename, synced) last when it creates a DB: without it, the DB was
    // never created, so nothing was committed.
    result.notes.push_back(fmt::format("{}/CURRENT does not exist: no database was created", path));
    return result;
  }
  rocksdb::Options db_options;
  db_options.create_if_missing = false;
  db_options.paranoid_checks = true;
  if (const std::string wal = WalDiskPath(); !wal.empty() && ::access(wal.c_str(), F_OK) == 0) {
    db_options.wal_dir = wal;  // the run put its WAL on the second disk (--wal-disk)
    result.notes.push_back("WAL directory " + wal);
  }
  rocksdb::DB* raw_db = nullptr;
  // Normal open runs RocksDB's WAL recovery and writes; on a read-only mount, the read-only open
  // replays the WAL into memory instead.
  const bool read_only = OnReadOnlyMount(path);
  if (read_only) result.notes.emplace_back("read-only mount: DB::OpenForReadOnly");
  rocksdb::Status s = read_only ? rocksdb::DB::OpenForReadOnly(db_options, path, &raw_db)
                                : rocksdb::DB::Open(db_options, path, &raw_db);
  if (!s.ok()) {
    return absl::DataLossError(fmt::format(
        "rocksdb Open({}) failed, the database does not recover: {}", path, s.ToString()));
  }
  std::unique_ptr<rocksdb::DB> db(raw_db);
  rocksdb::ReadOptions read_options;
  read_options.verify_checksums = true;
  read_options.fill_cache = false;
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(read_options));
  size_t foreign = 0;
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    const std::string key = it->key().ToString();
    const std::string id = key.size() > 1 && key[0] == 'k' ? key.substr(1) : std::string();
    if (!IsValidAckId(id)) {
      ++foreign;
      continue;
    }
    if (VerifyPayload(id, it->value().ToString())) {
      result.have.push_back(id);
    } else {
      result.corrupt.push_back(id);
      result.notes.push_back(fmt::format("key {}: value does not verify", key));
    }
  }
  if (!it->status().ok()) {
    return absl::DataLossError(
        fmt::format("rocksdb scan of {} failed: {}", path, it->status().ToString()));
  }
  if (foreign > 0) {
    result.notes.push_back(fmt::format("{} key(s) not written by this workload ignored", foreign));
  }
  it.reset();
  s = db->Close();
  if (!s.ok()) {
    return absl::DataLossError(fmt::format("rocksdb Close({}): {}", path, s.ToString()));
  }
  return result;
}

}  // namespace powercut::workloads
