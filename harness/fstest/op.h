// One operation of a file-system test workload (docs/fstest.md, "The workload language"): what it
// does, its arguments, and its canonical text. The language has one operation a line:
//
//   creat P                    mkdir P                   write P OFF LEN
//   dwrite P OFF LEN           mmapwrite P OFF LEN       falloc P MODE OFF LEN
//   truncate P LEN             link P Q                  symlink TARGET Q
//   unlink P                   remove P                  rename P Q
//   setxattr P NAME VALUE      removexattr P NAME
//   fsync P    fdatasync P     sync                      sync_file_range P OFF LEN
//   write P OFF LEN dsync|sync|rwf_dsync                 dwrite P OFF LEN dsync|sync|rwf_dsync
//
// P and Q are paths relative to the file system's root ("." is the root itself, for fsync); the
// last four and the synchronous writes (O_DSYNC or O_SYNC at open, or pwritev2's RWF_DSYNC) are
// persistence points. An Op is a value: it names paths, never file descriptors.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace powercut::fstest {

enum class OpKind {
  kCreat,
  kMkdir,
  kWrite,
  kDwrite,
  kMmapwrite,
  kFalloc,
  kTruncate,
  kLink,
  kSymlink,
  kUnlink,
  kRemove,
  kRename,
  kSetxattr,
  kRemovexattr,
  kFsync,
  kFdatasync,
  kSync,
  kSyncFileRange,
};

// fallocate(2) modes as the language names them: default (0), keep_size, punch_hole
// (PUNCH_HOLE|KEEP_SIZE, the only form Linux accepts), zero_range, zero_range_keep_size.
enum class FallocMode { kDefault, kKeepSize, kPunchHole, kZeroRange, kZeroRangeKeepSize };

// How a write or dwrite is synchronous, as the language's optional last word names it: none (a
// plain write), dsync (the file opened O_DSYNC), sync (opened O_SYNC) or rwf_dsync (pwritev2 with
// RWF_DSYNC). A synchronous write is a persistence point once it returned.
enum class SyncWrite { kNone, kDsync, kSync, kRwfDsync };

struct Op {
  OpKind kind = OpKind::kSync;
  std::string path;     // P (symlink: Q, the link's own path)
  std::string path2;    // link/rename: Q; symlink: TARGET (stored verbatim, never resolved)
  uint64_t offset = 0;  // write, dwrite, mmapwrite, falloc, sync_file_range
  uint64_t length = 0;  // the same, and truncate's LEN
  FallocMode mode = FallocMode::kDefault;
  SyncWrite sync = SyncWrite::kNone;  // write, dwrite
  std::string name;                   // setxattr, removexattr
  std::string value;                  // setxattr
  int line = 0;                       // 1-based line in its source (0: generated)

  bool operator==(const Op& other) const;
};

// The language's word for each kind and mode ("creat", "zero_range_keep_size", ...).
std::string_view OpName(OpKind kind);
std::optional<OpKind> OpKindFromName(std::string_view name);
std::string_view FallocModeName(FallocMode mode);
std::optional<FallocMode> FallocModeFromName(std::string_view name);
std::string_view SyncWriteName(SyncWrite sync);  // "" for kNone
std::optional<SyncWrite> SyncWriteFromName(std::string_view name);
// Whether `kind` takes a SyncWrite as an optional last word (write and dwrite).
bool TakesSyncWrite(OpKind kind);
// Every operation name, in the language's order (for error messages and docs).
std::vector<std::string_view> OpNames();

// fsync, fdatasync, sync, sync_file_range and the synchronous writes: where the workload
// acknowledges a point.
bool IsPersistencePoint(const Op& op);
// The persistence points that promise something after a power cut (all but sync_file_range,
// which writes data out but neither commits metadata nor flushes the disk's cache).
bool IsPromisingPoint(const Op& op);

// What each operation takes, in order, one letter an argument: P (a path), Q (a second path:
// link's and rename's new name, symlink's link), T (a symlink target, any word), N (a byte count:
// with two, the offset then the length; alone, the length), M (a fallocate mode), X (an xattr
// name), V (an xattr value). The parser and OpText both walk it, so they cannot disagree.
std::string_view OpArguments(OpKind kind);

// The canonical one-line text ("falloc A/foo zero_range 30768 5000", "dwrite foo 0 4096 dsync";
// a plain write has no last word, so the ids of workloads without synchronous writes did not
// change when they came): what the parser reads
// back to an equal Op, and what a workload's id hashes.
std::string OpText(const Op& op);

}  // namespace powercut::fstest
