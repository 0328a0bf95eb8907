// The compact timeline of one recording for the HTML figure: one character per trace entry, the
// ack marks, and for each cache model that failed its worst violating state (the one that loses
// the most acks, which the tables' "lost max" counts: crash point, lost acks, dropped and torn
// writes). Kept in the matrix JSON so that a merged report can still draw
// it without the trace.
//
// Entry kinds: 'w' write, 'u' FUA write, 'f' flush, 'F' flush with data (and FUA), 'd' discard,
// 'a' ack mark, 'm' other mark.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "harness/check/engine.h"
#include "nlohmann/json.hpp"

namespace powercut::product {

struct TimelineCrash {
  std::string cache;   // model name
  std::string state;   // state id
  uint64_t point = 0;  // entries before the cut
  std::vector<std::string> lost;
  std::vector<uint64_t> lost_entries;  // entry index of each lost ack's mark
  std::vector<uint64_t> dropped;
  std::optional<uint64_t> torn;
  std::string summary;
  std::string repro;  // harness::Verdict::repro ("" when the run has none)
};

struct Timeline {
  std::string kinds;
  // Several disks (docs/trace.md, "Several disks on one clock"): the disk of each entry, '0' for
  // disk 1, '1' for disk 2, ... (marks '0'); empty for one disk. The HTML draws one lane per disk.
  std::string disks;
  // How the disks are named: a cluster's are its nodes (the lanes say "node K").
  harness::SetMember member = harness::SetMember::kDisk;
  std::vector<std::pair<uint64_t, std::string>> acks;  // (entry index, id)
  std::vector<TimelineCrash> crashes;
};

// Reads the trace and takes the worst violation of every failing model of `report`.
absl::StatusOr<Timeline> BuildTimeline(const std::string& trace_path,
                                       const harness::CheckReport& report);

nlohmann::json TimelineToJson(const Timeline& timeline);
absl::StatusOr<Timeline> TimelineFromJson(const nlohmann::json& j);

}  // namespace powercut::product
