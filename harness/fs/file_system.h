// The file-system table: everything powercut knows about a file system it can test, one row per
// file system (harness/fs/file_system.cc). Every per-file-system difference is a field of the
// row; no other file compares an FsKind or names a file system, so adding one is a new row (and
// its FsKind value).
//
// The boot path (docs/boot-recovery.md) is what a machine does after a power cut, from the row's
// boot_steps (an fstab pass: ext4 `e2fsck -p`, f2fs `fsck.f2fs -a`; xfs and btrfs mount without
// one), then the mount (which replays the journal or log), and where the mount still fails, the
// row's recovery_steps, each followed by another mount.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace powercut::harness {

// One value a row; its order is the table's (raw first).
enum class FsKind { kRaw, kExt4, kXfs, kBtrfs, kF2fs };

// One command of the boot path or of a recovery, as argv; "{image}" stands for the image file.
struct FsStep {
  std::string name;               // e.g. "e2fsck -p", for reports
  std::vector<std::string> argv;  // with "{image}"
  // Exit codes that mean "ran and left a file system worth mounting" (fsck(8): 0 clean, 1
  // fixed, 2 fixed and would reboot).
  std::vector<int> ok_exits = {0};
  // Exit codes (among ok_exits) that mean the tool changed the file system beyond a normal
  // journal replay: the state is then "file system repaired".
  std::vector<int> repaired_exits;
};

// The file system's own read-only checker (`--fsck`, harness/fs/fsck.h).
struct FsckSpec {
  // Run first on the scratch copy, where the read-only check would otherwise call a journal that
  // a mount replays inconsistent (ext4: `e2fsck -E journal_only -y`); empty: none.
  std::vector<std::string> replay_argv;
  std::vector<int> replay_ok_exits;
  std::vector<std::string> argv;  // the check itself; empty: no checker (raw)
  std::vector<int> clean_exits = {0};
  // Output that means "only a mount can judge this image" (xfs: a dirty log): not a finding.
  std::string unjudgeable_output;
};

// Reading a number back from the file system on an image: the tool and the line of its output
// that starts with `prefix`; the number follows it, or the last `value_after` on that line.
struct ToolReading {
  std::vector<std::string> argv;  // with "{image}"
  std::string prefix;
  std::string value_after;
  bool log2 = false;  // the number is a power of two's exponent (f2fs: log_blocksize 12)
};

// A guest kernel module a recording or a guest check on this file system loads, and the kernel
// config option that builds it (for the message when the guest kernel lacks it).
struct GuestModule {
  const char* module;
  const char* config_option;
};

struct FileSystem {
  FsKind kind = FsKind::kRaw;
  const char* name = "raw";  // what --fs, manifests and reports call it
  const char* package = "";  // Debian package of its tools ("" for raw)

  // mkfs as a deployment makes it: "{physical_sector}" stands for the disk's physical sector,
  // and the user's `--mkfs-options` and the image follow (MkfsArgv).
  std::vector<std::string> mkfs_argv;
  uint64_t default_image_bytes = 0;  // the recorded disk when `--disk-size` is not given
  uint64_t min_image_bytes = 0;      // the smallest disk mkfs makes it on
  uint32_t block_size = 0;           // what mkfs_argv makes on the default disk (0: raw)
  ToolReading block_size_reading;    // the made file system's block size (vm/machine/disk_image.h)

  // mount(2) data always added (xfs: nouuid, since every crash image is a copy of one file
  // system and shares its UUID).
  const char* mount_options = "";
  // Two copies of one file system can be mounted at once only where this sysfs file exists
  // (btrfs: /sys/fs/btrfs/features/temp_fsid, Linux 6.7+); "" when any kernel can.
  const char* clone_mounts_need = "";
  // Reading the tree without a mount where mounting is not permitted (ext4: debugfs rdump, the
  // boot check having replayed the journal): "{image}" and "{dir}" (the folder to fill); empty:
  // a mount is the only way.
  std::vector<std::string> read_without_mount_argv;
  const char* read_without_mount_method = "";  // for reports

  std::vector<FsStep> boot_steps;      // what a booting machine runs before mounting
  std::vector<FsStep> recovery_steps;  // the documented recovery after a failed mount, in order
  FsckSpec fsck;

  // The guest kernel modules a guest mounting it loads (docs/vm.md).
  std::vector<GuestModule> guest_modules;

  // An overwrite of allocated data is written out of place (copy-on-write, or a log-structured
  // file system), so O_DIRECT and sync_file_range, which never commit metadata, leave the new
  // data unreferenced even with the drive cache off: the catalog's cache-off verdict for such a
  // write differs here (workloads/catalog.h, WorkloadConfig::cache_off_out_of_place).
  bool overwrites_out_of_place = false;
  // An O_DIRECT|O_DSYNC overwrite in place may be acknowledged with neither a cache flush nor FUA
  // (measured on f2fs under Linux 6.1: the first such write after open, docs/results.md,
  // "f2fs"): the catalog's cache-on verdict for it is may-lose here
  // (WorkloadConfig::cache_on_dsync_unflushed).
  bool direct_dsync_overwrite_may_skip_flush = false;
  // Matrix presets whose cells run on every file system by default (`controls`, `databases`)
  // include it; ext4, the default everywhere else, is `default_fs`.
  bool in_per_fs_presets = false;
  bool default_fs = false;

  bool raw() const { return mkfs_argv.empty(); }
  // The row's mkfs for a disk whose physical sector is `physical_sector`; `extra`
  // (`--mkfs-options`, split at blanks) goes before the image, after powercut's own options, so
  // the user's win where mkfs takes the last one. Empty for raw.
  std::vector<std::string> MkfsArgv(uint32_t physical_sector,
                                    const std::vector<std::string>& extra = {}) const;
};

// Every row, raw first, in FsKind order.
std::span<const FileSystem> AllFileSystems();
const FileSystem& FileSystemOf(FsKind kind);
const char* FsName(FsKind kind);
// The row named `text`. The error (a usage error: InvalidArgument) names the flag and lists
// every valid name; there is no fallback.
absl::StatusOr<FsKind> ParseFsKind(std::string_view text, std::string_view flag = "--fs");
// A comma-separated list ("ext4,xfs": `--fs` of run, matrix, fstest), each name as ParseFsKind
// takes it; an empty list or an empty name is an error.
absl::StatusOr<std::vector<FsKind>> ParseFsKinds(std::string_view text,
                                                 std::string_view flag = "--fs");
// The list's names joined with commas, as ParseFsKinds reads them: for reports.
std::string FsListName(const std::vector<FsKind>& kinds);
// The file system a run uses when --fs is not given (the row with default_fs: ext4).
FsKind DefaultFs();
// The catalog's per-file-system verdicts name the row's properties, not file systems
// (`powercut-workload list --json`, "expect_where"): whether `fs` has the property named
// ("overwrites_out_of_place", "direct_dsync_overwrite_may_skip_flush"); an unknown name is an
// error.
absl::StatusOr<bool> HasCatalogProperty(const FileSystem& fs, std::string_view property);
// A file system as a trace manifest names it: "" is a raw disk, else ParseFsKind's names.
absl::StatusOr<FsKind> ParseManifestFs(std::string_view text, std::string_view where);
// "raw, ext4, xfs, btrfs, f2fs" (without raw when `with_raw` is false): for messages.
std::string FsNames(bool with_raw = true);

// argv with every "{image}" replaced.
std::vector<std::string> WithImage(const std::vector<std::string>& argv, const std::string& image);
// argv with every occurrence of each key replaced by its value, inside arguments too.
std::vector<std::string> Expand(const std::vector<std::string>& argv,
                                const std::vector<std::pair<std::string, std::string>>& values);
// argv as one shell-quoted command line, for reports and rebuild commands.
std::string ShellJoin(const std::vector<std::string>& argv);

}  // namespace powercut::harness
