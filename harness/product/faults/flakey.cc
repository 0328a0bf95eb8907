#include "harness/product/faults/flakey.h"

#include <algorithm>
#include <optional>

#include "absl/cleanup/cleanup.h"
#include "absl/container/flat_hash_set.h"
#include "base/duration_flag.h"
#include "base/status_macros.h"
#include "fmt/format.h"

namespace powercut::product {

absl::Status ValidateFlakey(const RunOptions::Flakey& f) {
  if (!f.mode) {
    return absl::InvalidArgumentError(
        fmt::format("no failing disk's mode (--flakey): expected {}", vm::kFlakeyModeChoices));
  }
  if (f.after_acks < 0) {
    return absl::InvalidArgumentError(
        fmt::format("--flakey-after-acks {}: expected 0 or more acks", f.after_acks));
  }
  if (f.window.count() < 0) {
    return absl::InvalidArgumentError("--flakey-for: expected a positive duration");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::chrono::milliseconds> ParseFlakeyWindow(const std::string& text) {
  ASSIGN_OR_RETURN(absl::Duration window, ParseDurationFlag("--flakey-for", text));
  return absl::ToChronoMilliseconds(window);
}

namespace {

// Why the flakey run could not run, as the outcome's error kind and message.
void RecordRunError(const RunOptions& o, const absl::Status& status, RunOutcome& out) {
  const std::string why(status.message());
  if (absl::IsDeadlineExceeded(status)) {
    out.error_kind = RunError::kTimeout;
    out.error = fmt::format(
        "the guest hung on the failing disk ({} after ack {}) and was killed after {} s: {}",
        vm::FlakeyModeName(*o.flakey.mode), o.flakey.after_acks, o.timeout.count(), why);
  } else if (why.find("dm-flakey") != std::string::npos) {
    out.error_kind = RunError::kFlakeyUnsupported;
    out.error = fmt::format(
        "the guest kernel's dm-flakey refused the table for {} (is the dm-flakey module there, "
        "and does this kernel know the mode? drop_writes needs Linux 3.x, error_writes 4.17): {}",
        vm::FlakeyModeName(*o.flakey.mode), why);
  } else {
    out.error_kind = RunError::kVm;
    out.error = fmt::format("the VM could not run the workload: {}", why);
  }
}

// The acks the failing disk lost (before the failure: a violation) or never stored (after it),
// and the corrupt ones, from the final image's read-back.
FlakeyResult JudgeFlakeyRun(const RunOptions& o, const vm::RunResult& run, uint64_t acks) {
  FlakeyResult r;
  r.mode = *o.flakey.mode;
  r.after_acks = o.flakey.after_acks;
  r.window_seconds = static_cast<double>(o.flakey.window.count()) / 1000.0;
  r.healed = run.guest.flakey_healed;
  r.disk = o.flakey.disk;
  r.disks = o.disks;
  r.acks = acks;
  r.acks_before_failure = static_cast<uint64_t>(std::max<int64_t>(0, run.guest.acks_before_cut));
  r.workload_exit = run.guest.exit_code;
  r.checker_exit = run.guest.checker_exit_code;
  r.seconds = run.wall_seconds;
  const absl::flat_hash_set<std::string> have(run.guest.have.begin(), run.guest.have.end());
  const absl::flat_hash_set<std::string> corrupt(run.guest.corrupt.begin(),
                                                 run.guest.corrupt.end());
  absl::flat_hash_set<std::string> seen;
  for (size_t i = 0; i < run.guest.acked.size(); ++i) {
    const std::string& id = run.guest.acked[i];
    if (!seen.insert(id).second) continue;
    if (corrupt.contains(id)) {
      r.corrupt.push_back(id);
    } else if (!have.contains(id)) {
      (i < r.acks_before_failure ? r.lost_before_failure : r.acks_after_failure).push_back(id);
    }
  }
  return r;
}

}  // namespace

RunOutcome RunFlakey(const vm::VmEnvironment& env, const RunOptions& o, vm::GuestPool* pool) {
  RunOutcome out;
  // Once, however the recording ends or is never made (RunOptions::recording_done).
  auto recording_done = absl::MakeCleanup([&o] {
    if (o.recording_done) o.recording_done();
  });
  const std::optional<RunFolder> folder = StartRun(o, &out);
  if (!folder) return out;
  const std::string& dir = folder->dir;
  if (absl::Status s = ValidateFlakey(o.flakey); !s.ok()) {
    out.error_kind = RunError::kUsage;
    out.error = std::string(s.message());
    return out;
  }
  vm::RunSpec spec = RecordingSpec(o, dir);
  spec.recording = vm::Recording::kNone;  // nothing to replay: the final image is the verdict
  spec.flakey = o.flakey.mode;
  spec.flakey_after_acks = o.flakey.after_acks;
  spec.flakey_for = o.flakey.window;
  spec.flakey_disk = o.flakey.disk - 1;  // the others of a set keep working
  spec.checker = o.checker;
  const auto start = std::chrono::steady_clock::now();
  auto run = pool != nullptr ? pool->Record(spec) : vm::RunInVm(env, spec);
  std::move(recording_done).Invoke();
  out.record_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!run.ok()) {
    RecordRunError(o, run.status(), out);
    return out;
  }
  out.workload_exit = run->guest.exit_code;
  out.boot_seconds = run->boot_seconds;
  out.workload_seconds = run->workload_seconds;
  out.acks = run->guest.acked.size();
  out.invalid_ack_lines = run->guest.invalid_ack_lines;
  if (out.acks == 0) {
    out.error_kind = RunError::kNoAcks;
    out.error = fmt::format(
        "the workload never acked a commit (exit {}): there is nothing to check on the failing "
        "disk",
        run->guest.exit_code);
    return out;
  }
  FlakeyResult r = JudgeFlakeyRun(o, *run, out.acks);
  if (r.workload_exit != 0) {
    out.notes.push_back(fmt::format(
        "the workload exited {} on the failing disk (a program that stops at a failed barrier "
        "does; not a violation)",
        r.workload_exit));
  }
  out.ran = true;
  out.flakey = std::move(r);
  return out;
}

}  // namespace powercut::product
