#include "bench/walbench/raw_barrier.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#if POWERCUT_HAVE_URING
#include <liburing.h>
#endif

namespace powercut::walbench {
namespace {

constexpr size_t kAlignment = 4096;

absl::Status ErrnoError(std::string_view what, const std::string& path, int err) {
  std::string message = fmt::format("{}({}): {}", what, path, std::strerror(err));
  if (err == ENOSPC) return absl::ResourceExhaustedError(message);
  if (err == EINVAL) return absl::InvalidArgumentError(message);
  return absl::InternalError(message);
}

}  // namespace

AlignedBuffer::AlignedBuffer(size_t size)
    : size_((size + kAlignment - 1) / kAlignment * kAlignment) {
  if (size_ == 0) size_ = kAlignment;
  data_ = static_cast<uint8_t*>(std::aligned_alloc(kAlignment, size_));
  if (data_ == nullptr) std::abort();  // out of memory: nothing sensible to report
  std::memset(data_, 0, size_);
}

AlignedBuffer::~AlignedBuffer() { std::free(data_); }

struct RawBarrierFile::Ring {
#if POWERCUT_HAVE_URING
  io_uring ring;
#endif
};

RawBarrierFile::RawBarrierFile(std::string path, wal::Barrier barrier, int fd)
    : path_(std::move(path)), barrier_(barrier), fd_(fd) {}

RawBarrierFile::~RawBarrierFile() {
#if POWERCUT_HAVE_URING
  if (ring_ != nullptr) io_uring_queue_exit(&ring_->ring);
#endif
  close(fd_);
}

absl::StatusOr<std::unique_ptr<RawBarrierFile>> RawBarrierFile::Open(const std::string& path,
                                                                     wal::Barrier barrier) {
  int flags = O_RDWR | O_CREAT | O_CLOEXEC;
  if (barrier == wal::Barrier::kOdsync || barrier == wal::Barrier::kDirectDsync) flags |= O_DSYNC;
  if (wal::UsesDirectIo(barrier)) flags |= O_DIRECT;
  const int fd = open(path.c_str(), flags, 0644);
  if (fd < 0) {
    const int err = errno;
    return ErrnoError(fmt::format("open[{}]", wal::BarrierName(barrier)), path, err);
  }
  auto file = std::unique_ptr<RawBarrierFile>(new RawBarrierFile(path, barrier, fd));
  if (barrier == wal::Barrier::kIoUring) {
#if POWERCUT_HAVE_URING
    file->ring_ = std::make_unique<Ring>();
    const int rc = io_uring_queue_init(8, &file->ring_->ring, 0);
    if (rc < 0) {
      file->ring_.reset();
      return ErrnoError("io_uring_queue_init", path, -rc);
    }
#else
    return absl::UnimplementedError("io_uring: this walbench was built without liburing");
#endif
  }
  return file;
}

absl::Status RawBarrierFile::PwriteAll(uint64_t offset, absl::Span<const uint8_t> data, int flags) {
  size_t done = 0;
  while (done < data.size()) {
    iovec iov{const_cast<uint8_t*>(data.data() + done), data.size() - done};
    const ssize_t n = pwritev2(fd_, &iov, 1, static_cast<off_t>(offset + done), flags);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(flags != 0 ? "pwritev2[RWF_DSYNC]" : "pwrite", path_, errno);
    }
    if (n == 0) return ErrnoError("pwrite", path_, ENOSPC);
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::Status RawBarrierFile::Preallocate(uint64_t bytes) {
  AlignedBuffer zeros(1 << 20);
  for (uint64_t offset = 0; offset < bytes;) {
    const uint64_t n = std::min<uint64_t>(zeros.size(), bytes - offset);
    // Direct modes need a block-multiple size: `bytes` is a multiple of 4 KiB in walbench.
    absl::Status status = PwriteAll(offset, absl::MakeConstSpan(zeros.data(), n), 0);
    if (!status.ok()) return status;
    offset += n;
  }
  if (fsync(fd_) != 0) return ErrnoError("fsync", path_, errno);
  return absl::OkStatus();
}

absl::Status RawBarrierFile::WriteDurably(uint64_t offset, absl::Span<const uint8_t> data) {
  switch (barrier_) {
    case wal::Barrier::kNone:
    case wal::Barrier::kDirect:
      return PwriteAll(offset, data, 0);
    case wal::Barrier::kOdsync:
    case wal::Barrier::kDirectDsync: {
      absl::Status status = PwriteAll(offset, data, 0);
      barrier_calls_.fetch_add(1, std::memory_order_relaxed);
      return status;
    }
    case wal::Barrier::kRwfDsync: {
      absl::Status status = PwriteAll(offset, data, RWF_DSYNC);
      barrier_calls_.fetch_add(1, std::memory_order_relaxed);
      return status;
    }
    case wal::Barrier::kFdatasync:
    case wal::Barrier::kFsync: {
      absl::Status status = PwriteAll(offset, data, 0);
      if (!status.ok()) return status;
      barrier_calls_.fetch_add(1, std::memory_order_relaxed);
      const bool data_only = barrier_ == wal::Barrier::kFdatasync;
      if ((data_only ? fdatasync(fd_) : fsync(fd_)) != 0) {
        return ErrnoError(data_only ? "fdatasync" : "fsync", path_, errno);
      }
      return absl::OkStatus();
    }
    case wal::Barrier::kSyncFileRange: {
      absl::Status status = PwriteAll(offset, data, 0);
      if (!status.ok()) return status;
      barrier_calls_.fetch_add(1, std::memory_order_relaxed);
      if (sync_file_range(fd_, static_cast<off_t>(offset), static_cast<off_t>(data.size()),
                          SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
                              SYNC_FILE_RANGE_WAIT_AFTER) != 0) {
        return ErrnoError("sync_file_range", path_, errno);
      }
      return absl::OkStatus();
    }
    case wal::Barrier::kIoUring: {
#if POWERCUT_HAVE_URING
      io_uring* ring = &ring_->ring;
      io_uring_sqe* write_sqe = io_uring_get_sqe(ring);
      io_uring_sqe* sync_sqe = io_uring_get_sqe(ring);
      if (write_sqe == nullptr || sync_sqe == nullptr) {
        return absl::InternalError(fmt::format("io_uring({}): submission queue full", path_));
      }
      io_uring_prep_write(write_sqe, fd_, data.data(), static_cast<unsigned>(data.size()), offset);
      write_sqe->flags |= IOSQE_IO_LINK;
      write_sqe->user_data = 1;
      io_uring_prep_fsync(sync_sqe, fd_, IORING_FSYNC_DATASYNC);
      sync_sqe->user_data = 2;
      barrier_calls_.fetch_add(1, std::memory_order_relaxed);
      int rc = io_uring_submit_and_wait(ring, 2);
      if (rc < 0) return ErrnoError("io_uring_submit_and_wait", path_, -rc);
      absl::Status status = absl::OkStatus();
      for (int i = 0; i < 2; ++i) {
        io_uring_cqe* cqe = nullptr;
        rc = io_uring_wait_cqe(ring, &cqe);
        if (rc < 0) return ErrnoError("io_uring_wait_cqe", path_, -rc);
        const int res = cqe->res;
        const uint64_t which = cqe->user_data;
        io_uring_cqe_seen(ring, cqe);
        if (!status.ok()) continue;
        if (which == 1 && res >= 0 && static_cast<size_t>(res) != data.size()) {
          status = absl::InternalError(
              fmt::format("io_uring write({}): short write {} of {}", path_, res, data.size()));
        } else if (res < 0) {
          status = ErrnoError(which == 1 ? "io_uring write" : "io_uring fdatasync", path_, -res);
        }
      }
      return status;
#else
      return absl::UnimplementedError("io_uring: built without liburing");
#endif
    }
  }
  return absl::InternalError("unknown barrier");
}

}  // namespace powercut::walbench
