#include "harness/state/working_image.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "absl/container/flat_hash_set.h"
#include "base/status_macros.h"
#include "fmt/format.h"
#include "xxhash.h"

namespace powercut::harness {

absl::StatusOr<std::unique_ptr<WorkingImage>> WorkingImage::Create(const std::string& path,
                                                                   const std::string& base_path,
                                                                   const TraceFile* trace,
                                                                   uint32_t granule) {
  const uint32_t ss = trace->trace().sector_size;
  if (granule == 0 || ss % granule != 0) {
    return absl::InvalidArgumentError(
        fmt::format("working image: granule {} does not divide the sector size {}", granule, ss));
  }
  ASSIGN_OR_RETURN(auto base, ReadOnlyMap::Open(base_path));
  for (const TraceEntry& e : trace->trace().entries) {
    if (!e.changes_content()) continue;
    uint64_t end = (e.header.sector + e.header.nr_sectors) * ss;
    if (end > base->size()) {
      return absl::OutOfRangeError(fmt::format(
          "trace {}: entry {} at byte {} writes up to byte {}, beyond the {}-byte base image {}: "
          "wrong base image",
          trace->path(), e.index, e.log_offset, end, base->size(), base_path));
    }
  }
  RETURN_IF_ERROR(CopySparse(base_path, path));
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return absl::InternalError(fmt::format("working image: cannot open {}", path));
  return std::unique_ptr<WorkingImage>(
      new WorkingImage(path, base_path, fd, std::move(base), trace, granule));
}

WorkingImage::WorkingImage(std::string path, std::string base_path, int fd,
                           std::unique_ptr<ReadOnlyMap> base, const TraceFile* trace,
                           uint32_t granule)
    : path_(std::move(path)),
      base_path_(std::move(base_path)),
      fd_(fd),
      base_(std::move(base)),
      trace_(trace),
      granule_(granule),
      size_(base_->size()),
      zeros_(granule, 0) {
  const uint32_t ss = trace_->trace().sector_size;
  for (const TraceEntry& e : trace_->trace().entries) {
    if (!e.changes_content()) continue;
    uint64_t first = e.header.sector * ss / granule_;
    uint64_t last = (e.header.sector + e.header.nr_sectors) * ss / granule_;
    for (uint64_t g = first; g < last; ++g) writers_[g].push_back(static_cast<uint32_t>(e.index));
  }
}

WorkingImage::~WorkingImage() { ::close(fd_); }

absl::Status WorkingImage::Reset() {
  // Truncates and refills the same inode, so fd_ stays valid.
  RETURN_IF_ERROR(CopySparse(base_path_, path_));
  contribution_.clear();
  sum_high_ = sum_low_ = 0;
  overrides_.clear();
  prefix_point_ = 0;
  return absl::OkStatus();
}

const uint8_t* WorkingImage::GranuleContent(uint64_t g, int64_t writer) const {
  if (writer < 0) return base_->data() + g * granule_;
  const TraceEntry& e = trace_->trace().entries[static_cast<size_t>(writer)];
  if (e.is_discard()) return zeros_.data();
  uint64_t start = e.header.sector * trace_->trace().sector_size;
  return trace_->data(e).data() + (g * granule_ - start);
}

void WorkingImage::UpdateHash(uint64_t g, const uint8_t* content) {
  auto it = contribution_.find(g);
  if (it != contribution_.end()) {
    sum_high_ -= it->second.high;
    sum_low_ -= it->second.low;
    contribution_.erase(it);
  }
  if (std::memcmp(content, base_->data() + g * granule_, granule_) == 0) return;
  XXH128_hash_t h = XXH3_128bits_withSeed(content, granule_, g);
  contribution_[g] = Hash128{h.high64, h.low64};
  sum_high_ += h.high64;
  sum_low_ += h.low64;
}

absl::Status WorkingImage::WriteGranule(uint64_t g, int64_t writer) {
  const uint8_t* content = GranuleContent(g, writer);
  RETURN_IF_ERROR(PwriteFull(fd_, content, granule_, g * granule_, path_));
  bytes_written_ += granule_;
  UpdateHash(g, content);
  return absl::OkStatus();
}

int64_t WorkingImage::PrefixWriter(uint64_t g, uint64_t point) const {
  auto it = writers_.find(g);
  if (it == writers_.end()) return -1;
  const auto& list = it->second;
  auto pos = std::lower_bound(list.begin(), list.end(), point);
  if (pos == list.begin()) return -1;
  return *(pos - 1);
}

absl::Status WorkingImage::Rewind(uint64_t point) {
  const Trace& trace = trace_->trace();
  const uint32_t ss = trace.sector_size;
  std::vector<uint64_t> granules;
  for (uint64_t i = point; i < prefix_point_; ++i) {
    const TraceEntry& e = trace.entries[i];
    if (!e.changes_content()) continue;
    const uint64_t first = e.header.sector * ss / granule_;
    const uint64_t last = (e.header.sector + e.header.nr_sectors) * ss / granule_;
    for (uint64_t g = first; g < last; ++g) granules.push_back(g);
  }
  std::sort(granules.begin(), granules.end());
  granules.erase(std::unique(granules.begin(), granules.end()), granules.end());
  // One write per run of adjacent granules whose earlier content is adjacent too (the base, or
  // one earlier write): a rewind costs about what the forward walk over those entries cost.
  for (size_t i = 0; i < granules.size();) {
    const int64_t writer = PrefixWriter(granules[i], point);
    const uint8_t* content = GranuleContent(granules[i], writer);
    const bool zeros = writer >= 0 && trace.entries[static_cast<size_t>(writer)].is_discard();
    size_t j = i + 1;
    while (j < granules.size() && granules[j] == granules[j - 1] + 1 &&
           PrefixWriter(granules[j], point) == writer) {
      ++j;
    }
    const uint64_t offset = granules[i] * granule_;
    const uint64_t length = (j - i) * granule_;
    if (zeros) {
      RETURN_IF_ERROR(ZeroRange(fd_, offset, length, path_));
    } else {
      RETURN_IF_ERROR(PwriteFull(fd_, content, length, offset, path_));
    }
    bytes_written_ += length;
    for (size_t k = i; k < j; ++k) {
      UpdateHash(granules[k], zeros ? zeros_.data() : content + (k - i) * granule_);
    }
    i = j;
  }
  prefix_point_ = point;
  return absl::OkStatus();
}

namespace {

// A torn entry must be one the state may tear: the in-flight write or a volatile one.
absl::Status CheckTornEntry(const Trace& trace, const CrashState& state, const PointView& view) {
  if (!state.torn_entry) return absl::OkStatus();
  uint64_t t = *state.torn_entry;
  auto has = [t](const std::vector<uint64_t>& list) {
    return std::find(list.begin(), list.end(), t) != list.end();
  };
  bool ok = (view.inflight && *view.inflight == t) || has(view.volatile_entries) ||
            has(view.inflight_other_disks);
  if (!ok || trace.entries[t].is_discard()) {
    return absl::InvalidArgumentError(fmt::format(
        "state at point {} tears entry {}, which is neither the in-flight write nor a volatile "
        "write at that point under cache {}",
        state.point, t, state.model.Code()));
  }
  return absl::OkStatus();
}

// The granules of the torn entry's units that `state` keeps (written).
absl::flat_hash_set<uint64_t> TornGranules(const Trace& trace, const CrashState& state,
                                           uint32_t granule) {
  absl::flat_hash_set<uint64_t> torn_granules;
  if (!state.torn_entry) return torn_granules;
  const uint32_t ss = trace.sector_size;
  const TraceEntry& t = trace.entries[*state.torn_entry];
  const uint32_t unit = state.model.UnitOf(t.disk);  // the torn write's own disk
  uint64_t begin = t.header.sector * ss;
  uint64_t end = begin + t.header.nr_sectors * ss;
  uint64_t first_unit = begin / unit;
  uint64_t units = (end - 1) / unit - first_unit + 1;
  for (uint64_t g = begin / granule; g < end / granule; ++g) {
    uint64_t u = g * granule / unit - first_unit;
    if (state.torn_units.Contains(u, units)) torn_granules.insert(g);
  }
  return torn_granules;
}

// The granules the dropped entries and the torn units cover, ascending and unique.
std::vector<uint64_t> AffectedGranules(const Trace& trace, const std::vector<uint64_t>& dropped,
                                       const absl::flat_hash_set<uint64_t>& torn_granules,
                                       uint32_t granule) {
  const uint32_t ss = trace.sector_size;
  std::vector<uint64_t> affected;
  for (uint64_t d : dropped) {
    const TraceEntry& e = trace.entries[d];
    uint64_t first = e.header.sector * ss / granule;
    uint64_t last = (e.header.sector + e.header.nr_sectors) * ss / granule;
    for (uint64_t g = first; g < last; ++g) affected.push_back(g);
  }
  affected.insert(affected.end(), torn_granules.begin(), torn_granules.end());
  std::sort(affected.begin(), affected.end());
  affected.erase(std::unique(affected.begin(), affected.end()), affected.end());
  return affected;
}

}  // namespace

absl::Status WorkingImage::Materialize(const CrashState& state, const PointView& view) {
  const Trace& trace = trace_->trace();
  if (state.point > trace.entries.size()) {
    return absl::OutOfRangeError(fmt::format("state point {} is past the trace's {} entries",
                                             state.point, trace.entries.size()));
  }
  RETURN_IF_ERROR(CheckTornEntry(trace, state, view));
  // 1. Back to the prefix image.
  for (uint64_t g : overrides_) RETURN_IF_ERROR(WriteGranule(g, PrefixWriter(g, prefix_point_)));
  overrides_.clear();

  // 1b. Back to an earlier prefix: the granules the entries after it wrote get their earlier
  // writer (the check order walks points backwards, harness/state/state_plan.h).
  if (state.point < prefix_point_) RETURN_IF_ERROR(Rewind(state.point));

  // 2. Advance the prefix.
  RETURN_IF_ERROR(AdvancePrefix(state.point));

  // 3. Overrides: granules of dropped entries and of torn units.
  CollectDropped(state, view);
  return ApplyOverrides(state);
}

absl::Status WorkingImage::AdvancePrefix(uint64_t point) {
  const Trace& trace = trace_->trace();
  const uint32_t ss = trace.sector_size;
  for (uint64_t i = prefix_point_; i < point; ++i) {
    const TraceEntry& e = trace.entries[i];
    if (!e.changes_content()) continue;
    uint64_t offset = e.header.sector * ss;
    uint64_t length = e.header.nr_sectors * ss;
    const uint8_t* data = nullptr;
    if (e.is_discard()) {
      RETURN_IF_ERROR(ZeroRange(fd_, offset, length, path_));
    } else {
      data = trace_->data(e).data();
      RETURN_IF_ERROR(PwriteFull(fd_, data, length, offset, path_));
    }
    bytes_written_ += length;
    for (uint64_t b = 0; b < length; b += granule_) {
      UpdateHash((offset + b) / granule_, data ? data + b : zeros_.data());
    }
  }
  prefix_point_ = point;
  return absl::OkStatus();
}

void WorkingImage::CollectDropped(const CrashState& state, const PointView& view) {
  const uint64_t m = view.volatile_entries.size();
  dropped_.clear();
  for (uint64_t i = 0; i < m; ++i) {
    if (!state.kept.Contains(i, m)) dropped_.push_back(view.volatile_entries[i]);
  }
  const bool torn_inside = state.torn_entry && *state.torn_entry < state.point;
  if (torn_inside &&
      std::find(dropped_.begin(), dropped_.end(), *state.torn_entry) == dropped_.end()) {
    dropped_.push_back(*state.torn_entry);
  }
  std::sort(dropped_.begin(), dropped_.end());
}

int64_t WorkingImage::LastAppliedWriter(uint64_t g, uint64_t point,
                                        const absl::flat_hash_set<uint64_t>& dropped) const {
  auto it = writers_.find(g);
  if (it == writers_.end()) return -1;
  const auto& list = it->second;
  auto pos = std::lower_bound(list.begin(), list.end(), point);
  while (pos != list.begin()) {
    --pos;
    if (!dropped.contains(*pos)) return *pos;
  }
  return -1;
}

absl::Status WorkingImage::ApplyOverrides(const CrashState& state) {
  const Trace& trace = trace_->trace();
  absl::flat_hash_set<uint64_t> dropped_set(dropped_.begin(), dropped_.end());
  absl::flat_hash_set<uint64_t> torn_granules = TornGranules(trace, state, granule_);
  for (uint64_t g : AffectedGranules(trace, dropped_, torn_granules, granule_)) {
    int64_t prefix_writer = PrefixWriter(g, state.point);
    // The last applied writer: skip dropped entries.
    int64_t target = LastAppliedWriter(g, state.point, dropped_set);
    if (torn_granules.contains(g) && static_cast<int64_t>(*state.torn_entry) > target) {
      target = static_cast<int64_t>(*state.torn_entry);
    }
    if (target == prefix_writer) continue;
    RETURN_IF_ERROR(WriteGranule(g, target));
    overrides_.push_back(g);
  }
  return absl::OkStatus();
}

}  // namespace powercut::harness
