// The engines `walbench commit` compares: something that makes one record durable per call and
// may be called from many threads at once.
//
//   wal      powercut's WAL (wal/wal.h) with one barrier mode, preallocated segments or not
//   rocksdb  RocksDB Put with WriteOptions.sync=true, with or without enable_pipelined_write
//   bare     the device's floor: pwrite + barrier on a preallocated file; with several threads a
//            bare leader/follower group-commit loop (one leader writes everyone's records and
//            issues one barrier)
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "wal/barrier.h"

namespace powercut::walbench {

struct EngineConfig {
  std::string engine;  // "wal", "rocksdb" or "bare"
  wal::Barrier barrier = wal::Barrier::kFdatasync;
  bool preallocate = true;         // wal only
  bool pipelined = false;          // rocksdb only
  uint64_t wal_segment_bytes = 0;  // wal only; 0: WalOptions' default
  // wal only: ReleaseUpTo(DurableLsn()) after this many commits (of all threads); 0: the
  // engine's default (64). Large values leave the preparer nothing to recycle.
  uint64_t wal_release_every = 0;

  // A short unique name for tables and plots: "wal/fdatasync", "wal/fdatasync/noprealloc",
  // "rocksdb", "rocksdb/pipelined", "bare/fdatasync".
  std::string Label() const;
};

class CommitEngine {
 public:
  virtual ~CommitEngine() = default;

  // Makes `record` durable. Called concurrently; `thread` (0..threads-1) is the caller's index.
  virtual absl::Status Commit(int thread, absl::Span<const uint8_t> record) = 0;

  // Barrier syscalls the engine issued so far (fdatasync, fsync, O_DSYNC writes, ...), counted in
  // the engine itself.
  virtual uint64_t BarrierCount() const = 0;

  virtual absl::Status Close() = 0;
};

// Which engines this binary has (rocksdb and wal depend on what was found at build time).
std::vector<std::string> AvailableEngines();

// Opens `config` in the empty directory `dir` for `threads` committing threads. An engine this
// binary was built without fails with a message saying how to get it.
absl::StatusOr<std::unique_ptr<CommitEngine>> OpenEngine(const EngineConfig& config,
                                                         const std::string& dir, int threads);

// Engine-specific openers (engine_*.cc).
absl::StatusOr<std::unique_ptr<CommitEngine>> OpenBareEngine(const EngineConfig& config,
                                                             const std::string& dir, int threads);
absl::StatusOr<std::unique_ptr<CommitEngine>> OpenRocksDbEngine(const EngineConfig& config,
                                                                const std::string& dir);
absl::StatusOr<std::unique_ptr<CommitEngine>> OpenWalEngine(const EngineConfig& config,
                                                            const std::string& dir);

}  // namespace powercut::walbench
