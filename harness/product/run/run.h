// `powercut run`: records a workload once in the VM (harness/vm/warm/vm_run.h), then replays the
// trace under each cache model with the crash-state engine (harness/engine.h). The fault modes
// (RunOptions::live_cuts, ::flakey) are chosen above this room, by RunWithFaults
// (harness/product/faults/run_with_faults.h).
//
// A workload that cannot be tested is an outcome, not an error: RunWorkload() never fails, it
// returns ran = false with an error_kind naming what went wrong (the VM could not run it, it hung
// past the timeout, exited non-zero, never acked, flooded acks, printed malformed ack lines, or
// the check itself failed). A checker that fails on some crash images is a violation (those
// states are not recoverable), reported per state by the engine; one killed by a signal on every
// state is broken itself and the outcome is "checker-crash".
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "base/scratch_dir.h"
#include "harness/check/engine.h"
#include "harness/cluster/cluster.h"
#include "harness/product/outcome/fault_results.h"
#include "harness/product/outcome/node_cut_results.h"
#include "harness/product/outcome/run_error.h"
#include "harness/product/outcome/timeline.h"
#include "harness/product/run/replay_choice.h"
#include "harness/state/cache_model.h"
#include "harness/state/state_generator.h"
#include "harness/vm/guest/flakey_mode.h"
#include "harness/vm/warm/guest_judge.h"
#include "harness/vm/warm/guest_pool.h"
#include "harness/vm/warm/vm_run.h"

namespace powercut::product {

struct RecordingStore;  // harness/product/run/recordings.h

// Where file-system crash states are judged (`--check-in`; docs/run.md, "Where crash states are
// judged"): host loop mounts (root), or warm guests booted with the recording kernel.
enum class CheckIn { kHost, kGuest };
// "host", "guest", or "" for the default: host when this process may loop-mount (CAP_SYS_ADMIN
// and /dev/loop-control), else guest (never the silent debugfs fallback).
absl::StatusOr<CheckIn> ParseCheckIn(const std::string& text);
// Whether this process may loop-mount: CAP_SYS_ADMIN and /dev/loop-control.
bool MayLoopMount();

// Each disk's file system from RunOptions::fs (parsed at the edge: harness::ParseFsKinds) and
// ::disks: one for every disk, or one per disk. Errors (usage): none given, --disks 0, a count
// that is neither 1 nor --disks.
absl::StatusOr<std::vector<harness::FsKind>> DiskFileSystems(const std::vector<harness::FsKind>& fs,
                                                             uint32_t disks);
// The per-disk text flags share DiskFileSystems' count rule (one value for every disk or one per
// disk; anything else is a usage error naming the flag) and return one value per disk.
// `--sector 512e` or `--sector 512e,4kn`: each disk's sectors (harness/trace/disk_geometry.h).
absl::StatusOr<std::vector<harness::SectorFormat>> DiskSectors(const std::string& text,
                                                               uint32_t disks);
// `--disk-size 1GiB` or `--disk-size 512MiB,1GiB`: each disk's bytes, at least 64 MiB (mkfs needs
// room for its journal).
absl::StatusOr<std::vector<uint64_t>> DiskSizes(const std::string& text, uint32_t disks);
const char* CheckInName(CheckIn where);
// The guest agent where the layout of `self` puts it (<prefix>/libexec/powercut/ installed,
// <build>/harness/vm/ in a build tree) when it exists, else "": the hint for vm::PrepareVm, which
// also looks in $POWERCUT_VM_AGENT and in the running program's own layout.
std::string AgentHint(const std::string& self);
// The guests that judge states for `where`: nullptr for host. `agent_hint` and `kernel` as for
// vm::PrepareVm.
absl::StatusOr<std::unique_ptr<vm::GuestCheckPool>> CheckPoolFor(CheckIn where,
                                                                 const std::string& agent_hint,
                                                                 const std::string& kernel = "");
// The same on an environment already prepared (the recording's: one PrepareVm for both).
std::unique_ptr<vm::GuestCheckPool> CheckPoolFor(CheckIn where, const vm::VmEnvironment& env);
// harness::CheckOptions::judges for `trace`'s states in `pool`'s guests, the disk shown with the
// recording's sectors (its manifest; 512e without one). `phases`, when set, collects each judged
// state's steps (docs/run.md, "Where the time goes").
harness::StateJudgeFactory JudgesForTrace(vm::GuestCheckPool* pool, harness::FsKind fs,
                                          const std::string& trace, const std::string& checker,
                                          double checker_timeout_s,
                                          vm::GuestCheckPhases* phases = nullptr);

// How `check` and `repro` judge a recorded trace's file-system states: in warm guests
// (`--check-in guest`: `pool` runs them, `judges` is harness::CheckOptions::judges, `phases`
// collects each judged state's steps), or on this host (no pool, empty `judges`: --check-in
// host, or a raw disk whose states no mount judges).
struct TraceJudging {
  std::unique_ptr<vm::GuestCheckPool> pool;
  // The judges write here, so its address stays put when a TraceJudging moves; never null.
  std::unique_ptr<vm::GuestCheckPhases> phases = std::make_unique<vm::GuestCheckPhases>();
  harness::StateJudgeFactory judges;
};
// The one check-pool setup of the commands that judge a recording (`--check-in` as given, not
// parsed; `powercut` the running program, `kernel` as for vm::PrepareVm). `host_only`, when not
// empty, names an option that works only on this host ("--fsck runs on a host copy"): with it,
// judging in a guest is a usage error that says so.
absl::StatusOr<TraceJudging> JudgeTrace(const std::string& check_in, harness::FsKind fs,
                                        const std::string& powercut, const std::string& kernel,
                                        const std::string& trace, const std::string& checker,
                                        double checker_timeout_s, std::string_view host_only);

// "guest check, mean per state: state-block 0.00 s, ...\n" (GuestCheckPhases::Mean), or "" when
// no state was judged in a guest.
std::string GuestCheckPhasesLine(const std::vector<std::pair<std::string, double>>& phases);

// The guest a run boots (`--guest-memory`, `--guest-cpus`); 0 = the VM's defaults (768 MiB, 1
// CPU: docs/your-database.md, "The guest"). The disks' sizes are the run's (RunOptions).
struct GuestSize {
  int memory_mib = 0;
  int cpus = 0;
};

struct RunOptions {
  std::string name;      // in reports; empty: "run"
  std::string workload;  // command, run in the guest with /bin/sh -c
  std::string checker;   // command, run on each crash image on the host
  std::vector<harness::FsKind> fs = {harness::DefaultFs()};
  // Several recorded disks on one clock (`--disks N`; docs/run.md, "Several disks"): `fs` then
  // holds one file system for every disk or one per disk ("ext4,xfs"), and the workload and
  // checker see POWERCUT_DIR_2 ...
  uint32_t disks = 1;
  // A cluster (`--nodes N --node CMD`; docs/cluster.md), nodes 0: none. Its node command and the
  // user's own workload and checker, as given: `workload` and `checker` above are then the
  // launcher's wrapped commands (MakeClusterRun), and `disks` is the node count.
  cluster::ClusterSpec cluster;
  std::string cluster_launcher;  // powercut-cluster, as MakeClusterRun was given it
  // Each disk's geometry, as `fs`: one value for every disk or one per disk. `sectors`
  // (harness/trace/disk_geometry.h; `--sector 512e,4kn`); `disk_bytes` (`--disk-size
  // 512MiB,1GiB`), empty: each disk its file system's default. Read them through SectorOf and
  // DiskBytesOf.
  std::vector<harness::SectorFormat> sectors = {harness::kDefaultSectorFormat};
  std::vector<uint64_t> disk_bytes;
  std::vector<harness::CacheModel> models;  // empty: off, on, lying
  vm::Recording recording = vm::Recording::kNbd;
  harness::PointSelection points;
  harness::StateOptions states;
  uint32_t atomic_unit = 0;
  uint64_t seed = 1;
  bool ordered = false;
  bool fsck = false;
  bool fs_failures_are_violations = false;
  int workers = 0;
  double checker_timeout_s = 60;
  std::chrono::seconds timeout{600};  // one recording in its guest (a boot has its own limit)
  uint64_t max_acks = 1000000;        // more is an ack flood
  GuestSize guest;
  std::string keep_dir;  // keep the recording (trace, manifest, base image) here; "" = temporary
  // Where a temporary recording goes when the run has violating states, so that the report's
  // rebuild commands keep working (harness/product/run/recordings.h); nullptr: it is deleted.
  RecordingStore* recordings = nullptr;
  std::string powercut = "powercut";  // how rebuild commands name the binary
  // Progress of the check (harness::CheckOptions::on_state_checked); called from worker threads.
  std::function<void(uint64_t done, uint64_t total)> on_state_checked;
  // The check stops once this many checker runs were not the protocol (CheckOptions).
  uint64_t max_could_not_check = 10;
  // harness::CheckOptions::exhaustive and budget_seconds (`--exhaustive`, `--budget`).
  bool exhaustive = false;
  double budget_seconds = 0;
  // Set: file-system states are judged in its guests (`--check-in guest`), else on the host.
  vm::GuestCheckPool* check_pool = nullptr;
  // Called once when the run's recording is over (or will not happen), before its check; says
  // whether that was the command's last recording. `powercut matrix` counts its cells' recordings
  // with it, and its VM runner then gives the idle recording guest to `check_pool`.
  std::function<bool()> recording_done;
  // The fault modes (docs/live-cuts.md), run by RunWithFaults (harness/product/faults/): N live
  // power cuts on top of the replay (harness/product/faults/live_cuts.h); or, with flakey.mode
  // set, one run on a disk that fails after an ack instead of the replay
  // (harness/product/faults/flakey.h).
  uint64_t live_cuts = 0;
  // A cluster's single-node cuts (`--node-cuts K`, `--node-down D`; docs/cluster.md,
  // "Single-node cuts"; harness/product/faults/node_cuts.h): K more recordings, in each of which
  // one node loses its power once and is down for `node_down_ms`.
  uint64_t node_cuts = 0;
  uint64_t node_down_ms = 2000;
  struct Flakey {
    std::optional<vm::FlakeyMode> mode;  // none: no failing disk
    int64_t after_acks = 0;
    std::chrono::milliseconds window{0};  // 0: fails for good
    uint32_t disk = 1;  // the failing disk of a set (`--flakey-disk K`); the others keep working
  } flakey;
  // Added to mkfs (the recording's disk) and to every mount, recording and judging alike
  // (`--mkfs-options`, `--mount-options`; split at blanks, no quoting).
  std::string mkfs_options;
  std::string mount_options;
  // The oracle's latest-ack rule (harness/check/oracle.h), for cumulative ids (`powercut fstest`).
  bool latest_ack_only = false;
  // false: the guests' boot path mounts first and runs the file system's recovery tools only where
  // the mount fails (no e2fsck -p before it): `powercut fstest` (docs/fstest.md, "The boot path").
  bool boot_checks = true;
  // The workload waits for each ack to be recorded before it runs on (vm::RunSpec::sync_acks).
  bool sync_acks = false;
  // Set (`powercut fstest`): called after the recording with it, returns the promises the guest
  // judges each crash state against (vm::GuestJob::fstest_promises; harness/fstest/judge.h). The
  // states are then judged in `check_pool`'s guests by the agent itself, and `checker` only names
  // the judge in reports. An error makes the run "could not run", error kind "expected-state".
  std::function<absl::StatusOr<std::string>(const vm::RunResult&)> judge_promises;
  std::string fstest_promises;  // what judge_promises returned (set by RunWorkload)

  // Disk `disk`'s (0 the first) sectors and size (0: its file system's default).
  harness::SectorFormat SectorOf(uint32_t disk) const {
    return sectors.empty() ? harness::kDefaultSectorFormat
                           : sectors[std::min<size_t>(disk, sectors.size() - 1)];
  }
  uint64_t DiskBytesOf(uint32_t disk) const {
    return disk_bytes.empty() ? 0 : disk_bytes[std::min<size_t>(disk, disk_bytes.size() - 1)];
  }
  // Some disk holds a file system (not raw): its states need a mount, in a guest or on this host.
  bool AnyFileSystem() const;
};

struct RunOutcome {
  bool ran = false;
  // Set when !ran: why (harness/product/outcome/run_error.h). A checker killed by a signal on every
  // crash state is broken itself (kCheckerCrash); one whose stdout was not `have`/`corrupt` lines
  // on every state, or on max_could_not_check images, does not speak the protocol.
  std::optional<RunError> error_kind;
  std::string error;
  int workload_exit = -1;
  uint64_t acks = 0;
  uint64_t invalid_ack_lines = 0;
  uint64_t trace_entries = 0;
  double record_seconds = 0;    // the whole recording: disk, guest boot if any, workload, outputs
  double boot_seconds = 0;      // the guest boot it waited for (0: a warm guest)
  double workload_seconds = 0;  // the workload's own run time in the guest
  double check_seconds = 0;
  // Of record_seconds: where the recording's time went (vm::RunResult::phases).
  std::vector<std::pair<std::string, double>> record_phases;
  // `--check-in guest`: where a state's check went, each step's mean seconds per state
  // (vm::GuestCheckPool::MeanPhases; empty for host checks).
  std::vector<std::pair<std::string, double>> check_phases;
  // `--check-in guest`: the checking guests this run booted, and those it took over from the
  // recording (vm::GuestCheckPool::boots, ::adopted).
  uint64_t check_guests_booted = 0;
  uint64_t check_guests_adopted = 0;
  // The guest kernel that recorded it (vm::KernelName: release and where it came from; "" when
  // nothing was recorded).
  std::string kernel;
  std::optional<harness::CheckReport> report;
  std::optional<Timeline> timeline;
  std::string recording_dir;     // kept recording ("" when temporary)
  uint64_t recording_bytes = 0;  // its size on disk, when kept for the report
  std::vector<std::string> notes;
  std::optional<LiveCutsResult> live_cuts;
  std::optional<NodeCutsResult> node_cuts;
  std::optional<FlakeyResult> flakey;  // set for a flakey run (then `report` is empty)
  // The acks the host received while recording (vm::RunResult::host_acks; `acks` is the trace's
  // once it was checked): they bound the ack each live cut comes after (RunLiveCuts).
  uint64_t recorded_acks = 0;

  // States whose checker output could not be judged (harness::Verdict::could_not_check).
  uint64_t could_not_check() const;
  // With live cuts: none violating and every one inside the model; a flakey run: no violation.
  bool passed() const;
  // 2 could not run; 1 violations; 2 some states could not be checked; 0 otherwise.
  int exit_code() const;
};

// The recording of `options` into `dir` (no cut, no fault).
vm::RunSpec RecordingSpec(const RunOptions& options, const std::string& dir);

// Where a run records: RunOptions::keep_dir, else a temporary folder under /var/tmp that goes
// away with `scratch`.
struct RunFolder {
  std::string dir;
  bool temporary = false;
  ScratchDir scratch;
};
// The first steps of every run that records (RunWorkload; the failing disk's run, RunFlakey):
// the options checked before a guest boots (a workload given, ValidateRunOptions) and the folder
// made. Nullopt when the run cannot start: `out` then says why (usage, or vm when no temporary
// folder can be made).
std::optional<RunFolder> StartRun(const RunOptions& options, RunOutcome* out);

// One recording and its replay, recorded in `pool`'s warm guest (harness/vm/warm/guest_pool.h);
// null: in a guest of its own. The fault modes of `options` are not its business: RunWithFaults
// (harness/product/faults/run_with_faults.h) runs them.
RunOutcome RunWorkload(const vm::VmEnvironment& env, const RunOptions& options,
                       vm::GuestPool* pool = nullptr);

// Checks an existing recording (the part of RunWorkload after the VM): trace + manifest.
RunOutcome CheckRecording(const std::string& trace, const RunOptions& options);

// Everything about the options that can be wrong before the VM boots: commands given, --fs,
// --atomic, --fsck with a file system. `guests_will_judge`: the caller gives `check_pool` later
// (a command's flags are checked before the VM, and its pool, exist), so a set of disks will not
// need this host's loop mounts.
absl::Status ValidateRunOptions(const RunOptions& options, bool guests_will_judge = false);
// --atomic: 0 (the trace's sector size), 512 or 4096.
absl::Status ValidateAtomicUnit(uint32_t unit);
// `--flakey-disk K`: a disk of the run's `disks` (1..disks); with several disks only disk K
// fails and the others keep working.
absl::Status ValidateFlakeyDisk(const RunOptions::Flakey& flakey, uint32_t disks);

absl::StatusOr<vm::Recording> ParseRecorder(const std::string& text);

// The cluster launcher powercut-cluster (harness/cluster/launcher.h): $POWERCUT_CLUSTER, else
// where the layout of `self` (the running powercut) puts it.
absl::StatusOr<std::string> FindClusterLauncher(const std::string& self);
// Makes `o` the run of the cluster `o->cluster` (its node count, node command and the user's
// workload, checker and checker timeout set): one recorded disk a node (`disks`), the workload
// and checker wrapped by `launcher`, the engine's checker timeout the user's plus the launcher's
// slack. Usage errors: fewer than 2 nodes, no node command, --disks as well, a raw disk, --flakey
// (not built for clusters yet). --live-cuts cuts the whole cluster at once (the same wrapped
// workload recorded, each cut judged like a replayed state with every node started).
absl::Status MakeClusterRun(const std::string& launcher, RunOptions* o);

// One line per cache model, for stdout.
std::string RunSummary(const RunOutcome& outcome);

}  // namespace powercut::product
