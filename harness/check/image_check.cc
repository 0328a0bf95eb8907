#include "harness/check/image_check.h"

#include <sys/stat.h>
#include <sys/utsname.h>

#include <filesystem>
#include <memory>

#include "base/process.h"
#include "base/status_macros.h"
#include "fmt/format.h"
#include "harness/check/loop_mount.h"

namespace powercut::harness {
namespace {

absl::StatusOr<ImageCheckResult> CheckRaw(const std::string& image, const ImageCheckOptions& o) {
  struct stat before {};
  struct stat after {};
  ::stat(image.c_str(), &before);
  ImageCheckResult r;
  r.method = "raw device";
  r.kernel = HostKernelRelease();
  ASSIGN_OR_RETURN(r.checker, RunChecker(o.checker, {{"POWERCUT_DEV", image}}, o.timeout_seconds));
  ::stat(image.c_str(), &after);
  if (after.st_mtim.tv_sec != before.st_mtim.tv_sec ||
      after.st_mtim.tv_nsec != before.st_mtim.tv_nsec || after.st_size != before.st_size) {
    return absl::FailedPreconditionError(fmt::format(
        "checker '{}' wrote to the raw image {} (POWERCUT_DEV is read-only for checkers: copy "
        "it first if recovery must write)",
        o.checker, image));
  }
  return r;
}

// debugfs stands in for the mount: it extracts the (journal-replayed) tree into `tree`.
absl::Status ExtractWithDebugfs(const std::string& image, const std::string& tree,
                                double timeout_seconds) {
  std::error_code ec;
  std::filesystem::remove_all(tree, ec);
  std::filesystem::create_directories(tree, ec);
  ASSIGN_OR_RETURN(CommandResult dump, RunCommand({"debugfs", "-R", "rdump / " + tree, image},
                                                  ProcessOptions{.timeout_seconds = timeout_seconds,
                                                                 .die_with_parent = false}));
  if (dump.exit_code != 0 || dump.timed_out) {
    return absl::DataLossError(fmt::format("debugfs rdump failed (exit {}): {}", dump.exit_code,
                                           LastLines(dump.output, 20)));
  }
  return absl::OkStatus();
}

}  // namespace

std::string HostKernelRelease() {
  utsname u{};
  return ::uname(&u) == 0 ? std::string(u.release) : std::string("unknown");
}

absl::StatusOr<ImageCheckResult> CheckImageFile(const std::string& image,
                                                const ImageCheckOptions& o) {
  if (o.fs == FsKind::kRaw) return CheckRaw(image, o);
  const FileSystem& fs = FileSystemOf(o.fs);
  ImageCheckResult r;
  r.kernel = HostKernelRelease();
  if (o.before_mount) {
    if (std::string problem = o.before_mount(image); !problem.empty()) {
      r.checker.exit_code = -1;
      r.checker.setup_error = std::move(problem);
      return r;  // judged as not recoverable
    }
  }
  std::unique_ptr<LoopMount> mount;
  bool use_debugfs = o.without_mount && o.fs == FsKind::kExt4;
  const std::string tree = image + ".files";
  auto mount_it = [&]() -> absl::Status {
    if (use_debugfs) return ExtractWithDebugfs(image, tree, o.timeout_seconds);
    auto m = LoopMount::Mount(image, fs.name, o.mountpoint, fs.mount_options);
    if (m.ok()) {
      mount = std::move(*m);
      return absl::OkStatus();
    }
    if (absl::IsPermissionDenied(m.status())) {
      if (o.fs == FsKind::kExt4) {
        use_debugfs = true;  // mounting is not permitted here: read it with debugfs instead
        return ExtractWithDebugfs(image, tree, o.timeout_seconds);
      }
      return absl::PermissionDeniedError(fmt::format(
          "{}: checking {} crash images loop-mounts them, which needs root (CAP_SYS_ADMIN) here; "
          "run as root (ext4 images are read with debugfs without it)",
          std::string(m.status().message()), fs.name));
    }
    return m.status();
  };
  ASSIGN_OR_RETURN(r.fs, RecoverFileSystem(fs, image, mount_it, o.timeout_seconds));
  r.method = use_debugfs ? "e2fsck + debugfs rdump (no mount)" : "loop mount";
  if (r.fs.unrecoverable) {
    r.checker.exit_code = -1;
    r.checker.setup_error = "file system unrecoverable: " + r.fs.Describe();
    return r;
  }
  const std::string dir = use_debugfs ? tree : o.mountpoint;
  auto out = RunChecker(o.checker, {{"POWERCUT_DIR", dir}}, o.timeout_seconds);
  absl::Status unmounted = mount ? mount->Unmount() : absl::OkStatus();
  if (use_debugfs) {
    std::error_code ec;
    std::filesystem::remove_all(tree, ec);
  }
  if (!out.ok()) return out.status();
  if (!unmounted.ok()) return unmounted;
  r.checker = std::move(*out);
  return r;
}

}  // namespace powercut::harness
