// The engine's workers' tools (harness/check/engine.h): each worker owns a WorkingImage and, for
// file systems, a scratch copy it mounts and a mount point, all in one work folder. The pool
// removes what it made when it is destroyed (the folder itself when it created it).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "base/scratch_dir.h"
#include "harness/check/engine.h"
#include "harness/check/image_check.h"
#include "harness/check/state_judge.h"
#include "harness/state/working_image.h"
#include "harness/trace/trace_reader.h"

namespace powercut::harness {

struct CheckWorker {
  std::unique_ptr<WorkingImage> image;
  std::string scratch;  // fs only (a set of several disks: the prefix of each disk's scratch)
  int scratch_fd = -1;
  std::string mountpoint;
  // The work folder's file system shares extents (FICLONE: btrfs, xfs with reflink): a state's
  // scratch is a clone of the working image, no data copied. Cleared at the first refusal
  // (ext4, tmpfs), after which the data extents are copied.
  bool clone = true;
  // Set (file systems, `--check-in guest`): judges the image instead of the scratch copy's
  // loop mount. Destroyed before the image it reads.
  std::unique_ptr<StateJudge> judge;
};

class WorkerPool {
 public:
  // `work_dir` empty: a fresh folder under $TMPDIR, removed afterwards (also on a fatal signal).
  static absl::StatusOr<std::unique_ptr<WorkerPool>> Create(
      const std::string& work_dir, int workers, FsKind fs, const std::string& base,
      const TraceFile* trace, uint32_t granule, bool disk_set = false);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  std::vector<CheckWorker>& workers() { return workers_; }

 private:
  WorkerPool(std::string dir, ScratchDir own) : dir_(std::move(dir)), own_(std::move(own)) {}

  const std::string dir_;
  ScratchDir own_;  // the folder when the pool made it (destroyed after the workers' files close)
  std::vector<CheckWorker> workers_;
};

// Runs the checker on the worker's current image: raw, on the image itself (rebuilt when the
// checker wrote to it); a file system, on the scratch copy.
absl::StatusOr<ImageCheckResult> CheckWorkerImage(const CheckOptions& options, CheckWorker& w);

}  // namespace powercut::harness
