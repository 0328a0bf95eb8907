// Checking one crash image: the one place that does it, for the engine (every state) and for
// `powercut repro` (one image).
//
//   raw          the checker gets POWERCUT_DEV=image; it must not write to it (the raw protocol
//                is read-only): a checker that does is an error (FailedPrecondition).
//   file system  the boot path first (harness/check/boot_recovery.h: boot check, mount with
//                journal replay, the file system's recovery tools where the mount fails), then
//                the checker gets POWERCUT_DIR=the mount point. Where mounting is not permitted
//                (no CAP_SYS_ADMIN) an ext4 image is opened with debugfs instead: the boot check
//                replays the journal, `debugfs rdump` extracts the tree, the checker reads that.
//
// The image is modified by recovery and the mount: pass a scratch copy.
#pragma once

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "harness/check/boot_recovery.h"
#include "harness/check/checker.h"
#include "harness/fs/file_system.h"

namespace powercut::harness {

struct ImageCheckOptions {
  FsKind fs = FsKind::kRaw;
  std::string checker;  // shell command
  double timeout_seconds = 60;
  std::string mountpoint;  // an empty folder (file systems only)
  // Where the table has a reader (ext4: e2fsck + debugfs): read the image without a mount (what
  // happens anyway where mounting is not permitted).
  bool without_mount = false;
  // Optional (`--fsck`): runs on the image before the boot path; a non-empty result marks the
  // state not recoverable with that text.
  std::function<std::string(const std::string& image)> before_mount;
};

struct ImageCheckResult {
  CheckerOutput checker;  // setup_error set when the checker could not run (fsck finding, ...)
  FsRecovery fs;          // the boot path's steps (file systems only)
  // How the tree was read: "loop mount", "e2fsck + debugfs rdump (no mount)", "raw device",
  // "guest mount" (harness/vm/warm/guest_judge.h).
  std::string method;
  // The judging kernel's release (uname -r): this host's, or the guest's.
  std::string kernel;
};

// This host's kernel release (uname -r).
std::string HostKernelRelease();

// Errors: the checker or a recovery tool could not be started, or (raw) the checker wrote to
// the image (FailedPrecondition).
absl::StatusOr<ImageCheckResult> CheckImageFile(const std::string& image,
                                                const ImageCheckOptions& options);

}  // namespace powercut::harness
