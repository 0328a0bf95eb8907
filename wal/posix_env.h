// PosixEnv: the real file system, through plain Linux syscalls.
//
// Guarantees: every method issues exactly the syscalls its name says and nothing more (no hidden
// fsyncs), so that what reaches the disk is what the WAL asked for; every error names the syscall,
// the path and strerror(errno), and maps errno to an absl::StatusCode (ENOSPC ->
// kResourceExhausted, EIO -> kUnavailable/kInternal per absl::ErrnoToStatus).
//
// Sync(kSyncFileRange) uses SYNC_FILE_RANGE_WAIT_BEFORE|WRITE|WAIT_AFTER: it writes dirty data
// pages back but issues no device cache flush and commits no metadata, so it is NOT a barrier.
// WriteAndFdatasyncLinked uses io_uring (a write SQE linked with IOSQE_IO_LINK to an fdatasync SQE,
// submitted together) when the build has liburing and the file was opened with io_uring=true.
#pragma once

#include "wal/env.h"

namespace powercut::wal {

class PosixEnv final : public Env {
 public:
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
};

// "syscall(path): strerror" as an absl::Status with the errno's code.
absl::Status PosixError(std::string_view syscall, std::string_view path, int error_number);

}  // namespace powercut::wal
