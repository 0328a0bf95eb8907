#include "harness/product/live_cuts.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "base/hash.h"
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
#include "harness/product/run.h"
#include "harness/state/cache_model.h"
#include "harness/state/crash_state.h"
#include "harness/state/working_image.h"
#include "harness/trace/manifest.h"
#include "harness/trace/trace_reader.h"
#include "harness/vm/cut.h"

namespace powercut::product {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

constexpr uint64_t kBlock = 4096;

// The 4 KiB blocks where two images of one size differ (at most `max` listed), and how many.
absl::StatusOr<std::pair<std::vector<uint64_t>, uint64_t>> DifferingBlocks(const std::string& a,
                                                                           const std::string& b,
                                                                           size_t max) {
  ASSIGN_OR_RETURN(uint64_t size_a, FileSize(a));
  ASSIGN_OR_RETURN(uint64_t size_b, FileSize(b));
  if (size_a != size_b) {
    return absl::InternalError(fmt::format("{} has {} bytes, {} has {}", a, size_a, b, size_b));
  }
  int fa = open(a.c_str(), O_RDONLY | O_CLOEXEC);
  int fb = open(b.c_str(), O_RDONLY | O_CLOEXEC);
  if (fa < 0 || fb < 0) {
    if (fa >= 0) close(fa);
    if (fb >= 0) close(fb);
    return absl::InternalError(fmt::format("cannot open {} or {}", a, b));
  }
  std::vector<uint8_t> ba(1 << 20), bb(1 << 20);
  std::vector<uint64_t> blocks;
  uint64_t count = 0;
  absl::Status status;
  for (uint64_t off = 0; off < size_a && status.ok(); off += ba.size()) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(ba.size(), size_a - off));
    status = PreadFull(fa, ba.data(), n, off, a);
    if (status.ok()) status = PreadFull(fb, bb.data(), n, off, b);
    if (!status.ok() || std::memcmp(ba.data(), bb.data(), n) == 0) continue;
    for (size_t k = 0; k < n; k += kBlock) {
      const size_t len = std::min<size_t>(kBlock, n - k);
      if (std::memcmp(ba.data() + k, bb.data() + k, len) != 0) {
        ++count;
        if (blocks.size() < max) blocks.push_back((off + k) / kBlock);
      }
    }
  }
  close(fa);
  close(fb);
  RETURN_IF_ERROR(status);
  return std::make_pair(blocks, count);
}

const char* FateName(vm::CutDecision::Fate f) {
  switch (f) {
    case vm::CutDecision::Fate::kKept:
      return "kept";
    case vm::CutDecision::Fate::kDropped:
      return "dropped";
    case vm::CutDecision::Fate::kTorn:
      return "torn";
  }
  return "?";
}

}  // namespace

absl::StatusOr<ModelMatch> MatchCutToModel(const std::string& trace_path, const std::string& image,
                                           const vm::PowerCutReport& report,
                                           const harness::StateOptions& states, uint64_t seed,
                                           const std::vector<vm::PowerCutReport>& extra) {
  std::optional<harness::TraceManifest> manifest;
  ASSIGN_OR_RETURN(std::string base, harness::ResolveBase(trace_path, "", &manifest));
  ASSIGN_OR_RETURN(uint64_t base_bytes, FileSize(base));
  harness::DiskLayout layout;
  if (manifest) {
    ASSIGN_OR_RETURN(layout, harness::LayoutOf(*manifest));
  }
  ASSIGN_OR_RETURN(auto file, harness::TraceFile::Open(trace_path, {.device_bytes = base_bytes,
                                                                    .name = trace_path,
                                                                    .disks = layout}));
  const harness::Trace& trace = file->trace();
  harness::TraceIndex index(trace);
  ModelMatch m;
  m.point = trace.entries.size();
  harness::CacheModel model{.mode = harness::CacheMode::kOn};
  model.atomic_unit = report.atomic_unit != 0                      ? report.atomic_unit
                      : manifest && manifest->physical_sector != 0 ? manifest->physical_sector
                                                                   : trace.sector_size;
  // Each disk's drive tore at its own physical sector (its server's report says which).
  if (!extra.empty()) {
    std::vector<uint32_t> units = {model.atomic_unit};
    for (const vm::PowerCutReport& r : extra) {
      units.push_back(r.atomic_unit != 0 ? r.atomic_unit : model.atomic_unit);
    }
    if (std::any_of(units.begin(), units.end(), [&](uint32_t u) { return u != units[0]; })) {
      model.disk_units = units;
    }
  }
  const harness::PointView view = index.View(m.point, model);
  m.volatile_writes = view.volatile_entries.size();
  const uint64_t ss = trace.sector_size;

  // The drive's draws, on the writes the model calls volatile: the unflushed non-FUA writes the
  // server held, in completion order, must be exactly those entries.
  // Each disk's draws, in the set's address space; then in the trace's order across the disks
  // (each disk's own draws keep their completion order).
  std::vector<std::vector<vm::CutDecision>> per_disk(layout.count());
  for (uint32_t d = 0; d < layout.count(); ++d) {
    const vm::PowerCutReport* r = d == 0 ? &report : d - 1 < extra.size() ? &extra[d - 1] : nullptr;
    if (r == nullptr) continue;
    for (vm::CutDecision decision : r->decisions) {
      if (decision.flushed || decision.fua) continue;
      decision.offset += layout.OffsetOf(d);
      per_disk[d].push_back(decision);
    }
  }
  std::vector<const vm::CutDecision*> drawn;
  std::vector<size_t> next(layout.count(), 0);
  for (uint64_t entry : view.volatile_entries) {
    const uint32_t d = trace.entries[entry].disk;
    if (next[d] < per_disk[d].size()) drawn.push_back(&per_disk[d][next[d]++]);
  }
  for (uint32_t d = 0; d < layout.count(); ++d) {
    for (; next[d] < per_disk[d].size(); ++next[d]) drawn.push_back(&per_disk[d][next[d]]);
  }
  auto describe_entries = [&] {
    std::string s;
    for (size_t i = 0; i < view.volatile_entries.size() && i < 8; ++i) {
      const harness::TraceEntry& e = trace.entries[view.volatile_entries[i]];
      s += fmt::format("{}#{} at byte {} ({} bytes)", i ? ", " : "", view.volatile_entries[i],
                       e.header.sector * ss, e.header.nr_sectors * ss);
    }
    return s;
  };
  if (drawn.size() != view.volatile_entries.size()) {
    m.evidence = fmt::format(
        "the drive held {} unflushed writes at the cut, the model has {} volatile writes at point "
        "{} ({}): the recorder's flushes and the server's do not agree",
        drawn.size(), view.volatile_entries.size(), m.point, describe_entries());
    return m;
  }
  for (size_t i = 0; i < drawn.size(); ++i) {
    const harness::TraceEntry& e = trace.entries[view.volatile_entries[i]];
    if (e.header.sector * ss != drawn[i]->offset || e.header.nr_sectors * ss != drawn[i]->bytes) {
      m.evidence = fmt::format(
          "unflushed write {} of the drive is at byte {} ({} bytes), the model's volatile write {} "
          "is entry #{} at byte {} ({} bytes): the trace is not the order the device completed",
          i, drawn[i]->offset, drawn[i]->bytes, i, view.volatile_entries[i], e.header.sector * ss,
          e.header.nr_sectors * ss);
      return m;
    }
  }
  if (drawn.size() > 64) {
    m.evidence = fmt::format(
        "{} volatile writes at the cut: a state id names at most 64; not compared", drawn.size());
    return absl::FailedPreconditionError(m.evidence);
  }
  harness::CrashState state;
  state.point = m.point;
  state.model = model;
  uint64_t kept_mask = 0;
  for (size_t i = 0; i < drawn.size(); ++i) {
    if (drawn[i]->fate == vm::CutDecision::Fate::kKept) kept_mask |= uint64_t{1} << i;
    if (drawn[i]->fate == vm::CutDecision::Fate::kTorn) {
      state.torn_entry = view.volatile_entries[i];
      state.torn_units = {harness::SubsetSpec::kMask, drawn[i]->units_kept};
    }
  }
  state.kept = {harness::SubsetSpec::kMask, kept_mask};
  ASSIGN_OR_RETURN(ScratchDir work, ScratchDir::Create("powercut-livecut-model", "/var/tmp"));
  ASSIGN_OR_RETURN(auto working,
                   harness::WorkingImage::Create(work.File("model.img"), base, file.get(),
                                                 std::min<uint32_t>(ss, model.SmallestUnit())));
  RETURN_IF_ERROR(working->Materialize(state, view));
  const Hash128 model_hash = working->content_hash();
  ASSIGN_OR_RETURN(auto differ, DifferingBlocks(image, working->path(), 8));
  if (differ.second != 0) {
    std::string blocks;
    for (uint64_t b : differ.first) {
      blocks += fmt::format("{}{}", blocks.empty() ? "" : ", ", b);
      // Which trace entries wrote the block, and what the drive did with them.
      for (size_t i = 0; i < drawn.size(); ++i) {
        const uint64_t first = drawn[i]->offset / kBlock;
        const uint64_t last = (drawn[i]->offset + drawn[i]->bytes - 1) / kBlock;
        if (b >= first && b <= last) {
          blocks += fmt::format(" (volatile write #{}, {})", view.volatile_entries[i],
                                FateName(drawn[i]->fate));
        }
      }
    }
    ASSIGN_OR_RETURN(Hash128 cut_hash, HashFile(image));
    ASSIGN_OR_RETURN(Hash128 state_hash, HashFile(working->path()));
    m.evidence = fmt::format(
        "the cut image differs from crash state {} (the state keeping, dropping and tearing what "
        "the drive did) in {} block(s) of 4 KiB: {}; XXH3 cut {} vs state {}",
        harness::EncodeStateId(trace.ShortHash(), state), differ.second, blocks, cut_hash.Hex(),
        state_hash.Hex());
    return m;
  }
  m.in_model = true;
  m.state_id = harness::EncodeStateId(trace.ShortHash(), state);
  // Is it also one of the states the replay draws at this point (its --states sample)?
  std::vector<harness::CrashState> drawn_states;
  harness::StatesAtPoint(index, view, model, states, seed, &drawn_states);
  for (const harness::CrashState& s : drawn_states) {
    RETURN_IF_ERROR(working->Materialize(s, view));
    if (working->content_hash() == model_hash) {
      m.sampled = true;
      break;
    }
  }
  return m;
}

namespace {

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
  vm::RunSpec spec = RecordingSpec(o, scratch->File("rec"));
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
    return cut;
  }
  cut.cut = run->power_cut;
  if (!cut.cut && run->guest.exit_code != 0) {
    cut.error = fmt::format("the workload exited with status {} before its cut point",
                            run->guest.exit_code);
    return cut;
  }
  const Clock::time_point t1 = Clock::now();
  vm::PowerCutReport report = run->cut_report;
  if (!cut.cut) report.atomic_unit = o.atomic_unit;  // ran to the end: nothing was drawn
  cut.kept = report.kept;
  cut.dropped = report.dropped;
  cut.torn = report.torn;
  for (const vm::PowerCutReport& r : run->extra_cut_reports) {  // disks 2..N of a set
    cut.kept += r.kept;
    cut.dropped += r.dropped;
    cut.torn += r.torn;
  }
  auto match = MatchCutToModel(run->trace, run->final_image, report, o.states, o.seed,
                               run->extra_cut_reports);
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
  harness::Oracle oracle(index, o.ordered, o.fs_failures_are_violations);
  harness::Verdict v;
  v.state_id = cut.state_id;
  v.point = match->point;
  v.cache = "on";
  oracle.Judge(match->point, oracle.Compact(checked->checker, checked->fs), &v);
  if (!v.could_not_check.empty()) {
    cut.error = fmt::format("the checker's output could not be judged: {}", v.could_not_check);
    return cut;
  }
  cut.violation = v.violation();
  cut.fs_unrecoverable = v.fs_unrecoverable;
  cut.lost = v.lost;
  if (cut.violation || cut.fs_unrecoverable) cut.summary = v.Describe();
  return cut;
}

}  // namespace

LiveCutsResult RunLiveCuts(const vm::VmEnvironment& env, const RunOptions& o, uint64_t count,
                           uint64_t recorded_acks) {
  LiveCutsResult result;
  result.requested = count;
  for (uint64_t i = 1; i <= count; ++i) {
    result.cuts.push_back(OneCut(env, o, o.seed + i, recorded_acks));
  }
  return result;
}

}  // namespace powercut::product
