// What each persistence point promised, and which promises are still in force at every later
// point (docs/fstest.md, "The promises"). A promise binds one aspect of one path to its value in
// the expected state taken in the guest right after the point returned:
//
//   fsync P (file)      P's name, its data (content and size) and its metadata (mode, link count,
//                       block count, user xattrs)
//   fsync D (folder)    D's name, its entries and its metadata (mode, link count, xattrs)
//   fdatasync P         P's name and data (a folder: its name and entries)
//   sync                every object in the tree: names, data, entries, metadata
//   sync_file_range     nothing (data written out, neither metadata committed nor cache flushed)
//   write/dwrite P OFF LEN dsync|rwf_dsync
//                       P's name and the range's bytes with a size of at least OFF+LEN; P's
//                       whole data (content and size) where it was promised before the write
//                       (or P was empty), since then the write is its only change
//   write/dwrite P OFF LEN sync
//                       the same and P's metadata as fsync binds it; its block count only where
//                       the whole data is bound (other unwritten data may still be delayed)
//
// Binding the *name* of a newly created or renamed P on fsync(P) is what ext4, xfs and btrfs do
// (and what their developers treat as a bug when it fails); POSIX is weaker: it says nothing of
// the directory entry. A promise lapses when a later operation changes what it binds (a write
// lapses the file's data and metadata; a new name in D lapses D's entries; unlink, rename and
// replacement lapse every promise on the old path and below it), because after such an operation
// a crash may legitimately show either version until the next persistence point binds it again.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "harness/fstest/tree.h"
#include "harness/fstest/workload.h"
#include "nlohmann/json.hpp"

namespace powercut::fstest {

// A folder's entries as the promises record them (and the judge compares them): "a/b/c".
std::string Listing(const std::vector<std::string>& entries);

// kRange: the bytes of [offset, offset + length) of a file and a size of at least its end (what a
// synchronous write promises where the file has other data not yet persisted).
enum class Aspect { kName, kData, kMeta, kEntries, kRange };
std::string_view AspectName(Aspect aspect);  // "name", "data", "meta", "entries", "range"

struct Promise {
  std::string path;
  Aspect aspect = Aspect::kName;
  int point = 0;   // the persistence point that made it (1-based)
  std::string by;  // that point's operation, e.g. "fsync A/foo"
  Node expected;   // the object at `point`, as the guest read it
  // kRange: the range and the hash (DataHash) of its bytes at `point`.
  uint64_t offset = 0, length = 0;
  std::string range_hash;
  // kMeta: whether the block count is bound (not by a synchronous write to a file that has other
  // data its write-back may still delay).
  bool with_blocks = true;
  // Older values of what the promise binds, to tell a crash that kept an old version from one
  // that kept garbage: kData, the content hashes the path held after earlier operations; kEntries,
  // earlier listings of the folder (names joined by '/'); kRange, the range's earlier hashes.
  std::vector<std::string> older;
};

struct PointPromises {
  int point = 0;   // 1-based: the workload's k-th persistence point, acknowledged as `ack k`
  std::string by;  // its operation
  std::vector<Promise> promises;  // in force right after it: its own and the older ones not lapsed
};

// The promises in force at each persistence point. `snapshots[k-1]` is the tree read right after
// point k returned. Fails when a snapshot disagrees with what the workload wrote (a path, type or
// content the model does not have): no crash is involved then, and nothing can be judged against
// it (the error names the point and the path).
absl::StatusOr<std::vector<PointPromises>> PromisesAtPoints(const Workload& workload,
                                                            const std::vector<Tree>& snapshots);

nlohmann::json PromisesToJson(const std::vector<PointPromises>& points);
absl::StatusOr<std::vector<PointPromises>> PromisesFromJson(const nlohmann::json& j);

}  // namespace powercut::fstest
