// `--fsck`: the file system's own checker, read-only, on every crash image before it is mounted
// (what xfstests' generic/482 does after each FUA, here under every cache model). An image the
// checker calls inconsistent is a violation of its own kind: the verdict's mount error starts
// with "fsck:".
//
//   ext4   e2fsck -E journal_only -y (replays the journal on the scratch copy, as a mount would),
//          then e2fsck -fn
//   xfs    xfs_repair -n (a dirty log cannot be checked without replaying it: such an image is
//          not judged by fsck; the mount replays it)
//   btrfs  btrfs check --readonly
#pragma once

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "harness/check/file_system.h"

namespace powercut::harness {

// The read-only check command for `fs` on `image` (the ext4 journal replay excluded).
absl::StatusOr<std::string> FsckCommand(FsKind fs, const std::string& image);

// Checks `image` (a scratch copy: the ext4 journal replay writes to it). Returns "" when the file
// system is consistent, else "fsck: <tool> exit <n>: <its last output lines>". Fails only when
// the tool cannot run (not installed: the error names the Debian package).
absl::StatusOr<std::string> FsckImage(FsKind fs, const std::string& image,
                                      double timeout_seconds = 120);

// The engine hook (harness::CheckOptions::before_mount) running FsckImage; a tool that cannot run
// is reported as the problem text, so it shows up in every verdict instead of passing silently.
std::function<std::string(const std::string&)> FsckHook(FsKind fs);

}  // namespace powercut::harness
