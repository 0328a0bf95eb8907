// The scratch directory a walbench run works in.
//
// Guarantee: walbench never deletes anything it did not create. BenchDir makes one fresh
// directory (base/scratch_dir.h, "walbench-XXXXXX") inside the directory the user named, everything
// walbench writes goes inside it, and the destructor removes exactly that directory tree.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "base/scratch_dir.h"

namespace powercut::walbench {

// /var/tmp: on a disk on most systems, unlike /tmp, which is often tmpfs.
inline constexpr char kDefaultParentDir[] = "/var/tmp";

class BenchDir {
 public:
  // Creates the scratch directory inside `parent`. Fails with a message naming `parent` and what to
  // do when it is missing, not a directory or not writable.
  static absl::StatusOr<std::unique_ptr<BenchDir>> Create(const std::string& parent);

  BenchDir(const BenchDir&) = delete;
  BenchDir& operator=(const BenchDir&) = delete;
  // The destructor removes the scratch directory and everything in it (a ScratchDir).

  const std::string& path() const { return dir_.path(); }

  // A fresh empty subdirectory for one run (name: <label>-<counter>); RemoveRunDir deletes it.
  absl::StatusOr<std::string> NewRunDir(std::string_view label);
  // Removes a directory NewRunDir returned (and refuses any other path), then syncfs(2)s the file
  // system, so that the journal commit (and, with -o discard, the discards) the removal causes
  // happen now and not inside the next run's timed window.
  absl::Status RemoveRunDir(const std::string& run_dir);

 private:
  explicit BenchDir(ScratchDir dir) : dir_(std::move(dir)) {}

  ScratchDir dir_;
  int next_run_ = 0;
};

}  // namespace powercut::walbench
