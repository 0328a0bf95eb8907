// A model of the file system a workload runs on: POSIX semantics for names, data and xattrs,
// nothing about blocks or the disk. Three users:
//   - ValidateWorkload: an operation that could not run where it stands (write to a path that
//     does not exist, mkdir over a file, remove a non-empty folder) is refused before any guest
//     boots, with the errno Linux would give;
//   - the generator (generator.h): which dependencies an operation needs first;
//   - the promises (promises.h): which earlier promises an operation lapses, and the content every
//     file held after every operation (an `old-content` is one of those).
// Paths never traverse symbolic links: the language does not follow them (docs/fstest.md).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "harness/fstest/op.h"

namespace powercut::fstest {

enum class NodeType { kFile, kDir, kSymlink };
std::string_view NodeTypeName(NodeType type);  // "file", "dir", "symlink"

class ModelFs {
 public:
  struct Inode {
    NodeType type = NodeType::kFile;
    std::string data;  // a file's bytes; a symlink's target
    std::map<std::string, std::string> xattrs;
    std::map<std::string, uint64_t> entries;  // a folder's names -> inode numbers
    uint64_t nlink = 1;
  };

  // What one operation changed, for the promise bookkeeping.
  struct Effects {
    std::set<uint64_t> data;     // inodes whose bytes or size changed
    std::set<uint64_t> meta;     // inodes whose mode, link count, blocks or xattrs may have changed
    std::set<uint64_t> entries;  // folders whose names changed
    // Paths that no longer name what they named before the operation (removed, renamed away,
    // replaced), each with everything below it.
    std::vector<std::string> unnamed;
  };

  ModelFs();  // an empty root folder, inode 1

  // Applies one operation, or fails as Linux would (the message names the errno and the path).
  // Writes take their bytes from ContentFor with the next write counter (content.h).
  absl::Status Apply(const Op& op, Effects* effects = nullptr);

  // The inode a path names (never following symbolic links), or nullopt.
  std::optional<uint64_t> Lookup(std::string_view path) const;
  const Inode& inode(uint64_t number) const { return inodes_.at(number); }
  bool Exists(std::string_view path) const { return Lookup(path).has_value(); }
  // Every path that names `number` ("." for the root), sorted.
  std::vector<std::string> PathsOf(uint64_t number) const;
  // Every path in the tree but the root, sorted (parents before their children).
  std::vector<std::string> AllPaths() const;
  // The writes applied so far (the counter of the last one).
  uint64_t writes() const { return writes_; }

 private:
  struct Parent {
    uint64_t dir = 0;
    std::string name;
  };
  absl::StatusOr<Parent> ParentOf(std::string_view path) const;
  absl::StatusOr<uint64_t> Existing(std::string_view path) const;
  absl::StatusOr<uint64_t> ExistingFile(std::string_view path) const;
  void Walk(uint64_t dir, const std::string& prefix, std::vector<std::string>* paths,
            std::optional<uint64_t> only) const;
  std::vector<std::string> Subtree(std::string_view path) const;
  void Unlink(uint64_t dir, const std::string& name);
  absl::Status ApplyData(const Op& op, uint64_t file, Effects* effects);
  absl::Status ApplyRename(const Op& op, Effects* effects);
  // A new node named by `parent`: its folder's entries and metadata change.
  void AddNode(const Parent& parent, Inode node, Effects& fx);
  absl::Status ApplyCreat(const Op& op, Effects& fx);
  absl::Status ApplyNewNode(const Op& op, Effects& fx);
  absl::Status ApplyLink(const Op& op, Effects& fx);
  absl::Status ApplyUnlink(const Op& op, Effects& fx);
  absl::Status ApplyXattr(const Op& op, Effects& fx);
  absl::Status ApplySync(const Op& op) const;

  std::map<uint64_t, Inode> inodes_;
  uint64_t next_ = 2;
  uint64_t writes_ = 0;
};

}  // namespace powercut::fstest
