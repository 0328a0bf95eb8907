#include "harness/product/faults/live_cuts.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <optional>

#include "base/image_io.h"
#include "base/scratch_dir.h"
#include "base/status_macros.h"
#include "fmt/format.h"
#include "harness/check/disk_set_check.h"
#include "harness/check/engine.h"
#include "harness/check/image_check.h"
#include "harness/check/oracle.h"
#include "harness/check/state_judge.h"
#include "harness/fs/file_system.h"
#include "harness/fs/fsck.h"
#include "harness/product/run/run.h"
#include "harness/state/cache_model.h"
#include "harness/trace/manifest.h"
#include "harness/trace/trace_reader.h"
#include "harness/vm/warm/cut.h"

namespace powercut::product {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Recovery and checker on a cut image, by the same method as the replay's states: in a guest of
// `o.check_pool` (`--check-in guest`: the state server's overlay keeps the image unmodified), or
// on this host on a scratch copy (the boot path writes to it).
absl::StatusOr<harness::ImageCheckResult> CheckCutImage(const RunOptions& o,
                                                        const std::string& trace,
                                                        const std::string& image,
                                                        const std::string& work) {
  const harness::FsKind fs_kind = o.fs.at(0);  // validated: never empty
  if (o.disks > 1) {  // a set: every disk through its own boot path, mounted at once
    ASSIGN_OR_RETURN(std::vector<harness::FsKind> disk_fs, DiskFileSystems(o.fs, o.disks));
    ASSIGN_OR_RETURN(harness::DiskLayout layout, harness::LayoutBeside(trace));
    return harness::CheckDiskSetImageFile(image, {.layout = layout,
                                                  .fs = disk_fs,
                                                  .checker = o.checker,
                                                  .timeout_seconds = o.checker_timeout_s,
                                                  .work_prefix = work + "/set"});
  }
  if (o.check_pool != nullptr && !harness::FileSystemOf(fs_kind).raw()) {
    ASSIGN_OR_RETURN(uint64_t bytes, FileSize(image));
    ASSIGN_OR_RETURN(
        std::unique_ptr<harness::StateJudge> judge,
        JudgesForTrace(o.check_pool, fs_kind, trace, o.checker, o.checker_timeout_s)(0));
    const int fd = open(image.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      return absl::InternalError(
          fmt::format("cannot open the cut image {}: {}", image, std::strerror(errno)));
    }
    absl::StatusOr<harness::ImageCheckResult> r = judge->Check(fd, bytes);
    judge.reset();  // the guest goes back to the pool before the image's fd closes
    close(fd);
    return r;
  }
  const std::string copy = work + "/check.img";
  harness::ImageCheckOptions ic;
  ic.fs = fs_kind;
  ic.checker = o.checker;
  ic.timeout_seconds = o.checker_timeout_s;
  ic.mountpoint = work + "/mnt";
  std::error_code ec;
  fs::create_directories(ic.mountpoint, ec);
  if (o.fsck && !harness::FileSystemOf(ic.fs).raw()) ic.before_mount = harness::FsckHook(ic.fs);
  absl::Status copied = CopySparse(image, copy);
  auto checked = copied.ok() ? harness::CheckImageFile(copy, ic)
                             : absl::StatusOr<harness::ImageCheckResult>(copied);
  fs::remove(copy, ec);
  return checked;
}

// Records the workload with a cut armed after a seeded ack; nullopt when the cut could not run
// (cut.error says why).
std::optional<vm::RunResult> RecordCut(const vm::VmEnvironment& env, const RunOptions& o,
                                       uint64_t seed, uint64_t recorded_acks,
                                       const std::string& dir, LiveCut& cut) {
  vm::RunSpec spec = RecordingSpec(o, dir);
  spec.recording = vm::Recording::kNbd;  // the cut lands on the server's write completions
  spec.cut.when = vm::CutSpec::When::kRandom;
  spec.cut.seed = seed;
  spec.cut.random_max_acks = std::max<uint64_t>(1, recorded_acks);
  spec.cut.model = {.mode = harness::CacheMode::kOn, .atomic_unit = o.atomic_unit};
  const vm::CutPlan plan = vm::PlanCut(spec.cut, true);
  cut.cut_after_ack = plan.trigger_ack;
  cut.cut_after_write = plan.nbd_writes;
  const Clock::time_point t0 = Clock::now();
  auto run = vm::RunInVm(env, spec);
  cut.record_seconds = Since(t0);
  if (!run.ok()) {
    cut.error =
        absl::IsDeadlineExceeded(run.status())
            ? fmt::format("the guest did not reach the cut within {} s and was killed: {}",
                          o.timeout.count(), std::string(run.status().message()))
            : fmt::format("the VM could not run the cut: {}", std::string(run.status().message()));
    return std::nullopt;
  }
  cut.cut = run->power_cut;
  if (!cut.cut && run->guest.exit_code != 0) {
    cut.error = fmt::format("the workload exited with status {} before its cut point",
                            run->guest.exit_code);
    return std::nullopt;
  }
  return *std::move(run);
}

// What the drives did with their volatile writes, summed over the disks of a set (and per disk in
// cut.disks); returns disk 1's report.
vm::PowerCutReport CountFates(const vm::RunResult& run, const RunOptions& o, LiveCut& cut) {
  vm::PowerCutReport report = run.cut_report;
  if (!cut.cut) report.atomic_unit = o.atomic_unit;  // ran to the end: nothing was drawn
  cut.kept = report.kept;
  cut.dropped = report.dropped;
  cut.torn = report.torn;
  if (o.disks > 1) {
    cut.disks.push_back(
        {.disk = 1, .kept = report.kept, .dropped = report.dropped, .torn = report.torn});
  }
  uint32_t disk = 1;
  for (const vm::PowerCutReport& r : run.extra_cut_reports) {  // disks 2..N of a set
    cut.kept += r.kept;
    cut.dropped += r.dropped;
    cut.torn += r.torn;
    cut.disks.push_back({.disk = ++disk, .kept = r.kept, .dropped = r.dropped, .torn = r.torn});
  }
  return report;
}

// The reality check's verdict on each disk of a set (a cluster's node), beside its draws.
void TakeDiskMatches(const ModelMatch& match, LiveCut& cut) {
  if (cut.disks.empty()) return;
  for (size_t d = 0; d < match.disks.size(); ++d) {
    if (d >= cut.disks.size()) cut.disks.push_back({.disk = static_cast<uint32_t>(d + 1)});
    cut.disks[d].in_model = match.disks[d].in_model;
    cut.disks[d].volatile_writes = match.disks[d].volatile_writes;
    cut.disks[d].evidence = match.disks[d].evidence;
  }
}

// The oracle's verdict on the checked cut image, against the acks before the cut.
void JudgeCut(const harness::TraceIndex& index, const RunOptions& o, const ModelMatch& match,
              const harness::ImageCheckResult& checked, LiveCut& cut) {
  harness::Oracle oracle(index, o.ordered, o.fs_failures_are_violations);
  harness::Verdict v;
  v.state_id = cut.state_id;
  v.point = match.point;
  v.cache = "on";
  oracle.Judge(match.point, oracle.Compact(checked.checker, checked.fs), &v);
  if (!v.could_not_check.empty()) {
    cut.error = fmt::format("the checker's output could not be judged: {}", v.could_not_check);
    return;
  }
  cut.violation = v.violation();
  cut.fs_unrecoverable = v.fs_unrecoverable;
  cut.lost = v.lost;
  if (!v.unavailable.empty()) {  // a cluster that did not come back: its own outcome
    cut.unavailable = v.unavailable;
    cut.unavailable_stderr = checked.checker.stderr_tail;
  }
  if (cut.violation || cut.fs_unrecoverable || !cut.unavailable.empty()) {
    cut.summary = v.Describe();
  }
}

// One cut: record with the cut armed, match the image to the model, check it.
LiveCut OneCut(const vm::VmEnvironment& env, const RunOptions& o, uint64_t seed,
               uint64_t recorded_acks) {
  LiveCut cut;
  cut.seed = seed;
  auto scratch = ScratchDir::Create("powercut-livecut", "/var/tmp");
  if (!scratch.ok()) {
    cut.error = std::string(scratch.status().message());
    return cut;
  }
  std::optional<vm::RunResult> run =
      RecordCut(env, o, seed, recorded_acks, scratch->File("rec"), cut);
  if (!run) return cut;
  const Clock::time_point t1 = Clock::now();
  const vm::PowerCutReport report = CountFates(*run, o, cut);
  auto match = MatchCutToModel(run->trace, run->final_image, report, o.states, o.seed,
                               run->extra_cut_reports, o.cluster.nodes > 0 ? "node" : "disk");
  if (!match.ok()) {
    cut.error =
        fmt::format("the reality check could not run: {}", std::string(match.status().message()));
    cut.check_seconds = Since(t1);
    return cut;
  }
  cut.in_model = match->in_model;
  cut.sampled = match->sampled;
  cut.state_id = match->state_id;
  cut.evidence = match->evidence;
  cut.volatile_writes = match->volatile_writes;
  TakeDiskMatches(*match, cut);
  const std::string work = scratch->path();
  if (!cut.in_model) cut.kept_trace = scratch->Release() + "/rec/trace.log";  // the evidence

  // The check, as for a replayed state: a scratch copy through the boot path, then the oracle
  // against the acks the cut's own trace holds before the cut.
  auto file = harness::TraceFile::Open(run->trace);
  if (!file.ok()) {
    cut.error = std::string(file.status().message());
    return cut;
  }
  harness::TraceIndex index((*file)->trace());
  cut.acks_before_cut = index.AcksBefore(match->point);
  auto checked = CheckCutImage(o, run->trace, run->final_image, work);
  cut.check_seconds = Since(t1);
  if (checked.ok()) {
    cut.check_method = checked->method;
    cut.check_kernel = checked->kernel;
  }
  if (!checked.ok()) {
    cut.error =
        fmt::format("checking the cut image failed: {}", std::string(checked.status().message()));
    return cut;
  }
  JudgeCut(index, o, *match, *checked, cut);
  return cut;
}

}  // namespace

LiveCutsResult RunLiveCuts(const vm::VmEnvironment& env, const RunOptions& o, uint64_t count,
                           uint64_t recorded_acks) {
  LiveCutsResult result;
  result.requested = count;
  result.nodes = o.cluster.nodes > 0;
  for (uint64_t i = 1; i <= count; ++i) {
    result.cuts.push_back(OneCut(env, o, o.seed + i, recorded_acks));
  }
  return result;
}

}  // namespace powercut::product
