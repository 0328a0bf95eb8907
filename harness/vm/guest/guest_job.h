// The host -> guest job description and the guest -> host result, exchanged as JSON files in the
// run folder (host <run>/job.json and <run>/result.json; the guest sees them under /run/powercut).
// Shared by the host orchestration (vm_run.h) and the guest agent (guest/agent.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "harness/fs/file_system.h"
#include "harness/vm/guest/flakey_mode.h"

namespace powercut::vm {

// One image to check (GuestJob::checks): the disk with that serial holds a file system `fs`.
struct GuestCheck {
  std::string disk_serial;
  harness::FsKind fs = harness::DefaultFs();
  std::string command;  // the checker
  std::string mount_options;
};

// Several recorded disks (docs/vm.md, "Several disks"): disk 2, 3, ... of a workload job, each
// mounted for the workload at its own folder (POWERCUT_DIR_2 ...; POWERCUT_DEV_2 ... when raw).
struct GuestExtraDisk {
  std::string disk_serial;
  harness::FsKind fs = harness::DefaultFs();
  // kCheck of a set's crash state (GuestJob::state_token): this disk's own state block token.
  std::string state_token;
};

// What the guest agent does.
struct GuestJob {
  enum class Mode { kWorkload, kCheck };
  Mode mode = Mode::kWorkload;
  harness::FsKind fs = harness::DefaultFs();  // in JSON its name (harness/fs/file_system.h)
  std::string disk_serial = "powercut0";
  // dm-log-writes: the log disk's serial; "" = no dm-log-writes.
  std::string log_writes_serial;
  // Disks 2..N of a set, in order (empty: one disk): a workload's, or a set's crash state.
  std::vector<GuestExtraDisk> extra_disks;
  // dm-flakey (none: no failing disk; in JSON its name or ""); the table switches from
  // pass-through to flakey when `flakey_after_acks` acks were relayed (0 = before the workload
  // starts).
  std::optional<FlakeyMode> flakey;
  int64_t flakey_after_acks = 0;
  // > 0: the failure lasts this long, then the pass-through table is restored (the disk heals)
  // while the workload still runs; 0: it lasts until the workload ends.
  int64_t flakey_heal_ms = 0;
  // Which disk of a set fails: 0 = disk 1, K = extra_disks[K - 1] (the others keep working).
  uint32_t flakey_disk = 0;
  std::string command;        // the workload (kWorkload) or checker (kCheck)
  std::string checker;        // kWorkload with flakey: run after the remount
  std::string mount_options;  // passed to mount -o ("" = defaults)
  // A warm guest's job number (0: the guest's only job). The agent prefixes every line it sends
  // for the job with `job <id> ` and writes result-<id>.json, workload-<id>.log, checker-<id>.log.
  uint64_t job_id = 0;
  // Hash the first this many bytes of the disk before anything uses it, read with O_DIRECT and
  // through the page cache (GuestResult::head_hash_*): the proof that a fresh disk shows no block
  // of the previous one (0 = skip).
  uint64_t head_hash_bytes = 0;
  // kCheck with several images in one boot: checked in this order, each reported in
  // GuestResult::checks; when non-empty, fs/disk_serial/command/mount_options above are unused.
  std::vector<GuestCheck> checks;
  // kCheck of one crash state on a disk that stays attached (guest_judge.h): before anything
  // reads it, drop the disk's buffers (BLKFLSBUF) and read its last 4 KiB through the page cache;
  // its first line must be this token (StateServer::TokenFor), else the cache still holds the
  // previous state (step "state-block"). After the checker: unmount, and nothing may still hold
  // the disk (step "release"). "" = an ordinary check.
  std::string state_token;
  // > 0: the checker is killed (its whole cgroup) after this many seconds (GuestResult::
  // checker_timed_out).
  double checker_timeout_s = 0;
  // kCheck of a crash state of `powercut fstest` (harness/fstest/judge.h): the promises in force
  // at every persistence point (JSON, harness/fstest/promises.h). Set, the agent judges the
  // mounted state itself (no program starts) and its protocol text is checker_stdout; `command`
  // is unused.
  std::string fstest_promises;
  // kWorkload: give the workload POWERCUT_ACK_SYNC_FD and answer each of its acks there once the
  // host confirmed the ack's mark (`job <N> acked <id>` on the port): docs/protocol.md.
  bool sync_acks = false;
  // A node cut of this disk (0 = disk 1; -1: none, RunSpec::node_cut_disk): stacked under the dm
  // device kNodeCutName, switched to `error` and back when the workload (the cluster launcher)
  // writes `power-off` / `power-on` on its ack descriptor; the agent answers `ok <line>` or
  // `error <line> <why>` on POWERCUT_ACK_SYNC_FD.
  int32_t node_cut_disk = -1;
  // false: the boot path mounts first and runs the file system's recovery tools only where the
  // mount fails, skipping the boot-time check (e2fsck -p): `powercut fstest` (docs/fstest.md).
  bool boot_checks = true;
  // kCheck of a crash state: the checker is powercut's own workload program, which serves states
  // resident (base/check_server.h): the agent starts it once and forks it per state instead of
  // exec'ing it. Only the host sets it, for the commands it built.
  bool resident_checker = false;
};

// What the guest agent reports.
struct GuestResult {
  bool ok = false;          // every step up to the command ran (the command may fail)
  std::string failed_step;  // e.g. "mount", "dm-log-writes", "workload"
  std::string error;
  int exit_code = -1;  // the workload's or checker's exit status
  uint64_t acks = 0;
  uint64_t invalid_ack_lines = 0;
  std::vector<std::string> acked;  // ids in order
  int64_t acks_before_cut = -1;    // dm-flakey: acks relayed before the table was switched
  bool flakey_healed = false;      // dm-flakey: the table was restored during the workload
  int checker_exit_code = -1;      // dm-flakey: the checker after the remount (or kCheck)
  std::vector<std::string> have;   // checker output
  std::vector<std::string> corrupt;
  std::string device_cache;  // /sys/block/<disk>/queue/write_cache as the guest saw it
  // /sys/block/<disk>/queue/{logical,physical}_block_size as the guest saw them (0: unread).
  uint32_t logical_block_size = 0;
  uint32_t physical_block_size = 0;
  double ready_seconds = 0;  // guest uptime when the agent started
  // Processes the workload left behind when it exited; the agent killed them (their cgroup)
  // before unmounting.
  uint64_t leftover_processes = 0;
  // XXH3-128 hex of the disk's first GuestJob::head_hash_bytes, read with O_DIRECT and through
  // the page cache ("" when not asked).
  std::string head_hash_direct;
  std::string head_hash_cached;
  // GuestJob::checks: one result per image, in order (ok, failed_step, error, exit codes,
  // have, corrupt).
  std::vector<GuestResult> checks;
  // GuestJob::state_token checks: the checker's raw stdout (the host parses the protocol, as for
  // host checks), the tail of its stderr, how it ended, and the boot path's steps
  // (harness::FsRecovery: name, exit code, changed, detail).
  std::string checker_stdout;
  std::string checker_stderr_tail;
  int checker_signal = 0;
  bool checker_timed_out = false;
  struct FsStep {
    std::string disk;  // a set's state: "disk K" ("" for one disk)
    std::string name;
    int exit_code = 0;
    bool changed = false;
    std::string detail;
  };
  std::vector<FsStep> fs_steps;
  bool fs_repaired = false;
  bool fs_unrecoverable = false;
  std::string kernel;  // uname -r in the guest
  // GuestJob::state_token checks: seconds per step in the guest, in order (`state-block`,
  // `fsck`, `mount`, `checker`, `umount`, `release`); the host appends its own (`exchange`:
  // the job's round trip minus the guest's steps; docs/run.md, "Where the time goes").
  std::vector<std::pair<std::string, double>> phases;
};

// The names of a job's files in the run folder: job.json, result.json (job 0) or job-<id>.json,
// result-<id>.json; logs `workload.log` / `workload-<id>.log`.
std::string JobFileName(const char* stem, uint64_t job_id, const char* extension);

std::string GuestJobToJson(const GuestJob& job);
absl::StatusOr<GuestJob> GuestJobFromJson(const std::string& text);
std::string GuestResultToJson(const GuestResult& result);
// The same JSON on one line (no newline inside: strings are escaped), for the agent's port: a
// warm guest's check jobs and their results travel inline there, `job <id> inline <job>` and
// `job <id> event job-result <result>`, instead of as files in the 9p run folder (two 9p file
// round trips of a TCG guest per crash state; docs/run.md, "Where the time goes").
std::string GuestJobToLine(const GuestJob& job);
inline constexpr char kJobResultEvent[] = "job-result ";
std::string GuestResultToLine(const GuestResult& result);
absl::StatusOr<GuestResult> GuestResultFromJson(const std::string& text);

}  // namespace powercut::vm
