#include "workloads/xlog_barrier.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "base/status_macros.h"

namespace powercut::workloads::xlog {

using wal::Barrier;

absl::Status ErrnoError(std::string_view call, const std::string& path, int err) {
  std::string message = fmt::format("{}({}): {}", call, path, std::strerror(err));
  if (err == EIO || err == ENOSPC || err == EDQUOT) return absl::DataLossError(message);
  return absl::InternalError(message);
}

Fd::~Fd() {
  if (fd_ >= 0) ::close(fd_);
}

absl::Status Fd::Close(const std::string& path) {
  int fd = fd_;
  fd_ = -1;
  if (fd >= 0 && ::close(fd) != 0) return ErrnoError("close", path, errno);
  return absl::OkStatus();
}

void AlignedFree::operator()(uint8_t* p) const { std::free(p); }

AlignedBlock NewAlignedBlock() {
  auto* p = static_cast<uint8_t*>(std::aligned_alloc(kXlogBlockSize, kXlogBlockSize));
  std::memset(p, 0, kXlogBlockSize);
  return AlignedBlock(p);
}

absl::Status PwriteAll(int fd, const uint8_t* data, size_t size, uint64_t offset,
                       const std::string& path) {
  while (size > 0) {
    ssize_t n = ::pwrite(fd, data, size, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("pwrite", path, errno);
    }
    if (n == 0) return ErrnoError("pwrite", path, ENOSPC);
    data += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return absl::OkStatus();
}

absl::Status Fsync(int fd, const std::string& path) {
  if (::fsync(fd) != 0) return ErrnoError("fsync", path, errno);
  return absl::OkStatus();
}

absl::Status FsyncDir(const std::string& dir) {
  Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0) return ErrnoError("open", dir, errno);
  RETURN_IF_ERROR(Fsync(fd.get(), dir));
  return fd.Close(dir);
}

#if POWERCUT_HAVE_URING
absl::Status UringWriter::Init() {
  int rc = io_uring_queue_init(4, &ring_, 0);
  if (rc < 0) return ErrnoError("io_uring_queue_init", "io_uring", -rc);
  initialized_ = true;
  return absl::OkStatus();
}

UringWriter::~UringWriter() {
  if (initialized_) io_uring_queue_exit(&ring_);
}

absl::Status UringWriter::WriteAndFdatasync(int fd, const uint8_t* data, uint64_t offset,
                                            const std::string& path) {
  io_uring_sqe* write = io_uring_get_sqe(&ring_);
  io_uring_sqe* sync = write == nullptr ? nullptr : io_uring_get_sqe(&ring_);
  if (sync == nullptr) {
    return absl::InternalError(fmt::format("io_uring({}): submission queue full", path));
  }
  io_uring_prep_write(write, fd, data, kXlogBlockSize, offset);
  write->flags |= IOSQE_IO_LINK;
  io_uring_prep_fsync(sync, fd, IORING_FSYNC_DATASYNC);
  int rc = io_uring_submit_and_wait(&ring_, 2);
  if (rc < 0) return ErrnoError("io_uring_submit_and_wait", path, -rc);
  absl::Status status;
  for (int i = 0; i < 2; ++i) {
    io_uring_cqe* cqe = nullptr;
    rc = io_uring_wait_cqe(&ring_, &cqe);
    if (rc < 0) return ErrnoError("io_uring_wait_cqe", path, -rc);
    const int res = cqe->res;
    const bool is_write = i == 0;
    io_uring_cqe_seen(&ring_, cqe);
    if (!status.ok()) continue;
    if (res < 0) {
      status = ErrnoError(is_write ? "io_uring write" : "io_uring fdatasync", path, -res);
    } else if (is_write && res != static_cast<int>(kXlogBlockSize)) {
      status = absl::DataLossError(
          fmt::format("io_uring write({}): short write of {} bytes", path, res));
    }
  }
  return status;
}
#endif

absl::Status BarrierWriter::Open() {
  int flags = O_WRONLY | O_CLOEXEC;
  if (barrier_ == Barrier::kOdsync || barrier_ == Barrier::kDirectDsync) flags |= O_DSYNC;
  if (wal::UsesDirectIo(barrier_)) flags |= O_DIRECT;
  fd_ = std::make_unique<Fd>(::open(path_.c_str(), flags));
  if (fd_->get() < 0) {
    const int err = errno;
    if (err == EINVAL && (flags & O_DIRECT) != 0) {
      return absl::InvalidArgumentError(
          fmt::format("open({}, O_DIRECT): {}: the file system does not support O_DIRECT; "
                      "use a disk file system or another --barrier",
                      path_, std::strerror(err)));
    }
    return ErrnoError("open", path_, err);
  }
#if POWERCUT_HAVE_URING
  if (barrier_ == Barrier::kIoUring) RETURN_IF_ERROR(uring_.Init());
#endif
  return absl::OkStatus();
}

absl::Status BarrierWriter::WriteWithoutBarrier(const uint8_t* block, uint64_t offset) {
  return PwriteAll(fd_->get(), block, kXlogBlockSize, offset, path_);
}

absl::Status BarrierWriter::Sync() {
  if (barrier_ == Barrier::kFsync) return Fsync(fd_->get(), path_);
  if (::fdatasync(fd_->get()) != 0) return ErrnoError("fdatasync", path_, errno);
  return absl::OkStatus();
}

absl::Status BarrierWriter::Write(const uint8_t* block, uint64_t offset) {
  const int fd = fd_->get();
  switch (barrier_) {
    case Barrier::kNone:
    case Barrier::kOdsync:
    case Barrier::kDirectDsync:
    case Barrier::kDirect:
      return PwriteAll(fd, block, kXlogBlockSize, offset, path_);
    case Barrier::kFdatasync:
      RETURN_IF_ERROR(PwriteAll(fd, block, kXlogBlockSize, offset, path_));
      if (::fdatasync(fd) != 0) return ErrnoError("fdatasync", path_, errno);
      return absl::OkStatus();
    case Barrier::kFsync:
      RETURN_IF_ERROR(PwriteAll(fd, block, kXlogBlockSize, offset, path_));
      return Fsync(fd, path_);
    case Barrier::kRwfDsync: {
      iovec iov{const_cast<uint8_t*>(block), kXlogBlockSize};
      ssize_t n;
      do {
        n = ::pwritev2(fd, &iov, 1, static_cast<off_t>(offset), RWF_DSYNC);
      } while (n < 0 && errno == EINTR);
      if (n < 0) return ErrnoError("pwritev2(RWF_DSYNC)", path_, errno);
      if (static_cast<size_t>(n) != kXlogBlockSize) {
        return absl::DataLossError(
            fmt::format("pwritev2(RWF_DSYNC)({}): short write of {} bytes", path_, n));
      }
      return absl::OkStatus();
    }
    case Barrier::kSyncFileRange:
      RETURN_IF_ERROR(PwriteAll(fd, block, kXlogBlockSize, offset, path_));
      if (::sync_file_range(fd, static_cast<off_t>(offset), kXlogBlockSize,
                            SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
                                SYNC_FILE_RANGE_WAIT_AFTER) != 0) {
        return ErrnoError("sync_file_range", path_, errno);
      }
      return absl::OkStatus();
    case Barrier::kIoUring:
#if POWERCUT_HAVE_URING
      return uring_.WriteAndFdatasync(fd, block, offset, path_);
#else
      return absl::InvalidArgumentError("io_uring: this build has no liburing");
#endif
  }
  return absl::InvalidArgumentError("unknown barrier");
}

absl::Status BarrierWriter::Close() { return fd_->Close(path_); }

}  // namespace powercut::workloads::xlog
