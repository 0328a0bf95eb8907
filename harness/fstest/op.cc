#include "harness/fstest/op.h"

#include <array>
#include <utility>

#include "fmt/format.h"

namespace powercut::fstest {
namespace {

constexpr std::array<std::pair<OpKind, std::string_view>, 18> kOpNames = {{
    {OpKind::kCreat, "creat"},
    {OpKind::kMkdir, "mkdir"},
    {OpKind::kWrite, "write"},
    {OpKind::kDwrite, "dwrite"},
    {OpKind::kMmapwrite, "mmapwrite"},
    {OpKind::kFalloc, "falloc"},
    {OpKind::kTruncate, "truncate"},
    {OpKind::kLink, "link"},
    {OpKind::kSymlink, "symlink"},
    {OpKind::kUnlink, "unlink"},
    {OpKind::kRemove, "remove"},
    {OpKind::kRename, "rename"},
    {OpKind::kSetxattr, "setxattr"},
    {OpKind::kRemovexattr, "removexattr"},
    {OpKind::kFsync, "fsync"},
    {OpKind::kFdatasync, "fdatasync"},
    {OpKind::kSync, "sync"},
    {OpKind::kSyncFileRange, "sync_file_range"},
}};

constexpr std::array<std::pair<FallocMode, std::string_view>, 5> kModeNames = {{
    {FallocMode::kDefault, "default"},
    {FallocMode::kKeepSize, "keep_size"},
    {FallocMode::kPunchHole, "punch_hole"},
    {FallocMode::kZeroRange, "zero_range"},
    {FallocMode::kZeroRangeKeepSize, "zero_range_keep_size"},
}};

}  // namespace

bool Op::operator==(const Op& other) const {
  // The source line is where the op was read, not what it does.
  return kind == other.kind && path == other.path && path2 == other.path2 &&
         offset == other.offset && length == other.length && mode == other.mode &&
         name == other.name && value == other.value;
}

std::string_view OpName(OpKind kind) {
  for (const auto& [k, name] : kOpNames) {
    if (k == kind) return name;
  }
  return "?";
}

std::optional<OpKind> OpKindFromName(std::string_view name) {
  for (const auto& [k, n] : kOpNames) {
    if (n == name) return k;
  }
  return std::nullopt;
}

std::string_view FallocModeName(FallocMode mode) {
  for (const auto& [m, name] : kModeNames) {
    if (m == mode) return name;
  }
  return "?";
}

std::optional<FallocMode> FallocModeFromName(std::string_view name) {
  for (const auto& [m, n] : kModeNames) {
    if (n == name) return m;
  }
  return std::nullopt;
}

std::vector<std::string_view> OpNames() {
  std::vector<std::string_view> out;
  for (const auto& entry : kOpNames) out.push_back(entry.second);
  return out;
}

bool IsPersistencePoint(OpKind kind) {
  return kind == OpKind::kFsync || kind == OpKind::kFdatasync || kind == OpKind::kSync ||
         kind == OpKind::kSyncFileRange;
}

bool IsPromisingPoint(OpKind kind) {
  return IsPersistencePoint(kind) && kind != OpKind::kSyncFileRange;
}

std::string OpText(const Op& op) {
  const std::string_view name = OpName(op.kind);
  switch (op.kind) {
    case OpKind::kCreat:
    case OpKind::kMkdir:
    case OpKind::kUnlink:
    case OpKind::kRemove:
    case OpKind::kFsync:
    case OpKind::kFdatasync:
      return fmt::format("{} {}", name, op.path);
    case OpKind::kSync:
      return std::string(name);
    case OpKind::kWrite:
    case OpKind::kDwrite:
    case OpKind::kMmapwrite:
    case OpKind::kSyncFileRange:
      return fmt::format("{} {} {} {}", name, op.path, op.offset, op.length);
    case OpKind::kFalloc:
      return fmt::format("{} {} {} {} {}", name, op.path, FallocModeName(op.mode), op.offset,
                         op.length);
    case OpKind::kTruncate:
      return fmt::format("{} {} {}", name, op.path, op.length);
    case OpKind::kLink:
    case OpKind::kRename:
      return fmt::format("{} {} {}", name, op.path, op.path2);
    case OpKind::kSymlink:
      return fmt::format("{} {} {}", name, op.path2, op.path);
    case OpKind::kSetxattr:
      return fmt::format("{} {} {} {}", name, op.path, op.name, op.value);
    case OpKind::kRemovexattr:
      return fmt::format("{} {} {}", name, op.path, op.name);
  }
  return std::string(name);
}

}  // namespace powercut::fstest
