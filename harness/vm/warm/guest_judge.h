// Crash states judged in warm guests booted with the recording kernel (`--check-in guest`;
// docs/run.md, "Where crash states are judged"): no host loop device, no host mount, no root.
//
// Guests kept warm across the checks of one command (every cell of a matrix), at most one per
// core (GuestCheckPool's max_guests): a worker leases one for each state and gives it back after
// it, so the workers of cells checked at once share the guests instead of booting one each; in
// `powercut run` the guest that recorded is the first (GuestCheckPool::Adopt). A guest gets ONE
// disk, hot-plugged the first time: a StateServer
// (state_server.h) over the worker's materialized crash image. The disk stays attached when the
// guest goes back to the pool, and the next check of an image of the same size and sectors
// points its server at its own image (StateServer::UseImage) instead of plugging a new disk: a
// hot-plug and an unplug cost about a second under TCG, per worker and check (a `powercut fstest`
// run has one check per workload). Per state the host materializes
// the image as for host checks, and where the file system's boot path starts with a userspace
// check (`e2fsck -p`, `fsck.f2fs -a`) runs that check here on a scratch copy: the guest would run
// the very same host binary over 9p on the same bytes, at the price of a program start inside the
// emulated CPU. The guest then walks the rest of the path (the mount, the recovery tools where
// the mount fails) on the checked copy; a check that gives up sends the untouched state and the
// whole path to the guest. The host serves the state under a new generation, and sends the agent
// one job:
// drop the disk's buffers and prove it (the state block), the boot path (the mount's journal
// replay in the guest kernel), the checker with the workload's world (the host's userspace,
// paths and users), unmount, prove nothing holds the disk; then the host seals the disk, so a
// file system that outlived its unmount cannot write into the next state. The checker's raw
// stdout comes back and is parsed on the host exactly as a host checker's.
//
// A guest that dies, hangs past the checker's timeout (+ a margin), or fails a step that makes
// it untrustworthy is killed, and the state is retried once on a fresh guest; after a second
// failure the state is could-not-check (checker.protocol_error), never a verdict.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "base/scratch_dir.h"
#include "harness/check/state_judge.h"
#include "harness/trace/disk_geometry.h"
#include "harness/vm/devices/state_server.h"
#include "harness/vm/warm/vm_run.h"
#include "harness/vm/warm/warm_guest.h"

namespace powercut::vm {

// ImageCheckResult::method of a state judged in a guest.
inline constexpr char kGuestCheckMethod[] = "guest mount";

// harness::CheckOptions::states_per_judge for guest judges: a checking guest's boot costs 5-7 s
// of CPU under TCG, in which a guest already up judges about 30 small states (xlog's 0.1-0.2 s
// each, measured); a second guest is booted only for a check with more states than this.
inline constexpr uint64_t kStatesPerCheckingGuest = 32;

// Where the time of one check's guest-judged states went (docs/run.md, "Where the time goes"):
// each step's seconds summed over the states, shared by the check's judges.
class GuestCheckPhases {
 public:
  // One state's steps (GuestResult::phases, the host's `exchange` appended).
  void Add(const std::vector<std::pair<std::string, double>>& phases);
  // Each step's mean seconds per state, in the order the steps first ran (empty: no state).
  std::vector<std::pair<std::string, double>> Mean() const;

 private:
  mutable absl::Mutex mu_;
  uint64_t states_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::pair<std::string, double>> totals_ ABSL_GUARDED_BY(mu_);
};

struct GuestCheckSpec {
  harness::FsKind fs = harness::DefaultFs();
  harness::SectorFormat sector = harness::kDefaultSectorFormat;  // the recording's
  std::string checker;
  std::string mount_options;
  double checker_timeout_s = 60;
  GuestCheckPhases* phases = nullptr;  // set: each judged state's steps are added (not owned)
  // `powercut fstest` (GuestJob::fstest_promises, ::boot_checks): the agent judges each state
  // itself against these promises, after a boot path that mounts first.
  std::string fstest_promises;
  bool boot_checks = true;
};

// A state disk attached to a checking guest: its server, its serial in the guest, and the
// generation of the last state it served (the next one must differ). Kept with its guest.
struct StateDisk {
  ScratchDir dir;  // the server's socket
  std::unique_ptr<StateServer> server;
  std::string serial;
  uint64_t image_bytes = 0;
  harness::SectorFormat sector = harness::kDefaultSectorFormat;
  uint64_t generation = 0;
  bool geometry_checked = false;  // the guest saw its sectors as the recording had them
  ~StateDisk();
};

// What a guest needs to judge states of `fs` with `checker` (the checker's folders kept, the file
// systems' modules): the lease of every judge, and what Prewarm boots.
GuestConfig CheckGuestConfig(const VmEnvironment& env, const std::string& checker,
                             const std::vector<harness::FsKind>& fs);

class GuestCheckPool {
 public:
  // At most `max_guests` checking guests at once (0: one per core): a judge that needs one more
  // waits for a guest to finish its state. Each guest is one vCPU; more guests than cores only
  // share the cores, and each costs a boot (5-7 s of CPU under TCG).
  explicit GuestCheckPool(const VmEnvironment& env, int max_guests = 0);
  ~GuestCheckPool();
  GuestCheckPool(const GuestCheckPool&) = delete;
  GuestCheckPool& operator=(const GuestCheckPool&) = delete;

  // harness::CheckOptions::judges for one check (file systems; raw states stay on the host).
  harness::StateJudgeFactory Factory(const GuestCheckSpec& spec);

  struct Leased {
    std::unique_ptr<WarmGuest> guest;
    // Still attached to it, one per disk of the last state it judged; none for a new guest.
    std::vector<std::unique_ptr<StateDisk>> disks;
  };
  // A warm guest booted with at least `need` (an idle one when it covers it, else a new boot;
  // at max_guests, the wait for one to come back, or an idle one that does not cover `need`
  // replaced), with the state disks it kept. A judge leases a guest for one state at a time.
  absl::StatusOr<Leased> Lease(const GuestConfig& need);
  // Gives a guest back for the next check, with its state disks still attached (a killed guest
  // is dropped, and its disks with it).
  void Return(std::unique_ptr<WarmGuest> guest, std::vector<std::unique_ptr<StateDisk>> disks = {});
  // Takes a guest that recorded (GuestPool::TakeIdleGuest) as a checking guest, so that a run's
  // first check boots nothing: kept when it booted this pool's kernel, initramfs and agent at the
  // default size (a checking guest's), else shut down. Null: nothing to adopt.
  void Adopt(std::unique_ptr<WarmGuest> guest);
  // One guest more at once from now on (the core a recording guest had until the command's last
  // recording), and `guest`, that recording guest, adopted as above when it fits.
  void Grow(std::unique_ptr<WarmGuest> guest);
  // Boots one checking guest for `config` in the background (once per pool), so that the first
  // state does not wait for a boot: a command starts it beside its recording guest's boot, on the
  // core that boot leaves idle. A failed boot is left to the first Lease to retry and report.
  void Prewarm(const GuestConfig& config);
  uint64_t adopted() const;
  uint64_t waiting() const;  // judges in Lease waiting for a guest to come back

  uint64_t boots() const;
  uint64_t states() const;
  void CountState();
  const VmEnvironment& env() const { return env_; }

 private:
  // Adopt, with the cap raised by `more_guests` in the same step.
  void AdoptAndGrow(std::unique_ptr<WarmGuest> guest, int more_guests);

  const VmEnvironment env_;
  mutable absl::Mutex mu_;
  int max_guests_ ABSL_GUARDED_BY(mu_);
  std::thread prewarm_;     // Prewarm's boot; joined before the guests go
  absl::CondVar returned_;  // a leased guest came back (or its boot failed)
  // Declared disks last in Leased: an idle guest is shut down after its disks' servers stopped.
  std::vector<Leased> idle_ ABSL_GUARDED_BY(mu_);
  uint64_t boots_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t adopted_ ABSL_GUARDED_BY(mu_) = 0;
  size_t leased_ ABSL_GUARDED_BY(mu_) = 0;  // guests out with a judge (booting ones included)
  uint64_t waiting_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t states_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace powercut::vm
