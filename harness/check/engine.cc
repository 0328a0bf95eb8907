#include "harness/check/engine.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <thread>

#include "absl/strings/cord.h"
#include "base/duration_flag.h"
#include "base/image_io.h"
#include "base/status_macros.h"
#include "fmt/format.h"
#include "fmt/ranges.h"
#include "harness/check/model_run.h"
#include "harness/check/worker_pool.h"
#include "harness/state/state_plan.h"
#include "harness/trace/trace_reader.h"

namespace powercut::harness {
namespace {

constexpr char kBrokenChecker[] = "powercut/broken-checker";

// Since Linux 6.7 ("btrfs: support cloned-device mount capability") btrfs mounts a second
// single-device file system with an fsid that is already mounted under a temporary in-memory
// fsid; the kernel advertises it as /sys/fs/btrfs/features/temp_fsid. Without it a second copy
// of the same image cannot be mounted while the first one is.
// Whether this kernel mounts two copies of `fs` at once (FileSystem::clone_mounts_need).
bool MountsClones(const FileSystem& fs) {
  std::error_code ec;
  return *fs.clone_mounts_need == '\0' || std::filesystem::exists(fs.clone_mounts_need, ec);
}

// A check's inputs, read and validated: the options with defaults resolved, the trace, its
// manifest and base image, the torn-write unit and the number of workers.
struct CheckSetup {
  CheckOptions options;
  std::string base;
  uint64_t base_bytes = 0;
  std::optional<TraceManifest> manifest;
  std::unique_ptr<TraceFile> trace_file;
  OrderSemantics order = OrderSemantics::kCompletion;
  uint32_t physical = 0;  // the manifest's physical sector, 0 = unknown
  uint32_t unit = 0;      // the torn-write unit
  int workers = 1;
  std::vector<std::string> notes;  // for every model
};

absl::Status ValidateOptions(const CheckOptions& o) {
  if (o.checker.empty()) return absl::InvalidArgumentError("check: --checker is required");
  if (o.without_mount && FileSystemOf(o.fs).read_without_mount_argv.empty()) {
    std::string readable;
    for (const FileSystem& fs : AllFileSystems()) {
      if (fs.read_without_mount_argv.empty()) continue;
      readable += readable.empty() ? fs.name : fmt::format(", {}", fs.name);
    }
    return absl::InvalidArgumentError(fmt::format(
        "check: reading without a mount works for {} only, not {}", readable, FsName(o.fs)));
  }
  if (o.budget_seconds < 0) {
    return absl::InvalidArgumentError(
        fmt::format("check: budget {} s: expected a positive duration", o.budget_seconds));
  }
  return absl::OkStatus();
}

// The drive writes its physical sector atomically: that is the default torn-write unit.
absl::StatusOr<uint32_t> AtomicUnit(const CheckOptions& o, uint32_t physical,
                                    uint32_t sector_size) {
  uint32_t unit = o.atomic_unit ? o.atomic_unit : physical != 0 ? physical : sector_size;
  if (unit != 512 && unit != 4096) {
    return absl::InvalidArgumentError(
        fmt::format("check: atomic unit {}: expected 512 or 4096", unit));
  }
  if (unit < sector_size) {
    return absl::InvalidArgumentError(
        fmt::format("check: atomic unit {} is smaller than the disk's {}-byte logical sector", unit,
                    sector_size));
  }
  return unit;
}

// A set of several disks: each disk's file system (given, else the manifest's), one per disk,
// and its sectors as recorded.
absl::Status DiskSetFileSystems(const TraceManifest& manifest, CheckOptions* o) {
  const uint32_t disks = o->disks.count();
  if (o->disk_fs.empty()) {
    for (const DiskManifest& d : manifest.disks) {
      ASSIGN_OR_RETURN(FsKind fs, ParseManifestFs(d.fs, "the manifest's disks[].fs"));
      o->disk_fs.push_back(fs);
    }
  }
  if (o->disk_fs.size() != disks) {
    return absl::InvalidArgumentError(
        fmt::format("check: {} file systems for a trace of {} disks: give one per disk",
                    o->disk_fs.size(), disks));
  }
  if (o->without_mount) {
    return absl::InvalidArgumentError(
        "check: --without-mount reads one ext4 disk; a set of several disks is loop-mounted");
  }
  o->disk_sectors.clear();
  for (const DiskManifest& d : manifest.disks) {
    o->disk_sectors.push_back(SectorFormatOf(d.logical_sector, d.physical_sector));
  }
  o->disk_sectors.resize(disks, kDefaultSectorFormat);
  o->fs = o->disk_fs[0];
  return absl::OkStatus();
}

absl::StatusOr<CheckSetup> Setup(const CheckOptions& options) {
  RETURN_IF_ERROR(ValidateOptions(options));
  CheckSetup s;
  s.options = options;
  CheckOptions& o = s.options;
  ASSIGN_OR_RETURN(s.base, ResolveBase(o.trace_path, o.base_image, &s.manifest));
  ASSIGN_OR_RETURN(s.base_bytes, FileSize(s.base));
  TraceReadOptions read_options;
  read_options.device_bytes = s.base_bytes;
  if (s.manifest) {
    ASSIGN_OR_RETURN(o.disks, LayoutOf(*s.manifest));
  }
  read_options.disks = o.disks;
  if (o.disks.several()) RETURN_IF_ERROR(DiskSetFileSystems(*s.manifest, &o));
  ASSIGN_OR_RETURN(s.trace_file, TraceFile::Open(o.trace_path, read_options));
  const Trace& trace = s.trace_file->trace();
  if (s.manifest) {
    RETURN_IF_ERROR(
        ValidateManifest(*s.manifest, ManifestPathFor(o.trace_path), trace.sector_size, s.base));
  }
  s.order = o.order ? *o.order : (s.manifest ? s.manifest->order : OrderSemantics::kCompletion);
  s.physical = s.manifest ? s.manifest->physical_sector : 0;
  ASSIGN_OR_RETURN(s.unit, AtomicUnit(o, s.physical, trace.sector_size));
  if (o.models.empty()) {
    for (CacheMode mode : {CacheMode::kOff, CacheMode::kOn, CacheMode::kLying}) {
      o.models.push_back(CacheModel{.mode = mode});
    }
  }
  for (CacheModel& model : o.models) model.atomic_unit = s.unit;
  // Several disks of their own geometries (`--sector 512e,512n`): each disk tears at its own
  // physical sector unless --atomic names one unit for all.
  if (o.atomic_unit == 0 && s.manifest && s.manifest->disks.size() > 1) {
    std::vector<uint32_t> units;
    for (const DiskManifest& d : s.manifest->disks) {
      units.push_back(d.physical_sector != 0 ? d.physical_sector : s.unit);
    }
    if (std::any_of(units.begin(), units.end(), [&](uint32_t u) { return u != units[0]; })) {
      for (uint32_t u : units) {
        if (u != 512 && u != 4096) {
          return absl::InvalidArgumentError(
              fmt::format("check: a disk's physical sector {}: expected 512 or 4096", u));
        }
      }
      for (CacheModel& model : o.models) model.disk_units = units;
      s.notes.push_back(fmt::format("torn writes at each disk's physical sector: {} bytes",
                                    o.models.front().UnitCode()));
    }
  }
  s.workers = o.workers > 0 ? o.workers
                            : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  if (const FileSystem& fs = FileSystemOf(o.fs); s.workers > 1 && !MountsClones(fs)) {
    s.workers = 1;  // two mounted copies of one btrfs share an fsid, which kernels before 6.7
                    // refuse
    s.notes.emplace_back(
        fmt::format("{}: one worker (copies of one file system share its id, and this kernel has "
                    "no {} to mount clones side by side)",
                    fs.name, fs.clone_mounts_need));
  }
  if (o.workload.empty()) o.workload = std::filesystem::path(o.trace_path).filename().string();
  return s;
}

// The report's description of the check; RunCheck appends the results.
CheckReport ReportHeader(const CheckSetup& s, const TraceIndex& index) {
  const CheckOptions& o = s.options;
  const Trace& trace = s.trace_file->trace();
  CheckReport report;
  report.trace_path = o.trace_path;
  report.trace_hash = trace.hash.Hex();
  report.base_image = s.base;
  report.checker = o.checker;
  report.fs = FsName(o.fs);
  report.order = OrderSemanticsName(s.order);
  report.trace_entries = trace.entries.size();
  report.trace_acks = index.acks().size();
  report.sector_size = trace.sector_size;
  report.physical_sector = s.physical;
  if (s.manifest) {
    report.mkfs_command = s.manifest->mkfs_command;
    report.fs_block_size = s.manifest->fs_block_size;
  }
  report.atomic_unit = s.unit;
  report.seed = o.seed;
  report.ordered = o.ordered;
  report.latest_ack_only = o.latest_ack_only;
  report.fs_failures_are_violations = o.fs_failures_are_violations;
  report.workers = s.workers;
  report.exhaustive = o.exhaustive;
  report.budget_seconds = o.budget_seconds;
  report.states = o.states;
  report.trace_notes = trace.notes;
  report.points = PointSelectionName(o.points);
  report.repro_args = o.repro_args;
  if (o.disks.several()) {
    report.set_member = o.set_member;
    std::vector<std::string> names;
    for (uint32_t d = 0; d < o.disks.count(); ++d) {
      DiskSummary disk{.fs = FsName(o.disk_fs[d]), .bytes = o.disks.extents()[d].bytes};
      names.push_back(disk.fs);
      report.disks.push_back(disk);
    }
    for (const TraceEntry& e : trace.entries) {
      if (e.is_mark()) continue;
      DiskSummary& disk = report.disks[e.disk];
      disk.writes += e.changes_content();
      disk.flushes += e.is_flush();
      disk.fua += e.is_fua();
    }
    report.fs = fmt::format("{}", fmt::join(names, ","));
  }
  return report;
}

// One model's crash points and states, in check order, with its result's description filled.
struct ModelPlan {
  ModelResult result;
  std::unique_ptr<StatePlan> states;
};

ModelPlan PlanModel(const CheckSetup& s, const TraceIndex& index, const CacheModel& model) {
  const CheckOptions& o = s.options;
  ModelPlan plan;
  plan.result.workload = o.workload;
  plan.result.model = model;
  plan.result.notes = s.notes;
  const bool flush_only = s.order == OrderSemantics::kFlushEpoch && model.mode == CacheMode::kOff;
  ExactPointCounts exact;
  std::vector<uint64_t> points = SelectPoints(index, o.points, o.seed, flush_only, &exact);
  if (flush_only) {
    plan.result.notes.push_back(fmt::format(
        "flush-epoch trace: cache off is evaluated only where the log places a crash exactly: "
        "{} points right after a FLUSH and {} right after a FUA write with no plain write "
        "logged between it and the next FLUSH; skipped {} FUA points (a plain write logged "
        "after them may have completed before them) and {} other points (between flushes the "
        "log does not record completion order, so a loss there could not be proven)",
        exact.after_flush, exact.after_fua, exact.fua_skipped, exact.other_skipped));
  }
  plan.result.points = points.size();
  plan.states = std::make_unique<StatePlan>(index, model, o.states, o.seed, points);
  plan.result.states_planned = plan.states->size();
  return plan;
}

}  // namespace

const char* StopReasonName(StopReason reason) {
  switch (reason) {
    case StopReason::kNone:
      return "";
    case StopReason::kFirstViolation:
      return "first_violation";
    case StopReason::kBudget:
      return "budget";
  }
  return "";
}

StopReason StopReasonFromName(std::string_view name) {
  if (name == "first_violation") return StopReason::kFirstViolation;
  if (name == "budget") return StopReason::kBudget;
  return StopReason::kNone;
}

absl::StatusOr<double> ParseBudget(std::string_view text) {
  ASSIGN_OR_RETURN(absl::Duration budget,
                   ParseDurationFlag("--budget", text, {.bare_seconds = true}));
  return absl::ToDoubleSeconds(budget);
}

void MarkBrokenChecker(absl::Status& status) { status.SetPayload(kBrokenChecker, absl::Cord("1")); }

bool IsBrokenChecker(const absl::Status& status) {
  return status.GetPayload(kBrokenChecker).has_value();
}

std::string RebuildCommand(const std::string& powercut, const std::string& trace,
                           const std::string& base, const std::string& state_id) {
  return fmt::format("{} state materialize --trace {} --base {} --state {} --out crash.img",
                     powercut, trace, base, state_id);
}

std::string ReproCommand(const std::string& powercut, const std::string& trace,
                         const std::string& state_id, const std::string& repro_args) {
  return fmt::format("{} repro {} --trace {}{} --recheck", powercut, state_id, trace, repro_args);
}

absl::StatusOr<CheckReport> RunCheck(const CheckOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(CheckSetup setup, Setup(options));
  const CheckOptions& o = setup.options;
  const Trace& trace = setup.trace_file->trace();
  TraceIndex index(trace);
  std::vector<ModelPlan> plans;
  uint64_t total = 0;
  for (const CacheModel& model : o.models) {
    plans.push_back(PlanModel(setup, index, model));
    total += plans.back().result.states_planned;
  }
  const bool judged = o.judges && (o.disks.several() || !FileSystemOf(o.fs).raw());
  if (judged && o.states_per_judge > 0 && o.workers == 0) {
    setup.workers = static_cast<int>(std::clamp<uint64_t>(
        (total + o.states_per_judge - 1) / o.states_per_judge, 1, setup.workers));
  }
  ASSIGN_OR_RETURN(
      auto pool,
      WorkerPool::Create(o.work_dir, setup.workers, o.fs, setup.base, setup.trace_file.get(),
                         std::min<uint32_t>(trace.sector_size, setup.unit), o.disks.several()));
  if (judged) {
    for (size_t i = 0; i < pool->workers().size(); ++i) {
      ASSIGN_OR_RETURN(pool->workers()[i].judge, o.judges(static_cast<int>(i)));
    }
  }
  Oracle oracle(index, o.ordered, o.fs_failures_are_violations, o.latest_ack_only);
  CheckReport report = ReportHeader(setup, index);
  CheckShared shared(o, total);
  const auto deadline =
      o.budget_seconds > 0
          ? start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                        std::chrono::duration<double>(o.budget_seconds))
          : std::chrono::steady_clock::time_point::max();
  absl::flat_hash_set<Hash128> images;
  CheckContext context{o, setup.base, trace.ShortHash(), index, oracle, deadline, shared, &images};
  for (ModelPlan& plan : plans) {
    ModelRun run(context, *plan.states, &plan.result);
    RETURN_IF_ERROR(run.Run(pool->workers()));
    report.results.push_back(std::move(plan.result));
  }
  report.check_method = shared.method();
  report.check_kernel = shared.kernel();
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace powercut::harness
