// The xlog workload's I/O: one data block written under each durability barrier (the barrier
// table: which syscalls each wal::Barrier issues, issued directly, not through wal::Env) and the
// small file helpers its setup and checker share.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "wal/barrier.h"
#include "workloads/xlog_format.h"

#if POWERCUT_HAVE_URING
#include <liburing.h>
#endif

namespace powercut::workloads::xlog {

// `call`(`path`) failed with errno `err`: DataLoss for EIO/ENOSPC/EDQUOT (the data may not be on
// the disk), Internal otherwise.
absl::Status ErrnoError(std::string_view call, const std::string& path, int err);

// Closes the fd when it goes out of scope.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd();
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  // Closes now, reporting the error (close can report a deferred write error).
  absl::Status Close(const std::string& path);

 private:
  int fd_;
};

// A kXlogBlockSize buffer aligned for O_DIRECT.
struct AlignedFree {
  void operator()(uint8_t* p) const;
};
using AlignedBlock = std::unique_ptr<uint8_t, AlignedFree>;
AlignedBlock NewAlignedBlock();

absl::Status PwriteAll(int fd, const uint8_t* data, size_t size, uint64_t offset,
                       const std::string& path);
absl::Status Fsync(int fd, const std::string& path);
absl::Status FsyncDir(const std::string& dir);

#if POWERCUT_HAVE_URING
// One write linked (IOSQE_IO_LINK) to an fdatasync, submitted together.
class UringWriter {
 public:
  absl::Status Init();
  ~UringWriter();
  absl::Status WriteAndFdatasync(int fd, const uint8_t* data, uint64_t offset,
                                 const std::string& path);

 private:
  io_uring ring_{};
  bool initialized_ = false;
};
#endif

// Writes one data block and applies the barrier; returns once the barrier has returned.
class BarrierWriter {
 public:
  BarrierWriter(wal::Barrier barrier, std::string path)
      : barrier_(barrier), path_(std::move(path)) {}

  // Opens the file with the flags the barrier needs (O_DSYNC, O_DIRECT).
  absl::Status Open();
  // The write alone, for --ack-first (fdatasync and fsync only); Sync() is its barrier.
  absl::Status WriteWithoutBarrier(const uint8_t* block, uint64_t offset);
  absl::Status Sync();
  // The write and its barrier, as the barrier table says.
  absl::Status Write(const uint8_t* block, uint64_t offset);
  absl::Status Close();

 private:
  const wal::Barrier barrier_;
  const std::string path_;
  std::unique_ptr<Fd> fd_;
#if POWERCUT_HAVE_URING
  UringWriter uring_;
#endif
};

}  // namespace powercut::workloads::xlog
