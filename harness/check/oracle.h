// The acknowledged-commit oracle (design brief "The workload protocol"): judges one crash state
// from the acks recorded before its point and what the checker reported.
//
//   durability      every id acked before the crash point is in `have` (with `latest_ack_only`:
//                   the last one acked before it; for checkers whose ids are cumulative promises,
//                   as `powercut fstest`'s, where the last point's promises include every earlier
//                   one that still binds and an earlier one may rightly be superseded)
//   order           with `ordered`: the acked ids in `have` form a prefix of the ack order
//   recoverability  the image mounted and the checker exited 0 in time
//   integrity       no `corrupt <id>` line for an id acked before the crash point; `corrupt` for
//                   an id not acked before it is the torn tail any log may have: counted
//                   (torn_unacked), never a violation
// A file system that not even its own recovery tools brought back (fs_unrecoverable) is the file
// system's outcome, not the program's: not a violation unless `fs_failures_are_violations`.
// A system that did not come back to answer the checker (`unavailable <text>`, a cluster without a
// quorum: docs/cluster.md) is the system's own outcome: never a violation, since nothing is known
// about its acks, and not "could not check" either, since the checker did speak the protocol.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "harness/check/boot_recovery.h"
#include "harness/check/checker.h"
#include "harness/check/set_member.h"
#include "harness/state/cache_model.h"

namespace powercut::harness {

struct Verdict {
  std::string state_id;
  uint64_t point = 0;
  std::string cache;  // model code
  uint64_t acked_before = 0;
  std::vector<std::string> lost;          // acked before the point, not in have
  std::vector<std::string> gaps;          // --ordered: missing ids before the last id present
  std::vector<std::string> corrupt;       // acked before the point, reported corrupt
  std::vector<std::string> torn_unacked;  // reported corrupt, not acked before the point
  // The checker's `why <id> <text>` for the lost or corrupt ids, as "<id>: <text>".
  std::vector<std::string> why;
  bool recovered = true;                 // mounted, checker exit 0, no timeout
  bool fs_unrecoverable = false;         // the file system's own tools could not bring it back
  bool fs_repaired = false;              // they brought it back, but only by repairing it
  bool fs_failure_is_violation = false;  // --fs-failures-are-violations
  std::string fs_steps;                  // the boot path as it ran ("e2fsck -p exit 0; mount ok")
  int exit_code = 0;
  bool timed_out = false;
  std::string mount_error;  // non-empty when the image could not be mounted/checked
  std::string stderr_tail;
  std::vector<uint64_t> dropped;  // volatile entries not on the media
  // Several disks: the dropped writes (entries) of each disk, and the torn write's disk (1-based;
  // 0: none or one disk). `member` says how reports name a disk of the set ("node 2" for a
  // cluster's).
  std::vector<std::vector<uint64_t>> dropped_per_disk;
  uint32_t torn_disk = 0;
  SetMember member = SetMember::kDisk;
  std::optional<uint64_t> torn_entry;
  std::string torn_units;
  std::string rebuild;  // the command that rebuilds this image
  // The command that rebuilds it and judges it again as the check did (`powercut repro ...
  // --recheck`; a cluster's starts every node on its crash image), "" when the check was given
  // none (harness/check/engine.h, CheckOptions::repro_args).
  std::string repro;
  // Non-empty: the checker's output is not the protocol (the line, quoted) or the checker cannot
  // start; the state could not be checked. Not a violation: nothing is known about the image.
  std::string could_not_check;
  // Non-empty: the checker said the system did not come back (`unavailable <text>`, the text): the
  // system's own outcome on this state, neither a violation nor a pass. stderr_tail holds the
  // checker's diagnostics (a cluster's: each node's last log lines).
  std::string unavailable;

  // The program's violation: the file system came back and an acknowledged commit is missing
  // or corrupt, or the checker failed.
  bool violation() const {
    if (!could_not_check.empty() || !unavailable.empty()) return false;
    if (fs_unrecoverable) return fs_failure_is_violation;
    return !lost.empty() || !gaps.empty() || !corrupt.empty() || !recovered;
  }
  // The checker ran on a mounted image and failed (exit != 0 or timed out): for a database,
  // its server could not recover the image. stderr_tail then says why (the server's log).
  bool checker_failed() const {
    return could_not_check.empty() && unavailable.empty() && !fs_unrecoverable &&
           mount_error.empty() && !recovered;
  }
  // One paragraph: what was violated, where, and how to rebuild it.
  std::string Describe() const;
};

// What the oracle needs from one checker run, compact enough to cache per distinct image:
// `present` holds the distinct acked ids of the trace the checker reported, as sorted disjoint
// ranges [first, last) of their numbers in first-ack order (ids the trace never acked are
// irrelevant). A log's recovery reports a prefix, so this is one range or a few, whatever the
// run's length: memory per distinct image and judging time stay independent of the acks.
struct CompactOutput {
  std::vector<std::pair<uint32_t, uint32_t>> present;
  std::vector<std::string> corrupt;
  std::vector<std::pair<std::string, std::string>> why;  // `why <id> <text>`, sorted by id
  int exit_code = 0;
  int signal = 0;
  bool timed_out = false;
  std::string setup_error;
  std::string stderr_tail;     // kept only when the checker failed
  std::string protocol_error;  // CheckerOutput::protocol_error, or why the checker cannot start
  std::string unavailable;     // CheckerOutput::unavailable
  bool cannot_start = false;   // CheckerOutput::cannot_start()
  bool fs_unrecoverable = false;
  bool fs_repaired = false;
  std::string fs_steps;
  bool recovered() const { return setup_error.empty() && exit_code == 0 && !timed_out; }
};

class Oracle {
 public:
  Oracle(const TraceIndex& index, bool ordered, bool fs_failures_are_violations = false,
         bool latest_ack_only = false);
  CompactOutput Compact(const CheckerOutput& output) const;
  // The same, with the boot path's outcome (harness/check/boot_recovery.h).
  CompactOutput Compact(const CheckerOutput& output, const FsRecovery& fs) const;
  // Fills the judgement fields of `verdict` (lost, gaps, corrupt, recovered...).
  void Judge(uint64_t point, const CompactOutput& output, Verdict* verdict) const;
  void Judge(uint64_t point, const CheckerOutput& output, Verdict* verdict) const {
    Judge(point, Compact(output), verdict);
  }

 private:
  const TraceIndex& index_;
  const bool ordered_;
  const bool fs_failures_are_violations_;
  const bool latest_ack_only_;
  absl::flat_hash_map<std::string, size_t> unique_;  // acked id -> distinct-id number
  std::vector<size_t> ack_unique_;                   // ack position -> distinct-id number
  std::vector<size_t> first_position_;               // distinct-id number -> first ack position
};

}  // namespace powercut::harness
