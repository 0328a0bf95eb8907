// A pool of warm guests (warm_guest.h) shared by the threads that record: which guest takes a
// recording, when a guest is booted (twice at most) and when it is replaced (docs/vm.md, "Warm
// guests").
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "harness/vm/machine/guest_config.h"
#include "harness/vm/machine/vm_environment.h"
#include "harness/vm/warm/recording.h"
#include "harness/vm/warm/vm_run.h"
#include "harness/vm/warm/warm_guest.h"

namespace powercut::vm {

// Up to `guests` warm guests shared by the threads that record: each guest boots on the first
// Record that needs it, is reused while it is usable and its boot covers the recording's modules
// and host folders, and is replaced by a clean one otherwise. Thread-safe: up to `guests`
// recordings run at once, each on a guest of its own; more wait for a free guest (so a matrix
// with one guest more cell threads than guests checks one cell while the next records).
class GuestPool {
 public:
  // `preload`: what every guest loads at boot besides what the recordings ask for (e.g. the
  // modules of every file system a matrix will use, so the guest never needs a reboot).
  explicit GuestPool(const VmEnvironment& env, GuestConfig preload = {},
                     std::chrono::milliseconds release_timeout = std::chrono::seconds(20),
                     int guests = 1);
  ~GuestPool();

  // RunInVm's contract; RunResult::boot_seconds is the boot this recording waited for (0 when
  // it reused a warm guest). A boot that fails is tried once more before the recording fails
  // (RunResult::boot_failure keeps the first error when the second boot came up).
  absl::StatusOr<RunResult> Record(const RunSpec& spec) ABSL_LOCKS_EXCLUDED(mu_);
  uint64_t boots() const ABSL_LOCKS_EXCLUDED(mu_);  // guests that came up
  uint64_t boot_failures() const ABSL_LOCKS_EXCLUDED(mu_);
  // Kills every guest; no Record may be running.
  void Shutdown() ABSL_LOCKS_EXCLUDED(mu_);
  // A usable guest no recording holds, taken out of the pool (the next Record boots another),
  // or null. For its next life as a checking guest (GuestCheckPool::Return): it booted the
  // recording's kernel with its file systems' modules and folders.
  std::unique_ptr<WarmGuest> TakeIdleGuest() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Slot {
    std::unique_ptr<WarmGuest> guest;
    BaseImageCache bases;  // outlives the guests: a replaced guest's recordings reuse it
    bool busy = false;
  };

  const VmEnvironment env_;
  const GuestConfig preload_;
  const std::chrono::milliseconds release_timeout_;
  mutable absl::Mutex mu_;
  // A slot's guest and bases belong to the thread that marked it busy, until it clears busy.
  std::vector<std::unique_ptr<Slot>> slots_ ABSL_GUARDED_BY(mu_);
  uint64_t boots_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t boot_failures_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace powercut::vm
