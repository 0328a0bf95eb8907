// Drive write-cache models applied at replay (design brief "Cache models", docs/cache-models.md).
//
//   off    write-through: a write is durable once it completed.
//   on     write-back honouring FLUSH/FUA: writes completed before the last completed FLUSH and
//          FUA writes are durable; other completed writes are volatile (any subset may be lost).
//   lying  write-back ignoring FLUSH/FUA: the writes within `window` (entries or bytes) before the
//          cut are volatile, barriers or not.
// In every model the next write after the cut (in flight) may be torn at the atomic unit.
//
// Several disks on one clock (harness/trace/disk_layout.h): each disk has its own cache and
// honours only its own flushes. `on` keeps volatile each disk's writes since that disk's last
// FLUSH, `lying` each disk's last `window` writes, and each disk's next write after the cut may
// be torn. `disk_modes` gives each disk its own model (`--cache-per-disk 1=on,2=lying`).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "harness/trace/trace_reader.h"

namespace powercut::harness {

enum class CacheMode { kOff, kOn, kLying };

struct CacheModel {
  CacheMode mode = CacheMode::kOff;
  uint32_t atomic_unit = 0;  // bytes; 0 = the trace's sector size
  uint64_t window = 16;      // lying only
  bool window_in_bytes = false;
  // Empty: `mode` on every disk. Otherwise one mode per disk of a set (the lying ones share
  // `window`).
  std::vector<CacheMode> disk_modes;
  // Empty: `atomic_unit` on every disk. Otherwise each disk's own torn-write unit (its physical
  // sector: a 512e disk 1 and a 4kn disk 2 tear at 4,096 B each, a 512n disk at 512 B); the
  // first is `atomic_unit`. State ids name them "a512.4096".
  std::vector<uint32_t> disk_units;

  CacheMode ModeOf(uint32_t disk) const {
    return disk < disk_modes.size() ? disk_modes[disk] : mode;
  }
  uint32_t UnitOf(uint32_t disk) const {
    return disk < disk_units.size() ? disk_units[disk] : atomic_unit;
  }
  // The smallest unit of any disk (a materializer's granule must divide every disk's unit).
  uint32_t SmallestUnit() const;
  // "4096", or per disk "512.4096" (the state id's a<unit> field).
  std::string UnitCode() const;
  // "off" / "on" / "lying"; per disk "1=on,2=lying".
  std::string Name() const;
  // Compact code used in state ids: "off", "on", "ly16e", "ly65536b"; per disk the disks' codes
  // joined by '.', "on.ly16e".
  std::string Code() const;
  bool operator==(const CacheModel&) const = default;
};

// For help texts and errors.
inline constexpr std::string_view kCacheModeChoices = "off, on or lying";
// "off", "on", "lying": the one spelling of a mode (CacheModel::Name, per disk "1=on,2=lying").
const char* CacheModeName(CacheMode mode);
// The inverse of CacheModeName; anything else is an error that lists the valid names.
absl::StatusOr<CacheMode> ParseCacheMode(std::string_view name);

// Parses "off", "on", "lying" (the default window) or a Code().
absl::StatusOr<CacheModel> ParseCacheModel(std::string_view text);
// `--cache off,on,lying` (or "all") with `--window`: the models in order, the lying ones with
// `window` ("16", "64KiB"; checked even when lying is not in the list); a Code() such as
// "ly64KiB" keeps its own window. An unknown name is an error that lists the valid ones.
absl::StatusOr<std::vector<CacheModel>> ParseCacheModels(std::string_view text,
                                                         std::string_view window);
// The inverse of ParseCacheModels for reports and rebuild commands: a `--cache` text that reads
// back (with the default `--window`) to exactly `models`: "off,on,lying", a lying model of
// another window by its Code() ("off,ly64KiB" spelled "off,ly65536b").
std::string CacheListName(const std::vector<CacheModel>& models);
// `--cache-per-disk 1=on,2=lying` over a set of `disks`: in each of `models` (from `--cache`),
// the named disks get the named model and the others keep the model's own. A disk number outside
// 1..disks, a repeated disk or an unknown model is an error naming it.
absl::Status ApplyCachePerDisk(std::string_view text, uint32_t disks,
                               std::vector<CacheModel>* models);
// Parses a lying window: "16" or "16e" (entries), "64KiB", "1MiB", "4096b" (bytes).
absl::Status ParseWindow(std::string_view text, CacheModel* model);

// What a crash after the first `point` entries leaves to chance under a model.
struct PointView {
  uint64_t point = 0;
  // Content-changing entries that may or may not be on the media, in completion order.
  std::vector<uint64_t> volatile_entries;
  // The next write after the cut, which may be torn (not for discards).
  std::optional<uint64_t> inflight;
  // Several disks: each other disk's next write after the cut (each disk may be writing when the
  // power goes), in entry order.
  std::vector<uint64_t> inflight_other_disks;
};

// Precomputed positions of a trace's writes, flushes and acks.
class TraceIndex {
 public:
  explicit TraceIndex(const Trace& trace);

  const Trace& trace() const { return trace_; }
  PointView View(uint64_t point, const CacheModel& model) const;

  // Ack marks in log order: (entry index, id).
  const std::vector<std::pair<uint64_t, std::string>>& acks() const { return acks_; }
  // Number of acks whose mark is before `point` (index < point).
  size_t AcksBefore(uint64_t point) const;
  const std::vector<uint64_t>& flush_entries() const { return flushes_; }
  const std::vector<uint64_t>& content_entries() const { return content_; }

 private:
  // Appends disk `disk`'s volatile writes at `point` under `mode`.
  void DiskVolatile(uint32_t disk, uint64_t point, CacheMode mode, const CacheModel& model,
                    std::vector<uint64_t>* out) const;

  const Trace& trace_;
  std::vector<uint64_t> content_;                    // entries that change content
  std::vector<uint64_t> flushes_;                    // entries with FLUSH
  std::vector<std::vector<uint64_t>> disk_content_;  // per disk
  std::vector<std::vector<uint64_t>> disk_flushes_;  // per disk
  std::vector<std::pair<uint64_t, std::string>> acks_;
};

}  // namespace powercut::harness
