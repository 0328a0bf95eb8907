// Judges one crash state of a file-system test, in the guest, on the mounted file system: no
// program starts per state (docs/fstest.md, "Judging in the guest"). For every persistence point
// k it checks the promises in force at k (promises.h) against the tree read back, then tries to
// empty the file system (every file unlinked, every folder removed, bottom up).
//
// Its output is the checker protocol (docs/protocol.md): `have <k>` when every promise in force at
// point k holds, else `why <k> <class> <path>: <detail>` with the first broken promise. The
// engine judges a state by the point of its last acknowledgement only (the oracle's "latest ack"
// rule: the promises in force there already include every earlier one that still binds). Classes:
//   missing            a promised name (file, folder, entry) is not there
//   old-content        the data or the folder's listing is one the path held before the promise
//   data-mismatch      the data or listing is neither the promised one nor an older one
//   metadata-mismatch  mode, link count, block count, xattrs or a symlink's target differ
//   not-removable      the tree held its promises but cannot be emptied (every point then says so)
// (`fs-unrecoverable`, a state the file system's own tools cannot mount, is decided before the
// judge runs: docs/boot-recovery.md.)
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "harness/fstest/promises.h"
#include "harness/fstest/tree.h"

namespace powercut::fstest {

inline constexpr char kMissing[] = "missing";
inline constexpr char kOldContent[] = "old-content";
inline constexpr char kDataMismatch[] = "data-mismatch";
inline constexpr char kMetadataMismatch[] = "metadata-mismatch";
inline constexpr char kNotRemovable[] = "not-removable";
inline constexpr char kFsUnrecoverable[] = "fs-unrecoverable";
// Every class, in the order reports list them.
std::vector<std::string> FailureClasses();

struct Failure {
  std::string klass;
  std::string path;
  std::string detail;
  std::string Text() const;  // "<class> <path>: <detail>"
};

// The broken promises of `promises` in `tree`, in the order of the promises (path, aspect).
std::vector<Failure> BrokenPromises(const std::vector<Promise>& promises, const Tree& tree);

// Unlinks every file and removes every folder under `root` (but the file system's lost+found),
// deepest first; the first refusal, or a root that still lists something, is the failure.
std::optional<Failure> RemoveEverything(const std::string& root);

// The checker-protocol text for the state mounted at `root` (see above).
absl::StatusOr<std::string> JudgeMountedState(const std::string& root,
                                              const std::vector<PointPromises>& points);

}  // namespace powercut::fstest
