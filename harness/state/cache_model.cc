#include "harness/state/cache_model.h"

#include <algorithm>
#include <charconv>

#include "base/ack_id.h"
#include "fmt/format.h"

namespace powercut::harness {

const char* CacheModel::Name() const {
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

std::string CacheModel::Code() const {
  if (mode != CacheMode::kLying) return Name();
  return fmt::format("ly{}{}", window, window_in_bytes ? 'b' : 'e');
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

absl::StatusOr<CacheModel> ParseCacheModel(std::string_view text) {
  CacheModel m;
  if (text == "off") return m;
  if (text == "on") {
    m.mode = CacheMode::kOn;
    return m;
  }
  if (text == "lying") {
    m.mode = CacheMode::kLying;
    return m;
  }
  if (text.substr(0, 2) == "ly" && text.size() > 2) {
    m.mode = CacheMode::kLying;
    std::string_view w = text.substr(2);
    if (auto s = ParseWindow(w, &m); !s.ok()) return s;
    return m;
  }
  return absl::InvalidArgumentError(
      fmt::format("cache model \"{}\": expected off, on or lying", std::string(text)));
}

TraceIndex::TraceIndex(const Trace& trace) : trace_(trace) {
  for (const TraceEntry& e : trace.entries) {
    if (e.changes_content()) content_.push_back(e.index);
    if (e.is_flush()) flushes_.push_back(e.index);
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

PointView TraceIndex::View(uint64_t point, const CacheModel& model) const {
  PointView v;
  v.point = point;
  // The in-flight write: the first content-changing entry at or after the cut.
  auto next = std::lower_bound(content_.begin(), content_.end(), point);
  if (next != content_.end() && !trace_.entries[*next].is_discard()) v.inflight = *next;
  auto end = next;  // content entries before the cut: [content_.begin(), end)
  switch (model.mode) {
    case CacheMode::kOff:
      break;
    case CacheMode::kOn: {
      // The last completed FLUSH before the cut makes everything before it durable; the FLUSH
      // entry's own data (REQ_PREFLUSH with data) is written after the flush, so it is volatile
      // unless it is FUA.
      uint64_t from = 0;
      auto f = std::lower_bound(flushes_.begin(), flushes_.end(), point);
      if (f != flushes_.begin()) from = *(f - 1);
      for (auto it = std::lower_bound(content_.begin(), end, from); it != end; ++it) {
        if (!trace_.entries[*it].is_fua()) v.volatile_entries.push_back(*it);
      }
      break;
    }
    case CacheMode::kLying: {
      uint64_t bytes = 0;
      uint64_t count = 0;
      auto it = end;
      while (it != content_.begin()) {
        const TraceEntry& e = trace_.entries[*(it - 1)];
        if (model.window_in_bytes ? bytes >= model.window : count >= model.window) break;
        bytes += e.header.nr_sectors * trace_.sector_size;
        ++count;
        --it;
      }
      v.volatile_entries.assign(it, end);
      break;
    }
  }
  return v;
}

}  // namespace powercut::harness
