#include "harness/check/worker_pool.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>

#include "base/image_io.h"
#include "base/scratch_dir.h"
#include "base/status_macros.h"
#include "fmt/format.h"

namespace powercut::harness {

absl::StatusOr<std::unique_ptr<WorkerPool>> WorkerPool::Create(
    const std::string& work_dir, int workers, FsKind fs, const std::string& base,
    uint64_t base_bytes, const TraceFile* trace, uint32_t granule) {
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
    if (fs == FsKind::kRaw) continue;
    w.scratch = fmt::format("{}/worker{}.scratch.img", dir, i);
    w.mountpoint = fmt::format("{}/worker{}.mnt", dir, i);
    std::filesystem::create_directories(w.mountpoint);
    w.scratch_fd = ::open(w.scratch.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (w.scratch_fd < 0 || ::ftruncate(w.scratch_fd, static_cast<off_t>(base_bytes)) != 0) {
      return absl::InternalError(fmt::format("check: cannot create {}", w.scratch));
    }
  }
  return pool;
}

WorkerPool::~WorkerPool() {
  for (CheckWorker& w : workers_) {
    if (w.scratch_fd >= 0) ::close(w.scratch_fd);
    w.image.reset();
  }
  std::error_code ec;
  if (!own_.path().empty()) return;  // own_ removes the folder with everything in it
  for (CheckWorker& w : workers_) {
    if (!w.scratch.empty()) std::filesystem::remove(w.scratch, ec);
    if (!w.mountpoint.empty()) std::filesystem::remove(w.mountpoint, ec);
  }
}

absl::StatusOr<ImageCheckResult> CheckWorkerImage(const CheckOptions& o, CheckWorker& w) {
  ImageCheckOptions ic{.fs = o.fs,
                       .checker = o.checker,
                       .timeout_seconds = o.checker_timeout_s,
                       .mountpoint = w.mountpoint,
                       .without_mount = o.without_mount,
                       .before_mount = o.before_mount};
  if (o.fs == FsKind::kRaw) {
    auto out = CheckImageFile(w.image->path(), ic);
    // The raw protocol is read-only; rebuild so that later states stay exact.
    if (absl::IsFailedPrecondition(out.status())) RETURN_IF_ERROR(w.image->Reset());
    return out;
  }
  RETURN_IF_ERROR(
      CopyOnto(w.image->fd(), w.scratch_fd, w.image->size(), w.image->path(), w.scratch));
  return CheckImageFile(w.scratch, ic);
}

}  // namespace powercut::harness
