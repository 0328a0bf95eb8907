#include "harness/check/engine.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/cord.h"
#include "absl/synchronization/mutex.h"
#include "base/image_io.h"
#include "base/scratch_dir.h"
#include "base/status_macros.h"
#include "base/tsan_mutex.h"
#include "fmt/format.h"
#include "harness/check/checker.h"
#include "harness/check/image_check.h"
#include "harness/state/working_image.h"
#include "harness/trace/trace_reader.h"

namespace powercut::harness {
namespace {

struct HashKey {
  uint64_t high, low;
  bool operator==(const HashKey&) const = default;
  template <typename H>
  friend H AbslHashValue(H h, const HashKey& k) {
    return H::combine(std::move(h), k.high, k.low);
  }
};

// Hands out states in increasing point order, a few points at a time.
class StateSource {
 public:
  StateSource(const TraceIndex& index, const CacheModel& model, const StateOptions& options,
              uint64_t seed, std::vector<uint64_t> points)
      : index_(index), model_(model), options_(options), seed_(seed), points_(std::move(points)) {}

  struct Item {
    uint64_t seq;
    CrashState state;
  };
  // Empty when done.
  std::vector<Item> Next() {
    powercut::MutexLock lock(&mu_);
    std::vector<Item> batch;
    std::vector<CrashState> states;
    while (next_point_ < points_.size() && states.size() < 16) {
      PointView view = index_.View(points_[next_point_++], model_);
      StatesAtPoint(index_, view, model_, options_, seed_, &states);
    }
    for (const CrashState& s : states) batch.push_back({seq_++, s});
    return batch;
  }
  uint64_t generated() const {
    powercut::MutexLock lock(&mu_);
    return seq_;
  }

 private:
  const TraceIndex& index_;
  const CacheModel model_;
  const StateOptions options_;
  const uint64_t seed_;
  const std::vector<uint64_t> points_;
  mutable absl::Mutex mu_;
  size_t next_point_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t seq_ ABSL_GUARDED_BY(mu_) = 0;
};

struct Worker {
  std::unique_ptr<WorkingImage> image;
  std::string scratch;  // fs only
  int scratch_fd = -1;
  std::string mountpoint;
};

struct Shared {
  absl::Mutex mu;
  absl::flat_hash_map<HashKey, CompactOutput> outputs ABSL_GUARDED_BY(mu);
  ModelResult* result ABSL_GUARDED_BY(mu) = nullptr;
  std::vector<std::pair<uint64_t, Verdict>> violations ABSL_GUARDED_BY(mu);  // by seq, bounded
  absl::Status error ABSL_GUARDED_BY(mu);
  uint64_t states_done ABSL_GUARDED_BY(mu) = 0;   // for CheckOptions::on_state_checked
  uint64_t states_total ABSL_GUARDED_BY(mu) = 0;  // likewise
  std::string method ABSL_GUARDED_BY(mu);         // how file-system states were read
  std::optional<std::pair<uint64_t, Verdict>> worst ABSL_GUARDED_BY(mu);  // by seq
  uint64_t broken_runs ABSL_GUARDED_BY(mu) = 0;  // checker runs that were not the protocol
};

constexpr char kBrokenChecker[] = "powercut/broken-checker";

// Since Linux 6.7 ("btrfs: support cloned-device mount capability") btrfs mounts a second
// single-device file system with an fsid that is already mounted under a temporary in-memory
// fsid; the kernel advertises it as /sys/fs/btrfs/features/temp_fsid. Without it a second copy
// of the same image cannot be mounted while the first one is.
bool BtrfsMountsClones() {
  std::error_code ec;
  return std::filesystem::exists("/sys/fs/btrfs/features/temp_fsid", ec);
}

CheckerOutput SetupFailure(std::string why) {
  CheckerOutput out;
  out.exit_code = -1;
  out.setup_error = std::move(why);
  return out;
}

absl::StatusOr<ImageCheckResult> CheckImage(const CheckOptions& o, Worker& w) {
  ImageCheckOptions ic{.fs = o.fs,
                       .checker = o.checker,
                       .timeout_seconds = o.checker_timeout_s,
                       .mountpoint = w.mountpoint,
                       .without_mount = o.without_mount,
                       .before_mount = o.before_mount};
  if (o.fs == FsKind::kRaw) {
    auto out = CheckImageFile(w.image->path(), ic);
    // The raw protocol is read-only; rebuild so that later states stay exact.
    if (absl::IsFailedPrecondition(out.status())) RETURN_IF_ERROR(w.image->Reset());
    return out;
  }
  RETURN_IF_ERROR(
      CopyOnto(w.image->fd(), w.scratch_fd, w.image->size(), w.image->path(), w.scratch));
  return CheckImageFile(w.scratch, ic);
}

void RunWorker(const CheckOptions& o, const std::string& base, const std::string& trace_hash8,
               const TraceIndex& index, const Oracle& oracle, StateSource& source, Worker& w,
               Shared& shared) {
  while (true) {
    std::vector<StateSource::Item> batch = source.Next();
    if (batch.empty()) return;
    for (auto& item : batch) {
      {
        powercut::MutexLock lock(&shared.mu);
        if (!shared.error.ok()) return;
      }
      const CrashState& state = item.state;
      PointView view = index.View(state.point, state.model);
      absl::Status s = w.image->Materialize(state, view);
      if (!s.ok()) {
        powercut::MutexLock lock(&shared.mu);
        shared.error = s;
        return;
      }
      Hash128 h = w.image->content_hash();
      HashKey key{h.high, h.low};
      std::optional<CompactOutput> cached;
      {
        powercut::MutexLock lock(&shared.mu);
        auto it = shared.outputs.find(key);
        if (it != shared.outputs.end()) cached = it->second;
      }
      bool dedup = cached.has_value();
      Verdict v;
      v.state_id = EncodeStateId(trace_hash8, state);
      v.cache = state.model.Code();
      if (!dedup) {
        auto out = CheckImage(o, w);
        if (!out.ok()) {
          if (absl::IsFailedPrecondition(out.status())) {
            cached = oracle.Compact(SetupFailure(std::string(out.status().message())));
          } else {
            powercut::MutexLock lock(&shared.mu);
            shared.error = out.status();
            return;
          }
        } else {
          cached = oracle.Compact(out->checker, out->fs);
        }
        powercut::MutexLock lock(&shared.mu);
        shared.outputs.try_emplace(key, *cached);
        if (out.ok() && o.fs != FsKind::kRaw) shared.method = out->method;
      }
      oracle.Judge(state.point, *cached, &v);
      v.dropped = w.image->dropped();
      if (state.torn_entry) {
        v.torn_entry = state.torn_entry;
        v.torn_units = state.torn_units.Encode();
        v.dropped.erase(std::remove(v.dropped.begin(), v.dropped.end(), *state.torn_entry),
                        v.dropped.end());
      }
      v.rebuild = RebuildCommand(o.powercut, o.trace_path, base, v.state_id);
      powercut::MutexLock lock(&shared.mu);
      ModelResult& r = *shared.result;
      ++r.states;
      if (o.on_state_checked) o.on_state_checked(++shared.states_done, shared.states_total);
      if (dedup) {
        ++r.deduplicated;
      } else {
        ++r.checked;
      }
      r.lost_acks_max = std::max<uint64_t>(r.lost_acks_max, v.lost.size());
      ++r.lost_acks_distribution[v.lost.size()];
      if (!v.torn_unacked.empty()) ++r.torn_unacked;
      if (v.fs_repaired) {
        ++r.fs_repaired;
        if (!r.first_fs_repaired) r.first_fs_repaired = v;
      }
      if (v.fs_unrecoverable) {
        ++r.fs_unrecoverable;
        if (!r.first_fs_unrecoverable) r.first_fs_unrecoverable = v;
      }
      if (!v.could_not_check.empty()) {
        ++r.could_not_check;
        if (!r.first_could_not_check) r.first_could_not_check = v;
        if (!dedup && shared.error.ok() &&
            (cached->cannot_start || ++shared.broken_runs >= o.max_could_not_check)) {
          shared.error = absl::FailedPreconditionError(
              cached->cannot_start
                  ? fmt::format("{}: fix --checker '{}'", v.could_not_check, o.checker)
                  : fmt::format("the checker's output is not the protocol on {} crash images, "
                                "the first: {}",
                                shared.broken_runs, r.first_could_not_check->could_not_check));
          shared.error.SetPayload(kBrokenChecker, absl::Cord("1"));
          return;
        }
      }
      if (v.violation()) {
        if (!shared.worst || v.lost.size() > shared.worst->second.lost.size() ||
            (v.lost.size() == shared.worst->second.lost.size() && item.seq < shared.worst->first)) {
          shared.worst.emplace(item.seq, v);
        }
        ++r.violations;
        shared.violations.emplace_back(item.seq, std::move(v));
        std::sort(shared.violations.begin(), shared.violations.end(),
                  [](const auto& a, const auto& b) { return a.first < b.first; });
        if (shared.violations.size() > std::max<size_t>(o.max_examples, 1)) {
          shared.violations.resize(std::max<size_t>(o.max_examples, 1));
        }
      }
    }
  }
}

}  // namespace

bool IsBrokenChecker(const absl::Status& status) {
  return status.GetPayload(kBrokenChecker).has_value();
}

std::string RebuildCommand(const std::string& powercut, const std::string& trace,
                           const std::string& base, const std::string& state_id) {
  return fmt::format("{} state materialize --trace {} --base {} --state {} --out crash.img",
                     powercut, trace, base, state_id);
}

absl::StatusOr<std::string> ResolveBase(const std::string& trace_path, const std::string& base,
                                        std::optional<TraceManifest>* manifest) {
  std::string manifest_path = ManifestPathFor(trace_path);
  std::error_code ec;
  if (std::filesystem::exists(manifest_path, ec)) {
    ASSIGN_OR_RETURN(TraceManifest m, ReadManifest(manifest_path));
    *manifest = m;
    return base.empty() ? ResolveBaseImage(manifest_path, m) : base;
  }
  if (base.empty()) {
    return absl::InvalidArgumentError(fmt::format(
        "trace {}: no manifest {} beside it, so the base image is unknown: pass --base IMG",
        trace_path, manifest_path));
  }
  return base;
}

absl::StatusOr<CheckReport> RunCheck(const CheckOptions& options) {
  auto start = std::chrono::steady_clock::now();
  CheckOptions o = options;
  if (o.checker.empty()) return absl::InvalidArgumentError("check: --checker is required");
  if (o.without_mount && o.fs != FsKind::kExt4) {
    return absl::InvalidArgumentError(fmt::format(
        "check: reading without a mount (debugfs) works for ext4 only, not {}", FsName(o.fs)));
  }
  std::optional<TraceManifest> manifest;
  ASSIGN_OR_RETURN(std::string base, ResolveBase(o.trace_path, o.base_image, &manifest));
  ASSIGN_OR_RETURN(uint64_t base_bytes, FileSize(base));
  TraceReadOptions read_options;
  read_options.device_bytes = base_bytes;
  ASSIGN_OR_RETURN(auto trace_file, TraceFile::Open(o.trace_path, read_options));
  const Trace& trace = trace_file->trace();
  if (manifest) {
    RETURN_IF_ERROR(
        ValidateManifest(*manifest, ManifestPathFor(o.trace_path), trace.sector_size, base));
  }
  OrderSemantics order =
      o.order ? *o.order : (manifest ? manifest->order : OrderSemantics::kCompletion);
  // The drive writes its physical sector atomically: that is the default torn-write unit.
  const uint32_t physical = manifest && manifest->physical_sector ? manifest->physical_sector : 0;
  uint32_t unit = o.atomic_unit ? o.atomic_unit : physical != 0 ? physical : trace.sector_size;
  if (unit != 512 && unit != 4096) {
    return absl::InvalidArgumentError(
        fmt::format("check: atomic unit {}: expected 512 or 4096", unit));
  }
  if (unit < trace.sector_size) {
    return absl::InvalidArgumentError(
        fmt::format("check: atomic unit {} is smaller than the disk's {}-byte logical sector", unit,
                    trace.sector_size));
  }
  if (o.models.empty()) {
    for (const char* name : {"off", "on", "lying"}) o.models.push_back(*ParseCacheModel(name));
  }
  int workers = o.workers > 0 ? o.workers
                              : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  std::vector<std::string> notes;
  if (FileSystemOf(o.fs).clones_need_temp_fsid && workers > 1 && !BtrfsMountsClones()) {
    workers = 1;  // two mounted copies of one btrfs share an fsid, which kernels before 6.7 refuse
    notes.emplace_back(
        "btrfs: one worker (copies of one file system share its fsid, and this kernel has no "
        "btrfs temp_fsid support to mount clones side by side)");
  }
  if (o.workload.empty()) o.workload = std::filesystem::path(o.trace_path).filename().string();

  // Work folder.
  bool own_dir = o.work_dir.empty();
  std::string dir = o.work_dir;
  ScratchDir own_work;  // destroyed after Cleanup below has closed the workers' images
  if (own_dir) {
    ASSIGN_OR_RETURN(own_work, ScratchDir::Create("powercut-check",
                                                  std::filesystem::temp_directory_path()));
    dir = own_work.path();
  } else {
    std::filesystem::create_directories(dir);
  }
  struct Cleanup {
    std::string dir;
    bool own;
    std::vector<Worker>* workers;
    ~Cleanup() {
      for (Worker& w : *workers) {
        if (w.scratch_fd >= 0) ::close(w.scratch_fd);
        w.image.reset();
      }
      std::error_code ec;
      if (!own) {
        for (Worker& w : *workers) {
          if (!w.scratch.empty()) std::filesystem::remove(w.scratch, ec);
          if (!w.mountpoint.empty()) std::filesystem::remove(w.mountpoint, ec);
        }
      }
    }
  };
  std::vector<Worker> pool(static_cast<size_t>(workers));
  Cleanup cleanup{dir, own_dir, &pool};
  const uint32_t granule = std::min<uint32_t>(trace.sector_size, unit);
  for (int i = 0; i < workers; ++i) {
    Worker& w = pool[static_cast<size_t>(i)];
    ASSIGN_OR_RETURN(w.image, WorkingImage::Create(fmt::format("{}/worker{}.img", dir, i), base,
                                                   trace_file.get(), granule));
    if (o.fs != FsKind::kRaw) {
      w.scratch = fmt::format("{}/worker{}.scratch.img", dir, i);
      w.mountpoint = fmt::format("{}/worker{}.mnt", dir, i);
      std::filesystem::create_directories(w.mountpoint);
      w.scratch_fd = ::open(w.scratch.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (w.scratch_fd < 0 || ::ftruncate(w.scratch_fd, static_cast<off_t>(base_bytes)) != 0) {
        return absl::InternalError(fmt::format("check: cannot create {}", w.scratch));
      }
    }
  }

  TraceIndex index(trace);
  Oracle oracle(index, o.ordered, o.fs_failures_are_violations);
  CheckReport report;
  report.trace_path = o.trace_path;
  report.trace_hash = trace.hash.Hex();
  report.base_image = base;
  report.checker = o.checker;
  report.fs = FsName(o.fs);
  report.order = OrderSemanticsName(order);
  report.trace_entries = trace.entries.size();
  report.trace_acks = index.acks().size();
  report.sector_size = trace.sector_size;
  report.physical_sector = physical;
  if (manifest) {
    report.mkfs_command = manifest->mkfs_command;
    report.fs_block_size = manifest->fs_block_size;
  }
  report.atomic_unit = unit;
  report.seed = o.seed;
  report.ordered = o.ordered;
  report.fs_failures_are_violations = o.fs_failures_are_violations;
  report.workers = workers;
  report.states = o.states;
  report.trace_notes = trace.notes;
  {
    std::vector<std::string> p;
    if (o.points.every_entry) p.emplace_back("entry");
    if (o.points.acks) p.emplace_back("ack");
    if (o.points.flushes) p.emplace_back("flush");
    if (o.points.sample) p.push_back(fmt::format("sample:{}", o.points.sample));
    for (size_t i = 0; i < p.size(); ++i) report.points += (i ? "," : "") + p[i];
  }

  Shared shared;
  if (o.on_state_checked) {
    // Counting the states up front costs one more generation pass (no image, no checker run).
    uint64_t total = 0;
    for (CacheModel model : o.models) {
      model.atomic_unit = unit;
      bool flush_only = order == OrderSemantics::kFlushEpoch && model.mode == CacheMode::kOff;
      for (uint64_t point : SelectPoints(index, o.points, o.seed, flush_only)) {
        std::vector<CrashState> states;
        StatesAtPoint(index, index.View(point, model), model, o.states, o.seed, &states);
        total += states.size();
      }
    }
    powercut::MutexLock lock(&shared.mu);
    shared.states_total = total;
  }
  for (CacheModel model : o.models) {
    auto model_start = std::chrono::steady_clock::now();
    model.atomic_unit = unit;
    ModelResult result;
    result.workload = o.workload;
    result.model = model;
    result.notes = notes;
    bool flush_only = order == OrderSemantics::kFlushEpoch && model.mode == CacheMode::kOff;
    ExactPointCounts exact;
    std::vector<uint64_t> points = SelectPoints(index, o.points, o.seed, flush_only, &exact);
    if (flush_only) {
      result.notes.push_back(fmt::format(
          "flush-epoch trace: cache off is evaluated only where the log places a crash exactly: "
          "{} points right after a FLUSH and {} right after a FUA write with no plain write "
          "logged between it and the next FLUSH; skipped {} FUA points (a plain write logged "
          "after them may have completed before them) and {} other points (between flushes the "
          "log does not record completion order, so a loss there could not be proven)",
          exact.after_flush, exact.after_fua, exact.fua_skipped, exact.other_skipped));
    }
    result.points = points.size();
    StateSource source(index, model, o.states, o.seed, std::move(points));
    {
      powercut::MutexLock lock(&shared.mu);
      shared.result = &result;
      shared.violations.clear();
      shared.worst.reset();
    }
    std::vector<std::thread> threads;
    for (Worker& w : pool) {
      threads.emplace_back([&, wp = &w] {
        RunWorker(o, base, trace.ShortHash(), index, oracle, source, *wp, shared);
      });
    }
    for (auto& t : threads) t.join();
    powercut::MutexLock lock(&shared.mu);
    RETURN_IF_ERROR(shared.error);
    for (auto& [seq, v] : shared.violations) result.examples.push_back(v);
    if (report.check_method.empty()) report.check_method = shared.method;
    if (!result.examples.empty()) result.first_violation = result.examples.front();
    if (shared.worst) result.worst_violation = shared.worst->second;
    result.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - model_start).count();
    report.results.push_back(std::move(result));
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace powercut::harness
