#include "harness/state/state_generator.h"

#include <algorithm>
#include <charconv>
#include <random>
#include <set>

#include "fmt/format.h"

namespace powercut::harness {
namespace {

uint64_t Mix(uint64_t a, uint64_t b) {
  uint64_t x = a * 0x9e3779b97f4a7c15ULL ^ (b + 0x632be59bd9b4e019ULL + (a << 6) + (a >> 2));
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

void TornVariants(uint64_t units, uint64_t seed, const StateOptions& options,
                  std::vector<SubsetSpec>* out) {
  if (units < 2) return;  // one atomic unit cannot tear
  if (units <= 4) {
    for (uint64_t mask = 1; mask + 1 < (uint64_t{1} << units); ++mask) {
      out->push_back({SubsetSpec::kMask, mask});
    }
    return;
  }
  out->push_back({SubsetSpec::kFirst, 1});
  out->push_back({SubsetSpec::kFirst, units / 2});
  out->push_back({SubsetSpec::kFirst, units - 1});
  out->push_back({SubsetSpec::kLast, 1});
  for (uint32_t i = 0; i < options.torn_samples; ++i) {
    out->push_back({SubsetSpec::kRandom, Mix(seed, 0x7047 + i)});
  }
}

}  // namespace

absl::StatusOr<PointSelection> ParsePointSelection(std::string_view text) {
  PointSelection s;
  s.acks = s.flushes = false;
  auto bad = [&](std::string_view item) {
    return absl::InvalidArgumentError(
        fmt::format("--points {}: \"{}\" is not a crash-point choice: {}", std::string(text),
                    std::string(item), kPointChoices));
  };
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string_view item = text.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    if (item == "every" || item == "entry" || item == "entries") {
      s.every_entry = true;
    } else if (item == "acks" || item == "ack") {
      s.acks = true;
    } else if (item == "flushes" || item == "flush") {
      s.flushes = true;
    } else {
      std::string_view n = item.substr(0, 7) == "sample:" ? item.substr(7) : item;
      auto [ptr, ec] = std::from_chars(n.data(), n.data() + n.size(), s.sample);
      if (n.empty() || ec != std::errc() || ptr != n.data() + n.size() || s.sample == 0) {
        return bad(item);
      }
    }
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return s;
}

std::string PointSelectionName(const PointSelection& points) {
  std::vector<std::string> p;
  if (points.every_entry) p.emplace_back("every");
  if (points.acks) p.emplace_back("acks");
  if (points.flushes) p.emplace_back("flushes");
  if (points.sample) p.push_back(std::to_string(points.sample));
  std::string out;
  for (size_t i = 0; i < p.size(); ++i) out += (i ? "," : "") + p[i];
  return out;
}

std::vector<bool> ExactForCacheOff(const Trace& trace) {
  const auto& entries = trace.entries;
  std::vector<bool> exact(entries.size(), false);
  // Walking backwards: `clean` says whether the entries after i up to the next FLUSH (or the end)
  // hold no plain write. Past the end that is true only if the kernel's teardown mark is last.
  bool clean =
      !entries.empty() && entries.back().is_mark() && entries.back().mark == "dm-log-writes-end";
  for (size_t i = entries.size(); i-- > 0;) {
    exact[i] = clean;
    const TraceEntry& e = entries[i];
    if (e.is_flush()) {
      clean = true;
    } else if (e.changes_content() && !e.is_fua()) {
      clean = false;
    }
  }
  return exact;
}

std::vector<uint64_t> SelectPoints(const TraceIndex& index, const PointSelection& selection,
                                   uint64_t seed, bool flush_points_only,
                                   ExactPointCounts* counts) {
  const uint64_t n = index.trace().entries.size();
  std::set<uint64_t> points;
  if (selection.every_entry) {
    for (uint64_t p = 1; p <= n; ++p) points.insert(p);
  }
  if (selection.acks) {
    for (const auto& [entry, id] : index.acks()) points.insert(entry + 1);
  }
  if (selection.flushes) {
    for (uint64_t f : index.flush_entries()) points.insert(f + 1);
  }
  if (selection.sample > 0 && n > 0) {
    std::mt19937_64 rng(Mix(seed, 0x5a3b1e));
    if (selection.sample >= n) {
      for (uint64_t p = 1; p <= n; ++p) points.insert(p);
    } else {
      std::set<uint64_t> chosen;
      while (chosen.size() < selection.sample) chosen.insert(1 + rng() % n);
      points.insert(chosen.begin(), chosen.end());
    }
  }
  std::vector<uint64_t> out;
  if (!flush_points_only) {
    if (counts) *counts = ExactPointCounts{};
    out.assign(points.begin(), points.end());
    return out;
  }
  const auto& entries = index.trace().entries;
  auto is_fua_write = [&](uint64_t e) {
    return entries[e].is_fua() && !entries[e].is_flush() && entries[e].changes_content();
  };
  if (selection.flushes) {
    for (uint64_t e = 0; e < n; ++e) {
      if (is_fua_write(e)) points.insert(e + 1);  // FUA writes are barrier points too
    }
  }
  const std::vector<bool> exact = ExactForCacheOff(index.trace());
  ExactPointCounts local;
  for (uint64_t p : points) {
    const uint64_t e = p - 1;
    if (entries[e].is_flush()) {
      ++local.after_flush;
    } else if (!is_fua_write(e)) {
      ++local.other_skipped;
      continue;
    } else if (exact[e]) {
      ++local.after_fua;
    } else {
      ++local.fua_skipped;
      continue;
    }
    out.push_back(p);
  }
  if (counts) *counts = local;
  return out;
}

uint64_t AtomicUnits(const TraceEntry& e, uint32_t sector_size, uint32_t unit) {
  uint64_t begin = e.header.sector * sector_size;
  uint64_t end = begin + e.header.nr_sectors * sector_size;
  if (end <= begin) return 0;
  return (end - 1) / unit - begin / unit + 1;
}

void StatesAtPoint(const TraceIndex& index, const PointView& view, const CacheModel& model,
                   const StateOptions& options, uint64_t seed, std::vector<CrashState>* out) {
  const uint64_t m = view.volatile_entries.size();
  const uint64_t point_seed = Mix(seed, view.point * 4 + static_cast<uint64_t>(model.mode));
  auto add = [&](SubsetSpec kept) {
    CrashState s;
    s.point = view.point;
    s.model = model;
    s.kept = kept;
    out->push_back(s);
  };
  if (m <= options.max_exhaustive) {
    if (m == 0) {
      add({SubsetSpec::kAll, 0});
    } else {
      // Every subset; mask 2^m-1 is "all kept", written as A so that ids read naturally.
      for (uint64_t mask = 0; mask < (uint64_t{1} << m); ++mask) {
        if (mask == 0) {
          add({SubsetSpec::kNone, 0});
        } else if (mask + 1 == (uint64_t{1} << m)) {
          add({SubsetSpec::kAll, 0});
        } else {
          add({SubsetSpec::kMask, mask});
        }
      }
    }
  } else {
    add({SubsetSpec::kAll, 0});
    add({SubsetSpec::kNone, 0});
    const uint64_t cap = options.max_all_but_one;
    uint64_t first = cap != 0 && m > cap ? m - cap : 0;
    for (uint64_t i = first; i < m; ++i) add({SubsetSpec::kAllBut, i});
    for (uint32_t i = 0; i < options.samples; ++i) {
      add({SubsetSpec::kRandom, Mix(point_seed, i + 1)});
    }
  }
  if (!options.torn) return;
  const Trace& trace = index.trace();
  auto add_torn = [&](SubsetSpec kept, uint64_t entry) {
    std::vector<SubsetSpec> variants;
    const TraceEntry& e = trace.entries[entry];
    uint64_t units = AtomicUnits(e, trace.sector_size, model.UnitOf(e.disk));
    TornVariants(units, Mix(point_seed, entry), options, &variants);
    for (const SubsetSpec& v : variants) {
      CrashState s;
      s.point = view.point;
      s.model = model;
      s.kept = kept;
      s.torn_entry = entry;
      s.torn_units = v;
      out->push_back(s);
    }
  };
  if (view.inflight && options.torn_inflight) add_torn({SubsetSpec::kAll, 0}, *view.inflight);
  if (options.torn_inflight) {
    for (uint64_t other : view.inflight_other_disks) add_torn({SubsetSpec::kAll, 0}, other);
  }
  uint64_t first = m > options.max_torn_writes ? m - options.max_torn_writes : 0;
  for (uint64_t j = first; j < m; ++j) {
    if (trace.entries[view.volatile_entries[j]].is_discard()) continue;
    add_torn({SubsetSpec::kFirst, j}, view.volatile_entries[j]);
  }
}

}  // namespace powercut::harness
