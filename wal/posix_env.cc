#include "wal/posix_env.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "base/tsan_mutex.h"

#if POWERCUT_HAVE_URING
#include <liburing.h>
#endif

namespace powercut::wal {

absl::Status PosixError(std::string_view syscall, std::string_view path, int error_number) {
  return absl::ErrnoToStatus(error_number,
                             fmt::format("{}({}): {}", syscall, path, std::strerror(error_number)));
}

namespace {

class PosixFile final : public File {
 public:
  PosixFile(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~PosixFile() override {
    if (fd_ >= 0) ::close(fd_);
#if POWERCUT_HAVE_URING
    if (ring_ready_) io_uring_queue_exit(&ring_);
#endif
  }

#if POWERCUT_HAVE_URING
  // Called once right after open, before the File is shared.
  absl::Status InitRing() {
    // Two entries: one write, one linked fdatasync.
    const int rc = io_uring_queue_init(8, &ring_, 0);
    if (rc < 0) {
      return absl::ErrnoToStatus(
          -rc, fmt::format("io_uring_queue_init({}): {}; the kernel has io_uring disabled or "
                           "unsupported (see /proc/sys/kernel/io_uring_disabled): use another "
                           "barrier mode",
                           path_, std::strerror(-rc)));
    }
    ring_ready_ = true;
    return absl::OkStatus();
  }
#endif

  absl::Status Write(uint64_t offset, absl::Span<const uint8_t> data, bool dsync) override {
    size_t done = 0;
    while (done < data.size()) {
      iovec iov{const_cast<uint8_t*>(data.data() + done), data.size() - done};
      const off_t at = static_cast<off_t>(offset + done);
      const ssize_t n = dsync ? ::pwritev2(fd_, &iov, 1, at, RWF_DSYNC)
                              : ::pwrite(fd_, iov.iov_base, iov.iov_len, at);
      if (n < 0) {
        if (errno == EINTR) continue;
        return PosixError(dsync ? "pwritev2(RWF_DSYNC)" : "pwrite", path_, errno);
      }
      if (n == 0) {
        // No progress and no errno: treat as a full device rather than loop forever.
        return absl::ResourceExhaustedError(
            fmt::format("{}({}): wrote 0 of {} bytes at offset {} (no progress; disk full?)",
                        dsync ? "pwritev2(RWF_DSYNC)" : "pwrite", path_, data.size() - done, at));
      }
      done += static_cast<size_t>(n);
    }
    return absl::OkStatus();
  }

  absl::StatusOr<size_t> Read(uint64_t offset, size_t size, uint8_t* out) override {
    size_t done = 0;
    while (done < size) {
      const ssize_t n = ::pread(fd_, out + done, size - done, static_cast<off_t>(offset + done));
      if (n < 0) {
        if (errno == EINTR) continue;
        return PosixError("pread", path_, errno);
      }
      if (n == 0) break;
      done += static_cast<size_t>(n);
    }
    return done;
  }

  absl::Status Sync(SyncKind kind, uint64_t offset, uint64_t length) override {
    switch (kind) {
      case SyncKind::kFdatasync:
        if (::fdatasync(fd_) != 0) return PosixError("fdatasync", path_, errno);
        return absl::OkStatus();
      case SyncKind::kFsync:
        if (::fsync(fd_) != 0) return PosixError("fsync", path_, errno);
        return absl::OkStatus();
      case SyncKind::kSyncFileRange:
        if (::sync_file_range(fd_, static_cast<off64_t>(offset), static_cast<off64_t>(length),
                              SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
                                  SYNC_FILE_RANGE_WAIT_AFTER) != 0) {
          return PosixError("sync_file_range", path_, errno);
        }
        return absl::OkStatus();
    }
    return absl::InvalidArgumentError("unknown SyncKind");
  }

  absl::Status WriteAndFdatasyncLinked(uint64_t offset, absl::Span<const uint8_t> data) override {
#if POWERCUT_HAVE_URING
    if (ring_ready_) return LinkedOnRing(offset, data);
#endif
    return File::WriteAndFdatasyncLinked(offset, data);
  }

  absl::StatusOr<uint64_t> Size() override {
    struct stat st;
    if (::fstat(fd_, &st) != 0) return PosixError("fstat", path_, errno);
    return static_cast<uint64_t>(st.st_size);
  }

  absl::Status Truncate(uint64_t size) override {
    if (::ftruncate(fd_, static_cast<off_t>(size)) != 0) {
      return PosixError("ftruncate", path_, errno);
    }
    return absl::OkStatus();
  }

  absl::Status Close() override {
    if (fd_ < 0) return absl::OkStatus();
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) return PosixError("close", path_, errno);
    return absl::OkStatus();
  }

  const std::string& path() const override { return path_; }

 private:
#if POWERCUT_HAVE_URING
  absl::Status LinkedOnRing(uint64_t offset, absl::Span<const uint8_t> data) {
    MutexLock lock(&ring_mu_);
    io_uring_sqe* write_sqe = io_uring_get_sqe(&ring_);
    io_uring_sqe* sync_sqe = write_sqe ? io_uring_get_sqe(&ring_) : nullptr;
    if (write_sqe == nullptr || sync_sqe == nullptr) {
      return absl::InternalError(fmt::format("io_uring_get_sqe({}): submission queue full", path_));
    }
    io_uring_prep_write(write_sqe, fd_, data.data(), static_cast<unsigned>(data.size()), offset);
    write_sqe->flags |= IOSQE_IO_LINK;
    write_sqe->user_data = 1;
    io_uring_prep_fsync(sync_sqe, fd_, IORING_FSYNC_DATASYNC);
    sync_sqe->user_data = 2;
    int rc = io_uring_submit_and_wait(&ring_, 2);
    while (rc == -EINTR) rc = io_uring_submit_and_wait(&ring_, 0);
    if (rc < 0) return PosixError("io_uring_submit_and_wait", path_, -rc);
    int write_res = 0, sync_res = 0;
    for (int reaped = 0; reaped < 2; ++reaped) {
      io_uring_cqe* cqe = nullptr;
      int wrc = io_uring_wait_cqe(&ring_, &cqe);
      while (wrc == -EINTR) wrc = io_uring_wait_cqe(&ring_, &cqe);
      if (wrc < 0) return PosixError("io_uring_wait_cqe", path_, -wrc);
      (cqe->user_data == 1 ? write_res : sync_res) = cqe->res;
      io_uring_cqe_seen(&ring_, cqe);
    }
    if (write_res < 0) return PosixError("io_uring write", path_, -write_res);
    if (static_cast<size_t>(write_res) < data.size()) {
      // A short write cancels the linked fdatasync (-ECANCELED): finish with the plain pair.
      return File::WriteAndFdatasyncLinked(offset + static_cast<uint64_t>(write_res),
                                           data.subspan(static_cast<size_t>(write_res)));
    }
    if (sync_res < 0) return PosixError("io_uring fdatasync", path_, -sync_res);
    return absl::OkStatus();
  }

  absl::Mutex ring_mu_;
  io_uring ring_{};
  bool ring_ready_ = false;
#endif

  int fd_;
  const std::string path_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<File>> PosixEnv::Open(const std::string& path,
                                                     const OpenOptions& options) {
  int flags = O_CLOEXEC | (options.read_only ? O_RDONLY : O_RDWR);
  if (options.create) flags |= O_CREAT;
  if (options.create && options.exclusive) flags |= O_EXCL;
  if (options.direct) flags |= O_DIRECT;
  if (options.dsync) flags |= O_DSYNC;
  const int fd = ::open(path.c_str(), flags, 0644);
  if (fd < 0) {
    const int err = errno;
    if (err == EINVAL && options.direct) {
      return absl::InvalidArgumentError(fmt::format(
          "open({}, O_DIRECT): {}; the file system does not support O_DIRECT (tmpfs?): put the "
          "log on a disk-backed file system or use another barrier mode",
          path, std::strerror(err)));
    }
    return PosixError("open", path, err);
  }
  auto file = std::make_unique<PosixFile>(fd, path);
  if (options.io_uring) {
#if POWERCUT_HAVE_URING
    if (absl::Status s = file->InitRing(); !s.ok()) return s;
#else
    return absl::UnimplementedError(fmt::format(
        "open({}): this build has no liburing; the io_uring barrier is unavailable", path));
#endif
  }
  return file;
}

absl::Status PosixEnv::Rename(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) {
    return PosixError("rename", fmt::format("{} -> {}", from, to), errno);
  }
  return absl::OkStatus();
}

absl::Status PosixEnv::Remove(const std::string& path) {
  if (::unlink(path.c_str()) != 0) return PosixError("unlink", path, errno);
  return absl::OkStatus();
}

absl::Status PosixEnv::SyncDir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return PosixError("open(O_DIRECTORY)", dir, errno);
  absl::Status status;
  if (::fsync(fd) != 0) status = PosixError("fsync(directory)", dir, errno);
  ::close(fd);
  return status;
}

absl::Status PosixEnv::CreateDir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0755) != 0) return PosixError("mkdir", dir, errno);
  return absl::OkStatus();
}

absl::StatusOr<bool> PosixEnv::Exists(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) return true;
  if (errno == ENOENT) return false;
  return PosixError("stat", path, errno);
}

absl::StatusOr<bool> PosixEnv::IsDirectory(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return PosixError("stat", path, errno);
  return S_ISDIR(st.st_mode);
}

absl::StatusOr<std::vector<std::string>> PosixEnv::ListDir(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return PosixError("opendir", dir, errno);
  std::vector<std::string> names;
  errno = 0;
  while (dirent* entry = ::readdir(d)) {
    const std::string_view name = entry->d_name;
    if (name != "." && name != "..") names.emplace_back(name);
    errno = 0;
  }
  const int err = errno;
  ::closedir(d);
  if (err != 0) return PosixError("readdir", dir, err);
  std::sort(names.begin(), names.end());
  return names;
}

absl::StatusOr<uint64_t> PosixEnv::FileSize(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return PosixError("stat", path, errno);
  return static_cast<uint64_t>(st.st_size);
}

absl::StatusOr<uint32_t> PosixEnv::BlockSize(const std::string& dir) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) return PosixError("stat", dir, errno);
  // O_DIRECT needs the device's logical block size; 4096 is a multiple of every common one (512,
  // 4096) and is what the segment header reserves, so anything but an explicit 512 becomes 4096.
  return st.st_blksize == 512 ? 512u : 4096u;
}

Env* Env::Default() {
  static PosixEnv* env = new PosixEnv;
  return env;
}

}  // namespace powercut::wal
