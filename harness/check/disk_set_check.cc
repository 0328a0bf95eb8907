#include "harness/check/disk_set_check.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>

#include "base/image_io.h"
#include "base/status_macros.h"
#include "fmt/format.h"
#include "harness/check/boot_recovery.h"
#include "harness/check/loop_mount.h"

namespace powercut::harness {
namespace {

// A new inode per state and disk, like the single-disk scratch (worker_pool.cc says why: an
// unmounted file system that outlives its umount writes back into the file it was on).
absl::StatusOr<int> FreshFile(const std::string& path, uint64_t bytes) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return absl::InternalError(
        fmt::format("check: cannot remove {}: {}", path, std::strerror(errno)));
  }
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0 || ::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    if (fd >= 0) ::close(fd);
    return absl::InternalError(
        fmt::format("check: cannot create {}: {}", path, std::strerror(errno)));
  }
  return fd;
}

// The loop mounts of one check, unmounted newest first.
class DiskMounts {
 public:
  DiskMounts() = default;
  DiskMounts(const DiskMounts&) = delete;
  DiskMounts& operator=(const DiskMounts&) = delete;

  absl::Status Mount(const FileSystem& fs, const std::string& scratch,
                     const std::string& mountpoint) {
    auto m = LoopMount::Mount(scratch, fs.name, mountpoint, fs.mount_options);
    if (!m.ok()) {
      if (absl::IsPermissionDenied(m.status())) {
        return absl::PermissionDeniedError(fmt::format(
            "{}: checking a set of several disks loop-mounts each of them, which needs root "
            "(CAP_SYS_ADMIN) here: run as root",
            std::string(m.status().message())));
      }
      return m.status();
    }
    mounts_.push_back(*std::move(m));
    return absl::OkStatus();
  }

  absl::Status UnmountAll() {
    absl::Status first = absl::OkStatus();
    for (auto it = mounts_.rbegin(); it != mounts_.rend(); ++it) {
      absl::Status s = (*it)->Unmount();
      if (first.ok()) first = s;
    }
    mounts_.clear();
    return first;
  }

 private:
  std::vector<std::unique_ptr<LoopMount>> mounts_;
};

// Copies disk d of the set out of the image into a scratch file of its own; returns its path.
absl::StatusOr<std::string> CopyDiskOut(int image_fd, const std::string& image_path,
                                        const DiskSetCheckOptions& o, uint32_t d) {
  const DiskExtent& extent = o.layout.extents()[d];
  const std::string scratch = fmt::format("{}.disk{}.img", o.work_prefix, d + 1);
  ASSIGN_OR_RETURN(int fd, FreshFile(scratch, extent.bytes));
  absl::Status copied =
      CopyRangeOnto(image_fd, extent.offset, fd, 0, extent.bytes, image_path, scratch);
  ::close(fd);
  RETURN_IF_ERROR(copied);
  return scratch;
}

// Recovers disk d's file system and mounts it at `mountpoint`: true when mounted, false when
// the disk cannot be set up (r says why; the state is judged not recoverable).
absl::StatusOr<bool> RecoverAndMount(const FileSystem& fs, const std::string& scratch,
                                     const std::string& label, const std::string& mountpoint,
                                     const DiskSetCheckOptions& o, DiskMounts& mounts,
                                     ImageCheckResult& r) {
  if (o.before_mount) {
    if (std::string problem = o.before_mount(scratch); !problem.empty()) {
      r.checker.exit_code = -1;
      r.checker.setup_error = fmt::format("{}: {}", label, problem);
      return false;
    }
  }
  std::error_code ec;
  std::filesystem::create_directories(mountpoint, ec);
  auto mount = [&]() -> absl::Status { return mounts.Mount(fs, scratch, mountpoint); };
  ASSIGN_OR_RETURN(FsRecovery recovery, RecoverFileSystem(fs, scratch, mount, o.timeout_seconds));
  for (FsStepResult& step : recovery.steps) {
    step.disk = label;
    r.fs.steps.push_back(std::move(step));
  }
  r.fs.repaired = r.fs.repaired || recovery.repaired;
  if (recovery.unrecoverable) {
    r.fs.unrecoverable = true;
    r.checker.exit_code = -1;
    r.checker.setup_error =
        fmt::format("{}: file system unrecoverable: {}", label, recovery.Describe());
    return false;
  }
  return true;
}

}  // namespace

std::string DiskVariable(uint32_t disk, bool raw) {
  const char* base = raw ? "POWERCUT_DEV" : "POWERCUT_DIR";
  return disk == 0 ? std::string(base) : fmt::format("{}_{}", base, disk + 1);
}

absl::StatusOr<ImageCheckResult> CheckDiskSetImage(int image_fd, const std::string& image_path,
                                                   const DiskSetCheckOptions& o) {
  const uint32_t disks = o.layout.count();
  if (o.fs.size() != disks) {
    return absl::InvalidArgumentError(fmt::format(
        "check: {} file systems for a set of {} disks (one per disk)", o.fs.size(), disks));
  }
  ImageCheckResult r;
  r.kernel = HostKernelRelease();
  r.method = "loop mount per disk";
  DiskMounts mounts;
  std::vector<std::pair<std::string, std::string>> env;
  for (uint32_t d = 0; d < disks; ++d) {
    const std::string label = fmt::format("disk {}", d + 1);
    ASSIGN_OR_RETURN(const std::string scratch, CopyDiskOut(image_fd, image_path, o, d));
    const FileSystem& fs = FileSystemOf(o.fs[d]);
    if (fs.raw()) {
      env.emplace_back(DiskVariable(d, /*raw=*/true), scratch);
      continue;
    }
    const std::string mountpoint = fmt::format("{}.disk{}.mnt", o.work_prefix, d + 1);
    absl::StatusOr<bool> mounted = RecoverAndMount(fs, scratch, label, mountpoint, o, mounts, r);
    if (!mounted.ok() || !*mounted) {
      RETURN_IF_ERROR(mounts.UnmountAll());
      if (!mounted.ok()) return mounted.status();
      return r;  // judged as not recoverable
    }
    env.emplace_back(DiskVariable(d, /*raw=*/false), mountpoint);
  }
  auto out = RunChecker(o.checker, env, o.timeout_seconds);
  absl::Status unmounted = mounts.UnmountAll();
  if (!out.ok()) return out.status();
  RETURN_IF_ERROR(unmounted);
  r.checker = *std::move(out);
  return r;
}

absl::StatusOr<ImageCheckResult> CheckDiskSetImageFile(const std::string& image_path,
                                                       const DiskSetCheckOptions& options) {
  const int fd = ::open(image_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::InternalError(
        fmt::format("cannot open the image {}: {}", image_path, std::strerror(errno)));
  }
  auto result = CheckDiskSetImage(fd, image_path, options);
  ::close(fd);
  return result;
}

}  // namespace powercut::harness
