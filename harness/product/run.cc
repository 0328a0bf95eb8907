#include "harness/product/run.h"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "base/scratch_dir.h"
#include "base/status_macros.h"
#include "fmt/format.h"
#include "harness/check/file_system.h"
#include "harness/check/fsck.h"
#include "harness/check/report.h"
#include "harness/product/builtin.h"
#include "harness/product/flakey.h"
#include "harness/product/live_cuts.h"
#include "harness/product/recordings.h"
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

// Disk 1's file system (RunOptions::fs validated by the callers).
harness::FsKind FirstFs(const RunOptions& o) {
  auto fs = DiskFileSystems(o.fs, o.disks);
  return fs.ok() ? fs->front() : harness::FsKind::kRaw;
}

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
  if (o.fsck && !harness::FileSystemOf(c.fs).raw()) c.before_mount = harness::FsckHook(c.fs);
  if (o.check_pool != nullptr && !harness::FileSystemOf(c.fs).raw()) {
    c.judges = o.check_pool->Factory({.fs = c.fs,
                                      .sector = o.sector,
                                      .checker = o.checker,
                                      .mount_options = o.mount_options,
                                      .checker_timeout_s = o.checker_timeout_s,
                                      .phases = phases,
                                      .fstest_promises = o.fstest_promises,
                                      .boot_checks = o.boot_checks});
  }
  return c;
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
  if (flakey) return flakey->violations() == 0;
  return report && report->passed() && could_not_check() == 0;
}

int RunOutcome::exit_code() const {
  if (!ran) return 2;
  // A live cut outside the replay model is the tester's bug: nothing else it said is trusted.
  if (live_cuts && live_cuts->TesterBug()) return 2;
  if (flakey) return flakey->violations() > 0 ? 1 : 0;
  if (!report) return 2;
  if (!report->passed() || (live_cuts && live_cuts->Violations() > 0)) return 1;
  if (live_cuts && live_cuts->Errors() > 0) return 2;
  // An incomplete pass (--budget ran out) did not show that the program survives.
  return could_not_check() > 0 || !report->complete() ? 2 : 0;
}

bool MayLoopMount() {
  // CAP_SYS_ADMIN (bit 21 of CapEff) and a loop-control device: root in an unprivileged
  // container has neither, and would otherwise fall back to debugfs or fail.
  std::ifstream status("/proc/self/status");
  std::string line;
  uint64_t caps = 0;
  while (std::getline(status, line)) {
    if (line.rfind("CapEff:", 0) == 0) caps = std::strtoull(line.c_str() + 7, nullptr, 16);
  }
  return (caps & (uint64_t{1} << 21)) != 0 && ::access("/dev/loop-control", R_OK | W_OK) == 0;
}

absl::StatusOr<CheckIn> ParseCheckIn(const std::string& text) {
  if (text == "host") return CheckIn::kHost;
  if (text == "guest") return CheckIn::kGuest;
  if (text.empty()) return MayLoopMount() ? CheckIn::kHost : CheckIn::kGuest;
  return absl::InvalidArgumentError(fmt::format(
      "--check-in {}: expected guest (the recording kernel judges, no root needed) or host (loop "
      "mounts on this host: needs root)",
      text));
}

const char* CheckInName(CheckIn where) { return where == CheckIn::kGuest ? "guest" : "host"; }

absl::StatusOr<std::unique_ptr<vm::GuestCheckPool>> CheckPoolFor(CheckIn where,
                                                                 const std::string& agent_hint,
                                                                 const std::string& kernel) {
  if (where == CheckIn::kHost) return std::unique_ptr<vm::GuestCheckPool>();
  auto env = vm::PrepareVm(agent_hint, kernel);
  if (!env.ok()) {
    return absl::Status(env.status().code(),
                        fmt::format("--check-in guest: cannot prepare the VM: {}",
                                    std::string(env.status().message())));
  }
  return std::make_unique<vm::GuestCheckPool>(*env);
}

harness::StateJudgeFactory JudgesForTrace(vm::GuestCheckPool* pool, harness::FsKind fs,
                                          const std::string& trace, const std::string& checker,
                                          double checker_timeout_s, vm::GuestCheckPhases* phases) {
  auto manifest = harness::ReadManifest(harness::ManifestPathFor(trace));
  harness::SectorFormat sector = harness::kDefaultSectorFormat;
  if (manifest.ok() && manifest->logical_sector == 4096) sector = harness::SectorFormat::k4kn;
  if (manifest.ok() && manifest->physical_sector == 512) sector = harness::SectorFormat::k512n;
  return pool->Factory({.fs = fs,
                        .sector = sector,
                        .checker = checker,
                        .mount_options = "",
                        .checker_timeout_s = checker_timeout_s,
                        .phases = phases});
}

absl::StatusOr<TraceJudging> JudgeTrace(const std::string& check_in, harness::FsKind fs,
                                        const std::string& powercut, const std::string& kernel,
                                        const std::string& trace, const std::string& checker,
                                        double checker_timeout_s, std::string_view host_only) {
  ASSIGN_OR_RETURN(CheckIn where, ParseCheckIn(check_in));
  TraceJudging judging;
  if (where == CheckIn::kHost || harness::FileSystemOf(fs).raw()) return judging;
  if (!host_only.empty()) {
    return absl::InvalidArgumentError(fmt::format(
        "{}: pass --check-in host with it, or drop it (without root, states are judged in guests)",
        host_only));
  }
  ASSIGN_OR_RETURN(judging.pool, CheckPoolFor(where, AgentHint(powercut), kernel));
  judging.judges = JudgesForTrace(judging.pool.get(), fs, trace, checker, checker_timeout_s,
                                  judging.phases.get());
  return judging;
}

std::string GuestCheckPhasesLine(const std::vector<std::pair<std::string, double>>& phases) {
  if (phases.empty()) return "";
  std::string s = "guest check, mean per state:";
  for (const auto& [name, seconds] : phases) s += fmt::format(" {} {:.2f} s,", name, seconds);
  s.back() = '\n';
  return s;
}

absl::Status ValidateAtomicUnit(uint32_t unit) {
  if (unit == 0 || unit == 512 || unit == 4096) return absl::OkStatus();
  return absl::InvalidArgumentError(
      fmt::format("--atomic {}: expected 512 or 4096 (bytes; default: the disk's sector)", unit));
}

absl::StatusOr<std::vector<std::string>> PerDiskValues(const std::string& text, uint32_t disks,
                                                       const std::string& flag,
                                                       const std::string& what) {
  if (disks == 0) {
    return absl::InvalidArgumentError(
        "--disks 0: a run records at least one disk (--disks 1 is the default)");
  }
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    out.push_back(text.substr(start, comma == std::string::npos ? comma : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (out.size() != 1 && out.size() != disks) {
    return absl::InvalidArgumentError(fmt::format(
        "{} {}: {} {} for {} disk{}: give one for every disk or one per disk (--disks N)", flag,
        text, out.size(), what, disks, disks == 1 ? "" : "s"));
  }
  out.resize(disks, out.front());
  return out;
}

namespace {

// Each disk's value of a per-disk flag (PerDiskValues), each parsed by `parse`.
template <typename T, typename Parse>
absl::StatusOr<std::vector<T>> ParsePerDisk(const std::string& text, uint32_t disks,
                                            const std::string& flag, const std::string& what,
                                            Parse parse) {
  ASSIGN_OR_RETURN(std::vector<std::string> values, PerDiskValues(text, disks, flag, what));
  std::vector<T> out;
  for (const std::string& value : values) {
    ASSIGN_OR_RETURN(T parsed, parse(value));
    out.push_back(parsed);
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<harness::FsKind>> DiskFileSystems(const std::string& fs,
                                                             uint32_t disks) {
  return ParsePerDisk<harness::FsKind>(
      fs, disks, "--fs", "file systems",
      [](const std::string& name) { return harness::ParseFsKind(name); });
}

absl::StatusOr<std::vector<harness::SectorFormat>> DiskSectors(const std::string& text,
                                                               uint32_t disks) {
  return ParsePerDisk<harness::SectorFormat>(
      text, disks, "--sector", "sector formats",
      [](const std::string& name) { return harness::ParseSectorFormat(name); });
}

absl::StatusOr<std::vector<uint64_t>> DiskSizes(const std::string& text, uint32_t disks) {
  return ParsePerDisk<uint64_t>(
      text, disks, "--disk-size", "sizes", [](const std::string& size) -> absl::StatusOr<uint64_t> {
        ASSIGN_OR_RETURN(uint64_t bytes, ParseByteSize(size, "--disk-size"));
        if (bytes < (uint64_t{64} << 20)) {
          return absl::InvalidArgumentError(fmt::format(
              "--disk-size {}: at least 64MiB (mkfs needs room for its journal)", size));
        }
        return bytes;
      });
}

absl::Status ValidateRunOptions(const RunOptions& o) {
  if (o.checker.empty()) return absl::InvalidArgumentError("--checker CMD is required");
  auto disk_fs = DiskFileSystems(o.fs, o.disks);
  if (!disk_fs.ok()) return disk_fs.status();
  auto fs = absl::StatusOr<harness::FsKind>(disk_fs->front());
  if (o.disks > 1 && (o.recording != vm::Recording::kNbd || o.judge_promises)) {
    return absl::InvalidArgumentError(
        "--disks N > 1 records with powercut's NBD recorder; --recorder log-writes and fstest "
        "take one disk");
  }
  if (!o.flakey.mode.empty()) RETURN_IF_ERROR(ValidateFlakeyDisk(o.flakey, o.disks));
  if (o.disks > 1 && o.fsck) {
    return absl::InvalidArgumentError("--fsck takes one disk; drop it with --disks N > 1");
  }
  if (auto s = ValidateAtomicUnit(o.atomic_unit); !s.ok()) return s;
  if (o.fsck && harness::FileSystemOf(*fs).raw()) {
    return absl::InvalidArgumentError(
        "--fsck needs a file system (--fs ext4, xfs or btrfs), not raw");
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
  const bool set_has_fs = std::any_of(disk_fs->begin(), disk_fs->end(), [](harness::FsKind k) {
    return !harness::FileSystemOf(k).raw();
  });
  if (o.disks > 1 && set_has_fs && o.flakey.mode.empty() && !MayLoopMount()) {
    // Said before a guest boots, not after the recording: the guest judge takes one disk. A
    // --flakey run is not replayed: its disks are checked in the guest that ran it.
    return absl::InvalidArgumentError(
        "--disks N > 1: a set of several disks is judged on this host's loop mounts, which needs "
        "root (CAP_SYS_ADMIN and /dev/loop-control): run as root, or record one disk");
  }
  return absl::OkStatus();
}

RunOutcome CheckRecording(const std::string& trace, const RunOptions& o) {
  RunOutcome out;
  if (auto s = ValidateRunOptions(o); !s.ok()) {
    out.error_kind = "usage";
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
    std::string why(report.status().message());
    if (harness::IsBrokenChecker(report.status())) {
      bool start_failed = why.rfind("checker cannot start", 0) == 0;
      out.error_kind = start_failed ? "checker-cannot-start" : "checker-protocol";
      out.error = fmt::format("the check stopped: {}", why);
      return out;
    }
    out.error_kind = "check";
    out.error = fmt::format("checking the recording failed: {}", why);
    return out;
  }
  out.ran = true;
  out.trace_entries = report->trace_entries;
  out.acks = report->trace_acks;
  uint64_t states = 0, unjudged = 0;
  const harness::ModelResult* unchecked = nullptr;
  for (const auto& m : report->results) {
    states += m.states;
    unjudged += m.could_not_check;
    if (m.first_could_not_check && unchecked == nullptr) unchecked = &m;
  }
  if (unchecked != nullptr && unjudged == states) {
    // Fewer states than the stop threshold, and not one of them could be judged.
    out.ran = false;
    out.error_kind = "checker-protocol";
    out.error = fmt::format("the checker's output could not be judged on any of the {} states: {}",
                            states, unchecked->first_could_not_check->could_not_check);
    out.report = std::move(*report);
    return out;
  }
  bool checker_always_failed = !report->results.empty();
  for (const auto& m : report->results) {
    checker_always_failed = checker_always_failed && m.states > 0 && m.violations == m.states &&
                            m.first_violation && !m.first_violation->recovered &&
                            m.first_violation->mount_error.empty();
  }
  const harness::Verdict* first =
      report->results.empty() || !report->results.front().first_violation
          ? nullptr
          : &*report->results.front().first_violation;
  if (checker_always_failed && first != nullptr &&
      (first->exit_code < 0 || first->exit_code > 128)) {
    // Killed by a signal (directly, or as the shell's 128+N) on every state, also those where every
    // write was kept: a crash of the checker, not a finding about the images.
    out.ran = false;
    out.error_kind = "checker-crash";
    out.error = fmt::format(
        "the checker crashed (exit {}) on every one of the {} crash states: fix the checker; the "
        "first: {}",
        first->exit_code, report->results.front().states, first->Describe());
    out.report = std::move(*report);  // the per-model numbers stay in the JSON
    return out;
  }
  if (checker_always_failed) {
    out.notes.push_back(fmt::format(
        "the checker failed on every crash state ({}): is the checker itself broken? Try it on "
        "the final image.",
        report->results.front().first_violation->Describe()));
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
      vm::RunSpec::ExtraDisk extra{.fs = (*disks)[d], .bytes = o.guest.disk_bytes};
      if (d < o.disk_bytes.size()) extra.bytes = o.disk_bytes[d];
      if (d < o.disk_sectors.size()) extra.sector = o.disk_sectors[d];
      spec.extra_disks.push_back(extra);
    }
  }
  spec.sector = o.sector;
  spec.command = o.workload;
  spec.mount_options = o.mount_options;
  spec.mkfs_options = o.mkfs_options;
  spec.sync_acks = o.sync_acks;
  spec.recording = o.recording;
  spec.output_dir = dir;
  spec.timeout = o.timeout;
  spec.memory_mib = o.guest.memory_mib;
  spec.cpus = o.guest.cpus;
  spec.disk_bytes = o.guest.disk_bytes;
  return spec;
}

RunOutcome RunWorkload(const vm::VmEnvironment& env, const RunOptions& o, vm::GuestPool* pool) {
  RunOutcome out;
  absl::Status valid = o.workload.empty() ? absl::InvalidArgumentError("--workload CMD is required")
                                          : ValidateRunOptions(o);
  if (!valid.ok()) {
    out.error_kind = "usage";
    out.error = std::string(valid.message());
    return out;
  }
  std::string dir = o.keep_dir;
  bool temporary = dir.empty();
  ScratchDir scratch;  // the recording's folder unless --keep names one
  if (temporary) {
    auto made = ScratchDir::Create("powercut-run", "/var/tmp");
    if (!made.ok()) {
      out.error_kind = "vm";
      out.error = "cannot create a temporary folder in /var/tmp";
      return out;
    }
    scratch = std::move(*made);
    dir = scratch.path();
  }
  if (!temporary) out.recording_dir = dir;

  if (!o.flakey.mode.empty()) return RunFlakey(env, o, dir, pool);
  vm::RunSpec spec = RecordingSpec(o, dir);
  auto start = std::chrono::steady_clock::now();
  out.kernel = vm::KernelName(env.kernel);
  auto run = pool != nullptr ? pool->Record(spec) : vm::RunInVm(env, spec);
  out.record_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!run.ok()) {
    bool hung = absl::IsDeadlineExceeded(run.status());
    out.error_kind = hung ? "timeout" : "vm";
    out.error = hung ? fmt::format(
                           "the workload did not finish within {} s (the guest's boot not counted; "
                           "raise --timeout if it is only slow): {}",
                           o.timeout.count(), std::string(run.status().message()))
                     : fmt::format("the VM could not run the workload: {}",
                                   std::string(run.status().message()));
    return out;
  }
  out.workload_exit = run->guest.exit_code;
  out.boot_seconds = run->boot_seconds;
  out.workload_seconds = run->workload_seconds;
  out.record_phases = run->phases;
  if (!run->boot_failure.empty()) {
    out.notes.push_back(
        fmt::format("the first guest booted for this recording failed and a second one came up: {}",
                    run->boot_failure.substr(0, run->boot_failure.find('\n'))));
  }
  if (run->guest.leftover_processes > 0) {
    out.notes.push_back(fmt::format(
        "the workload left {} process(es) running in the guest when it exited; they were killed "
        "before the disk was unmounted (their writes until then are in the recording)",
        run->guest.leftover_processes));
  }
  out.acks = run->host_acks.size();
  out.invalid_ack_lines = run->guest.invalid_ack_lines;
  out.trace_entries = run->trace_entries;
  if (run->guest.exit_code != 0) {
    // The workload's own output; the console log only when the guest could not save it.
    std::string tail = Tail(run->workload_log, 1500);
    if (tail.empty()) tail = Tail(run->console_log, 1500);
    out.error_kind = "workload-exit";
    out.error =
        fmt::format("the workload exited with status {} after {} acks; its last output:\n{}",
                    run->guest.exit_code, out.acks, tail);
    return out;
  }
  if (run->guest.invalid_ack_lines > 0) {
    out.error_kind = "malformed-acks";
    out.error = fmt::format(
        "the workload wrote {} malformed line(s) on POWERCUT_ACK_FD (expected `ack <id>` with ids "
        "of 1-64 characters [A-Za-z0-9_.:-]); {} valid acks",
        run->guest.invalid_ack_lines, out.acks);
    return out;
  }
  if (out.acks == 0) {
    out.error_kind = "no-acks";
    out.error =
        "the workload exited 0 but never acked a commit (write `ack <id>` lines to the fd "
        "in $POWERCUT_ACK_FD): there is nothing to check";
    return out;
  }
  if (out.acks > o.max_acks) {
    out.error_kind = "ack-flood";
    out.error = fmt::format(
        "the workload sent {} acks, more than --max-acks {}: a flood makes "
        "every crash point an ack point; lower the workload's count",
        out.acks, o.max_acks);
    return out;
  }
  if (run->trace.empty()) {
    out.error_kind = "vm";
    out.error = "the VM run produced no trace (use --recorder nbd or dm-log-writes)";
    return out;
  }
  RunOptions check_options = o;
  if (o.judge_promises) {
    absl::StatusOr<std::string> promises = o.judge_promises(*run);
    if (!promises.ok()) {
      out.error_kind = "expected-state";
      out.error = fmt::format("the expected state could not be taken from the recording: {}",
                              StatusMessage(promises.status()));
      return out;
    }
    check_options.fstest_promises = *std::move(promises);
  }
  RunOutcome checked = CheckRecording(run->trace, check_options);
  checked.workload_exit = out.workload_exit;
  checked.invalid_ack_lines = out.invalid_ack_lines;
  checked.record_seconds = out.record_seconds;
  checked.boot_seconds = out.boot_seconds;
  checked.workload_seconds = out.workload_seconds;
  checked.record_phases = out.record_phases;
  checked.kernel = out.kernel;
  checked.notes.insert(checked.notes.begin(), out.notes.begin(), out.notes.end());
  checked.recording_dir = out.recording_dir;
  if (temporary && o.recordings != nullptr && checked.ran && checked.report &&
      !checked.report->passed()) {
    // The temporary folder goes away below: move the recording where the report's rebuild
    // commands can name it.
    KeepRecording(run->trace, o.name.empty() ? "run" : o.name, o.powercut, o.recordings, &checked);
  }
  if (!checked.ran) {
    checked.acks = out.acks;
    checked.trace_entries = out.trace_entries;
  }
  if (checked.ran && o.live_cuts > 0) {
    checked.live_cuts = RunLiveCuts(env, o, o.live_cuts, out.acks);
  }
  return checked;
}

absl::StatusOr<std::vector<harness::CacheModel>> ParseCacheList(const std::string& text,
                                                                const std::string& window) {
  return harness::ParseCacheModels(text, window);
}

absl::StatusOr<harness::PointSelection> ParsePoints(const std::string& text) {
  return harness::ParsePointSelection(text);
}

absl::StatusOr<harness::StateOptions> ParseStates(const std::string& text) {
  harness::StateOptions s;
  if (text == "exhaustive") {
    s.max_exhaustive = 16;
    return s;
  }
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos ||
      text.size() > 9 || std::stoull(text) == 0) {
    return absl::InvalidArgumentError(fmt::format(
        "--states {}: expected exhaustive or a positive number of states per point", text));
  }
  uint64_t n = std::stoull(text);
  s.samples = static_cast<uint32_t>(n);
  s.max_exhaustive = static_cast<uint32_t>(std::floor(std::log2(static_cast<double>(n))));
  s.max_all_but_one = static_cast<uint32_t>(std::min<uint64_t>(n, 64));
  s.max_torn_writes = static_cast<uint32_t>(std::min<uint64_t>(n, 4));
  s.torn_samples = n >= 8 ? 2 : 1;
  return s;
}

absl::StatusOr<vm::Recording> ParseRecorder(const std::string& text) {
  if (text == "nbd") return vm::Recording::kNbd;
  if (text == "dm-log-writes") return vm::Recording::kLogWrites;
  return absl::InvalidArgumentError(
      fmt::format("--recorder {}: expected nbd or dm-log-writes", text));
}

std::string RunSummary(const RunOutcome& o) {
  std::string s;
  if (!o.ran) {
    return fmt::format("COULD NOT RUN ({}): {}\n", o.error_kind, o.error);
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
  if (!o.kernel.empty()) s += fmt::format("guest kernel: {}\n", o.kernel);
  if (!o.flakey) s += harness::ReportSummaryTable(*o.report);
  if (o.live_cuts) s += LiveCutsText(*o.live_cuts);
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
