// A file-system test workload: a short sequence of operations (op.h) in the text language of
// docs/fstest.md, with a stable id. The parser never trusts its input: every line it rejects is
// reported as `<source>:<line>: <reason>`, and a workload is also run once on the model file
// system (model_fs.h) so that an operation on a path that cannot exist at that point is refused
// before any guest boots.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "harness/fstest/op.h"

namespace powercut::fstest {

// Bounds that keep a workload small enough to model byte for byte and to fit every test disk.
inline constexpr uint64_t kMaxFileBytes = uint64_t{16} << 20;
inline constexpr size_t kMaxOps = 1000;
inline constexpr size_t kMaxPathBytes = 200;
// O_DIRECT offsets and lengths: a multiple of the largest block any tested file system requires
// (btrfs: its 4 KiB sector size; ext4 and xfs need only the disk's logical sector).
inline constexpr uint64_t kDirectAlignment = 4096;

struct Workload {
  std::vector<Op> ops;
  // Where it came from, for errors and reports: a file name, or "seq-1" for a generated one.
  std::string source;
  // What a generated workload exercises ("falloc zero_range on A/foo, then fsync A"); printed as
  // `#` lines above the operations, not part of the id.
  std::string description;

  // The number of persistence points (fsync, fdatasync, sync, sync_file_range, synchronous
  // writes): the workload
  // acknowledges points 1..N, in order.
  size_t PersistencePoints() const;
};

// The canonical text: optional `# description` lines, then one OpText per line.
std::string WorkloadText(const Workload& workload, bool with_description = true);

// "fst-" and 16 hex digits of the XXH3-128 of the canonical operations (descriptions, comments,
// blank lines and spacing do not count): the same id names the same operations on every machine
// and every version.
std::string WorkloadId(const Workload& workload);

// The shape for grouping violations: each operation's name with its paths abstracted to their
// role, e.g. "creat F; fsync D" (F a file, D a folder, "." the root).
std::string WorkloadShape(const Workload& workload);

// Parses `text`; `source` names it in errors. Syntax only: ValidateWorkload checks the meaning.
absl::StatusOr<Workload> ParseWorkload(std::string_view text, std::string_view source);

// Runs the workload on the model file system: each operation must be possible where it stands
// (the path exists, is a file, the parent folder exists ...), and the workload must have at least
// one persistence point that promises something. The error is `<source>:<line>: <reason>`.
absl::Status ValidateWorkload(const Workload& workload);

// A file (any name) or a folder (each `*.fst` file in it, sorted by name), parsed and validated.
absl::StatusOr<std::vector<Workload>> LoadWorkloads(const std::string& path);

// Whether `path` is a path of the language: "." (the root), or components of [A-Za-z0-9._-]
// (neither "." nor ".."), separated by single slashes, at most kMaxPathBytes; never absolute.
bool IsValidPath(std::string_view path);
// The parent folder of a valid path ("." for a top-level name).
std::string ParentPath(std::string_view path);
// The last component ("foo" for "A/foo").
std::string BaseName(std::string_view path);

}  // namespace powercut::fstest
