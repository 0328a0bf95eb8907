#include "harness/fs/file_system.h"

#include "base/status_macros.h"
#include "fmt/format.h"

namespace powercut::harness {
namespace {

constexpr uint64_t kMiB = 1ull << 20;

// fsck(8)'s exit codes, which e2fsck and fsck.f2fs follow: 0 clean (or the journal replayed),
// 1 errors fixed, 2 fixed and a reboot wanted; 4 and up: left for an administrator.
const std::vector<int> kFsckFixed = {0, 1, 2};

// e2fsck -fy, then from each first backup superblock for 4 KiB, 2 KiB and 1 KiB blocks
// (e2fsck(8)).
std::vector<FsStep> Ext4Recovery() {
  std::vector<FsStep> steps = {{.name = "e2fsck -fy",
                                .argv = {"e2fsck", "-f", "-y", "{image}"},
                                .ok_exits = kFsckFixed,
                                .repaired_exits = kFsckFixed}};
  for (auto [block, backup] : {std::pair{4096, 32768}, {2048, 16384}, {1024, 8193}}) {
    steps.push_back({.name = fmt::format("e2fsck -fy -b {} -B {}", backup, block),
                     .argv = {"e2fsck", "-f", "-y", "-b", std::to_string(backup), "-B",
                              std::to_string(block), "{image}"},
                     .ok_exits = kFsckFixed,
                     .repaired_exits = kFsckFixed});
  }
  return steps;
}

FileSystem RawRow() {
  return {.kind = FsKind::kRaw,
          .name = "raw",
          .default_image_bytes = 128 * kMiB,
          .min_image_bytes = kMiB};
}

// 512 MiB: mke2fs's normal profile (4 KiB blocks; smaller disks get the 1 KiB "small"
// profile) and four block groups, so backup superblocks exist for recovery.
FileSystem Ext4Row() {
  return {.kind = FsKind::kExt4,
          .name = "ext4",
          .package = "e2fsprogs",
          .mkfs_argv = {"mkfs.ext4", "-F", "-q"},
          .default_image_bytes = 512 * kMiB,
          .min_image_bytes = 16 * kMiB,
          .block_size = 4096,
          .block_size_reading = {.argv = {"dumpe2fs", "-h", "{image}"}, .prefix = "Block size:"},
          .read_without_mount_argv = {"debugfs", "-R", "rdump / {dir}", "{image}"},
          .read_without_mount_method = "e2fsck + debugfs rdump (no mount)",
          .boot_steps = {{.name = "e2fsck -p",
                          .argv = {"e2fsck", "-p", "{image}"},
                          .ok_exits = kFsckFixed,
                          .repaired_exits = {1, 2}}},
          .recovery_steps = Ext4Recovery(),
          // e2fsck -n skips the journal and would call every image with a committed but
          // unreplayed transaction inconsistent: replay it first (exit 0/1: replayed or nothing).
          .fsck = {.replay_argv = {"e2fsck", "-E", "journal_only", "-y", "{image}"},
                   .replay_ok_exits = {0, 1},
                   .argv = {"e2fsck", "-fn", "{image}"}},
          .guest_modules = {{"ext4", "CONFIG_EXT4_FS"}},
          .in_per_fs_presets = true,
          .default_fs = true};
}

// On a block device mkfs.xfs takes the physical sector as its sector size; an image file
// has no geometry, so it is said. 300 MiB: mkfs.xfs's own minimum.
FileSystem XfsRow() {
  return {.kind = FsKind::kXfs,
          .name = "xfs",
          .package = "xfsprogs",
          .mkfs_argv = {"mkfs.xfs", "-f", "-q", "-s", "size={physical_sector}"},
          .default_image_bytes = 300 * kMiB,
          .min_image_bytes = 300 * kMiB,
          .block_size = 4096,
          .block_size_reading = {.argv = {"xfs_db", "-r", "-c", "sb 0", "-c", "print blocksize",
                                          "{image}"},
                                 .prefix = "blocksize ="},
          .mount_options = "nouuid",
          // No boot check: fstab's fsck pass for xfs is a no-op; the mount replays the log.
          .recovery_steps = {{.name = "xfs_repair",
                              .argv = {"xfs_repair", "{image}"},
                              .repaired_exits = {0}},
                             {.name = "xfs_repair -L",  // zeroes a log it cannot replay
                              .argv = {"xfs_repair", "-L", "{image}"},
                              .repaired_exits = {0}}},
          // A dirty log cannot be checked without replaying it, which only a mount does.
          .fsck = {.argv = {"xfs_repair", "-n", "{image}"},
                   .unjudgeable_output = "metadata changes in a log"},
          .guest_modules = {{"xfs", "CONFIG_XFS_FS"}},
          .in_per_fs_presets = true};
}

FileSystem BtrfsRow() {
  return {.kind = FsKind::kBtrfs,
          .name = "btrfs",
          .package = "btrfs-progs",
          .mkfs_argv = {"mkfs.btrfs", "-f", "-q"},
          .default_image_bytes = 128 * kMiB,
          .min_image_bytes = 128 * kMiB,
          .block_size = 4096,
          .block_size_reading = {.argv = {"btrfs", "inspect-internal", "dump-super", "{image}"},
                                 .prefix = "sectorsize"},
          .clone_mounts_need = "/sys/fs/btrfs/features/temp_fsid",
          // No boot-time fsck: the mount replays the tree log.
          .recovery_steps = {{.name = "btrfs rescue super-recover",
                              .argv = {"btrfs", "rescue", "super-recover", "-y", "{image}"},
                              .repaired_exits = {0}},
                             {.name = "btrfs rescue zero-log",
                              .argv = {"btrfs", "rescue", "zero-log", "{image}"},
                              .repaired_exits = {0}}},
          .fsck = {.argv = {"btrfs", "check", "--readonly", "{image}"}},
          .guest_modules = {{"btrfs", "CONFIG_BTRFS_FS"}},
          .overwrites_out_of_place = true};
}

// mkfs.f2fs refuses a disk under 52 MiB ("Device size is not sufficient": its six
// segment areas and overprovisioning); 256 MiB leaves ~170 MiB to write (fsck.f2fs's
// "Free space"). fsck.f2fs follows fsck(8)'s exit codes since f2fs-tools 1.14; `-a` (what
// an fstab pass runs) acts only when the kernel flagged the file system, `-f` checks and
// fixes everything. The mount does the roll-forward recovery of fsync'd data.
FileSystem F2fsRow() {
  return {.kind = FsKind::kF2fs,
          .name = "f2fs",
          .package = "f2fs-tools",
          .mkfs_argv = {"mkfs.f2fs", "-f", "-q"},
          .default_image_bytes = 256 * kMiB,
          .min_image_bytes = 52 * kMiB,
          .block_size = 4096,
          .block_size_reading = {.argv = {"fsck.f2fs", "--dry-run", "-d", "1", "{image}"},
                                 .prefix = "log_blocksize",
                                 .value_after = ":",
                                 .log2 = true},
          .boot_steps = {{.name = "fsck.f2fs -a",
                          .argv = {"fsck.f2fs", "-a", "{image}"},
                          .ok_exits = kFsckFixed,
                          .repaired_exits = {1, 2}}},
          .recovery_steps = {{.name = "fsck.f2fs -f -y",
                              .argv = {"fsck.f2fs", "-f", "-y", "{image}"},
                              .ok_exits = kFsckFixed,
                              .repaired_exits = kFsckFixed}},
          .fsck = {.argv = {"fsck.f2fs", "--dry-run", "{image}"}},
          .guest_modules = {{"f2fs", "CONFIG_F2FS_FS"}},
          .direct_dsync_overwrite_may_skip_flush = true};
}

// One row a file system, in FsKind order (a unit test holds the table to it).
const std::vector<FileSystem>& Table() {
  static const std::vector<FileSystem> table = {RawRow(), Ext4Row(), XfsRow(), BtrfsRow(),
                                                F2fsRow()};
  return table;
}

}  // namespace

std::span<const FileSystem> AllFileSystems() { return Table(); }

const FileSystem& FileSystemOf(FsKind kind) {
  // Rows are in FsKind order (a unit test holds the table to it).
  return Table().at(static_cast<size_t>(kind));
}

const char* FsName(FsKind kind) { return FileSystemOf(kind).name; }

std::string FsNames(bool with_raw) {
  std::string out;
  for (const FileSystem& fs : AllFileSystems()) {
    if (fs.raw() && !with_raw) continue;
    if (!out.empty()) out += ", ";
    out += fs.name;
  }
  return out;
}

absl::StatusOr<FsKind> ParseFsKind(std::string_view text, std::string_view flag) {
  for (const FileSystem& fs : AllFileSystems()) {
    if (text == fs.name) return fs.kind;
  }
  return absl::InvalidArgumentError(
      fmt::format("{} '{}': unknown file system; expected one of {}", flag, text, FsNames()));
}

absl::StatusOr<std::vector<FsKind>> ParseFsKinds(std::string_view text, std::string_view flag) {
  if (text.empty()) {
    return absl::InvalidArgumentError(
        fmt::format("{}: give at least one file system ({})", flag, FsNames()));
  }
  std::vector<FsKind> kinds;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    ASSIGN_OR_RETURN(FsKind kind, ParseFsKind(text.substr(start, comma - start), flag));
    kinds.push_back(kind);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return kinds;
}

std::string FsListName(const std::vector<FsKind>& kinds) {
  std::string out;
  for (FsKind kind : kinds) out += (out.empty() ? "" : ",") + std::string(FsName(kind));
  return out;
}

FsKind DefaultFs() {
  for (const FileSystem& fs : AllFileSystems()) {
    if (fs.default_fs) return fs.kind;
  }
  return Table().front().kind;  // unreachable: a unit test holds the table to one default
}

absl::StatusOr<bool> HasCatalogProperty(const FileSystem& fs, std::string_view property) {
  if (property == "overwrites_out_of_place") return fs.overwrites_out_of_place;
  if (property == "direct_dsync_overwrite_may_skip_flush") {
    return fs.direct_dsync_overwrite_may_skip_flush;
  }
  return absl::InvalidArgumentError(
      fmt::format("file-system property '{}': expected overwrites_out_of_place or "
                  "direct_dsync_overwrite_may_skip_flush",
                  property));
}

absl::StatusOr<FsKind> ParseManifestFs(std::string_view text, std::string_view where) {
  if (text.empty()) return Table().front().kind;  // raw: the manifest names no file system
  return ParseFsKind(text, where);
}

std::vector<std::string> FileSystem::MkfsArgv(uint32_t physical_sector,
                                              const std::vector<std::string>& extra) const {
  if (raw()) return {};
  std::vector<std::string> argv =
      Expand(mkfs_argv, {{"{physical_sector}", std::to_string(physical_sector)}});
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.emplace_back("{image}");
  return argv;
}

std::vector<std::string> Expand(const std::vector<std::string>& argv,
                                const std::vector<std::pair<std::string, std::string>>& values) {
  std::vector<std::string> out = argv;
  for (std::string& a : out) {
    for (const auto& [key, value] : values) {
      for (size_t at = a.find(key); at != std::string::npos; at = a.find(key, at + value.size())) {
        a.replace(at, key.size(), value);
      }
    }
  }
  return out;
}

std::vector<std::string> WithImage(const std::vector<std::string>& argv, const std::string& image) {
  return Expand(argv, {{"{image}", image}});
}

std::string ShellJoin(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) {
    if (!out.empty()) out += ' ';
    bool plain = !a.empty() && a.find_first_not_of(
                                   "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRS"
                                   "TUVWXYZ0123456789-_./=:,+@%{}") == std::string::npos;
    if (plain) {
      out += a;
      continue;
    }
    out += '\'';
    for (char c : a) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

}  // namespace powercut::harness
