#include "harness/state/cache_model.h"

#include <algorithm>
#include <charconv>

#include "base/ack_id.h"
#include "fmt/format.h"

namespace powercut::harness {

const char* CacheModeName(CacheMode mode) {
  switch (mode) {
    case CacheMode::kOff:
      return "off";
    case CacheMode::kOn:
      return "on";
    case CacheMode::kLying:
      return "lying";
  }
  return "?";
}

absl::StatusOr<CacheMode> ParseCacheMode(std::string_view name) {
  for (CacheMode mode : {CacheMode::kOff, CacheMode::kOn, CacheMode::kLying}) {
    if (name == CacheModeName(mode)) return mode;
  }
  return absl::InvalidArgumentError(
      fmt::format("cache model \"{}\": expected {}", std::string(name), kCacheModeChoices));
}

namespace {

std::string ModeCode(CacheMode mode, const CacheModel& model) {
  if (mode != CacheMode::kLying) return CacheModeName(mode);
  return fmt::format("ly{}{}", model.window, model.window_in_bytes ? 'b' : 'e');
}

// One model without per-disk modes: "off", "on", "lying" or a lying code.
absl::StatusOr<CacheModel> ParseOneCacheModel(std::string_view text);

}  // namespace

std::string CacheModel::Name() const {
  if (disk_modes.empty()) return CacheModeName(mode);
  std::string out;
  for (size_t d = 0; d < disk_modes.size(); ++d) {
    out += fmt::format("{}{}={}", d ? "," : "", d + 1, CacheModeName(disk_modes[d]));
  }
  return out;
}

std::string CacheModel::Code() const {
  if (disk_modes.empty()) return ModeCode(mode, *this);
  std::string out;
  for (size_t d = 0; d < disk_modes.size(); ++d) {
    out += (d ? "." : "") + ModeCode(disk_modes[d], *this);
  }
  return out;
}

std::string CacheListName(const std::vector<CacheModel>& models) {
  const CacheModel default_lying{.mode = CacheMode::kLying};
  std::string out;
  for (const CacheModel& m : models) {
    const bool plain =
        m.disk_modes.empty() &&
        (m.mode != CacheMode::kLying || (m.window == default_lying.window && !m.window_in_bytes));
    out += (out.empty() ? "" : ",") + (plain ? m.Name() : m.Code());
  }
  return out;
}

uint32_t CacheModel::SmallestUnit() const {
  uint32_t unit = atomic_unit;
  for (uint32_t u : disk_units) {
    if (u != 0 && (unit == 0 || u < unit)) unit = u;
  }
  return unit;
}

std::string CacheModel::UnitCode() const {
  if (disk_units.empty()) return std::to_string(atomic_unit);
  std::string out;
  for (size_t d = 0; d < disk_units.size(); ++d) {
    out += (d ? "." : "") + std::to_string(disk_units[d]);
  }
  return out;
}

absl::Status ParseWindow(std::string_view text, CacheModel* model) {
  uint64_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  std::string_view unit(ptr, static_cast<size_t>(text.data() + text.size() - ptr));
  if (ec != std::errc() || value == 0) {
    return absl::InvalidArgumentError(fmt::format(
        "lying window \"{}\": expected a positive count of entries (16, 16e) or bytes (4096b, "
        "64KiB, 1MiB)",
        std::string(text)));
  }
  if (unit.empty() || unit == "e") {
    model->window_in_bytes = false;
    model->window = value;
  } else if (unit == "b" || unit == "B") {
    model->window_in_bytes = true;
    model->window = value;
  } else if (unit == "KiB" || unit == "k" || unit == "K") {
    model->window_in_bytes = true;
    model->window = value << 10;
  } else if (unit == "MiB" || unit == "m" || unit == "M") {
    model->window_in_bytes = true;
    model->window = value << 20;
  } else {
    return absl::InvalidArgumentError(fmt::format(
        "lying window \"{}\": expected a positive count of entries (16, 16e) or bytes (4096b, "
        "64KiB, 1MiB)",
        std::string(text)));
  }
  return absl::OkStatus();
}

namespace {

absl::StatusOr<CacheModel> ParseOneCacheModel(std::string_view text) {
  CacheModel m;
  if (absl::StatusOr<CacheMode> mode = ParseCacheMode(text); mode.ok()) {
    m.mode = *mode;
    return m;
  }
  if (text.substr(0, 2) == "ly" && text.size() > 2) {
    m.mode = CacheMode::kLying;
    std::string_view w = text.substr(2);
    if (auto s = ParseWindow(w, &m); !s.ok()) return s;
    return m;
  }
  return absl::InvalidArgumentError(
      fmt::format("cache model \"{}\": expected {}", std::string(text), kCacheModeChoices));
}

}  // namespace

absl::StatusOr<CacheModel> ParseCacheModel(std::string_view text) {
  if (text.find('.') == std::string_view::npos) return ParseOneCacheModel(text);
  // Per disk: the disks' codes joined by '.' (CacheModel::Code()).
  CacheModel m;
  bool lying_seen = false;
  size_t start = 0;
  while (true) {
    size_t dot = text.find('.', start);
    std::string_view part = text.substr(start, dot == std::string_view::npos ? dot : dot - start);
    auto one = ParseOneCacheModel(part);
    if (!one.ok()) return one.status();
    if (one->mode == CacheMode::kLying) {
      if (lying_seen && (one->window != m.window || one->window_in_bytes != m.window_in_bytes)) {
        return absl::InvalidArgumentError(
            fmt::format("cache model \"{}\": the lying disks of one model share one window", text));
      }
      lying_seen = true;
      m.window = one->window;
      m.window_in_bytes = one->window_in_bytes;
    }
    m.disk_modes.push_back(one->mode);
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  m.mode = m.disk_modes[0];
  return m;
}

absl::StatusOr<std::vector<CacheModel>> ParseCacheModels(std::string_view text,
                                                         std::string_view window) {
  CacheModel lying;
  if (auto s = ParseWindow(window, &lying); !s.ok()) {
    return absl::InvalidArgumentError(
        fmt::format("--window {}: {}", std::string(window), std::string(s.message())));
  }
  // "all" is the list's own shorthand; the names are each mode's CacheModeName.
  const std::string list = text == "all" ? "off,on,lying" : std::string(text);
  std::vector<CacheModel> models;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    std::string name =
        list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    absl::StatusOr<CacheModel> model;
    if (absl::StatusOr<CacheMode> mode = ParseCacheMode(name); mode.ok()) {
      // A plain name takes --window (lying only); a code ("ly64KiB") carries its own.
      model = CacheModel{.mode = *mode};
      if (*mode == CacheMode::kLying) {
        model->window = lying.window;
        model->window_in_bytes = lying.window_in_bytes;
      }
    } else {
      model = ParseCacheModel(name);
    }
    if (!model.ok()) {
      return absl::InvalidArgumentError(fmt::format(
          "--cache {}: \"{}\" is not a cache model: off, on, lying or all (comma-separated)",
          std::string(text), name));
    }
    models.push_back(*model);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return models;
}

absl::Status ApplyCachePerDisk(std::string_view text, uint32_t disks,
                               std::vector<CacheModel>* models) {
  std::vector<std::optional<CacheMode>> chosen(disks);
  auto bad = [&](std::string_view item, const std::string& why) {
    return absl::InvalidArgumentError(fmt::format(
        "--cache-per-disk {}: \"{}\" {} (expected DISK=MODEL pairs such as 1=on,2=lying, DISK "
        "in 1..{}, MODEL {})",
        std::string(text), std::string(item), why, disks, kCacheModeChoices));
  };
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string_view item =
        text.substr(start, comma == std::string_view::npos ? comma : comma - start);
    size_t eq = item.find('=');
    uint64_t disk = 0;
    auto [ptr, ec] = std::from_chars(item.data(), item.data() + std::min(eq, item.size()), disk);
    if (eq == std::string_view::npos || ec != std::errc() || ptr != item.data() + eq) {
      return bad(item, "is not DISK=MODEL");
    }
    if (disk < 1 || disk > disks) {
      return bad(item, fmt::format("names disk {}, but there {} {} disk{}", disk,
                                   disks == 1 ? "is" : "are", disks, disks == 1 ? "" : "s"));
    }
    absl::StatusOr<CacheMode> mode = ParseCacheMode(item.substr(eq + 1));
    if (!mode.ok()) return bad(item, "has no such model");
    if (chosen[disk - 1]) return bad(item, fmt::format("sets disk {} twice", disk));
    chosen[disk - 1] = *mode;
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  for (CacheModel& m : *models) {
    m.disk_modes.assign(disks, m.mode);
    for (uint32_t d = 0; d < disks; ++d) {
      if (chosen[d]) m.disk_modes[d] = *chosen[d];
    }
    m.mode = m.disk_modes[0];
    bool uniform = std::all_of(m.disk_modes.begin(), m.disk_modes.end(),
                               [&](CacheMode x) { return x == m.mode; });
    if (uniform) m.disk_modes.clear();
  }
  // Models that became the same (e.g. --cache off,on with every disk set) are checked once.
  std::vector<CacheModel> unique;
  for (const CacheModel& m : *models) {
    if (std::find(unique.begin(), unique.end(), m) == unique.end()) unique.push_back(m);
  }
  *models = std::move(unique);
  return absl::OkStatus();
}

TraceIndex::TraceIndex(const Trace& trace)
    : trace_(trace), disk_content_(trace.disks), disk_flushes_(trace.disks) {
  for (const TraceEntry& e : trace.entries) {
    if (e.changes_content()) {
      content_.push_back(e.index);
      disk_content_[e.disk].push_back(e.index);
    }
    if (e.is_flush()) {
      flushes_.push_back(e.index);
      disk_flushes_[e.disk].push_back(e.index);
    }
    if (e.is_mark()) {
      if (auto id = AckIdFromMark(e.mark)) acks_.emplace_back(e.index, *id);
    }
  }
}

size_t TraceIndex::AcksBefore(uint64_t point) const {
  return static_cast<size_t>(
      std::lower_bound(acks_.begin(), acks_.end(), point,
                       [](const auto& a, uint64_t p) { return a.first < p; }) -
      acks_.begin());
}

void TraceIndex::DiskVolatile(uint32_t disk, uint64_t point, CacheMode mode,
                              const CacheModel& model, std::vector<uint64_t>* out) const {
  const std::vector<uint64_t>& content = disk_content_[disk];
  const std::vector<uint64_t>& flushes = disk_flushes_[disk];
  auto end = std::lower_bound(content.begin(), content.end(), point);  // before the cut
  switch (mode) {
    case CacheMode::kOff:
      break;
    case CacheMode::kOn: {
      // The disk's last completed FLUSH before the cut makes everything the disk completed before
      // it durable; the FLUSH entry's own data (REQ_PREFLUSH with data) is written after the
      // flush, so it is volatile unless it is FUA. Another disk's flush orders nothing here.
      uint64_t from = 0;
      auto f = std::lower_bound(flushes.begin(), flushes.end(), point);
      if (f != flushes.begin()) from = *(f - 1);
      for (auto it = std::lower_bound(content.begin(), end, from); it != end; ++it) {
        if (!trace_.entries[*it].is_fua()) out->push_back(*it);
      }
      break;
    }
    case CacheMode::kLying: {
      uint64_t bytes = 0;
      uint64_t count = 0;
      auto it = end;
      while (it != content.begin()) {
        const TraceEntry& e = trace_.entries[*(it - 1)];
        if (model.window_in_bytes ? bytes >= model.window : count >= model.window) break;
        bytes += e.header.nr_sectors * trace_.sector_size;
        ++count;
        --it;
      }
      out->insert(out->end(), it, end);
      break;
    }
  }
}

PointView TraceIndex::View(uint64_t point, const CacheModel& model) const {
  PointView v;
  v.point = point;
  // The in-flight write: the first content-changing entry at or after the cut.
  auto next = std::lower_bound(content_.begin(), content_.end(), point);
  if (next != content_.end() && !trace_.entries[*next].is_discard()) v.inflight = *next;
  for (uint32_t d = 0; d < disk_content_.size(); ++d) {
    DiskVolatile(d, point, model.ModeOf(d), model, &v.volatile_entries);
    if (disk_content_.size() < 2) continue;
    // Every other disk may be writing its own next write when the power goes.
    const std::vector<uint64_t>& content = disk_content_[d];
    auto own = std::lower_bound(content.begin(), content.end(), point);
    if (own != content.end() && (next == content_.end() || *own != *next) &&
        !trace_.entries[*own].is_discard()) {
      v.inflight_other_disks.push_back(*own);
    }
  }
  // Completion order across the disks: the kept subset is applied in this order.
  std::sort(v.volatile_entries.begin(), v.volatile_entries.end());
  std::sort(v.inflight_other_disks.begin(), v.inflight_other_disks.end());
  return v;
}

}  // namespace powercut::harness
