// Warm guests: a qemu guest that boots once and records one workload after another, each on a
// fresh disk hot-plugged for it and detached after it (docs/vm.md, "Warm guests").
//
//   GuestPool pool(env);                 // one per worker thread
//   auto a = pool.Record(spec_a);        // boots a guest (5-7 s under TCG), records
//   auto b = pool.Record(spec_b);        // same guest: a new disk, no boot
//
// Per recording: the host makes the disk (mkfs, base.img) and starts the recorder, plugs the disk
// in over QMP (blockdev-add + device_add virtio-blk-pci with a serial of its own), writes
// job-<id>.json into the shared run folder and sends `job <id>` over the virtio-serial port; the
// agent finds the disk by serial, runs the workload, unmounts, checks that nothing holds the disk
// and answers `job <id> event job-done`; the host unplugs the disk (device_del, DEVICE_DELETED,
// blockdev-del) and writes the outputs. Every line of the job carries its id, so an ack of one
// recording can never become a mark in another's trace.
//
// A guest that misbehaves is not reused: a job past its timeout, a guest that dies or is cut (a
// live power cut kills qemu), an agent step that failed, a disk the guest does not release; the
// recording reports what happened and the pool boots a clean guest for the next one.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "harness/vm/ack_channel.h"
#include "harness/vm/cut.h"
#include "harness/vm/guest_config.h"
#include "harness/vm/qemu.h"
#include "harness/vm/qmp.h"
#include "harness/vm/recording.h"
#include "harness/vm/run_folder.h"
#include "harness/vm/vm_run.h"

namespace powercut::vm {

// What a recording needs its guest to have been booted with.
GuestConfig GuestConfigFor(const VmEnvironment& env, const RunSpec& spec);

class WarmGuest {
 public:
  struct Options {
    GuestConfig config;
    std::chrono::seconds boot_timeout{300};
    // How long the guest may take to give a disk back after device_del (DEVICE_DELETED).
    std::chrono::milliseconds release_timeout{20000};
  };
  static absl::StatusOr<std::unique_ptr<WarmGuest>> Boot(const VmEnvironment& env,
                                                         const Options& options);
  ~WarmGuest();  // Shutdown()

  // One recording on a fresh disk (the RunInVm contract, vm_run.h), made from `bases` when given.
  // After an error, or a power cut, usable() may be false: the guest was killed.
  absl::StatusOr<RunResult> Record(const RunSpec& spec, BaseImageCache* bases = nullptr);

  // Checking guests (guest_judge.h): a disk that stays attached across jobs (hot-plugged once,
  // not per job); returns its serial. After an error the guest was killed.
  absl::StatusOr<std::string> AttachDisk(const GuestDisk& disk);
  // Unplugs a disk AttachDisk attached (nothing to do on a killed guest).
  absl::Status DetachDisk(const std::string& serial);
  // One agent job (its job_id is assigned here) on the disks attached; the agent's result. A guest
  // that dies or passes `timeout` is killed (Unavailable / DeadlineExceeded; usable() false).
  absl::StatusOr<GuestResult> RunAgentJob(GuestJob job, std::chrono::seconds timeout);

  bool usable() const { return usable_; }
  const GuestConfig& config() const { return options_.config; }
  double boot_seconds() const { return boot_seconds_; }
  uint64_t jobs() const { return jobs_; }
  // Asks the agent to stop and the guest to power off (bounded), else kills it. Idempotent.
  void Shutdown();

 private:
  struct Job;       // one recording's id, disks and their QMP names
  struct JobState;  // what the job's callbacks share with the waiting thread
  class PhaseClock;
  enum class JobEnd { kDone, kExited, kTimedOut };

  WarmGuest(VmEnvironment env, Options options, RunFolder run)
      : env_(std::move(env)), options_(std::move(options)), run_(std::move(run)) {}
  absl::Status Start();
  // BootFailureHint on a line of its own, or "".
  std::string HintLine(const std::string& console) const;
  // Hot-plugs the job's disks (blockdev-add + device_add).
  absl::Status Attach(const Job& job);
  // device_del, DEVICE_DELETED within release_timeout, blockdev-del.
  absl::Status Detach(const Job& job);
  static GuestJob JobFor(const RunSpec& spec, const Job& job);
  // Sends the job, waits for it (arming the cut), and reads its result back.
  absl::Status RunJob(const RunSpec& spec, const Job& job, Recorders& rec, JobState* state,
                      RunResult* result, PhaseClock* clock);
  JobEnd WaitForJob(const RunSpec& spec, const CutPlan& plan, JobState* state);
  // The agent's result, the disk detached, the fresh-disk proof and the geometry checked.
  absl::Status FinishJob(const Job& job, RunResult* result, PhaseClock* clock);
  void CollectLogs(const Job& job, const std::string& out);
  // Kills qemu: this guest is not used again.
  void Discard();

  const VmEnvironment env_;
  const Options options_;
  RunFolder run_;
  std::unique_ptr<AckChannel> channel_;
  std::unique_ptr<QmpClient> qmp_;
  std::unique_ptr<Qemu> qemu_;
  bool usable_ = false;
  double boot_seconds_ = 0;
  uint64_t jobs_ = 0;
  struct AttachedDisk {
    uint64_t job_id;  // the job number its QMP names and serial were made from
    GuestDisk disk;
  };
  std::vector<AttachedDisk> attached_;  // AttachDisk's disks
};

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
