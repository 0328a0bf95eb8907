// What a booting machine does to a file system after a power cut, before any program reads it
// (docs/boot-recovery.md): the file system's boot-time check, the mount (which replays the
// journal), and where the mount still fails, the file system's documented recovery tools, each
// followed by another mount attempt. The steps come from the file-system table
// (harness/fs/file_system.h).
//
// Outcomes, kept apart from the program's verdict everywhere (docs/report.md):
//   recovered    the boot path brought it back without repairs (journal replay is not a repair)
//   repaired     it came back, but only after a tool changed it beyond a journal replay (a boot
//                check that fixed errors, or a recovery tool after a failed mount)
//   unrecoverable  not even the file system's own tools brought it back: the finding belongs to
//                the file system, not to the program
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "harness/fs/file_system.h"

namespace powercut::harness {

struct FsStepResult {
  std::string name;  // "e2fsck -p", "mount", ...
  int exit_code = 0;
  bool changed = false;  // the step repaired the file system
  std::string detail;    // the tool's last output lines, or the mount error
  std::string disk;      // "disk 2" in a set of several disks (harness/check/disk_set_check.h)
};

struct FsRecovery {
  std::vector<FsStepResult> steps;
  bool repaired = false;
  bool unrecoverable = false;

  // "e2fsck -p exit 0; mount ok" — one line for reports.
  std::string Describe() const;
};

// Runs `fs`'s boot steps on `image` (a scratch copy: they write to it), then `mount`; where the
// mount fails, each recovery step and another `mount`. `mount` returns OK once the file system
// is usable (for the caller to keep). Fails (NotFound) when a tool is not installed: the error
// names the Debian package; and (`mount`'s own error) when this process may not mount at all
// (PermissionDenied) or this kernel cannot mount the type (Unimplemented): none of these says
// anything about the image, so the caller stops rather than judge it.
// `boot_checks` false skips the boot-time check and mounts first, running the recovery tools only
// when the mount fails, as CrashMonkey does (`powercut fstest`: docs/fstest.md, "The boot path").
absl::StatusOr<FsRecovery> RecoverFileSystem(const FileSystem& fs, const std::string& image,
                                             const std::function<absl::Status()>& mount,
                                             double timeout_seconds, bool boot_checks = true);

// The boot-time checks alone (the table's boot steps, run before any mount: `e2fsck -p`,
// `fsck.f2fs -a`) on `image`, a scratch copy they may write to. They are userspace programs, so a
// guest judge runs them here on the host (the guest runs the host's own binaries over 9p: the same
// program on the same bytes) and leaves the mount and the recovery tools to the recording kernel
// (harness/vm/warm/guest_judge.h). `passed` false: a check gave up, so a booting machine would go
// on to the recovery tools instead of mounting. Errors as RecoverFileSystem's (a missing tool).
struct BootChecks {
  std::vector<FsStepResult> steps;
  bool repaired = false;
  bool passed = true;
};
absl::StatusOr<BootChecks> RunBootChecks(const FileSystem& fs, const std::string& image,
                                         double timeout_seconds);

// The same with the steps given (what RecoverFileSystem takes from the table): for tests.
struct BootPath {
  std::string fs_name;
  std::string package;  // named when a tool is missing
  std::vector<FsStep> boot;
  std::vector<FsStep> recovery;
};
absl::StatusOr<FsRecovery> RunBootPath(const BootPath& path, const std::string& image,
                                       const std::function<absl::Status()>& mount,
                                       double timeout_seconds);

}  // namespace powercut::harness
