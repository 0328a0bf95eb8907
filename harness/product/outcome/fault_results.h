// The results of the fault modes of `powercut run` and `matrix` (docs/live-cuts.md): live power
// cuts (harness/product/faults/live_cuts.h) and failing disks (harness/product/faults/flakey.h), as
// RunOutcome and CellResult carry them and as the JSON reports hold them (`live_cuts`, `flakey`).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "harness/vm/guest/flakey_mode.h"
#include "nlohmann/json.hpp"

namespace powercut::product {

// One disk's part of a live cut of several disks (a set's disk, a cluster's node): what its drive
// did with its unflushed writes and whether its image is its part of the model's crash state.
struct LiveCutDisk {
  uint32_t disk = 1;  // 1-based: disk K of the set, node K of a cluster
  bool in_model = false;
  uint64_t volatile_writes = 0;  // the model's volatile writes on this disk at the cut
  uint64_t kept = 0, dropped = 0, torn = 0;
  std::string evidence;  // outside the model: what differs on this disk
};

struct LiveCut {
  uint64_t seed = 0;
  // false: the workload ended before its cut point (it acked fewer times than the seed's ack):
  // the cut is at the end of its run (the final image, every write flushed by the unmount).
  bool cut = true;
  uint64_t cut_after_ack = 0;    // the seed's trigger: the cut comes after this ack ...
  uint64_t cut_after_write = 0;  // ... at the completion of this many writes after it
  uint64_t acks_before_cut = 0;  // acks in the cut's trace before the cut
  uint64_t volatile_writes = 0;  // writes the drive's cache still held at the cut
  uint64_t kept = 0, dropped = 0, torn = 0;
  // The reality check (MatchCutToModel).
  bool in_model = false;
  bool sampled = false;            // among the states the replay's --states draws at that point
  std::string state_id;            // the crash state the image equals ("" when outside the model)
  std::string evidence;            // outside the model: what differs
  std::string kept_trace;          // outside the model: the cut's recording, kept for the evidence
  std::vector<LiveCutDisk> disks;  // several disks: each one's reality check; empty for one disk
  // The check of the cut image, judged by the oracle against the acks before the cut.
  bool violation = false;
  bool fs_unrecoverable = false;
  std::vector<std::string> lost;
  std::string summary;  // the verdict described when it violates (or the fs's outcome)
  // The system did not come back on the cut image (the checker's `unavailable <text>` line: a
  // cluster without a quorum): the text, and the checker's stderr (each node's last log lines).
  // The system's own outcome, neither a violation nor a pass (docs/cluster.md).
  std::string unavailable, unavailable_stderr;
  // Who judged the cut image, as for the replay's states (ImageCheckResult::method, ::kernel):
  // "guest mount" with `--check-in guest`, else "loop mount" (or the debugfs fallback).
  std::string check_method, check_kernel;
  double record_seconds = 0;  // guest boot + workload up to the cut + the cut's outputs
  double check_seconds = 0;   // reality check + recovery + checker
  std::string error;          // the cut could not be made or checked: not counted
};

struct LiveCutsResult {
  std::string cache = "on";  // the model the drive of every cut follows
  uint64_t requested = 0;
  // A cluster's cuts: its disks are named by node (JSON `nodes`, text "node K").
  bool nodes = false;
  std::vector<LiveCut> cuts;

  const char* DiskWord() const { return nodes ? "node" : "disk"; }  // names a disk of a cut

  uint64_t Counted() const;      // cuts made and checked (no error)
  uint64_t InModel() const;      // of those, inside the replay model
  uint64_t Violations() const;   // of those, violating the oracle
  uint64_t Unavailable() const;  // of those, the system did not come back (not violations)
  uint64_t Errors() const;       // cuts that could not be made or checked
  bool TesterBug() const { return InModel() < Counted(); }
  double SecondsPerCut() const;  // record + check, averaged over the cuts
  // "5 of 5 live cuts inside the model (cache on), 0 violating, 31.2 s per cut"; several disks:
  // "inside the model on every node", and the unavailable ones counted
  std::string Summary() const;
};

// A run on a disk that fails (dm-flakey) after an ack (harness/product/faults/flakey.h).
struct FlakeyResult {
  // What the failing disk did; in JSON its dm-flakey name.
  vm::FlakeyMode mode = vm::FlakeyMode::kErrorWrites;
  int64_t after_acks = 0;            // the failure began after this many acks
  double window_seconds = 0;         // it lasted this long, then the disk healed; 0: for good
  bool healed = false;               // the guest restored the disk before the workload ended
  uint32_t disk = 1;                 // the failing disk of a set (`--flakey-disk`); 1 = the only
  uint32_t disks = 1;                // disks in the run (the others kept working)
  uint64_t acks = 0;                 // acks the workload gave
  uint64_t acks_before_failure = 0;  // of those, relayed before the table switched
  // Acked after the failure began and not backed by data on the final image: the violation
  // this mode exists to catch (e.g. "retry fsync after EIO, then acknowledge").
  std::vector<std::string> acks_after_failure;
  std::vector<std::string> lost_before_failure;  // acked before it, missing on the final image
  std::vector<std::string> corrupt;              // acked, reported corrupt
  int workload_exit = -1;  // a program that fences may exit non-zero: not a violation
  int checker_exit = -1;   // on the final image, after the remount
  double seconds = 0;      // the run in the guest, checker included

  uint64_t violations() const {
    return acks_after_failure.size() + lost_before_failure.size() + corrupt.size() +
           (checker_exit != 0 ? 1 : 0);
  }
  // "error_writes after ack 5 for 1.0 s: 12 acks, 7 after the failure, 3 of them lost (13 14 15)"
  std::string Summary() const;
};

// One line per cut and the summary, for stdout.
std::string LiveCutsText(const LiveCutsResult& result);

nlohmann::json LiveCutsToJson(const LiveCutsResult& result);
LiveCutsResult LiveCutsFromJson(const nlohmann::json& j);
nlohmann::json FlakeyToJson(const FlakeyResult& result);
// A mode that is not error_writes or drop_writes is an error naming it, never a default.
absl::StatusOr<FlakeyResult> FlakeyFromJson(const nlohmann::json& j);

}  // namespace powercut::product
