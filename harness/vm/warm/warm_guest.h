// Warm guests: a qemu guest that boots once and records one workload after another, each on a
// fresh disk hot-plugged for it and detached after it (docs/vm.md, "Warm guests").
//
//   GuestPool pool(env);                 // one per worker thread (guest_pool.h)
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
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "harness/vm/devices/ack_channel.h"
#include "harness/vm/machine/guest_config.h"
#include "harness/vm/machine/qemu.h"
#include "harness/vm/machine/qmp.h"
#include "harness/vm/machine/run_folder.h"
#include "harness/vm/warm/cut.h"
#include "harness/vm/warm/recording.h"
#include "harness/vm/warm/vm_run.h"

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
  const VmEnvironment& env() const { return env_; }
  double boot_seconds() const { return boot_seconds_; }
  uint64_t jobs() const { return jobs_; }
  // Asks the agent to stop and the guest to power off (bounded), else kills it. Idempotent.
  void Shutdown();

 private:
  // One job's id and disks, and the names they get in QMP and the guest (warm_guest.cc).
  struct Job {
    uint64_t id = 0;
    uint64_t bytes = 0;  // the disk under test's size
    std::vector<GuestDisk> disks;
    // disks[1] is dm-log-writes' log; otherwise disks[1..] are disks 2..N of a set.
    bool log_writes = false;
    std::string Serial(size_t i) const;
    std::string Device(size_t i) const;
    std::string Node(size_t i) const;
  };
  struct JobState;  // what the job's callbacks share with the waiting thread
  class PhaseClock;
  enum class JobEnd { kDone, kExited, kTimedOut };

  // The time left until `t` (0 once past).
  static std::chrono::milliseconds Until(std::chrono::steady_clock::time_point t);

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
  // The node cut the guest announced (RunSpec::node_cut_disk): the drive's cache applied to
  // that disk's server, the instant marked in the trace, the disk kept as `snapshot`.
  absl::Status ApplyNodeCut(const RunSpec& spec, Recorders& rec,
                            const std::filesystem::path& snapshot, NodeCutRecord* cut);
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

}  // namespace powercut::vm
