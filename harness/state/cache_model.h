// Drive write-cache models applied at replay (design brief "Cache models", docs/cache-models.md).
//
//   off    write-through: a write is durable once it completed.
//   on     write-back honouring FLUSH/FUA: writes completed before the last completed FLUSH and
//          FUA writes are durable; other completed writes are volatile (any subset may be lost).
//   lying  write-back ignoring FLUSH/FUA: the writes within `window` (entries or bytes) before the
//          cut are volatile, barriers or not.
// In every model the next write after the cut (in flight) may be torn at the atomic unit.
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

  const char* Name() const;  // "off" / "on" / "lying"
  // Compact code used in state ids: "off", "on", "ly16e", "ly65536b".
  std::string Code() const;
  bool operator==(const CacheModel&) const = default;
};

// Parses "off", "on", "lying" (with `default_window`) or a Code().
absl::StatusOr<CacheModel> ParseCacheModel(std::string_view text);
// Parses a lying window: "16" or "16e" (entries), "64KiB", "1MiB", "4096b" (bytes).
absl::Status ParseWindow(std::string_view text, CacheModel* model);

// What a crash after the first `point` entries leaves to chance under a model.
struct PointView {
  uint64_t point = 0;
  // Content-changing entries that may or may not be on the media, in completion order.
  std::vector<uint64_t> volatile_entries;
  // The next write after the cut, which may be torn (not for discards).
  std::optional<uint64_t> inflight;
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
  const Trace& trace_;
  std::vector<uint64_t> content_;  // entries that change content
  std::vector<uint64_t> flushes_;  // entries with FLUSH
  std::vector<std::pair<uint64_t, std::string>> acks_;
};

}  // namespace powercut::harness
