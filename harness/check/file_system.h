// The file-system table: everything powercut knows about a file system it can test, in one
// place (name, how to make it, how big its disk must be, how it is mounted, what a booting
// machine runs before mounting it, what its documented recovery tools are after a mount fails,
// and its read-only checker). No other file compares file-system names.
//
// The boot path (docs/boot-recovery.md) is what a machine does after a power cut:
//   ext4   `e2fsck -p` (an fstab pass: replays the journal, fixes what is safe), then mount
//   xfs    mount (the kernel replays the log; fstab's fsck pass for xfs is a no-op)
//   btrfs  mount (the kernel replays the tree log; there is no boot-time fsck)
// and where the mount still fails, the recovery an administrator is told to run:
//   ext4   `e2fsck -fy`, then `e2fsck -fy -b <backup superblock>` for each backup location
//   xfs    `xfs_repair`, then `xfs_repair -L` (zeroes a log it cannot replay)
//   btrfs  `btrfs rescue super-recover -y`, then `btrfs rescue zero-log`
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "harness/trace/disk_geometry.h"

namespace powercut::harness {

enum class FsKind { kRaw, kExt4, kXfs, kBtrfs };

// One command of the boot path or of a recovery, as argv; "{image}" stands for the image file.
struct FsStep {
  std::string name;               // e.g. "e2fsck -p", for reports
  std::vector<std::string> argv;  // with "{image}"
  // Exit codes that mean "ran and left a file system worth mounting" (e2fsck: 0 clean, 1 fixed,
  // 2 fixed and would reboot).
  std::vector<int> ok_exits = {0};
  // Exit codes (among ok_exits) that mean the tool changed the file system beyond a normal
  // journal replay: the state is then "file system repaired".
  std::vector<int> repaired_exits;
};

struct FileSystem {
  FsKind kind = FsKind::kRaw;
  const char* name = "raw";
  const char* package = "";  // Debian package of the tools ("" for raw)
  uint64_t default_image_bytes = 0;
  uint64_t min_image_bytes = 0;
  const char* mount_options = "";  // always added (xfs: nouuid, since crash images share a UUID)
  // Two copies of one file system can be mounted at once only with kernel support (btrfs needs
  // /sys/fs/btrfs/features/temp_fsid, Linux 6.7+).
  bool clones_need_temp_fsid = false;

  bool raw() const { return kind == FsKind::kRaw; }
  // mkfs as a deployment makes it on a disk of this geometry: "{image}" is the image file.
  // `extra` (`--mkfs-options`, split at blanks) goes before the image, after powercut's own
  // options, so the user's win where mkfs takes the last one.
  std::vector<std::string> MkfsArgv(const DiskGeometry& geometry,
                                    const std::vector<std::string>& extra = {}) const;
  // What a booting machine runs before mounting (empty: the mount replays the journal itself).
  std::vector<FsStep> BootSteps() const;
  // The documented recovery, in order, after a failed mount; each is followed by a mount try.
  std::vector<FsStep> RecoverySteps() const;
  // The read-only consistency check (`--fsck`), "{image}" as above; empty for raw.
  std::vector<std::string> ReadOnlyCheckArgv() const;
};

const FileSystem& FileSystemOf(FsKind kind);
// "raw", "ext4", "xfs" or "btrfs"; the error names the flag and lists the choices.
absl::StatusOr<FsKind> ParseFsKind(std::string_view text, std::string_view flag = "--fs");
const char* FsName(FsKind kind);
// argv with every "{image}" replaced.
std::vector<std::string> WithImage(const std::vector<std::string>& argv, const std::string& image);
// argv as one shell-quoted command line, for reports and rebuild commands.
std::string ShellJoin(const std::vector<std::string>& argv);

}  // namespace powercut::harness
