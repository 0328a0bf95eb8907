#include "harness/product/faults/cut_model_match.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>

#include "base/hash.h"
#include "base/image_io.h"
#include "base/scratch_dir.h"
#include "base/status_macros.h"
#include "fmt/format.h"
#include "harness/state/cache_model.h"
#include "harness/state/crash_state.h"
#include "harness/state/working_image.h"
#include "harness/trace/manifest.h"
#include "harness/trace/trace_reader.h"

namespace powercut::product {
namespace {

constexpr uint64_t kBlock = 4096;

// The 4 KiB blocks where two images of one size differ, per disk of `layout` (a block is its
// first byte's disk): at most `max` listed a disk, and how many in all.
struct DiskDiff {
  std::vector<uint64_t> blocks;  // 4 KiB blocks of the whole image
  uint64_t count = 0;
};
absl::StatusOr<std::vector<DiskDiff>> DifferingBlocks(const std::string& a, const std::string& b,
                                                      const harness::DiskLayout& layout,
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
  std::vector<DiskDiff> disks(layout.count());
  absl::Status status;
  for (uint64_t off = 0; off < size_a && status.ok(); off += ba.size()) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(ba.size(), size_a - off));
    status = PreadFull(fa, ba.data(), n, off, a);
    if (status.ok()) status = PreadFull(fb, bb.data(), n, off, b);
    if (!status.ok() || std::memcmp(ba.data(), bb.data(), n) == 0) continue;
    for (size_t k = 0; k < n; k += kBlock) {
      const size_t len = std::min<size_t>(kBlock, n - k);
      if (std::memcmp(ba.data() + k, bb.data() + k, len) != 0) {
        // A block in a gap between two disks counts as the last disk's before it: it can only
        // differ if the image is not the set's.
        const uint32_t at = layout.DiskAt(off + k);
        DiskDiff& d = disks[at < disks.size() ? at : disks.size() - 1];
        ++d.count;
        if (d.blocks.size() < max) d.blocks.push_back((off + k) / kBlock);
      }
    }
  }
  close(fa);
  close(fb);
  RETURN_IF_ERROR(status);
  return disks;
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

// The cut's recording: its trace, the base image it starts from and the disks of a set.
struct CutRecording {
  std::optional<harness::TraceManifest> manifest;
  std::string base;
  harness::DiskLayout layout;
  std::unique_ptr<harness::TraceFile> file;
};

absl::StatusOr<CutRecording> OpenCutRecording(const std::string& trace_path) {
  CutRecording rec;
  ASSIGN_OR_RETURN(rec.base, harness::ResolveBase(trace_path, "", &rec.manifest));
  ASSIGN_OR_RETURN(uint64_t base_bytes, FileSize(rec.base));
  if (rec.manifest) {
    ASSIGN_OR_RETURN(rec.layout, harness::LayoutOf(*rec.manifest));
  }
  ASSIGN_OR_RETURN(rec.file, harness::TraceFile::Open(trace_path, {.device_bytes = base_bytes,
                                                                   .name = trace_path,
                                                                   .disks = rec.layout}));
  return rec;
}

// Cache model "on" at the unit the drive tore at; each disk's drive tore at its own physical
// sector (its server's report says which).
harness::CacheModel CutCacheModel(const CutRecording& rec, const vm::PowerCutReport& report,
                                  const std::vector<vm::PowerCutReport>& extra) {
  harness::CacheModel model{.mode = harness::CacheMode::kOn};
  model.atomic_unit = report.atomic_unit != 0 ? report.atomic_unit
                      : rec.manifest && rec.manifest->physical_sector != 0
                          ? rec.manifest->physical_sector
                          : rec.file->trace().sector_size;
  if (!extra.empty()) {
    std::vector<uint32_t> units = {model.atomic_unit};
    for (const vm::PowerCutReport& r : extra) {
      units.push_back(r.atomic_unit != 0 ? r.atomic_unit : model.atomic_unit);
    }
    if (std::any_of(units.begin(), units.end(), [&](uint32_t u) { return u != units[0]; })) {
      model.disk_units = units;
    }
  }
  return model;
}

// One disk's side of the check: the model's volatile writes on it at the point (indices into the
// point's volatile entries, in the trace's order) and its drive's draws on its unflushed non-FUA
// writes (in its completion order, in the set's address space).
struct DiskDraws {
  std::vector<size_t> volatile_index;
  std::vector<uint64_t> entries;  // the trace entries of volatile_index
  std::vector<vm::CutDecision> drawn;
};

std::vector<DiskDraws> DrawsPerDisk(const CutRecording& rec, const harness::PointView& view,
                                    const vm::PowerCutReport& report,
                                    const std::vector<vm::PowerCutReport>& extra) {
  const harness::DiskLayout& layout = rec.layout;
  std::vector<DiskDraws> disks(layout.count());
  for (size_t i = 0; i < view.volatile_entries.size(); ++i) {
    const uint64_t entry = view.volatile_entries[i];
    const uint32_t d = rec.file->trace().entries[entry].disk;
    DiskDraws& disk = disks[d < disks.size() ? d : 0];
    disk.volatile_index.push_back(i);
    disk.entries.push_back(entry);
  }
  for (uint32_t d = 0; d < layout.count(); ++d) {
    const vm::PowerCutReport* r = d == 0 ? &report : d - 1 < extra.size() ? &extra[d - 1] : nullptr;
    if (r == nullptr) continue;
    for (vm::CutDecision decision : r->decisions) {
      if (decision.flushed || decision.fua) continue;
      decision.offset += layout.OffsetOf(d);
      disks[d].drawn.push_back(decision);
    }
  }
  return disks;
}

// Why a drive's unflushed writes are not the model's volatile writes on its disk (`entries`), or
// "" when they are, one for one.
std::string DrawnWritesMismatch(const harness::Trace& trace, const std::vector<uint64_t>& entries,
                                const std::vector<vm::CutDecision>& drawn, uint64_t point) {
  const uint64_t ss = trace.sector_size;
  auto describe_entries = [&] {
    std::string s;
    for (size_t i = 0; i < entries.size() && i < 8; ++i) {
      const harness::TraceEntry& e = trace.entries[entries[i]];
      s += fmt::format("{}#{} at byte {} ({} bytes)", i ? ", " : "", entries[i],
                       e.header.sector * ss, e.header.nr_sectors * ss);
    }
    return s;
  };
  if (drawn.size() != entries.size()) {
    return fmt::format(
        "the drive held {} unflushed writes at the cut, the model has {} volatile writes at point "
        "{} ({}): the recorder's flushes and the server's do not agree",
        drawn.size(), entries.size(), point, describe_entries());
  }
  for (size_t i = 0; i < drawn.size(); ++i) {
    const harness::TraceEntry& e = trace.entries[entries[i]];
    if (e.header.sector * ss != drawn[i].offset || e.header.nr_sectors * ss != drawn[i].bytes) {
      return fmt::format(
          "unflushed write {} of the drive is at byte {} ({} bytes), the model's volatile write {} "
          "is entry #{} at byte {} ({} bytes): the trace is not the order the device completed",
          i, drawn[i].offset, drawn[i].bytes, i, entries[i], e.header.sector * ss,
          e.header.nr_sectors * ss);
    }
  }
  return "";
}

// The drives' draws in the order of the point's volatile writes. A disk whose drive does not
// agree with the model (`agrees` false) has its writes dropped here: its image is not compared.
std::vector<vm::CutDecision> DrawnInTraceOrder(const harness::Trace& trace,
                                               const harness::PointView& view,
                                               const std::vector<DiskDraws>& disks,
                                               const std::vector<bool>& agrees) {
  const uint64_t ss = trace.sector_size;
  std::vector<vm::CutDecision> drawn(view.volatile_entries.size());
  for (size_t i = 0; i < drawn.size(); ++i) {
    const harness::TraceEntry& e = trace.entries[view.volatile_entries[i]];
    drawn[i] = {.offset = e.header.sector * ss,
                .bytes = e.header.nr_sectors * ss,
                .fate = vm::CutDecision::Fate::kDropped};
  }
  for (size_t d = 0; d < disks.size(); ++d) {
    if (!agrees[d]) continue;
    for (size_t j = 0; j < disks[d].volatile_index.size(); ++j) {
      drawn[disks[d].volatile_index[j]] = disks[d].drawn[j];
    }
  }
  return drawn;
}

// The crash state that keeps, drops and tears what the drive did (at most 64 volatile writes).
harness::CrashState StateOfCut(uint64_t point, const harness::CacheModel& model,
                               const harness::PointView& view,
                               const std::vector<vm::CutDecision>& drawn) {
  harness::CrashState state;
  state.point = point;
  state.model = model;
  uint64_t kept_mask = 0;
  for (size_t i = 0; i < drawn.size(); ++i) {
    if (drawn[i].fate == vm::CutDecision::Fate::kKept) kept_mask |= uint64_t{1} << i;
    if (drawn[i].fate == vm::CutDecision::Fate::kTorn) {
      state.torn_entry = view.volatile_entries[i];
      state.torn_units = {harness::SubsetSpec::kMask, drawn[i].units_kept};
    }
  }
  state.kept = {harness::SubsetSpec::kMask, kept_mask};
  return state;
}

// The differing blocks, each with the volatile writes that wrote it and what the drive did
// with them.
std::string DescribeBlocks(const std::vector<uint64_t>& differing, const harness::PointView& view,
                           const std::vector<vm::CutDecision>& drawn) {
  std::string blocks;
  for (uint64_t b : differing) {
    blocks += fmt::format("{}{}", blocks.empty() ? "" : ", ", b);
    for (size_t i = 0; i < drawn.size(); ++i) {
      const uint64_t first = drawn[i].offset / kBlock;
      const uint64_t last = (drawn[i].offset + drawn[i].bytes - 1) / kBlock;
      if (b >= first && b <= last) {
        blocks += fmt::format(" (volatile write #{}, {})", view.volatile_entries[i],
                              FateName(drawn[i].fate));
      }
    }
  }
  return blocks;
}

// Is the cut's state also one of the states the replay draws at this point (its --states
// sample)? Leaves `working` at the last state tried.
absl::StatusOr<bool> SampledByReplay(const harness::TraceIndex& index,
                                     const harness::PointView& view,
                                     const harness::CacheModel& model,
                                     const harness::StateOptions& states, uint64_t seed,
                                     harness::WorkingImage& working, const Hash128& cut_hash) {
  std::vector<harness::CrashState> drawn_states;
  harness::StatesAtPoint(index, view, model, states, seed, &drawn_states);
  for (const harness::CrashState& s : drawn_states) {
    RETURN_IF_ERROR(working.Materialize(s, view));
    if (working.content_hash() == cut_hash) return true;
  }
  return false;
}

}  // namespace

absl::StatusOr<ModelMatch> MatchCutToModel(const std::string& trace_path, const std::string& image,
                                           const vm::PowerCutReport& report,
                                           const harness::StateOptions& states, uint64_t seed,
                                           const std::vector<vm::PowerCutReport>& extra,
                                           std::string_view disk_word) {
  ASSIGN_OR_RETURN(CutRecording rec, OpenCutRecording(trace_path));
  const harness::Trace& trace = rec.file->trace();
  harness::TraceIndex index(trace);
  ModelMatch m;
  m.point = trace.entries.size();
  const harness::CacheModel model = CutCacheModel(rec, report, extra);
  const harness::PointView view = index.View(m.point, model);
  m.volatile_writes = view.volatile_entries.size();

  // Each disk against its own part of the model: its drive's draws first.
  const bool several = rec.layout.count() > 1;
  auto name = [&](size_t d) {
    return several ? fmt::format("{} {}: ", disk_word, d + 1) : std::string();
  };
  const std::vector<DiskDraws> draws = DrawsPerDisk(rec, view, report, extra);
  std::vector<bool> agrees(draws.size());
  m.disks.resize(draws.size());
  bool any_agrees = false;
  for (size_t d = 0; d < draws.size(); ++d) {
    m.disks[d].volatile_writes = draws[d].entries.size();
    m.disks[d].evidence = DrawnWritesMismatch(trace, draws[d].entries, draws[d].drawn, m.point);
    agrees[d] = m.disks[d].evidence.empty();
    any_agrees = any_agrees || agrees[d];
  }
  auto outside = [&] {
    for (size_t d = 0; d < m.disks.size(); ++d) {
      if (m.disks[d].evidence.empty()) continue;
      m.evidence += (m.evidence.empty() ? "" : "; ") + name(d) + m.disks[d].evidence;
    }
    return m;
  };
  if (!any_agrees) return outside();
  if (view.volatile_entries.size() > 64) {
    if (std::find(agrees.begin(), agrees.end(), false) != agrees.end()) return outside();
    m.evidence =
        fmt::format("{} volatile writes at the cut: a state id names at most 64; not compared",
                    view.volatile_entries.size());
    return absl::FailedPreconditionError(m.evidence);
  }
  const std::vector<vm::CutDecision> drawn = DrawnInTraceOrder(trace, view, draws, agrees);
  const harness::CrashState state = StateOfCut(m.point, model, view, drawn);
  ASSIGN_OR_RETURN(ScratchDir work, ScratchDir::Create("powercut-livecut-model", "/var/tmp"));
  ASSIGN_OR_RETURN(auto working, harness::WorkingImage::Create(
                                     work.File("model.img"), rec.base, rec.file.get(),
                                     std::min<uint32_t>(trace.sector_size, model.SmallestUnit())));
  RETURN_IF_ERROR(working->Materialize(state, view));
  const Hash128 model_hash = working->content_hash();
  // Then its image against its part of the state (a disk's part of a set's state is made of its
  // own writes only: a disk whose drive disagreed cannot spoil another's comparison).
  ASSIGN_OR_RETURN(std::vector<DiskDiff> differ,
                   DifferingBlocks(image, working->path(), rec.layout, 8));
  const std::string state_id = harness::EncodeStateId(trace.ShortHash(), state);
  bool differs = false;
  for (size_t d = 0; d < m.disks.size(); ++d) {
    if (!agrees[d] || differ[d].count == 0) continue;
    differs = true;
    m.disks[d].evidence = fmt::format(
        "the cut image differs from crash state {} (the state keeping, dropping and tearing what "
        "the drive did) in {} block(s) of 4 KiB: {}",
        state_id, differ[d].count, DescribeBlocks(differ[d].blocks, view, drawn));
  }
  if (differs && !several) {
    ASSIGN_OR_RETURN(Hash128 cut_hash, HashFile(image));
    ASSIGN_OR_RETURN(Hash128 state_hash, HashFile(working->path()));
    m.disks[0].evidence +=
        fmt::format("; XXH3 cut {} vs state {}", cut_hash.Hex(), state_hash.Hex());
  }
  for (DiskMatch& disk : m.disks) disk.in_model = disk.evidence.empty();
  if (std::any_of(m.disks.begin(), m.disks.end(), [](const DiskMatch& d) { return !d.in_model; })) {
    return outside();
  }
  m.in_model = true;
  m.state_id = state_id;
  ASSIGN_OR_RETURN(m.sampled,
                   SampledByReplay(index, view, model, states, seed, *working, model_hash));
  return m;
}

absl::StatusOr<ModelMatch> MatchNodeCutToModel(const std::string& trace_path, uint64_t point,
                                               uint32_t disk, const std::string& disk_image,
                                               const vm::PowerCutReport& report) {
  ASSIGN_OR_RETURN(CutRecording rec, OpenCutRecording(trace_path));
  const harness::Trace& trace = rec.file->trace();
  if (point > trace.entries.size() || disk >= rec.layout.count()) {
    return absl::InvalidArgumentError(
        fmt::format("node cut at entry {} of disk {}: the trace has {} entries and {} disk(s)",
                    point, disk + 1, trace.entries.size(), rec.layout.count()));
  }
  harness::TraceIndex index(trace);
  ModelMatch m;
  m.point = point;
  // The cut disk's drive is the only one that lost its power: the others' writes are not
  // compared (they are marked dropped below, in their own parts of the image only).
  harness::CacheModel model{.mode = harness::CacheMode::kOn};
  model.atomic_unit = report.atomic_unit != 0 ? report.atomic_unit : trace.sector_size;
  const harness::PointView view = index.View(m.point, model);
  std::vector<vm::PowerCutReport> extra(rec.layout.count() - 1);
  const vm::PowerCutReport none;
  if (disk > 0) extra[disk - 1] = report;
  const std::vector<DiskDraws> draws = DrawsPerDisk(rec, view, disk == 0 ? report : none, extra);
  std::vector<bool> agrees(draws.size(), false);
  m.disks.resize(draws.size());
  m.disks[disk].volatile_writes = draws[disk].entries.size();
  m.volatile_writes = draws[disk].entries.size();
  m.disks[disk].evidence =
      DrawnWritesMismatch(trace, draws[disk].entries, draws[disk].drawn, m.point);
  if (!m.disks[disk].evidence.empty()) {
    m.evidence = m.disks[disk].evidence;
    return m;
  }
  agrees[disk] = true;
  if (view.volatile_entries.size() > 64) {
    return absl::FailedPreconditionError(
        fmt::format("{} volatile writes at the cut: a state id names at most 64; not compared",
                    view.volatile_entries.size()));
  }
  const std::vector<vm::CutDecision> drawn = DrawnInTraceOrder(trace, view, draws, agrees);
  const harness::CrashState state = StateOfCut(m.point, model, view, drawn);
  ASSIGN_OR_RETURN(ScratchDir work, ScratchDir::Create("powercut-nodecut-model", "/var/tmp"));
  ASSIGN_OR_RETURN(auto working, harness::WorkingImage::Create(
                                     work.File("model.img"), rec.base, rec.file.get(),
                                     std::min<uint32_t>(trace.sector_size, model.SmallestUnit())));
  RETURN_IF_ERROR(working->Materialize(state, view));
  // The set as the model has it, with the cut disk's part replaced by its image at the cut.
  const std::string set_image = work.File("cut-set.img");
  RETURN_IF_ERROR(CopySparse(working->path(), set_image));
  {
    ASSIGN_OR_RETURN(uint64_t bytes, FileSize(disk_image));
    std::vector<uint8_t> buf(1 << 20);
    const int in = open(disk_image.c_str(), O_RDONLY | O_CLOEXEC);
    const int out = open(set_image.c_str(), O_WRONLY | O_CLOEXEC);
    absl::Status copied =
        in < 0 || out < 0
            ? absl::InternalError(fmt::format("cannot open {} or {}", disk_image, set_image))
            : absl::OkStatus();
    for (uint64_t off = 0; off < bytes && copied.ok(); off += buf.size()) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(buf.size(), bytes - off));
      copied = PreadFull(in, buf.data(), n, off, disk_image);
      if (copied.ok()) {
        copied = PwriteFull(out, buf.data(), n, rec.layout.OffsetOf(disk) + off, set_image);
      }
    }
    if (in >= 0) close(in);
    if (out >= 0) close(out);
    RETURN_IF_ERROR(copied);
  }
  ASSIGN_OR_RETURN(std::vector<DiskDiff> differ,
                   DifferingBlocks(set_image, working->path(), rec.layout, 8));
  const std::string state_id = harness::EncodeStateId(trace.ShortHash(), state);
  if (differ[disk].count > 0) {
    m.disks[disk].evidence = fmt::format(
        "the cut disk's image differs from its part of crash state {} (the state keeping, "
        "dropping and tearing what the drive did) in {} block(s) of 4 KiB: {}",
        state_id, differ[disk].count, DescribeBlocks(differ[disk].blocks, view, drawn));
    m.evidence = m.disks[disk].evidence;
    return m;
  }
  m.disks[disk].in_model = true;
  m.in_model = true;
  m.state_id = state_id;
  return m;
}

}  // namespace powercut::product
