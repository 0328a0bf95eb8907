#include "harness/fstest/op.h"

#include <algorithm>
#include <array>
#include <string>
#include <utility>

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

constexpr std::array<std::pair<SyncWrite, std::string_view>, 3> kSyncWriteNames = {{
    {SyncWrite::kDsync, "dsync"},
    {SyncWrite::kSync, "sync"},
    {SyncWrite::kRwfDsync, "rwf_dsync"},
}};

}  // namespace

bool Op::operator==(const Op& other) const {
  // The source line is where the op was read, not what it does.
  return kind == other.kind && path == other.path && path2 == other.path2 &&
         offset == other.offset && length == other.length && mode == other.mode &&
         sync == other.sync && name == other.name && value == other.value;
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

std::string_view SyncWriteName(SyncWrite sync) {
  for (const auto& [s, name] : kSyncWriteNames) {
    if (s == sync) return name;
  }
  return "";
}

std::optional<SyncWrite> SyncWriteFromName(std::string_view name) {
  for (const auto& [s, n] : kSyncWriteNames) {
    if (n == name) return s;
  }
  return std::nullopt;
}

bool TakesSyncWrite(OpKind kind) { return kind == OpKind::kWrite || kind == OpKind::kDwrite; }

std::vector<std::string_view> OpNames() {
  std::vector<std::string_view> out;
  for (const auto& entry : kOpNames) out.push_back(entry.second);
  return out;
}

bool IsPersistencePoint(const Op& op) {
  return op.kind == OpKind::kFsync || op.kind == OpKind::kFdatasync || op.kind == OpKind::kSync ||
         op.kind == OpKind::kSyncFileRange || op.sync != SyncWrite::kNone;
}

bool IsPromisingPoint(const Op& op) {
  return IsPersistencePoint(op) && op.kind != OpKind::kSyncFileRange;
}

std::string_view OpArguments(OpKind kind) {
  switch (kind) {
    case OpKind::kCreat:
    case OpKind::kMkdir:
    case OpKind::kUnlink:
    case OpKind::kRemove:
    case OpKind::kFsync:
    case OpKind::kFdatasync:
      return "P";
    case OpKind::kWrite:
    case OpKind::kDwrite:
    case OpKind::kMmapwrite:
    case OpKind::kSyncFileRange:
      return "PNN";
    case OpKind::kFalloc:
      return "PMNN";
    case OpKind::kTruncate:
      return "PN";
    case OpKind::kLink:
    case OpKind::kRename:
      return "PQ";
    case OpKind::kSymlink:
      return "TQ";
    case OpKind::kSetxattr:
      return "PXV";
    case OpKind::kRemovexattr:
      return "PX";
    case OpKind::kSync:
      return "";
  }
  return "";
}

std::string OpText(const Op& op) {
  std::string out(OpName(op.kind));
  const std::string_view args = OpArguments(op.kind);
  const bool two_numbers = std::count(args.begin(), args.end(), 'N') == 2;
  bool offset_done = false;
  for (const char arg : args) {
    out += ' ';
    switch (arg) {
      case 'P':
        out += op.path;
        break;
      case 'Q':
        out += op.kind == OpKind::kSymlink ? op.path : op.path2;
        break;
      case 'T':
        out += op.path2;
        break;
      case 'N':
        out += std::to_string(two_numbers && !offset_done ? op.offset : op.length);
        offset_done = true;
        break;
      case 'M':
        out += FallocModeName(op.mode);
        break;
      case 'X':
        out += op.name;
        break;
      case 'V':
        out += op.value;
        break;
      default:
        break;
    }
  }
  if (op.sync != SyncWrite::kNone) out += ' ' + std::string(SyncWriteName(op.sync));
  return out;
}

}  // namespace powercut::fstest
