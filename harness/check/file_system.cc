#include "harness/check/file_system.h"

#include "fmt/format.h"

namespace powercut::harness {
namespace {

const FileSystem kTable[] = {
    {.kind = FsKind::kRaw,
     .name = "raw",
     .default_image_bytes = 128ull << 20,
     .min_image_bytes = 1ull << 20},
    // 512 MiB: mke2fs's normal profile (4 KiB blocks; smaller disks get the 1 KiB "small"
    // profile) and four block groups, so backup superblocks exist for recovery.
    {.kind = FsKind::kExt4,
     .name = "ext4",
     .package = "e2fsprogs",
     .default_image_bytes = 512ull << 20,
     .min_image_bytes = 16ull << 20},
    {.kind = FsKind::kXfs,
     .name = "xfs",
     .package = "xfsprogs",
     .default_image_bytes = 300ull << 20,
     .min_image_bytes = 300ull << 20,
     .mount_options = "nouuid"},
    {.kind = FsKind::kBtrfs,
     .name = "btrfs",
     .package = "btrfs-progs",
     .default_image_bytes = 128ull << 20,
     .min_image_bytes = 128ull << 20,
     .clones_need_temp_fsid = true},
};

}  // namespace

const FileSystem& FileSystemOf(FsKind kind) {
  for (const FileSystem& fs : kTable) {
    if (fs.kind == kind) return fs;
  }
  return kTable[0];
}

const char* FsName(FsKind kind) { return FileSystemOf(kind).name; }

absl::StatusOr<FsKind> ParseFsKind(std::string_view text, std::string_view flag) {
  for (const FileSystem& fs : kTable) {
    if (text == fs.name) return fs.kind;
  }
  return absl::InvalidArgumentError(
      fmt::format("{} {}: expected ext4, xfs, btrfs or raw", std::string(flag), std::string(text)));
}

std::vector<std::string> FileSystem::MkfsArgv(const DiskGeometry& geometry,
                                              const std::vector<std::string>& extra) const {
  std::vector<std::string> argv;
  switch (kind) {
    case FsKind::kRaw:
      return {};
    case FsKind::kExt4:
      argv = {"mkfs.ext4", "-F", "-q"};
      break;
    case FsKind::kXfs:
      // On a block device mkfs.xfs takes the physical sector as its sector size; an image file
      // has no geometry, so say it.
      argv = {"mkfs.xfs", "-f", "-q", "-s", fmt::format("size={}", geometry.physical_sector)};
      break;
    case FsKind::kBtrfs:
      argv = {"mkfs.btrfs", "-f", "-q"};
      break;
  }
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.emplace_back("{image}");
  return argv;
}

std::vector<FsStep> FileSystem::BootSteps() const {
  if (kind != FsKind::kExt4) return {};
  // fsck -p as an fstab pass runs it. 0: clean (or the journal replayed); 1: errors fixed;
  // 2: fixed, reboot wanted; 4 and up: left for an administrator.
  return {{.name = "e2fsck -p",
           .argv = {"e2fsck", "-p", "{image}"},
           .ok_exits = {0, 1, 2},
           .repaired_exits = {1, 2}}};
}

std::vector<FsStep> FileSystem::RecoverySteps() const {
  switch (kind) {
    case FsKind::kRaw:
      return {};
    case FsKind::kExt4: {
      std::vector<FsStep> steps = {{.name = "e2fsck -fy",
                                    .argv = {"e2fsck", "-f", "-y", "{image}"},
                                    .ok_exits = {0, 1, 2},
                                    .repaired_exits = {0, 1, 2}}};
      // The first backup superblock for 4 KiB, 2 KiB and 1 KiB blocks (e2fsck(8)).
      for (auto [block, backup] : {std::pair{4096, 32768}, {2048, 16384}, {1024, 8193}}) {
        steps.push_back({.name = fmt::format("e2fsck -fy -b {} -B {}", backup, block),
                         .argv = {"e2fsck", "-f", "-y", "-b", std::to_string(backup), "-B",
                                  std::to_string(block), "{image}"},
                         .ok_exits = {0, 1, 2},
                         .repaired_exits = {0, 1, 2}});
      }
      return steps;
    }
    case FsKind::kXfs:
      return {{.name = "xfs_repair", .argv = {"xfs_repair", "{image}"}, .repaired_exits = {0}},
              {.name = "xfs_repair -L",
               .argv = {"xfs_repair", "-L", "{image}"},
               .repaired_exits = {0}}};
    case FsKind::kBtrfs:
      return {{.name = "btrfs rescue super-recover",
               .argv = {"btrfs", "rescue", "super-recover", "-y", "{image}"},
               .repaired_exits = {0}},
              {.name = "btrfs rescue zero-log",
               .argv = {"btrfs", "rescue", "zero-log", "{image}"},
               .repaired_exits = {0}}};
  }
  return {};
}

std::vector<std::string> FileSystem::ReadOnlyCheckArgv() const {
  switch (kind) {
    case FsKind::kRaw:
      return {};
    case FsKind::kExt4:
      return {"e2fsck", "-fn", "{image}"};
    case FsKind::kXfs:
      return {"xfs_repair", "-n", "{image}"};
    case FsKind::kBtrfs:
      return {"btrfs", "check", "--readonly", "{image}"};
  }
  return {};
}

std::vector<std::string> WithImage(const std::vector<std::string>& argv, const std::string& image) {
  std::vector<std::string> out = argv;
  for (std::string& a : out) {
    if (a == "{image}") a = image;
  }
  return out;
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
