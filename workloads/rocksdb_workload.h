// The rocksdb workload: RocksDB (librocksdb-dev) Put, one key per commit.
//
// Commit i puts key "k<i>" with a self-verifying value (workloads/payload.h) and acks i
// once Put returns OK. Whether that ack is honest depends on the options under test:
// WriteOptions.sync=true makes Put fsync the RocksDB WAL; sync=false leaves it in the page cache;
// disableWAL (which needs sync=false) leaves it in the memtable only (a process crash
// loses it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "workloads/ack_channel.h"
#include "workloads/check_result.h"

namespace powercut::workloads {

// The database directory the workload creates inside POWERCUT_DIR.
inline constexpr char kRocksDbDirName[] = "rocksdb";

// With --wal-disk, the WAL directory (Options::wal_dir) on the second disk of a set
// (POWERCUT_DIR_2, docs/protocol.md): RocksDB's log on its own device.
inline constexpr char kRocksDbWalDirName[] = "rocksdb-wal";

struct RocksDbOptions {
  bool sync = true;
  bool disable_wal = false;
  bool wal_disk = false;  // wal_dir = POWERCUT_DIR_2/rocksdb-wal
  uint64_t count = 1000;
  int threads = 1;
  size_t value_size = 100;
  uint64_t seed = 1;
};

// Creates the DB (InvalidArgument if it exists), then `threads` writers put ids 1..count (writer
// t takes ids t+1, t+1+threads, ...), each acked after its Put returns. The first failed Put
// stops every writer: that id and all later ones are never acked; the error is returned.
absl::Status RunRocksDb(const std::string& dir, const RocksDbOptions& options, AckChannel& acks);

// Opens the DB normally (so RocksDB's WAL recovery runs; with the WAL directory on the second disk
// when POWERCUT_DIR_2/rocksdb-wal exists) and scans it with checksum
// verification: have <id> for each key whose value verifies, corrupt <id> for one that does not.
// No CURRENT file: nothing was created (no have lines, OK). DataLoss when Open or the scan fails.
absl::StatusOr<CheckResult> CheckRocksDb(const std::string& dir);

}  // namespace powercut::workloads
