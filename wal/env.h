// The file-system interface under the WAL and recovery (in the spirit of LevelDB's Env).
//
// Everything the WAL does to storage goes through an Env, so that tests can swap in
// FaultInjectionEnv (wal/testing/fault_injection_env.h): it keeps unsynced data apart, simulates a
// power cut (drop unsynced data, keep a random prefix, tear at 512 B) and injects EIO/ENOSPC on any
// call. PosixEnv (wal/posix_env.h) is the real thing.
//
// Contract for implementations: every method is thread-safe on distinct files; a File's methods may
// be called concurrently for disjoint byte ranges. Errors are absl::Status whose message names the
// path and the syscall (e.g. "fdatasync(/d/wal-…log): Input/output error").
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace powercut::wal {

struct OpenOptions {
  bool create = false;     // O_CREAT
  bool exclusive = false;  // O_EXCL (with create)
  bool read_only = false;
  bool direct = false;    // O_DIRECT: buffers, offsets and sizes must be block-aligned
  bool dsync = false;     // O_DSYNC: every write returns only once durable
  bool io_uring = false;  // the file will be used with WriteAndFdatasyncLinked via io_uring
};

enum class SyncKind {
  kFdatasync,
  kFsync,
  // sync_file_range(SYNC_FILE_RANGE_WAIT_BEFORE|WRITE|WAIT_AFTER) over [offset, offset+length).
  // Writes back data pages only: no metadata, no device cache flush.
  kSyncFileRange,
};

class File {
 public:
  virtual ~File() = default;

  // Writes all of `data` at `offset` (loops over short writes; a write that makes no progress is
  // an error, ENOSPC included). With `dsync`, uses pwritev2(RWF_DSYNC).
  virtual absl::Status Write(uint64_t offset, absl::Span<const uint8_t> data,
                             bool dsync = false) = 0;

  // Reads up to `size` bytes at `offset` into `out`; returns the number read (short at EOF).
  virtual absl::StatusOr<size_t> Read(uint64_t offset, size_t size, uint8_t* out) = 0;

  virtual absl::Status Sync(SyncKind kind, uint64_t offset = 0, uint64_t length = 0) = 0;

  // One write linked to an fdatasync, submitted together (io_uring IOSQE_IO_LINK). The default
  // implementation is Write + Sync(kFdatasync).
  virtual absl::Status WriteAndFdatasyncLinked(uint64_t offset, absl::Span<const uint8_t> data);

  virtual absl::StatusOr<uint64_t> Size() = 0;
  virtual absl::Status Truncate(uint64_t size) = 0;
  virtual absl::Status Close() = 0;
  virtual const std::string& path() const = 0;
};

class Env {
 public:
  virtual ~Env() = default;

  // The process-wide POSIX Env (never deleted).
  static Env* Default();

  virtual absl::StatusOr<std::unique_ptr<File>> Open(const std::string& path,
                                                     const OpenOptions& options) = 0;
  virtual absl::Status Rename(const std::string& from, const std::string& to) = 0;
  virtual absl::Status Remove(const std::string& path) = 0;
  // fsync on the directory itself, so that creates/renames/removes in it are durable.
  virtual absl::Status SyncDir(const std::string& dir) = 0;
  virtual absl::Status CreateDir(const std::string& dir) = 0;
  virtual absl::StatusOr<bool> Exists(const std::string& path) = 0;
  virtual absl::StatusOr<bool> IsDirectory(const std::string& path) = 0;
  // Names (not paths) of the entries in `dir`, without "." and "..", sorted.
  virtual absl::StatusOr<std::vector<std::string>> ListDir(const std::string& dir) = 0;
  virtual absl::StatusOr<uint64_t> FileSize(const std::string& path) = 0;
  // The logical block size for O_DIRECT alignment on the file system holding `dir`.
  virtual absl::StatusOr<uint32_t> BlockSize(const std::string& dir) = 0;
};

// A File that forwards every call to another File it owns (like LevelDB's EnvWrapper, for
// files): subclasses override only the calls they watch or change. WriteAndFdatasyncLinked is
// forwarded whole, so the target keeps its own implementation (e.g. io_uring) and its Write/Sync
// are not routed back through the wrapper.
class FileWrapper : public File {
 public:
  explicit FileWrapper(std::unique_ptr<File> target) : target_(std::move(target)) {}

  File* target() const { return target_.get(); }

  absl::Status Write(uint64_t offset, absl::Span<const uint8_t> data, bool dsync) override {
    return target_->Write(offset, data, dsync);
  }
  absl::StatusOr<size_t> Read(uint64_t offset, size_t size, uint8_t* out) override {
    return target_->Read(offset, size, out);
  }
  absl::Status Sync(SyncKind kind, uint64_t offset, uint64_t length) override {
    return target_->Sync(kind, offset, length);
  }
  absl::Status WriteAndFdatasyncLinked(uint64_t offset, absl::Span<const uint8_t> data) override {
    return target_->WriteAndFdatasyncLinked(offset, data);
  }
  absl::StatusOr<uint64_t> Size() override { return target_->Size(); }
  absl::Status Truncate(uint64_t size) override { return target_->Truncate(size); }
  absl::Status Close() override { return target_->Close(); }
  const std::string& path() const override { return target_->path(); }

 private:
  const std::unique_ptr<File> target_;
};

// An Env that forwards every call to another Env (not owned, which must outlive the wrapper), as
// LevelDB's EnvWrapper: subclasses override only the calls they watch or change.
class EnvWrapper : public Env {
 public:
  explicit EnvWrapper(Env* target) : target_(target) {}

  Env* target() const { return target_; }

  absl::StatusOr<std::unique_ptr<File>> Open(const std::string& path,
                                             const OpenOptions& options) override {
    return target_->Open(path, options);
  }
  absl::Status Rename(const std::string& from, const std::string& to) override {
    return target_->Rename(from, to);
  }
  absl::Status Remove(const std::string& path) override { return target_->Remove(path); }
  absl::Status SyncDir(const std::string& dir) override { return target_->SyncDir(dir); }
  absl::Status CreateDir(const std::string& dir) override { return target_->CreateDir(dir); }
  absl::StatusOr<bool> Exists(const std::string& path) override { return target_->Exists(path); }
  absl::StatusOr<bool> IsDirectory(const std::string& path) override {
    return target_->IsDirectory(path);
  }
  absl::StatusOr<std::vector<std::string>> ListDir(const std::string& dir) override {
    return target_->ListDir(dir);
  }
  absl::StatusOr<uint64_t> FileSize(const std::string& path) override {
    return target_->FileSize(path);
  }
  absl::StatusOr<uint32_t> BlockSize(const std::string& dir) override {
    return target_->BlockSize(dir);
  }

 private:
  Env* const target_;
};

}  // namespace powercut::wal
