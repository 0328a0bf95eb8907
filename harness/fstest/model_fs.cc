#include "harness/fstest/model_fs.h"

#include <algorithm>

#include "base/status_macros.h"
#include "fmt/format.h"
#include "harness/fstest/content.h"
#include "harness/fstest/workload.h"

namespace powercut::fstest {
namespace {

constexpr uint64_t kRoot = 1;

absl::Status Errno(std::string_view code, std::string_view path, std::string_view why) {
  return absl::FailedPreconditionError(fmt::format("{}: {} {}", code, path, why));
}

std::vector<std::string> Components(std::string_view path) {
  std::vector<std::string> out;
  if (path == ".") return out;
  size_t start = 0;
  while (start <= path.size()) {
    const size_t slash = path.find('/', start);
    const size_t end = slash == std::string_view::npos ? path.size() : slash;
    out.emplace_back(path.substr(start, end - start));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return out;
}

bool IsBelow(std::string_view path, std::string_view ancestor) {
  if (ancestor == ".") return path != ".";
  return path.size() > ancestor.size() && path.substr(0, ancestor.size()) == ancestor &&
         path[ancestor.size()] == '/';
}

}  // namespace

std::string_view NodeTypeName(NodeType type) {
  switch (type) {
    case NodeType::kFile:
      return "file";
    case NodeType::kDir:
      return "dir";
    case NodeType::kSymlink:
      return "symlink";
  }
  return "?";
}

ModelFs::ModelFs() {
  Inode root;
  root.type = NodeType::kDir;
  root.nlink = 2;
  inodes_[kRoot] = root;
}

std::optional<uint64_t> ModelFs::Lookup(std::string_view path) const {
  uint64_t at = kRoot;
  for (const std::string& name : Components(path)) {
    const Inode& dir = inodes_.at(at);
    if (dir.type != NodeType::kDir) return std::nullopt;
    auto it = dir.entries.find(name);
    if (it == dir.entries.end()) return std::nullopt;
    at = it->second;
  }
  return at;
}

absl::StatusOr<ModelFs::Parent> ModelFs::ParentOf(std::string_view path) const {
  if (path == ".") return Errno("EBUSY", path, "is the root folder");
  const std::string parent = ParentPath(path);
  std::optional<uint64_t> dir = Lookup(parent);
  if (!dir) return Errno("ENOENT", path, fmt::format("has no parent folder {}", parent));
  if (inodes_.at(*dir).type != NodeType::kDir) {
    return Errno("ENOTDIR", path, fmt::format("has a parent {} that is not a folder", parent));
  }
  return Parent{.dir = *dir, .name = BaseName(path)};
}

absl::StatusOr<uint64_t> ModelFs::Existing(std::string_view path) const {
  std::optional<uint64_t> n = Lookup(path);
  if (!n) return Errno("ENOENT", path, "does not exist");
  return *n;
}

absl::StatusOr<uint64_t> ModelFs::ExistingFile(std::string_view path) const {
  ASSIGN_OR_RETURN(uint64_t n, Existing(path));
  switch (inodes_.at(n).type) {
    case NodeType::kFile:
      return n;
    case NodeType::kDir:
      return Errno("EISDIR", path, "is a folder, not a file");
    case NodeType::kSymlink:
      return Errno("ELOOP", path, "is a symbolic link (the language does not follow links)");
  }
  return n;
}

void ModelFs::Walk(uint64_t dir, const std::string& prefix, std::vector<std::string>* paths,
                   std::optional<uint64_t> only) const {
  for (const auto& [name, child] : inodes_.at(dir).entries) {
    const std::string path = prefix.empty() ? name : prefix + "/" + name;
    if (!only || *only == child) paths->push_back(path);
    if (inodes_.at(child).type == NodeType::kDir) Walk(child, path, paths, only);
  }
}

std::vector<std::string> ModelFs::PathsOf(uint64_t number) const {
  std::vector<std::string> out;
  if (number == kRoot) out.emplace_back(".");
  Walk(kRoot, "", &out, number);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> ModelFs::AllPaths() const {
  std::vector<std::string> out;
  Walk(kRoot, "", &out, std::nullopt);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> ModelFs::Subtree(std::string_view path) const {
  std::vector<std::string> out = {std::string(path)};
  for (const std::string& p : AllPaths()) {
    if (IsBelow(p, path)) out.push_back(p);
  }
  return out;
}

void ModelFs::Unlink(uint64_t dir, const std::string& name) {
  Inode& parent = inodes_.at(dir);
  const uint64_t child = parent.entries.at(name);
  parent.entries.erase(name);
  Inode& node = inodes_.at(child);
  if (node.type == NodeType::kDir) {
    --parent.nlink;
    inodes_.erase(child);
    return;
  }
  if (--node.nlink == 0) inodes_.erase(child);
}

absl::Status ModelFs::ApplyData(const Op& op, uint64_t file, Effects* effects) {
  std::string& data = inodes_.at(file).data;
  const uint64_t end = op.offset + op.length;
  if (end > kMaxFileBytes) {
    return Errno(
        "EFBIG", op.path,
        fmt::format("would reach byte {} (the language's limit is {})", end, kMaxFileBytes));
  }
  auto grow_to = [&data](uint64_t size) {
    if (data.size() < size) data.resize(size, '\0');
  };
  switch (op.kind) {
    case OpKind::kWrite:
    case OpKind::kDwrite:
    case OpKind::kMmapwrite: {
      // mmapwrite first extends the file with fallocate(0, OFF, LEN), as CrashMonkey's does, so
      // the mapping never reaches past the end of the file.
      grow_to(end);
      const std::string bytes = ContentFor(op.path, ++writes_, op.offset, op.length);
      data.replace(op.offset, op.length, bytes);
      break;
    }
    case OpKind::kTruncate:
      data.resize(op.length, '\0');
      break;
    case OpKind::kFalloc:
      switch (op.mode) {
        case FallocMode::kDefault:
          grow_to(end);
          break;
        case FallocMode::kKeepSize:
          break;
        case FallocMode::kZeroRange:
          grow_to(end);
          data.replace(op.offset, op.length, op.length, '\0');
          break;
        case FallocMode::kPunchHole:
        case FallocMode::kZeroRangeKeepSize:
          if (op.offset < data.size()) {
            const uint64_t n = std::min<uint64_t>(end, data.size()) - op.offset;
            data.replace(op.offset, n, n, '\0');
          }
          break;
      }
      break;
    default:
      break;
  }
  if (effects != nullptr) {
    effects->data.insert(file);
    effects->meta.insert(file);
  }
  return absl::OkStatus();
}

absl::Status ModelFs::ApplyRename(const Op& op, Effects* effects) {
  ASSIGN_OR_RETURN(uint64_t moved, Existing(op.path));
  ASSIGN_OR_RETURN(Parent from, ParentOf(op.path));
  ASSIGN_OR_RETURN(Parent to, ParentOf(op.path2));
  if (op.path == op.path2) return absl::OkStatus();  // rename(2) of a name onto itself
  const bool moving_dir = inodes_.at(moved).type == NodeType::kDir;
  if (moving_dir && IsBelow(op.path2, op.path)) {
    return Errno("EINVAL", op.path2,
                 fmt::format("is inside {}, the folder being renamed", op.path));
  }
  std::optional<uint64_t> replaced = Lookup(op.path2);
  if (replaced) {
    const Inode& old = inodes_.at(*replaced);
    if (moving_dir && old.type != NodeType::kDir) {
      return Errno("ENOTDIR", op.path2, "is not a folder, and a folder is renamed onto it");
    }
    if (!moving_dir && old.type == NodeType::kDir) {
      return Errno("EISDIR", op.path2, "is a folder, and a non-folder is renamed onto it");
    }
    if (old.type == NodeType::kDir && !old.entries.empty()) {
      return Errno("ENOTEMPTY", op.path2, "is a folder that is not empty");
    }
    if (*replaced == moved) return absl::OkStatus();  // two links to one file: nothing happens
  }
  if (effects != nullptr) {
    for (std::string& p : Subtree(op.path)) effects->unnamed.push_back(std::move(p));
    if (replaced) {
      for (std::string& p : Subtree(op.path2)) effects->unnamed.push_back(std::move(p));
    }
    effects->entries.insert({from.dir, to.dir});
    effects->meta.insert({from.dir, to.dir, moved});
  }
  if (replaced) {
    if (effects != nullptr && inodes_.at(*replaced).nlink > 1) effects->meta.insert(*replaced);
    Unlink(to.dir, to.name);
  }
  inodes_.at(from.dir).entries.erase(from.name);
  inodes_.at(to.dir).entries[to.name] = moved;
  if (moving_dir) {
    --inodes_.at(from.dir).nlink;
    ++inodes_.at(to.dir).nlink;
  }
  return absl::OkStatus();
}

void ModelFs::AddNode(const Parent& parent, Inode node, Effects& fx) {
  inodes_[next_] = std::move(node);
  inodes_.at(parent.dir).entries[parent.name] = next_++;
  fx.entries.insert(parent.dir);
  fx.meta.insert(parent.dir);
}

// creat(2): a new empty file, or an existing one truncated.
absl::Status ModelFs::ApplyCreat(const Op& op, Effects& fx) {
  ASSIGN_OR_RETURN(Parent parent, ParentOf(op.path));
  if (Exists(op.path)) {
    // creat(2) of an existing file truncates it.
    ASSIGN_OR_RETURN(uint64_t file, ExistingFile(op.path));
    inodes_.at(file).data.clear();
    fx.data.insert(file);
    fx.meta.insert(file);
    return absl::OkStatus();
  }
  AddNode(parent, Inode{}, fx);
  return absl::OkStatus();
}

// mkdir(2) or symlink(2): a new folder or link that must not exist yet.
absl::Status ModelFs::ApplyNewNode(const Op& op, Effects& fx) {
  ASSIGN_OR_RETURN(Parent parent, ParentOf(op.path));
  if (Exists(op.path)) return Errno("EEXIST", op.path, "already exists");
  Inode node;
  node.type = op.kind == OpKind::kMkdir ? NodeType::kDir : NodeType::kSymlink;
  if (op.kind == OpKind::kMkdir) {
    node.nlink = 2;
    ++inodes_.at(parent.dir).nlink;
  } else {
    node.data = op.path2;
  }
  AddNode(parent, std::move(node), fx);
  return absl::OkStatus();
}

// link(2): one more name for an existing non-folder.
absl::Status ModelFs::ApplyLink(const Op& op, Effects& fx) {
  ASSIGN_OR_RETURN(uint64_t file, Existing(op.path));
  if (inodes_.at(file).type == NodeType::kDir) {
    return Errno("EPERM", op.path, "is a folder (hard links to folders are not allowed)");
  }
  ASSIGN_OR_RETURN(Parent parent, ParentOf(op.path2));
  if (Exists(op.path2)) return Errno("EEXIST", op.path2, "already exists");
  ++inodes_.at(file).nlink;
  inodes_.at(parent.dir).entries[parent.name] = file;
  fx.meta.insert({file, parent.dir});
  fx.entries.insert(parent.dir);
  return absl::OkStatus();
}

// unlink(2) of a file, or remove(3) of a file or an empty folder.
absl::Status ModelFs::ApplyUnlink(const Op& op, Effects& fx) {
  ASSIGN_OR_RETURN(uint64_t node, Existing(op.path));
  ASSIGN_OR_RETURN(Parent parent, ParentOf(op.path));
  const Inode& n = inodes_.at(node);
  if (n.type == NodeType::kDir) {
    if (op.kind == OpKind::kUnlink) {
      return Errno("EISDIR", op.path, "is a folder (unlink removes files; use remove)");
    }
    if (!n.entries.empty()) return Errno("ENOTEMPTY", op.path, "is a folder that is not empty");
  }
  fx.unnamed.emplace_back(op.path);
  fx.entries.insert(parent.dir);
  fx.meta.insert(parent.dir);
  if (n.nlink > 1 && n.type != NodeType::kDir) fx.meta.insert(node);
  Unlink(parent.dir, parent.name);
  return absl::OkStatus();
}

// setxattr(2) or removexattr(2) of a user xattr; links have none.
absl::Status ModelFs::ApplyXattr(const Op& op, Effects& fx) {
  ASSIGN_OR_RETURN(uint64_t node, Existing(op.path));
  Inode& n = inodes_.at(node);
  if (n.type == NodeType::kSymlink) {
    return Errno("EPERM", op.path, "is a symbolic link (user xattrs are not allowed on links)");
  }
  if (op.kind == OpKind::kSetxattr) {
    n.xattrs[op.name] = op.value;
  } else if (n.xattrs.erase(op.name) == 0) {
    return Errno("ENODATA", op.path, fmt::format("has no xattr {}", op.name));
  }
  fx.meta.insert(node);
  return absl::OkStatus();
}

// fsync(2) or fdatasync(2): changes no content, but needs a node that is not a link.
absl::Status ModelFs::ApplySync(const Op& op) const {
  ASSIGN_OR_RETURN(uint64_t node, Existing(op.path));
  if (inodes_.at(node).type == NodeType::kSymlink) {
    return Errno("ELOOP", op.path, "is a symbolic link (the language does not follow links)");
  }
  return absl::OkStatus();
}

absl::Status ModelFs::Apply(const Op& op, Effects* effects) {
  Effects ignored;
  Effects* fx = effects != nullptr ? effects : &ignored;
  switch (op.kind) {
    case OpKind::kCreat:
      return ApplyCreat(op, *fx);
    case OpKind::kMkdir:
    case OpKind::kSymlink:
      return ApplyNewNode(op, *fx);
    case OpKind::kWrite:
    case OpKind::kDwrite:
    case OpKind::kMmapwrite:
    case OpKind::kFalloc:
    case OpKind::kTruncate: {
      ASSIGN_OR_RETURN(uint64_t file, ExistingFile(op.path));
      return ApplyData(op, file, fx);
    }
    case OpKind::kLink:
      return ApplyLink(op, *fx);
    case OpKind::kUnlink:
    case OpKind::kRemove:
      return ApplyUnlink(op, *fx);
    case OpKind::kRename:
      return ApplyRename(op, fx);
    case OpKind::kSetxattr:
    case OpKind::kRemovexattr:
      return ApplyXattr(op, *fx);
    case OpKind::kFsync:
    case OpKind::kFdatasync:
      return ApplySync(op);
    case OpKind::kSyncFileRange: {
      ASSIGN_OR_RETURN(uint64_t file, ExistingFile(op.path));
      (void)file;
      return absl::OkStatus();
    }
    case OpKind::kSync:
      return absl::OkStatus();
  }
  return absl::OkStatus();
}

}  // namespace powercut::fstest
