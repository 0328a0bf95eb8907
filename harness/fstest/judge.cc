#include "harness/fstest/judge.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include "base/status_macros.h"
#include "fmt/format.h"
#include "fmt/ranges.h"

namespace powercut::fstest {
namespace {

// Which write left the block at `offset` of a file read back: the content names its write
// (content.h), so a report can say that a block holds an older write's bytes.
std::string WhoWrote(std::string_view content, uint64_t offset) {
  if (offset >= content.size()) return "";
  const std::string_view block = content.substr(offset, kBlockHashBytes);
  if (block.find_first_not_of('\0') == std::string_view::npos) return " (it holds zeros)";
  if (block.size() >= 5 && block[0] == 'w' &&
      block.substr(1, 4).find_first_not_of("0123456789") == std::string_view::npos) {
    return fmt::format(" (it holds write {}'s bytes)", std::stoi(std::string(block.substr(1, 4))));
  }
  return "";
}

// The first 4 KiB block where two files differ, for a data-mismatch's detail.
std::string FirstDifference(const Node& want, const Node& got) {
  const size_t n = std::max(want.block_hashes.size(), got.block_hashes.size());
  for (size_t i = 0; i < n; ++i) {
    const bool same = i < want.block_hashes.size() && i < got.block_hashes.size() &&
                      want.block_hashes[i] == got.block_hashes[i];
    if (!same) {
      return fmt::format("first differing block at byte {}{}", i * kBlockHashBytes,
                         WhoWrote(got.content, i * kBlockHashBytes));
    }
  }
  return "same blocks, other length";
}

std::optional<Failure> CheckName(const Promise& p, const Node& got) {
  if (got.type != p.expected.type) {
    return Failure{kMetadataMismatch, p.path,
                   fmt::format("is a {}, was a {} at point {} ({})", NodeTypeName(got.type),
                               NodeTypeName(p.expected.type), p.point, p.by)};
  }
  if (got.type == NodeType::kSymlink && got.target != p.expected.target) {
    return Failure{kMetadataMismatch, p.path,
                   fmt::format("points to {}, pointed to {} at point {} ({})", got.target,
                               p.expected.target, p.point, p.by)};
  }
  return std::nullopt;
}

std::optional<Failure> CheckData(const Promise& p, const Node& got) {
  if (!got.error.empty()) {
    return Failure{kDataMismatch, p.path, fmt::format("cannot be read back: {}", got.error)};
  }
  if (got.type != NodeType::kFile) return CheckName(p, got);
  if (got.data_hash == p.expected.data_hash && got.size == p.expected.size) return std::nullopt;
  if (std::find(p.older.begin(), p.older.end(), got.data_hash) != p.older.end()) {
    return Failure{
        kOldContent, p.path,
        fmt::format("holds an older content ({} bytes) than point {} ({}) promised "
                    "({} bytes); {}",
                    got.size, p.point, p.by, p.expected.size, FirstDifference(p.expected, got))};
  }
  return Failure{kDataMismatch, p.path,
                 fmt::format("{} bytes, point {} ({}) promised {} bytes; {}", got.size, p.point,
                             p.by, p.expected.size, FirstDifference(p.expected, got))};
}

// A synchronous write's bytes, and a size that reaches past them.
std::optional<Failure> CheckRange(const Promise& p, const Node& got) {
  if (!got.error.empty()) {
    return Failure{kDataMismatch, p.path, fmt::format("cannot be read back: {}", got.error)};
  }
  if (got.type != NodeType::kFile) return CheckName(p, got);
  const uint64_t end = p.offset + p.length;
  const std::string bytes =
      p.offset >= got.content.size() ? std::string() : got.content.substr(p.offset, p.length);
  const std::string hash = DataHash(bytes);
  if (got.size >= end && hash == p.range_hash) return std::nullopt;
  const std::string what =
      fmt::format("bytes {}-{} (a file of {} bytes), promised by point {} ({})", p.offset, end,
                  got.size, p.point, p.by);
  const std::string who = WhoWrote(got.content, p.offset / kBlockHashBytes * kBlockHashBytes);
  if (std::find(p.older.begin(), p.older.end(), hash) != p.older.end()) {
    return Failure{kOldContent, p.path, "holds an older content in " + what + who};
  }
  return Failure{kDataMismatch, p.path, "holds other data in " + what + who};
}

std::optional<Failure> CheckMeta(const Promise& p, const Node& got, const Tree& tree) {
  const Node& want = p.expected;
  std::vector<std::string> diffs;
  if (got.mode != want.mode) {
    diffs.push_back(fmt::format("mode {:o} (promised {:o})", got.mode, want.mode));
  }
  if (got.nlink != want.nlink) {
    diffs.push_back(fmt::format("link count {} (promised {})", got.nlink, want.nlink));
  } else if (got.type == NodeType::kFile) {
    // The promised count must also be the names that reach the file.
    const uint64_t names = static_cast<uint64_t>(
        std::count_if(tree.nodes.begin(), tree.nodes.end(), [&got](const auto& entry) {
          return entry.second.type == NodeType::kFile && entry.second.ino == got.ino;
        }));
    if (names != got.nlink) {
      diffs.push_back(fmt::format("link count {} as promised, but {} name{} reach it", got.nlink,
                                  names, names == 1 ? "" : "s"));
    }
  }
  if (got.type == NodeType::kFile && p.with_blocks && got.blocks != want.blocks) {
    diffs.push_back(fmt::format("{} blocks (promised {})", got.blocks, want.blocks));
  }
  if (got.xattrs != want.xattrs) {
    std::vector<std::string> names;
    for (const auto& [name, value] : want.xattrs) {
      auto it = got.xattrs.find(name);
      if (it == got.xattrs.end()) {
        names.push_back(name + " missing");
      } else if (it->second != value) {
        names.push_back(name + " changed");
      }
    }
    for (const auto& entry : got.xattrs) {
      if (want.xattrs.count(entry.first) == 0) names.push_back(entry.first + " unexpected");
    }
    diffs.push_back(fmt::format("xattrs: {}", fmt::join(names, ", ")));
  }
  if (diffs.empty()) return std::nullopt;
  return Failure{
      kMetadataMismatch, p.path,
      fmt::format("{}; promised by point {} ({})", fmt::join(diffs, "; "), p.point, p.by)};
}

std::optional<Failure> CheckEntries(const Promise& p, const Node& got) {
  if (got.type != NodeType::kDir) return CheckName(p, got);
  if (!got.error.empty()) {
    return Failure{kDataMismatch, p.path, fmt::format("cannot be listed: {}", got.error)};
  }
  std::vector<std::string> missing, extra;
  std::set_difference(p.expected.entries.begin(), p.expected.entries.end(), got.entries.begin(),
                      got.entries.end(), std::back_inserter(missing));
  std::set_difference(got.entries.begin(), got.entries.end(), p.expected.entries.begin(),
                      p.expected.entries.end(), std::back_inserter(extra));
  if (missing.empty() && extra.empty()) return std::nullopt;
  const std::string where = fmt::format("promised by point {} ({})", p.point, p.by);
  if (!missing.empty()) {
    return Failure{kMissing, p.path, fmt::format("lacks {} {}", fmt::join(missing, ", "), where)};
  }
  const bool old = std::find(p.older.begin(), p.older.end(), Listing(got.entries)) != p.older.end();
  return Failure{old ? kOldContent : kDataMismatch, p.path,
                 fmt::format("still lists {} ({} listing), {}", fmt::join(extra, ", "),
                             old ? "an older" : "a never seen", where)};
}

void RemoveBelow(const std::string& dir, bool top, std::optional<Failure>* failure,
                 const std::string& rel) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    *failure = Failure{kNotRemovable, rel, fmt::format("opendir: {}", std::strerror(errno))};
    return;
  }
  std::vector<std::pair<std::string, bool>> children;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    if (top && name == "lost+found") continue;
    struct stat st {};
    const std::string path = dir + "/" + name;
    const bool is_dir = ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
    children.emplace_back(name, is_dir);
  }
  ::closedir(d);
  for (const auto& [name, is_dir] : children) {
    if (failure->has_value()) return;
    const std::string path = dir + "/" + name;
    const std::string child_rel = rel == "." ? name : rel + "/" + name;
    if (is_dir) {
      RemoveBelow(path, false, failure, child_rel);
      if (failure->has_value()) return;
      if (::rmdir(path.c_str()) != 0) {
        *failure = Failure{kNotRemovable, child_rel,
                           fmt::format("rmdir after emptying it: {}", std::strerror(errno))};
      }
    } else if (::unlink(path.c_str()) != 0) {
      *failure = Failure{kNotRemovable, child_rel, fmt::format("unlink: {}", std::strerror(errno))};
    }
  }
}

}  // namespace

std::vector<std::string> FailureClasses() {
  return {kMissing, kOldContent, kDataMismatch, kMetadataMismatch, kNotRemovable, kFsUnrecoverable};
}

std::string Failure::Text() const { return fmt::format("{} {}: {}", klass, path, detail); }

std::vector<Failure> BrokenPromises(const std::vector<Promise>& promises, const Tree& tree) {
  std::vector<Failure> out;
  for (const Promise& p : promises) {
    auto it = tree.nodes.find(p.path);
    if (it == tree.nodes.end()) {
      out.push_back({kMissing, p.path,
                     fmt::format("not there; its {} was promised by point {} ({})",
                                 AspectName(p.aspect), p.point, p.by)});
      continue;
    }
    std::optional<Failure> f;
    switch (p.aspect) {
      case Aspect::kName:
        f = CheckName(p, it->second);
        break;
      case Aspect::kData:
        f = CheckData(p, it->second);
        break;
      case Aspect::kMeta:
        f = CheckMeta(p, it->second, tree);
        break;
      case Aspect::kEntries:
        f = CheckEntries(p, it->second);
        break;
      case Aspect::kRange:
        f = CheckRange(p, it->second);
        break;
    }
    if (f) out.push_back(std::move(*f));
  }
  return out;
}

std::optional<Failure> RemoveEverything(const std::string& root) {
  std::optional<Failure> failure;
  RemoveBelow(root, true, &failure, ".");
  if (failure) return failure;
  DIR* d = ::opendir(root.c_str());
  if (d == nullptr) return Failure{kNotRemovable, ".", "the root cannot be listed after emptying"};
  std::vector<std::string> left;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != ".." && name != "lost+found") left.push_back(name);
  }
  ::closedir(d);
  if (!left.empty()) {
    return Failure{
        kNotRemovable, ".",
        fmt::format("still lists {} after everything was removed", fmt::join(left, ", "))};
  }
  return std::nullopt;
}

absl::StatusOr<std::string> JudgeMountedState(const std::string& root,
                                              const std::vector<PointPromises>& points) {
  ASSIGN_OR_RETURN(Tree tree, ReadTree(root));
  std::map<int, std::string> why;
  for (const PointPromises& pp : points) {
    const std::vector<Failure> broken = BrokenPromises(pp.promises, tree);
    if (broken.empty()) continue;
    why[pp.point] = broken.front().Text() +
                    (broken.size() > 1 ? fmt::format(" (+{} more)", broken.size() - 1) : "");
  }
  if (const std::optional<Failure> stuck = RemoveEverything(root)) {
    for (const PointPromises& pp : points) why.try_emplace(pp.point, stuck->Text());
  }
  std::string out;
  for (const PointPromises& pp : points) {
    auto it = why.find(pp.point);
    if (it == why.end()) {
      out += fmt::format("have {}\n", pp.point);
    } else {
      out += fmt::format("why {} {}\n", pp.point, it->second);
    }
  }
  return out;
}

}  // namespace powercut::fstest
