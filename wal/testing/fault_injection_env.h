// FaultInjectionEnv: an Env for tests that wraps a real Env (usually PosixEnv on a temp dir), keeps
// track of what is not yet durable, simulates a power cut, and injects errors and crash points.
// (The idea is LevelDB's db/fault_injection_test.cc, extended to overwrites and torn writes.)
//
// Durability model (this is the barrier semantics of docs/barriers.md for a drive with a volatile
// write cache that honours flushes; "cache on"):
// - A Write becomes durable only through Sync(kFdatasync), Sync(kFsync), a dsync Write
//   (pwritev2 RWF_DSYNC), any Write on a file opened with OpenOptions::dsync (O_DSYNC, with or
//   without O_DIRECT), or WriteAndFdatasyncLinked.
// - Sync(kSyncFileRange) and O_DIRECT alone do NOT make anything durable: they push data out of
//   the page cache but issue no device cache flush, so the data may still sit in the drive's
//   volatile write cache.
// - A created file, or a renamed one, exists after a power cut only once SyncDir ran on its
//   directory after the create/rename. Un-synced creates are deleted and un-synced renames are
//   undone (newest first). Removes are treated as immediately durable (the WAL never depends on a
//   remove being undone). Renaming onto an existing name is not undone faithfully (the replaced
//   file is gone); the WAL never does that.
//
// All data goes through to the base Env at once (reads see it, like the page cache); the env keeps
// for every un-synced write the bytes it overwrote, and SimulatePowerCut puts those back.
//
// Faults: FailOp makes the Nth (or every) call of one operation fail with EIO or ENOSPC (the call
// has no effect); SetCrashAfter(k) lets k counted calls succeed and fails every later call with
// EIO, as if the machine had died at that point. Counted calls: Open, Write, Sync,
// WriteAndFdatasyncLinked, Truncate, Rename, Remove, SyncDir, CreateDir (reads, listings and stats
// are not counted).
//
// Files are tracked by the path they were opened under: rename a file only while it is closed.
//
// Thread-safe: one mutex serializes every call (so I/O through this env is serialized).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "wal/env.h"

namespace powercut::wal {

enum class FaultOp {
  kOpen,
  kWrite,  // Write, and the write half of WriteAndFdatasyncLinked
  kSync,   // Sync of any kind, and the fdatasync half of WriteAndFdatasyncLinked
  kTruncate,
  kRename,
  kRemove,
  kSyncDir,
  kCreateDir,
  kRead,
};

enum class PowerCutMode {
  kDropUnsynced,  // every un-synced write is lost
  kKeepPrefix,    // a random prefix (in write order) of each file's un-synced writes survives
  kTornPrefix,    // like kKeepPrefix, and the last kept write is torn at a 512-byte boundary
};

// What reached the env, for tests that count barriers.
struct CallCounts {
  uint64_t writes = 0;        // Write calls (dsync or not)
  uint64_t dsync_writes = 0;  // Write(dsync=true) or writes on an O_DSYNC file
  uint64_t fdatasyncs = 0;
  uint64_t fsyncs = 0;
  uint64_t sync_file_ranges = 0;
  uint64_t linked = 0;  // WriteAndFdatasyncLinked
  uint64_t syncdirs = 0;
  uint64_t renames = 0;
  uint64_t opens = 0;
  // Operations that make data durable under the model above (one per fdatasync, fsync, dsync
  // write, linked pair).
  uint64_t barriers() const { return dsync_writes + fdatasyncs + fsyncs + linked; }
};

class FaultInjectionEnv final : public Env {
 public:
  explicit FaultInjectionEnv(Env* base);
  ~FaultInjectionEnv() override;

  // --- fault control ---------------------------------------------------------------------------
  // The `nth` (1-based, counted from now) call of `op` fails with `error_number` (EIO or ENOSPC);
  // with `every`, that call and every later one fails. Replaces an earlier rule for `op`.
  void FailOp(FaultOp op, int nth, int error_number, bool every = false);
  void ClearFaults();
  // Lets `calls` more counted calls succeed, then fails every call with EIO ("machine is dead").
  void SetCrashAfter(uint64_t calls);
  // True once the crash point has been reached.
  bool crashed() const;
  // Counted calls made so far.
  uint64_t counted_calls() const;
  CallCounts counts() const;

  // --- power cut ---------------------------------------------------------------------------------
  // Rewinds the base file system to a state a power cut could leave (see the modes). Files may stay
  // open; call it once the code under test has stopped. Clears the crash point and all fault rules,
  // and forgets un-synced state, so the env can be used for recovery afterwards.
  absl::Status SimulatePowerCut(PowerCutMode mode, uint64_t seed);
  // Treats everything as durable now (e.g. after a set-up phase).
  void MarkAllDurable();

  // --- Env ---------------------------------------------------------------------------------------
  absl::StatusOr<std::unique_ptr<File>> Open(const std::string& path,
                                             const OpenOptions& options) override;
  absl::Status Rename(const std::string& from, const std::string& to) override;
  absl::Status Remove(const std::string& path) override;
  absl::Status SyncDir(const std::string& dir) override;
  absl::Status CreateDir(const std::string& dir) override;
  absl::StatusOr<bool> Exists(const std::string& path) override;
  absl::StatusOr<bool> IsDirectory(const std::string& path) override;
  absl::StatusOr<std::vector<std::string>> ListDir(const std::string& dir) override;
  absl::StatusOr<uint64_t> FileSize(const std::string& path) override;
  absl::StatusOr<uint32_t> BlockSize(const std::string& dir) override;

 private:
  friend class FaultInjectionFile;

  // One write not yet durable: where it went, how big the file was, and what it overwrote
  // (zeros where it extended the file).
  struct PendingWrite {
    uint64_t offset = 0;
    uint64_t size_before = 0;
    std::string before;
  };
  struct FileState {
    std::vector<PendingWrite> pending;
  };
  struct DirOp {
    enum Kind { kCreate, kRename } kind;
    std::string path;  // created path, or rename target
    std::string from;  // rename source
  };

  // Checks crash point and fault rules for one call of `op`; an error means "fail this call".
  absl::Status Admit(FaultOp op, bool counted, const std::string& path)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // `reader` reads `base`'s bytes (a buffered descriptor when `base` is O_DIRECT).
  absl::Status FileWrite(File& base, File& reader, uint64_t offset, absl::Span<const uint8_t> data,
                         bool durable);
  absl::Status FileSync(File& base, SyncKind kind, uint64_t offset, uint64_t length);
  absl::Status FileLinked(File& base, File& reader, uint64_t offset,
                          absl::Span<const uint8_t> data);
  absl::Status FileTruncate(File& base, uint64_t size);
  absl::Status FileRead(File& base);
  // Records `data` about to be written at `offset` as pending (saving what it overwrites), or, for
  // a durable write, folds it into the before-images of older pending writes.
  absl::Status Track(File& base, File& reader, uint64_t offset, absl::Span<const uint8_t> data,
                     bool durable) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Power-cut steps. Undoes a file's un-synced writes newest first, keeping a random prefix
  // (maybe torn) unless `mode` drops them all.
  absl::Status UndoUnsyncedWrites(const std::string& path, FileState& state, PowerCutMode mode,
                                  std::mt19937_64& rng) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Undoes un-synced renames and creates, newest first.
  absl::Status UndoUnsyncedDirOps() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Puts back the bytes `write` overwrote from write.offset + from_byte on, then the old size.
  static absl::Status RestoreBefore(File& file, const PendingWrite& write, uint64_t from_byte);

  Env* const base_;
  mutable absl::Mutex mu_;
  std::map<std::string, FileState> files_ ABSL_GUARDED_BY(mu_);
  std::vector<DirOp> dir_ops_ ABSL_GUARDED_BY(mu_);
  struct Rule {
    int countdown = 0;
    int error_number = 0;
    bool every = false;
    bool active = false;
  };
  std::map<FaultOp, Rule> rules_ ABSL_GUARDED_BY(mu_);
  uint64_t counted_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t crash_after_ ABSL_GUARDED_BY(mu_) = UINT64_MAX;
  bool crashed_ ABSL_GUARDED_BY(mu_) = false;
  CallCounts counts_ ABSL_GUARDED_BY(mu_);
};

}  // namespace powercut::wal
