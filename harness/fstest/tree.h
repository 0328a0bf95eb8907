// What a file system shows under its root, read through the kernel as a program would see it:
// for every object its type, permission bits, size, link count, block count, user-visible xattrs,
// a symlink's target, a file's content hash (whole and per 4 KiB block) and a folder's names.
//
// The same reader takes the expected state in the guest right after each persistence point
// returned (the file system's own view: block counts, preallocation and all) and reads each crash
// state back, so the oracle compares like with like. Reading changes nothing on the disk: files
// are opened with O_NOATIME (no access-time update to write back).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "harness/fstest/model_fs.h"
#include "nlohmann/json.hpp"

namespace powercut::fstest {

inline constexpr uint64_t kBlockHashBytes = 4096;

struct Node {
  NodeType type = NodeType::kFile;
  uint32_t mode = 0;  // permission bits (07777)
  uint64_t size = 0;
  uint64_t nlink = 0;
  uint64_t blocks = 0;  // st_blocks (512-byte units)
  uint64_t ino = 0;     // to count a file's names; never compared across states
  std::map<std::string, std::string> xattrs;
  std::string target;                     // a symlink's
  std::string data_hash;                  // a file's content (DataHash)
  std::vector<std::string> block_hashes;  // a file's, per kBlockHashBytes
  std::vector<std::string> entries;       // a folder's names, sorted
  // A file's bytes as ReadTree read them, for the judge's range promises; never in the JSON (the
  // hashes stand for them there).
  std::string content;
  // Non-empty: the kernel refused to read it back ("read: Input/output error"): what the reader
  // got is in the other fields as far as it went.
  std::string error;
};

struct Tree {
  std::map<std::string, Node> nodes;  // "." is the root; paths as the language writes them
};

// The hash of a file's content, as Node::data_hash and the model (ModelFs) compute it.
std::string DataHash(std::string_view bytes);

// Reads the tree under `root` (a mounted file system's root or any folder). `lost+found` at the
// root is the file system's, not the workload's: it is left out. Fails only when `root` itself
// cannot be read; an object that cannot be read is recorded with its error.
absl::StatusOr<Tree> ReadTree(const std::string& root);

// The tree a model holds (no block counts, link counts of files only): for tests and for the
// content check of a recording (the snapshot's data must equal what the workload wrote).
Tree ModelTree(const ModelFs& model);

nlohmann::json NodeToJson(const Node& node);
absl::StatusOr<Node> NodeFromJson(const nlohmann::json& j);
nlohmann::json TreeToJson(const Tree& tree);
absl::StatusOr<Tree> TreeFromJson(const nlohmann::json& j);

}  // namespace powercut::fstest
