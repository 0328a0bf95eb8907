// The RocksDB engine: DB::Put with WriteOptions.sync=true, RocksDB's own group commit.
//
// Keys are 16 bytes (thread, sequence), values are the record, so the log carries the same
// payload bytes as the other engines plus RocksDB's own framing. Options are RocksDB's defaults
// except create_if_missing, enable_pipelined_write (the variant under test) and statistics, whose
// WAL_FILE_SYNCED ticker counts the WAL syncs (RocksDB syncs its WAL with fdatasync by default).
#include <fmt/format.h>
#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/statistics.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "bench/walbench/commit_engine.h"

namespace powercut::walbench {
namespace {

class RocksDbEngine : public CommitEngine {
 public:
  RocksDbEngine(std::unique_ptr<rocksdb::DB> db, std::shared_ptr<rocksdb::Statistics> stats)
      : db_(std::move(db)), stats_(std::move(stats)), next_key_(kMaxThreads) {
    write_options_.sync = true;
  }

  absl::Status Commit(int thread, absl::Span<const uint8_t> record) override {
    if (thread < 0 || thread >= kMaxThreads) {
      return absl::InvalidArgumentError(fmt::format("thread index {} out of range", thread));
    }
    // Per-thread counters: each is touched by one thread only.
    const uint64_t seq = next_key_[static_cast<size_t>(thread)].value++;
    char key[16];
    for (int i = 0; i < 4; ++i) key[i] = static_cast<char>(thread >> (24 - 8 * i));
    for (int i = 0; i < 8; ++i) key[4 + i] = static_cast<char>(seq >> (56 - 8 * i));
    for (int i = 12; i < 16; ++i) key[i] = 0;
    rocksdb::Status s =
        db_->Put(write_options_, rocksdb::Slice(key, sizeof(key)),
                 rocksdb::Slice(reinterpret_cast<const char*>(record.data()), record.size()));
    if (!s.ok()) return absl::InternalError(fmt::format("rocksdb Put: {}", s.ToString()));
    return absl::OkStatus();
  }

  uint64_t BarrierCount() const override {
    return stats_->getTickerCount(rocksdb::WAL_FILE_SYNCED);
  }

  absl::Status Close() override {
    rocksdb::Status s = db_->Close();
    if (!s.ok()) return absl::InternalError(fmt::format("rocksdb Close: {}", s.ToString()));
    return absl::OkStatus();
  }

 private:
  static constexpr int kMaxThreads = 1024;
  struct alignas(64) Counter {
    uint64_t value = 0;
  };

  std::unique_ptr<rocksdb::DB> db_;
  std::shared_ptr<rocksdb::Statistics> stats_;
  rocksdb::WriteOptions write_options_;
  std::vector<Counter> next_key_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<CommitEngine>> OpenRocksDbEngine(const EngineConfig& config,
                                                                const std::string& dir) {
  rocksdb::Options options;
  options.create_if_missing = true;
  options.enable_pipelined_write = config.pipelined;
  options.statistics = rocksdb::CreateDBStatistics();
  rocksdb::DB* raw = nullptr;
  const std::string path = dir + "/rocksdb";
  rocksdb::Status s = rocksdb::DB::Open(options, path, &raw);
  if (!s.ok()) {
    return absl::InternalError(fmt::format("rocksdb Open({}): {}", path, s.ToString()));
  }
  return std::unique_ptr<CommitEngine>(
      new RocksDbEngine(std::unique_ptr<rocksdb::DB>(raw), options.statistics));
}

}  // namespace powercut::walbench
