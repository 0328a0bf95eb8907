#include "harness/fstest/executor.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "base/status_macros.h"
#include "fmt/format.h"
#include "harness/fstest/content.h"

namespace powercut::fstest {
namespace {

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  bool ok() const { return fd_ >= 0; }
  // close(2) reports write-back errors of some file systems: they are the operation's.
  int Close() {
    const int r = ::close(fd_);
    fd_ = -1;
    return r;
  }

 private:
  int fd_;
};

int FallocFlags(FallocMode mode) {
  switch (mode) {
    case FallocMode::kDefault:
      return 0;
    case FallocMode::kKeepSize:
      return FALLOC_FL_KEEP_SIZE;
    case FallocMode::kPunchHole:
      return FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE;
    case FallocMode::kZeroRange:
      return FALLOC_FL_ZERO_RANGE;
    case FallocMode::kZeroRangeKeepSize:
      return FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE;
  }
  return 0;
}

class Runner {
 public:
  Runner(const std::string& root, const ExecuteHooks& hooks) : root_(root), hooks_(hooks) {}

  absl::Status Run(const Workload& w) {
    for (const Op& op : w.ops) {
      if (absl::Status s = One(op); !s.ok()) {
        return absl::Status(s.code(), fmt::format("{}:{}: {}: {}", w.source, op.line, OpText(op),
                                                  StatusMessage(s)));
      }
    }
    return absl::OkStatus();
  }

 private:
  std::string Abs(const std::string& path) const {
    return path == "." ? root_ : root_ + "/" + path;
  }

  static absl::Status Sys(std::string_view call) {
    return absl::FailedPreconditionError(fmt::format("{}: {}", call, std::strerror(errno)));
  }

  // pwrite, or pwritev2 with RWF_DSYNC for rwf_dsync: each call is then a synchronous write of
  // its part (one call for the whole range unless the kernel writes less).
  static ssize_t WriteOnce(int fd, const char* data, uint64_t length, uint64_t offset,
                           SyncWrite sync) {
    if (sync != SyncWrite::kRwfDsync) {
      return ::pwrite(fd, data, length, static_cast<off_t>(offset));
    }
    iovec iov{.iov_base = const_cast<char*>(data), .iov_len = length};
    return ::pwritev2(fd, &iov, 1, static_cast<off_t>(offset), RWF_DSYNC);
  }

  absl::Status WriteAll(int fd, const char* data, uint64_t length, uint64_t offset,
                        SyncWrite sync) {
    uint64_t done = 0;
    while (done < length) {
      const ssize_t n = WriteOnce(fd, data + done, length - done, offset + done, sync);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Sys(sync == SyncWrite::kRwfDsync ? "pwritev2 RWF_DSYNC" : "pwrite");
      if (n == 0) return absl::DataLossError("pwrite wrote nothing");
      done += static_cast<uint64_t>(n);
    }
    return absl::OkStatus();
  }

  absl::Status Write(const Op& op) {
    const std::string bytes = ContentFor(op.path, ++writes_, op.offset, op.length);
    int flags = O_WRONLY | O_CLOEXEC | O_NOFOLLOW;
    if (op.kind == OpKind::kDwrite) flags |= O_DIRECT;
    if (op.sync == SyncWrite::kDsync) flags |= O_DSYNC;
    if (op.sync == SyncWrite::kSync) flags |= O_SYNC;
    if (op.kind == OpKind::kMmapwrite) flags = O_RDWR | O_CLOEXEC | O_NOFOLLOW;
    Fd fd(::open(Abs(op.path).c_str(), flags));
    if (!fd.ok()) return Sys("open");
    if (op.kind == OpKind::kWrite) {
      RETURN_IF_ERROR(WriteAll(fd.get(), bytes.data(), op.length, op.offset, op.sync));
    } else if (op.kind == OpKind::kDwrite) {
      void* buffer = nullptr;
      if (::posix_memalign(&buffer, kDirectAlignment, op.length) != 0) {
        return absl::ResourceExhaustedError("no memory for the O_DIRECT buffer");
      }
      std::unique_ptr<void, decltype(&::free)> owned(buffer, &::free);
      std::memcpy(buffer, bytes.data(), op.length);
      RETURN_IF_ERROR(
          WriteAll(fd.get(), static_cast<const char*>(buffer), op.length, op.offset, op.sync));
    } else {
      // As CrashMonkey's mmapwrite: extend the file over the range first, so the mapping never
      // reaches past its end (SIGBUS), then store through the mapping and unmap (no msync: the
      // workload's next persistence point writes it back).
      if (::fallocate(fd.get(), 0, static_cast<off_t>(op.offset), static_cast<off_t>(op.length)) !=
          0) {
        return Sys("fallocate");
      }
      const size_t span = op.offset + op.length;
      void* map = ::mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
      if (map == MAP_FAILED) return Sys("mmap");
      std::memcpy(static_cast<char*>(map) + op.offset, bytes.data(), op.length);
      if (::munmap(map, span) != 0) return Sys("munmap");
    }
    // A synchronous write is a persistence point once it returned: acknowledged (and its expected
    // state taken) before the close, whose own work (xfs trims blocks preallocated past the end)
    // belongs to what comes after the point.
    if (op.sync != SyncWrite::kNone) RETURN_IF_ERROR(Acknowledge(op));
    if (fd.Close() != 0) return Sys("close");
    return absl::OkStatus();
  }

  absl::Status Persist(const Op& op) {
    if (op.kind == OpKind::kSync) {
      ::sync();
      return absl::OkStatus();
    }
    Fd fd(::open(Abs(op.path).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!fd.ok()) return Sys("open");
    int r = 0;
    switch (op.kind) {
      case OpKind::kFsync:
        r = ::fsync(fd.get());
        break;
      case OpKind::kFdatasync:
        r = ::fdatasync(fd.get());
        break;
      case OpKind::kSyncFileRange:
        r = ::sync_file_range(
            fd.get(), static_cast<off_t>(op.offset), static_cast<off_t>(op.length),
            SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER);
        break;
      default:
        break;
    }
    if (r != 0) return Sys(OpName(op.kind));
    if (fd.Close() != 0) return Sys("close");
    return absl::OkStatus();
  }

  absl::Status One(const Op& op) {
    const std::string p = Abs(op.path);
    switch (op.kind) {
      case OpKind::kCreat: {
        Fd fd(::open(p.c_str(), O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644));
        if (!fd.ok()) return Sys("creat");
        if (fd.Close() != 0) return Sys("close");
        return absl::OkStatus();
      }
      case OpKind::kMkdir:
        return ::mkdir(p.c_str(), 0755) == 0 ? absl::OkStatus() : Sys("mkdir");
      case OpKind::kWrite:
      case OpKind::kDwrite:
      case OpKind::kMmapwrite:
        return Write(op);
      case OpKind::kFalloc: {
        Fd fd(::open(p.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW));
        if (!fd.ok()) return Sys("open");
        if (::fallocate(fd.get(), FallocFlags(op.mode), static_cast<off_t>(op.offset),
                        static_cast<off_t>(op.length)) != 0) {
          return Sys("fallocate");
        }
        if (fd.Close() != 0) return Sys("close");
        return absl::OkStatus();
      }
      case OpKind::kTruncate:
        return ::truncate(p.c_str(), static_cast<off_t>(op.length)) == 0 ? absl::OkStatus()
                                                                         : Sys("truncate");
      case OpKind::kLink:
        return ::link(p.c_str(), Abs(op.path2).c_str()) == 0 ? absl::OkStatus() : Sys("link");
      case OpKind::kSymlink:
        return ::symlink(op.path2.c_str(), p.c_str()) == 0 ? absl::OkStatus() : Sys("symlink");
      case OpKind::kUnlink:
        return ::unlink(p.c_str()) == 0 ? absl::OkStatus() : Sys("unlink");
      case OpKind::kRemove:
        return ::remove(p.c_str()) == 0 ? absl::OkStatus() : Sys("remove");
      case OpKind::kRename:
        return ::rename(p.c_str(), Abs(op.path2).c_str()) == 0 ? absl::OkStatus() : Sys("rename");
      case OpKind::kSetxattr:
        return ::setxattr(p.c_str(), op.name.c_str(), op.value.data(), op.value.size(), 0) == 0
                   ? absl::OkStatus()
                   : Sys("setxattr");
      case OpKind::kRemovexattr:
        return ::removexattr(p.c_str(), op.name.c_str()) == 0 ? absl::OkStatus()
                                                              : Sys("removexattr");
      case OpKind::kFsync:
      case OpKind::kFdatasync:
      case OpKind::kSync:
      case OpKind::kSyncFileRange:
        RETURN_IF_ERROR(Persist(op));
        return Acknowledge(op);
    }
    return absl::OkStatus();
  }

  // Point `op` returned: acknowledge it, then take the expected state.
  absl::Status Acknowledge(const Op& op) {
    ++points_;
    if (hooks_.ack) RETURN_IF_ERROR(hooks_.ack(points_));
    if (hooks_.snapshot) {
      ASSIGN_OR_RETURN(Tree tree, ReadTree(root_));
      RETURN_IF_ERROR(hooks_.snapshot(points_, op, tree));
    }
    return absl::OkStatus();
  }

  const std::string root_;
  const ExecuteHooks& hooks_;
  uint64_t writes_ = 0;
  int points_ = 0;
};

}  // namespace

absl::Status Execute(const Workload& workload, const std::string& root, const ExecuteHooks& hooks) {
  ::umask(022);  // the modes the tree records are the workload's, not an inherited mask's
  return Runner(root, hooks).Run(workload);
}

}  // namespace powercut::fstest
