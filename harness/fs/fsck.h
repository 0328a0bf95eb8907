// `--fsck`: the file system's own checker, read-only, on every crash image before it is mounted
// (what xfstests' generic/482 does after each FUA, here under every cache model). An image the
// checker calls inconsistent is a violation of its own kind: the verdict's mount error starts
// with "fsck:". The commands are the table's (FileSystem::fsck): ext4 replays its journal on
// the scratch copy first, as a mount would; xfs cannot judge a dirty log (only a mount replays
// it), so such an image is not judged by fsck.
#pragma once

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "harness/fs/file_system.h"

namespace powercut::harness {

// The read-only check command for `fs` on `image` (a replay before it excluded).
absl::StatusOr<std::string> FsckCommand(FsKind fs, const std::string& image);

// Checks `image` (a scratch copy: a journal replay writes to it). Returns "" when the file
// system is consistent, else "fsck: <tool> exit <n>: <its last output lines>". Fails only when
// the tool cannot run (not installed: the error names the Debian package).
absl::StatusOr<std::string> FsckImage(FsKind fs, const std::string& image,
                                      double timeout_seconds = 120);

// The engine hook (harness::CheckOptions::before_mount) running FsckImage; a tool that cannot run
// is reported as the problem text, so it shows up in every verdict instead of passing silently.
std::function<std::string(const std::string&)> FsckHook(FsKind fs);

}  // namespace powercut::harness
