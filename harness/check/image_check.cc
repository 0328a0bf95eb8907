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

// The row's reader stands in for the mount (ext4: debugfs rdump): it extracts the tree, the boot
// check having replayed the journal, into `tree`.
absl::Status ExtractWithoutMount(const FileSystem& fs, const std::string& image,
                                 const std::string& tree, double timeout_seconds) {
  std::error_code ec;
  std::filesystem::remove_all(tree, ec);
  std::filesystem::create_directories(tree, ec);
  const std::vector<std::string> argv =
      Expand(fs.read_without_mount_argv, {{"{image}", image}, {"{dir}", tree}});
  ASSIGN_OR_RETURN(CommandResult dump,
                   RunCommand(argv, ProcessOptions{.timeout_seconds = timeout_seconds,
                                                   .die_with_parent = false}));
  if (dump.exit_code != 0 || dump.timed_out) {
    return absl::DataLossError(fmt::format("{} failed (exit {}): {}", ShellJoin(argv),
                                           dump.exit_code, LastLines(dump.output, 20)));
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
  const FileSystem& fs = FileSystemOf(o.fs);
  if (fs.raw()) return CheckRaw(image, o);
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
  const bool readable_without_mount = !fs.read_without_mount_argv.empty();
  bool without_mount = o.without_mount && readable_without_mount;
  const std::string tree = image + ".files";
  auto mount_it = [&]() -> absl::Status {
    if (without_mount) return ExtractWithoutMount(fs, image, tree, o.timeout_seconds);
    auto m = LoopMount::Mount(image, fs.name, o.mountpoint, fs.mount_options);
    if (m.ok()) {
      mount = std::move(*m);
      return absl::OkStatus();
    }
    if (absl::IsPermissionDenied(m.status())) {
      if (readable_without_mount) {
        without_mount = true;  // mounting is not permitted here: read it without a mount instead
        return ExtractWithoutMount(fs, image, tree, o.timeout_seconds);
      }
      return absl::PermissionDeniedError(fmt::format(
          "{}: checking {} crash images loop-mounts them, which needs root (CAP_SYS_ADMIN) here; "
          "run as root, or pass --check-in guest",
          std::string(m.status().message()), fs.name));
    }
    return m.status();
  };
  ASSIGN_OR_RETURN(r.fs, RecoverFileSystem(fs, image, mount_it, o.timeout_seconds));
  r.method = without_mount ? fs.read_without_mount_method : "loop mount";
  if (r.fs.unrecoverable) {
    r.checker.exit_code = -1;
    r.checker.setup_error = "file system unrecoverable: " + r.fs.Describe();
    return r;
  }
  const std::string dir = without_mount ? tree : o.mountpoint;
  auto out = RunChecker(o.checker, {{"POWERCUT_DIR", dir}}, o.timeout_seconds);
  absl::Status unmounted = mount ? mount->Unmount() : absl::OkStatus();
  if (without_mount) {
    std::error_code ec;
    std::filesystem::remove_all(tree, ec);
  }
  if (!out.ok()) return out.status();
  if (!unmounted.ok()) return unmounted;
  r.checker = std::move(*out);
  return r;
}

}  // namespace powercut::harness
