#include "harness/product/run/run.h"

#include <stdlib.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "absl/cleanup/cleanup.h"
#include "base/scratch_dir.h"
#include "base/status_macros.h"
#include "fmt/format.h"
#include "harness/check/report.h"
#include "harness/cluster/node_logs.h"
#include "harness/fs/file_system.h"
#include "harness/fs/fsck.h"
#include "harness/product/run/recordings.h"
#include "harness/trace/manifest.h"

namespace powercut::product {
namespace {

namespace fs = std::filesystem;

std::string Tail(const std::string& path, size_t bytes) {
  std::error_code ec;
  uint64_t size = fs::file_size(path, ec);
  if (ec) return "";
  FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return "";
  uint64_t start = size > bytes ? size - bytes : 0;
  std::fseek(f, static_cast<long>(start), SEEK_SET);
  std::string out(size - start, '\0');
  size_t n = std::fread(out.data(), 1, out.size(), f);
  std::fclose(f);
  out.resize(n);
  return out;
}

// Disk 1's file system (RunOptions::fs validated by the callers: never empty).
harness::FsKind FirstFs(const RunOptions& o) { return o.fs.at(0); }

harness::CheckOptions EngineOptions(const std::string& trace, const RunOptions& o,
                                    vm::GuestCheckPhases* phases) {
  harness::CheckOptions c;
  c.trace_path = trace;
  c.checker = o.checker;
  c.fs = FirstFs(o);
  c.models = o.models;
  c.atomic_unit = o.atomic_unit;
  c.points = o.points;
  c.states = o.states;
  c.seed = o.seed;
  c.ordered = o.ordered;
  c.latest_ack_only = o.latest_ack_only;
  c.fs_failures_are_violations = o.fs_failures_are_violations;
  c.workers = o.workers;
  c.checker_timeout_s = o.checker_timeout_s;
  c.workload = o.name.empty() ? "run" : o.name;
  c.powercut = o.powercut;
  c.on_state_checked = o.on_state_checked;
  c.max_could_not_check = o.max_could_not_check;
  c.exhaustive = o.exhaustive;
  c.budget_seconds = o.budget_seconds;
  if (o.cluster.nodes > 0) {
    // A cluster's disks are its nodes, and a state's repro command starts every node on it.
    c.set_member = harness::SetMember::kNode;
    c.repro_args = cluster::ReproArgs(o.cluster);
  }
  if (o.fsck && !harness::FileSystemOf(c.fs).raw()) c.before_mount = harness::FsckHook(c.fs);
  if (o.check_pool != nullptr && o.AnyFileSystem()) {
    c.judges = o.check_pool->Factory({.fs = c.fs,
                                      .sector = o.SectorOf(0),
                                      .checker = o.checker,
                                      .mount_options = o.mount_options,
                                      .checker_timeout_s = o.checker_timeout_s,
                                      .phases = phases,
                                      .fstest_promises = o.fstest_promises,
                                      .boot_checks = o.boot_checks});
    c.states_per_judge = vm::kStatesPerCheckingGuest;
  }
  return c;
}

// A cluster's nodes' logs kept beside `trace` (node-K.log: SplitNodeLogs in RunWorkload, or a
// recording kept earlier), named in the report's summary of each node.
void NameNodeLogs(const std::string& trace, harness::CheckReport* report) {
  const std::string dir = fs::path(trace).parent_path().string();
  for (size_t d = 0; d < report->disks.size(); ++d) {
    const std::string log = cluster::NodeLogPath(dir.empty() ? "." : dir, d + 1);
    std::error_code ec;
    const uint64_t bytes = fs::file_size(log, ec);
    if (ec) continue;
    report->disks[d].log = fs::absolute(log, ec).lexically_normal().string();
    report->disks[d].log_bytes = bytes;
  }
}

// Why the engine stopped: a checker that cannot start or does not speak the protocol, or
// another failure of the check.
void CheckFailed(const absl::Status& status, RunOutcome& out) {
  std::string why(status.message());
  if (harness::IsBrokenChecker(status)) {
    bool start_failed = why.rfind("checker cannot start", 0) == 0;
    out.error_kind = start_failed ? RunError::kCheckerCannotStart : RunError::kCheckerProtocol;
    out.error = fmt::format("the check stopped: {}", why);
    return;
  }
  out.error_kind = RunError::kCheck;
  out.error = fmt::format("checking the recording failed: {}", why);
}

// False when the checker itself is broken (no state could be judged, or it crashed on every
// state): the outcome says so. A checker that failed on every state is a note.
bool CheckerWorked(const harness::CheckReport& report, RunOutcome& out) {
  uint64_t states = 0, unjudged = 0;
  const harness::ModelResult* unchecked = nullptr;
  for (const auto& m : report.results) {
    states += m.states;
    unjudged += m.could_not_check;
    if (m.first_could_not_check && unchecked == nullptr) unchecked = &m;
  }
  if (const harness::Verdict* down = report.NeverCameBack()) {
    // Not one state came back: a setup that cannot restart (a node command that only bootstraps
    // an empty folder, a --checker-timeout too short for the guest) far more often than a
    // finding, and in either case nothing was shown to survive: not a pass.
    out.ran = false;
    out.error_kind = RunError::kUnavailable;
    out.error = fmt::format(
        "the system did not come back on any of the {} crash states judged (unavailable): {}; "
        "the checker's stderr:\n{}",
        states, down->unavailable, down->stderr_tail);
    return false;
  }
  if (unchecked != nullptr && unjudged == states) {
    // Fewer states than the stop threshold, and not one of them could be judged.
    out.ran = false;
    out.error_kind = RunError::kCheckerProtocol;
    out.error = fmt::format("the checker's output could not be judged on any of the {} states: {}",
                            states, unchecked->first_could_not_check->could_not_check);
    return false;
  }
  bool checker_always_failed = !report.results.empty();
  for (const auto& m : report.results) {
    checker_always_failed = checker_always_failed && m.states > 0 && m.violations == m.states &&
                            m.first_violation && !m.first_violation->recovered &&
                            m.first_violation->mount_error.empty();
  }
  const harness::Verdict* first = report.results.empty() || !report.results.front().first_violation
                                      ? nullptr
                                      : &*report.results.front().first_violation;
  if (checker_always_failed && first != nullptr &&
      (first->exit_code < 0 || first->exit_code > 128)) {
    // Killed by a signal (directly, or as the shell's 128+N) on every state, also those where every
    // write was kept: a crash of the checker, not a finding about the images.
    out.ran = false;
    out.error_kind = RunError::kCheckerCrash;
    out.error = fmt::format(
        "the checker crashed (exit {}) on every one of the {} crash states: fix the checker; the "
        "first: {}",
        first->exit_code, report.results.front().states, first->Describe());
    return false;
  }
  if (checker_always_failed) {
    out.notes.push_back(fmt::format(
        "the checker failed on every crash state ({}): is the checker itself broken? Try it on "
        "the final image.",
        report.results.front().first_violation->Describe()));
  }
  return true;
}

// Why the VM could not record the workload: it hung past the timeout, or the VM failed.
void RecordFailed(const absl::Status& status, const RunOptions& o, RunOutcome& out) {
  bool hung = absl::IsDeadlineExceeded(status);
  out.error_kind = hung ? RunError::kTimeout : RunError::kVm;
  out.error =
      hung ? fmt::format(
                 "the workload did not finish within {} s (the guest's boot not counted; "
                 "raise --timeout if it is only slow): {}",
                 o.timeout.count(), std::string(status.message()))
           : fmt::format("the VM could not run the workload: {}", std::string(status.message()));
}

// The recording's numbers and notes: exit status, times, acks, entries.
void TakeRecording(const vm::RunResult& run, RunOutcome& out) {
  out.workload_exit = run.guest.exit_code;
  out.boot_seconds = run.boot_seconds;
  out.workload_seconds = run.workload_seconds;
  out.record_phases = run.phases;
  if (!run.boot_failure.empty()) {
    out.notes.push_back(
        fmt::format("the first guest booted for this recording failed and a second one came up: {}",
                    run.boot_failure.substr(0, run.boot_failure.find('\n'))));
  }
  if (run.guest.leftover_processes > 0) {
    out.notes.push_back(fmt::format(
        "the workload left {} process(es) running in the guest when it exited; they were killed "
        "before the disk was unmounted (their writes until then are in the recording)",
        run.guest.leftover_processes));
  }
  out.acks = run.host_acks.size();
  out.recorded_acks = out.acks;
  out.invalid_ack_lines = run.guest.invalid_ack_lines;
  out.trace_entries = run.trace_entries;
}

// A cluster's recording: each node's whole log, from the launcher's $POWERCUT_OUTPUT (kept as the
// run's workload output), into node-K.log beside the trace (harness/cluster/node_logs.h).
void SplitClusterLogs(const vm::RunResult& run, const RunOptions& o, RunOutcome& out) {
  if (run.trace.empty() || run.workload_output.empty()) return;
  absl::StatusOr<std::vector<cluster::NodeLog>> logs = cluster::SplitNodeLogs(
      run.workload_output, fs::path(run.trace).parent_path().string(), o.cluster.nodes);
  if (!logs.ok()) {
    out.notes.push_back(
        fmt::format("the nodes' logs were not kept: {}", StatusMessage(logs.status())));
    return;
  }
  for (const cluster::NodeLog& log : *logs) {
    if (log.left_out > 0) {
      out.notes.push_back(fmt::format(
          "node {}'s log was {} bytes longer than the {} kept of it ({}): its first and last "
          "bytes are kept",
          log.node, log.left_out, FormatBytes(cluster::kNodeLogCapBytes), log.path));
    }
  }
}

// False when the recording cannot be checked (the workload failed, printed malformed acks,
// never acked, flooded acks, or there is no trace): the outcome says why.
bool UsableRecording(const vm::RunResult& run, const RunOptions& o, RunOutcome& out) {
  if (run.guest.exit_code != 0) {
    // The workload's own output; the console log only when the guest could not save it.
    std::string tail = Tail(run.workload_log, 1500);
    if (tail.empty()) tail = Tail(run.console_log, 1500);
    out.error_kind = RunError::kWorkloadExit;
    out.error =
        fmt::format("the workload exited with status {} after {} acks; its last output:\n{}",
                    run.guest.exit_code, out.acks, tail);
    return false;
  }
  if (run.guest.invalid_ack_lines > 0) {
    out.error_kind = RunError::kMalformedAcks;
    out.error = fmt::format(
        "the workload wrote {} malformed line(s) on POWERCUT_ACK_FD (expected `ack <id>` with ids "
        "of 1-64 characters [A-Za-z0-9_.:-]); {} valid acks",
        run.guest.invalid_ack_lines, out.acks);
    return false;
  }
  if (out.acks == 0) {
    out.error_kind = RunError::kNoAcks;
    out.error =
        "the workload exited 0 but never acked a commit (write `ack <id>` lines to the fd "
        "in $POWERCUT_ACK_FD): there is nothing to check";
    return false;
  }
  if (out.acks > o.max_acks) {
    out.error_kind = RunError::kAckFlood;
    out.error = fmt::format(
        "the workload sent {} acks, more than --max-acks {}: a flood makes "
        "every crash point an ack point; lower the workload's count",
        out.acks, o.max_acks);
    return false;
  }
  if (run.trace.empty()) {
    out.error_kind = RunError::kVm;
    out.error = "the VM run produced no trace (use --recorder nbd or dm-log-writes)";
    return false;
  }
  return true;
}

// The recording's part of the outcome, into the check's outcome.
void AddRecordingTo(const RunOutcome& out, RunOutcome& checked) {
  checked.workload_exit = out.workload_exit;
  checked.invalid_ack_lines = out.invalid_ack_lines;
  checked.record_seconds = out.record_seconds;
  checked.boot_seconds = out.boot_seconds;
  checked.workload_seconds = out.workload_seconds;
  checked.record_phases = out.record_phases;
  checked.kernel = out.kernel;
  checked.notes.insert(checked.notes.begin(), out.notes.begin(), out.notes.end());
  checked.recording_dir = out.recording_dir;
  checked.recorded_acks = out.recorded_acks;
  if (!checked.ran) {
    checked.acks = out.acks;
    checked.trace_entries = out.trace_entries;
  }
}

}  // namespace

uint64_t RunOutcome::could_not_check() const {
  uint64_t n = 0;
  if (report) {
    for (const auto& m : report->results) n += m.could_not_check;
  }
  return n;
}

bool RunOutcome::passed() const {
  if (!ran) return false;
  if (live_cuts && (live_cuts->Violations() > 0 || live_cuts->TesterBug())) return false;
  if (node_cuts && (node_cuts->Violations() > 0 || node_cuts->TesterBug())) return false;
  if (flakey) return flakey->violations() == 0;
  return report && report->passed() && could_not_check() == 0;
}

int RunOutcome::exit_code() const {
  if (!ran) return 2;
  // A live cut outside the replay model is the tester's bug: nothing else it said is trusted.
  if (live_cuts && live_cuts->TesterBug()) return 2;
  if (node_cuts && node_cuts->TesterBug()) return 2;
  if (flakey) return flakey->violations() > 0 ? 1 : 0;
  if (!report) return 2;
  if (!report->passed() || (live_cuts && live_cuts->Violations() > 0) ||
      (node_cuts && node_cuts->Violations() > 0)) {
    return 1;
  }
  if ((live_cuts && live_cuts->Errors() > 0) || (node_cuts && node_cuts->Errors() > 0)) return 2;
  // An incomplete pass (--budget ran out) did not show that the program survives.
  return could_not_check() > 0 || !report->complete() ? 2 : 0;
}

bool RunOptions::AnyFileSystem() const {
  return std::any_of(fs.begin(), fs.end(),
                     [](harness::FsKind k) { return !harness::FileSystemOf(k).raw(); });
}

absl::Status ValidateRunOptions(const RunOptions& o, bool guests_will_judge) {
  if (o.checker.empty()) return absl::InvalidArgumentError("--checker CMD is required");
  auto disk_fs = DiskFileSystems(o.fs, o.disks);
  if (!disk_fs.ok()) return disk_fs.status();
  auto fs = absl::StatusOr<harness::FsKind>(disk_fs->front());
  if (o.disks > 1 && (o.recording != vm::Recording::kNbd || o.judge_promises)) {
    return absl::InvalidArgumentError(
        "--disks N > 1 records with powercut's NBD recorder; --recorder log-writes and fstest "
        "take one disk");
  }
  if (o.flakey.mode) RETURN_IF_ERROR(ValidateFlakeyDisk(o.flakey, o.disks));
  if (o.disks > 1 && o.fsck) {
    return absl::InvalidArgumentError("--fsck takes one disk; drop it with --disks N > 1");
  }
  if (auto s = ValidateAtomicUnit(o.atomic_unit); !s.ok()) return s;
  if (o.fsck && harness::FileSystemOf(*fs).raw()) {
    return absl::InvalidArgumentError(fmt::format("--fsck needs a file system (--fs {}), not raw",
                                                  harness::FsNames(/*with_raw=*/false)));
  }
  if (o.judge_promises && o.check_pool == nullptr) {
    return absl::InvalidArgumentError(
        "a file-system test judges its crash states in a guest: it needs --check-in guest");
  }
  if (o.fsck && o.check_pool != nullptr) {
    return absl::InvalidArgumentError(
        "--fsck runs on a host copy of each state; with --check-in guest the guest's boot path "
        "judges them: drop --fsck, or pass --check-in host (needs root)");
  }
  const bool set_has_fs = o.AnyFileSystem();
  if (o.disks > 1 && set_has_fs && !o.flakey.mode && o.check_pool == nullptr &&
      !guests_will_judge && !MayLoopMount()) {
    // Said before a guest boots, not after the recording. A --flakey run is not replayed: its
    // disks are checked in the guest that ran it.
    return absl::InvalidArgumentError(
        "--disks N > 1 with --check-in host: a set of several disks is then judged on this "
        "host's loop mounts, which needs root (CAP_SYS_ADMIN and /dev/loop-control): drop "
        "--check-in host (the recording kernel judges in guests), or run as root");
  }
  if (o.disks > 1 && set_has_fs && o.live_cuts > 0 && !MayLoopMount()) {
    // A live cut's image of a set is checked on this host (faults/live_cuts.cc); only the replay's
    // states of a set are judged in guests.
    return absl::InvalidArgumentError(
        "--live-cuts with several disks (--disks N, --nodes N): each cut's images are judged on "
        "this host's loop mounts, which needs root (CAP_SYS_ADMIN and /dev/loop-control): run as "
        "root, or drop --live-cuts (the replay is judged in guests)");
  }
  if (o.node_cuts > 0 && o.cluster.nodes == 0) {
    return absl::InvalidArgumentError(
        "--node-cuts K cuts one node of a cluster at a time: it needs --nodes N --node CMD "
        "(docs/cluster.md, \"Single-node cuts\")");
  }
  if (o.node_cuts > 100 || o.node_down_ms > 600000) {
    return absl::InvalidArgumentError(
        "--node-cuts: at most 100 cuts (each is a recording), and --node-down at most 10 min");
  }
  if (o.node_cuts > 0 && o.checker.empty() && o.cluster.checker.empty()) {
    return absl::InvalidArgumentError(
        "--node-cuts runs the checker against the live cluster after each cut's workload: give "
        "--checker CMD");
  }
  return absl::OkStatus();
}

RunOutcome CheckRecording(const std::string& trace, const RunOptions& o) {
  RunOutcome out;
  if (auto s = ValidateRunOptions(o); !s.ok()) {
    out.error_kind = RunError::kUsage;
    out.error = std::string(s.message());
    return out;
  }
  auto start = std::chrono::steady_clock::now();
  vm::GuestCheckPhases phases;
  auto report = harness::RunCheck(EngineOptions(trace, o, &phases));
  out.check_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out.check_phases = phases.Mean();
  if (!report.ok()) {
    CheckFailed(report.status(), out);
    return out;
  }
  out.ran = true;
  out.trace_entries = report->trace_entries;
  out.acks = report->trace_acks;
  if (o.cluster.nodes > 0) NameNodeLogs(trace, &*report);
  if (!CheckerWorked(*report, out)) {
    out.report = std::move(*report);  // the per-model numbers stay in the JSON
    return out;
  }
  auto timeline = BuildTimeline(trace, *report);
  if (timeline.ok()) {
    out.timeline = std::move(*timeline);
  } else {
    out.notes.push_back(fmt::format("no timeline: {}", std::string(timeline.status().message())));
  }
  out.report = std::move(*report);
  return out;
}

vm::RunSpec RecordingSpec(const RunOptions& o, const std::string& dir) {
  vm::RunSpec spec;
  spec.fs = FirstFs(o);
  if (auto disks = DiskFileSystems(o.fs, o.disks); disks.ok()) {
    for (size_t d = 1; d < disks->size(); ++d) {
      const auto disk = static_cast<uint32_t>(d);
      spec.extra_disks.push_back(
          {.fs = (*disks)[d], .bytes = o.DiskBytesOf(disk), .sector = o.SectorOf(disk)});
    }
  }
  spec.sector = o.SectorOf(0);
  spec.command = o.workload;
  spec.mount_options = o.mount_options;
  spec.mkfs_options = o.mkfs_options;
  spec.sync_acks = o.sync_acks;
  spec.recording = o.recording;
  spec.output_dir = dir;
  spec.timeout = o.timeout;
  spec.memory_mib = o.guest.memory_mib;
  spec.cpus = o.guest.cpus;
  spec.disk_bytes = o.DiskBytesOf(0);
  return spec;
}

std::optional<RunFolder> StartRun(const RunOptions& o, RunOutcome* out) {
  absl::Status valid = o.workload.empty() ? absl::InvalidArgumentError("--workload CMD is required")
                                          : ValidateRunOptions(o);
  if (!valid.ok()) {
    out->error_kind = RunError::kUsage;
    out->error = std::string(valid.message());
    return std::nullopt;
  }
  RunFolder folder{.dir = o.keep_dir, .temporary = o.keep_dir.empty()};
  if (folder.temporary) {  // the recording's folder unless --keep names one
    auto made = ScratchDir::Create("powercut-run", "/var/tmp");
    if (!made.ok()) {
      out->error_kind = RunError::kVm;
      out->error = "cannot create a temporary folder in /var/tmp";
      return std::nullopt;
    }
    folder.scratch = std::move(*made);
    folder.dir = folder.scratch.path();
  }
  return folder;
}

RunOutcome RunWorkload(const vm::VmEnvironment& env, const RunOptions& o, vm::GuestPool* pool) {
  RunOutcome out;
  // Once, however the recording ends or is never made (RunOptions::recording_done).
  auto recording_done = absl::MakeCleanup([&o] {
    if (o.recording_done) o.recording_done();
  });
  const std::optional<RunFolder> folder = StartRun(o, &out);
  if (!folder) return out;
  const std::string& dir = folder->dir;
  const bool temporary = folder->temporary;
  if (!temporary) out.recording_dir = dir;

  vm::RunSpec spec = RecordingSpec(o, dir);
  auto start = std::chrono::steady_clock::now();
  out.kernel = vm::KernelName(env.kernel);
  // On a guest of its own, when guests judge the crash states, the guest that recorded becomes
  // the first of them (docs/run.md, "Where crash states are judged"): it booted the recording
  // kernel with the workload's file systems, and a boot costs 5-7 s of CPU under TCG.
  std::unique_ptr<vm::WarmGuest> recorder;
  auto run = pool != nullptr
                 ? pool->Record(spec)
                 : vm::RunInVm(env, spec, o.check_pool != nullptr ? &recorder : nullptr);
  if (o.check_pool != nullptr) o.check_pool->Adopt(std::move(recorder));
  std::move(recording_done).Invoke();
  out.record_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!run.ok()) {
    RecordFailed(run.status(), o, out);
    return out;
  }
  TakeRecording(*run, out);
  if (o.cluster.nodes > 0) SplitClusterLogs(*run, o, out);
  if (!UsableRecording(*run, o, out)) return out;
  RunOptions check_options = o;
  if (o.judge_promises) {
    absl::StatusOr<std::string> promises = o.judge_promises(*run);
    if (!promises.ok()) {
      out.error_kind = RunError::kExpectedState;
      out.error = fmt::format("the expected state could not be taken from the recording: {}",
                              StatusMessage(promises.status()));
      return out;
    }
    check_options.fstest_promises = *std::move(promises);
  }
  RunOutcome checked = CheckRecording(run->trace, check_options);
  AddRecordingTo(out, checked);
  if (temporary && o.recordings != nullptr && checked.ran && checked.report &&
      !checked.report->passed()) {
    // The temporary folder goes away below: move the recording where the report's rebuild
    // commands can name it.
    KeepRecording(run->trace, o.name.empty() ? "run" : o.name, o.powercut, o.recordings, &checked);
  }
  if (temporary && checked.recording_dir.empty() && checked.report) {
    // Not kept (a pass, or over the cap): the nodes' logs go with the folder, so no report
    // names them (`--keep DIR` keeps them).
    for (harness::DiskSummary& d : checked.report->disks) {
      d.log.clear();
      d.log_bytes = 0;
    }
  }
  return checked;
}

std::string RunSummary(const RunOutcome& o) {
  std::string s;
  if (!o.ran) {
    return fmt::format("COULD NOT RUN ({}): {}\n", RunErrorName(o.error_kind), o.error);
  }
  if (o.flakey) {
    s += fmt::format("failing disk: {}\n{} in {:.1f} s\n", o.flakey->Summary(),
                     o.flakey->violations() ? "FAIL" : "PASS", o.record_seconds);
  } else {
    s += fmt::format("recorded {} entries, {} acks in {:.1f} s; checked in {:.1f} s\n",
                     o.trace_entries, o.acks, o.record_seconds, o.check_seconds);
    if (!o.record_phases.empty()) {
      s += "recording:";
      for (const auto& [name, seconds] : o.record_phases) {
        s += fmt::format(" {} {:.2f} s,", name, seconds);
      }
      s.back() = '\n';
    }
  }
  s += GuestCheckPhasesLine(o.check_phases);
  if (o.check_guests_booted + o.check_guests_adopted > 0) {
    s += fmt::format("checking guests: {} booted, {} taken over from the recording\n",
                     o.check_guests_booted, o.check_guests_adopted);
  }
  if (!o.kernel.empty()) s += fmt::format("guest kernel: {}\n", o.kernel);
  if (!o.flakey) s += harness::ReportSummaryTable(*o.report);
  if (o.live_cuts) s += LiveCutsText(*o.live_cuts);
  if (o.node_cuts) s += NodeCutsText(*o.node_cuts);
  for (const auto& n : o.notes) s += "note: " + n + "\n";
  if (!o.recording_dir.empty()) {
    s += o.recording_bytes > 0
             ? fmt::format(
                   "recording of the failing run kept in {} ({}): the rebuild commands "
                   "above name it\n",
                   o.recording_dir, FormatBytes(o.recording_bytes))
             : fmt::format("recording kept in {}\n", o.recording_dir);
  }
  return s;
}

}  // namespace powercut::product
