#include "harness/check/worker_pool.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "base/image_io.h"
#include "base/scratch_dir.h"
#include "base/status_macros.h"
#include "fmt/format.h"
#include "harness/check/disk_set_check.h"

namespace powercut::harness {

absl::StatusOr<std::unique_ptr<WorkerPool>> WorkerPool::Create(const std::string& work_dir,
                                                               int workers, FsKind fs,
                                                               const std::string& base,
                                                               const TraceFile* trace,
                                                               uint32_t granule, bool disk_set) {
  std::string dir = work_dir;
  ScratchDir own;  // empty when the caller named the folder
  if (dir.empty()) {
    ASSIGN_OR_RETURN(own, ScratchDir::Create("powercut-check"));
    dir = own.path();
  } else {
    std::filesystem::create_directories(dir);
  }
  std::unique_ptr<WorkerPool> pool(new WorkerPool(dir, std::move(own)));
  pool->workers_.resize(static_cast<size_t>(workers));
  for (int i = 0; i < workers; ++i) {
    CheckWorker& w = pool->workers_[static_cast<size_t>(i)];
    ASSIGN_OR_RETURN(w.image, WorkingImage::Create(fmt::format("{}/worker{}.img", dir, i), base,
                                                   trace, granule));
    if (FileSystemOf(fs).raw() && !disk_set) continue;
    w.scratch = fmt::format("{}/worker{}.scratch.img", dir, i);
    w.mountpoint = fmt::format("{}/worker{}.mnt", dir, i);
    std::filesystem::create_directories(w.mountpoint);
  }
  return pool;
}

WorkerPool::~WorkerPool() {
  for (CheckWorker& w : workers_) {
    w.judge.reset();  // it reads the image
    if (w.scratch_fd >= 0) ::close(w.scratch_fd);
    w.image.reset();
  }
  std::error_code ec;
  if (!own_.path().empty()) return;  // own_ removes the folder with everything in it
  for (CheckWorker& w : workers_) {
    if (!w.scratch.empty()) std::filesystem::remove(w.scratch, ec);
    if (!w.mountpoint.empty()) std::filesystem::remove(w.mountpoint, ec);
    for (uint32_t d = 1; !w.scratch.empty() && d <= 64; ++d) {  // a disk set's files, if any
      std::filesystem::remove(fmt::format("{}.disk{}.img", w.scratch, d), ec);
      std::filesystem::remove(fmt::format("{}.disk{}.mnt", w.scratch, d), ec);
    }
  }
}

// Every checked state gets a new scratch inode rather than the previous state's file rewritten.
// A file system we unmounted can outlive our umount: any process that copied our mount namespace
// while the state was mounted (`unshare -m` in another worker's checker, a container, a service
// with PrivateTmp) holds its superblock, and the kernel writes that superblock and journal back
// through the still-bound loop device when the last copy goes away. Into a reused file that write
// lands in the NEXT state's image (measured: e2fsck then "repairs" a state that is clean when
// rebuilt alone); into an unlinked inode it lands nowhere that matters.
absl::Status FreshScratch(CheckWorker& w) {
  if (w.scratch_fd >= 0) {
    ::close(w.scratch_fd);
    w.scratch_fd = -1;
  }
  if (::unlink(w.scratch.c_str()) != 0 && errno != ENOENT) {
    return absl::InternalError(
        fmt::format("check: cannot remove {}: {}", w.scratch, std::strerror(errno)));
  }
  w.scratch_fd = ::open(w.scratch.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (w.scratch_fd < 0 || ::ftruncate(w.scratch_fd, static_cast<off_t>(w.image->size())) != 0) {
    return absl::InternalError(
        fmt::format("check: cannot create {}: {}", w.scratch, std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::StatusOr<ImageCheckResult> CheckWorkerImage(const CheckOptions& o, CheckWorker& w) {
  if (o.disks.several() && w.judge != nullptr) {
    std::vector<SetDisk> set;
    for (uint32_t d = 0; d < o.disks.count(); ++d) {
      set.push_back(
          {.offset = o.disks.extents()[d].offset,
           .bytes = o.disks.extents()[d].bytes,
           .fs = o.disk_fs[d],
           .sector = d < o.disk_sectors.size() ? o.disk_sectors[d] : kDefaultSectorFormat});
    }
    return w.judge->CheckSet(w.image->fd(), set);
  }
  if (o.disks.several()) {
    return CheckDiskSetImage(w.image->fd(), w.image->path(),
                             {.layout = o.disks,
                              .fs = o.disk_fs,
                              .checker = o.checker,
                              .timeout_seconds = o.checker_timeout_s,
                              .work_prefix = w.scratch,
                              .before_mount = o.before_mount});
  }
  ImageCheckOptions ic{.fs = o.fs,
                       .checker = o.checker,
                       .timeout_seconds = o.checker_timeout_s,
                       .mountpoint = w.mountpoint,
                       .without_mount = o.without_mount,
                       .before_mount = o.before_mount};
  if (FileSystemOf(o.fs).raw()) {
    auto out = CheckImageFile(w.image->path(), ic);
    // The raw protocol is read-only; rebuild so that later states stay exact.
    if (absl::IsFailedPrecondition(out.status())) RETURN_IF_ERROR(w.image->Reset());
    return out;
  }
  if (w.judge != nullptr) return w.judge->Check(w.image->fd(), w.image->size());
  RETURN_IF_ERROR(FreshScratch(w));
  // The new inode shares the working image's extents where the host can (then nothing is copied
  // and the mount's writes unshare only the blocks they touch); elsewhere its data extents are
  // copied. The working image itself is never mounted, so it stays the exact state.
  if (w.clone && ::ioctl(w.scratch_fd, FICLONE, w.image->fd()) == 0) {
    return CheckImageFile(w.scratch, ic);
  }
  w.clone = false;
  RETURN_IF_ERROR(
      CopyOnto(w.image->fd(), w.scratch_fd, w.image->size(), w.image->path(), w.scratch));
  return CheckImageFile(w.scratch, ic);
}

}  // namespace powercut::harness
