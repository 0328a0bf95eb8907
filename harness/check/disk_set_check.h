// Checking one crash image of a disk set (several recorded disks on one clock:
// harness/trace/disk_layout.h). The image is the set's concatenated image; each disk is copied out
// to a scratch file of its own, goes through its own file system's boot path (boot check, mount
// with journal replay, recovery tools where the mount fails: harness/check/boot_recovery.h), and
// the checker then runs once with every disk mounted:
//
//   POWERCUT_DIR (disk 1), POWERCUT_DIR_2 ... POWERCUT_DIR_N   file-system disks
//   POWERCUT_DEV (disk 1), POWERCUT_DEV_2 ... POWERCUT_DEV_N   raw disks (a copy: read-only rule
//                                                              not enforced)
//
// A disk that not even its own tools bring back makes the state the file system's outcome
// (FsRecovery::unrecoverable), naming that disk; its steps are labelled "disk K".
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "harness/check/image_check.h"
#include "harness/fs/file_system.h"
#include "harness/trace/disk_layout.h"

namespace powercut::harness {

struct DiskSetCheckOptions {
  DiskLayout layout;       // several disks
  std::vector<FsKind> fs;  // one per disk
  std::string checker;     // shell command
  double timeout_seconds = 60;
  // Scratch files are `<work_prefix>.disk<K>.img`, mount points `<work_prefix>.disk<K>.mnt`.
  std::string work_prefix;
  // Optional (`--fsck`): runs on each disk's scratch copy before its boot path; a non-empty
  // result marks the state not recoverable with that text.
  std::function<std::string(const std::string& image)> before_mount;
};

// The environment variable that names disk `disk` (0-based): POWERCUT_DIR, POWERCUT_DIR_2, ...
// (`raw`: POWERCUT_DEV, POWERCUT_DEV_2, ...).
std::string DiskVariable(uint32_t disk, bool raw);

// Checks the set's image open on `image_fd` (read only; `image_path` for messages). Errors: a
// tool or the checker could not be started, or mounting is not permitted here (root needed).
absl::StatusOr<ImageCheckResult> CheckDiskSetImage(int image_fd, const std::string& image_path,
                                                   const DiskSetCheckOptions& options);
// The same for the image file at `image_path` (opened read only for the check).
absl::StatusOr<ImageCheckResult> CheckDiskSetImageFile(const std::string& image_path,
                                                       const DiskSetCheckOptions& options);

}  // namespace powercut::harness
