// Where a check worker's file-system crash states are judged when not on this host's loop
// mounts: `powercut --check-in guest` hands the engine a factory of StateJudges (one per worker;
// harness/vm/warm/guest_judge.h judges in a warm guest booted with the recording kernel). The
// engine knows nothing of guests: it materializes the state, the judge reads it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "harness/check/image_check.h"
#include "harness/fs/file_system.h"
#include "harness/trace/disk_geometry.h"

namespace powercut::harness {

// One disk of a set's crash state (harness/trace/disk_layout.h): where it lies in the set's
// concatenated image, its file system, and its sectors as recorded.
struct SetDisk {
  uint64_t offset = 0;
  uint64_t bytes = 0;
  FsKind fs = DefaultFs();
  SectorFormat sector = kDefaultSectorFormat;
};

class StateJudge {
 public:
  virtual ~StateJudge() = default;
  // Judges the crash image open on `image_fd` (`image_bytes` long; a worker's WorkingImage, or
  // `powercut repro`'s rebuilt state): the boot path, then the checker (image_check.h's contract;
  // ImageCheckResult::method and ::kernel say where). Must leave the image unmodified. A state the
  // judge could not check (its guest died twice) comes back with checker.protocol_error set: the
  // state is could-not-check, neither passed nor violating. Errors stop the whole check.
  virtual absl::StatusOr<ImageCheckResult> Check(int image_fd, uint64_t image_bytes) = 0;
  // The same for a state of a set of disks (`--disks N`, a cluster's nodes): every disk goes
  // through its own file system's boot path, then the checker runs once with all of them
  // mounted (disk_set_check.h's contract: POWERCUT_DIR, POWERCUT_DIR_2, ...; a disk its tools
  // cannot bring back makes the state the file system's outcome, naming the disk).
  virtual absl::StatusOr<ImageCheckResult> CheckSet(int image_fd,
                                                    const std::vector<SetDisk>& disks) = 0;
};

// Called once per worker (0-based) before its first state.
using StateJudgeFactory = std::function<absl::StatusOr<std::unique_ptr<StateJudge>>(int worker)>;

}  // namespace powercut::harness
