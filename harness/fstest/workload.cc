#include "harness/fstest/workload.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <map>

#include "base/hash.h"
#include "base/image_io.h"
#include "base/status_macros.h"
#include "fmt/format.h"
#include "fmt/ranges.h"
#include "harness/fstest/model_fs.h"

namespace powercut::fstest {
namespace {

namespace stdfs = std::filesystem;

bool IsNameChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

std::vector<std::string_view> Words(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i >= line.size() || line[i] == '#') break;  // the rest of the line is a comment
    const size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    out.push_back(line.substr(start, i - start));
  }
  return out;
}

std::string Usage(OpKind kind) {
  std::string out(OpName(kind));
  const std::string_view args = OpArguments(kind);
  // The names the language's documentation uses for each argument.
  int numbers = 0;
  for (char a : args) {
    switch (a) {
      case 'P':
        out += " P";
        break;
      case 'Q':
        out += " Q";
        break;
      case 'T':
        out += " TARGET";
        break;
      case 'N':
        out += kind == OpKind::kTruncate ? " LEN" : (numbers++ == 0 ? " OFF" : " LEN");
        break;
      case 'M':
        out += " MODE";
        break;
      case 'X':
        out += " NAME";
        break;
      case 'V':
        out += " VALUE";
        break;
      default:
        break;
    }
  }
  if (TakesSyncWrite(kind)) out += " [dsync|sync|rwf_dsync]";
  return out;
}

absl::Status LineError(std::string_view source, int line, std::string_view what) {
  return absl::InvalidArgumentError(fmt::format("{}:{}: {}", source, line, what));
}

absl::Status CheckPath(std::string_view path, bool root_allowed) {
  if (path == "." && root_allowed) return absl::OkStatus();
  if (!path.empty() && path[0] == '/') {
    return absl::InvalidArgumentError(
        fmt::format("path {} is absolute: paths are relative to the file system's root", path));
  }
  for (std::string_view rest = path; !rest.empty();) {
    const size_t slash = rest.find('/');
    const std::string_view part = rest.substr(0, slash);
    if (part == "..") {
      return absl::InvalidArgumentError(
          fmt::format("path {} leaves the file system's root (\"..\")", path));
    }
    if (slash == std::string_view::npos) break;
    rest.remove_prefix(slash + 1);
  }
  if (path == ".") {
    return absl::InvalidArgumentError(
        "path . (the root) may only be fsynced or fdatasynced, not created, changed or removed");
  }
  if (!IsValidPath(path)) {
    return absl::InvalidArgumentError(fmt::format(
        "path {} is not a path of the language: names of [A-Za-z0-9._-] (not . or ..) joined by "
        "single slashes, at most {} bytes",
        path, kMaxPathBytes));
  }
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> Number(std::string_view word, std::string_view what) {
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), v);
  if (ec != std::errc() || end != word.data() + word.size()) {
    return absl::InvalidArgumentError(
        fmt::format("{} {} is not a byte count (a decimal number)", what, word));
  }
  return v;
}

absl::Status CheckXattr(std::string_view name, std::string_view value, bool has_value) {
  bool ok = name.size() > 5 && name.size() <= 255 && name.substr(0, 5) == "user.";
  for (char c : name) ok = ok && IsNameChar(c);
  if (!ok) {
    return absl::InvalidArgumentError(fmt::format(
        "xattr name {} must be user.<name> (of [A-Za-z0-9._-], at most 255 bytes): other "
        "namespaces need privileges or mean something to the file system",
        name));
  }
  if (has_value && (value.empty() || value.size() > 255)) {
    return absl::InvalidArgumentError("an xattr value is 1 to 255 bytes without blanks");
  }
  return absl::OkStatus();
}

// One argument of an operation: args[i] is its letter in OpArguments (numbers counts the
// numbers already read, since OFF comes before LEN).
absl::Status ParseArgument(OpKind kind, std::string_view args, size_t i, std::string_view w,
                           int& numbers, Op& op) {
  const bool root_allowed = kind == OpKind::kFsync || kind == OpKind::kFdatasync;
  switch (args[i]) {
    case 'P':
      RETURN_IF_ERROR(CheckPath(w, root_allowed));
      op.path = std::string(w);
      break;
    case 'Q':
      RETURN_IF_ERROR(CheckPath(w, false));
      (kind == OpKind::kSymlink ? op.path : op.path2) = std::string(w);
      break;
    case 'T':
      if (w.size() > kMaxPathBytes) {
        return absl::InvalidArgumentError(
            fmt::format("symlink target is longer than {} bytes", kMaxPathBytes));
      }
      op.path2 = std::string(w);
      break;
    case 'N': {
      const bool is_length = std::count(args.begin(), args.end(), 'N') == 1 || numbers == 1;
      ASSIGN_OR_RETURN(uint64_t v, Number(w, is_length ? "LEN" : "OFF"));
      if (is_length) {
        op.length = v;
      } else {
        op.offset = v;
      }
      ++numbers;
      break;
    }
    case 'M': {
      const std::optional<FallocMode> mode = FallocModeFromName(w);
      if (!mode) {
        return absl::InvalidArgumentError(
            fmt::format("falloc MODE {} is not one of default, keep_size, punch_hole, zero_range, "
                        "zero_range_keep_size",
                        w));
      }
      op.mode = *mode;
      break;
    }
    case 'X':
      op.name = std::string(w);
      break;
    case 'V':
      op.value = std::string(w);
      break;
    default:
      break;
  }
  return absl::OkStatus();
}

// What the operation's arguments must satisfy together: xattr names, ranges, alignment.
absl::Status CheckOpArguments(const Op& op, std::string_view name, std::string_view args) {
  if (op.kind == OpKind::kSetxattr || op.kind == OpKind::kRemovexattr) {
    RETURN_IF_ERROR(CheckXattr(op.name, op.value, op.kind == OpKind::kSetxattr));
  }
  const bool ranged = args.find('N') != std::string_view::npos && op.kind != OpKind::kTruncate;
  if (ranged && op.kind != OpKind::kSyncFileRange && op.length == 0) {
    return absl::InvalidArgumentError(fmt::format("{}: LEN must be at least 1", name));
  }
  if (op.offset + op.length > kMaxFileBytes ||
      (op.kind == OpKind::kTruncate && op.length > kMaxFileBytes)) {
    return absl::InvalidArgumentError(fmt::format(
        "{} reaches past {} bytes, the largest file the language models", name, kMaxFileBytes));
  }
  if (op.kind == OpKind::kDwrite &&
      (op.offset % kDirectAlignment != 0 || op.length % kDirectAlignment != 0)) {
    return absl::InvalidArgumentError(
        fmt::format("dwrite (O_DIRECT): OFF and LEN must be multiples of {} (got {} and {})",
                    kDirectAlignment, op.offset, op.length));
  }
  return absl::OkStatus();
}

absl::StatusOr<Op> ParseOp(const std::vector<std::string_view>& words) {
  const std::optional<OpKind> kind = OpKindFromName(words[0]);
  if (!kind) {
    return absl::InvalidArgumentError(fmt::format("unknown operation {} (the operations: {})",
                                                  words[0], fmt::join(OpNames(), ", ")));
  }
  const std::string_view args = OpArguments(*kind);
  // write and dwrite take a synchronous flavor as an optional last word.
  const bool flavored = TakesSyncWrite(*kind) && words.size() - 1 == args.size() + 1;
  if (words.size() - 1 != args.size() && !flavored) {
    return absl::InvalidArgumentError(fmt::format(
        "{} takes {} argument{}{}: {}", words[0], args.size(), args.size() == 1 ? "" : "s",
        TakesSyncWrite(*kind) ? " and an optional dsync, sync or rwf_dsync" : "", Usage(*kind)));
  }
  Op op;
  op.kind = *kind;
  if (flavored) {
    const std::optional<SyncWrite> sync = SyncWriteFromName(words.back());
    if (!sync) {
      return absl::InvalidArgumentError(fmt::format(
          "{}: {} is not dsync (O_DSYNC), sync (O_SYNC) or rwf_dsync (pwritev2 RWF_DSYNC)",
          words[0], words.back()));
    }
    op.sync = *sync;
  }
  int numbers = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    RETURN_IF_ERROR(ParseArgument(*kind, args, i, words[i + 1], numbers, op));
  }
  RETURN_IF_ERROR(CheckOpArguments(op, words[0], args));
  return op;
}

}  // namespace

size_t Workload::PersistencePoints() const {
  return static_cast<size_t>(
      std::count_if(ops.begin(), ops.end(), [](const Op& op) { return IsPersistencePoint(op); }));
}

bool IsValidPath(std::string_view path) {
  if (path == ".") return true;
  if (path.empty() || path.size() > kMaxPathBytes) return false;
  size_t start = 0;
  while (true) {
    const size_t slash = path.find('/', start);
    const std::string_view part = path.substr(
        start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (part.empty() || part == "." || part == "..") return false;
    if (!std::all_of(part.begin(), part.end(), IsNameChar)) return false;
    if (slash == std::string_view::npos) return true;
    start = slash + 1;
  }
}

std::string ParentPath(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? std::string(".") : std::string(path.substr(0, slash));
}

std::string BaseName(std::string_view path) {
  const size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

std::string WorkloadText(const Workload& workload, bool with_description) {
  std::string out;
  if (with_description && !workload.description.empty()) {
    size_t start = 0;
    while (start < workload.description.size()) {
      size_t nl = workload.description.find('\n', start);
      if (nl == std::string::npos) nl = workload.description.size();
      out += "# " + workload.description.substr(start, nl - start) + "\n";
      start = nl + 1;
    }
  }
  for (const Op& op : workload.ops) out += OpText(op) + "\n";
  return out;
}

std::string WorkloadId(const Workload& workload) {
  const std::string text = WorkloadText(workload, false);
  return "fst-" + HashBytes({reinterpret_cast<const uint8_t*>(text.data()), text.size()})
                      .Hex()
                      .substr(0, 16);
}

std::string WorkloadShape(const Workload& workload) {
  // Each path gets its role's letter and the order it first appeared in: "creat F1; link F1 F2".
  ModelFs model;
  std::map<std::string, std::string> names;
  std::map<char, int> counts;
  auto role = [&](const std::string& path, char kind) {
    if (path == ".") return std::string(".");
    auto it = names.find(path);
    if (it != names.end()) return it->second;
    std::string name = fmt::format("{}{}", kind, ++counts[kind]);
    names[path] = name;
    return name;
  };
  auto kind_of = [&](const std::string& path, char fallback) {
    std::optional<uint64_t> n = model.Lookup(path);
    if (!n) return fallback;
    switch (model.inode(*n).type) {
      case NodeType::kDir:
        return 'D';
      case NodeType::kSymlink:
        return 'L';
      case NodeType::kFile:
        return 'F';
    }
    return fallback;
  };
  std::vector<std::string> parts;
  for (const Op& op : workload.ops) {
    std::string part(OpName(op.kind));
    const char first_fallback = op.kind == OpKind::kMkdir ? 'D' : 'F';
    if (!op.path.empty() && op.kind != OpKind::kSymlink) {
      part += " " + role(op.path, kind_of(op.path, first_fallback));
    }
    if (op.kind == OpKind::kFalloc) part += " " + std::string(FallocModeName(op.mode));
    if (op.kind == OpKind::kLink || op.kind == OpKind::kRename) {
      part += " " + role(op.path2, kind_of(op.path2, kind_of(op.path, 'F')));
    }
    if (op.kind == OpKind::kSymlink) part += " T " + role(op.path, 'L');
    if (op.sync != SyncWrite::kNone) part += " " + std::string(SyncWriteName(op.sync));
    parts.push_back(std::move(part));
    (void)model.Apply(op);
  }
  return fmt::format("{}", fmt::join(parts, "; "));
}

absl::StatusOr<Workload> ParseWorkload(std::string_view text, std::string_view source) {
  Workload w;
  w.source = std::string(source);
  int line_number = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(start, nl - start);
    start = nl + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const std::vector<std::string_view> words = Words(line);
    if (words.empty()) continue;
    absl::StatusOr<Op> op = ParseOp(words);
    if (!op.ok()) return LineError(source, line_number, StatusMessage(op.status()));
    op->line = line_number;
    w.ops.push_back(std::move(*op));
    if (w.ops.size() > kMaxOps) {
      return LineError(source, line_number,
                       fmt::format("more than {} operations: split the workload", kMaxOps));
    }
  }
  if (w.ops.empty()) {
    return absl::InvalidArgumentError(fmt::format("{}: no operations", source));
  }
  return w;
}

absl::Status ValidateWorkload(const Workload& workload) {
  ModelFs model;
  for (const Op& op : workload.ops) {
    if (absl::Status s = model.Apply(op); !s.ok()) {
      return LineError(workload.source, op.line,
                       fmt::format("{}: {}", OpText(op), StatusMessage(s)));
    }
  }
  const bool promises = std::any_of(workload.ops.begin(), workload.ops.end(),
                                    [](const Op& op) { return IsPromisingPoint(op); });
  if (!promises) {
    return absl::InvalidArgumentError(
        fmt::format("{}: no persistence point that promises anything (fsync, fdatasync, sync or a "
                    "synchronous write): there is nothing to check after a power cut",
                    workload.source));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Workload>> LoadWorkloads(const std::string& path) {
  std::error_code ec;
  std::vector<std::string> files;
  if (stdfs::is_directory(path, ec)) {
    for (const auto& entry : stdfs::directory_iterator(path, ec)) {
      if (entry.is_regular_file() && entry.path().extension() == ".fst") {
        files.push_back(entry.path().string());
      }
    }
    if (ec) {
      return absl::NotFoundError(fmt::format("--workloads {}: {}", path, ec.message()));
    }
    std::sort(files.begin(), files.end());
    if (files.empty()) {
      return absl::NotFoundError(
          fmt::format("--workloads {}: the folder holds no *.fst workload file", path));
    }
  } else if (stdfs::exists(path, ec)) {
    files.push_back(path);
  } else {
    return absl::NotFoundError(fmt::format("--workloads {}: no such file or folder", path));
  }
  std::vector<Workload> out;
  for (const std::string& file : files) {
    ASSIGN_OR_RETURN(std::string text, ReadWholeFile(file));
    ASSIGN_OR_RETURN(Workload w, ParseWorkload(text, file));
    RETURN_IF_ERROR(ValidateWorkload(w));
    out.push_back(std::move(w));
  }
  return out;
}

}  // namespace powercut::fstest
