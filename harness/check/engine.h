// The crash-state engine: given one trace, its base image and a checker command, rebuilds every
// selected crash state under each cache model, runs the checker on it (raw image, or a loop
// mount of the file system) and judges it with the oracle. The library entry point for
// `powercut check`, the VM crash domain and `powercut run`.
//
// Each model's states are checked in the StatePlan's order (worst first) and handed
// to workers in batches; each worker owns a WorkingImage (and, for file systems, a scratch copy
// and a mount point), so memory grows with the trace, not the states. Identical images (equal
// content hashes) run the checker once: the cached output is judged against each state's own acks.
//
// A model's verdict is FAIL at its first violating state, so by default a model stops there: the
// first violation is the violating state earliest in check order, and every state before it is
// checked, whatever the number of workers (docs/cache-models.md, "Check order and early stop").
// The states that can lose the most come first, so the loss reported at the stop is close to the
// worst case; it is a lower bound (ModelResult::lost_acks_exact()).
// `exhaustive` checks every state for full counts; `budget_seconds` bounds the whole check.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "harness/check/oracle.h"
#include "harness/check/set_member.h"
#include "harness/check/state_judge.h"
#include "harness/fs/file_system.h"
#include "harness/state/cache_model.h"
#include "harness/state/state_generator.h"
#include "harness/trace/manifest.h"

namespace powercut::harness {

struct CheckOptions {
  std::string trace_path;
  std::string base_image;  // empty: the manifest's (<trace>.manifest.json)
  std::string checker;     // shell command (run with /bin/sh -c)
  FsKind fs = FsKind::kRaw;
  // Several disks on one clock (the manifest's `disks`, docs/trace.md): each disk's file system,
  // one per disk; empty: the manifest's (each disk's `fs`, raw where it names none). Each state
  // is then checked with every disk through its own boot path and mounted at once
  // (harness/check/disk_set_check.h, or `judges`' CheckSet); `fs` and `without_mount` apply to
  // one disk only.
  std::vector<FsKind> disk_fs;
  // How the reports name a disk of a set: a disk, or a cluster's node (`--nodes N`: node K's disk
  // is disk K).
  SetMember set_member = SetMember::kDisk;
  // Resolved by RunCheck from the manifest (callers leave it): where the disks lie, and each
  // disk's sectors as recorded (what a judge's guest is shown).
  DiskLayout disks;
  std::vector<SectorFormat> disk_sectors;
  bool without_mount = false;      // ext4: e2fsck + debugfs instead of a loop mount
  std::vector<CacheModel> models;  // empty: off, on, lying
  uint32_t atomic_unit = 0;  // 0: the disk's physical sector (manifest), else the log's sectorsize
  PointSelection points;
  StateOptions states;
  uint64_t seed = 1;
  bool ordered = false;
  // Only the last id acked before a crash point must be had (harness/check/oracle.h): for
  // checkers whose ids are cumulative promises (`powercut fstest`); default every acked id.
  bool latest_ack_only = false;
  bool fs_failures_are_violations = false;  // count fs_unrecoverable states as violations
  int workers = 0;                          // 0: one per core
  double checker_timeout_s = 60;
  std::string work_dir;                 // empty: a fresh folder under $TMPDIR, removed afterwards
  std::string workload;                 // report name; empty: the trace file's name
  std::optional<OrderSemantics> order;  // overrides the manifest (default: completion)
  size_t max_examples = 5;
  std::string powercut = "powercut";  // how rebuild commands name the binary
  // Set: every verdict's `repro` is ReproCommand(powercut, trace_path, its id, repro_args), the
  // command that rebuilds the state and judges it again as this check did: a cluster's
  // (" --nodes 3 --node CMD --checker CMD ...") starts every node on its crash image. Empty: no
  // such command (the rebuild command only).
  std::string repro_args;
  // Optional (file systems only, e.g. `powercut run --fsck`): runs on each state's scratch copy
  // before it is mounted; a non-empty result marks the state not recoverable with that text.
  std::function<std::string(const std::string& image)> before_mount;
  // Optional (file systems only, `--check-in guest`): one judge per worker instead of host loop
  // mounts (harness/check/state_judge.h). Unset: loop mounts, or debugfs where `without_mount`.
  StateJudgeFactory judges;
  // > 0 with `judges` that each boot a guest, and `workers` left at 0: one worker per this many
  // planned states (all models), at least one and at most one per core. A judge's guest costs
  // seconds of CPU to boot under TCG, more than a few dozen small states take on a guest already up
  // (docs/run.md, "Where crash states are judged").
  uint64_t states_per_judge = 0;
  // Optional progress: called after each crash state is judged, with the states judged so far
  // and the total this check will judge (all cache models). Called from the worker threads, one
  // call at a time (under the engine's lock): keep it short.
  std::function<void(uint64_t done, uint64_t total)> on_state_checked;
  // The check stops (IsBrokenChecker) once this many checker runs printed lines that are not the
  // protocol, and at the first checker that cannot start (exit 126/127).
  uint64_t max_could_not_check = 10;
  // false: a model stops at its first violating state (its verdict is decided there); true: every
  // state is checked, for full counts (violations, distributions, examples).
  bool exhaustive = false;
  // > 0: the check stops taking new states after this many seconds (all models together); a
  // model cut short reports the coverage it reached (ModelResult::complete()).
  double budget_seconds = 0;
};

// Why a model's check ended before its plan did.
enum class StopReason { kNone, kFirstViolation, kBudget };
const char* StopReasonName(StopReason reason);         // "first_violation", "budget"; "" for kNone
StopReason StopReasonFromName(std::string_view name);  // the inverse; kNone for anything else

struct ModelResult {
  std::string workload;
  CacheModel model;
  uint64_t points = 0;
  uint64_t states_planned = 0;    // the plan: every state generated for this model
  uint64_t states = 0;            // states judged: the plan's first `states`, in check order
  uint64_t checked = 0;           // checker runs (distinct images among the states judged)
  uint64_t deduplicated = 0;      // states whose image equalled an already-checked one
  uint64_t violations = 0;        // the program's: see Verdict::violation()
  uint64_t fs_unrecoverable = 0;  // states the file system's own tools could not bring back
  uint64_t fs_repaired = 0;       // states it came back from only by repairs
  uint64_t torn_unacked = 0;      // states with a torn, never-acked record (not violations)
  uint64_t lost_acks_max = 0;
  std::map<uint64_t, uint64_t> lost_acks_distribution;  // lost acks -> states
  std::optional<Verdict> first_violation;
  std::optional<Verdict> first_fs_unrecoverable;
  std::optional<Verdict> first_fs_repaired;
  // The violating state that loses the most acks (lost_acks_max; the first in generation order
  // among equals): the state the tables' "lost max" column describes.
  std::optional<Verdict> worst_violation;
  std::vector<Verdict> examples;  // the first violations, in generation order
  // States whose checker output was not the protocol (Verdict::could_not_check): neither passed
  // nor violating.
  uint64_t could_not_check = 0;
  std::optional<Verdict> first_could_not_check;
  // States on which the system did not come back to answer (Verdict::unavailable: a cluster
  // without a quorum): the system's own outcome, neither passed nor violating, and never a reason
  // to stop the check. The first keeps the checker's reason and its stderr (each node's last log
  // lines).
  uint64_t unavailable = 0;
  std::optional<Verdict> first_unavailable;
  // States whose checker failed (Verdict::checker_failed(), violations all) and the first of
  // them, whose stderr_tail quotes why.
  uint64_t checker_failures = 0;
  std::optional<Verdict> first_checker_failure;
  double seconds = 0;
  std::vector<std::string> notes;
  StopReason stopped = StopReason::kNone;

  uint64_t states_unchecked() const { return states_planned - states; }
  // Whether the verdict is decided: a violation was found, or every planned state passed. A pass
  // cut short by the budget is not (an incomplete pass).
  bool complete() const { return violations > 0 || states >= states_planned; }
  // Whether lost_acks_max is the worst loss the model's plan allows: every planned state was
  // judged (--exhaustive, or no violation and no budget stop). Otherwise it is the largest loss
  // among the states judged, a lower bound, shown as "≥N" (LostText in report.h).
  bool lost_acks_exact() const { return states >= states_planned; }
};

// One disk of a set as the report shows it: its file system and what the trace did to it.
struct DiskSummary {
  std::string fs;
  uint64_t bytes = 0;
  uint64_t writes = 0;  // content-changing entries (writes and discards)
  uint64_t flushes = 0;
  uint64_t fua = 0;
  // The log of what used the disk, kept beside the recording (a cluster node's whole log,
  // docs/cluster.md "The nodes' logs"), and its size; "" when none was kept. Set by the caller:
  // the engine knows only the trace.
  std::string log;
  uint64_t log_bytes = 0;
};

struct CheckReport {
  std::string trace_path;
  std::string trace_hash;
  std::string base_image;
  std::string checker;
  std::string fs;
  std::string
      check_method;  // how the states were read: "loop mount", "guest mount", "debugfs", ...
  std::string check_kernel;  // the judging kernel's release (uname -r): the host's or the guest's
  std::string order;
  uint64_t trace_entries = 0;
  uint64_t trace_acks = 0;
  uint32_t sector_size = 0;      // the log's sectorsize (= the disk's logical sector)
  uint32_t physical_sector = 0;  // from the manifest; 0 = unknown
  std::string mkfs_command;      // from the manifest
  uint32_t fs_block_size = 0;    // from the manifest; 0 = unknown
  uint32_t atomic_unit = 0;
  uint64_t seed = 0;
  bool ordered = false;
  bool latest_ack_only = false;
  bool fs_failures_are_violations = false;
  int workers = 0;
  bool exhaustive = false;
  double budget_seconds = 0;
  std::string points;
  StateOptions states;
  std::vector<std::string> trace_notes;
  std::vector<DiskSummary> disks;           // several disks only; empty for one
  SetMember set_member = SetMember::kDisk;  // how `disks` are named (CheckOptions::set_member)
  std::string repro_args;                   // CheckOptions::repro_args
  std::vector<ModelResult> results;
  double seconds = 0;

  bool passed() const {
    for (const auto& r : results) {
      if (r.violations > 0) return false;
    }
    return true;
  }
  // The first unavailable state when the system came back on none of the states judged (each was
  // unavailable or could not be checked), else null: nothing was shown to survive, so the run is
  // not a pass (`run` and `check` exit 2; docs/cluster.md).
  const Verdict* NeverCameBack() const {
    uint64_t judged = 0, not_judged = 0;
    const Verdict* first = nullptr;
    for (const auto& r : results) {
      judged += r.states;
      not_judged += r.unavailable + r.could_not_check;
      if (first == nullptr && r.first_unavailable) first = &*r.first_unavailable;
    }
    return first != nullptr && not_judged == judged ? first : nullptr;
  }
  // Every model's verdict is decided (see ModelResult::complete()).
  bool complete() const {
    for (const auto& r : results) {
      if (!r.complete()) return false;
    }
    return true;
  }
};

absl::StatusOr<CheckReport> RunCheck(const CheckOptions& options);

// `--budget DURATION`: "30s", "2m", "1h" or a number of seconds; positive.
absl::StatusOr<double> ParseBudget(std::string_view text);

// Whether RunCheck stopped because the checker is broken (it cannot start, or its output was not
// the protocol on CheckOptions::max_could_not_check images); the message quotes the evidence.
bool IsBrokenChecker(const absl::Status& status);

// The command that rebuilds one crash state's image (Verdict::rebuild).
std::string RebuildCommand(const std::string& powercut, const std::string& trace,
                           const std::string& base, const std::string& state_id);
// `powercut repro <id> --trace <trace><repro_args> --recheck` (Verdict::repro; CheckOptions).
std::string ReproCommand(const std::string& powercut, const std::string& trace,
                         const std::string& state_id, const std::string& repro_args);

}  // namespace powercut::harness
