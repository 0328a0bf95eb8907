// What a recording is replayed under: the cache models (`--cache`, `--window`), the crash points
// (`--points`) and the states per point (`--states`). The command line parses the four texts once
// (ParseReplayChoice); below it they are these types, and each is spelled back (CacheListName,
// PointSelectionName, StatesPerPoint::Name) only where text is written: a report's parameters
// and its rebuild commands.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "harness/state/cache_model.h"
#include "harness/state/state_generator.h"

namespace powercut::product {

// The defaults of `run` and `matrix` as the command line spells them (one physics:
// docs/cache-models.md): crash points at every ack (where a durability promise binds), about 8
// states per point. `--points acks,flushes` or `every` searches between acks too, at about three
// times the checking time.
inline constexpr char kDefaultPoints[] = "acks";
inline constexpr char kDefaultStates[] = "8";

// `--states`: how many crash states each point gets.
struct StatesPerPoint {
  static constexpr uint32_t kExhaustive = 0;
  // kExhaustive: every subset of up to 16 volatile writes; N: about N states per point (every
  // subset up to log2(N) writes, else the extremes and N seeded samples).
  uint32_t count = 8;

  // The generator's options for `count` (torn writes on; callers switch them off).
  harness::StateOptions Options() const;
  // "exhaustive" or "8": reads back through ParseStates.
  std::string Name() const;
  bool operator==(const StatesPerPoint&) const = default;
};

// "exhaustive" or a positive number of states per point; anything else is an error naming both.
absl::StatusOr<StatesPerPoint> ParseStates(std::string_view text);

struct ReplayChoice {
  // Empty: the caller's default (off, on and lying with a window of 16 entries; the faults
  // preset: on).
  std::vector<harness::CacheModel> models;
  harness::PointSelection points = {.acks = true, .flushes = false};  // kDefaultPoints
  StatesPerPoint states;                                              // kDefaultStates
  bool operator==(const ReplayChoice&) const = default;
};

// The four flags' texts, each with its own error: `cache` "off,on,lying", "all" or "" (the
// default models: `models` stays empty); `window` "16", "64KiB" (checked even when no lying model
// is listed); `points` harness::kPointChoices; `states` as ParseStates.
absl::StatusOr<ReplayChoice> ParseReplayChoice(std::string_view cache, std::string_view window,
                                               std::string_view points, std::string_view states);

}  // namespace powercut::product
